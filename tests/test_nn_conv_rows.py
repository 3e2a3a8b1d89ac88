"""The row-im2col convolution path (Note [Row im2col], ember/_backend/conv_rows.py) against torch.

2-D convolutions of groups 1 over random sizes, kernels, strides, dilations, padding and bias, in float32,
float64 and complex128 (NumPy's GEMM, not cblas), with the path forced (ROWS_MODE "always", implicit GEMM
off) so that every shape reaches it, with and without cblas, and at its default thresholds; a spy on the
kernels checks the path really ran. Outputs, input, weight and bias gradients and double backward must
match torch.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import conv_rows as CR
from ember._ops import conv as C
from tests._jit import count_calls

from .test_nn_conv import check_conv2d_double_backward

TOL = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-4, atol=2e-4),
       np.complex128: dict(rtol=1e-9, atol=1e-9)}


@pytest.fixture(autouse=True)
def gemm_paths(monkeypatch):
    """These tests are of the GEMM paths: the direct float32 convolution (tests/test_conv_direct.py) is off."""
    monkeypatch.setattr(C, "DIRECT_MODE", "never")


@pytest.fixture
def calls(monkeypatch):
    """Records which row kernels ran ("conv" or "weight")."""
    return count_calls(monkeypatch, CR, "conv", "weight")


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setattr(C, "ROWS_MODE", "always")
    monkeypatch.setattr(C, "IMPLICIT_MODE", "never")


def _draw(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if dtype is np.complex128:
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _case(rng, dtype):
    cin = int(rng.integers(1, 6))
    cout = int(rng.integers(1, 6))
    size = [int(rng.integers(3, 14)) for _ in range(2)]
    k = [int(rng.integers(1, 6)) for _ in range(2)]
    if k == [1, 1]:
        k[0] = 2  # not a 1x1 convolution (its own per-sample GEMM path)
    s = [int(rng.integers(1, 4)) for _ in range(2)]
    d = [int(rng.integers(1, 3)) for _ in range(2)]
    padding = [int(rng.integers(0, 3)) for _ in range(2)]
    for i in range(2):
        if size[i] + 2 * padding[i] < d[i] * (k[i] - 1) + 1:
            padding[i] = d[i] * (k[i] - 1)
    x = _draw(rng, [int(rng.integers(1, 4)), cin] + size, dtype)
    w = _draw(rng, [cout, cin] + k, dtype)
    b = _draw(rng, [cout], dtype) if rng.random() < 0.7 else None
    return x, w, b, dict(stride=s, padding=padding, dilation=d)


def _run(lib, x, w, b, kw, g):
    args = [lib.from_numpy(a.copy()).requires_grad_() for a in (x, w)]
    bias = None if b is None else lib.from_numpy(b.copy()).requires_grad_()
    y = lib.nn.functional.conv2d(*args, bias, **kw)
    y.backward(lib.from_numpy(g.copy()))
    return [y.detach().numpy()] + [t.grad.numpy() for t in args + ([bias] if bias is not None else [])]


def _check(rng, dtype, count, calls):
    for _ in range(count):
        x, w, b, kw = _case(rng, dtype)
        with torch.no_grad():
            shape = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
        g = _draw(rng, tuple(shape), dtype)
        calls.clear()
        got = _run(ember, x, w, b, kw, g)
        want = _run(torch, x, w, b, kw, g)
        assert "conv" in calls and "weight" in calls  # the forward and the weight gradient ran it
        what = f"x{x.shape} w{w.shape} {kw}"
        for e, t in zip(got, want):
            assert e.dtype == t.dtype and e.shape == t.shape, what
            np.testing.assert_allclose(e, t, err_msg=what, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_forced_path_matches_torch(dtype, forced, calls):
    _check(np.random.default_rng({np.float64: 1, np.float32: 2, np.complex128: 3}[dtype]), dtype, 40, calls)


def test_forced_path_without_cblas_matches_torch(forced, calls, monkeypatch):
    """With another BLAS (no cblas found) the GEMMs run through np.matmul on the same blocks."""
    monkeypatch.setattr(CR.cblas, "available", lambda dtype: False)
    _check(np.random.default_rng(4), np.float64, 25, calls)


def test_strided_view_input(forced, calls):
    """An input that is a flipped, transposed and strided view reaches the row copies as it is."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 6, 13, 12))
    w = rng.standard_normal((4, 6, 3, 4))
    outs = []
    for lib in (ember, torch):
        xs = lib.from_numpy(x.copy()).requires_grad_()
        y = lib.nn.functional.conv2d(xs.flip(2).transpose(2, 3)[:, :, ::2], lib.from_numpy(w.copy()), padding=(1, 2),
                                     stride=(2, 1))
        y.square().sum().backward()
        outs.append([y.detach().numpy(), xs.grad.numpy()])
    assert "conv" in calls
    for e, t in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


