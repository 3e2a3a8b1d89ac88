"""NumPy-specific helpers of the convolution, pooling and resampling kernels.

Note [Convolution layout]: a convolution is one GEMM per group. The input is copied once into a
channel-major, batch-second buffer (C, N, *padded) so that the im2col matrix, a strided window
view of that buffer taken with as_strided, reads as (C, *kernel, N, *out): reshaped to
(groups, C/groups * taps, N * positions) it is the right operand of a single GEMM
W (groups, O/groups, C/groups * taps) @ cols. The transposed scatter (col2im) is one strided add
per kernel tap, vectorised over channels, batch and positions. Measured against a per-tap
accumulation over shifted flat views (no im2col matrix, 9 small GEMMs plus adds) and against a
per-sample batched GEMM, this layout was the fastest for forward + backward (report in the PR).
"""
import itertools

import numpy as np
from numpy.lib.stride_tricks import as_strided


def conv_out_size(size, k, s, d, lo, hi):
    """Positions a window of k taps (dilation d, stride s) takes on size + lo + hi."""
    return (size + lo + hi - d * (k - 1) - 1) // s + 1


def padded(x, lo, hi, value=0, batch_second=False):
    """x (N, C, *S) as a fresh array padded by lo/hi per spatial dim with `value`; with
    batch_second the copy is laid out (C, N, *padded). Without padding and in the natural
    layout x itself is returned (callers only read it)."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    if not any(lo) and not any(hi):
        return x.transpose((1, 0) + tuple(range(2, x.ndim))) if batch_second else x
    shape = tuple(s + a + b for s, a, b in zip(spatial, lo, hi))
    lead = (c, n) if batch_second else (n, c)
    if value == 0:
        buf = np.zeros(lead + shape, dtype=x.dtype)
    else:
        buf = np.full(lead + shape, value, dtype=x.dtype)
    inner = tuple(slice(a, a + s) for a, s in zip(lo, spatial))
    src = x.transpose((1, 0) + tuple(range(2, x.ndim))) if batch_second else x
    buf[(slice(None), slice(None)) + inner] = src
    return buf


def tap_slices(kernel, stride, dilation, out):
    """(tap, slices) for every kernel tap: the slices select, from a padded (A, B, *S) buffer,
    the (A, B, *out) positions that tap reads."""
    ranges = [range(k) for k in kernel]
    for tap in itertools.product(*ranges):
        sl = tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, s, d, o in zip(tap, stride, dilation, out))
        yield tap, (slice(None), slice(None)) + sl


def windows(buf, kernel, stride, dilation, out):
    """A (A, *kernel, B, *out) read-only view of a padded (A, B, *S) buffer: element
    [a, k..., b, o...] is buf[a, b, o * stride + k * dilation]."""
    st = buf.strides
    shape = buf.shape[:1] + tuple(kernel) + buf.shape[1:2] + tuple(out)
    tap_strides = tuple(s * d for s, d in zip(st[2:], dilation))
    pos_strides = tuple(s * t for s, t in zip(st[2:], stride))
    strides = st[:1] + tap_strides + st[1:2] + pos_strides
    return as_strided(buf, shape, strides, writeable=False)


def im2col(x, kernel, stride, dilation, lo, hi, out, groups):
    """The (groups, C/groups * taps, N * positions) im2col matrix of x (N, C, *S)."""
    n, c = x.shape[:2]
    buf = padded(x, lo, hi, batch_second=True)
    view = windows(buf, kernel, stride, dilation, out)
    taps = int(np.prod(kernel))
    positions = n * int(np.prod(out))
    return np.ascontiguousarray(view).reshape(groups, (c // groups) * taps, positions)


def scatter_windows(cols, kernel, stride, dilation, lo, hi, spatial):
    """Transpose of a window view: cols (A, *kernel, B, *out) summed into a zero (A, B, *padded)
    buffer with one strided add per tap; returns the (A, B, *spatial) crop (a view)."""
    a = cols.shape[0]
    b = cols.shape[1 + len(kernel)]
    out = cols.shape[2 + len(kernel):]
    full = tuple(s + x + y for s, x, y in zip(spatial, lo, hi))
    buf = np.zeros((a, b) + full, dtype=cols.dtype)
    for tap, sl in tap_slices(kernel, stride, dilation, out):
        buf[sl] += cols[(slice(None),) + tap]
    inner = tuple(slice(x, x + s) for x, s in zip(lo, spatial))
    return buf[(slice(None), slice(None)) + inner]


def col2im(cols, x_shape, kernel, stride, dilation, lo, hi, out):
    """Transpose of im2col: cols (C * taps, N * positions) summed back into a fresh (N, C, *S) array."""
    n, c = x_shape[:2]
    cols = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(out))
    crop = scatter_windows(cols, kernel, stride, dilation, lo, hi, x_shape[2:])
    return np.ascontiguousarray(crop.transpose((1, 0) + tuple(range(2, crop.ndim))))


def to_channel_major(y, groups):
    """y (N, O, *P) copied to (groups, O/groups, N * positions), the layout of a GEMM operand."""
    n, o = y.shape[:2]
    t = np.ascontiguousarray(y.transpose((1, 0) + tuple(range(2, y.ndim))))
    return t.reshape(groups, o // groups, -1)


def from_channel_major(y, n, out, bias=None):
    """y (O, N * positions) back to a fresh (N, O, *out) array, adding bias (O,) on the way."""
    o = y.shape[0]
    src = y.reshape((o, n) + tuple(out)).transpose((1, 0) + tuple(range(2, 2 + len(out))))
    res = np.empty((n, o) + tuple(out), dtype=y.dtype)
    if bias is None:
        np.copyto(res, src)
    else:
        np.add(src, bias.reshape((o,) + (1,) * len(out)).astype(y.dtype, copy=False), out=res)
    return res


# ---- separable per-axis maps (see Note [Separable maps] in ember/_ops/sampling.py) ------------


class AxisMap:
    """One per-axis linear map: index (T, O) into an axis of length in_size, weight (T, O) or None."""
    __slots__ = ("axis", "index", "weight", "in_size", "_groups")

    def __init__(self, axis, index, weight, in_size):
        self.axis = axis
        self.index = np.asarray(index, dtype=np.int64).reshape(-1, np.shape(index)[-1])
        self.weight = None if weight is None else np.asarray(weight).reshape(self.index.shape)
        self.in_size = in_size
        self._groups = None

    def _bcast(self, w, ndim):
        return w.reshape((w.shape[0],) + (1,) * (ndim - self.axis - 1))

    def gather(self, x):
        out = np.take(x, self.index[0], axis=self.axis)
        if self.weight is None:
            return out
        out *= self._bcast(self.weight[0].astype(x.dtype, copy=False), x.ndim)
        for t in range(1, self.index.shape[0]):
            out += np.take(x, self.index[t], axis=self.axis) * self._bcast(
                self.weight[t].astype(x.dtype, copy=False), x.ndim)
        return out

    def _grouping(self):
        """Per tap: (order, starts, targets) so that the scatter is a reduceat over sorted indices."""
        if self._groups is None:
            groups = []
            for idx in self.index:
                order = np.argsort(idx, kind="stable")
                srt = idx[order]
                if srt.size == 0:
                    groups.append((None, None, None))
                    continue
                starts = np.flatnonzero(np.concatenate(([True], srt[1:] != srt[:-1])))
                monotone = bool(np.all(order == np.arange(order.size)))
                groups.append((None if monotone else order, starts, srt[starts]))
            self._groups = groups
        return self._groups

    def scatter(self, g):
        """The transpose of gather: g's entries summed back to the positions they were read from."""
        shape = list(g.shape)
        shape[self.axis] = self.in_size
        out = np.zeros(shape, dtype=g.dtype)
        lead = (slice(None),) * self.axis
        for t, (order, starts, targets) in enumerate(self._grouping()):
            if starts is None:
                continue
            v = g if self.weight is None else g * self._bcast(self.weight[t].astype(g.dtype, copy=False), g.ndim)
            if order is not None:
                v = np.take(v, order, axis=self.axis)
            out[lead + (targets,)] += np.add.reduceat(v, starts, axis=self.axis)
        return out


