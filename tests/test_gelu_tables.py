"""gelu's float32 erf form reads interpolation tables (Note [GELU tables] in ember/_backend/gelu_numpy.py).

Its forward and backward are checked over the whole float32 range (a dense grid through both tails, tiny
and huge magnitudes, the table's end nodes, inf and nan) against float64 references from the C library's erfc (math.erfc: torch's float64 gelu is itself off in the
left tail, where its 1 + erf cancels):
ember's float32 error must stay within 1.5 float32 ulp of the result (Phi and the product each round) or 2e-7 absolute (torch's float32
erf alone is off by up to 1.5e-7, its gelu by 3.7e-7 here), and its values within torch's float32
comparison tolerance of torch's float32 values.
"""
import math

import numpy as np
import torch

import ember
from ember._backend import gelu_numpy as G


def _inputs():
    rng = np.random.default_rng(11)
    span = G._SPAN
    node = G._H
    return np.concatenate([
        rng.standard_normal(20000) * 3,
        np.linspace(-12, 12, 48001),
        np.linspace(-span - 2 * node, -span + 2 * node, 41),  # around the end nodes
        np.linspace(span - 2 * node, span + 2 * node, 41),
        -np.logspace(-38, 1.2, 3000), np.logspace(-38, 1.2, 3000),
        np.arange(-40, 41) * (node / 2),  # node midpoints and nodes
        [0.0, -0.0, 1e-40, -1e-40, 4095.9, -4095.9, 5000.0, -5000.0, 1e36, -1e36, 3e38, -3e38,
         np.inf, -np.inf, np.nan],
    ]).astype(np.float32)


def _gelu_and_grad(lib, x, dtype):
    xs = lib.from_numpy(x.astype(dtype)).requires_grad_()
    y = lib.nn.functional.gelu(xs)
    y.backward(lib.ones_like(y))
    return y.detach().double().numpy(), xs.grad.double().numpy()


def _reference(x):
    """float64 gelu(x) and gelu'(x) from math.erfc (accurate relative to its value in both tails)."""
    v = x.astype(np.float64)
    cdf = np.array([0.5 * math.erfc(-t / math.sqrt(2)) if np.isfinite(t) else np.nan for t in v.tolist()])
    pdf = np.exp(-0.5 * v * v) / math.sqrt(2 * math.pi)
    return v * cdf, cdf + v * pdf


def test_gelu_erf_tables_within_torch_float32_error():
    x = _inputs()
    ey, eg = _gelu_and_grad(ember, x, np.float32)
    ty, tg = _gelu_and_grad(torch, x, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        ry, rg = _reference(x)
    for e, t, r in ((ey, ty, ry), (eg, tg, rg)):
        assert np.array_equal(np.isnan(e), np.isnan(t))  # inf and nan give torch's inf / nan
        fin = np.isfinite(x)
        assert np.array_equal(e[~fin & ~np.isnan(e)], t[~fin & ~np.isnan(t)])
        err = np.abs(e - r)[fin]
        ulp = np.spacing(np.abs(r[fin]).astype(np.float32)).astype(np.float64)
        assert (err <= np.maximum(1.5 * ulp, 2e-7)).all()
        np.testing.assert_allclose(e, t, rtol=1.3e-6, atol=1e-5)
    # the forward keeps its relative precision near 0 and in the left tail (torch's 1 + erf does not)
    keep = np.isfinite(ry) & (np.abs(ry) > 1e-36) & (np.abs(x) < 8)
    assert (np.abs(ey - ry) / np.abs(ry))[keep].max() < 5e-6
    assert (np.abs(ey - ry) / np.abs(ry))[keep & (np.abs(x) < 3)].max() < 1e-6


def test_gelu_erf_tables_reach_every_node():
    """Each node's line (value and slope) at its node and both half-node ends, against float64."""
    a, b = G._erf_tables("grad")
    k = np.arange(a.size)
    z = (k - (a.size - 1) / 2) * G._H
    for off in (-0.5, 0.0, 0.4999):
        x = (z + off * G._H).astype(np.float32)
        eg = _gelu_and_grad(ember, x, np.float32)[1]
        ry, rg = _reference(x)
        np.testing.assert_allclose(eg, rg, rtol=0, atol=2e-7)  # torch: 2.6e-7
        ey = _gelu_and_grad(ember, x, np.float32)[0]
        near = np.abs(x) < 3
        np.testing.assert_allclose(ey[near], ry[near], rtol=1e-6, atol=0)
        np.testing.assert_allclose(ey, ry, rtol=5e-6, atol=2e-18)  # the end node is exactly 0
