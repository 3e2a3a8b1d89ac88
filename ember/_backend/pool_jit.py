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
