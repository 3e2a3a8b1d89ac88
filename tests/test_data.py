"""ember.utils.data against torch.utils.data: datasets, samplers, default_collate/default_convert, DataLoader.

Deterministic paths (sequential order, lengths, drop_last, collation types/dtypes/shapes/values, errors,
random_split sizes) are compared with torch directly. ember's generator is not torch's mt19937 (see Note
[Random streams] in ember/random.py), so random orders are checked against the draws torch's algorithm
makes, replayed on ember's generator, plus their invariants.
"""
import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata

from ._stories import check_story, warned

LIBS = ((torch, tdata), (ember, edata))


def describe(x):
    """A library-neutral picture of a (collated) value: types, dtypes, shapes and values."""
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        return ("Tensor", str(x.dtype).replace("torch.", ""), tuple(x.shape), x.tolist())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [describe(v) for v in x])
    if isinstance(x, collections.abc.Mapping):
        return (type(x).__name__, {k: describe(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [describe(v) for v in x])
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.tolist())
    return (type(x).__name__, x)


Point = collections.namedtuple("Point", ["x", "y"])


# each sample builder takes (lib, i) and returns sample i; a batch is [builder(lib, i) for i in range(3)]
SAMPLES = {
    "tensor-float32": lambda lib, i: lib.tensor([i, i + 0.5]),
    "tensor-int64-2d": lambda lib, i: lib.tensor([[i, 2 * i], [3, 4]]),
    "tensor-bool": lambda lib, i: lib.tensor([i % 2 == 0, True]),
    "tensor-0d-float64": lambda lib, i: lib.tensor(i * 1.5, dtype=lib.float64),
    "ndarray-float32": lambda lib, i: np.full((2, 3), i, dtype=np.float32),
    "ndarray-int32": lambda lib, i: np.arange(3, dtype=np.int32) + i,
    "ndarray-bool": lambda lib, i: np.array([i > 0, False]),
    "ndarray-0d": lambda lib, i: np.array(i * 2.0),
    "np-float32": lambda lib, i: np.float32(i + 0.25),
    "np-float64": lambda lib, i: np.float64(i / 3),
    "np-int64": lambda lib, i: np.int64(i),
    "np-uint8": lambda lib, i: np.uint8(i + 250),
    "np-bool": lambda lib, i: np.bool_(i % 2),
    "np-int32-then-float32": lambda lib, i: np.int32(i) if i == 0 else np.float32(i),
    "np-float32-then-float64": lambda lib, i: np.float32(i) if i == 0 else np.float64(i),
    "float": lambda lib, i: i / 7,
    "int": lambda lib, i: i * 1000,
    "big-int": lambda lib, i: 2 ** 40 + i,
    "bool": lambda lib, i: i == 1,
    "int-then-float": lambda lib, i: i if i == 0 else i + 0.5,
    "float-then-int": lambda lib, i: i + 0.5 if i == 0 else i,
    "str": lambda lib, i: f"s{i}",
    "bytes": lambda lib, i: bytes([65 + i]),
    "tuple": lambda lib, i: (lib.tensor([i]), i, "a"),
    "list": lambda lib, i: [i, float(i), lib.tensor(i)],
    "namedtuple": lambda lib, i: Point(lib.tensor([i, i]), i * 0.5),
    "dict": lambda lib, i: {"img": np.ones((2, 2), np.float32) * i, "label": i, "name": f"n{i}"},
    "nested": lambda lib, i: {"a": [(i, {"b": np.int16(i)})], "c": Point(x=[i, i + 1], y=lib.tensor(float(i)))},
    "ordereddict": lambda lib, i: collections.OrderedDict([("z", i), ("a", lib.tensor([1.0 * i]))]),
    "defaultdict": lambda lib, i: collections.defaultdict(list, {"k": i}),
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_default_collate_matches_torch(kind):
    results = [describe(data.default_collate([SAMPLES[kind](lib, i) for i in range(3)])) for lib, data in LIBS]
    assert results[1] == results[0]


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_default_convert_matches_torch(kind):
    results = [describe(data.default_convert(SAMPLES[kind](lib, 1))) for lib, data in LIBS]
    assert results[1] == results[0]


def test_default_collate_keeps_mapping_type_and_factory():
    out = edata.default_collate([collections.defaultdict(list, {"k": i}) for i in range(2)])
    assert type(out) is collections.defaultdict and out.default_factory is list
    assert out["k"].tolist() == [0, 1]


BAD_BATCHES = {
    "ragged-tensors": lambda lib: [lib.zeros(2), lib.zeros(3)],
    "ragged-arrays": lambda lib: [np.zeros(2), np.zeros(3)],
    "ragged-lists": lambda lib: [[1, 2], [3]],
    "ragged-tuples": lambda lib: [(1, 2), (3,)],
    "string-arrays": lambda lib: [np.array(["a"]), np.array(["b"])],
    "object-arrays": lambda lib: [np.array([None]), np.array([None])],
    "objects": lambda lib: [object(), object()],
    "none": lambda lib: [None, None],
    "mixed-dtypes-tensors": lambda lib: [lib.zeros(2), lib.zeros(2, dtype=lib.int64)],
}


@pytest.mark.parametrize("kind", list(BAD_BATCHES))
def test_default_collate_errors_match_torch(kind):
    kinds = []
    messages = []
    for lib, data in LIBS:
        try:
            data.default_collate(BAD_BATCHES[kind](lib))
            kinds.append(None)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            kinds.append(type(e))
            messages.append(str(e))
    assert kinds[1] == kinds[0]
    if kinds[0] is TypeError:
        assert messages[1] == messages[0]


# ---- datasets ------------------------------------------------------------------------------

def test_tensor_dataset_and_errors():
    for lib, data in LIBS:
        ds = data.TensorDataset(lib.arange(10).reshape(5, 2), lib.arange(5))
        assert len(ds) == 5
        x, y = ds[3]
        assert x.tolist() == [6, 7] and y.item() == 3
        with pytest.raises(AssertionError):
            data.TensorDataset(lib.zeros(3), lib.zeros(4))


class Squares:
    """A map-style dataset that is not a Dataset subclass (duck typing is enough for torch)."""

    def __init__(self, n, offset=0):
        self.n = n
        self.offset = offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return (i + self.offset) ** 2


def test_concat_subset_stack_datasets():
    for lib, data in LIBS:
        a, b = Squares(3), Squares(4, offset=10)
        cat = data.ConcatDataset([a, b])
        assert len(cat) == 7 and cat.cumulative_sizes == [3, 7]
        with pytest.warns(FutureWarning, match="`cummulative_sizes` attribute is renamed to `cumulative_sizes`"):
            assert cat.cummulative_sizes == [3, 7]
        assert [cat[i] for i in range(7)] == [0, 1, 4, 100, 121, 144, 169]
        assert cat[-1] == 169 and cat[-7] == 0
        with pytest.raises(ValueError):
            cat[-8]
        with pytest.raises(AssertionError):
            data.ConcatDataset([])

        ds = data.TensorDataset(lib.arange(6))
        plus = ds + ds
        assert isinstance(plus, data.ConcatDataset) and len(plus) == 12
        sub = data.Subset(Squares(10), [9, 0, 4])
        assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 0, 16]
        assert sub.__getitems__([2, 0]) == [16, 81]
        stacked = data.StackDataset(Squares(3), Squares(3, offset=1))
        assert stacked[2] == (4, 9) and stacked.__getitems__([0, 1]) == [(0, 1), (1, 4)]
        named = data.StackDataset(a=Squares(2), b=Squares(2, offset=5))
        assert named[1] == {"a": 1, "b": 36} and named.__getitems__([0]) == [{"a": 0, "b": 25}]
        with pytest.raises(ValueError):
            data.StackDataset(Squares(2), Squares(3))
        with pytest.raises(ValueError):
            data.StackDataset()
        with pytest.raises(ValueError, match="both types are given"):  # positional and keyword at once
            data.StackDataset(Squares(2), b=Squares(2))


class Count(edata.IterableDataset):
    """An iterable dataset of 0..n-1 (defined for both libraries below)."""

    def __init__(self, n, length=None):
        self.n = n
        self.length = length

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n if self.length is None else self.length


class TorchCount(tdata.IterableDataset):
    __init__ = Count.__init__
    __iter__ = Count.__iter__
    __len__ = Count.__len__


def test_chain_dataset():
    for data, Counter in ((tdata, TorchCount), (edata, Count)):
        chain = Counter(3) + Counter(2)
        assert isinstance(chain, data.ChainDataset)
        assert list(chain) == [0, 1, 2, 0, 1] and len(chain) == 5
        with pytest.raises(AssertionError):
            data.ConcatDataset([Counter(3)])
        with pytest.raises(AssertionError):
            list(data.ChainDataset([Squares(3)]))


@pytest.mark.parametrize("n,lengths", [
    (10, [3, 7]), (10, [0.3, 0.7]), (10, [0.25, 0.25, 0.5]), (11, [0.5, 0.5]), (7, [0.1, 0.2, 0.3, 0.4]),
    (5, [1 / 3, 1 / 3, 1 / 3]), (3, [0.1, 0.9]), (100, [0.333, 0.333, 0.334]), (4, [4, 0]),
])
def test_random_split_sizes_match_torch(n, lengths):
    sizes = []
    for lib, data in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zero-length splits warn in both
            parts = data.random_split(Squares(n), lengths, generator=lib.Generator().manual_seed(0))
        sizes.append([len(p) for p in parts])
        indices = sorted(i for p in parts for i in p.indices)
        assert indices == list(range(n))
    assert sizes[1] == sizes[0]


def test_random_split_order_and_errors():
    parts = edata.random_split(Squares(10), [0.5, 0.5], generator=ember.Generator().manual_seed(3))
    expected = ember.randperm(10, generator=ember.Generator().manual_seed(3)).tolist()
    assert parts[0].indices + parts[1].indices == expected
    ember.manual_seed(5)
    default = [p.indices for p in edata.random_split(Squares(6), [2, 4])]
    ember.manual_seed(5)
    assert default == [p.indices for p in edata.random_split(Squares(6), [2, 4])]
    for lib, data in LIBS:
        with pytest.raises(ValueError):
            data.random_split(Squares(10), [3, 3])
        with pytest.raises(ValueError):
            data.random_split(Squares(10), [1.2, -0.2])
        with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
            data.random_split(Squares(2), [0.1, 0.1, 0.8])


# ---- samplers ------------------------------------------------------------------------------

def test_sequential_and_batch_samplers_match_torch():
    for size, drop_last in [(3, False), (3, True), (4, True), (10, False), (1, True), (11, False)]:
        results = []
        for lib, data in LIBS:
            bs = data.BatchSampler(data.SequentialSampler(range(10)), size, drop_last)
            results.append((list(bs), len(bs)))
        assert results[1] == results[0]
        assert results[0][1] == len(results[0][0])
    for bad in (dict(batch_size=0, drop_last=False), dict(batch_size=True, drop_last=False),
                dict(batch_size=2, drop_last=1)):
        for lib, data in LIBS:
            with pytest.raises(ValueError):
                data.BatchSampler(range(4), **bad)


def _replay_generator(seed):
    """An ember generator in the state the sampler's own generator would be in: seeded with `seed`."""
    return ember.Generator().manual_seed(seed)


def test_random_sampler_draws_like_torch_algorithm():
    # without replacement: one randperm per pass over the data, the last one truncated
    s = edata.RandomSampler(range(7), num_samples=17, generator=ember.Generator().manual_seed(11))
    g = _replay_generator(11)
    expected = ember.randperm(7, generator=g).tolist() + ember.randperm(7, generator=g).tolist()
    expected += ember.randperm(7, generator=g).tolist()[:3]
    assert list(s) == expected and len(s) == 17
    # with replacement: randint in chunks of 32
    s = edata.RandomSampler(range(5), replacement=True, num_samples=70, generator=ember.Generator().manual_seed(2))
    g = _replay_generator(2)
    expected = []
    for size in (32, 32, 6):
        expected += ember.randint(high=5, size=(size,), dtype=ember.int64, generator=g).tolist()
    assert list(s) == expected and len(s) == 70
    # no generator: a fresh one, seeded from one int64 draw of the default generator, each epoch
    ember.manual_seed(123)
    first, second = list(edata.RandomSampler(range(50))), list(edata.RandomSampler(range(50)))
    ember.manual_seed(123)
    seed = int(ember.empty((), dtype=ember.int64).random_().item())
    assert first == ember.randperm(50, generator=_replay_generator(seed)).tolist()
    assert sorted(first) == list(range(50)) and first != second


def test_sampler_errors_and_lengths_match_torch():
    cases = [
        lambda lib, data: data.RandomSampler(range(3), replacement=1),
        lambda lib, data: data.RandomSampler(range(3), num_samples=0),
        lambda lib, data: data.RandomSampler(range(3), num_samples=2.5),
        lambda lib, data: data.WeightedRandomSampler([0.1, 0.9], num_samples=0),
        lambda lib, data: data.WeightedRandomSampler([0.1, 0.9], num_samples=True),
        lambda lib, data: data.WeightedRandomSampler([0.1, 0.9], num_samples=3, replacement=0),
        lambda lib, data: data.WeightedRandomSampler([[0.1, 0.9]], num_samples=3),
    ]
    for case in cases:
        kinds = []
        for lib, data in LIBS:
            try:
                case(lib, data)
                kinds.append(None)
            except Exception as e:  # noqa: BLE001
                kinds.append(type(e))
        assert kinds[0] is not None and kinds[1] == kinds[0]
    for lib, data in LIBS:
        assert len(data.RandomSampler(range(9))) == 9
        assert len(data.RandomSampler(range(9), replacement=True, num_samples=4)) == 4
        assert len(data.SubsetRandomSampler([5, 6, 7])) == 3
        assert len(data.WeightedRandomSampler([1.0, 2.0], 6)) == 6


def test_subset_and_weighted_samplers():
    s = edata.SubsetRandomSampler([10, 20, 30, 40], generator=ember.Generator().manual_seed(4))
    order = ember.randperm(4, generator=_replay_generator(4)).tolist()
    assert list(s) == [[10, 20, 30, 40][i] for i in order]
    w = edata.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50, generator=ember.Generator().manual_seed(1))
    draws = list(w)
    assert set(draws) <= {1, 3} and len(draws) == 50
    assert w.weights.dtype == ember.float64
    expected = ember.multinomial(ember.tensor([0.0, 1.0, 0.0, 3.0], dtype=ember.float64), 50, True,
                                 generator=_replay_generator(1)).tolist()
    assert draws == expected
    no_repeat = list(edata.WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(no_repeat) == [0, 1, 2]


# ---- DataLoader ----------------------------------------------------------------------------

def _loader_output(lib, data, dataset_fn, **kwargs):
    loader = data.DataLoader(dataset_fn(lib, data), **kwargs)
    return len(loader), [describe(b) for b in loader]


def _tensor_ds(lib, data):
    return data.TensorDataset(lib.arange(20, dtype=lib.float32).reshape(10, 2), lib.arange(10))


def _dict_ds(lib, data):
    return [{"x": np.arange(3, dtype=np.float64) + i, "y": i, "tag": f"t{i}"} for i in range(7)]


@pytest.mark.parametrize("dataset_fn", [_tensor_ds, _dict_ds], ids=["TensorDataset", "list-of-dicts"])
@pytest.mark.parametrize("kwargs", [
    dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=4, drop_last=True),
    dict(batch_size=10), dict(batch_size=32), dict(batch_size=None),
], ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "defaults")
def test_loader_sequential_matches_torch(dataset_fn, kwargs):
    results = [_loader_output(lib, data, dataset_fn, **kwargs) for lib, data in LIBS]
    assert results[1] == results[0]


