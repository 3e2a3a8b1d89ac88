"""The direct float32 convolution (Note [Direct convolution], ember/_backend/conv_direct_jit.py) against torch.

Stride-1 2-D convolutions of groups 1 (forward, and the input and weight gradients, the latter with either of the
two weight kernels; strided and dilated ones for the weight gradient) over random sizes that reach every tile (output widths of 8 and not a
multiple of 8, output channels not a multiple of 4, kernels of 3, 5 and other widths, padding on one side), on
one and two threads: outputs, input, weight and bias gradients, and double backward. A spy checks the kernel ran,
for the forward and for the input gradient (the flipped convolution), that the default leaves outputs narrower than
6 columns to the GEMM paths (the weight gradient narrower than 25), and that DIRECT_MODE "never" keeps it off.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit
from ember._ops import conv as C
from tests._jit import count_calls

pytest.importorskip("numba", reason="the direct convolution needs the ember[jit] extra (numba)")


@pytest.fixture
def calls(monkeypatch):
    """The (N, C, H, W) input of every direct forward that ran."""
    monkeypatch.setattr(jit, "ENABLED", True)
    monkeypatch.setattr(C, "DIRECT_MODE", "always")
    return count_calls(monkeypatch, jit.load("conv_direct_jit"), "forward", record=lambda x, *a: x.shape)


@pytest.fixture
def weight_calls(monkeypatch):
    """("rows" or "lanes", the (N, O, OH, OW) output gradient) of every direct weight gradient that ran: the
    row-vector kernel of conv_direct_jit.py or the output-channel-vector one of conv_weight_jit.py."""
    calls = []
    for kind, name in (("rows", "conv_direct_jit"), ("lanes", "conv_weight_jit")):
        module = jit.load(name)
        fn = module.weight
        monkeypatch.setattr(module, "weight", lambda x, y, *a, _fn=fn, _kind=kind: calls.append((_kind, y.shape))
                            or _fn(x, y, *a))
    return calls


def _run(lib, x, w, b, gy, **kw):
    xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
    bt = None if b is None else lib.tensor(b, requires_grad=True)
    y = lib.nn.functional.conv2d(xt, wt, bt, **kw)
    grads = lib.autograd.grad(y, [t for t in (xt, wt, bt) if t is not None], lib.tensor(gy))
    return [y.detach().numpy()] + [g.numpy() for g in grads]


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


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("weight_kernel", ["lanes", "rows"])
def test_random_shapes_match_torch(calls, weight_calls, monkeypatch, weight_kernel, threads):
    if weight_kernel == "rows":  # the output-channel-vector kernel off: the row-vector one takes every weight gradient
        monkeypatch.setattr(C, "_direct_weight", lambda *a: False)
    rng = np.random.default_rng(threads)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for _ in range(40):
            x, w, b, kw = _case(rng)
            with torch.no_grad():
                shape = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
            gy = rng.standard_normal(tuple(shape)).astype(np.float32)
            ran = len(calls)
            got, want = _run(ember, x, w, b, gy, **kw), _run(torch, x, w, b, gy, **kw)
            assert calls[ran] == x.shape  # the forward ran the direct kernel
            assert weight_calls[-1] == (weight_kernel, gy.shape)  # and so did the weight gradient
            for g, t in zip(got, want):
                assert g.dtype == t.dtype and g.shape == t.shape
                scale = max(1.0, float(np.abs(t).max()))
                np.testing.assert_allclose(g, t, rtol=1e-4, atol=1e-4 * scale)
    finally:
        ember.set_num_threads(before)


@pytest.mark.parametrize("shape", [(32, 16, 32, 32), (8, 32, 8, 8), (4, 3, 9, 13)], ids=["32x32", "8x8", "odd"])
def test_layer_shapes_take_the_path_for_input_gradient_too(calls, weight_calls, monkeypatch, shape):
    monkeypatch.setattr(C, "DIRECT_MODE", "auto")
    rng = np.random.default_rng(shape[1])
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((2 * shape[1], shape[1], 3, 3)).astype(np.float32) * 0.1
    b = rng.standard_normal(2 * shape[1]).astype(np.float32)
    gy = rng.standard_normal((shape[0], 2 * shape[1]) + shape[2:]).astype(np.float32)
    got, want = _run(ember, x, w, b, gy, padding=1), _run(torch, x, w, b, gy, padding=1)
    # the forward on x, then the input gradient as the flipped convolution of the output gradient
    assert calls == [shape, gy.shape]
    # the weight gradient on output-channel vectors from 16 input channels and 49 output positions; 3 channels and
    # 13 columns: the GEMM paths
    assert weight_calls == ([] if shape[1] < 16 else [("lanes", gy.shape)])
    for g, t in zip(got, want):
        np.testing.assert_allclose(g, t, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(t).max())))


def test_strided_and_dilated_weight_gradients_match_torch(calls, weight_calls):
    """Stride and dilation: the forward and input gradient on the GEMM paths, the weight gradient direct."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        x, w, b, kw = _case(rng, strided=True)
        with torch.no_grad():
            shape = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
        if 0 in shape:
            continue
        gy = rng.standard_normal(tuple(shape)).astype(np.float32)
        got, want = _run(ember, x, w, b, gy, **kw), _run(torch, x, w, b, gy, **kw)
        if w.shape[2] * w.shape[3] > 1:
            assert weight_calls[-1] == ("lanes", gy.shape)
        for g, t in zip(got, want):
            np.testing.assert_allclose(g, t, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(t).max())))


def test_double_backward_matches_torch(calls):
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
    assert len(calls) >= 3  # forward, input gradient, and the second-order forwards
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(t).max())))


def test_off_outside_its_cases_and_when_switched_off(calls, monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 10, 10)).astype(np.float32)
    w = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    xe, we = ember.from_numpy(x), ember.from_numpy(w)
    ember.nn.functional.conv2d(xe, we, stride=2)  # strided
    ember.nn.functional.conv2d(xe, we, dilation=2)  # dilated
    ember.nn.functional.conv2d(xe, ember.from_numpy(w[:, :2].copy()), groups=2)  # grouped
    ember.nn.functional.conv2d(xe.double(), we.double())  # float64
    ember.nn.functional.conv2d(xe, ember.from_numpy(w[:, :, :1, :1].copy()))  # 1x1: a plain GEMM
    assert calls == []
    monkeypatch.setattr(C, "DIRECT_MODE", "auto")
    ember.nn.functional.conv2d(ember.from_numpy(x[:, :, :6, :7].copy()), we)  # 5 output columns: GEMM paths
    assert calls == []
    ember.nn.functional.conv2d(ember.from_numpy(x[:, :, :6, :8].copy()), we)  # 6 columns: direct
    assert calls == [(2, 4, 6, 8)]
    calls.clear()
    monkeypatch.setattr(C, "DIRECT_MODE", "never")
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    np.testing.assert_allclose(ember.nn.functional.conv2d(xe, we, padding=1).numpy(), want, rtol=1e-4, atol=1e-4)
    assert calls == []
    monkeypatch.setattr(C, "DIRECT_MODE", "auto")
    np.testing.assert_allclose(ember.nn.functional.conv2d(xe, we, padding=1).numpy(), want, rtol=1e-4, atol=1e-4)
    assert calls == [x.shape]
