"""2-D depthwise convolutions as compiled loops (numba): depthwise_numpy's jit counterpart.

Per channel, every sample's padded plane is laid out in small phase grids and each tap is one flat,
vectorized multiply-add loop over all of them (Note [Depthwise plane grids]); depthwise_numpy makes ~2
NumPy passes per tap over the whole layer plus its layout copies. A first-order backward computes the
input and weight gradients in one pass over each channel. inf/NaN reach exactly the outputs and gradients
torch gives them (planes or weights holding one take row-wise loops over the outputs' own windows). The
channels split across the intra-op threads (the kernels release the GIL). Any stride, dilation, padding
(its low side; the high side follows from the sizes) and channel multiplier. Loaded through
jit.load("depthwise_jit") (Note [JIT kernels]); tests/test_depthwise_jit.py holds it to torch.
"""
import numba
import numpy as np

from . import allocator, jit, parallel


_U = np.uint64  # flat indices as unsigned: numba then drops its negative-index wraparound, and the loops vectorize


@numba.njit(inline="always")
def _span(off, step, size, count):
    """[lo, hi) of the indices i < count whose position i * step + off lies in [0, size)."""
    lo = 0 if off >= 0 else (step - 1 - off) // step
    last = size - 1 - off
    hi = 0 if last < 0 else min(count, last // step + 1)
    return lo, max(lo, hi)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _input_grad(g, w, gx, sh, sw, ph, pw, dh, dw, n0, n1):
    """Samples n0..n1-1 of the input gradient by row-wise loops over each output's own window: the path for a
    weight holding inf/NaN (Note [Depthwise plane grids])."""
    c_in, h, wd = gx.shape[1], gx.shape[2], gx.shape[3]
    o_ch, kh_n, kw_n = w.shape[0], w.shape[2], w.shape[3]
    oh_n, ow_n = g.shape[2], g.shape[3]
    mult = o_ch // c_in
    gf, wf, xf = g.reshape(-1), w.reshape(-1), gx.reshape(-1)
    usw = _U(sw)
    for n in range(n0, n1):
        xs = _U(n * c_in * h * wd)
        for k in range(_U(c_in * h * wd)):
            xf[xs + k] = 0
        for o in range(o_ch):
            c = o // mult
            gb = _U((n * o_ch + o) * oh_n * ow_n)
            xb = _U((n * c_in + c) * h * wd)
            for kh in range(kh_n):
                ih0 = kh * dh - ph
                i0, i1 = _span(ih0, sh, h, oh_n)
                for kw in range(kw_n):
                    iw0 = kw * dw - pw
                    j0, j1 = _span(iw0, sw, wd, ow_n)
                    m = _U(j1 - j0)
                    wv = wf[(o * kh_n + kh) * kw_n + kw]
                    for i in range(i0, i1):
                        grow = gb + _U(i * ow_n + j0)
                        xrow = xb + _U((i * sh + ih0) * wd + iw0 + j0 * sw)
                        if sw == 1:
                            for j in range(m):
                                xf[xrow + j] += wv * gf[grow + j]
                        else:
                            for j in range(m):
                                xf[xrow + j * usw] += wv * gf[grow + j]


# Note [Depthwise plane grids]: per channel the compiled kernels lay every sample's padded plane out in local
# phase grids, as depthwise_numpy does for the whole layer (Note [Depthwise flat layout]): padded position
# (r, c) of sample n goes to phase (r % sh, c % sw) at grid position n * qh * qw + (r // sh) * qw + c // sw.
# Outputs are computed on the whole grid (the columns past OW and the rows past OH of each sample are garbage,
# not copied out), so tap (kh, kw) is one flat loop over N * qh * qw positions reading its phase at a fixed
# offset (a zero tail after the last sample takes the reads past it): long vectorized loops with no per-row
# work, whatever the plane's size or stride. The garbage positions multiply the output gradient's zeros with
# input values outside their window: inf/NaN there (0 * inf) would leak into the weight gradient, so a
# channel holding one takes the row-wise loops (_rows_weight), and a non-finite weight sends the input
# gradient to _input_grad (its zeros times the weight).


@numba.njit(inline="always")
def _columns(wd, sw, pw):
    """Per column phase b: (first input column j0, count, first grid column) of the columns landing in b."""
    cols = np.empty((sw, 3), np.int64)
    for b in range(sw):
        j0 = (b - pw) % sw
        cols[b, 0] = j0
        cols[b, 1] = max(0, (wd - j0 + sw - 1) // sw)
        cols[b, 2] = (j0 + pw) // sw
    return cols


@numba.njit(inline="always")
def _grid_rows(f, fb, oh, ow, y, yb, qw, into_grid):
    """An output plane of f at fb (oh x ow) and the grid y from yb on (rows qw apart, the first ow of each),
    copied into the grid (into_grid) or back out of it; a constant into_grid compiles the branch away."""
    for i in range(oh):
        at = yb + _U(i * qw)
        fat = fb + _U(i * ow)
        if into_grid:
            for j in range(_U(ow)):
                y[at + j] = f[fat + j]
        else:
            for j in range(_U(ow)):
                f[fat + j] = y[at + j]


@numba.njit(inline="always")
def _grid_copy(xf, xb, h, wd, P, gb, sh, sw, ph, pw, qw, cols, into_grid):
    """The plane of xf at xb (h x wd) and its positions in the phase grids P (sh * sw, ...) from grid position gb
    on, copied into the grids (into_grid; the caller zeroes P: the padding) or back out of them. cols:
    _columns(wd, sw, pw). Callers pass into_grid as a constant, so the branch is compiled away."""
    a, qi = ph % sh, ph // sh  # the row phase and grid row of input row i, stepped along
    for i in range(h):
        base = gb + _U(qi * qw)
        xrow = xb + _U(i * wd)
        if sw == 1:
            prow = P[a]
            at = base + _U(pw)
            if into_grid:
                for j in range(_U(wd)):
                    prow[at + j] = xf[xrow + j]
            else:
                for j in range(_U(wd)):
                    xf[xrow + j] = prow[at + j]
        else:
            usw = _U(sw)
            for b in range(sw):
                prow = P[a * sw + b]
                at = base + _U(cols[b, 2])
                xat = xrow + _U(cols[b, 0])
                if into_grid:
                    for t in range(_U(cols[b, 1])):
                        prow[at + t] = xf[xat + t * usw]
                else:
                    for t in range(_U(cols[b, 1])):
                        xf[xat + t * usw] = prow[at + t]
        a += 1
        if a == sh:
            a = 0
            qi += 1


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _finite(P):
    """Whether every value of P is finite: a sum of v * 0 (NaN from any inf or NaN), vectorized."""
    s = P.dtype.type(0)
    for k in range(P.shape[0]):
        row = P[k]
        for j in range(row.shape[0]):
            s += row[j] * P.dtype.type(0)
    return s == 0


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _grid_forward(x, w, b, out, sh, sw, ph, pw, dh, dw, qh, qw, tail, c0, c1):
    n_n, c_in, h, wd = x.shape
    o_ch, kh_n, kw_n = w.shape[0], w.shape[2], w.shape[3]
    oh_n, ow_n = out.shape[2], out.shape[3]
    mult = o_ch // c_in
    xf, wf, of = x.reshape(-1), w.reshape(-1), out.reshape(-1)
    plane = qh * qw
    m = _U(n_n * plane)
    P = np.empty((sh * sw, n_n * plane + tail), x.dtype)
    y = np.empty(n_n * plane, x.dtype)
    cols = _columns(wd, sw, pw)
    for c in range(c0, c1):
        P[:] = 0
        for n in range(n_n):
            _grid_copy(xf, _U((n * c_in + c) * h * wd), h, wd, P, _U(n * plane), sh, sw, ph, pw, qw, cols, True)
        for o in range(c * mult, (c + 1) * mult):
            y[:] = b[o] if b.shape[0] else x.dtype.type(0)
            for kh in range(kh_n):
                for kw in range(kw_n):
                    rr, cc = kh * dh, kw * dw
                    prow = P[(rr % sh) * sw + cc % sw]
                    off = _U((rr // sh) * qw + cc // sw)
                    wv = wf[(o * kh_n + kh) * kw_n + kw]
                    for q in range(m):
                        y[q] += wv * prow[q + off]
            for n in range(n_n):
                _grid_rows(of, _U((n * o_ch + o) * oh_n * ow_n), oh_n, ow_n, y, _U(n * plane), qw, False)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _dot(a, b, off, m):
    """sum of a[q] * b[q + off] over q < m, reassociated into vector partial sums."""
    s = a.dtype.type(0)
    for q in range(m):
        s += a[q] * b[q + off]
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _rows_weight(xf, xb, gf, gb, acc, o, h, wd, oh_n, ow_n, kh_n, kw_n, sh, sw, ph, pw, dh, dw):
    """One plane's weight-gradient terms over the outputs' own windows only (a plane holding inf/NaN)."""
    for kh in range(kh_n):
        ih0 = kh * dh - ph
        i0, i1 = _span(ih0, sh, h, oh_n)
        for kw in range(kw_n):
            iw0 = kw * dw - pw
            j0, j1 = _span(iw0, sw, wd, ow_n)
            s = acc.dtype.type(0)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    s += gf[gb + _U(i * ow_n + j)] * xf[xb + _U((i * sh + ih0) * wd + j * sw + iw0)]
            acc[o, kh * kw_n + kw] += s


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _grid_backward(x, g, w, gx, gw, sh, sw, ph, pw, dh, dw, qh, qw, tail, c0, c1):
    """Channels c0..c1-1 of the input gradient (when gx has elements) and of the weight gradient (when gw
    has): per channel, the output gradient on the grids of all samples (zero garbage rows and columns), the
    input gradient's taps scattered into phase grids then gathered back to the planes, the weight's taps as
    dot products."""
    n_n, c_in, h, wd = x.shape
    o_ch, kh_n, kw_n = w.shape[0], w.shape[2], w.shape[3]
    oh_n, ow_n = g.shape[2], g.shape[3]
    mult = o_ch // c_in
    need_gx, need_gw = gx.shape[0] > 0, gw.shape[0] > 0
    xf, gf, wf = x.reshape(-1), g.reshape(-1), w.reshape(-1)
    gxf = gx.reshape(-1)
    plane = qh * qw
    m = _U(n_n * plane)
    P = np.empty((sh * sw, n_n * plane + tail), g.dtype)
    GP = np.empty((sh * sw, n_n * plane + tail), g.dtype)
    y = np.empty(n_n * plane, g.dtype)
    acc = np.zeros((o_ch, kh_n * kw_n), g.dtype)
    cols = _columns(wd, sw, pw)
    for c in range(c0, c1):
        finite = True
        if need_gw:
            P[:] = 0
            for n in range(n_n):
                _grid_copy(xf, _U((n * c_in + c) * h * wd), h, wd, P, _U(n * plane), sh, sw, ph, pw, qw, cols, True)
            finite = _finite(P)
        if need_gx:
            GP[:] = 0
        for o in range(c * mult, (c + 1) * mult):
            y[:] = 0
            for n in range(n_n):
                gb = _U((n * o_ch + o) * oh_n * ow_n)
                _grid_rows(gf, gb, oh_n, ow_n, y, _U(n * plane), qw, True)
                if need_gw and not finite:
                    _rows_weight(xf, _U((n * c_in + c) * h * wd), gf, gb, acc, o, h, wd, oh_n, ow_n, kh_n, kw_n,
                                 sh, sw, ph, pw, dh, dw)
            for kh in range(kh_n):
                for kw in range(kw_n):
                    rr, cc = kh * dh, kw * dw
                    k = (rr % sh) * sw + cc % sw
                    off = _U((rr // sh) * qw + cc // sw)
                    if need_gw and finite:
                        acc[o, kh * kw_n + kw] += _dot(y, P[k], off, m)
                    if need_gx:
                        wv = wf[(o * kh_n + kh) * kw_n + kw]
                        grow = GP[k]
                        for q in range(m):
                            grow[q + off] += wv * y[q]
        if need_gx:
            for n in range(n_n):
                _grid_copy(gxf, _U((n * c_in + c) * h * wd), h, wd, GP, _U(n * plane), sh, sw, ph, pw, qw, cols, False)
    if need_gw:
        for o in range(c0 * mult, c1 * mult):
            for t in range(kh_n * kw_n):
                gw[o, 0, t // kw_n, t % kw_n] = acc[o, t]


def _geometry(stride, lo, dilation):
    return (int(stride[0]), int(stride[1]), int(lo[0]), int(lo[1]), int(dilation[0]), int(dilation[1]))


def _grid(x_shape, w_shape, stride, lo, dilation, out_size):
    """(qh, qw, tail): the phase grids' rows and columns, and the zero tail after the last sample's grid that
    the flat reads of its garbage rows run into (Note [Depthwise plane grids]): the padded plane covers the
    input and every window of the outputs."""
    (h, wd), (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = (x_shape[2:], w_shape[2:], stride, lo, dilation,
                                                                out_size)
    hp = max(h + ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(wd + pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    qh, qw = -(-hp // sh), -(-wp // sw)
    return qh, qw, ((kh - 1) * dh // sh) * qw + (kw - 1) * dw // sw + 1


def forward(x, w, b, stride, lo, dilation, out_size):
    """The depthwise convolution (N, O, *out_size) of x (N, C, H, W) with w (O, 1, kh, kw), plus b (O,)."""
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(w, dtype=x.dtype)
    b = jit.optional(b, x.dtype)
    out = allocator.empty((x.shape[0], w.shape[0]) + tuple(out_size), x.dtype)
    if 0 in out.shape:
        return out
    args = _geometry(stride, lo, dilation) + _grid(x.shape, w.shape, stride, lo, dilation, out_size)
    parallel.run(lambda c0, c1: _grid_forward(x, w, b, out, *args, c0, c1), x.shape[1],
                 out.nbytes * w.shape[2] * w.shape[3])
    return out


def backward(x, g, w, stride, lo, dilation, x_shape, need_x, need_w):
    """(input gradient or None, weight gradient or None) of the depthwise convolution of x (or of an input of
    x_shape when only the input gradient is wanted: x may be None) from the output gradient g, in one pass
    over each plane (Note [Depthwise plane grids])."""
    g = np.ascontiguousarray(g)
    w = np.ascontiguousarray(w, dtype=g.dtype)
    d = g.dtype
    gx = allocator.empty(tuple(x_shape), d) if need_x else None
    gw = np.zeros(w.shape, d) if need_w else None
    if 0 in g.shape or 0 in x_shape:
        if gx is not None:
            gx[...] = 0
        return gx, gw
    geo = _geometry(stride, lo, dilation)
    grid_x = need_x  # the input gradient on the grids
    if need_x and not np.isfinite(w).all():  # the grids' garbage zeros times inf/NaN: the row-wise loops
        parallel.run(lambda n0, n1: _input_grad(g, w, gx, *geo, n0, n1), g.shape[0], g.nbytes * w.shape[2] * w.shape[3])
        grid_x = False
    if grid_x or need_w:
        xs = np.ascontiguousarray(x, dtype=d) if need_w else gx  # (only its shape read without the weight's)
        args = geo + _grid(x_shape, w.shape, stride, lo, dilation, g.shape[2:])
        gx_arg, gw_arg = jit.optional(gx if grid_x else None, d, 4), jit.optional(gw, d, 4)
        parallel.run(lambda c0, c1: _grid_backward(xs, g, w, gx_arg, gw_arg, *args, c0, c1), x_shape[1],
                     g.nbytes * w.shape[2] * w.shape[3])
    return gx, gw


def input_grad(g, w, stride, lo, dilation, x_shape):
    """The input gradient (x_shape) of the depthwise convolution, from its output gradient g."""
    return backward(None, g, w, stride, lo, dilation, x_shape, True, False)[0]


def weight_grad(x, g, stride, lo, dilation, w_shape):
    """The weight gradient (w_shape: (O, 1, kh, kw)) of the depthwise convolution of x, from g."""
    w = np.zeros(w_shape, x.dtype)  # the shape and dtype only
    return backward(x, g, w, stride, lo, dilation, x.shape, False, True)[1]
