"""Large elementwise ops: float32 exp, sigmoid and tanh compiled (ember/_backend/unary_jit.py) against float64 and torch,
and ufuncs split across the intra-op threads (Note [Elementwise pieces] in ember/_backend/__init__.py) against one
NumPy call, bit for bit, with broadcast operands."""
import numpy as np
import pytest
import torch

import ember
import ember._backend as B
from ember._backend import jit, parallel
from tests._jit import count_calls
from tests._threads import spy_splits

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 88.72, 88.73, 89.5, -87.3, -103.9, -104.1, -200.0,
           1e30, -1e30]


def _grid():
    rng = np.random.default_rng(0)
    return np.concatenate([rng.standard_normal(200_000) * 30, np.linspace(-110, 95, 200_001), SPECIAL]).astype(
        np.float32)


@pytest.fixture
def kernels():
    pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")
    return jit.load("unary_jit") if jit.ENABLED else pytest.skip("EMBER_JIT=0")


def test_exp_within_one_ulp_with_numpys_specials(kernels):
    x = _grid()
    out = np.empty_like(x)
    kernels.exp(x, out)
    with np.errstate(all="ignore"):
        ref = np.exp(x.astype(np.float64))
        want = np.exp(x)
    assert np.array_equal(np.isnan(out), np.isnan(want)) and np.array_equal(np.isinf(out), np.isinf(want))
    assert np.array_equal(out[want == 0], want[want == 0])
    fin = np.isfinite(want)
    ulp = np.spacing(ref[fin].astype(np.float32)).astype(np.float64)
    assert (np.abs(out[fin] - ref[fin]) <= ulp).all()  # measured 0.91 ulp (subnormals: their spacing)


def test_sigmoid_within_three_ulp(kernels):
    x = _grid()
    out = np.empty_like(x)
    kernels.sigmoid(x, out)
    v = x.astype(np.float64)
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(v))
        ref = np.where(v >= 0, 1 / (1 + e), e / (1 + e))
    assert np.array_equal(np.isnan(out), np.isnan(x))
    fin = ~np.isnan(x)
    ulp = np.spacing(ref[fin].astype(np.float32)).astype(np.float64)
    assert (np.abs(out[fin] - ref[fin]) <= 3 * ulp).all()  # measured 2.2 ulp


def test_tanh_within_three_ulp_with_numpys_specials(kernels):
    x = np.concatenate([_grid(), np.logspace(-45, 1.2, 2000), -np.logspace(-45, 1.2, 2000), [9.0, 9.1, -9.1, 0.55,
                                                                                                 -0.55]]).astype(np.float32)
    out = np.empty_like(x)
    kernels.tanh(x, out)
    ref = np.tanh(x.astype(np.float64))
    assert np.array_equal(np.isnan(out), np.isnan(x))
    assert np.array_equal(out[np.isinf(x)], np.sign(x[np.isinf(x)]))
    zero = x == 0
    assert np.array_equal(np.signbit(out[zero]), np.signbit(x[zero]))  # -0.0 stays -0.0
    fin = np.isfinite(x)
    ulp = np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64)
    assert (np.abs(out[fin] - ref[fin]) <= 3 * ulp).all()  # measured 2.4 ulp


@pytest.mark.parametrize("shape", [(512, 300), (130, 128)], ids=["600K", "65K"])
@pytest.mark.parametrize("op", ["exp", "sigmoid", "tanh"])
def test_large_tensors_run_compiled_and_match_torch(op, shape, kernels, monkeypatch):
    """exp, tanh and sigmoid from 16K elements (split across the threads from 512 KB), values and gradients
    against torch."""
    monkeypatch.setattr(jit, "ENABLED", True)
    calls = count_calls(monkeypatch, kernels, "exp", "sigmoid", "tanh")
    x = (np.random.default_rng(1).standard_normal(shape) * 8).astype(np.float32)
    g = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    res = []
    for lib in (ember, torch):
        t = lib.from_numpy(x.copy()).requires_grad_()
        y = getattr(t, op)()
        y.backward(lib.from_numpy(g))
        res.append((y.detach().numpy(), t.grad.numpy()))
    assert op in calls
    (ey, eg), (ty, tg) = res
    np.testing.assert_allclose(ey, ty, rtol=1e-6, atol=1e-30)
    # sigmoid's g s (1 - s) and tanh's g (1 - t^2) turn the forward's ulps near 1 into ~1e-4 relative (torch's too)
    np.testing.assert_allclose(eg, tg, rtol=1e-5, atol=1e-6)


def test_exp_switch_off_is_numpys(monkeypatch):
    monkeypatch.setattr(jit, "ENABLED", False)
    x = np.random.default_rng(3).standard_normal((512, 300)).astype(np.float32)
    assert np.array_equal(ember.from_numpy(x).exp().numpy(), np.exp(x))


CASES = [  # (shape of a, shape of b): broadcast along axis 0 and the others
    ((64, 33), (64, 33)), ((64, 33), (33,)), ((64, 33), (1, 33)), ((64, 1), (64, 33)), ((8, 4, 5), (4, 1)),
    ((8, 4, 5), ()), ((2, 3), (2, 3))]


@pytest.mark.parametrize("a_shape,b_shape", CASES)
@pytest.mark.parametrize("f", [np.add, np.multiply, np.arctan2, np.less])
def test_ufunc_pieces_are_one_numpy_call(a_shape, b_shape, f, monkeypatch):
    monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    splits = spy_splits(monkeypatch)
    try:
        rng = np.random.default_rng(4)
        a = rng.standard_normal(a_shape).astype(np.float32)
        b = rng.standard_normal(b_shape).astype(np.float32)
        got = B.ufunc(f, a, b)
    finally:
        ember.set_num_threads(before)
    assert splits == [2]
    want = f(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_relu_and_tensor_ops_split_large_arrays(monkeypatch):
    """ember's add and relu on 8 MB (the default threshold splits them) against NumPy and torch."""
    splits = spy_splits(monkeypatch)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        rng = np.random.default_rng(5)
        a = rng.standard_normal((32, 64, 32, 32)).astype(np.float32)
        b = rng.standard_normal((64, 1, 1)).astype(np.float32)
        x, y = ember.from_numpy(a), ember.from_numpy(b)
        s, r = (x + y).numpy(), ember.relu(x).numpy()
    finally:
        ember.set_num_threads(before)
    assert splits == [2, 2]
    assert np.array_equal(s, a + b)
    assert np.array_equal(r, torch.relu(torch.from_numpy(a)).numpy())
