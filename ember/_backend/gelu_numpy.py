"""GELU's forward and backward as NumPy kernels (torch.nn.functional.gelu, both forms).

The tanh form is computed as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh(u)) equals
sigmoid(2u) exactly, NumPy's float32 exp costs about half its tanh (measured on an AVX2 machine: ~25 and
~50 multiply passes), and the quotient has no cancellation for x < 0. The erf form in float32 (and half)
reads tables (Note [GELU tables]); in float64 it uses special.ndtr_pdf.
"""
import math

import numpy as np

from . import clamp_between, opmath, special

_C = math.sqrt(2 / math.pi)
_A = 0.044715


def _gelu_tanh(w):
    out = np.multiply(w, w)
    out *= -2 * _C * _A
    out -= 2 * _C
    out *= w  # -2u
    np.exp(out, out=out)
    out += 1
    return np.divide(w, out, out=out)


def _gelu_tanh_grad(g, w):
    """g (s + x 2u'(x) s (1 - s)) with s = sigmoid(2u); 1 - s = sigmoid(-2u) from the same exp (1 - s would
    cancel for large x, and E s would be inf * 0 for very negative x)."""
    t = np.multiply(w, w)
    e = np.multiply(t, -2 * _C * _A)
    e -= 2 * _C
    e *= w
    np.exp(e, out=e)  # E = exp(-2u)
    s = np.add(e, 1)
    np.reciprocal(s, out=s)  # s = 1 / (1 + E)
    np.reciprocal(e, out=e)
    e += 1
    np.reciprocal(e, out=e)  # 1 - s = 1 / (1 + 1/E)
    e *= s
    t *= 6 * _C * _A
    t += 2 * _C
    t *= w  # x 2u'(x)
    e *= t
    e += s
    e *= g
    return e


# Note [GELU tables]: NumPy's float32 exp costs ~30 multiply passes on the AVX2 machines measured (it
# is not vectorized there), and Phi from a rational function and an exp is ~45 passes. In float32 the erf
# form instead interpolates tables: Phi(x) for the forward, x Phi(x)' = Phi(x) + x phi(x) for the backward,
# on nodes k h, h = 2^-10, |k h| <= 9 (Phi(-9) ~ 1e-19), each node a line a_k + b_k d for d = x - k h in
# [-h/2, h/2] (the tangent shifted by f''(k h) h^2 / 16, half the largest deviation of the parabola).
# The node and d come exactly from adding the magic number M = 1.5 * 2^13 (ulp 2^-10 there): t = x + M
# rounds x to its node, d = x - (t - M) is exact, and t's bits minus those of M - 9 are the table index
# (monotonic in t, so |x| >= 9, inf and the other binades land on the end nodes with np.take's clip).
# Error against float64 Phi (tests/test_gelu_tables.py): forward < 3e-8 relative in Phi (so x Phi(x)
# keeps its relative precision near 0 and in the left tail), backward < 6e-8 absolute; torch's float32
# erf is within 1.5e-7 absolute. ~9 passes and two gathers against ~45 passes.
_H = 2.0 ** -10
_SPAN = 9
_MAGIC = 1.5 * 2.0 ** 13
_MAGIC_BASE = int(np.float32(_MAGIC - _SPAN).view(np.int32))
_CLIP_LO = np.array(-_SPAN, np.float32)
_CLIP_HI = np.array(_SPAN, np.float32)
_tables = {}


def _line_table(f, df, ddf):
    """(a, b) float32 node lines of f over the nodes k h, |k h| <= _SPAN (see Note [GELU tables])."""
    z = np.arange(-_SPAN / _H, _SPAN / _H + 1) * _H
    a = f(z) + ddf(z) * (_H * _H / 16)
    b = df(z)
    a[[0, -1]] = np.round(a[[0, -1]])  # the end nodes hold the limits 0 and 1 exactly, flat
    b[[0, -1]] = 0
    return a.astype(np.float32), b.astype(np.float32)


def _erf_tables(name):
    """The forward ('cdf') or backward ('grad') table pair, built (float64, ~1 ms) on first use."""
    tab = _tables.get(name)
    if tab is None:
        pdf = lambda z: np.exp(-0.5 * z * z) * (1 / math.sqrt(2 * math.pi))
        if name == "cdf":
            tab = _line_table(special.ndtr, pdf, lambda z: -z * pdf(z))
        else:  # (x Phi)' = Phi + x phi, its slope phi (2 - x^2), its curvature x phi (x^2 - 4)
            tab = _line_table(lambda z: special.ndtr(z) + z * pdf(z), lambda z: pdf(z) * (2 - z * z),
                              lambda z: z * pdf(z) * (z * z - 4))
        _tables[name] = tab
    return tab


def _interpolate(x, tab):
    """a_k + b_k d at each element of the float32 array x (Note [GELU tables]); inf gives nan."""
    a, b = tab
    t = np.add(x, _MAGIC, dtype=np.float32)
    d = np.subtract(t, _MAGIC, dtype=np.float32)
    np.subtract(x, d, out=d)
    k = np.subtract(t.view(np.int32), _MAGIC_BASE, dtype=np.intp)
    out = np.take(b, k, mode="clip", out=t)
    out *= d
    out += np.take(a, k, mode="clip", out=d)
    return out


def _gelu_erf32(w):
    """x Phi(x) from the table; Phi is read at x clipped to the table's span (end nodes exactly 0 and 1),
    so that x = inf gives inf and x = -inf gives -inf * 0 = nan (torch's values)."""
    out = _interpolate(clamp_between(w, _CLIP_LO, _CLIP_HI), _erf_tables("cdf"))
    out *= w
    return out


def _gelu_erf(w):
    if w.dtype == np.float32:
        return _gelu_erf32(w)
    out = special.ndtr(w)
    out *= w
    return out


def _gelu_erf_grad(g, w):
    """g (Phi(x) + x phi(x)): float32 from the table (inf gives nan, as torch's inf * 0), float64 with Phi
    and phi from one exp."""
    if w.dtype == np.float32:
        out = _interpolate(w, _erf_tables("grad"))
        out *= g
        return out
    cdf, out = special.ndtr_pdf(w)
    out *= w
    out += cdf
    out *= g
    return out


def gelu(x, tanh):
    """gelu(x) for a float array (half precision computed in float32, returned in x's dtype)."""
    w = opmath(x)
    out = _gelu_tanh(w) if tanh else _gelu_erf(w)
    return out.astype(x.dtype, copy=False)


def gelu_backward(grad, x, tanh):
    """grad * gelu'(x) (half precision computed in float32, returned in grad's dtype)."""
    w = opmath(x)
    g = opmath(grad)
    if g.dtype != w.dtype or g.shape != w.shape:
        g = np.broadcast_to(g.astype(w.dtype, copy=False), w.shape)
    out = _gelu_tanh_grad(g, w) if tanh else _gelu_erf_grad(g, w)
    return out.astype(grad.dtype, copy=False)
