"""Training batch norm's forward and first-order backward as compiled loops (numba): batchnorm_numpy's
jit counterpart, with the same contract and the same per-element arithmetic.

Per channel the forward reads x twice (the mean, then the centred sum of squares: torch's two-pass
variance, no cancellation to guard against) and writes y = x * alpha + beta once; the backward reads g
and x once for the two sums and once more for the input gradient (batchnorm_numpy makes 4 and 7 NumPy
passes). The sums accumulate in float64, reassociated into vector partial sums; the elementwise steps
are batchnorm_numpy's float32 (or float64) operations in its order. Channels split across the intra-op
threads (the kernels release the GIL). Loaded through jit.load("batchnorm_jit") (Note [JIT kernels]);
tests/test_batchnorm_jit.py holds it to torch and to the NumPy kernels.
"""
import numba
import numpy as np

from . import allocator, jit, parallel


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _sum(x3, c):
    """sum over (n, l) of x3[n, c, l], in float64."""
    s = 0.0
    for n in range(x3.shape[0]):
        row = x3[n, c]
        for j in range(row.shape[0]):
            s += np.float64(row[j])
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _sum_squares(x3, c, mean):
    s = 0.0
    for n in range(x3.shape[0]):
        row = x3[n, c]
        for j in range(row.shape[0]):
            d = np.float64(row[j]) - mean
            s += d * d
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _sums_g(g3, x3, c, mean):
    """(sum of g, sum of g * (x - mean)) over channel c, in float64 (x - mean rounded to x's type first, as
    batchnorm_numpy's centred buffer)."""
    sg = 0.0
    sgx = 0.0
    for n in range(g3.shape[0]):
        grow = g3[n, c]
        xrow = x3[n, c]
        for j in range(grow.shape[0]):
            gv = np.float64(grow[j])
            sg += gv
            sgx += gv * np.float64(xrow[j] - mean)
    return sg, sgx


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _forward(x3, eps, weight, bias, y, stats, c0, c1):
    count = x3.shape[0] * x3.shape[2]
    one = x3.dtype.type(1)
    for c in range(c0, c1):
        mean = x3.dtype.type(_sum(x3, c) / count)
        var = x3.dtype.type(_sum_squares(x3, c, np.float64(mean)) / count)
        invstd = one / np.sqrt(var + x3.dtype.type(eps))
        stats[0, c], stats[1, c], stats[2, c] = mean, var, invstd
        alpha = invstd * weight[c] if weight.shape[0] else invstd
        beta = bias[c] - mean * alpha if bias.shape[0] else -mean * alpha
        for n in range(x3.shape[0]):
            xrow = x3[n, c]
            yrow = y[n, c]
            for j in range(xrow.shape[0]):
                yrow[j] = xrow[j] * alpha + beta


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _grads(g3, x3, mean, invstd, weight, gx, sums, c0, c1):
    count = g3.shape[0] * g3.shape[2]
    need_gx = gx.shape[0] > 0
    for c in range(c0, c1):
        m = mean[c]
        sg, sgx = _sums_g(g3, x3, c, m)
        sum_g, sum_gxc = g3.dtype.type(sg), g3.dtype.type(sgx)
        sums[0, c], sums[1, c] = sum_g, sum_gxc
        if not need_gx:
            continue
        s = invstd[c]
        k1 = s * s * sum_gxc / g3.dtype.type(count)
        k2 = sum_g / g3.dtype.type(count)
        k3 = s * weight[c] if weight.shape[0] else s
        for n in range(g3.shape[0]):
            grow = g3[n, c]
            xrow = x3[n, c]
            orow = gx[n, c]
            for j in range(grow.shape[0]):
                orow[j] = ((grow[j] - (xrow[j] - m) * k1) - k2) * k3


def train_forward(x3, eps, weight, bias):
    """batchnorm_numpy.train_forward, compiled: (y, mean, biased var, invstd) of x3 (N, C, L)."""
    x3 = np.ascontiguousarray(x3)
    y = allocator.empty(x3.shape, x3.dtype)
    stats = np.empty((3, x3.shape[1]), dtype=x3.dtype)
    w, b = jit.optional(weight, x3.dtype), jit.optional(bias, x3.dtype)
    parallel.run(lambda c0, c1: _forward(x3, float(eps), w, b, y, stats, c0, c1), x3.shape[1], x3.nbytes)
    return y, stats[0], stats[1], stats[2]


def train_grads(g3, x3, mean, invstd, weight, need_gx):
    """batchnorm_numpy.train_grads, compiled: (gx or None, sum of g, sum of g * (x - mean)) per channel."""
    g3 = np.ascontiguousarray(g3)
    x3 = np.ascontiguousarray(x3, dtype=g3.dtype)
    gx = allocator.empty(g3.shape, g3.dtype) if need_gx else jit.optional(None, g3.dtype, 3)
    sums = np.empty((2, g3.shape[1]), dtype=g3.dtype)
    mean, invstd = jit.optional(mean, g3.dtype), jit.optional(invstd, g3.dtype)
    w = jit.optional(weight, g3.dtype)
    parallel.run(lambda c0, c1: _grads(g3, x3, mean, invstd, w, gx, sums, c0, c1), g3.shape[1], g3.nbytes)
    return (gx if need_gx else None), sums[0], sums[1]
