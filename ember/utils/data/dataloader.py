"""DataLoader: batches from a dataset through a sampler and a collate function.

See https://pytorch.org/docs/stable/data.html. Loading runs in the main process. The path
from indices to a batch is `_Fetcher.fetch` alone, so a worker pool can run the same fetcher
in each worker process and feed it index batches from `_BaseDataLoaderIter._next_index`;
`get_worker_info()` is where a worker will describe itself (None in the main process).
"""
import math
import warnings

from ... import _dtype as D
from . import _collate
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

default_collate = _collate.default_collate
default_convert = _collate.default_convert

_worker_info = None  # set by a worker process to its WorkerInfo; the main process has none


def get_worker_info():
    """Information about the current DataLoader worker process; None in the main process."""
    return _worker_info


class _DatasetKind:
    Map = 0
    Iterable = 1


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: an endless stream of None (the dataset decides what comes next)."""

    def __iter__(self):
        while True:
            yield None


class _Fetcher:
    """Turn one index (or one list of indices, when auto-collating) into a collated batch.

    Map-style datasets are indexed (`__getitems__` if the dataset has it); iterable datasets are
    read from a single iterator kept across calls. StopIteration means the epoch is over.
    """

    def __init__(self, kind, dataset, auto_collation, collate_fn, drop_last):
        self.kind = kind
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        # an iterable dataset's iterator is made when the epoch starts (iter(loader)), as in torch
        self.dataset_iter = iter(dataset) if kind == _DatasetKind.Iterable else None
        self.ended = False

    def fetch(self, index):
        if self.kind == _DatasetKind.Map:
            data = self._fetch_map(index)
        else:
            data = self._fetch_iterable(index)
        return self.collate_fn(data)

    def _fetch_map(self, index):
        if not self.auto_collation:
            return self.dataset[index]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(index)
        return [self.dataset[i] for i in index]

    def _fetch_iterable(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return next(self.dataset_iter)
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if len(data) == 0 or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return data


class DataLoader:
    """https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader

    ember differs in one way: num_workers > 0 is accepted but loading still runs in the main
    process (with a warning); worker processes are not implemented yet.
    """
    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                             f"but got num_workers={num_workers}")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None  # the len() reported to the user, to warn if exceeded
        self._iterator = None
        if num_workers > 0:
            warnings.warn(f"ember's DataLoader has no worker processes yet: num_workers={num_workers} loads in the "
                          "main process.", UserWarning, stacklevel=2)

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterator draws from: index batches when auto-collating, single indices otherwise."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        return _SingleProcessDataLoaderIter(self)

    def __iter__(self):
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    """One epoch over a DataLoader: draws indices from the sampler and yields fetched batches."""

    def __init__(self, loader):
        from ... import empty
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        self._pin_memory = False
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # torch draws a base seed (for worker seeding) from the loader's generator every epoch; ember
        # draws it too, so the generator's stream advances exactly as torch's does
        self._base_seed = empty((), dtype=D.int64).random_(generator=loader.generator).item()
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        reported = self._IterableDataset_len_called
        if self._dataset_kind == _DatasetKind.Iterable and reported is not None and self._num_yielded > reported:
            warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be {reported}(when accessing "
                          f"len(dataloader)), but {self._num_yielded} samples have been fetched. ", stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Fetch in the calling process."""

    def __init__(self, loader):
        super().__init__(loader)
        if self._num_workers == 0 and self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = _Fetcher(self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
                                 self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)
