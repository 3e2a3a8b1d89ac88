"""The direct float32 convolutions against torch: the row tiles (Note [Direct convolution],
ember/_backend/conv_direct_jit.py) and the output-channel-vector tiles (Notes [Direct weight gradient] and [Direct
strided forward], ember/_backend/conv_lanes_jit.py).

2-D convolutions of groups 1 over random sizes that reach every tile (output widths of 8 and not a multiple of 8,
output channels not a multiple of 4 or 16, kernels of 3, 5 and other widths, padding on one side, stride and
dilation for the lanes kernels), each kernel forced in turn, on one and two threads: outputs, input, weight and
bias gradients, and double backward. A spy checks which kernel ran for the forward, the input gradient (the flipped
convolution) and the weight gradient, at the default thresholds too, and that DIRECT_MODE "never" keeps them off.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit
from ember._ops import conv as C

from .test_conv_layout_jit import _conv as _run  # conv2d's output and gradients, as arrays

pytest.importorskip("numba", reason="the direct convolutions need the ember[jit] extra (numba)")


@pytest.fixture
def ran(monkeypatch):
    """(op, kernel, shape) for every direct kernel call: op "forward" with the input's shape, or "weight" with the
    output gradient's; kernel "rows" or "lanes"."""
    monkeypatch.setattr(jit, "ENABLED", True)
    calls = []
    for kind, name in (("rows", "conv_direct_jit"), ("lanes", "conv_lanes_jit")):
        module = jit.load(name)
        for op, shape_of in (("forward", lambda x, *a: x.shape), ("weight", lambda x, y, *a: y.shape)):
            fn = getattr(module, op)
            monkeypatch.setattr(module, op, lambda *a, _fn=fn, _op=op, _kind=kind, _shape=shape_of: calls.append(
                (_op, _kind, _shape(*a))) or _fn(*a))
    return calls


def _case(rng, strided=False):
    n, c, o = int(rng.integers(1, 5)), int(rng.integers(1, 20)), int(rng.integers(1, 40))
    kh, kw = int(rng.choice([1, 2, 3, 3, 5, 7])), int(rng.choice([2, 3, 3, 5, 7]))
    stride = (int(rng.integers(1, 4)), int(rng.integers(1, 4))) if strided else (1, 1)
    dilation = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) if strided else (1, 1)
    h, w = int(rng.integers(kh, kh + 14)) * dilation[0], int(rng.integers(kw, kw + 30)) * dilation[1]
    padding = (int(rng.integers(0, kh)), int(rng.integers(0, kw)))
    if not strided and rng.random() < 0.25:
        padding = "same"
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if rng.random() < 0.7 else None
    return x, wt, b, dict(padding=padding, stride=stride, dilation=dilation)


def _close(got, want):
    for g, t in zip(got, want):
        assert g.dtype == t.dtype and g.shape == t.shape
        np.testing.assert_allclose(g, t, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(t).max())))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kernel", ["rows", "lanes"])
def test_random_shapes_match_torch(ran, monkeypatch, kernel, threads):
    monkeypatch.setattr(C, "DIRECT_MODE", kernel)
    rng = np.random.default_rng(threads)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for _ in range(40):
            x, w, b, kw = _case(rng)
            with torch.no_grad():
                shape = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
            gy = rng.standard_normal(tuple(shape)).astype(np.float32)
            first = len(ran)
            got, want = _run(ember, x, w, b, gy, **kw), _run(torch, x, w, b, gy, **kw)
            if w.shape[2] * w.shape[3] > 1:  # 1x1 kernels are plain GEMMs
                assert ran[first] == ("forward", kernel, x.shape)
                assert ("weight", kernel, gy.shape) in ran[first:]
            _close(got, want)
    finally:
        ember.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2])
def test_strided_and_dilated_match_torch(ran, monkeypatch, threads):
    """The lanes kernels: the forward and the weight gradient (the strided input gradient stays GEMM + col2im)."""
    monkeypatch.setattr(C, "DIRECT_MODE", "lanes")
    rng = np.random.default_rng(10 + threads)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for _ in range(30):
            x, w, b, kw = _case(rng, strided=True)
            with torch.no_grad():
                shape = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
            if 0 in shape:
                continue
            gy = rng.standard_normal(tuple(shape)).astype(np.float32)
            first = len(ran)
            got, want = _run(ember, x, w, b, gy, **kw), _run(torch, x, w, b, gy, **kw)
            if w.shape[2] * w.shape[3] > 1:
                assert ran[first] == ("forward", "lanes", x.shape) and ("weight", "lanes", gy.shape) in ran[first:]
            _close(got, want)
    finally:
        ember.set_num_threads(before)


