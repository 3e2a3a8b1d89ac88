"""Random gelu (both forms) against torch: values, the gradient and the double backward (with respect to
the input and to the incoming gradient) in float32 and float64, plus both tails, inf/nan and half precision.

gelu's forward and backward are NumPy kernels (ember/_backend/gelu_numpy.py); the tanh form is computed as
x * sigmoid(2u) and its derivatives from sigmoid(2u) and sigmoid(-2u), so the tails are where it could
differ from torch's tanh formula.
"""
import numpy as np
import pytest
import torch

import ember

DTYPES = ["float32", "float64"]


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


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_matches_torch(dtype):
    rng = np.random.default_rng(len(dtype))
    for k in range(40):
        shape = _shape(rng)
        transpose = len(shape) >= 2 and k % 3 == 0  # a non-contiguous input
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
            # torch's layout for a non-contiguous input (strides of size-1 dims are arbitrary)
            keep = [d for d in range(len(shape)) if e[0].shape[d] > 1]
            assert [e[0].stride(d) for d in keep] == [t[0].stride(d) for d in keep]


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
