"""The batch-last layout copies of 2-D convolutions as compiled loops (numba): (C, H, N, W) <-> (C, H, W, N)
transposes of small (N, W) blocks, one pass where NumPy's strided copy moves one element per inner step
(Note [Convolution layout] in ember/_backend/conv_numpy.py: the input padded into (C, *padded, N), the output
gradient into (O, *out, N), and the GEMM's (O, *out, N) result back to NCHW), and a weight gradient's GEMM
result transposed to (O, C * taps) by tiles. Loaded through jit.load("layout_jit") (Note [JIT kernels]);
tests/test_conv_layout_jit.py holds them to the NumPy copies.
"""
import numba
import numpy as np

from . import jit, parallel


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _swap(src, dst, a0, a1):
    for a in range(a0, a1):
        for b in range(src.shape[1]):
            s = src[a, b]
            d = dst[a, b]
            for i in range(s.shape[0]):
                for j in range(s.shape[1]):
                    d[j, i] = s[i, j]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _swap_bias(src, dst, bias, a0, a1):
    for a in range(a0, a1):
        v = bias[a]
        for b in range(src.shape[1]):
            s = src[a, b]
            d = dst[a, b]
            for i in range(s.shape[0]):
                for j in range(s.shape[1]):
                    d[j, i] = s[i, j] + v


def swap_last(src, dst, bias=None):
    """dst[a, b, j, i] = src[a, b, i, j] (+ bias[a]) for 4-D arrays of one float32/float64 dtype, any strides;
    split over axis 0 across the intra-op threads. The inner loop runs along whichever block axis has the
    shorter strides (swapping both views' last axes keeps the relation and swaps the loop order)."""
    if max(src.strides[2], dst.strides[3]) < max(src.strides[3], dst.strides[2]):
        src, dst = src.swapaxes(2, 3), dst.swapaxes(2, 3)
    if bias is None:
        parallel.run(lambda a, b: _swap(src, dst, a, b), src.shape[0], src.nbytes)
    else:
        bias = jit.optional(bias, src.dtype)
        parallel.run(lambda a, b: _swap_bias(src, dst, bias, a, b), src.shape[0], src.nbytes)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _transpose(src, dst, tile):
    rows, cols = src.shape
    for i0 in range(0, rows, tile):
        i1 = min(i0 + tile, rows)
        for j0 in range(0, cols, tile):
            j1 = min(j0 + tile, cols)
            for j in range(j0, j1):
                for i in range(i0, i1):
                    dst[j, i] = src[i, j]


def transpose(src, dst):
    """dst = src.T for 2-D arrays of one float32/float64 dtype, in 16x16 tiles: the rows a tile reads stay in
    cache, where NumPy's strided copy reads a column at a time (a 2304x256 float32 weight gradient: 1.34 ->
    0.51 ms; the small blocks of swap_last above are faster untiled)."""
    _transpose(src, dst, 16)
