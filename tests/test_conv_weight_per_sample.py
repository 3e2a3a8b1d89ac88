"""The per-sample weight gradient (Note [Per-sample weight gradient], ember/_ops/conv.py) against torch.

2-D convolutions of groups 1 over random sizes, kernels, strides, dilations, padding and bias, in float32 and
float64, with the path forced (SAMPLE_WEIGHT_MODE "always") so that every shape reaches it, and at its default
threshold (256 output positions per sample); a spy on the kernel checks the path really ran. Outputs, input,
weight and bias gradients and double backward must match torch.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import conv_numpy as K
from ember._ops import conv as C
from tests._jit import count_calls

from .test_nn_conv import check_conv2d_double_backward
from .test_nn_conv_rows import _case, _run  # random 2-D geometries (no 1x1), and one run of both gradients

TOL = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-4, atol=2e-4)}


@pytest.fixture(autouse=True)
def gemm_paths(monkeypatch):
    """These tests are of the GEMM paths: the direct float32 convolution (tests/test_conv_direct.py) is off."""
    monkeypatch.setattr(C, "DIRECT_MODE", "never")


@pytest.fixture
def calls(monkeypatch):
    """Counts the runs of the per-sample kernel (each its input's shape)."""
    return count_calls(monkeypatch, K, "weight_per_sample", record=lambda *args: args[0].shape)


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setattr(C, "SAMPLE_WEIGHT_MODE", "always")


def _compare(x, w, b, kw, g, dtype):
    what = f"x{x.shape} w{w.shape} {kw}"
    for e, t in zip(_run(ember, x, w, b, kw, g), _run(torch, x, w, b, kw, g)):
        assert e.dtype == t.dtype and e.shape == t.shape, what
        np.testing.assert_allclose(e, t, err_msg=what, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_forced_path_matches_torch(dtype, forced, calls):
    rng = np.random.default_rng({np.float64: 1, np.float32: 2}[dtype])
    for _ in range(40):
        x, w, b, kw = _case(rng, dtype)
        with torch.no_grad():
            shape = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
        g = rng.standard_normal(tuple(shape)).astype(dtype)
        calls.clear()
        _compare(x, w, b, kw, g, dtype)
        assert calls, f"x{x.shape} w{w.shape} {kw}: the weight gradient did not take the path"


def test_strided_gradient_and_input(forced, calls):
    """A strided view as the input and a non-contiguous output gradient (from a transpose) reach the kernel."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6, 13, 12))
    w = rng.standard_normal((4, 6, 3, 3))
    grads = []
    for lib in (ember, torch):
        xs = lib.from_numpy(x.copy()).requires_grad_()
        ws = lib.from_numpy(w.copy()).requires_grad_()
        y = lib.nn.functional.conv2d(xs.flip(2).transpose(2, 3)[:, :, ::2], ws, padding=1)
        (y.transpose(2, 3) * lib.arange(y.shape[2], dtype=lib.float64)).sum().backward()
        grads.append([xs.grad.numpy(), ws.grad.numpy()])
    assert calls
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


def test_double_backward_matches_torch(forced, calls):
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s) for s in ((2, 3, 9, 8), (4, 3, 3, 2), (4,)))
    check_conv2d_double_backward(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2))
    assert calls


def test_half_precision_computes_in_float32(forced, calls):
    """float16 and bfloat16 operands compute in float32 (opmath) and reach the kernel there."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    for name in ("float16", "bfloat16"):
        grads = []
        for lib in (ember, torch):
            xs = lib.from_numpy(x.copy()).to(getattr(lib, name)).requires_grad_()
            ws = lib.from_numpy(w.copy()).to(getattr(lib, name)).requires_grad_()
            lib.nn.functional.conv2d(xs, ws, padding=1).float().square().sum().backward()
            assert ws.grad.dtype == getattr(lib, name)
            grads.append(ws.grad.float().numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=2e-2, atol=2e-1)
    assert calls


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_default_threshold_reaches_path(dtype, calls):
    """ResNet's 16 -> 16 3x3 layer at 32x32 (1024 positions) and a stride-2 16 -> 32 one (256) take it."""
    assert C.SAMPLE_WEIGHT_MODE == "auto"
    rng = np.random.default_rng(6)
    for wshape, kw in (((16, 16, 3, 3), dict(padding=1)), ((32, 16, 3, 3), dict(padding=1, stride=2))):
        x = rng.standard_normal((2, 16, 32, 32)).astype(dtype)
        w = (rng.standard_normal(wshape) * 0.1).astype(dtype)
        b = rng.standard_normal(wshape[0]).astype(dtype)
        g = rng.standard_normal((2, wshape[0], 32 // kw.get("stride", 1), 32 // kw.get("stride", 1))).astype(dtype)
        calls.clear()
        _compare(x, w, b, kw, g, dtype)
        assert len(calls) == 1, wshape


def test_default_threshold_keeps_im2col_elsewhere(calls):
    """Fewer than 256 positions, 1x1 kernels, groups, 1-D and 3-D convolutions keep their paths."""
    rng = np.random.default_rng(7)
    for shape, wshape, kw in (((2, 64, 8, 8), (64, 64, 3, 3), dict(padding=1)),
                              ((2, 16, 32, 32), (32, 16, 1, 1), dict(stride=2)),
                              ((2, 32, 16, 16), (64, 32, 3, 3), dict(padding=1, stride=2)),
                              ((2, 32, 16, 16), (64, 16, 3, 3), dict(padding=1, groups=2)),
                              ((2, 8, 300), (8, 8, 3), dict(padding=1)),
                              ((2, 4, 4, 16, 16), (8, 4, 3, 3, 3), dict(padding=1))):
        x = ember.from_numpy(rng.standard_normal(shape).astype(np.float32)).requires_grad_()
        w = ember.from_numpy(rng.standard_normal(wshape).astype(np.float32)).requires_grad_()
        getattr(ember.nn.functional, f"conv{len(shape) - 2}d")(x, w, **kw).sum().backward()
    assert calls == []


def test_without_cblas_keeps_im2col(forced, calls, monkeypatch):
    monkeypatch.setattr(C.cblas, "available", lambda dtype: False)
    rng = np.random.default_rng(8)
    x, w, b, kw = _case(rng, np.float64)
    with torch.no_grad():
        shape = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
    _compare(x, w, b, kw, rng.standard_normal(tuple(shape)), np.float64)
    assert calls == []
