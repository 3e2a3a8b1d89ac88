"""gelu's float32 forms: the NumPy path reads interpolation tables (Note [GELU tables] in
ember/_backend/gelu_numpy.py), the compiled path (ember[jit]) evaluates a polynomial and an exp (Note [Compiled GELU]
in ember/_backend/gelu_jit.py); every accuracy check below runs on both ("path").

Their forward and backward are checked over the whole float32 range (a dense grid through both tails, tiny
and huge magnitudes, the table's end nodes, inf and nan) against float64 references (the erf form from the C library's erfc, math.erfc, and the tanh form as
x sigmoid(2u): torch's float64 gelu is itself off in the left tail, where its 1 + erf / 1 + tanh cancels):
ember's float32 error must stay within 1.5 float32 ulp of the result (Phi and the product each round) or 2e-7 absolute (torch's float32
erf alone is off by up to 1.5e-7, its gelu by 3.7e-7 here), and its values within torch's float32
comparison tolerance of torch's float32 values.
"""
import math

import numpy as np
import pytest
import torch

import ember
from ember._backend import gelu_numpy as G
from ember._backend import jit, parallel
from tests._threads import spy_splits


# where the forward keeps its relative precision: |x| < span within bound (the erf form's parabolas keep
# Phi's down to where it turns subnormal; the tanh form's sigmoid(2u) is computed with an exp). The compiled erf
# form's float32 polynomial and exp carry up to 5e-7 (torch's float32: 3e-7 near 0, 5e-2 at x = -5).
TAIL = {("tables", "none"): (12.5, 3e-7), ("compiled", "none"): (12.5, 6e-7),
        ("tables", "tanh"): (6, 6e-6), ("compiled", "tanh"): (6, 6e-6)}
# the backward's absolute error: the tables' 2e-7, the compiled kernels' torch's float32 level (2.6e-7)
GRAD_ATOL = {"tables": 2e-7, "compiled": 2.6e-7}


@pytest.fixture(params=["tables", "compiled"])
def path(request, monkeypatch):
    """The NumPy table reads (the compiled kernels switched off) or the compiled kernels (skipped without numba)."""
    if request.param == "tables":
        monkeypatch.setattr(jit, "ENABLED", False)
    else:
        pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")
        monkeypatch.setattr(jit, "ENABLED", True)
    return request.param


def _inputs():
    rng = np.random.default_rng(11)
    span = G._CDF_SPAN
    node = G._H
    return np.concatenate([
        rng.standard_normal(5000) * 3,
        np.linspace(-12, 12, 24001),
        np.linspace(-span - 2 * node, -span + 2 * node, 41),  # around the end nodes
        np.linspace(span - 2 * node, span + 2 * node, 41),
        -np.logspace(-38, 1.2, 3000), np.logspace(-38, 1.2, 3000),
        np.arange(-40, 41) * (node / 2),  # node midpoints and nodes
        [0.0, -0.0, 1e-40, -1e-40, 4095.9, -4095.9, 5000.0, -5000.0, 1e36, -1e36, 3e38, -3e38,
         np.inf, -np.inf, np.nan],
    ]).astype(np.float32)


def _gelu_and_grad(lib, x, dtype, approximate):
    xs = lib.from_numpy(x.astype(dtype)).requires_grad_()
    y = lib.nn.functional.gelu(xs, approximate=approximate)
    y.backward(lib.ones_like(y))
    return y.detach().double().numpy(), xs.grad.double().numpy()


