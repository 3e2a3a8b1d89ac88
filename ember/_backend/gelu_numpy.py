"""GELU's forward and backward as NumPy kernels (torch.nn.functional.gelu, both forms).

Float32 (and half, computed in float32) reads interpolation tables (Note [GELU tables]) for both backwards
and the erf form's forward. The tanh form's forward (and float64 backward) is computed as x * sigmoid(2u),
u = sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh(u)) equals sigmoid(2u) exactly, NumPy's exp costs about
half its tanh, and the quotient has no cancellation for x < 0 (6 passes and an exp: faster than the table's
9 passes and two gathers, measured). Float64's erf form uses special.ndtr_pdf. With `ember[jit]` float32 (and
half) runs compiled kernels instead, both forms and directions, one vectorized pass each with no table
(ember/_backend/gelu_jit.py, Note [Compiled GELU]: to rounding, not the same bits).
"""
import math

import numpy as np

from . import clamp_between, jit, opmath, parallel, special

_C = math.sqrt(2 / math.pi)
_A = 0.044715


# Each kernel below writes its result into out when given (an array of its arguments' shape and dtype: a piece's
# range of the result, _pieces), else into a new array.

def _gelu_tanh(w, out=None):
    out = np.multiply(w, w, out=out)
    out *= -2 * _C * _A
    out -= 2 * _C
    out *= w  # -2u
    np.exp(out, out=out)
    out += 1
    return np.divide(w, out, out=out)


def _gelu_tanh_grad(g, w, out=None):
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
    return np.multiply(e, g, out=out)


# Note [GELU tables]: NumPy's float32 exp costs ~10-30 multiply passes on the AVX2 machines measured, Phi
# from a rational function and an exp ~45 passes, sigmoid(2u)'s derivative ~20. In float32 (and half)
# gelu instead reads tables on nodes k h, h = 2^-10 (Phi(-14) ~ 8e-45, sigmoid(2u(-9)) ~ 1e-29):
# - the erf forward, x Phi(x): Phi's Taylor parabola a_k + d (b_k + d c_k) at each node, |k h| <= 14, for
#   d = x - k h in [-h/2, h/2] (error below f''' h^3 / 48, relative (x h)^3 / 48 in the left tail: Phi
#   keeps float32's relative precision down to x = -13, where it turns subnormal: x Phi(x) measured within
#   1.7e-7 relative over [-12.5, 12], torch's float32 up to 5e-2 at x = -5; a line's (x h)^2 / 16 measured
#   5-11 ulp from |x| = 2 on);
# - the backwards, f(x) = (x Phi(x))' or (x sigmoid(2u(x)))', |k h| <= 9: a line a_k + b_k d with the chord
#   slope of [k h - h/2, k h + h/2] and the value shifted by a quarter of the second difference there (half
#   the largest deviation of the parabola), within 2e-7 absolute (torch's float32 is off by up to 2.6e-7).
# The tanh forward's 6 passes and one exp measured faster than a table (0.53 vs 0.80 ms at 256x1024).
# The node and d come exactly from adding the magic number M = 1.5 * 2^13 (ulp 2^-10 there): t = x + M
# rounds x to its node, d = x - (t - M) is exact, and t's bits minus those of M - span are the table index
# (monotonic in t, so |x| >= span and the other binades land on the end nodes with np.take's clip; the end
# nodes hold the limits 0 and 1 exactly, flat). inf gives d = nan, torch's nan for the backward; the
# forward reads Phi at x clipped to +-14, so x = inf gives inf and -inf gives -inf * 0 = nan.
# Erf forward: ~12 passes and three gathers against ~45 passes and an exp; backwards ~9 and two gathers.
_H = 2.0 ** -10
_MAGIC = 1.5 * 2.0 ** 13
_CDF_SPAN = 14
_CLIP_LO = np.array(-_CDF_SPAN, np.float32)
_CLIP_HI = np.array(_CDF_SPAN, np.float32)
_tables = {}


def _nodes(span):
    """The nodes k h, |k h| <= span (float64), and the bits of M - span (the index of node 0)."""
    return np.arange(-span / _H, span / _H + 1) * _H, int(np.float32(_MAGIC - span).view(np.int32))