def test_loader_with_sampler_batch_sampler_and_collate_fn():
    def collate(batch):
        return sum(batch)
    for kwargs in (dict(sampler=[4, 1, 1, 3], batch_size=3), dict(batch_sampler=[[0, 2], [5], [1, 1, 1]]),
                   dict(batch_size=2, collate_fn=collate), dict(batch_size=None, sampler=[6, 2, 0])):
        results = [_loader_output(lib, data, lambda lib, data: Squares(8), **kwargs) for lib, data in LIBS]
        assert results[1] == results[0], kwargs


def _mixed_tensor_ds(lib, data):
    rng = np.random.default_rng(3)
    arrays = (rng.standard_normal((9, 2, 3)), rng.integers(-5, 5, 9).astype(np.int32), rng.random(9) > 0.5)
    return data.TensorDataset(*(lib.from_numpy(a) for a in arrays), lib.arange(9, dtype=lib.bfloat16))


@pytest.mark.parametrize("kwargs", [dict(batch_size=4), dict(batch_size=4, drop_last=True),
                                    dict(batch_sampler=[[8, 0, 0], [-1, 3], [5]]), dict(sampler=[2, 7, 7, 1], batch_size=3)])
def test_loader_tensor_dataset_batches_match_torch(kwargs):
    """A TensorDataset batch is gathered in one indexing per tensor (not collated row by row): the
    batches, their dtypes, shapes and the list around them are torch's, repeated and negative indices
    included."""
    results = [_loader_output(lib, data, _mixed_tensor_ds, **kwargs) for lib, data in LIBS]
    assert results[1] == results[0]