# ---- grid_sample (torch's grid_sampler_2d, CPU) ------------------------------------------------


def _grid_source(coord, size, padding_mode, align_corners):
    """torch's grid_sampler_compute_source_index and the derivative of the result w.r.t. coord."""
    ft = coord.dtype.type
    if align_corners:
        x = (coord + 1) / 2 * ft(size - 1)
        dx = np.full(coord.shape, ft(size - 1) / 2, dtype=coord.dtype)
    else:
        x = ((coord + 1) * ft(size) - 1) / 2
        dx = np.full(coord.shape, ft(size) / 2, dtype=coord.dtype)
    if padding_mode == "reflection":
        low, high = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if low == high:
            return np.zeros_like(x), np.zeros_like(dx)
        lo = ft(low / 2)
        span = ft((high - low) / 2)
        x = x - lo
        sign = np.where(x < 0, ft(-1), ft(1))
        x = np.abs(x)
        extra = np.fmod(x, span)
        flips = np.floor(x / span)
        even = (flips % 2) == 0
        x = np.where(even, extra + lo, span - extra + lo)
        dx = dx * np.where(even, sign, -sign)
    if padding_mode in ("border", "reflection"):
        inside = (x > 0) & (x < size - 1)
        dx = np.where(inside, dx, ft(0))
        x = np.clip(x, ft(0), ft(size - 1))
    return x, dx


