"""Random numbers: metadata and errors against torch, reproducibility, RNG state, and
statistics of every sampler (means and variances within 4 standard errors). The values
themselves are torch's, bit for bit: tests/test_random_streams.py compares them."""
import copy
import math
import pickle

import numpy as np
import pytest
import torch

import ember

N = 100_000


def lib_gen(lib, seed=0):
    return lib.Generator().manual_seed(seed)


# ---- shapes, dtypes, requires_grad and grad_fn names against torch ----------------------

def _rg(lib, *shape, dtype=None):
    return lib.ones(*shape, dtype=dtype or lib.float32, requires_grad=True)


META = {
    "rand": lambda t: t.rand(2, 3),
    "rand-tuple-f64": lambda t: t.rand((2, 3), dtype=t.float64),
    "rand-0d": lambda t: t.rand(()),
    "rand-f16": lambda t: t.rand(4, dtype=t.float16),
    "rand-bf16": lambda t: t.rand(4, dtype=t.bfloat16),
    "rand-c64": lambda t: t.rand(4, dtype=t.complex64),
    "rand-rg": lambda t: t.rand(2, requires_grad=True),
    "rand-gen": lambda t: t.rand(2, generator=lib_gen(t)),
    "rand-out": lambda t: t.rand(2, 2, out=t.empty(3)),
    "randn": lambda t: t.randn(3, 1, 2),
    "randn-list": lambda t: t.randn([2, 2], dtype=t.float64, requires_grad=True),
    "randn-c128": lambda t: t.randn(3, dtype=t.complex128),
    "randint-high": lambda t: t.randint(10, (2, 3)),
    "randint-low-high": lambda t: t.randint(-3, 10, [4]),
    "randint-kw": lambda t: t.randint(low=1, high=5, size=(2,)),
    "randint-size-kw": lambda t: t.randint(5, size=(2,), generator=lib_gen(t)),
    "randint-float": lambda t: t.randint(0, 3, (2,), dtype=t.float32, requires_grad=True),
    "randint-bool": lambda t: t.randint(0, 2, (5,), dtype=t.bool),
    "randint-uint8": lambda t: t.randint(0, 256, (5,), dtype=t.uint8),
    "randint-out": lambda t: t.randint(5, (3,), out=t.empty(1, dtype=t.int32)),
    "randperm": lambda t: t.randperm(7),
    "randperm-f32": lambda t: t.randperm(5, dtype=t.float32),
    "randperm-0": lambda t: t.randperm(0),
    "randperm-u8-256": lambda t: t.randperm(256, dtype=t.uint8),
    "randperm-gen": lambda t: t.randperm(4, generator=lib_gen(t)),
    "rand_like": lambda t: t.rand_like(t.zeros(2, 3, dtype=t.float64)),
    "rand_like-rg": lambda t: t.rand_like(_rg(t, 2)),
    "rand_like-dtype": lambda t: t.rand_like(t.zeros(2), dtype=t.float16, requires_grad=True),
    "rand_like-gen": lambda t: t.rand_like(t.zeros(2), generator=lib_gen(t)),
    "randn_like": lambda t: t.randn_like(t.zeros(2, 1)),
    "randint_like-high": lambda t: t.randint_like(t.zeros(2, 3), 5),
    "randint_like-low-high": lambda t: t.randint_like(t.zeros(2, dtype=t.int32), 2, 5),
    "randint_like-kw": lambda t: t.randint_like(t.zeros(2), low=1, high=5),
    "normal-TT": lambda t: t.normal(t.zeros(2, 3), t.ones(2, 3)),
    "normal-TT-bcast": lambda t: t.normal(t.zeros(3), t.ones(2, 3)),
    "normal-TT-dtypes": lambda t: t.normal(t.zeros(2, dtype=t.float64), t.ones(2)),
    "normal-TT-f32-f64": lambda t: t.normal(t.zeros(2), t.ones(2, dtype=t.float64)),
    "normal-TT-int-std": lambda t: t.normal(t.zeros(2), t.ones(2, dtype=t.int64)),
    "normal-Tf": lambda t: t.normal(t.zeros(2, 3), 2.0),
    "normal-T": lambda t: t.normal(t.zeros(2)),
    "normal-fT": lambda t: t.normal(1.0, t.ones(2, 3)),
    "normal-ff": lambda t: t.normal(1.0, 2.0, (2, 3)),
    "normal-ff-kw": lambda t: t.normal(mean=0.0, std=1.0, size=[2], dtype=t.float64),
    "normal-ff-int": lambda t: t.normal(0, 1, (2,)),
    "normal-ff-rg": lambda t: t.normal(0.0, 1.0, (2,), requires_grad=True),
    "normal-complex": lambda t: t.normal(t.zeros(2, dtype=t.complex64), 1.0),
    "normal-out": lambda t: t.normal(t.zeros(2), t.ones(2), out=t.empty(2)),
    "normal-rg-mean": lambda t: t.normal(_rg(t, 2), 1.0),
    "normal-rg-std": lambda t: t.normal(t.zeros(2), _rg(t, 2)),
    "normal-rg-float-mean": lambda t: t.normal(0.0, _rg(t, 2)),
    "normal-rg-both": lambda t: t.normal(_rg(t, 2), _rg(t, 2)),
    "bernoulli": lambda t: t.bernoulli(t.full((2, 3), 0.5)),
    "bernoulli-f64": lambda t: t.bernoulli(t.full((2,), 0.5, dtype=t.float64)),
    "bernoulli-p": lambda t: t.bernoulli(t.zeros(2, 3), 0.5),
    "bernoulli-p-int": lambda t: t.bernoulli(t.zeros(2, dtype=t.int64), p=0.5),
    "bernoulli-p-bool": lambda t: t.bernoulli(t.zeros(2, dtype=t.bool), 0.5),
    "bernoulli-rg": lambda t: t.bernoulli(_rg(t, 2) * 0.5),
    "bernoulli-out": lambda t: t.bernoulli(t.ones(2), out=t.empty(2, dtype=t.int64)),
    "bernoulli-method": lambda t: t.full((3,), 0.2).bernoulli(),
    "multinomial-1d": lambda t: t.multinomial(t.tensor([0.2, 0.8]), 3, replacement=True),
    "multinomial-2d": lambda t: t.multinomial(t.rand(4, 5), 2),
    "multinomial-f64": lambda t: t.multinomial(t.tensor([1., 2.], dtype=t.float64), 1),
    "multinomial-rg": lambda t: t.multinomial(t.tensor([1., 2.], requires_grad=True), 2),
    "multinomial-method": lambda t: t.tensor([1., 0., 3.]).multinomial(2),
    "multinomial-gen": lambda t: t.multinomial(t.ones(3, 4), 4, generator=lib_gen(t)),
    "poisson": lambda t: t.poisson(t.ones(2, 3)),
    "poisson-f64": lambda t: t.poisson(t.ones(2, dtype=t.float64)),
    "poisson-rg": lambda t: t.poisson(_rg(t, 2)),
    "uniform_": lambda t: t.zeros(2).uniform_(1, 2),
    "uniform_-f16": lambda t: t.zeros(2, dtype=t.float16).uniform_(),
    "uniform_-c64": lambda t: t.zeros(2, dtype=t.complex64).uniform_(),
    "uniform_-graph": lambda t: (_rg(t, 2) * 2).uniform_(),
    "normal_": lambda t: t.zeros(2).normal_(3, 2),
    "normal_-c64": lambda t: t.zeros(2, dtype=t.complex64).normal_(),
    "normal_-graph": lambda t: (_rg(t, 3) * 2).normal_(),
    "random_": lambda t: t.zeros(2).random_(),
    "random_-to": lambda t: t.zeros(2, dtype=t.int64).random_(5),
    "random_-from-to": lambda t: t.zeros(2, dtype=t.int16).random_(3, 5),
    "random_-from-none": lambda t: t.zeros(2, dtype=t.int8).random_(5, None),
    "random_-kw-to": lambda t: t.zeros(2, dtype=t.int8).random_(to=5),
    "random_-bool": lambda t: t.zeros(2, dtype=t.bool).random_(),
    "random_-graph": lambda t: (_rg(t, 3) * 2).random_(),
    "exponential_": lambda t: t.zeros(2).exponential_(2),
    "exponential_-graph": lambda t: (_rg(t, 3) * 2).exponential_(),
    "geometric_": lambda t: t.zeros(2).geometric_(0.5),
    "geometric_-int": lambda t: t.zeros(2, dtype=t.int64).geometric_(0.5),
    "geometric_-graph": lambda t: (_rg(t, 3) * 2).geometric_(0.5),
    "cauchy_": lambda t: t.zeros(2, dtype=t.float64).cauchy_(),
    "cauchy_-graph": lambda t: (_rg(t, 3) * 2).cauchy_(),
    "log_normal_": lambda t: t.zeros(2).log_normal_(),
    "log_normal_-graph": lambda t: (_rg(t, 3) * 2).log_normal_(),
    "bernoulli_-p": lambda t: t.zeros(2, 3, dtype=t.int64).bernoulli_(0.5),
    "bernoulli_-bool": lambda t: t.zeros(2, 3, dtype=t.bool).bernoulli_(0.5),
    "bernoulli_-tensor-p": lambda t: t.zeros(2, 3).bernoulli_(t.full((3,), 0.5)),
    "bernoulli_-graph": lambda t: (_rg(t, 3) * 2).bernoulli_(0.5),
    "bernoulli_-graph-p": lambda t: (_rg(t, 3) * 2).bernoulli_(t.full((3,), 0.5, requires_grad=True)),
    "fill_-graph": lambda t: (_rg(t, 3) * 2).fill_(1.0),
    "fill_-graph-tensor": lambda t: (_rg(t, 3) * 2).fill_(t.tensor(3.0, requires_grad=True)),
    "zero_-graph": lambda t: (_rg(t, 3) * 2).zero_(),
    "copy_-graph": lambda t: t.zeros(2, 3).copy_(_rg(t, 3)),
    "copy_-int-dst": lambda t: t.zeros(3, dtype=t.int64).copy_(_rg(t, 3)),
    "0d-randint": lambda t: t.randint(0, 5, ()),
    "0d-random_-int64": lambda t: t.empty((), dtype=t.int64).random_(generator=lib_gen(t)),
    "0d-normal-floats": lambda t: t.normal(0.0, 1.0, ()),
    "0d-poisson": lambda t: t.poisson(t.tensor(2.0)),
    "0d-bernoulli": lambda t: t.bernoulli(t.tensor(0.5)),
    "0d-exponential_": lambda t: t.tensor(1.0).exponential_(),
    "0d-geometric_": lambda t: t.tensor(1.0).geometric_(0.5),
    "0d-cauchy_": lambda t: t.tensor(1.0).cauchy_(),
    "0d-randn-complex": lambda t: t.randn((), dtype=t.complex64),
    "0d-multinomial": lambda t: t.multinomial(t.tensor([1.0, 2.0]), 1),
}


