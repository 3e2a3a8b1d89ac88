"""Depthwise convolutions against torch on every kernel path: the forward that keeps the input's phase
rows for the backward and the one that does not (ember._ops.conv.KEEP_DEPTHWISE_PHASES), the first-order
backward that builds the gradient rows once for both gradients, the gathered input gradient (also the
forward of a depthwise transposed convolution), blocks of whole channel rows or pieces of one row
(ember._backend.depthwise_numpy._BLOCK forced small), and the plane matrices of small planes
(ember._backend.depthwise_dense.MAX_PAIRS forced off, or on for every plane with MAX_SIZE_PER_TAP), with the
compiled kernels (ember[jit]) switched off. Random 1-3d sizes, strides (also larger than the
kernel: phases no tap reaches), dilations, padding, channel multipliers; float32 and float64; values,
input/weight/bias gradients, and second derivatives through create_graph.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import depthwise_dense as DD
from ember._backend import depthwise_numpy as DW
from ember._backend import jit
from ember._ops import conv as C


@pytest.fixture(autouse=True)
def numpy_kernels(monkeypatch):
    """This file tests the NumPy kernels: the compiled ones (tests/test_depthwise_jit.py) are switched off."""
    monkeypatch.setattr(jit, "ENABLED", False)


@pytest.fixture(params=["keep", "no-keep"])
def keep(request, monkeypatch):
    monkeypatch.setattr(C, "KEEP_DEPTHWISE_PHASES", request.param == "keep")
    return request.param


@pytest.fixture(params=["dense-off", "dense-all"])
def dense(request, monkeypatch):
    monkeypatch.setattr(DD, "MAX_PAIRS", 0 if request.param == "dense-off" else 1 << 62)
    monkeypatch.setattr(DD, "MAX_SIZE_PER_TAP", 1 << 62)
    return request.param


@pytest.fixture(params=["default-block", "tiny-block"])
def block(request, monkeypatch):
    if request.param == "tiny-block":  # rows longer than a block: pieces of one row, one channel per block
        monkeypatch.setattr(DW, "_BLOCK", 64)
    return request.param


def _case(rng, dtype):
    nd = int(rng.choice([1, 2, 3], p=[0.25, 0.55, 0.2]))
    c = int(rng.integers(1, 6))
    mult = int(rng.choice([1, 1, 2]))
    size = [int(rng.integers(1, 20 if nd == 2 else 9)) for _ in range(nd)]
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    s = [int(rng.integers(1, 4)) for _ in range(nd)]
    d = [int(rng.integers(1, 3)) for _ in range(nd)]
    p = [int(rng.integers(0, 3)) for _ in range(nd)]
    if any(n + 2 * pad < dil * (kk - 1) + 1 for n, pad, dil, kk in zip(size, p, d, k)):
        return None
    x = rng.standard_normal([int(rng.integers(1, 4)), c] + size).astype(dtype)
    w = rng.standard_normal([c * mult, 1] + k).astype(dtype)
    b = rng.standard_normal(c * mult).astype(dtype) if rng.random() < 0.7 else None
    grads = (bool(rng.random() < 0.8), True)  # input, weight require grad (the kept rows need the weight's)
    if rng.random() < 0.15:
        grads = (True, False)
    return f"conv{nd}d", x, w, b, dict(stride=s, padding=p, dilation=d, groups=c), grads


def _run(lib, name, x, w, b, kw, grads, g_of):
    xs = lib.from_numpy(x.copy()).requires_grad_(grads[0])
    ws = lib.from_numpy(w.copy()).requires_grad_(grads[1])
    bs = None if b is None else lib.from_numpy(b.copy()).requires_grad_()
    y = getattr(lib.nn.functional, name)(xs, ws, bs, **kw)
    y.backward(lib.from_numpy(g_of(tuple(y.shape))))
    return [None if t is None else t.detach().numpy()
            for t in (y, xs.grad, ws.grad, None if bs is None else bs.grad)]


def _compare(e, t, dtype, what):
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, b in zip(e, t):
        assert (a is None) == (b is None), what
        if a is None:
            continue
        assert a.shape == b.shape and a.dtype == b.dtype, what
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max(initial=0))),
                                   err_msg=what)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_depthwise_convolutions_match_torch(dtype, keep, block, dense):
    rng = np.random.default_rng(17 if dtype == np.float32 else 18)
    checked = 0
    while checked < 40:
        case = _case(rng, dtype)
        if case is None:
            continue
        checked += 1
        g = {}

        def g_of(shape):
            return g.setdefault(shape, rng.standard_normal(shape).astype(dtype)).copy()
        t = _run(torch, *case, g_of)
        e = _run(ember, *case, g_of)
        _compare(e, t, dtype, f"{case[0]} x{case[1].shape} w{case[2].shape} {case[4]} grads {case[5]}")


@pytest.mark.parametrize("mult", [1, 2])
def test_depthwise_split_over_channel_ranges_matches_torch(monkeypatch, keep, mult):
    """Forced onto two intra-op threads from the smallest size: one split per kernel runs the phase rows,
    the taps and the crop, and in backward the gradient rows, both gradients and the gather, each over
    its own channel range (Note [Depthwise one split]); a multiplier above 1 splits stage by stage."""
    from ember._backend import parallel
    monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    rng = np.random.default_rng(23 + mult)
    for stride, bias, grads in ((1, True, (True, True)), (2, False, (True, True)), (2, True, (False, True)),
                                (1, False, (True, False))):
        x = rng.standard_normal((3, 5, 9, 7)).astype(np.float32)
        w = rng.standard_normal((5 * mult, 1, 3, 3)).astype(np.float32)
        b = rng.standard_normal(5 * mult).astype(np.float32) if bias else None
        case = ("conv2d", x, w, b, dict(stride=stride, padding=1, groups=5), grads)
        g = {}

        def g_of(shape):
            return g.setdefault(shape, rng.standard_normal(shape).astype(np.float32)).copy()
        _compare(_run(ember, *case, g_of), _run(torch, *case, g_of), np.float32, f"stride {stride} {grads}")


def test_the_kept_rows_are_used_and_freed():
    """The forward saves the phase rows when the weight requires grad (and only then); the backward
    releases them with the other saved tensors."""
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal((2, 3, 8, 8)).astype(np.float32)).requires_grad_()
    w = ember.from_numpy(rng.standard_normal((3, 1, 3, 3)).astype(np.float32))
    y = ember.nn.functional.conv2d(x, w, padding=1, groups=3)
    assert len(y.grad_fn._saved) == 2
    w.requires_grad_()
    y = ember.nn.functional.conv2d(x, w, padding=1, groups=3)
    assert len(y.grad_fn._saved) == 3
    y.sum().backward()
    assert all(s.kind == "freed" for s in y.grad_fn._saved)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_transposed_convolutions_match_torch(dtype, block, dense):
    """conv_transpose with groups == channels runs the gathered input gradient as its forward."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        case = transposed_case(rng, dtype, int(rng.integers(1, 3)))
        if case is None:
            continue
        g = {}

        def g_of(shape):
            return g.setdefault(shape, rng.standard_normal(shape).astype(dtype)).copy()
        _compare(_run(ember, *case, g_of), _run(torch, *case, g_of), dtype, f"{case[0]} x{case[1].shape} {case[4]}")