def test_loader_tensor_dataset_subclass_and_grad_take_the_per_sample_path():
    class Doubled(edata.TensorDataset):
        def __getitem__(self, index):
            return tuple(2 * t[index] for t in self.tensors)
    batches = [b[0].tolist() for b in edata.DataLoader(Doubled(ember.arange(4.0)), batch_size=3)]
    assert batches == [[0.0, 2.0, 4.0], [6.0]]
    fns = []
    for lib, data in LIBS:
        w = lib.arange(6.0).reshape(3, 2).requires_grad_()
        (b,) = next(iter(data.DataLoader(data.TensorDataset(w), batch_size=2)))
        b.sum().backward()
        fns.append((b.grad_fn.name(), w.grad.tolist()))
    assert fns[1] == fns[0]


def test_loader_uses_getitems():
    class Batched(Squares):
        calls = []

        def __getitems__(self, indices):
            self.calls.append(list(indices))
            return [self[i] for i in indices]
    ds = Batched(5)
    assert [b.tolist() for b in edata.DataLoader(ds, batch_size=2)] == [[0, 1], [4, 9], [16]]
    assert ds.calls == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("kwargs,length", [
    (dict(batch_size=3), 4), (dict(batch_size=3, drop_last=True), 3), (dict(batch_size=None), 10),
    (dict(batch_size=5), 2),
])
def test_loader_iterable_dataset_matches_torch(kwargs, length):
    results = []
    for data, Counter in ((tdata, TorchCount), (edata, Count)):
        loader = data.DataLoader(Counter(10), **kwargs)
        results.append((len(loader), [describe(b) for b in loader]))
    assert results[1] == results[0]
    assert results[0][0] == length


