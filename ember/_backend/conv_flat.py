"""Stride-1 convolutions over a flat padded layout: im2col rows that are long contiguous runs.

Note [Flat im2col]: with stride 1, tap t of a convolution reads the padded input shifted by a fixed
offset off(t) = sum_i t_i * d_i * (row stride of dim i). Lay each sample's padded channel out flat
(positions of the padded grid, row after row) and compute the output on that grid too: output
position q then reads input position q + off(t), so a tap's im2col row is ONE contiguous slice
of the flat input, positions 0 .. L-1 with L = out[0] * prod(padded[1:]) (every full padded row
from the first output row to the last). The im2col copy moves runs of L elements (a memcpy)
instead of runs of out[-1] (32 floats at 32x32: NumPy's strided copy is bound by its per-run
cost), and needs no padded copy of its own: the flat buffer IS the padded input. The price: the
padded grid has prod(padded[1:]) / prod(out[1:]) times more positions than the output (1.06x at
32x32 with padding 1, 1.125x at 16x16, 1.25x at 8x8), computed and then dropped by the crop
that copies the GEMM's result to (N, O, *out).

Two layouts, as in Note [Convolution layout] (ember/_backend/conv_numpy.py):
- per sample: flat (N, C, padded...) and cols (N, C * taps, L); the GEMM of a sample writes its
  (O, L) block, and the crop is a copy within each sample's block.
- channel-major: flat (C, N * padded...) and cols (C * taps, N * P) with P = prod(padded) per
  sample; one GEMM for the whole batch. The weight gradient uses it: the gradient is laid out on
  the same grid, zero outside the output, so garbage positions contribute nothing.
The buffers carry a zero tail of max off(t) elements, so the last positions' reads stay inside.
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import allocator, parallel
from .conv_numpy import scratch


PER_SAMPLE = "per_sample"
CHANNEL_MAJOR = "channel_major"


class FlatPlan:
    """The geometry of a stride-1 convolution of x (N, C, *spatial) on the flat padded grid."""
    __slots__ = ("n", "c", "spatial", "kernel", "dilation", "lo", "padded", "out", "pstrides", "offsets",
                 "tail", "plane", "rows")

    def __init__(self, x_shape, kernel, dilation, lo, hi):
        self.n, self.c = x_shape[:2]
        self.spatial = tuple(x_shape[2:])
        self.kernel = tuple(kernel)
        self.dilation = tuple(dilation)
        self.lo = tuple(lo)
        self.padded = tuple(s + a + b for s, a, b in zip(self.spatial, lo, hi))
        self.out = tuple(p - d * (k - 1) for p, k, d in zip(self.padded, self.kernel, self.dilation))
        nd = len(self.padded)
        self.pstrides = tuple(int(np.prod(self.padded[i + 1:])) for i in range(nd))  # in elements
        self.tail = sum((k - 1) * d * s for k, d, s in zip(self.kernel, self.dilation, self.pstrides))
        self.plane = int(np.prod(self.padded))  # P: padded positions per sample
        self.rows = self.out[0] * self.pstrides[0]  # L: grid positions from the first output row to the last

    def _interior(self, grid):
        """The (.., *spatial) view of x's positions inside a (.., *padded) grid."""
        return grid[(Ellipsis,) + tuple(slice(a, a + s) for a, s in zip(self.lo, self.spatial))]

    def _fill(self, flat, grid, src):
        """flat = 0 around src copied into grid's interior; split along the leading axis."""
        def part(i, j):
            g = grid[i:j]
            g[...] = 0
            self._interior(g)[...] = src[i:j]
        parallel.run(part, grid.shape[0], flat.nbytes)
        if self.tail:
            flat[..., flat.shape[-1] - self.tail:] = 0

    def per_sample_input(self, x):
        """x padded into flat (N * C * P + tail,) memory; returns the buffer."""
        flat = allocator.empty((self.n * self.c * self.plane + self.tail,), x.dtype)
        grid = flat[:self.n * self.c * self.plane].reshape((self.n, self.c) + self.padded)
        self._fill(flat, grid, x)
        return flat

    def channel_major_input(self, x):
        """x padded into flat (C, N * P + tail) memory, channel rows first; returns the buffer."""
        flat = allocator.empty((self.c, self.n * self.plane + self.tail), x.dtype)
        grid = flat[:, :self.n * self.plane].reshape((self.c, self.n) + self.padded)
        self._fill(flat, grid, x.transpose((1, 0) + tuple(range(2, x.ndim))))
        return flat

    def _tap_strides(self, itemsize):
        return tuple(d * s * itemsize for d, s in zip(self.dilation, self.pstrides))

    def per_sample_cols(self, flat, groups):
        """cols (N, groups, C/groups * taps, L) in scratch memory: row (c, tap) of sample n is
        flat[n, c, off(tap) : off(tap) + L]."""
        it = flat.itemsize
        shape = (self.n, self.c) + self.kernel + (self.rows,)
        strides = (self.c * self.plane * it, self.plane * it) + self._tap_strides(it) + (it,)
        view = as_strided(flat, shape, strides, writeable=False)
        cols = scratch(shape, flat.dtype)
        parallel.copyto(cols, view)
        return cols.reshape(self.n, groups, -1, self.rows)

    def channel_major_cols(self, flat, groups):
        """cols (groups, C/groups * taps, N * P) in scratch memory: row (c, tap) is
        flat[c, off(tap) : off(tap) + N * P]."""
        it = flat.itemsize
        length = self.n * self.plane
        shape = (self.c,) + self.kernel + (length,)
        strides = (flat.strides[0],) + self._tap_strides(it) + (it,)
        view = as_strided(flat, shape, strides, writeable=False)
        cols = scratch(shape, flat.dtype)
        parallel.copyto(cols, view)
        return cols.reshape(groups, -1, length)

    def crop_per_sample(self, yg, bias):
        """yg (N, O, L) on the grid -> a fresh (N, O, *out), adding bias (O,)."""
        n, o = yg.shape[:2]
        src = yg.reshape((n, o, self.out[0]) + self.padded[1:])[(Ellipsis,) + tuple(slice(0, s) for s in self.out[1:])]
        return _copy_bias(src, bias)

    def crop_channel_major(self, yg, bias):
        """yg (O, N * P) on the channel-major grid -> a fresh (N, O, *out), adding bias (O,)."""
        o = yg.shape[0]
        grid = yg.reshape((o, self.n) + self.padded)[(Ellipsis,) + tuple(slice(0, s) for s in self.out)]
        return _copy_bias(grid.transpose((1, 0) + tuple(range(2, grid.ndim))), bias)

    def channel_major_grad(self, y, groups):
        """y (N, O, *out) laid out on the channel-major grid, zero elsewhere: (groups, O/groups, N * P).
        y may stop short of out (conv_weight of a transposed convolution's output_padding positions)."""
        n, o = y.shape[:2]
        buf = allocator.empty((o, n * self.plane), y.dtype)
        grid = buf.reshape((o, n) + self.padded)
        src = y.transpose((1, 0) + tuple(range(2, y.ndim)))
        inner = (Ellipsis,) + tuple(slice(0, s) for s in y.shape[2:])

        def part(i, j):
            g = grid[i:j]
            g[...] = 0
            g[inner] = src[i:j]
        parallel.run(part, o, buf.nbytes)
        return buf.reshape(groups, o // groups, n * self.plane)


def _copy_bias(src, bias):
    """A fresh C-ordered copy of src (N, O, *S), plus bias (O,) when given; split along N."""
    res = allocator.empty(src.shape, src.dtype)
    if bias is None:
        parallel.copyto(res, src)
    else:
        b = bias.reshape((-1,) + (1,) * (src.ndim - 2)).astype(src.dtype, copy=False)
        parallel.run(lambda i, j: np.add(src[i:j], b, out=res[i:j]), src.shape[0], res.nbytes)
    return res