@pytest.mark.parametrize("shape, stride, expected", [
    ((32, 16, 32, 32), 1, ["rows", "rows", "lanes"]),  # wide rows; the weight from 16 channels
    ((8, 32, 8, 8), 1, ["lanes", "lanes", "lanes"]),  # 8 columns: lanes everywhere
    ((4, 3, 9, 13), 1, ["lanes", "lanes", None]),  # 3 channels, 13 columns: the weight gradient on GEMMs
    ((2, 32, 4, 4), 1, ["lanes", "lanes", None]),  # 16 positions a sample: the weight gradient on GEMMs
    ((2, 8, 3, 3), 1, [None, None, None]),  # 9: GEMMs
    ((2, 3, 16, 16), 2, ["lanes", None, "lanes"]),  # strided, 3 channels: lanes; the input gradient GEMM + col2im
], ids=["32x32", "8x8", "odd", "4x4", "3x3", "strided"])
def test_default_thresholds(ran, monkeypatch, shape, stride, expected):
    """forward, input gradient (the flipped convolution of the output gradient) and weight gradient kernels."""
    monkeypatch.setattr(C, "DIRECT_MODE", "auto")
    rng = np.random.default_rng(shape[1])
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((2 * shape[1], shape[1], 3, 3)).astype(np.float32) * 0.1
    b = rng.standard_normal(2 * shape[1]).astype(np.float32)
    out = tuple((s - 1) // stride + 1 for s in shape[2:])
    gy = rng.standard_normal((shape[0], 2 * shape[1]) + out).astype(np.float32)
    got, want = (_run(lib, x, w, b, gy, padding=1, stride=stride) for lib in (ember, torch))
    forwards = [kind for op, kind, s in ran if op == "forward"]
    weights = [kind for op, kind, s in ran if op == "weight"]
    assert forwards == [k for k in expected[:2] if k is not None]
    assert weights == [k for k in expected[2:] if k is not None]
    _close(got, want)


@pytest.mark.parametrize("kernel", ["rows", "lanes"])
def test_double_backward_matches_torch(ran, monkeypatch, kernel):
    monkeypatch.setattr(C, "DIRECT_MODE", kernel)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 9, 11)).astype(np.float32)
    w = rng.standard_normal((6, 5, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    results = []
    for lib in (ember, torch):
        xs, ws, bs = (lib.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
        y = lib.nn.functional.conv2d(xs, ws, bs, padding=1)
        gx, gw = lib.autograd.grad((y * y).sum(), (xs, ws), create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        results.append([t.detach().numpy() for t in (y, gx, gw, xs.grad, ws.grad, bs.grad)])
    assert len(ran) >= 4 and {kind for op, kind, s in ran} == {kernel}
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(t).max())))


def test_off_outside_its_cases_and_when_switched_off(ran, monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 10, 10)).astype(np.float32)
    w = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    xe, we = ember.from_numpy(x), ember.from_numpy(w)
    monkeypatch.setattr(C, "DIRECT_MODE", "rows")
    ember.nn.functional.conv2d(xe, we, stride=2)  # rows: stride 1 only
    ember.nn.functional.conv2d(xe, we, dilation=2)  # and no dilation
    for mode in ("rows", "lanes"):
        monkeypatch.setattr(C, "DIRECT_MODE", mode)
        ember.nn.functional.conv2d(xe, ember.from_numpy(w[:, :2].copy()), groups=2)  # grouped
        ember.nn.functional.conv2d(xe.double(), we.double())  # float64
        ember.nn.functional.conv2d(xe, ember.from_numpy(w[:, :, :1, :1].copy()))  # 1x1: a plain GEMM
    assert ran == []
    monkeypatch.setattr(C, "DIRECT_MODE", "never")
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    np.testing.assert_allclose(ember.nn.functional.conv2d(xe, we, padding=1).numpy(), want, rtol=1e-4, atol=1e-4)
    assert ran == []
    monkeypatch.setattr(C, "DIRECT_MODE", "auto")
    np.testing.assert_allclose(ember.nn.functional.conv2d(xe, we, padding=1).numpy(), want, rtol=1e-4, atol=1e-4)
    assert ran == [("forward", "lanes", x.shape)]


@pytest.mark.parametrize("o, p", [(5, 3), (8, 8), (13, 9), (16, 1024 + 3), (24, 49), (40, 16)])
def test_gradient_by_blocks_of_channels(o, p):
    """The weight gradient's copy of g (N, O, P) to (blocks of 16 channels, N P, 16), 8 x 8 register blocks plus
    scalar edges (channels and positions past a multiple of 8; zeros past O), a sample range at a time."""
    lanes = jit.load("conv_lanes_jit")
    n = 3
    g = np.random.default_rng(o + p).standard_normal((n, o, p)).astype(np.float32)
    blocks = -(-o // 16)
    want = np.zeros((n, blocks * 16, p), np.float32)
    want[:, :o] = g
    want = want.reshape(n, blocks, 16, p).transpose(1, 0, 3, 2).reshape(blocks, n * p, 16)
    got = np.full((blocks, n * p, 16), np.nan, np.float32)
    lanes._by_blocks(g, got, 0, 1)
    lanes._by_blocks(g, got, 1, n)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape, lo, hi, kw, owt", [
    ((2, 3, 5, 7), (1, 1), (1, 1), 1, 0), ((2, 3, 5, 7), (0, 0), (0, 0), 1, 0), ((1, 2, 4, 4), (2, 0), (0, 3), 1, 0),
    ((2, 1, 3, 5), (1, 2), (2, 1), 3, 16),  # rows widened past the padding for 16 output columns
    ((3, 2, 1, 1), (0, 0), (1, 1), 1, 0), ((2, 3, 4, 20), (1, 1), (1, 1), 1, 0)])  # rows of 20: filled per row
def test_padded_matches_numpy(shape, lo, hi, kw, owt):
    """The compiled padding (one copy per input row; one fill between rows, or for rows of up to 16 one fill of
    the whole range first) against np.pad, whole and by ranges of samples."""
    direct = jit.load("conv_direct_jit")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = direct.padded(x, lo, hi, kw, owt)
    extra = max(0, owt + kw - 1 - (shape[3] + lo[1] + hi[1]))
    want = np.pad(x, ((0, 0), (0, 0), (lo[0], hi[0]), (lo[1], hi[1] + extra)))
    np.testing.assert_array_equal(got, want)
    split = np.full_like(want, np.nan)  # as two threads' ranges of samples would write it
    direct._pad(x, split, 0, 1, lo[0], lo[1])
    direct._pad(x, split, 1, shape[0], lo[0], lo[1])
    np.testing.assert_array_equal(split, want)