def _reference(x, approximate):
    """float64 gelu(x) and gelu'(x), accurate relative to their value in both tails."""
    v = x.astype(np.float64)
    if approximate == "tanh":
        c = math.sqrt(2 / math.pi)
        u2 = 2 * c * (v + 0.044715 * v ** 3)
        s, q = 1 / (1 + np.exp(-u2)), 1 / (1 + np.exp(u2))
        return v * s, s + v * s * q * 2 * c * (1 + 3 * 0.044715 * v * v)
    cdf = np.array([0.5 * math.erfc(-t / math.sqrt(2)) if np.isfinite(t) else np.nan for t in v.tolist()])
    pdf = np.exp(-0.5 * v * v) / math.sqrt(2 * math.pi)
    return v * cdf, cdf + v * pdf


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_tables_within_torch_float32_error(approximate, path):
    x = _inputs()
    ey, eg = _gelu_and_grad(ember, x, np.float32, approximate)
    ty, tg = _gelu_and_grad(torch, x, np.float32, approximate)
    with np.errstate(invalid="ignore", over="ignore"):
        ry, rg = _reference(x, approximate)
    for e, t, r in ((ey, ty, ry), (eg, tg, rg)):
        assert np.array_equal(np.isnan(e), np.isnan(t))  # inf and nan give torch's inf / nan
        assert np.array_equal(e[~np.isfinite(x) & ~np.isnan(e)], t[~np.isfinite(x) & ~np.isnan(t)])
        fin = np.isfinite(r) & ~np.isnan(t)  # torch's nan: inf, nan, and x * x overflowing in the tanh backward
        err = np.abs(e - r)[fin]
        ulp = np.spacing(np.abs(r[fin]).astype(np.float32)).astype(np.float64)
        assert (err <= np.maximum(1.5 * ulp, 2e-7 if e is ey else GRAD_ATOL[path])).all()
        np.testing.assert_allclose(e, t, rtol=1.3e-6, atol=1e-5)
    # the forward keeps its relative precision near 0 and in the left tail (torch's 1 + erf does not)
    span, bound = TAIL[path, approximate]
    keep = np.isfinite(ry) & (np.abs(ry) > 1e-36) & (np.abs(x) < span)
    assert (np.abs(ey - ry) / np.abs(ry))[keep].max() < bound
    assert (np.abs(ey - ry) / np.abs(ry))[keep & (np.abs(x) < 3)].max() < min(bound, 1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_tables_reach_every_node(approximate, path):
    """Each node's line (value and slope) at its node and both half-node ends, against float64 (the compiled
    path on the same dense grid)."""
    span = G._CDF_SPAN if approximate == "none" else 9  # the erf forward's table spans +-14, the others +-9
    z = np.arange(-span / G._H, span / G._H + 1) * G._H
    for off in (-0.5, 0.0, 0.4999):
        x = (z + off * G._H).astype(np.float32)
        ey, eg = _gelu_and_grad(ember, x, np.float32, approximate)
        ry, rg = _reference(x, approximate)
        np.testing.assert_allclose(eg, rg, rtol=0, atol=GRAD_ATOL[path])  # torch: 2.6e-7
        near = np.abs(x) < 3
        span, bound = TAIL[path, approximate]
        np.testing.assert_allclose(ey[near], ry[near], rtol=min(bound, 1e-6), atol=0)
        inside = np.abs(x) < span
        np.testing.assert_allclose(ey[inside], ry[inside], rtol=bound, atol=2e-18)  # the end node is exactly 0
        ulp = np.spacing(np.abs(ry).astype(np.float32)).astype(np.float64)
        assert (np.abs(ey - ry) <= np.maximum(1.5 * ulp, 2e-7)).all()


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_tables_zero_dim_arrays(approximate, path):
    """The kernels on 0-d arrays (NumPy's ufuncs return scalars for them), against torch."""
    tanh = approximate == "tanh"
    for v in (0.7, -2.5, 0.0):
        x = np.array(v, np.float32)
        tx = torch.tensor(v, requires_grad=True)
        ty = torch.nn.functional.gelu(tx, approximate=approximate)
        ty.backward(torch.tensor(1.5))
        y = G.gelu(x, tanh)
        gx = G.gelu_backward(np.array(1.5, np.float32), x, tanh)
        assert y.shape == () and gx.shape == () and y.dtype == gx.dtype == np.float32
        np.testing.assert_allclose(y, ty.item(), rtol=1.3e-6, atol=1e-7)
        np.testing.assert_allclose(gx, tx.grad.item(), rtol=1.3e-6, atol=1e-7)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_pieces_on_two_threads_are_the_whole_array_bit_for_bit(approximate, dtype, path, monkeypatch):
    """gelu and its backward split in two element ranges (every size splits here), each range written in place
    into the result (float32, float64) or cast into it (half, computed in float32), against one call."""
    rng = np.random.default_rng(len(approximate) + np.dtype(dtype).itemsize)
    x = (rng.standard_normal((7, 301)) * 4).astype(dtype)
    g = rng.standard_normal((7, 301)).astype(dtype)
    tanh = approximate == "tanh"
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        whole = G.gelu(x, tanh), G.gelu_backward(g, x, tanh)
        ember.set_num_threads(2)
        monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
        splits = spy_splits(monkeypatch)
        split = G.gelu(x, tanh), G.gelu_backward(g, x, tanh)
    finally:
        ember.set_num_threads(before)
    assert splits == [2, 2]
    for a, b in zip(split, whole):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
