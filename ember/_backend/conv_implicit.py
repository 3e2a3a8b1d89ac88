"""Convolutions as implicit GEMMs over a flat padded layout (split into phases when strided): no im2col matrix.

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

Note [Strided implicit GEMM]: with stride s, tap t reads padded position s * o + d * t, which is position
o + (d * t) // s of the phase (d * t) % s, the padded input's positions r, r + s, r + 2s, ... So the fill
splits the padded input into the phases some tap reads (s**2 for a 3x3 stride-2 kernel), each laid out as
above on one grid of out + (d * (k - 1)) // s positions per dim, one block of C rows per phase, and tap t's
operand is its phase's block, (d * t) // s grid positions in; the output lives on the same grid. Every tap
stays one GEMM, K = C as at stride 1, and the copy is of the input once (im2col's is taps / s**2 times it,
2.25x for 3x3 stride 2, then its batch-last layout copies). Stride 1 is the case of one phase, the grid
being the padded input. The grid has one more row and column than the output at 3x3 stride 2 (1.13x the
work at 16x16 out, 1.27x at 8x8). Forward, batch 32, float32, im2col -> phases (ms, medians of 15
alternating calls, 2026-11-29, 2-core EPYC VM), 2 threads / 1 thread: 16->32 at 32x32 5.93 -> 3.83 /
6.94 -> 6.02, 32->64 at 16x16 2.54 -> 2.29 / 3.82 -> 3.34, 16->16 at 32x32 2.92 -> 1.52 / 5.96 -> 4.27,
64->64 at 16x16 3.44 -> 2.93 / 7.10 -> 5.97; with 16 output positions it lost (32->32 at 8x8 0.76 ->
1.16, 64->128 at 8x8 1.52 -> 2.53 at 2 threads), and so did 3 input channels (3->16 at 32x32 0.56 -> 0.72).
A strided input gradient stays GEMM + col2im (it is no convolution of the gradient), the weight gradient
per sample (Note [Per-sample weight gradient] in ember/_ops/conv.py).

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
    """The flat padded grid of a convolution of x (N, C, *spatial), strided or not (Note [Strided implicit
    GEMM]): its phases, the grid's shape and each tap's phase and offset."""
    __slots__ = ("n", "c", "spatial", "kernel", "dilation", "stride", "lo", "padded", "grid", "out", "phases",
                 "taps", "tail", "plane")

    def __init__(self, x_shape, kernel, dilation, lo, hi, stride=None):
        self.n, self.c = x_shape[:2]
        self.spatial = tuple(x_shape[2:])
        self.kernel = tuple(kernel)
        self.dilation = tuple(dilation)
        self.stride = (1,) * len(self.kernel) if stride is None else tuple(stride)
        self.lo = tuple(lo)
        self.padded = tuple(s + a + b for s, a, b in zip(self.spatial, lo, hi))
        self.out = tuple((p - d * (k - 1) - 1) // st + 1
                         for p, k, d, st in zip(self.padded, self.kernel, self.dilation, self.stride))
        # tap t of dim i reads padded position st * o + d * t: phase (d * t) % st, at o + (d * t) // st in it
        self.grid = tuple(o + d * (k - 1) // st for o, k, d, st in zip(self.out, self.kernel, self.dilation, self.stride))
        nd = len(self.grid)
        gstrides = [int(np.prod(self.grid[i + 1:])) for i in range(nd)]  # in elements
        self.phases = []  # the phases some tap reads, in first-use order: (residue per dim)
        self.taps = []  # per tap in the weight's order: (index into phases, offset on the grid)
        for tap in np.ndindex(*self.kernel):
            at = [d * t for t, d in zip(tap, self.dilation)]
            phase = tuple(a % st for a, st in zip(at, self.stride))
            if phase not in self.phases:
                self.phases.append(phase)
            self.taps.append((self.phases.index(phase), sum(a // st * g for a, st, g in zip(at, self.stride, gstrides))))
        self.tail = max(off for _, off in self.taps)
        self.plane = int(np.prod(self.grid))  # P: grid positions per sample

    @property
    def length(self):
        """N * P: the grid's positions over the batch, the GEMMs' long dimension."""
        return self.n * self.plane

    def input(self, x):
        """x (N, C, *spatial) padded (and split into phases) into flat channel-major (phases * C, N * P + tail)
        memory."""
        flat = self.buffer(x.dtype)
        parallel.run(lambda i, j: self.fill(flat, x, i, j), self.n, flat.nbytes)
        return flat

    def buffer(self, dtype):
        """Uninitialised flat (phases * C, N * P + tail) memory for the padded input, its zero tail written."""
        flat = allocator.empty((len(self.phases) * self.c, self.length + self.tail), dtype)
        flat[:, self.length:] = 0
        return flat

    def fill(self, flat, x, n0, n1):
        """Samples n0..n1-1 of x (N, C, *spatial) padded, each phase into its rows' columns of the flat buffer."""
        src = x[n0:n1].transpose((1, 0) + tuple(range(2, x.ndim)))
        for p, phase in enumerate(self.phases):
            rows = flat[p * self.c:(p + 1) * self.c, n0 * self.plane:n1 * self.plane]
            grid = rows.reshape((self.c, n1 - n0) + self.grid)
            grid[...] = 0
            into, take = [Ellipsis], [Ellipsis]
            for r, st, a, s, g in zip(phase, self.stride, self.lo, self.spatial, self.grid):
                # grid position j holds padded position j * st + r, i.e. x's j * st + r - a, where that is in x
                j0 = -((r - a) // st) if r < a else 0
                j1 = min(g, (s - 1 - r + a) // st + 1)
                if j1 <= j0:
                    break
                into.append(slice(j0, j1))
                first = j0 * st + r - a
                take.append(slice(first, first + (j1 - j0 - 1) * st + 1, st))
            else:
                grid[tuple(into)] = src[tuple(take)]

    def crop(self, yg, bias):
        """yg (O, N * P) on the grid -> a fresh (N, O, *out), adding bias (O,)."""
        res = allocator.empty((self.n, yg.shape[0]) + self.out, yg.dtype)
        parallel.run(lambda i, j: self.crop_into(res, yg, bias, i, j), self.n, res.nbytes)
        return res

    def crop_into(self, res, yg, bias, n0, n1):
        """Samples n0..n1-1 of the grid yg (O, N * P) cropped into res (N, O, *out), adding bias (O,)."""
        o = yg.shape[0]
        part = yg[:, n0 * self.plane:n1 * self.plane].reshape((o, n1 - n0) + self.grid)
        src = part[(Ellipsis,) + tuple(slice(0, s) for s in self.out)].transpose((1, 0) + tuple(range(2, part.ndim)))
        if bias is None:
            np.copyto(res[n0:n1], src)
        else:
            np.add(src, bias.reshape((-1,) + (1,) * len(self.out)).astype(src.dtype, copy=False), out=res[n0:n1])


def forward(x, w, b, dilation, lo, hi, groups, stride=None):
    """conv(x, w) + b: one accumulating GEMM per tap and group over the flat grid (its phase's rows, when
    strided)."""
    plan = FlatPlan(x.shape, w.shape[2:], dilation, lo, hi, stride)
    w = w.astype(x.dtype, copy=False)  # the GEMM reads both as x's dtype
    o, cg = w.shape[:2]
    og = o // groups
    taps = len(plan.taps)
    wt = np.ascontiguousarray(w.reshape(groups, og, cg, taps).transpose(3, 0, 1, 2))  # (taps, g, O/g, C/g)
    flat = plan.buffer(x.dtype)
    length = plan.length
    yg = scratch((o, length), x.dtype)
    res = allocator.empty((plan.n, o) + plan.out, x.dtype)
    it = x.itemsize
    row = flat.shape[1]
    plane = plan.plane
    c = plan.c

    def samples(n0, n1):  # columns n0 * P .. n1 * P of the grid: padded copy, GEMMs, crop
        plan.fill(flat, x, n0, n1)
        a = n0 * plane
        for t, (phase, off) in enumerate(plan.taps):
            for gi in range(groups):
                cblas.gemm(x.dtype, og, (n1 - n0) * plane, cg, wt[t, gi].ctypes.data, cg,
                           flat.ctypes.data + ((phase * c + gi * cg) * row + off + a) * it, row,
                           yg.ctypes.data + (gi * og * length + a) * it, length, 0.0 if t == 0 else 1.0)
        plan.crop_into(res, yg, b, n0, n1)
    parallel.run_blas(samples, plan.n, 2 * o * cg * taps * length)
    return res