def test_double_backward_matches_torch(forced, calls):
    rng = np.random.default_rng(6)
    x, w, b = (rng.standard_normal(s) for s in ((2, 3, 9, 8), (4, 3, 3, 2), (4,)))
    check_conv2d_double_backward(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2))
    assert calls.count("conv") >= 2 and "weight" in calls


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_default_thresholds_reach_path(dtype, calls):
    """AlexNet's second convolution at its default thresholds (32 -> 64, 5x5 at 15x15): forward, the input
    gradient (a flipped stride-1 convolution) and the weight gradient all take the row path."""
    assert C.ROWS_MODE == "auto"
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 32, 15, 15)).astype(dtype)
    w = (rng.standard_normal((64, 32, 5, 5)) * 0.05).astype(dtype)
    b = rng.standard_normal(64).astype(dtype)
    g = rng.standard_normal((2, 64, 15, 15)).astype(dtype)
    got = _run(ember, x, w, b, dict(padding=2), g)
    assert calls == ["conv", "conv", "weight"]
    for e, t in zip(got, _run(torch, x, w, b, dict(padding=2), g)):
        np.testing.assert_allclose(e, t, **TOL[dtype])


def test_default_thresholds_take_large_kernels_from_implicit_gemm(calls):
    """Stride-1 5x5 and 7x7 kernels that the implicit GEMM would take (16-64 channels, >= 256 positions) take
    the row path; a 3x3 one stays implicit."""
    rng = np.random.default_rng(10)
    for shape, wshape, want in (((1, 16, 16, 16), (32, 16, 5, 5), ["conv"]),
                                ((1, 16, 16, 16), (16, 16, 7, 7), ["conv"]),
                                ((1, 16, 16, 16), (16, 16, 3, 3), [])):
        calls.clear()
        x = ember.from_numpy(rng.standard_normal(shape).astype(np.float32))
        w = ember.from_numpy(rng.standard_normal(wshape).astype(np.float32))
        ember.nn.functional.conv2d(x, w, padding=wshape[-1] // 2)
        assert calls == want, wshape


def test_default_thresholds_keep_im2col_elsewhere(calls):
    """Narrow rows (AlexNet's 3-channel first layer), few positions, strides, groups and 3-D stay where they
    were."""
    rng = np.random.default_rng(8)
    for shape, wshape, kw in (((2, 3, 64, 64), (32, 3, 5, 5), dict(stride=2, padding=2)),
                              ((2, 96, 7, 7), (64, 96, 3, 3), dict(padding=1)),
                              ((2, 32, 16, 16), (64, 32, 3, 3), dict(padding=1, stride=2)),
                              ((2, 32, 15, 15), (64, 16, 5, 5), dict(padding=2, groups=2)),
                              ((2, 32, 6, 15, 15), (8, 32, 1, 5, 5), dict(padding=(0, 2, 2)))):
        x = ember.from_numpy(rng.standard_normal(shape).astype(np.float32))
        w = ember.from_numpy(rng.standard_normal(wshape).astype(np.float32))
        getattr(ember.nn.functional, f"conv{len(shape) - 2}d")(x, w, **kw)
    assert calls == []


@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(1, 2), dilation=(2, 1), output_padding=(1, 0))])
def test_forced_path_conv_transpose_matches_torch(forced, calls, kw):
    """A transposed convolution's forward is conv's input gradient (the flipped convolution at stride 1) and
    its weight gradient is conv's, both of which take the row path."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4, 6, 7))
    w = rng.standard_normal((4, 3, 3, 3))
    b = rng.standard_normal(3)
    results = []
    for lib in (ember, torch):
        xs, ws, bs = (lib.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
        y = lib.nn.functional.conv_transpose2d(xs, ws, bs, **kw)
        y.backward(lib.from_numpy(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))))
        results.append([t.detach().numpy() for t in (y, xs.grad, ws.grad, bs.grad)])
    assert "conv" in calls and "weight" in calls
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)