def test_iterable_dataset_iterator_is_made_when_the_epoch_starts():
    for data, base in ((tdata, tdata.IterableDataset), (edata, edata.IterableDataset)):
        started = []

        class Stream(base):
            def __iter__(self):
                started.append(True)
                return iter(range(3))
        it = iter(data.DataLoader(Stream(), batch_size=2))
        assert started == [True]
        assert [b.tolist() for b in it] == [[0, 1], [2]]


def test_loader_iterable_dataset_len_warning_and_errors():
    loader = edata.DataLoader(Count(10, length=2), batch_size=3)
    assert len(loader) == 1
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(loader)
    for data, Counter in ((tdata, TorchCount), (edata, Count)):
        for bad in (dict(shuffle=True), dict(sampler=[0, 1]), dict(batch_sampler=[[0]])):
            with pytest.raises(ValueError):
                data.DataLoader(Counter(3), **bad)


@pytest.mark.parametrize("bad", [
    dict(sampler=[0, 1], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], drop_last=True), dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_size=None, drop_last=True), dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
    dict(persistent_workers=True), dict(multiprocessing_context="spawn"),
], ids=lambda k: ",".join(k))
def test_loader_argument_errors_match_torch(bad):
    for lib, data in LIBS:
        with pytest.raises(ValueError):
            data.DataLoader(Squares(4), **bad)


