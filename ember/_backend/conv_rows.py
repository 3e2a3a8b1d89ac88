"""2-D convolutions with a row im2col: the kernel's columns go into the GEMM, its rows are BLAS accumulation.

Note [Row im2col]: a full im2col copies the input kh * kw times. Copy it kw times instead, batch-last:
R[c, j, r, q, n] = padded x[n, c, r, q * sw + j * dw] (one row of the kernel's taps per input row).
Over (r, q, n) flattened, kernel row i reads R's rows r = p * sh + i * dh, p < oh: with stride 1 a
contiguous (C * kw, oh * ow * N) block starting i * dh * ow * N elements in, so the convolution is kh
GEMMs, W_i (O, C * kw) @ R_i, accumulating into one (O, oh * ow * N) result (BLAS's beta = 1). With row
stride sh, R's rows are split into sh phases (row r in phase r % sh at r // sh), and R_i is again one
block of phase (i * dh) % sh. No position is computed twice and none is dropped (unlike the implicit
GEMM's padded grid, Note [Implicit GEMM]); the price is K = C * kw per GEMM instead of C * kh * kw. The
weight gradient is kh GEMMs with the long reduction, R_i @ G^T, one per kernel row.
Measured against the full im2col in ember/_ops/conv.py (where the threshold sits).
"""
import numpy as np

from . import allocator, cblas, parallel
from .conv_numpy import BATCH_LAST, padded, scratch


class RowPlan:
    """The row im2col R of a 2-D convolution of x (N, C, H, W) with out (oh, ow) positions (fewer than the
    geometry gives when x carries a transposed convolution's output_padding): its shape and where kernel row
    i's block starts."""
    __slots__ = ("n", "c", "kernel", "stride", "dilation", "lo", "hi", "out", "rows", "phase_rows", "ld", "starts")

    def __init__(self, x_shape, kernel, stride, dilation, lo, hi, out):
        self.n, self.c = x_shape[:2]
        self.kernel, self.stride, self.dilation = tuple(kernel), tuple(stride), tuple(dilation)
        self.lo, self.hi = tuple(lo), tuple(hi)
        padded_hw = [s + a + b for s, a, b in zip(x_shape[2:], lo, hi)]
        self.out = tuple(out)
        (kh, _), (sh, _), (dh, _) = self.kernel, self.stride, self.dilation
        oh, ow = self.out
        self.phase_rows = oh + (kh - 1) * dh // sh  # rows kept per phase: what the kernel rows read
        # per phase, the padded rows r = q * sh + phase (q < phase_rows) that exist
        self.rows = [min(self.phase_rows, -(-(padded_hw[0] - ph) // sh)) for ph in range(sh)]
        run = ow * self.n  # one row of R: (q, n)
        self.ld = sh * self.phase_rows * run  # elements from one (c, j) row of R to the next
        self.starts = [((i * dh) % sh * self.phase_rows + (i * dh) // sh) * run for i in range(kh)]

    @property
    def length(self):
        """oh * ow * N: the GEMMs' long dimension (outputs, batch last)."""
        return self.out[0] * self.out[1] * self.n

    def cols(self, x):
        """R (C * kw, ld) of x (N, C, H, W), in scratch memory (valid until the next scratch() call)."""
        src = padded(x, self.lo, self.hi, layout=BATCH_LAST)  # (C, Hp, Wp, N)
        (_, kw), (sh, sw), (_, dw) = self.kernel, self.stride, self.dilation
        ow = self.out[1]
        r = scratch((self.c, kw, sh, self.phase_rows, ow, self.n), x.dtype)
        parts = [(j, ph, src[:, ph::sh][:, :self.rows[ph], j * dw:j * dw + sw * (ow - 1) + 1:sw])
                 for j in range(kw) for ph in range(sh)]

        def copy(a, b):
            for j, ph, view in parts:
                r[a:b, j, ph, :self.rows[ph]] = view[a:b]
        parallel.run(copy, self.c, r.nbytes)
        return r.reshape(self.c * kw, self.ld)

    def _block(self, r, i):
        return r[:, self.starts[i]:self.starts[i] + self.length]


def conv(plan, x, w):
    """y (O, oh * ow * N), batch last: sum over kernel rows i of W_i (O, C * kw) @ R_i."""
    kh = plan.kernel[0]
    o = w.shape[0]
    w = w.astype(x.dtype, copy=False)
    wt = np.ascontiguousarray(w.transpose(2, 0, 1, 3)).reshape(kh, o, -1)  # (kh, O, C * kw)
    r = plan.cols(x)
    m = plan.length
    y = allocator.empty((o, m), x.dtype)
    if cblas.available(x.dtype):
        k = wt.shape[2]
        it = x.itemsize
        for i in range(kh):
            cblas.gemm(x.dtype, o, m, k, wt[i].ctypes.data, k, r.ctypes.data + plan.starts[i] * it, plan.ld,
                       y.ctypes.data, m, 0.0 if i == 0 else 1.0)
        return y
    np.matmul(wt[0], plan._block(r, 0), out=y)
    for i in range(1, kh):
        y += wt[i] @ plan._block(r, i)
    return y


def weight(plan, x, g, w_shape):
    """dW (O, C, kh, kw) from g (O, oh * ow * N) batch last: kernel row i's (C * kw, O) block is R_i @ G^T."""
    kh = plan.kernel[0]
    o = g.shape[0]
    r = plan.cols(x)
    k = r.shape[0]
    m = plan.length
    dw = np.empty((kh, k, o), dtype=x.dtype)
    if cblas.available(x.dtype):
        it = x.itemsize
        for i in range(kh):
            cblas.gemm(x.dtype, k, o, m, r.ctypes.data + plan.starts[i] * it, plan.ld, g.ctypes.data, m,
                       dw[i].ctypes.data, o, 0.0, trans_b=True)
    else:
        for i in range(kh):
            np.matmul(plan._block(r, i), g.T, out=dw[i])
    return np.ascontiguousarray(dw.reshape(kh, plan.c, -1, o).transpose(3, 1, 0, 2)).reshape(w_shape)
