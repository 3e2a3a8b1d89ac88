"""Stride-1 convolutions as implicit GEMMs over a flat padded layout: no im2col matrix at all.

Note [Implicit GEMM]: with stride 1, tap t of a convolution reads the padded input shifted by a
fixed offset off(t) = sum_i t_i * d_i * (row stride of padded dim i). Lay the padded input out
channel-major and flat, (C, N * P) with P the padded positions of a sample, and compute the output
on that same grid: output position q reads input position q + off(t), so tap t's operand is the
(C, N * P) matrix starting off(t) elements in, whose rows are the flat input's rows (leading
dimension = the row length). The forward is one GEMM per tap accumulating into the output (BLAS's
beta = 1, through ember/_backend/cblas.py), y_grid (O, N * P) += W_t (O, C) @ X[:, off(t):].
Positions of the grid outside the output (the padding rows and columns) are computed and dropped by
the crop that copies y_grid to (N, O, *out): prod(padded) / prod(out) more work (1.13x at 32x32
with padding 1, 1.27x at 16x16, 1.56x at 8x8). Each row of X carries a zero tail of max off(t)
elements, so the last positions' reads stay in the buffer. A stride-1 input gradient is a
convolution too (conv_input's flipped form), so it takes this path as well. On 2+ threads each
intra-op thread takes a range of samples whole: its padded copy, GEMMs and crop (Note [BLAS
pieces], ember/_backend/parallel.py). The last grid positions of a range read up to `tail` elements
into the next range's columns, which another thread may be writing: those are padding positions,
which the crop drops.

Measured against im2col in ember/_ops/conv.py (where the thresholds sit). Rejected: the weight
gradient the same way, dW_t = G (O, N * P) @ X[:, off(t):]^T with the output gradient G on the grid
(one long-reduction GEMM per tap): never faster (CPU time, 1 thread, batch 32: 16->16 at 32x32
7.42 vs 7.47 ms, 64->64 at 32x32 52.5 vs 44.3 ms, 64->64 at 8x8 5.4 vs 4.4 ms). Also rejected: kw
shifted copies of the flat buffer, so that each kernel row is one GEMM with K = C * kw (3 accumulating GEMMs
instead of 9 for 3x3, the output written 3 times instead of 9): forward at 2 threads 0.81-1.27x the per-tap
time over 7 shapes (32x32->32 at 32x32 0.81, 16->16 at 32x32 1.25, 32->64 at 26x26 unpadded 1.17), at 1 thread
0.87-1.17x (2026-11-28, 2-core EPYC VM, medians of 3x9 calls): the copies cost what the wider GEMMs save.
"""
import numpy as np

from . import allocator, cblas, parallel
from .conv_numpy import scratch


class FlatPlan:
    """The flat padded grid of a stride-1 convolution of x (N, C, *spatial)."""
    __slots__ = ("n", "c", "spatial", "kernel", "dilation", "lo", "padded", "out", "offsets", "tail", "plane")

    def __init__(self, x_shape, kernel, dilation, lo, hi):
        self.n, self.c = x_shape[:2]
        self.spatial = tuple(x_shape[2:])
        self.kernel = tuple(kernel)
        self.dilation = tuple(dilation)
        self.lo = tuple(lo)
        self.padded = tuple(s + a + b for s, a, b in zip(self.spatial, lo, hi))
        self.out = tuple(p - d * (k - 1) for p, k, d in zip(self.padded, self.kernel, self.dilation))
        nd = len(self.padded)
        pstrides = [int(np.prod(self.padded[i + 1:])) for i in range(nd)]  # in elements
        self.offsets = [sum(t * d * s for t, d, s in zip(tap, self.dilation, pstrides))
                        for tap in np.ndindex(*self.kernel)]
        self.tail = self.offsets[-1]
        self.plane = int(np.prod(self.padded))  # P: padded positions per sample

    @property
    def length(self):
        """N * P: the grid's positions over the batch, the GEMMs' long dimension."""
        return self.n * self.plane

    def input(self, x):
        """x (N, C, *spatial) padded into flat channel-major (C, N * P + tail) memory."""
        flat = self.buffer(x.dtype)
        parallel.run(lambda i, j: self.fill(flat, x, i, j), self.n, flat.nbytes)
        return flat

    def buffer(self, dtype):
        """Uninitialised flat (C, N * P + tail) memory for the padded input, its zero tail written."""
        flat = allocator.empty((self.c, self.length + self.tail), dtype)
        flat[:, self.length:] = 0
        return flat

    def fill(self, flat, x, n0, n1):
        """Samples n0..n1-1 of x (N, C, *spatial) padded into their columns of the flat buffer."""
        grid = flat[:, n0 * self.plane:n1 * self.plane].reshape((self.c, n1 - n0) + self.padded)
        grid[...] = 0
        inner = (Ellipsis,) + tuple(slice(a, a + s) for a, s in zip(self.lo, self.spatial))
        grid[inner] = x[n0:n1].transpose((1, 0) + tuple(range(2, x.ndim)))

    def crop(self, yg, bias):
        """yg (O, N * P) on the grid -> a fresh (N, O, *out), adding bias (O,)."""
        res = allocator.empty((self.n, yg.shape[0]) + self.out, yg.dtype)
        parallel.run(lambda i, j: self.crop_into(res, yg, bias, i, j), self.n, res.nbytes)
        return res

    def crop_into(self, res, yg, bias, n0, n1):
        """Samples n0..n1-1 of the grid yg (O, N * P) cropped into res (N, O, *out), adding bias (O,)."""
        o = yg.shape[0]
        part = yg[:, n0 * self.plane:n1 * self.plane].reshape((o, n1 - n0) + self.padded)
        src = part[(Ellipsis,) + tuple(slice(0, s) for s in self.out)].transpose((1, 0) + tuple(range(2, part.ndim)))
        if bias is None:
            np.copyto(res[n0:n1], src)
        else:
            np.add(src, bias.reshape((-1,) + (1,) * len(self.out)).astype(src.dtype, copy=False), out=res[n0:n1])


def forward(x, w, b, dilation, lo, hi, groups):
    """conv(x, w) + b for stride 1: one accumulating GEMM per tap and group over the flat grid."""
    plan = FlatPlan(x.shape, w.shape[2:], dilation, lo, hi)
    w = w.astype(x.dtype, copy=False)  # the GEMM reads both as x's dtype
    o, cg = w.shape[:2]
    og = o // groups
    taps = len(plan.offsets)
    wt = np.ascontiguousarray(w.reshape(groups, og, cg, taps).transpose(3, 0, 1, 2))  # (taps, g, O/g, C/g)
    flat = plan.buffer(x.dtype)
    length = plan.length
    yg = scratch((o, length), x.dtype)
    res = allocator.empty((plan.n, o) + plan.out, x.dtype)
    it = x.itemsize
    row = flat.shape[1]
    plane = plan.plane

    def samples(n0, n1):  # columns n0 * P .. n1 * P of the grid: padded copy, GEMMs, crop
        plan.fill(flat, x, n0, n1)
        a = n0 * plane
        for t, off in enumerate(plan.offsets):
            for gi in range(groups):
                cblas.gemm(x.dtype, og, (n1 - n0) * plane, cg, wt[t, gi].ctypes.data, cg,
                           flat.ctypes.data + (gi * cg * row + off + a) * it, row,
                           yg.ctypes.data + (gi * og * length + a) * it, length, 0.0 if t == 0 else 1.0)
        plan.crop_into(res, yg, b, n0, n1)
    parallel.run_blas(samples, plan.n, 2 * o * cg * taps * length)
    return res