def test_loader_attributes_are_frozen_and_timeout_needs_workers():
    for lib, data in LIBS:
        loader = data.DataLoader(Squares(4), batch_size=2)
        with pytest.raises(ValueError):
            loader.batch_size = 3
        loader.collate_fn = data.default_convert  # allowed, as in torch
        with pytest.raises(AssertionError):
            iter(data.DataLoader(Squares(4), timeout=5))


def test_loader_shuffle_follows_the_generator():
    ds = Squares(12)
    loader = edata.DataLoader(ds, batch_size=5, shuffle=True, generator=ember.Generator().manual_seed(7))
    assert len(loader) == 3
    epoch1 = [b.tolist() for b in loader]
    epoch2 = [b.tolist() for b in loader]
    # replay torch's draws on an equally seeded generator: each epoch takes a base seed (for workers),
    # then the sampler's permutation, then the permutation the sampler slices to num_samples % n = 0 items
    g = _replay_generator(7)
    expected = []
    for _ in range(2):
        ember.empty((), dtype=ember.int64).random_(generator=g)
        order = ember.randperm(12, generator=g).tolist()
        ember.randperm(12, generator=g)
        expected.append([[ds[i] for i in order[k:k + 5]] for k in range(0, 12, 5)])
    assert [epoch1, epoch2] == expected
    assert epoch1 != epoch2
    same = edata.DataLoader(ds, batch_size=5, shuffle=True, generator=ember.Generator().manual_seed(7))
    assert [b.tolist() for b in same] == epoch1


