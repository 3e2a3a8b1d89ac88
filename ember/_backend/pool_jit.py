"""2-D max pooling's backward as a compiled loop (numba): each output's gradient added at the flat input
position of its window's maximum (from the tap number the forward chose), in output order (torch's order of
accumulation), onto zero planes, in one pass. The NumPy forms (ember/_ops/pool.py) scatter per tap through the
phase rows (~3 passes per tap) or by np.bincount in float64. Loaded through jit.load("pool_jit") (Note [JIT
kernels]); tests/test_pool_jit.py holds it to torch.
"""
import numba
import numpy as np

from . import allocator, parallel


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _scatter(g, taps, base, tap_off, gx, c0, c1):
    n, c, oh, ow = g.shape
    zero = gx.dtype.type(0)
    for ci in range(c0, c1):
        for ni in range(n):
            dst = gx[ni * c + ci]
            for k in range(dst.shape[0]):
                dst[k] = zero
            for i in range(oh):
                for j in range(ow):
                    dst[base[i, j] + tap_off[taps[ci, ni, i, j]]] += g[ni, ci, i, j]


def scatter(g, taps, base, tap_off, spatial):
    """2-D max pooling's input gradient: g (N, C, OH, OW) added at base[i, j] + tap_off[taps[c, n, i, j]] of
    zero (H, W) planes, in output order; taps (C, N, >= OH, >= OW) are the window's tap numbers, base (OH, OW)
    the windows' flat origins, tap_off the taps' flat offsets (all positions inside the plane: the caller's
    windows choose only in-bounds taps)."""
    n, c = g.shape[:2]
    gx = allocator.empty((n * c, int(np.prod(spatial))), g.dtype)
    g = np.ascontiguousarray(g)
    parallel.run(lambda a, b: _scatter(g, taps, base, tap_off, gx, a, b), c, gx.nbytes)
    return gx.reshape((n, c) + tuple(spatial))


@numba.njit(inline="always", error_model="numpy")
def _greatest(x, ni, ci, h0, w0, k):
    """(max, its tap kh k + kw, NaN if the window holds a NaN or an infinity) of the k x k window of x[ni, ci] at
    (h0, w0), by selects on greater: the first of tied maxima; NaN never taken."""
    m = x[ni, ci, h0, w0]
    best = 0
    odd = m * 0
    for a in range(k):
        for b in range(k):
            v = x[ni, ci, h0 + a, w0 + b]
            up = v > m
            m = v if up else m
            best = a * k + b if up else best
            odd += v * 0
    return m, best, odd


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _window_max(x, val, taps, k, sh, sw, c0, c1):
    n = x.shape[0]
    oh, ow = val.shape[2], val.shape[3]
    for ci in range(c0, c1):
        for ni in range(n):
            for i in range(oh):
                h0 = i * sh
                for j in range(ow):
                    w0 = j * sw
                    if k == 2:  # the window's size a constant in each inlined copy: LLVM unrolls it (a runtime
                        m, best, odd = _greatest(x, ni, ci, h0, w0, 2)  # size ran 3x slower)
                    else:
                        m, best, odd = _greatest(x, ni, ci, h0, w0, 3)
                    if odd != odd:  # rare: again with torch's rule, where a NaN wins (the last one)
                        m = x[ni, ci, h0, w0]
                        best = 0
                        for a in range(k):
                            for b in range(k):
                                v = x[ni, ci, h0 + a, w0 + b]
                                if v > m or v != v:
                                    m = v
                                    best = a * k + b
                    val[ni, ci, i, j] = m
                    taps[ci, ni, i, j] = best


def window_max(x, k, stride, out):
    """2-D max pooling's forward for a k x k window, k 2 or 3, without padding or dilation, every window inside
    the input: (val (N, C, *out), taps (C, N, *out) int32), taps the kernel position (kh k + kw) of each window's
    maximum as torch's CPU kernel picks it (the first tap, then each later one that is greater or NaN: ties keep
    the first, the last NaN wins). The comparisons run as selects on greater alone; a window holding a NaN or an
    infinity is scanned again with the NaN rule (a NaN test in the loop ran 6x slower: branches on random data).
    Batch 32, 1 thread, ms, NumPy phase rows -> this: 3x3 stride 2 on 32 channels at 32x32 ~10 -> 3.1, 64 at
    15x15 2.0 -> 0.97, 64 at 7x7 0.76 -> 0.20; 2x2 stride 2 on 32 at 32x32 4.0 -> 1.5, 256 at 4x4 1.2 -> 0.47.
    Split over channels across the intra-op threads."""
    x = np.ascontiguousarray(x)
    n, c = x.shape[:2]
    val = allocator.empty((n, c) + tuple(out), x.dtype)
    taps = np.empty((c, n) + tuple(out), np.int32)
    parallel.run(lambda a, b: _window_max(x, val, taps, k, *stride, a, b), c, x.nbytes)
    return val, taps
