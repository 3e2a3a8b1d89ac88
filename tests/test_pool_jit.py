"""The compiled 2-D max pooling (ember/_backend/pool_jit.py, Note [JIT kernels]) against torch, bit for bit: the
backward over random geometries (overlapping and disjoint windows, padding, dilation, ceil_mode), and the forward
of 2x2 and 3x3 windows at strides 1-3; ties, NaN, -inf and +inf windows, float32 and float64: values, indices, the
gradient and the gradient of the gradient; and the switch and threshold (the forward compiled with the backward
on NumPy, and neither)."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit
from ember._ops import pool as P
from tests._jit import count_calls

pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says, from the first element (tests that want them off say so)."""
    monkeypatch.setattr(jit, "ENABLED", True)
    monkeypatch.setattr(P, "JIT_MIN", 1)


def _pool(lib, x, gy, geometry):
    xt = lib.tensor(x, requires_grad=True)
    y, idx = lib.nn.functional.max_pool2d(xt, *geometry, return_indices=True)
    gyt = lib.tensor(gy, requires_grad=True)
    gx, = lib.autograd.grad(y, xt, gyt, create_graph=True)
    ggy, = lib.autograd.grad((gx * gx).sum(), gyt)
    return [y.detach().numpy(), idx.numpy(), gx.detach().numpy(), ggy.numpy()]


def _geometries(rng, count):
    while count:
        k = tuple(int(v) for v in rng.integers(1, 5, 2))
        s = tuple(int(v) for v in rng.integers(1, 4, 2))
        d = tuple(int(v) for v in rng.integers(1, 3, 2))
        p = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in k)
        hw = tuple(int(v) for v in rng.integers(4, 20, 2))
        if all((kk - 1) * dd + 1 <= size + 2 * pp for kk, dd, size, pp in zip(k, d, hw, p)):
            count -= 1
            yield hw, (k, s, p, d, bool(rng.integers(0, 2)))


def _case(rng, hw, geometry, dtype, values):
    """An input (2, 3, *hw) with the values asked for and an output gradient of small exact sums."""
    x = rng.standard_normal((2, 3) + hw).astype(dtype)
    if values == "ties":
        x = np.round(x)
    elif values == "nan":
        x[rng.random(x.shape) < 0.1] = np.nan
    elif values == "-inf":
        x[rng.random(x.shape) < 0.5] = -np.inf
    elif values == "inf":  # both infinities, and some NaN: a NaN after an infinity still wins
        x[rng.random(x.shape) < 0.2] = np.inf
        x[rng.random(x.shape) < 0.2] = -np.inf
        x[rng.random(x.shape) < 0.05] = np.nan
    y_shape = torch.nn.functional.max_pool2d(torch.from_numpy(x), *geometry).shape
    return x, (rng.integers(-3, 4, y_shape) + rng.standard_normal(y_shape) / 8).astype(dtype)


def _same_as_torch(x, gy, geometry):
    e, t = _pool(ember, x, gy, geometry), _pool(torch, x, gy, geometry)
    for name, a, b in zip(("out", "indices", "grad", "grad of grad"), e, t):
        assert a.shape == b.shape and a.dtype == b.dtype, (name, x.shape, geometry)
        np.testing.assert_array_equal(a, b, err_msg=f"{name} {x.shape} {geometry}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("values", ["normal", "ties", "nan", "-inf", "inf"])
def test_max_pool2d_backward_matches_torch_bit_for_bit(dtype, values):
    rng = np.random.default_rng([len(values), np.dtype(dtype).itemsize])
    for hw, geometry in _geometries(rng, 25):
        x, gy = _case(rng, hw, geometry, dtype, values)
        _same_as_torch(x, gy, geometry)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("values", ["normal", "ties", "nan", "inf"])
def test_compiled_forward_of_2x2_and_3x3_windows_matches_torch(monkeypatch, dtype, values):
    calls = count_calls(monkeypatch, jit.load("pool_jit"), "window_max")
    rng = np.random.default_rng([len(values), np.dtype(dtype).itemsize])
    for k in (2, 3):
        for s in (1, 2, 3):
            for ceil in (False, True):
                hw = tuple(int(v) for v in rng.integers(k, 14, 2))
                geometry = (k, s, 0, 1, ceil)
                x, gy = _case(rng, hw, geometry, dtype, values)
                calls.clear()
                _same_as_torch(x, gy, geometry)
                # ceil_mode's last window may reach past the input: those geometries keep the NumPy forward
                inside = all((o - 1) * s + k <= size for o, size in zip(gy.shape[2:], hw))
                assert calls == (["window_max"] if inside else [])


def test_the_switch_and_the_threshold_give_the_numpy_paths(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8, 15, 15)).astype(np.float32)
    gy = (rng.integers(-8, 9, (4, 8, 7, 7)) / 8).astype(np.float32)  # exact sums: the NumPy scatter adds in float64
    calls = count_calls(monkeypatch, jit.load("pool_jit"), "window_max", "scatter")
    res = []
    # compiled both ways; off; the forward compiled (x over the threshold) and the backward not (g under); neither
    for on, threshold, ran in ((True, 1, ["window_max", "scatter"]), (False, 1, []),
                               (True, gy.size + 1, ["window_max"]), (True, x.size + 1, [])):
        monkeypatch.setattr(jit, "ENABLED", on)
        monkeypatch.setattr(P, "JIT_MIN", threshold)
        calls.clear()
        res.append(_pool(ember, x, gy, (3, 2)))
        assert calls == ran
    for other in res[1:]:
        for a, b in zip(res[0], other):
            np.testing.assert_array_equal(a, b)