def test_loader_without_generator_is_seeded_by_manual_seed():
    ember.manual_seed(0)
    a = [b.tolist() for b in edata.DataLoader(Squares(9), batch_size=4, shuffle=True)]
    ember.manual_seed(0)
    b = [b.tolist() for b in edata.DataLoader(Squares(9), batch_size=4, shuffle=True)]
    assert a == b and sorted(x for batch in a for x in batch) == [i * i for i in range(9)]


def test_worker_arguments_accepted():
    """The worker options load the same batches (workers themselves: tests/test_dataloader_workers.py)."""
    assert edata.get_worker_info() is None and tdata.get_worker_info() is None
    loader = edata.DataLoader(Squares(6), batch_size=4, num_workers=2, worker_init_fn=lambda i: None,
                              persistent_workers=True, prefetch_factor=3, pin_memory=False)
    assert [b.tolist() for b in loader] == [[0, 1, 4, 9], [16, 25]]


def test_pin_memory_warns_without_accelerator():
    with pytest.warns(UserWarning, match="pin_memory"):
        assert [b.tolist() for b in edata.DataLoader(Squares(3), batch_size=3, pin_memory=True)] == [[0, 1, 4]]


def test_training_loop_end_to_end():
    """A DataLoader feeding an optimizer: the usual loop runs and the loss falls."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], dtype=np.float32) + 0.3).astype(np.float32)
    ds = edata.TensorDataset(ember.from_numpy(x), ember.from_numpy(y))
    w = ember.zeros(3, requires_grad=True)
    b = ember.zeros((), requires_grad=True)
    opt = ember.optim.SGD([w, b], lr=0.1)
    loader = edata.DataLoader(ds, batch_size=16, shuffle=True, generator=ember.Generator().manual_seed(0))
    losses = []
    for _ in range(20):
        for xb, yb in loader:
            opt.zero_grad()
            loss = (((xb * w).sum(1) + b - yb) ** 2).mean()
            loss.backward()
            opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-3 < losses[0]


def test_generic_type_parameters_match_torch():
    """The data classes are generic as torch's (DataLoader[Tensor], Sampler[int] in annotations): the same
    type parameters, by name and variance."""
    import torch.utils.data as tdata
    import ember.utils.data as edata
    names = [n for n in tdata.__all__ if isinstance(getattr(tdata, n), type) and hasattr(edata, n)]
    assert {"DataLoader", "Dataset", "Sampler", "Subset", "StackDataset", "DistributedSampler"} <= set(names)

    def params(cls):
        return [(p.__name__, p.__covariant__, p.__contravariant__) for p in getattr(cls, "__parameters__", ())]
    for n in names:
        assert params(getattr(edata, n)) == params(getattr(tdata, n)), n
    assert edata.DataLoader[int].__origin__ is edata.DataLoader


# ---- the ember-only data tests above, told again on torch (issue 19) ------------------------------------------

def _lib_data(lib):
    return tdata if lib is torch else edata


def _story_collate_mapping(lib):
    out = _lib_data(lib).default_collate([collections.defaultdict(list, {"k": i}) for i in range(2)])
    return [type(out).__name__, out.default_factory is list, out["k"]]


def _story_random_sampler(lib):
    data = _lib_data(lib)
    a = list(data.RandomSampler(range(7), num_samples=17, generator=lib.Generator().manual_seed(11)))
    b = list(data.RandomSampler(range(5), replacement=True, num_samples=70, generator=lib.Generator().manual_seed(2)))
    lib.manual_seed(123)
    c, d = list(data.RandomSampler(range(50))), list(data.RandomSampler(range(50)))
    return [a, b, c, d, lib.rand(2)]


def _story_subset_weighted(lib):
    data = _lib_data(lib)
    s = list(data.SubsetRandomSampler([10, 20, 30, 40], generator=lib.Generator().manual_seed(4)))
    w = data.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50, generator=lib.Generator().manual_seed(1))
    lib.manual_seed(5)
    no_repeat = list(data.WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    return [s, list(w), w.weights, no_repeat, lib.rand(2)]


def _story_getitems(lib):
    calls = []

    class Batched(Squares):
        def __getitems__(self, indices):
            calls.append(list(indices))
            return [self[i] for i in indices]
    return [[b for b in _lib_data(lib).DataLoader(Batched(5), batch_size=2)], calls]


def _story_shuffle_generator(lib):
    loader = _lib_data(lib).DataLoader(Squares(12), batch_size=5, shuffle=True,
                                       generator=lib.Generator().manual_seed(7))
    return [len(loader), [b for b in loader], [b for b in loader], loader.generator.get_state()]


def _story_shuffle_manual_seed(lib):
    lib.manual_seed(0)
    a = [b for b in _lib_data(lib).DataLoader(Squares(9), batch_size=4, shuffle=True)]
    return [a, lib.get_rng_state()]


def _story_pin_memory(lib):
    return warned(lambda: [b for b in _lib_data(lib).DataLoader(Squares(3), batch_size=3, pin_memory=True)])


def _story_training_loop(lib):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], dtype=np.float32) + 0.3).astype(np.float32)
    data = _lib_data(lib)
    ds = data.TensorDataset(lib.from_numpy(x), lib.from_numpy(y))
    w = lib.zeros(3, requires_grad=True)
    b = lib.zeros((), requires_grad=True)
    opt = lib.optim.SGD([w, b], lr=0.1)
    loader = data.DataLoader(ds, batch_size=16, shuffle=True, generator=lib.Generator().manual_seed(0))
    losses = []
    for _ in range(5):
        for xb, yb in loader:
            opt.zero_grad()
            loss = (((xb * w).sum(1) + b - yb) ** 2).mean()
            loss.backward()
            opt.step()
        losses.append(loss.item())
    return [np.round(losses, 5).tolist(), w, b]


DATA_STORIES = {"default_collate_keeps_mapping_type_and_factory": _story_collate_mapping,
                "random_sampler_draws_like_torch_algorithm": _story_random_sampler,
                "subset_and_weighted_samplers": _story_subset_weighted, "loader_uses_getitems": _story_getitems,
                "loader_shuffle_follows_the_generator": _story_shuffle_generator,
                "loader_without_generator_is_seeded_by_manual_seed": _story_shuffle_manual_seed,
                "pin_memory_warns_without_accelerator": _story_pin_memory,
                "training_loop_end_to_end": _story_training_loop}


@pytest.mark.parametrize("name", sorted(DATA_STORIES))
def test_data_stories_match_torch(name):
    """Sampler orders, batches, generator states, warnings and the trained values (float32, within 1e-5) are
    torch's."""
    check_story(DATA_STORIES[name], atol=1e-5)