def _grad_fn_name(x):
    fn = x.grad_fn
    return None if fn is None else type(fn).__name__


@pytest.mark.parametrize("name", sorted(META))
def test_metadata_matches_torch(name):
    fn = META[name]
    t = fn(torch)
    e = fn(ember)
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype) == str(t.dtype)
    assert e.requires_grad == t.requires_grad
    assert _grad_fn_name(e) == _grad_fn_name(t)


def test_sampling_grads_are_zero_like_torch():
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        s = lib.ones(3, requires_grad=True)
        out = lib.normal(x, s) + lib.normal(x, 1.0) + lib.normal(1.0, s) + lib.poisson(x * 2) + \
            lib.bernoulli(x * 0.5) + (x * 2).uniform_() + (x * 2).exponential_()
        out.sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0]
        assert s.grad.tolist() == [0.0, 0.0, 0.0]


# ---- errors: the exception type torch raises ----------------------------------------------

ERRORS = {
    "rand-no-size": lambda t: t.rand(),
    "rand-int-dtype": lambda t: t.rand(2, dtype=t.int64),
    "rand-bad-generator": lambda t: t.rand(2, generator=1),
    "rand-negative": lambda t: t.rand(-1),
    "randn-int-dtype": lambda t: t.randn(2, dtype=t.int32),
    "rand-int-requires-grad": lambda t: t.randint(0, 3, (2,), requires_grad=True),
    "randint-int-size": lambda t: t.randint(3, 10, 2),
    "randint-no-size": lambda t: t.randint(3, 10),
    "randint-empty-range": lambda t: t.randint(5, 5, (2,)),
    "randint-reversed": lambda t: t.randint(5, 3, (2,)),
    "randint-float-high": lambda t: t.randint(5.0, (2,)),
    "randint-float-bounds": lambda t: t.randint(0.5, 3.5, (2,)),
    "randint-uint8-oob": lambda t: t.randint(0, 300, (2,), dtype=t.uint8),
    "randint-int8-from-oob": lambda t: t.randint(-200, 0, (2,), dtype=t.int8),
    "randint_like-no-high": lambda t: t.randint_like(t.zeros(2), low=1),
    "randperm-negative": lambda t: t.randperm(-1),
    "randperm-uint8-overflow": lambda t: t.randperm(257, dtype=t.uint8),
    "randperm-half-limit": lambda t: t.randperm(3000, dtype=t.float16),
    "randperm-bool": lambda t: t.randperm(2, dtype=t.bool),
    "rand_like-int": lambda t: t.rand_like(t.zeros(2, dtype=t.int64)),
    "normal-negative-std": lambda t: t.normal(t.zeros(2), -1.0),
    "normal-negative-std-tensor": lambda t: t.normal(t.zeros(2), -t.ones(2)),
    "normal-negative-std-floats": lambda t: t.normal(0.0, -1.0, (2,)),
    "normal-no-size": lambda t: t.normal(1.0, 2.0),
    "normal-tensor-with-size": lambda t: t.normal(t.zeros(2), 1.0, (3,)),
    "normal-bad-broadcast": lambda t: t.normal(t.zeros(6), t.ones(2, 3)),
    "normal-int-mean": lambda t: t.normal(t.zeros(2, dtype=t.int64), 1.0),
    "normal-int-dtype": lambda t: t.normal(0.0, 1.0, (2,), dtype=t.int64),
    "bernoulli-int": lambda t: t.bernoulli(t.zeros(2, dtype=t.int64)),
    "bernoulli-p-out-of-range": lambda t: t.bernoulli(t.full((2,), 1.5)),
    "bernoulli-float-p-out-of-range": lambda t: t.bernoulli(t.zeros(2), p=1.5),
    "bernoulli-tensor-p-arg": lambda t: t.bernoulli(t.zeros(2), t.ones(2)),
    "bernoulli_-bad-p": lambda t: t.zeros(2).bernoulli_(1.5),
    "bernoulli_-bad-tensor-p": lambda t: t.zeros(3).bernoulli_(t.full((3,), 2.0)),
    "bernoulli_-int-tensor-p": lambda t: t.zeros(3).bernoulli_(t.ones(3, dtype=t.int64)),
    "bernoulli_-p-not-expandable": lambda t: t.zeros(3).bernoulli_(t.full((2,), 0.5)),
    "bernoulli_-p-more-dims": lambda t: t.zeros(3).bernoulli_(t.full((2, 3), 0.5)),
    "multinomial-too-many": lambda t: t.multinomial(t.tensor([0.2, 0.8]), 3),
    "multinomial-negative": lambda t: t.multinomial(t.tensor([-0.2, 0.8]), 1),
    "multinomial-zero-sum": lambda t: t.multinomial(t.tensor([0.0, 0.0]), 1),
    "multinomial-3d": lambda t: t.multinomial(t.rand(2, 2, 2), 1),
    "multinomial-0d": lambda t: t.multinomial(t.tensor(1.0), 1),
    "multinomial-int": lambda t: t.multinomial(t.tensor([1, 2]), 1),
    "multinomial-zero-samples": lambda t: t.multinomial(t.tensor([1.0, 2.0]), 0),
    "multinomial-inf": lambda t: t.multinomial(t.tensor([1.0, float("inf")]), 1),
    "multinomial-nan": lambda t: t.multinomial(t.tensor([1.0, float("nan")]), 1),
    "poisson-int": lambda t: t.poisson(t.ones(2, dtype=t.int64)),
    "poisson-negative": lambda t: t.poisson(-t.ones(2)),
    "uniform_-int": lambda t: t.zeros(2, dtype=t.int64).uniform_(),
    "uniform_-reversed": lambda t: t.zeros(2).uniform_(2, 1),
    "uniform_-inf": lambda t: t.zeros(2).uniform_(0, float("inf")),
    "uniform_-leaf": lambda t: t.zeros(2, requires_grad=True).uniform_(),
    "normal_-int": lambda t: t.zeros(2, dtype=t.int64).normal_(),
    "normal_-negative-std": lambda t: t.zeros(2).normal_(0, -1),
    "random_-reversed": lambda t: t.zeros(2).random_(5, 3),
    "random_-uint8-negative-from": lambda t: t.zeros(2, dtype=t.uint8).random_(-1, 5),
    "exponential_-int": lambda t: t.zeros(2, dtype=t.int64).exponential_(),
    "exponential_-negative": lambda t: t.zeros(2).exponential_(-1),
    "exponential_-zero": lambda t: t.zeros(2).exponential_(0),
    "geometric_-p-above-one": lambda t: t.zeros(2).geometric_(1.5),
    "geometric_-p-one": lambda t: t.zeros(2).geometric_(1.0),
    "geometric_-p-zero": lambda t: t.zeros(2).geometric_(0.0),
    "geometric_-bool": lambda t: t.zeros(2, dtype=t.bool).geometric_(0.5),
    "cauchy_-int": lambda t: t.zeros(2, dtype=t.int64).cauchy_(),
    "cauchy_-negative-sigma": lambda t: t.zeros(2).cauchy_(0, -1),
    "log_normal_-zero-std": lambda t: t.zeros(2).log_normal_(1, 0),
    "log_normal_-int": lambda t: t.zeros(2, dtype=t.int64).log_normal_(),
    "manual_seed-nan": lambda t: t.manual_seed(float("nan")),
    "generator-manual_seed-float": lambda t: t.Generator().manual_seed(1.5),
    "generator-manual_seed-str": lambda t: t.Generator().manual_seed("1"),
    "manual_seed-overflow": lambda t: t.manual_seed(2 ** 64),
    "manual_seed-underflow": lambda t: t.manual_seed(-2 ** 63 - 1),
    "set_rng_state-float": lambda t: t.set_rng_state(t.zeros(3)),
    "set_rng_state-list": lambda t: t.set_rng_state([1, 2]),
    "set_state-wrong-size": lambda t: t.Generator().set_state(t.zeros(3, dtype=t.uint8)),
    "set_state-float": lambda t: t.Generator().set_state(t.zeros(64)),
    "generator-cuda": lambda t: t.Generator(device="cuda"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    fn = ERRORS[name]
    state = torch.get_rng_state()
    try:
        with pytest.raises(Exception) as t_err:
            fn(torch)
    finally:
        torch.set_rng_state(state)
    with pytest.raises(Exception) as e_err:
        fn(ember)
    assert type(e_err.value) is type(t_err.value) or isinstance(e_err.value, type(t_err.value)), \
        f"torch raised {type(t_err.value).__name__}: {t_err.value}; ember raised {type(e_err.value).__name__}: " \
        f"{e_err.value}"


# ---- reproducibility and state ------------------------------------------------------------

DRAWS = {
    "rand": lambda t, g: t.rand(5, generator=g),
    "randn": lambda t, g: t.randn(5, dtype=t.float64, generator=g),
    "randint": lambda t, g: t.randint(0, 100, (5,), generator=g),
    "randperm": lambda t, g: t.randperm(20, generator=g),
    "normal": lambda t, g: t.normal(t.zeros(5), t.ones(5), generator=g),
    "normal-floats": lambda t, g: t.normal(0.0, 1.0, (5,), generator=g),
    "bernoulli": lambda t, g: t.bernoulli(t.full((20,), 0.5), generator=g),
    "multinomial": lambda t, g: t.multinomial(t.ones(10), 5, generator=g),
    "multinomial-replacement": lambda t, g: t.multinomial(t.ones(2, 10), 5, True, generator=g),
    "poisson": lambda t, g: t.poisson(t.full((5,), 4.0), generator=g),
    "rand_like": lambda t, g: t.rand_like(t.zeros(5), generator=g),
    "randn_like": lambda t, g: t.randn_like(t.zeros(5), generator=g),
    "randint_like": lambda t, g: t.randint_like(t.zeros(5), 0, 9, generator=g),
    "uniform_": lambda t, g: t.empty(5).uniform_(-1, 1, generator=g),
    "normal_": lambda t, g: t.empty(5).normal_(generator=g),
    "random_": lambda t, g: t.empty(5, dtype=t.int64).random_(generator=g),
    "exponential_": lambda t, g: t.empty(5).exponential_(generator=g),
    "geometric_": lambda t, g: t.empty(5).geometric_(0.2, generator=g),
    "cauchy_": lambda t, g: t.empty(5).cauchy_(generator=g),
    "log_normal_": lambda t, g: t.empty(5).log_normal_(generator=g),
    "bernoulli_": lambda t, g: t.empty(20).bernoulli_(0.5, generator=g),
    "bernoulli_-tensor": lambda t, g: t.empty(20).bernoulli_(t.full((20,), 0.5), generator=g),
}


def _same_seed_story(lib, draw):
    """The draws of test_same_seed_same_numbers on one library, as lists."""
    lib.manual_seed(1234)
    a = draw(lib, None).tolist()
    lib.manual_seed(1234)
    b = draw(lib, None).tolist()
    state = lib.get_rng_state()
    c = draw(lib, lib.Generator().manual_seed(99)).tolist()
    d = draw(lib, lib.Generator().manual_seed(99)).tolist()
    after = lib.get_rng_state().tolist() == state.tolist()
    lib.manual_seed(4321)
    e = draw(lib, None).tolist()
    return a, b, c, d, after, e


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_same_seed_same_numbers(name):
    a, b, c, d, untouched, e = _same_seed_story(ember, DRAWS[name])
    # the global generator, seeded by manual_seed
    assert a == b
    # explicit generators, and they leave the global generator alone
    assert c == d
    assert untouched
    # a different seed gives different numbers
    assert e != a
    # and every one of these numbers is torch's
    assert _same_seed_story(torch, DRAWS[name]) == (a, b, c, d, untouched, e)


def test_manual_seed_and_seed():
    g = ember.manual_seed(7)
    assert g is ember.default_generator
    assert ember.initial_seed() == 7
    assert isinstance(ember.default_generator, ember.Generator)
    assert ember.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert ember.manual_seed(2 ** 63).initial_seed() == 2 ** 63
    assert ember.manual_seed(True).initial_seed() == 1
    assert ember.manual_seed(np.int64(5)).initial_seed() == 5
    assert ember.manual_seed(ember.tensor(6)).initial_seed() == 6
    assert ember.manual_seed(2.7).initial_seed() == torch.manual_seed(2.7).initial_seed() == 2
    s = ember.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 64 and ember.initial_seed() == s
    g = ember.Generator()
    s = g.seed()
    assert g.initial_seed() == s
    assert g.manual_seed(3) is g


def test_fresh_generators_share_torchs_default_seed():
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    a = ember.rand(4, generator=ember.Generator()).tolist()
    b = ember.rand(4, generator=ember.Generator()).tolist()
    assert a == b
    assert ember.Generator().device == ember.device("cpu")
    assert ember.Generator("cpu").device.type == "cpu"


def test_rng_state_round_trip():
    ember.manual_seed(11)
    ember.rand(3)
    state = ember.get_rng_state()
    assert state.dtype == ember.uint8 and state.dim() == 1
    a = ember.randn(10).tolist()
    ember.set_rng_state(state)
    assert ember.randn(10).tolist() == a
    assert ember.initial_seed() == 11
    # the returned state is a copy: drawing does not change it
    before = state.tolist()
    ember.rand(5)
    assert state.tolist() == before


def test_generator_state_clone_pickle():
    g = ember.Generator().manual_seed(5)
    ember.rand(7, generator=g)
    st = g.get_state()
    x = ember.rand(6, generator=g).tolist()
    assert g.set_state(st) is g
    assert ember.rand(6, generator=g).tolist() == x
    g.set_state(st)
    for other in (g.clone_state(), pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
        assert other is not g
        assert other.initial_seed() == 5
        assert ember.rand(6, generator=other).tolist() == x
    # a state moves between generators
    h = ember.Generator().set_state(st)
    assert ember.rand(6, generator=h).tolist() == x


def test_fork_rng_restores_the_state():
    ember.manual_seed(3)
    with ember.random.fork_rng():
        inside = ember.rand(4).tolist()
    assert ember.rand(4).tolist() == inside
    ember.manual_seed(3)
    with ember.random.fork_rng(enabled=False):
        ember.rand(4)
    assert ember.rand(4).tolist() != inside
    ember.manual_seed(3)
    with pytest.raises(ZeroDivisionError):
        with ember.random.fork_rng(devices=[]):
            ember.rand(2)
            1 / 0
    assert ember.rand(4).tolist() == inside
    assert ember.random.manual_seed is ember.manual_seed
    assert ember.random.default_generator is ember.default_generator
    assert ember.random.thread_safe_generator() is None


def test_state_does_not_leak_between_dtypes():
    """float32 and float64 draws are both reproducible from the same seed."""
    for dtype in (ember.float16, ember.bfloat16, ember.float32, ember.float64, ember.complex64):
        ember.manual_seed(0)
        a = ember.rand(8, dtype=dtype).tolist()
        ember.manual_seed(0)
        assert ember.rand(8, dtype=dtype).tolist() == a


# ---- statistics: means and variances within 4 standard errors -----------------------------

def check_moments(x, mean, var):
    """Sample mean and variance of x agree with (mean, var) within 4 standard errors."""
    x = np.asarray(x, dtype=np.float64).ravel()
    n = x.size
    m = x.mean()
    assert abs(m - mean) < 4 * math.sqrt(var / n), f"mean {m} vs {mean}"
    s2 = x.var()
    m4 = ((x - m) ** 4).mean()
    se_var = math.sqrt(max(m4 - s2 * s2, 1e-300) / n)
    assert abs(s2 - var) < 4 * se_var + 1e-12, f"variance {s2} vs {var} (se {se_var})"


def check_fraction(mask, p):
    mask = np.asarray(mask).ravel()
    f = mask.mean()
    assert abs(f - p) < 4 * math.sqrt(p * (1 - p) / mask.size), f"fraction {f} vs {p}"


def g(seed=2024):
    return ember.Generator().manual_seed(seed)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_rand_uniform(dtype):
    x = ember.rand(N, dtype=getattr(ember, dtype), generator=g()).float().numpy()
    assert x.min() >= 0 and x.max() < 1
    check_moments(x, 0.5, 1 / 12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_randn_standard_normal(dtype):
    x = ember.randn(N, dtype=getattr(ember, dtype), generator=g()).float().numpy()
    check_moments(x, 0.0, 1.0)


def test_randn_complex_parts():
    z = ember.randn(N, dtype=ember.complex64, generator=g()).numpy()
    check_moments(z.real, 0.0, 0.5)
    check_moments(z.imag, 0.0, 0.5)
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 4 / math.sqrt(N)


def test_rand_complex_parts():
    z = ember.rand(N, dtype=ember.complex128, generator=g()).numpy()
    check_moments(z.real, 0.5, 1 / 12)
    check_moments(z.imag, 0.5, 1 / 12)


def test_normal_overloads():
    gen = g()
    check_moments(ember.normal(ember.full((N,), 2.0), ember.full((N,), 3.0), generator=gen).numpy(), 2.0, 9.0)
    check_moments(ember.normal(ember.full((N,), -1.0), 0.5, generator=gen).numpy(), -1.0, 0.25)
    check_moments(ember.normal(4.0, ember.full((N,), 2.0), generator=gen).numpy(), 4.0, 4.0)
    check_moments(ember.normal(1.5, 2.5, (N,), generator=gen).numpy(), 1.5, 6.25)
    check_moments(ember.normal(1.5, 2.5, (N,), dtype=ember.float64, generator=gen).numpy(), 1.5, 6.25)
    # broadcasting mean (columns) against std (rows)
    x = ember.normal(ember.tensor([0.0, 10.0]), ember.full((N // 2, 1), 1.0), generator=gen).numpy()
    check_moments(x[:, 0], 0.0, 1.0)
    check_moments(x[:, 1], 10.0, 1.0)


def test_uniform_():
    x = ember.empty(N).uniform_(-2, 5, generator=g()).numpy()
    assert x.min() >= -2 and x.max() < 5
    check_moments(x, 1.5, 49 / 12)
    x = ember.empty(N, dtype=ember.float64).t().uniform_(generator=g()).numpy()
    check_moments(x, 0.5, 1 / 12)
    x = ember.empty(N // 2, 2).t().uniform_(3, 4, generator=g()).numpy()  # a non-contiguous target
    check_moments(x, 3.5, 1 / 12)


def test_normal_():
    check_moments(ember.empty(N).normal_(3, 2, generator=g()).numpy(), 3.0, 4.0)
    check_moments(ember.empty(N, dtype=ember.float16).normal_(-1, 0.5, generator=g()).float().numpy(), -1.0,
                  0.25)
    z = ember.empty(N, dtype=ember.complex64).normal_(1.0, 2.0, generator=g()).numpy()
    check_moments(z.real, 1.0, 2.0)  # torch fills the real view: each part gets mean, std / sqrt(2)
    check_moments(z.imag, 1.0, 2.0)


def test_exponential_():
    x = ember.empty(N).exponential_(2.5, generator=g()).numpy()
    assert x.min() >= 0
    check_moments(x, 0.4, 0.16)
    check_moments(ember.empty(N, dtype=ember.float64).exponential_(generator=g()).numpy(), 1.0, 1.0)


def test_geometric_():
    p = 0.3
    for dtype in (ember.float32, ember.int64, ember.int16):
        x = ember.empty(N, dtype=dtype).geometric_(p, generator=g()).double().numpy()
        assert x.min() >= 1 and np.array_equal(x, np.floor(x))
        check_moments(x, 1 / p, (1 - p) / p ** 2)


def test_cauchy_():
    x = ember.empty(N, dtype=ember.float64).cauchy_(1.0, 2.0, generator=g()).numpy()
    check_fraction(x < 1.0, 0.5)
    check_fraction(np.abs(x - 1.0) < 2.0, 0.5)  # half the mass lies within one scale of the median


def test_log_normal_():
    x = ember.empty(N).log_normal_(0.5, 0.4, generator=g()).numpy()
    assert x.min() > 0
    check_moments(np.log(x), 0.5, 0.16)
    check_moments(x, math.exp(0.5 + 0.08), (math.exp(0.16) - 1) * math.exp(1.0 + 0.16))


def test_bernoulli_forms():
    gen = g()
    x = ember.bernoulli(ember.full((N,), 0.3), generator=gen).numpy()
    assert set(np.unique(x)) <= {0.0, 1.0}
    check_fraction(x == 1, 0.3)
    check_fraction(ember.bernoulli(ember.zeros(N, dtype=ember.int32), 0.7, generator=gen).numpy() == 1, 0.7)
    check_fraction(ember.empty(N, dtype=ember.bool).bernoulli_(0.2, generator=gen).numpy(), 0.2)
    check_fraction(ember.empty(N, dtype=ember.float64).bernoulli_(generator=gen).numpy() == 1, 0.5)
    p = ember.tensor([0.1, 0.5, 0.9])
    x = ember.empty(N // 3, 3).bernoulli_(p, generator=gen).numpy()
    for j, pj in enumerate([0.1, 0.5, 0.9]):
        check_fraction(x[:, j] == 1, pj)
    x = ember.bernoulli(ember.tensor([0.0, 1.0]).expand(N // 2, 2), generator=gen).numpy()
    assert (x[:, 0] == 0).all() and (x[:, 1] == 1).all()


def test_poisson():
    x = ember.poisson(ember.full((N,), 3.5), generator=g()).numpy()
    assert np.array_equal(x, np.floor(x)) and x.min() >= 0
    check_moments(x, 3.5, 3.5)
    assert (ember.poisson(ember.zeros(10)).numpy() == 0).all()


def test_randint_range_and_moments():
    x = ember.randint(-3, 7, (N,), generator=g()).numpy()
    assert x.min() == -3 and x.max() == 6
    assert len(np.unique(x)) == 10
    check_moments(x, 1.5, (10 ** 2 - 1) / 12)
    x = ember.randint(5, (N,), dtype=ember.uint8, generator=g()).numpy()
    assert set(np.unique(x)) == {0, 1, 2, 3, 4}
    x = ember.randint(0, 2 ** 40, (N,), generator=g()).double().numpy()
    check_moments(x / 2 ** 40, 0.5, 1 / 12)
    x = ember.randint_like(ember.zeros(N, dtype=ember.int16), 10, 20, generator=g()).numpy()
    assert x.min() == 10 and x.max() == 19


def test_random_():
    x = ember.empty(N, dtype=ember.int8).random_(generator=g()).numpy()
    assert x.min() >= 0 and x.max() == 127
    x = ember.empty(N).random_(generator=g()).double().numpy()
    assert x.min() >= 0 and x.max() <= 2 ** 24
    check_moments(x / 2 ** 24, 0.5, 1 / 12)
    x = ember.empty(N, dtype=ember.int64).random_(generator=g()).numpy()
    assert x.min() >= 0
    check_moments(x.astype(np.float64) / 2 ** 63, 0.5, 1 / 12)
    x = ember.empty(N, dtype=ember.int64).random_(5, generator=g()).numpy()
    assert set(np.unique(x)) == {0, 1, 2, 3, 4}
    x = ember.empty(N, dtype=ember.int32).random_(-5, 5, generator=g()).numpy()
    assert x.min() == -5 and x.max() == 4
    x = ember.empty(N, dtype=ember.bool).random_(generator=g()).numpy()
    check_fraction(x, 0.5)


def test_randperm_is_a_permutation():
    for n in (0, 1, 7, 1000):
        p = ember.randperm(n, generator=g(n)).numpy()
        assert p.dtype == np.int64
        assert np.array_equal(np.sort(p), np.arange(n))
    p = ember.randperm(1000, generator=g()).numpy()
    assert not np.array_equal(p, np.arange(1000))
    # every value is equally likely at position 0
    firsts = np.array([ember.randperm(4, generator=g(s)).numpy()[0] for s in range(2000)])
    for v in range(4):
        check_fraction(firsts == v, 0.25)
    p = ember.randperm(300, dtype=ember.float32, generator=g()).numpy()
    assert np.array_equal(np.sort(p), np.arange(300, dtype=np.float32))


def test_multinomial_with_replacement():
    probs = np.array([0.1, 0.2, 0.0, 0.3, 0.4])
    x = ember.multinomial(ember.tensor(probs * 7), N, replacement=True, generator=g()).numpy()
    assert x.shape == (N,) and x.dtype == np.int64
    assert not (x == 2).any()
    for k, pk in enumerate(probs):
        if pk:
            check_fraction(x == k, pk)
    rows = ember.tensor([[1.0, 3.0], [3.0, 1.0]], dtype=ember.float64)
    x = ember.multinomial(rows, N // 2, True, generator=g()).numpy()
    check_fraction(x[0] == 1, 0.75)
    check_fraction(x[1] == 1, 0.25)


def test_multinomial_without_replacement():
    probs = np.array([0.1, 0.2, 0.0, 0.3, 0.4])
    rows = 20_000
    x = ember.multinomial(ember.tensor(np.tile(probs, (rows, 1))), 3, generator=g()).numpy()
    assert x.shape == (rows, 3)
    assert all(len(set(r)) == 3 for r in x.tolist())  # distinct categories in every row
    assert not (x == 2).any()                          # zero-probability category never drawn
    for k, pk in enumerate(probs):                      # the first draw follows probs
        if pk:
            check_fraction(x[:, 0] == k, pk)
    # the second draw, given the first, follows the renormalised rest
    first_is_3 = x[:, 0] == 3
    second = x[first_is_3, 1]
    check_fraction(second == 4, 0.4 / 0.7)
    full = ember.multinomial(ember.ones(50, 6), 6, generator=g()).numpy()
    assert all(sorted(r) == list(range(6)) for r in full.tolist())


def test_like_functions_follow_the_input():
    x = ember.zeros(N, dtype=ember.float64)
    check_moments(ember.rand_like(x, generator=g()).numpy(), 0.5, 1 / 12)
    check_moments(ember.randn_like(x, generator=g()).numpy(), 0.0, 1.0)
    y = ember.randint_like(x, 3, generator=g()).numpy()
    assert y.dtype == np.float64 and set(np.unique(y)) == {0.0, 1.0, 2.0}


# ---- the same stories on torch: values, states and dtypes agree bit for bit ---------------

def _story_round_trip(lib):
    lib.manual_seed(11)
    lib.rand(3)
    state = lib.get_rng_state()
    a = lib.randn(10)
    lib.set_rng_state(state)
    b = lib.randn(10)
    before = state.clone()
    lib.rand(5)
    return [state, a, b, lib.initial_seed(), state, before, lib.get_rng_state()]


def _story_generator_state(lib):
    g = lib.Generator().manual_seed(5)
    lib.rand(7, generator=g)
    st = g.get_state()
    out = [st, lib.rand(6, generator=g), g.set_state(st) is g, lib.rand(6, generator=g)]
    g.set_state(st)
    for other in (g.clone_state(), pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
        out += [other is not g, other.initial_seed(), lib.rand(6, generator=other), other.get_state()]
    h = lib.Generator().set_state(st)
    return out + [lib.rand(6, generator=h), g.get_state()]


def _story_fork_rng(lib):
    lib.manual_seed(3)
    with lib.random.fork_rng():
        inside = lib.rand(4)
    out = [inside, lib.rand(4)]
    lib.manual_seed(3)
    with lib.random.fork_rng(enabled=False):
        lib.rand(4)
    out.append(lib.rand(4))
    lib.manual_seed(3)
    with pytest.raises(ZeroDivisionError):
        with lib.random.fork_rng(devices=[]):
            lib.rand(2)
            1 / 0
    return out + [lib.rand(4), lib.get_rng_state(), lib.random.thread_safe_generator()]


def _story_dtypes(lib):
    out = []
    for dtype in ("float16", "bfloat16", "float32", "float64", "complex64"):
        lib.manual_seed(0)
        out.append(lib.rand(8, dtype=getattr(lib, dtype)))
    return out + [lib.get_rng_state()]


def _as_plain(v):
    """A story's value as comparable plain data: tensors as (dtype, shape, bytes); half types through float32."""
    if isinstance(v, (torch.Tensor, ember.Tensor)):
        name = str(v.dtype).split(".")[-1]
        if v.is_complex():
            v = (torch if isinstance(v, torch.Tensor) else ember).view_as_real(v)
        if name in ("float16", "bfloat16"):
            v = v.float()
        return (name, tuple(v.shape), np.ascontiguousarray(v.numpy()).tobytes())
    return v


STORIES = {"rng_state_round_trip": _story_round_trip, "generator_state_clone_pickle": _story_generator_state,
           "fork_rng_restores_the_state": _story_fork_rng, "state_does_not_leak_between_dtypes": _story_dtypes}


@pytest.mark.parametrize("name", sorted(STORIES))
def test_state_stories_match_torch(name):
    """The stories of the state tests above give torch's numbers, states and flags, in order."""
    torch_state = torch.get_rng_state()
    try:
        expected = [_as_plain(v) for v in STORIES[name](torch)]
    finally:
        torch.set_rng_state(torch_state)
    assert [_as_plain(v) for v in STORIES[name](ember)] == expected


def _normal_overloads(t, g):
    gen = g()
    return [t.normal(t.full((N,), 2.0), t.full((N,), 3.0), generator=gen),
            t.normal(t.full((N,), -1.0), 0.5, generator=gen), t.normal(4.0, t.full((N,), 2.0), generator=gen),
            t.normal(1.5, 2.5, (N,), generator=gen), t.normal(1.5, 2.5, (N,), dtype=t.float64, generator=gen),
            t.normal(t.tensor([0.0, 10.0]), t.full((N // 2, 1), 1.0), generator=gen)]


def _bernoulli_forms(t, g):
    gen = g()
    return [t.bernoulli(t.full((N,), 0.3), generator=gen),
            t.bernoulli(t.zeros(N, dtype=t.int32), 0.7, generator=gen),
            t.empty(N, dtype=t.bool).bernoulli_(0.2, generator=gen),
            t.empty(N, dtype=t.float64).bernoulli_(generator=gen),
            t.empty(N // 3, 3).bernoulli_(t.tensor([0.1, 0.5, 0.9]), generator=gen),
            t.bernoulli(t.tensor([0.0, 1.0]).expand(N // 2, 2), generator=gen)]


# the draws of each statistics test above, as functions of (library, seeded-generator factory)
SAMPLES = {
    "rand_uniform": lambda t, g: [t.rand(N, dtype=getattr(t, d), generator=g())
                                  for d in ("float32", "float64", "float16", "bfloat16")],
    "randn_standard_normal": lambda t, g: [t.randn(N, dtype=getattr(t, d), generator=g())
                                           for d in ("float32", "float64", "float16")],
    "randn_complex_parts": lambda t, g: [t.randn(N, dtype=t.complex64, generator=g())],
    "rand_complex_parts": lambda t, g: [t.rand(N, dtype=t.complex128, generator=g())],
    "normal_overloads": _normal_overloads,
    "uniform_": lambda t, g: [t.empty(N).uniform_(-2, 5, generator=g()),
                              t.empty(N, dtype=t.float64).t().uniform_(generator=g()),
                              t.empty(N // 2, 2).t().uniform_(3, 4, generator=g())],
    "normal_": lambda t, g: [t.empty(N).normal_(3, 2, generator=g()),
                             t.empty(N, dtype=t.float16).normal_(-1, 0.5, generator=g()),
                             t.empty(N, dtype=t.complex64).normal_(1.0, 2.0, generator=g())],
    "exponential_": lambda t, g: [t.empty(N).exponential_(2.5, generator=g()),
                                  t.empty(N, dtype=t.float64).exponential_(generator=g())],
    "geometric_": lambda t, g: [t.empty(N, dtype=d).geometric_(0.3, generator=g())
                                for d in (t.float32, t.int64, t.int16)],
    "cauchy_": lambda t, g: [t.empty(N, dtype=t.float64).cauchy_(1.0, 2.0, generator=g())],
    "log_normal_": lambda t, g: [t.empty(N).log_normal_(0.5, 0.4, generator=g())],
    "bernoulli_forms": _bernoulli_forms,
    "poisson": lambda t, g: [t.poisson(t.full((N // 10,), 3.5), generator=g())],
    "randint_range_and_moments": lambda t, g: [
        t.randint(-3, 7, (N,), generator=g()), t.randint(5, (N,), dtype=t.uint8, generator=g()),
        t.randint(0, 2 ** 40, (N,), generator=g()),
        t.randint_like(t.zeros(N, dtype=t.int16), 10, 20, generator=g())],
    "random_": lambda t, g: [t.empty(N, dtype=d).random_(*a, generator=g()) for d, a in (
        (t.int8, ()), (t.float32, ()), (t.int64, ()), (t.int64, (5,)), (t.int32, (-5, 5)), (t.bool, ()))],
    "randperm_is_a_permutation": lambda t, g: [t.randperm(n, generator=g(n)) for n in (0, 1, 7, 1000)] + [
        t.randperm(1000, generator=g()), t.stack([t.randperm(4, generator=g(s)) for s in range(40)]),
        t.randperm(300, dtype=t.float32, generator=g())],
    "multinomial_with_replacement": lambda t, g: [
        t.multinomial(t.tensor(np.array([0.1, 0.2, 0.0, 0.3, 0.4]) * 7), N, replacement=True, generator=g()),
        t.multinomial(t.tensor([[1.0, 3.0], [3.0, 1.0]], dtype=t.float64), N // 2, True, generator=g())],
    "multinomial_without_replacement": lambda t, g: [
        t.multinomial(t.tensor(np.tile([0.1, 0.2, 0.0, 0.3, 0.4], (20_000, 1))), 3, generator=g()),
        t.multinomial(t.ones(50, 6), 6, generator=g())],
    "like_functions_follow_the_input": lambda t, g: [
        t.rand_like(t.zeros(N, dtype=t.float64), generator=g()),
        t.randn_like(t.zeros(N, dtype=t.float64), generator=g()),
        t.randint_like(t.zeros(N, dtype=t.float64), 3, generator=g())],
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_statistics_draws_are_torchs(name):
    """The samples whose moments the statistics tests check are torch's own, bit for bit, with its dtypes."""
    expected = [_as_plain(v) for v in SAMPLES[name](torch, lambda seed=2024: lib_gen(torch, seed))]
    got = [_as_plain(v) for v in SAMPLES[name](ember, lambda seed=2024: lib_gen(ember, seed))]
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected)):
        assert a[:2] == b[:2], f"draw {i}: dtype/shape {a[:2]} vs torch {b[:2]}"
        assert a[2] == b[2], f"draw {i}: values differ from torch's"