def _corners(ix, iy, h, w, mode):
    """(flat index, weight, in-bounds mask, dweight/dix, dweight/diy) per sampled corner."""
    if mode == "nearest":
        nx = np.rint(ix).astype(np.int64)
        ny = np.rint(iy).astype(np.int64)
        ok = (nx >= 0) & (nx < w) & (ny >= 0) & (ny < h)
        one = np.ones_like(ix)
        return [(np.clip(ny, 0, h - 1) * w + np.clip(nx, 0, w - 1), one, ok, None, None)]
    x0 = np.floor(ix)
    y0 = np.floor(iy)
    fx = ix - x0
    fy = iy - y0
    x0 = x0.astype(np.int64)
    y0 = y0.astype(np.int64)
    corners = []
    for cy, cx, wgt, dwx, dwy in ((0, 0, (1 - fx) * (1 - fy), -(1 - fy), -(1 - fx)),
                                   (0, 1, fx * (1 - fy), 1 - fy, -fx),
                                   (1, 0, (1 - fx) * fy, -fy, 1 - fx),
                                   (1, 1, fx * fy, fy, fx)):
        px = x0 + cx
        py = y0 + cy
        ok = (px >= 0) & (px < w) & (py >= 0) & (py < h)
        corners.append((np.clip(py, 0, h - 1) * w + np.clip(px, 0, w - 1), wgt, ok, dwx, dwy))
    return corners


def _grid_setup(x, grid, padding_mode, align_corners):
    n, c, h, w = x.shape
    ix, dix = _grid_source(grid[..., 0].reshape(n, -1), w, padding_mode, align_corners)
    iy, diy = _grid_source(grid[..., 1].reshape(n, -1), h, padding_mode, align_corners)
    return ix, dix, iy, diy


def grid_sample_forward(x, grid, mode, padding_mode, align_corners):
    n, c, h, w = x.shape
    ix, _, iy, _ = _grid_setup(x, grid, padding_mode, align_corners)
    flat = x.reshape(n, c, h * w)
    out = np.zeros((n, c, ix.shape[1]), dtype=x.dtype)
    for idx, wgt, ok, _, _ in _corners(ix, iy, h, w, mode):
        vals = np.take_along_axis(flat, idx[:, None, :], axis=2)
        out += vals * np.where(ok, wgt, 0).astype(x.dtype)[:, None, :]
    return out.reshape((n, c) + grid.shape[1:3])


def grid_sample_backward(g, x, grid, mode, padding_mode, align_corners, need_input, need_grid):
    n, c, h, w = x.shape
    ix, dix, iy, diy = _grid_setup(x, grid, padding_mode, align_corners)
    g = g.reshape(n, c, -1)
    flat = x.reshape(n, c, h * w)
    gx = np.zeros(n * c * h * w, dtype=np.float64) if need_input else None
    gix = np.zeros(ix.shape, dtype=x.dtype)
    giy = np.zeros(iy.shape, dtype=x.dtype)
    planes = (np.arange(n * c) * (h * w)).reshape(n, c, 1)
    for idx, wgt, ok, dwx, dwy in _corners(ix, iy, h, w, mode):
        if need_input:
            weights = g * np.where(ok, wgt, 0)[:, None, :]
            gx += np.bincount((planes + idx[:, None, :]).ravel(), weights=weights.ravel(), minlength=gx.size)
        if need_grid and dwx is not None:
            vals = np.take_along_axis(flat, idx[:, None, :], axis=2)
            s = np.where(ok, np.einsum("ncp,ncp->np", vals, g), 0)
            gix += s * dwx
            giy += s * dwy
    gx = np.zeros(x.shape, x.dtype) if gx is None else gx.astype(x.dtype).reshape(x.shape)
    ggrid = np.stack([gix * dix, giy * diy], axis=-1).reshape(grid.shape).astype(grid.dtype)
    return gx, ggrid
