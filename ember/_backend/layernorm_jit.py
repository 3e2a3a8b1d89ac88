"""Layer norm's forward and first-order backward over rows as compiled loops (numba): the jit counterpart of
the NumPy row blocks in ember/_ops/norm.py (LayerNorm), with their per-element float operations in their
order. Each row is read twice forward (the mean, then the centred squares) and written once; backward
reads each row for its two sums and once more for the input gradient (the NumPy blocks make 6 and 11
passes). Row sums accumulate in float64. The weight and bias gradients are summed per block of rows (the
NumPy path's blocks, Note [Row blocks]) in row order, and the caller adds the blocks in block order, so
the results do not depend on the thread count. Loaded through jit.load("layernorm_jit") (Note [JIT
kernels]); tests/test_layernorm_jit.py holds it to torch.
"""
import numba
import numpy as np


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _row_sum(row):
    s = 0.0
    for j in range(row.shape[0]):
        s += np.float64(row[j])
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _row_dot(a, b):
    s = 0.0
    for j in range(a.shape[0]):
        s += np.float64(a[j]) * np.float64(b[j])
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy")
def forward(x2, w, b, eps, out, mean, invstd, r0, r1):
    """Rows r0..r1-1 of x2 (rows, inner): out = (x - mean) * invstd [* w] [+ b] (w, b may be empty)."""
    inner = x2.shape[1]
    one = x2.dtype.type(1)
    for r in range(r0, r1):
        xr = x2[r]
        o = out[r]
        m = x2.dtype.type(_row_sum(xr) / inner)
        for j in range(inner):
            o[j] = xr[j] - m
        var = x2.dtype.type(_row_dot(o, o) / inner)
        s = one / np.sqrt(var + x2.dtype.type(eps))
        for j in range(inner):
            o[j] = o[j] * s
        if w.shape[0]:
            for j in range(inner):
                o[j] = o[j] * w[j]
        if b.shape[0]:
            for j in range(inner):
                o[j] = o[j] + b[j]
        mean[r] = m
        invstd[r] = s


@numba.njit(nogil=True, cache=True, error_model="numpy")
def backward(g2, x2, mean, invstd, w, gx, parts_w, parts_b, step, b0, b1):
    """Blocks b0..b1-1 (of `step` rows): gx (when it has rows) = (gy - mean(gy) - xhat * mean(gy * xhat)) *
    invstd with gy = g [* w]; parts_w[block] / parts_b[block] (when they have rows) = the block's sums of
    g * xhat and of g over its rows, in row order."""
    rows, inner = g2.shape
    want_x, want_w, want_b = gx.shape[0] > 0, parts_w.shape[0] > 0, parts_b.shape[0] > 0
    t = np.empty(inner, g2.dtype)
    for blk in range(b0, b1):
        if want_w:
            parts_w[blk] = 0
        if want_b:
            parts_b[blk] = 0
        for r in range(blk * step, min(rows, (blk + 1) * step)):
            g = g2[r]
            xr = x2[r]
            m, s = mean[r], invstd[r]
            for j in range(inner):
                t[j] = (xr[j] - m) * s
            if want_w:
                pw = parts_w[blk]
                for j in range(inner):
                    pw[j] += g[j] * t[j]
            if want_b:
                pb = parts_b[blk]
                for j in range(inner):
                    pb[j] += g[j]
            if not want_x:
                continue
            o = gx[r]
            if w.shape[0]:
                for j in range(inner):
                    o[j] = g[j] * w[j]
            else:
                for j in range(inner):
                    o[j] = g[j]
            c1 = g2.dtype.type(_row_dot(o, t) / inner)
            c0 = g2.dtype.type(_row_sum(o) / inner)
            for j in range(inner):
                o[j] = ((o[j] - t[j] * c1) - c0) * s
