"""Layer norm's forward and first-order backward over rows as compiled loops (numba): the jit counterpart of
the NumPy row blocks in ember/_ops/norm.py (LayerNorm), the same formulas with the per-element operations fused
(to rounding, not bit for bit: the NumPy blocks sum in float32). Forward reads each row three times (the mean,
the centred squares, then (x - mean) * invstd * w + b written in one pass); backward twice (its two row sums
with the weight and bias gradients' column sums, then the input gradient), where the NumPy blocks make 6 and 11
passes (256x1024 float32 on one thread: forward 145 -> 123 us, backward 233 -> 198, torch 141 and 226). Row
sums accumulate in float64. The weight and bias gradients are summed per block of rows (the NumPy path's
blocks, Note [Row blocks]) in row order, and the caller adds the blocks in block order, so the results do not
depend on the thread count. Loaded through jit.load("layernorm_jit") (Note [JIT kernels]);
tests/test_layernorm_jit.py holds it to torch.
"""
import numba
import numpy as np


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _row_sum(row):
    s = 0.0
    for j in range(row.shape[0]):
        s += np.float64(row[j])
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy")
def forward(x2, w, b, eps, out, mean, invstd, r0, r1):
    """Rows r0..r1-1 of x2 (rows, inner): out = (x - mean) * invstd [* w] [+ b] (w, b may be empty)."""
    inner = x2.shape[1]
    one = x2.dtype.type(1)
    has_w, has_b = w.shape[0] > 0, b.shape[0] > 0
    for r in range(r0, r1):
        xr = x2[r]
        o = out[r]
        m = x2.dtype.type(_row_sum(xr) / inner)
        var = x2.dtype.type(_centred_squares(xr, m) / inner)
        s = one / np.sqrt(var + x2.dtype.type(eps))
        if has_w and has_b:
            for j in range(inner):
                o[j] = (xr[j] - m) * s * w[j] + b[j]
        elif has_w:
            for j in range(inner):
                o[j] = (xr[j] - m) * s * w[j]
        elif has_b:
            for j in range(inner):
                o[j] = (xr[j] - m) * s + b[j]
        else:
            for j in range(inner):
                o[j] = (xr[j] - m) * s
        mean[r] = m
        invstd[r] = s


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _centred_squares(row, m):
    """sum (x - m)^2 over the row, each difference rounded in the row's dtype (as the stored x - m was), summed
    in float64."""
    s = 0.0
    for j in range(row.shape[0]):
        d = np.float64(row[j] - m)
        s += d * d
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _row_sums(g, xr, m, s, w, pw, pb):
    """One pass over a row: (sum gy * xhat, sum gy) in float64 with gy = g [* w], xhat = (x - m) s, and the
    weight / bias gradients' column sums pw += g * xhat, pb += g (either may be empty)."""
    c1 = 0.0
    c0 = 0.0
    has_w, want_w, want_b = w.shape[0] > 0, pw.shape[0] > 0, pb.shape[0] > 0
    for j in range(g.shape[0]):
        t = (xr[j] - m) * s
        gj = g[j]
        if want_w:
            pw[j] += gj * t
        if want_b:
            pb[j] += gj
        gy = gj * w[j] if has_w else gj
        c1 += np.float64(gy) * np.float64(t)
        c0 += np.float64(gy)
    return c1, c0


@numba.njit(nogil=True, cache=True, error_model="numpy")
def backward(g2, x2, mean, invstd, w, gx, parts_w, parts_b, step, b0, b1):
    """Blocks b0..b1-1 (of `step` rows): gx (when it has rows) = (gy - mean(gy) - xhat * mean(gy * xhat)) *
    invstd with gy = g [* w]; parts_w[block] / parts_b[block] (when they have rows) = the block's sums of
    g * xhat and of g over its rows, in row order. Two passes a row: the sums, then gx."""
    rows, inner = g2.shape
    want_x, want_w, want_b = gx.shape[0] > 0, parts_w.shape[0] > 0, parts_b.shape[0] > 0
    has_w = w.shape[0] > 0
    nothing = np.empty(0, g2.dtype)
    for blk in range(b0, b1):
        pw = parts_w[blk] if want_w else nothing
        pb = parts_b[blk] if want_b else nothing
        if want_w:
            pw[:] = 0
        if want_b:
            pb[:] = 0
        for r in range(blk * step, min(rows, (blk + 1) * step)):
            g = g2[r]
            xr = x2[r]
            m, s = mean[r], invstd[r]
            c1, c0 = _row_sums(g, xr, m, s, w, pw, pb)
            if not want_x:
                continue
            c1 = g2.dtype.type(c1 / inner)
            c0 = g2.dtype.type(c0 / inner)
            o = gx[r]
            if has_w:
                for j in range(inner):
                    o[j] = ((g[j] * w[j] - (xr[j] - m) * s * c1) - c0) * s
            else:
                for j in range(inner):
                    o[j] = ((g[j] - (xr[j] - m) * s * c1) - c0) * s
