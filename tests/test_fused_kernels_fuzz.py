"""Random gelu (both forms), layer_norm and cross_entropy against torch, on every kernel path.

gelu runs as one NumPy kernel split into blocks across the intra-op threads (Note [Blocked elementwise
kernels]), layer_norm on row blocks (Note [Row blocks]), cross_entropy's exp(x - max) on row blocks of 2-d
logits. Each test runs under four settings that force each path: the default thresholds, whole arrays (no
split), tiny blocks on one thread, and tiny blocks split across two threads. Values, every gradient and
(gelu) the double backward must match torch in float32 and float64.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import elementwise as EW
from ember._backend import parallel
from ember._ops import norm as N

MODES = ["default", "whole", "blocks", "threads"]
DTYPES = ["float32", "float64"]


@pytest.fixture
def mode(request, monkeypatch):
    """Force one kernel path: EW.FORCE, layer_norm's block size, the thread split."""
    m = request.param
    if m == "whole":
        monkeypatch.setattr(EW, "FORCE", False)
    if m in ("blocks", "threads"):
        monkeypatch.setattr(EW, "FORCE", True)
        monkeypatch.setattr(N, "_BLOCK_BYTES", 1)  # one row per block
    if m == "threads":
        monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
        monkeypatch.setattr(parallel, "threads", lambda: 2)
    return m


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)


def _close(e, t, dtype, **tol):
    e = e.detach().numpy() if hasattr(e, "detach") else e
    t = t.detach().numpy()
    assert e.shape == t.shape and e.dtype == t.dtype
    np.testing.assert_allclose(e, t, **{**_tol(dtype), **tol})


def _shape(rng):
    nd = int(rng.integers(0, 4))
    return tuple(int(rng.integers(1, 9)) for _ in range(nd))


def _gelu_case(lib, x, g, v, approximate, transpose):
    xs = lib.from_numpy(x.copy()).requires_grad_()
    gs = lib.from_numpy(g.copy()).requires_grad_()
    inp = xs.transpose(0, 1) if transpose else xs
    y = lib.nn.functional.gelu(inp, approximate=approximate)
    gx, = lib.autograd.grad(y, xs, gs.transpose(0, 1) if transpose else gs, create_graph=True)
    ggx, ggg = lib.autograd.grad(gx, (xs, gs), lib.from_numpy(v))
    return y, gx, ggx, ggg


@pytest.mark.parametrize("mode", MODES, indirect=True)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_matches_torch(mode, dtype):
    rng = np.random.default_rng(len(mode) * 7 + len(dtype))
    for k in range(24):
        shape = _shape(rng)
        transpose = len(shape) >= 2 and k % 3 == 0  # a non-contiguous input: the unsplit path, torch's layout
        x = np.array(rng.standard_normal(shape) * 4, dtype=dtype)
        if x.size > 4 and k % 4 == 0:
            x.reshape(-1)[:4] = [0.0, -30.0, 30.0, -4.5]
        g = np.array(rng.standard_normal(shape), dtype=dtype)
        v = np.array(rng.standard_normal(shape), dtype=dtype)
        for approximate in ("none", "tanh"):
            e = _gelu_case(ember, x, g, v, approximate, transpose)
            t = _gelu_case(torch, x, g, v, approximate, transpose)
            for a, b in zip(e, t):
                _close(a, b, dtype)
            assert e[0].stride() == t[0].stride()


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_tails_match_torch(dtype):
    """A grid through both tails, where 1 - sigmoid and 1 + tanh cancel, plus inf and nan."""
    rng = np.random.default_rng(5)
    x = np.concatenate([np.linspace(-12, 12, 2001), [np.inf, -np.inf, np.nan, 0.0]]).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    v = rng.standard_normal(x.shape).astype(dtype)
    for approximate in ("none", "tanh"):
        e = _gelu_case(ember, x, g, v, approximate, False)
        t = _gelu_case(torch, x, g, v, approximate, False)
        for a, b in zip(e, t):
            _close(a, b, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gelu_half_precision_computes_in_float32(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 7)).astype(np.float32) * 3
    for approximate in ("none", "tanh"):
        outs = []
        for lib in (ember, torch):
            xs = lib.from_numpy(x).to(getattr(lib, dtype)).requires_grad_()
            y = lib.nn.functional.gelu(xs, approximate=approximate)
            y.backward(lib.ones_like(y))
            outs.append([y.float().detach().numpy(), xs.grad.float().numpy(), str(y.dtype), str(xs.grad.dtype)])
        e, t = outs
        assert e[2:] == t[2:]
        for a, b in zip(e[:2], t[:2]):
            np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-2)


