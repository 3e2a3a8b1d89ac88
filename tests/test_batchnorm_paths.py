"""Training batch norm's kernels (ember/_backend/batchnorm_numpy.py, Note [Batch norm planes]) against
torch on the layouts that reach them differently: a non-contiguous input (its channel rows are no
view of one buffer), a gradient broadcast from a sum (stride 0), an input that needs no gradient (only
the weight's and bias's sums), float16 (computed in float32); on one thread and split over channel
ranges (an uneven split: 3 and 5 channels on two threads); the NumPy kernels and the compiled ones
(ember/_backend/batchnorm_jit.py, with ember[jit]). Values, all gradients, running buffers.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit, parallel

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-10),
       "float16": dict(rtol=2e-3, atol=2e-3)}


@pytest.fixture(autouse=True, params=["numpy", "compiled"])
def kernels(request, monkeypatch):
    if request.param == "compiled":
        pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")
    monkeypatch.setattr(jit, "ENABLED", request.param == "compiled")
    return request.param


@pytest.fixture(params=["one-thread", "split"])
def split(request, monkeypatch):
    if request.param == "split":
        monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
        monkeypatch.setattr(parallel, "threads", lambda: 2)
    return request.param


def _run(lib, x, kind, x_grad, affine, dtype):
    c = x.shape[1]
    m = lib.nn.BatchNorm2d(c, affine=affine).to(getattr(lib, dtype))
    if affine:
        with lib.no_grad():
            m.weight.copy_(lib.from_numpy(np.linspace(0.5, 1.5, c).astype(dtype)))
            m.bias.copy_(lib.from_numpy(np.linspace(-1, 1, c).astype(dtype)))
    xs = lib.from_numpy(x.copy()).requires_grad_(x_grad)
    inp = xs.permute(0, 1, 3, 2) if kind == "permuted" else xs  # channel rows that are no view of one buffer
    y = m(inp)
    if kind == "sum":
        (y * y).sum().backward()  # gradient of y*y is 2y; then a plain sum below broadcasts
        y2 = m(inp)
        y2.sum().backward()
    else:
        y.backward(lib.from_numpy(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(dtype)))
    got = [y, m.running_mean, m.running_var]
    got += [xs.grad] if x_grad else []
    got += [m.weight.grad, m.bias.grad] if affine else []
    return [t.detach().float().numpy() if dtype == "float16" else t.detach().numpy() for t in got]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("kind", ["contiguous", "permuted", "sum"])
def test_batch_norm_kernels_match_torch(split, dtype, kind):
    rng = np.random.default_rng(len(dtype) + len(kind))
    for c, x_grad, affine in ((3, True, True), (5, False, True), (5, True, False)):
        x = (rng.standard_normal((4, c, 6, 7)) * 3 + 2).astype(dtype)
        got, want = _run(ember, x, kind, x_grad, affine, dtype), _run(torch, x, kind, x_grad, affine, dtype)
        assert len(got) == len(want)
        for e, t in zip(got, want):
            assert e.shape == t.shape and e.dtype == t.dtype
            # absolute tolerance in the array's scale: a weight gradient near 0 is a sum of terms of that
            # scale cancelling, whose last bits depend on the order of the additions
            scale = max(1.0, float(np.abs(t).max(initial=0)))
            np.testing.assert_allclose(e, t, err_msg=f"{c} {x_grad} {affine}", rtol=TOL[dtype]["rtol"],
                                       atol=TOL[dtype]["atol"] * scale)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_variance_of_offset_channels_matches_torch(split, dtype):
    """Channels whose mean is large against their spread take the two-pass variance (Note [Batch norm
    one-pass variance]); the others in the same input keep the one-pass one."""
    rng = np.random.default_rng(7)
    offsets = np.array([0.0, 100.0, -30.0, 1.5, 2000.0])[None, :, None, None]
    x = (rng.standard_normal((6, 5, 5, 4)) * np.array([1, 1, 0.5, 1, 10])[None, :, None, None] + offsets).astype(dtype)
    got, want = _run(ember, x, "contiguous", True, True, dtype), _run(torch, x, "contiguous", True, True, dtype)
    for e, t in zip(got, want):
        np.testing.assert_allclose(e, t, rtol=TOL[dtype]["rtol"], atol=TOL[dtype]["atol"] * 10)