def _flat_ends(a, *slopes):
    """The end nodes hold the limits 0 and 1 exactly, flat."""
    a[[0, -1]] = np.round(a[[0, -1]])
    for b in slopes:
        b[[0, -1]] = 0


def _line_table(f, span=9):
    """(index base, (a, b)): float32 node lines of the float64 function f (see Note [GELU tables])."""
    z, base = _nodes(span)
    mid, lo, hi = f(z), f(z - _H / 2), f(z + _H / 2)
    a = (2 * mid + lo + hi) / 4
    b = (hi - lo) / _H
    _flat_ends(a, b)
    return base, (a.astype(np.float32), b.astype(np.float32))


def _cdf_table():
    """(index base, (a, b, c)): Phi's Taylor parabolas at the nodes, |k h| <= 14."""
    z, base = _nodes(_CDF_SPAN)
    a, b, c = special.ndtr(z), _pdf(z), -0.5 * z * _pdf(z)
    _flat_ends(a, b, c)
    return base, (a.astype(np.float32), b.astype(np.float32), c.astype(np.float32))


def _pdf(z):
    return np.exp(-0.5 * z * z) * (1 / math.sqrt(2 * math.pi))


def _sigmoid_2u(z, sign=1.0):
    """sigmoid(2u(z)) (sign -1: sigmoid(-2u(z)) = 1 - sigmoid(2u(z)) without cancellation), float64."""
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-sign * 2 * _C * (z + _A * z * z * z)))


_TABLES = {  # (tanh, backward) -> how the table is built
    (False, False): _cdf_table,
    (False, True): lambda: _line_table(lambda z: special.ndtr(z) + z * _pdf(z)),
    (True, True): lambda: _line_table(
        lambda z: _sigmoid_2u(z) * (1 + z * 2 * _C * (1 + 3 * _A * z * z) * _sigmoid_2u(z, -1.0))),
}


def _table(tanh, backward):
    """The table of one form's forward or backward, built (float64, a few ms) on first use."""
    key = (tanh, backward)
    tab = _tables.get(key)
    if tab is None:
        tab = _tables[key] = _TABLES[key]()
    return tab


def _interpolate(x, tab):
    """a_k + d (b_k + d c_k ...) at each element of the float32 array x (Note [GELU tables]); inf gives nan."""
    base, coeffs = tab
    t = np.add(x, _MAGIC, dtype=np.float32)
    d = np.subtract(t, _MAGIC, dtype=np.float32)
    np.subtract(x, d, out=d)
    k = np.subtract(t.view(np.int32), base, dtype=np.intp)
    out = np.take(coeffs[-1], k, mode="clip", out=t)
    buf = np.empty_like(d) if len(coeffs) > 2 else None
    for c in coeffs[-2:0:-1]:
        out *= d
        out += np.take(c, k, mode="clip", out=buf)
    out *= d
    out += np.take(coeffs[0], k, mode="clip", out=d)
    return out


def _compiled(*arrays, out=None):
    """gelu_jit (Note [JIT kernels], Note [Compiled GELU]) when it takes these float32 arrays and out (when given;
    C-contiguous: the kernels run over the flat elements and the result keeps their layout), else None."""
    if not all(a.flags.c_contiguous for a in arrays) or (out is not None and not out.flags.c_contiguous):
        return None
    return jit.load("gelu_jit")


def _flat_out(w, out):
    """out (or a new float32 array of w's shape) and its flat view, for a compiled kernel."""
    out = np.empty(w.shape, np.float32) if out is None else out
    return out, out.reshape(-1)


def _gelu_erf32(w, out=None):
    """x Phi(x): compiled (Note [Compiled GELU]), else Phi from the table read at x clipped to the table's span."""
    kernels = _compiled(w, out=out)
    if kernels is not None:
        out, flat = _flat_out(w, out)
        kernels.erf_forward(w.reshape(-1), flat)
        return out
    return np.multiply(_interpolate(clamp_between(w, _CLIP_LO, _CLIP_HI), _table(False, False)), w, out=out)