def _layer_norm_case(lib, x, w, b, g, k):
    xs = lib.from_numpy(x.copy()).requires_grad_()
    ws = None if w is None else lib.from_numpy(w.copy()).requires_grad_()
    bs = None if b is None else lib.from_numpy(b.copy()).requires_grad_()
    y = lib.nn.functional.layer_norm(xs, x.shape[x.ndim - k:], ws, bs, 1e-5)
    y.backward(lib.from_numpy(g))
    return [y, xs.grad] + [t.grad for t in (ws, bs) if t is not None]


@pytest.mark.parametrize("mode", MODES, indirect=True)
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_matches_torch(mode, dtype):
    rng = np.random.default_rng(11 + len(mode) + len(dtype))
    for case in range(24):
        shape = tuple(int(rng.integers(1, 9)) for _ in range(int(rng.integers(1, 4))))
        k = int(rng.integers(1, len(shape) + 1))
        x = (rng.standard_normal(shape) * 2 + rng.standard_normal()).astype(dtype)
        w = rng.standard_normal(shape[len(shape) - k:]).astype(dtype) if case % 3 else None
        b = rng.standard_normal(shape[len(shape) - k:]).astype(dtype) if case % 4 else None
        g = rng.standard_normal(shape).astype(dtype)
        e = _layer_norm_case(ember, x, w, b, g, k)
        t = _layer_norm_case(torch, x, w, b, g, k)
        assert len(e) == len(t)
        for a, c in zip(e, t):
            # float32: the input gradient of a row of 2-3 elements is rounding noise around 0 in both libraries
            _close(a, c, dtype, **(dict(atol=1e-4) if dtype == "float32" else {}))


def _cross_entropy_case(lib, x, y, w, kw, transpose):
    xs = lib.from_numpy(x.copy()).requires_grad_()
    inp = xs.t() if transpose else xs
    weight = None if w is None else lib.from_numpy(w)
    loss = lib.nn.functional.cross_entropy(inp, lib.from_numpy(y), weight, **kw)
    gx, = lib.autograd.grad(loss.sum() if loss.dim() else loss, xs, create_graph=True)
    ggx, = lib.autograd.grad((gx * gx).sum(), xs)
    return loss, gx, ggx


@pytest.mark.parametrize("mode", MODES, indirect=True)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_matches_torch(mode, dtype):
    rng = np.random.default_rng(23 + len(mode) + len(dtype))
    for case in range(16):
        n = int(rng.integers(1, 12))
        c = int(rng.integers(1, 9))
        transpose = case % 5 == 0  # non-contiguous logits: the unsplit path
        x = (rng.standard_normal((c, n) if transpose else (n, c)) * 3).astype(dtype)
        y = rng.integers(0, c, n)
        kw = dict(reduction=["mean", "sum", "none"][case % 3], label_smoothing=[0.0, 0.0, 0.2][case % 3 - 1])
        if case % 4 == 1:
            y[0] = -100  # ignored
        w = rng.random(c).astype(dtype) + 0.5 if case % 2 else None
        e = _cross_entropy_case(ember, x, y, w, kw, transpose)
        t = _cross_entropy_case(torch, x, y, w, kw, transpose)
        for a, b in zip(e, t):
            _close(a, b, dtype)
