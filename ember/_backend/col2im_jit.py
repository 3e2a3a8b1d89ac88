"""The 2-D col2im (the transpose of im2col: a strided convolution's input gradient) as a compiled loop (numba):
per channel and sample, every tap's columns added into the plane while it is in cache, in tap order as the
NumPy form's one strided add per tap over the whole padded buffer (conv_numpy.scatter_windows, whose buffer is
then cropped and transposed to (N, C, H, W) by a layout copy); here the sums land in the (N, C, H, W) result
directly, the padding's positions skipped. The same sums in the same order: the same bits. Loaded through
jit.load("col2im_jit") (Note [JIT kernels]); tests/test_conv_layout_jit.py holds it to the NumPy form.
"""
import numba
import numpy as np

from . import allocator, parallel
from .depthwise_jit import _span


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _col2im(cols, sh, sw, dh, dw, ph, pw, gx, c0, c1):
    _, kh, kw, n, oh, ow = cols.shape
    h, w = gx.shape[2], gx.shape[3]
    zero = gx.dtype.type(0)
    for c in range(c0, c1):
        for s in range(n):
            plane = gx[s, c]
            for r in range(h):
                for q in range(w):
                    plane[r, q] = zero
            for i in range(kh):
                y0, y1 = _span(i * dh - ph, sh, h, oh)  # output rows whose input row lies in [0, h)
                for j in range(kw):
                    x0, x1 = _span(j * dw - pw, sw, w, ow)
                    src = cols[c, i, j, s]
                    step = np.uint64(sw)  # unsigned positions: no negative-index wraparound check per add
                    for y in range(y0, y1):
                        dst = plane[y * sh + i * dh - ph]
                        row = src[y]
                        at = np.uint64(x0 * sw + j * dw - pw)
                        for x in range(x0, x1):
                            dst[at] += row[x]
                            at += step


def col2im(cols, x_shape, kernel, stride, dilation, lo, out):
    """cols (C * kh * kw, N * oh * ow), C-contiguous, summed back into a fresh (N, C, H, W) array (lo: the padding
    before each spatial dim; positions past the input are dropped)."""
    n, c = x_shape[:2]
    cols = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(out))
    gx = allocator.empty(tuple(x_shape), cols.dtype)
    parallel.run(lambda a, b: _col2im(cols, *stride, *dilation, *lo, gx, a, b), c, cols.nbytes)
    return gx