def _gelu_tanh32(w, out=None):
    """x sigmoid(2u): compiled (Note [Compiled GELU]), else _gelu_tanh."""
    kernels = _compiled(w, out=out)
    if kernels is None:
        return _gelu_tanh(w, out)
    out, flat = _flat_out(w, out)
    kernels.tanh_forward(w.reshape(-1), flat)
    return out


def _gelu_backward32(g, w, tanh, out=None):
    kernels = _compiled(g, w, out=out)
    if kernels is not None:  # NaN where x * x overflows comes out of the tanh kernel's own arithmetic
        out, flat = _flat_out(w, out)
        (kernels.tanh_backward if tanh else kernels.erf_backward)(g.reshape(-1), w.reshape(-1), flat)
        return out
    out = np.multiply(_interpolate(w, _table(tanh, True)), g, out=out)
    if tanh:
        _nan_where_square_overflows(out, w)
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


def _gelu_erf(w, out=None):
    return np.multiply(special.ndtr(w), w, out=out)


def _gelu_erf_grad(g, w, out=None):
    """g (Phi(x) + x phi(x)), Phi and phi from one exp."""
    cdf, t = special.ndtr_pdf(w)
    t *= w
    t += cdf
    return np.multiply(t, g, out=out)


def gelu(x, tanh):
    """gelu(x) for a float array (half precision computed in float32, returned in x's dtype)."""
    if not x.ndim:  # NumPy's ufuncs return scalars, not arrays, for 0-d arrays: the kernels take 1-d
        return gelu(x.reshape(1), tanh).reshape(())
    w = opmath(x)
    if tanh:
        kernel = _gelu_tanh32 if w.dtype == np.float32 else _gelu_tanh
    elif w.dtype == np.float32:
        kernel = _gelu_erf32
    else:
        kernel = _gelu_erf
    return _pieces(kernel, x.dtype, w)


def gelu_backward(grad, x, tanh):
    """grad * gelu'(x) (half precision computed in float32, returned in grad's dtype)."""
    if not x.ndim:
        return gelu_backward(np.reshape(grad, 1), x.reshape(1), tanh).reshape(())
    w = opmath(x)
    g = opmath(grad)
    if g.dtype != w.dtype or g.shape != w.shape:
        g = np.broadcast_to(g.astype(w.dtype, copy=False), w.shape)
    if w.dtype == np.float32:
        return _pieces(lambda gs, ws, out=None: _gelu_backward32(gs, ws, tanh, out), grad.dtype, g, w)
    return _pieces(_gelu_tanh_grad if tanh else _gelu_erf_grad, grad.dtype, g, w)


def _pieces(kernel, dtype, *arrays):
    """kernel(*arrays) (elementwise, same-shaped arrays) cast to dtype; over ranges of the elements on the
    intra-op threads when the arrays are C-contiguous and large (Note [Row pieces] in parallel.py): each thread
    runs the whole kernel on one range; the arithmetic is elementwise, the same on any range. A piece writes its
    range of the result in place when the result keeps the arrays' dtype, where a fresh array per piece was copied
    over (GELU fwd+bwd on 256x1024, 2 threads, alternating: 1.78 -> 1.68 ms, tanh form 1.66 -> 1.57)."""
    last = arrays[-1]
    nbytes = last.nbytes * parallel.ROW_WEIGHT
    if len(parallel.chunks(last.size, nbytes)) == 1 or not all(a.flags.c_contiguous for a in arrays):
        return kernel(*arrays).astype(dtype, copy=False)  # one thread, or another layout NumPy's result keeps
    parts = tuple(a.reshape(-1) for a in arrays)
    result = np.empty(last.shape, dtype)  # its own memory, not a view, so that a .grad can take it uncopied
    out = result.reshape(-1)
    in_place = out.dtype == last.dtype

    def piece(a, b):
        if in_place:
            kernel(*(p[a:b] for p in parts), out=out[a:b])
        else:
            out[a:b] = kernel(*(p[a:b] for p in parts))
    parallel.run(piece, last.size, nbytes)
    return result
