"""The implicit-GEMM convolution path (Note [Implicit GEMM], ember/_backend/conv_implicit.py) against torch.

Convolutions over random sizes, kernels, dilations, padding (asymmetric 'same' included), groups and
bias, stride 1 and strided (Note [Strided implicit GEMM]: the input split into phases), in float32 and
float64, with the path forced (IMPLICIT_MODE "always") so that every shape reaches it, and at its default
thresholds; a spy on the kernel checks the path really ran. Outputs, input, weight and bias gradients
and double backward must match torch.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import cblas
from ember._backend import conv_implicit as IM
from ember._ops import conv as C
from tests._jit import count_calls

from .test_nn_conv import check_conv2d_double_backward

pytestmark = [pytest.mark.skipif(not cblas.available(np.float64), reason="NumPy's OpenBLAS cblas not found"),
              pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")]

TOL = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-4, atol=2e-4)}


@pytest.fixture(autouse=True)
def gemm_paths(monkeypatch):
    """These tests are of the GEMM paths: the direct float32 convolution (tests/test_conv_direct.py) is off."""
    monkeypatch.setattr(C, "DIRECT_MODE", "never")


@pytest.fixture
def calls(monkeypatch):
    """Counts the implicit kernel's runs (each its input's shape)."""
    return count_calls(monkeypatch, IM, "forward", record=lambda *args: args[0].shape)


def _case(rng, dtype, strided=False):
    nd = int(rng.choice([1, 2, 3], p=[0.25, 0.5, 0.25]))
    groups = int(rng.choice([1, 1, 2]))
    cin = groups * int(rng.integers(1 if groups == 1 else 2, 5))  # not depthwise (its own kernel)
    cout = groups * int(rng.integers(1, 5))
    size = [int(rng.integers(3, 14 if nd == 2 else 7)) for _ in range(nd)]
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    if all(kk == 1 for kk in k):
        k[0] = 2  # not a 1x1 convolution (its own per-sample GEMM path)
    d = [int(rng.integers(1, 3)) for _ in range(nd)]
    if rng.random() < 0.25:
        padding = "same"
    else:
        padding = [int(rng.integers(0, 3)) for _ in range(nd)]
        if any(n + 2 * p < dd * (kk - 1) + 1 for n, p, dd, kk in zip(size, padding, d, k)):
            padding = [dd * (kk - 1) for dd, kk in zip(d, k)]
    x = rng.standard_normal([int(rng.integers(1, 4)), cin] + size).astype(dtype)
    w = rng.standard_normal([cout, cin // groups] + k).astype(dtype)
    b = rng.standard_normal(cout).astype(dtype) if rng.random() < 0.7 else None
    stride = 1
    if strided:  # 'same' padding takes stride 1 only
        stride = [int(rng.integers(1, 4)) for _ in range(nd)]
        if all(st == 1 for st in stride):
            stride[-1] = 2
        if padding == "same":
            padding = [dd * (kk - 1) // 2 for dd, kk in zip(d, k)]
    return f"conv{nd}d", x, w, b, dict(stride=stride, padding=padding, dilation=d, groups=groups)


def _run(lib, name, x, w, b, kw, g):
    args = [lib.from_numpy(a.copy()).requires_grad_() for a in (x, w)]
    bias = None if b is None else lib.from_numpy(b.copy()).requires_grad_()
    y = getattr(lib.nn.functional, name)(*args, bias, **kw)
    y.backward(lib.from_numpy(g.copy()))
    return [y.detach().numpy()] + [t.grad.numpy() for t in args + ([bias] if bias is not None else [])]


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_forced_path_matches_torch(dtype, strided, monkeypatch, calls):
    monkeypatch.setattr(C, "IMPLICIT_MODE", "always")
    rng = np.random.default_rng((3 if dtype is np.float64 else 4) + 10 * strided)
    for _ in range(60):
        name, x, w, b, kw = _case(rng, dtype, strided)
        with torch.no_grad():
            shape = getattr(torch.nn.functional, name)(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
        g = rng.standard_normal(tuple(shape)).astype(dtype)
        before = len(calls)
        got = _run(ember, name, x, w, b, kw, g)
        want = _run(torch, name, x, w, b, kw, g)
        assert len(calls) > before  # the forward at least ran the implicit kernel
        what = f"{name} x{x.shape} w{w.shape} {kw}"
        for e, t in zip(got, want):
            assert e.dtype == t.dtype and e.shape == t.shape, what
            np.testing.assert_allclose(e, t, err_msg=what, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_default_thresholds_reach_path_for_narrow_layers(dtype, calls):
    """A ResNet stage at its default thresholds: 16 channels, 16x16, padding 1, with a bias."""
    assert C.IMPLICIT_MODE == "auto"
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 16, 16, 16)).astype(dtype)
    w = rng.standard_normal((16, 16, 3, 3)).astype(dtype) * 0.1
    b = rng.standard_normal(16).astype(dtype)
    g = rng.standard_normal((2, 16, 16, 16)).astype(dtype)
    kw = dict(padding=1)
    got = _run(ember, "conv2d", x, w, b, kw, g)
    assert len(calls) == 2  # forward and the input gradient (a flipped stride-1 convolution)
    for e, t in zip(got, _run(torch, "conv2d", x, w, b, kw, g)):
        np.testing.assert_allclose(e, t, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_default_thresholds_reach_path_for_strided_layers(dtype, calls):
    """ResNet's downsampling 3x3 convolution at its default thresholds: 16 -> 32 channels, stride 2, 16x16 -> 8x8
    (64 positions); its input gradient stays GEMM + col2im (the spy sees the forward only)."""
    assert C.IMPLICIT_MODE == "auto"
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 16, 16, 16)).astype(dtype)
    w = rng.standard_normal((32, 16, 3, 3)).astype(dtype) * 0.1
    g = rng.standard_normal((2, 32, 8, 8)).astype(dtype)
    kw = dict(stride=2, padding=1)
    got = _run(ember, "conv2d", x, w, None, kw, g)
    assert calls == [(2, 16, 16, 16)]
    for e, t in zip(got, _run(torch, "conv2d", x, w, None, kw, g)):
        np.testing.assert_allclose(e, t, **TOL[dtype])


def test_phases_of_a_strided_plan():
    """A 3x3 stride-2 plan: four phases of the padded input, each tap on its phase at offset (t // 2) on a grid
    one position wider than the output; a dilation-2 kernel reads one phase."""
    plan = IM.FlatPlan((2, 3, 16, 15), (3, 3), (1, 1), (1, 1), (1, 1), (2, 2))
    assert plan.out == (8, 8) and plan.grid == (9, 9) and plan.plane == 81
    assert plan.phases == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert plan.taps == [(0, 0), (1, 0), (0, 1), (2, 0), (3, 0), (2, 1), (0, 9), (1, 9), (0, 10)]
    assert plan.tail == 10
    dilated = IM.FlatPlan((2, 3, 16, 16), (3, 3), (2, 2), (2, 2), (2, 2), (2, 2))
    assert dilated.phases == [(0, 0)] and dilated.grid == (10, 10)
    x = np.arange(2 * 3 * 16 * 15, dtype=np.float64).reshape(2, 3, 16, 15)
    flat = plan.input(x)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for p, (r, c) in enumerate(plan.phases):  # each phase's grid holds the padded input's (r::2, c::2) positions
        grid = flat[p * 3:(p + 1) * 3, :plan.length].reshape(3, 2, 9, 9)
        phase = padded[:, :, r::2, c::2].transpose(1, 0, 2, 3)
        want = np.zeros_like(grid)
        want[:, :, :phase.shape[2], :phase.shape[3]] = phase
        np.testing.assert_array_equal(grid, want)
    assert not flat[:, plan.length:].any()


def test_default_thresholds_keep_im2col_elsewhere(calls):
    """Wide layers, few positions (fewer still when strided) and few input channels stay on im2col."""
    rng = np.random.default_rng(6)
    for shape, wshape, kw in (((2, 128, 16, 16), (64, 128, 3, 3), {}), ((2, 16, 8, 8), (16, 16, 3, 3), {}),
                              ((2, 3, 32, 32), (16, 3, 3, 3), {}), ((2, 16, 14, 14), (16, 16, 3, 3), {"stride": 2}),
                              ((2, 3, 32, 32), (16, 3, 3, 3), {"stride": 2})):
        x = ember.from_numpy(rng.standard_normal(shape).astype(np.float32))
        w = ember.from_numpy(rng.standard_normal(wshape).astype(np.float32))
        ember.nn.functional.conv2d(x, w, padding=1, **kw)
    assert calls == []


def test_double_backward_matches_torch(monkeypatch, calls):
    monkeypatch.setattr(C, "IMPLICIT_MODE", "always")
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(s) for s in ((2, 4, 7, 6), (6, 2, 3, 2), (6,)))
    check_conv2d_double_backward(x, w, b, padding=(1, 2), dilation=(2, 1), groups=2)
    assert len(calls) >= 3


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transposed_convolution_matches_torch(dtype, monkeypatch, calls):
    """A stride-1 transposed convolution is conv_input, i.e. the flipped convolution on this path;
    its output_padding (with dilation 2) adds positions past the flipped convolution's output."""
    monkeypatch.setattr(C, "IMPLICIT_MODE", "always")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 6, 5)).astype(dtype)
    w = rng.standard_normal((4, 3, 3, 2)).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    kw = dict(padding=(1, 0), output_padding=(1, 0), dilation=2, groups=2)
    with torch.no_grad():
        shape = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
    g = rng.standard_normal(tuple(shape)).astype(dtype)
    got = _run(ember, "conv_transpose2d", x, w, b, kw, g)
    assert calls
    for e, t in zip(got, _run(torch, "conv_transpose2d", x, w, b, kw, g)):
        assert e.shape == t.shape
        np.testing.assert_allclose(e, t, **TOL[dtype])


def test_non_finite_input_matches_torch(monkeypatch):
    """The grid positions the path computes and drops never leak inf/NaN into kept outputs."""
    monkeypatch.setattr(C, "IMPLICIT_MODE", "always")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 6, 6))
    x[0, 1, 2, 5] = np.inf
    x[1, 0, 0, 0] = np.nan
    w = rng.standard_normal((4, 3, 3, 3))
    got = ember.nn.functional.conv2d(ember.from_numpy(x), ember.from_numpy(w), padding=1).numpy()
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)
    assert np.isfinite(got).sum() == np.isfinite(want).sum()


def test_without_cblas_falls_back(monkeypatch, calls):
    """With another BLAS (no OpenBLAS cblas found) the path is off and im2col answers."""
    monkeypatch.setattr(cblas, "_fns", {})
    monkeypatch.setattr(C, "IMPLICIT_MODE", "always")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 16, 16, 16))
    w = rng.standard_normal((16, 16, 3, 3))
    got = ember.nn.functional.conv2d(ember.from_numpy(x), ember.from_numpy(w), padding=1).numpy()
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    assert calls == []
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
