"""GELU's float32 table reads as compiled loops (numba): one pass per element where the NumPy form makes ~12 passes
and three gathers (Note [GELU tables] in ember/_backend/gelu_numpy.py). Same arithmetic in the same order, so the
same bits: the node's index comes from the difference t - (M - span) scaled by 1/h, exact in t's binade and
clamped to the table's ends before the conversion, where NumPy takes it from t's bits and np.take's clip (both
monotonic in t, so they pick the same node for every number; a NaN gives NaN either way). Loaded through
jit.load("gelu_jit") (Note [JIT kernels]); tests/test_gelu_jit.py holds them to the NumPy path and to torch.
"""
import numba
import numpy as np


@numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _node(x, magic, first, inv_h, last):
    """(index, d) of x's node on the table whose node 0 lies at t = first and whose last index is last (a
    float32, so that the clamping stays in float32; see the module's docstring)."""
    t = x + magic
    d = x - (t - magic)
    k = (t - first) * inv_h
    if not k > 0:  # below the table, and NaN (whose value is NaN through d anyway)
        k = last - last  # 0, as a float32
    if k > last:
        k = last
    return int(k), d


@numba.njit(nogil=True, cache=True, error_model="numpy")
def parabola_times_input(x, lo, hi, magic, first, inv_h, a, b, c, out):
    """out = x * (a_k + d (b_k + d c_k)) at x clipped to [lo, hi]: gelu's erf forward, x Phi(x)."""
    last = x.dtype.type(a.shape[0] - 1)
    for i in range(x.shape[0]):
        v = x[i]
        w = v
        if w < lo:
            w = lo
        if w > hi:
            w = hi
        k, d = _node(w, magic, first, inv_h, last)
        r = c[k]
        r *= d
        r += b[k]
        r *= d
        r += a[k]
        out[i] = r * v


@numba.njit(nogil=True, cache=True, error_model="numpy")
def line_times_grad(g, x, magic, first, inv_h, a, b, out):
    """out = g * (a_k + b_k d): gelu's backwards, the derivative read from its line table."""
    last = x.dtype.type(a.shape[0] - 1)
    for i in range(x.shape[0]):
        k, d = _node(x[i], magic, first, inv_h, last)
        r = b[k]
        r *= d
        r += a[k]
        out[i] = r * g[i]
