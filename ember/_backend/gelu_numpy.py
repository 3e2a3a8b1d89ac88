"""GELU's forward and backward as NumPy kernels (torch.nn.functional.gelu, both forms).

Float32 (and half, computed in float32) reads interpolation tables (Note [GELU tables]) for both backwards
and the erf form's forward. The tanh form's forward (and float64 backward) is computed as x * sigmoid(2u),
u = sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh(u)) equals sigmoid(2u) exactly, NumPy's exp costs about
half its tanh, and the quotient has no cancellation for x < 0 (6 passes and an exp: faster than the table's
9 passes and two gathers, measured). Float64's erf form uses special.ndtr_pdf.
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


# Note [GELU tables]: NumPy's float32 exp costs ~30 multiply passes on the AVX2 machines measured (it is
# not vectorized there), Phi from a rational function and an exp ~45 passes, sigmoid(2u) and its
# derivative ~20. In float32 (and half) gelu instead interpolates tables, f(x) = Phi(x) for the erf
# form's forward (then x f(x); the tanh forward's 6 passes and one exp measured faster than a table of
# sigmoid(2u(x)): 0.53 vs 0.80 ms at 256x1024) and f(x) = (x Phi(x))' or (x sigmoid(2u(x)))' for the
# backwards (tanh: 0.85 vs 1.0 ms), on nodes k h, h = 2^-10, |k h| <= 9 (Phi(-9) ~ 1e-19,
# sigmoid(2u(-9)) ~ 1e-29). Each node holds a line a_k + b_k d for d = x - k h
# in [-h/2, h/2]: the chord slope of [k h - h/2, k h + h/2], and the value shifted by a quarter of the
# second difference there (half the largest deviation of the parabola: a_k = (2 f(k h) + f(k h - h/2) +
# f(k h + h/2)) / 4). The node and d come exactly from adding the magic number M = 1.5 * 2^13 (ulp 2^-10
# there): t = x + M rounds x to its node, d = x - (t - M) is exact, and t's bits minus those of M - 9 are the
# table index (monotonic in t, so |x| >= 9 and the other binades land on the end nodes with np.take's
# clip; the end nodes hold the limits 0 and 1 exactly, flat). inf gives d = nan, torch's nan for the
# backward; the forward reads f at x clipped to +-9, so x = inf gives inf and -inf gives -inf * 0 = nan.
# Measured (tests/test_gelu_tables.py): the forward within 1e-6 relative for |x| < 3 and 5e-6 out to
# |x| = 8 (the line's error grows as (x h)^2 / 16 in Phi's tail), both within 1.5 ulp or 2e-7 absolute;
# torch's own float32 gelu is off by up to 3.7e-7 and loses all relative precision in the left tail.
# ~9 passes and two gathers against ~45 (erf) / ~20 (tanh backward) passes and an exp.
_H = 2.0 ** -10
_SPAN = 9
_MAGIC = 1.5 * 2.0 ** 13
_MAGIC_BASE = int(np.float32(_MAGIC - _SPAN).view(np.int32))
_CLIP_LO = np.array(-_SPAN, np.float32)
_CLIP_HI = np.array(_SPAN, np.float32)
_tables = {}


def _line_table(f):
    """(a, b) float32 node lines of the float64 function f over the nodes k h, |k h| <= _SPAN."""
    z = np.arange(-_SPAN / _H, _SPAN / _H + 1) * _H
    mid, lo, hi = f(z), f(z - _H / 2), f(z + _H / 2)
    a = (2 * mid + lo + hi) / 4
    b = (hi - lo) / _H
    a[[0, -1]] = np.round(a[[0, -1]])  # the end nodes hold the limits 0 and 1 exactly, flat
    b[[0, -1]] = 0
    return a.astype(np.float32), b.astype(np.float32)


def _pdf(z):
    return np.exp(-0.5 * z * z) * (1 / math.sqrt(2 * math.pi))


def _sigmoid_2u(z, sign=1.0):
    """sigmoid(2u(z)) (sign -1: sigmoid(-2u(z)) = 1 - sigmoid(2u(z)) without cancellation), float64."""
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-sign * 2 * _C * (z + _A * z * z * z)))


_TABLE_FUNCTIONS = {  # (tanh, backward) -> the float64 function tabulated
    (False, False): lambda z: special.ndtr(z),
    (False, True): lambda z: special.ndtr(z) + z * _pdf(z),
    (True, True): lambda z: _sigmoid_2u(z) * (1 + z * 2 * _C * (1 + 3 * _A * z * z) * _sigmoid_2u(z, -1.0)),
}


def _table(tanh, backward):
    """The table of one form's forward or backward, built (float64, a few ms) on first use."""
    key = (tanh, backward)
    tab = _tables.get(key)
    if tab is None:
        tab = _tables[key] = _line_table(_TABLE_FUNCTIONS[key])
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
    """x Phi(x), Phi from the table read at x clipped to the table's span."""
    out = _interpolate(clamp_between(w, _CLIP_LO, _CLIP_HI), _table(False, False))
    out *= w
    return out


def _gelu_backward32(g, w, tanh):
    out = _interpolate(w, _table(tanh, True))
    if tanh:
        _nan_where_square_overflows(out, w)
    out *= g
    return out


def _nan_where_square_overflows(out, w):
    """nan where x * x overflows (|x| > 1.8e19), as torch's tanh-form backward gives (its x^2 term is inf
    there and multiplies 1 - tanh^2 = 0). One BLAS dot finds whether any can (an overflowing sum only
    costs the exact elementwise check)."""
    flat = w.reshape(-1)
    if np.isfinite(np.dot(flat, flat)):
        return
    with np.errstate(over="ignore"):
        out[np.isinf(np.multiply(w, w))] = np.nan


def _gelu_erf(w):
    out = special.ndtr(w)
    out *= w
    return out


def _gelu_erf_grad(g, w):
    """g (Phi(x) + x phi(x)), Phi and phi from one exp."""
    cdf, out = special.ndtr_pdf(w)
    out *= w
    out += cdf
    out *= g
    return out


def gelu(x, tanh):
    """gelu(x) for a float array (half precision computed in float32, returned in x's dtype)."""
    if not x.ndim:  # NumPy's ufuncs return scalars, not arrays, for 0-d arrays: the kernels take 1-d
        return gelu(x.reshape(1), tanh).reshape(())
    w = opmath(x)
    if tanh:
        out = _gelu_tanh(w)
    elif w.dtype == np.float32:
        out = _gelu_erf32(w)
    else:
        out = _gelu_erf(w)
    return out.astype(x.dtype, copy=False)


def gelu_backward(grad, x, tanh):
    """grad * gelu'(x) (half precision computed in float32, returned in grad's dtype)."""
    if not x.ndim:
        return gelu_backward(np.reshape(grad, 1), x.reshape(1), tanh).reshape(())
    w = opmath(x)
    g = opmath(grad)
    if g.dtype != w.dtype or g.shape != w.shape:
        g = np.broadcast_to(g.astype(w.dtype, copy=False), w.shape)
    if w.dtype == np.float32:
        out = _gelu_backward32(g, w, tanh)
    else:
        out = _gelu_tanh_grad(g, w) if tanh else _gelu_erf_grad(g, w)
    return out.astype(grad.dtype, copy=False)