def transposed_case(rng, dtype, nd, size_max=10, kernel_max=4):
    """A random depthwise conv_transpose{nd}d case (name, x, w, None, kwargs, grads) for _run, or None when
    its output would be empty: strides, dilations, padding and output_padding drawn."""
    c = int(rng.integers(1, 5))
    size = [int(rng.integers(1, size_max)) for _ in range(nd)]
    k = [int(rng.integers(1, kernel_max)) for _ in range(nd)]
    s = [int(rng.integers(1, 4)) for _ in range(nd)]
    d = [int(rng.integers(1, 3)) for _ in range(nd)]
    p = [int(rng.integers(0, 2)) for _ in range(nd)]
    op = [int(rng.integers(0, max(ss, dd))) for ss, dd in zip(s, d)]
    if any((n - 1) * ss - 2 * pp + dd * (kk - 1) + o + 1 <= 0 for n, ss, pp, dd, kk, o in zip(size, s, p, d, k, op)):
        return None
    x = rng.standard_normal([2, c] + size).astype(dtype)
    w = rng.standard_normal([c, 1] + k).astype(dtype)
    kw = dict(stride=s, padding=p, dilation=d, groups=c, output_padding=op)
    return f"conv_transpose{nd}d", x, w, None, kw, (True, True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_second_derivatives_match_torch(dtype, keep, dense):
    """create_graph: the backward takes the differentiable ops, not the kept rows."""
    check_second_derivatives(dtype)


def check_second_derivatives(dtype):
    """Second derivatives through create_graph of depthwise convolutions (strides 1-3, multipliers 1-2)
    against torch."""
    rng = np.random.default_rng(9)
    for stride, mult in ((1, 1), (2, 2), (3, 1)):
        x = rng.standard_normal((2, 3, 7, 6)).astype(dtype)
        w = rng.standard_normal((3 * mult, 1, 3, 2)).astype(dtype)
        out = {}
        for lib in (torch, ember):
            xs = lib.from_numpy(x.copy()).requires_grad_()
            ws = lib.from_numpy(w.copy()).requires_grad_()
            y = lib.nn.functional.conv2d(xs, ws, stride=stride, padding=1, groups=3)
            gx, gw = lib.autograd.grad((y * y).sum(), (xs, ws), create_graph=True)
            ((gx * gx).sum() + (gw * gw).sum()).backward()
            out[lib] = [t.detach().numpy() for t in (gx, gw, xs.grad, ws.grad)]
        _compare(out[ember], out[torch], dtype, f"stride {stride} mult {mult}")


def check_non_finite(where, value):
    """inf or NaN in x, the output gradient or the weight reach exactly the values and gradients torch gives
    them (a 2-D depthwise convolution, strides 1 and 2, against torch)."""
    rng = np.random.default_rng(3)
    for stride in (1, 2):
        x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
        w = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
        if where == "x":
            x[0, 1, 0, 0] = value
            x[1, 2, 3, 2] = value
        elif where == "weight":
            w[1, 0, 1, 1] = value
        case = ("conv2d", x, w, None, dict(stride=stride, padding=1, groups=3), (True, True))

        def g_of(shape):
            g = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
            if where == "grad":
                g[0, 0, 1, 1] = value
            return g
        e, t = _run(ember, *case, g_of), _run(torch, *case, g_of)
        for a, b in zip(e, t):
            if a is not None:
                np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{where} stride {stride}")
                np.testing.assert_array_equal(np.isinf(a), np.isinf(b), err_msg=f"{where} stride {stride}")
        _compare(e, t, np.float32, f"{where} {value} stride {stride}")


@pytest.mark.parametrize("where", ["x", "grad", "weight"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_depthwise_plane_matrices_leave_non_finite_operands_to_the_taps(where, value, dense, keep):
    """A zero of a plane matrix times inf or NaN would spread it to outputs whose windows do not hold it: the
    forward and the input gradient see the non-finite operand and take the per-tap passes, as torch gives
    (the weight gradient reads only the taps' own products)."""
    check_non_finite(where, value)


def test_depthwise_plane_matrices_are_taken_for_small_planes():
    """MobileNetV2's 4x4 and 8x8 depthwise layers take the plane matrices; 16x16 planes and planes large
    for their few taps keep the taps."""
    assert DW.DepthwisePlan((32, 192, 4, 4), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1).dense is not None
    assert DW.DepthwisePlan((32, 96, 8, 8), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1).dense is not None
    assert DW.DepthwisePlan((32, 96, 16, 16), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1).dense is None
    assert DW.DepthwisePlan((32, 96, 4, 4), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 2).dense is None
    assert DW.DepthwisePlan((32, 96, 8, 8), (1, 1), (1, 1), (1, 1), (0, 0), (0, 0), 1).dense is None
    assert DW.DepthwisePlan((32, 96, 64), (3,), (1,), (1,), (1,), (1,), 1).dense is None
    assert DW.DepthwisePlan((32, 96, 16), (3,), (1,), (1,), (1,), (1,), 1).dense is not None
