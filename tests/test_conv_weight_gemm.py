"""The im2col weight gradient's two GEMM forms (Note [Weight-gradient GEMM], ember/_ops/conv.py) against torch.

With the direct, row and per-sample paths off, every weight gradient of a non-depthwise convolution wider than
1x1 is an im2col GEMM: y @ cols^T straight into a weight-shaped array when a sample has few output positions
(the batch-last layout), cols @ y^T in chunks, split and transposed after, when it has many. Random 1-D, 2-D
and 3-D geometries with groups, strides, dilations and padding, in float32 and float64, both sides of the
layout threshold; a spy checks which form ran. Outputs and all gradients must match torch, and the batch-last
form's gradient must land in .grad as it was made (its own C-contiguous buffer, no copy).
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import conv_numpy as K
from ember._ops import conv as C
from tests._jit import count_calls

TOL = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-4, atol=2e-4)}
CONV = {1: "conv1d", 2: "conv2d", 3: "conv3d"}


@pytest.fixture(autouse=True)
def gemm_paths(monkeypatch):
    """Only the im2col paths: the direct kernels, the row im2col and the per-sample weight gradient are off."""
    monkeypatch.setattr(C, "DIRECT_MODE", "never")
    monkeypatch.setattr(C, "ROWS_MODE", "never")
    monkeypatch.setattr(C, "SAMPLE_WEIGHT_MODE", "never")


@pytest.fixture
def calls(monkeypatch):
    """Which weight-gradient GEMM ran: "weight_gemm" (batch-last) or "matmul_reduce" (batch-second chunks)."""
    return count_calls(monkeypatch, K, "weight_gemm", "matmul_reduce")


def _case(rng, dtype, nd, many_positions):
    groups = int(rng.choice([1, 1, 2, 3]))
    cin = groups * int(rng.integers(2, 4))  # 2+ channels a group: not depthwise (its own kernels)
    cout = groups * int(rng.integers(1, 4))
    lo, hi = (17, 24) if many_positions and nd == 2 else (280, 320) if many_positions else (3, 9)
    if nd == 3:
        lo, hi = (7, 9) if many_positions else (3, 6)
    size = [int(rng.integers(lo, hi)) for _ in range(nd)]
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    if all(v == 1 for v in k):
        k[0] = 2  # not a 1x1 convolution (its own GEMM path)
    s = [1 if many_positions else int(rng.integers(1, 3)) for _ in range(nd)]
    d = [int(rng.integers(1, 3)) for _ in range(nd)]
    padding = [int(rng.integers(0, 3)) for _ in range(nd)]
    for i in range(nd):
        if size[i] + 2 * padding[i] < d[i] * (k[i] - 1) + 1:
            padding[i] = d[i] * (k[i] - 1)
    n = int(rng.integers(1, 5))
    draw = lambda *shape: rng.standard_normal(shape).astype(dtype)
    b = draw(cout) if rng.random() < 0.5 else None
    return draw(n, cin, *size), draw(cout, cin // groups, *k), b, dict(stride=s, padding=padding, dilation=d,
                                                                       groups=groups)


def _run(lib, x, w, b, kw, g):
    args = [lib.from_numpy(a.copy()).requires_grad_() for a in (x, w)]
    bias = None if b is None else lib.from_numpy(b.copy()).requires_grad_()
    y = getattr(lib.nn.functional, CONV[x.ndim - 2])(*args, bias, **kw)
    y.backward(lib.from_numpy(g.copy()))
    return [y.detach().numpy()] + [t.grad.numpy() for t in args + ([bias] if bias is not None else [])]


@pytest.mark.parametrize("many_positions", [False, True], ids=["batch_last", "batch_second"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weight_gradient_gemms_match_torch(dtype, nd, many_positions, calls):
    rng = np.random.default_rng([nd, many_positions, dtype == np.float32])
    for _ in range(12):
        x, w, b, kw = _case(rng, dtype, nd, many_positions)
        tw = getattr(torch.nn.functional, CONV[nd])
        with torch.no_grad():
            shape = tw(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
        positions = int(np.prod(shape[2:]))
        g = rng.standard_normal(tuple(shape)).astype(dtype)
        calls.clear()
        got = _run(ember, x, w, b, kw, g)
        want = _run(torch, x, w, b, kw, g)
        what = f"x{x.shape} w{w.shape} {kw}"
        expected = "weight_gemm" if positions <= C._BATCH_LAST_MAX_POSITIONS else "matmul_reduce"
        assert expected in calls and len(set(calls)) == 1, (what, calls)
        for e, t in zip(got, want):
            assert e.dtype == t.dtype and e.shape == t.shape, what
            np.testing.assert_allclose(e, t, err_msg=what, **TOL[dtype])


def test_batch_last_gradient_is_the_grad_itself():
    """The weight-shaped array weight_gemm writes becomes w.grad without a copy, C-contiguous."""
    made = []
    real = K.weight_gemm
    spy = lambda *a: made.append(real(*a)) or made[-1]
    rng = np.random.default_rng(5)
    x = ember.from_numpy(rng.standard_normal((4, 6, 5, 5)).astype(np.float32))
    w = ember.from_numpy(rng.standard_normal((8, 6, 3, 3)).astype(np.float32)).requires_grad_()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(K, "weight_gemm", spy)
        ember.nn.functional.conv2d(x, w, padding=1).sum().backward()
    assert len(made) == 1 and made[0].flags.c_contiguous and made[0].shape == (8, 6, 3, 3)
    assert np.shares_memory(w.grad.numpy(), made[0])
    want = torch.from_numpy(w.detach().numpy().copy()).requires_grad_()
    torch.nn.functional.conv2d(torch.from_numpy(x.numpy()), want, padding=1).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), want.grad.numpy(), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("positions", [4, 400])
def test_empty_batch_gives_zero_weight_gradient(positions):
    """No samples: both forms give zeros of the weight's shape, as torch."""
    side = int(np.sqrt(positions))
    grads = []
    for lib in (ember, torch):
        x = lib.zeros(0, 4, side, side, requires_grad=True)
        w = lib.ones(6, 4, 3, 3, requires_grad=True)
        lib.nn.functional.conv2d(x, w, padding=1).sum().backward()
        grads.append(w.grad.numpy())
    assert grads[0].shape == grads[1].shape
    np.testing.assert_array_equal(grads[0], grads[1])
