"""Datasets: map-style (Dataset: __getitem__/__len__) and iterable-style (IterableDataset: __iter__).

See https://pytorch.org/docs/stable/data.html#dataset-types.
"""
import bisect
import itertools
import math
import warnings
from typing import Generic, Iterable, TypeVar

from ...random import default_generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split"]

_T_co = TypeVar("_T_co", covariant=True)  # the type parameters of torch's classes
_T_stack = TypeVar("_T_stack", tuple, dict)


class Dataset(Generic[_T_co]):
    """A map from keys (usually 0..len-1) to samples. `a + b` concatenates."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """A stream of samples (__iter__). `a + b` chains."""

    def __add__(self, other):
        return ChainDataset([self, other])


def _fetch_many(dataset, indices, check_count=True):
    """The samples at indices: one dataset.__getitems__ call when it has one, else one __getitem__ per index.
    check_count: a __getitems__ answer of the wrong length is an error (StackDataset checks, Subset does not)."""
    fetch_batch = getattr(dataset, "__getitems__", None)
    if not callable(fetch_batch):
        return [dataset[i] for i in indices]
    samples = fetch_batch(indices)
    if check_count and len(samples) != len(indices):
        raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(samples)}")
    return samples


class TensorDataset(Dataset):
    """Sample i is (t[i] for t in tensors); all tensors share their first dimension."""

    def __init__(self, *tensors):
        # lazily, as torch: no tensors at all is allowed (only len() then fails), and the first mismatch wins
        rows = (t.size(0) for t in tensors)
        first = next(rows, None)
        if any(n != first for n in rows):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        first = self.tensors[0]
        return first.size(0)


class StackDataset(Dataset[_T_stack]):
    """Zip datasets of equal length: positional ones give tuple samples, keyword ones dict samples."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        members = args or kwargs
        if not members:
            raise ValueError("At least one dataset should be passed")
        parts = list(members.values()) if kwargs else list(members)
        if len({len(part) for part in parts}) != 1:
            raise ValueError("Size mismatch between datasets")
        self._length = len(parts[0])
        self.datasets = members

    @property
    def _named(self):
        """Whether samples are dicts (datasets given by keyword) rather than tuples."""
        return isinstance(self.datasets, dict)

    def __getitem__(self, index):
        if self._named:
            return {key: part[index] for key, part in self.datasets.items()}
        return tuple(part[index] for part in self.datasets)

    def __getitems__(self, indices):
        # fetch column by column (one batched call per dataset), then transpose into samples
        if self._named:
            columns = {key: _fetch_many(part, indices) for key, part in self.datasets.items()}
            return [dict(zip(columns, row)) for row in zip(*columns.values())]
        columns = [_fetch_many(part, indices) for part in self.datasets]
        return list(zip(*columns))

    def __len__(self):
        return self._length


class ConcatDataset(Dataset[_T_co]):
    """Map-style datasets one after another."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets):
        super().__init__()
        members = list(datasets)
        if not members:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in members):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.datasets = members
        self.cumulative_sizes = self.cumsum(members)

    def __len__(self):
        ends = self.cumulative_sizes
        return ends[-1]

    @property
    def cummulative_sizes(self):
        """cumulative_sizes under its old misspelt name, with torch's FutureWarning."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning, stacklevel=2)
        return self.cumulative_sizes

    def __getitem__(self, idx):
        if idx < 0:
            size = len(self)
            if -idx > size:
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += size
        # the first dataset whose end lies past idx; its start is the previous end
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


def _streams_only(datasets):
    """Yield each of datasets, refusing (when reached) one that is not an IterableDataset."""
    for d in datasets:
        if not isinstance(d, IterableDataset):
            raise AssertionError("ChainDataset only supports IterableDataset")
        yield d


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (lazily)."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for stream in _streams_only(self.datasets):
            yield from stream

    def __len__(self):
        return sum(len(stream) for stream in _streams_only(self.datasets))


def _overrides_getitem_only(cls):
    """Whether a Subset subclass replaced __getitem__ but left __getitems__, which DataLoader would call."""
    return cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__


class Subset(Dataset[_T_co]):
    """The samples of dataset at the given indices."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if _overrides_getitem_only(cls):
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__. When subclassing Subset and "
                "overriding __getitem__, you must also override __getitems__ to ensure DataLoader works correctly "
                "with your custom logic. A simple implementation:\n\ndef __getitems__(self, indices):\n    "
                "return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        # a list of positions is passed on as one list of indices (the dataset may batch it)
        key = [self.indices[i] for i in idx] if isinstance(idx, list) else self.indices[idx]
        return self.dataset[key]

    def __getitems__(self, indices):
        return _fetch_many(self.dataset, [self.indices[i] for i in indices], check_count=False)

    def __len__(self):
        return len(self.indices)


def _are_fractions(lengths):
    """random_split's rule: lengths summing to 1 (within isclose, never above) are shares, not counts."""
    total = sum(lengths)
    return math.isclose(total, 1) and total <= 1


def _counts_from_fractions(n, fractions):
    """floor(n * share) for each share, then the n left over handed out one at a time from the first split."""
    counts = []
    for position, share in enumerate(fractions):
        if share < 0 or share > 1:
            raise ValueError(f"Fraction at index {position} is not between 0 and 1")
        counts.append(math.floor(n * share))
    leftover = n - sum(counts)
    for k in range(leftover):
        counts[k % len(counts)] += 1
    for position, count in enumerate(counts):
        if count == 0:
            # stacklevel 3: reported at random_split's caller, as torch's
            warnings.warn(f"Length of split at index {position} is 0. This might result in an empty dataset.",
                          stacklevel=3)
    return counts


def random_split(dataset, lengths, generator=default_generator):
    """Split into non-overlapping random Subsets of the given lengths, or of fractions summing to 1
    (floor of each share, then the remainder handed out one by one from the first split)."""
    if _are_fractions(lengths):
        lengths = _counts_from_fractions(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    from ... import randperm
    # one permutation of every index, cut into consecutive runs of the requested lengths
    shuffled = randperm(sum(lengths), generator=generator).tolist()
    starts = [0, *itertools.accumulate(lengths)]
    return [Subset(dataset, shuffled[start:start + count]) for start, count in zip(starts, lengths)]
