"""NumPy-specific helpers of the convolution, pooling and resampling kernels.

Note [Convolution layout]: a convolution is one GEMM per group, W (groups, O/groups, C/groups *
taps) @ cols, where cols is an im2col matrix copied from a strided window view (as_strided) of a
padded copy of the input. Which way cols is laid out decides how fast the copy runs and whether
the GEMM's result needs a layout copy, and the best choice depends on the output size (the
measurements sit with the thresholds in ember/_ops/conv.py):
- channel-major, batch-second: the input is copied to (C, N, *padded), cols read (C, *kernel, N,
  *out), reshaped (groups, C/groups * taps, N * positions); one GEMM for the whole batch, whose
  (O, N, *out) result is copied back to NCHW. The weight gradient always uses it from 24x24 up.
- channel-major, batch-last: (C, *padded, N) and cols (C, *kernel, *out, N); a tap's copy moves
  runs of out[-1] * N contiguous elements instead of out[-1], 2x faster overall at 16x16 and below.
- per sample: cols (N, C * taps, positions); the GEMM writes NCHW directly and a sample's matrix is
  still in cache when its GEMM reads it. Fastest forward from 32x32 up.
On 2+ threads every layout's GEMM runs in pieces, one per intra-op thread, with OpenBLAS on one
thread meanwhile (matmul_split, matmul_reduce, matmul_sum below; Note [BLAS pieces] in parallel.py).
The transposed scatter (col2im, for strided input gradients) is one strided add per kernel tap,
vectorised over channels, batch and positions. With ember[jit], the 2-D batch-last layout copies and col2im
are compiled loops (ember/_backend/layout_jit.py, col2im_jit.py; the measurements with LAYOUT_JIT_MIN below).
Forwards (strided too) and stride-1 input gradients of 16 to 64 channels run without im2col instead (Note [Implicit
GEMM], ember/_backend/conv_implicit.py: per-tap GEMMs accumulating with BLAS's beta = 1). Rejected, on Conv2d(64, 64, 3, padding=1) forward +
backward of 32x64x32x32 (medians): per-tap accumulation over 9 shifted flat views for the weight
gradient too (9 long-reduction GEMMs; again in conv_implicit.py's note); an NHWC (positions,
taps * C) im2col 192 vs 536 ms at 1 thread; an im2col over the flat padded layout (contiguous runs
of out[0] * padded[1:] per row, no padded copy): fwd/input/weight 22.0/24.0/26.3 vs 26.5/23.3/23.6 ms
at 2 threads on an idle Xeon, 53.2/47.1/54.0 vs 45.7/44.6/50.3 ms CPU time at 1 thread here (the grid
positions it computes and drops cost what the faster copy saves); Winograd F(2x2, 3x3) forward 69 vs
49 ms CPU time at 1 thread (its 16 GEMMs with K = C ran only 1.4x faster than im2col's one, and the
tile transforms, ~10 NumPy passes over 4x the input, cost 42 ms).
"""
import itertools
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import allocator, cblas, contiguous, jit, parallel

_scratch = threading.local()
_SCRATCH_LIMIT = 1 << 28  # keep at most 256 MB per thread between calls


def scratch(shape, dtype):
    """A transient array for an im2col matrix or a GEMM result that is consumed before the kernel
    returns, reused across calls: a fresh 10-100 MB array costs a page fault per 4 KB on first touch
    (glibc returns big blocks to the OS on free), measured at ~30% of an im2col copy. Valid until the
    next scratch() call in the same thread. One buffer serves every size: the caching allocator
    keeps a block per size bucket, which for the scratch of a batch-128 ResNet-8 step meant ~60 MB
    more at the step's peak (RSS +233 MB instead of +173 MB), for no time gained."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if nbytes > _SCRATCH_LIMIT:
        return allocator.empty(shape, dtype)
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.nbytes < nbytes:
        buf = np.empty(max(nbytes, 1), dtype=np.uint8)
        _scratch.buf = buf
    return buf[:nbytes].view(dtype).reshape(shape)


def conv_out_size(size, k, s, d, lo, hi):
    """Positions a window of k taps (dilation d, stride s) takes on size + lo + hi."""
    return (size + lo + hi - d * (k - 1) - 1) // s + 1


# im2col layouts (see Note [Convolution layout]); the names also say how a padded input is laid out
BATCH_SECOND = "batch_second"  # input (C, N, *S), cols (C, *kernel, N, *out)
BATCH_LAST = "batch_last"      # input (C, *S, N), cols (C, *kernel, *out, N)
PER_SAMPLE = "per_sample"      # input (N, C, *S), cols (N, C, *kernel, *out)


def _operand_order(ndim, layout):
    """The axis order of an (N, C, *S) array laid out for layout."""
    if layout == BATCH_LAST:
        return (1,) + tuple(range(2, ndim)) + (0,)
    if layout == BATCH_SECOND:
        return (1, 0) + tuple(range(2, ndim))
    return tuple(range(ndim))


# 2-D batch-last layout copies from LAYOUT_JIT_MIN elements take ember/_backend/layout_jit.py. NumPy's strided
# copy is slow when the rows it gathers lie a multiple of 4 KB apart (they share L1 cache sets: a sample's
# (C, H, W) plane of 16x32x32, 24x32x32, 64x12x12 floats), fine elsewhere. ms at 2 threads, batch 32, NumPy ->
# compiled, padded input / output gradient to (O, H, W, N) / GEMM result back to NCHW: 16x32x32 1.80 -> 0.27 /
# 1.25 -> 0.23 / 0.65 -> 0.19; 64x12x12 1.04 -> 0.23 / 1.06 -> 0.30 / 0.59 -> 0.21; 64x15x15 0.25 -> 0.20 /
# 0.19 -> 0.26 / 0.55 -> 0.17; 64x14x14 0.42 -> 0.30 / 0.32 -> 0.42 / 0.75 -> 0.25. So the output gradient's
# copy takes the kernel only when the sample stride is a multiple of 4 KB, the other two always.
LAYOUT_JIT_MIN = 1 << 12


def _kernels(name, a):
    """The compiled kernel module ember/_backend/<name>.py for a float32/float64 array a of LAYOUT_JIT_MIN
    elements, with ember[jit] installed and the switch on (Note [JIT kernels]); else None."""
    if a.dtype not in jit.DTYPES or a.size < LAYOUT_JIT_MIN:
        return None
    return jit.load(name)


def _batch_last_kernels(a, layout):
    """The compiled batch-last layout copies for a 4-D array a in the BATCH_LAST layout (as _kernels), or None."""
    return _kernels("layout_jit", a) if layout == BATCH_LAST and a.ndim == 4 else None


def padded(x, lo, hi, value=0, layout=PER_SAMPLE):
    """x (N, C, *S) as a fresh array padded by lo/hi per spatial dim with `value`, its axes in layout's
    order ((N, C, *padded) by default). Without padding x itself is returned, in that axis order
    (callers only read it)."""
    src = x.transpose(_operand_order(x.ndim, layout))
    if not any(lo) and not any(hi):
        return src
    first = 1 if layout == BATCH_LAST else 2  # the first spatial axis of src
    shape = list(src.shape)
    inner = [slice(None)] * x.ndim
    for i, (a, b, size) in enumerate(zip(lo, hi, x.shape[2:])):
        shape[first + i] += a + b
        inner[first + i] = slice(a, a + size)
    buf = allocator.empty(tuple(shape), x.dtype)
    interior = buf[tuple(inner)]

    kernels = _batch_last_kernels(x, layout)
    if kernels is not None:  # (N, C, H, W) -> (C, H, W, N): (N, W) blocks transposed, the borders filled first
        parallel.run(lambda i, j: np.copyto(buf[i:j], value, casting="unsafe"), buf.shape[0], buf.nbytes)
        kernels.swap_last(x.transpose(1, 2, 0, 3), interior)
        return buf

    def fill(i, j):  # np.full's fill, then the interior, on a slice of the leading axis
        np.copyto(buf[i:j], value, casting="unsafe")
        np.copyto(interior[i:j], src[i:j])
    parallel.run(fill, buf.shape[0], buf.nbytes)
    return buf


def tap_slices(kernel, stride, dilation, out):
    """(tap, slices) for every kernel tap: the slices select, from a padded (A, B, *S) buffer,
    the (A, B, *out) positions that tap reads."""
    ranges = [range(k) for k in kernel]
    for tap in itertools.product(*ranges):
        sl = tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, s, d, o in zip(tap, stride, dilation, out))
        yield tap, (slice(None), slice(None)) + sl


def windows(buf, kernel, stride, dilation, out, layout=BATCH_SECOND):
    """A read-only window view of a padded buffer: element [.., k..., .., o...] is the buffer at
    position o * stride + k * dilation. BATCH_SECOND: buf (A, B, *S) -> (A, *kernel, B, *out);
    BATCH_LAST: buf (A, *S, B) -> (A, *kernel, *out, B); PER_SAMPLE: buf (A, B, *S) -> (A, B, *kernel, *out)."""
    st = buf.strides
    spatial = st[1:-1] if layout == BATCH_LAST else st[2:]
    tap_strides = tuple(s * d for s, d in zip(spatial, dilation))
    pos_strides = tuple(s * t for s, t in zip(spatial, stride))
    kernel, out = tuple(kernel), tuple(out)
    if layout == BATCH_LAST:
        shape = buf.shape[:1] + kernel + out + buf.shape[-1:]
        strides = st[:1] + tap_strides + pos_strides + st[-1:]
    elif layout == PER_SAMPLE:
        shape = buf.shape[:2] + kernel + out
        strides = st[:2] + tap_strides + pos_strides
    else:
        shape = buf.shape[:1] + kernel + buf.shape[1:2] + out
        strides = st[:1] + tap_strides + st[1:2] + pos_strides
    return as_strided(buf, shape, strides, writeable=False)


def im2col(x, kernel, stride, dilation, lo, hi, out, groups, layout=BATCH_SECOND):
    """The im2col matrix of x (N, C, *S), in scratch memory: (groups, C/groups * taps, N * positions)
    with columns over (batch, position) for BATCH_SECOND or (position, batch) for BATCH_LAST, or
    (N, groups, C/groups * taps, positions) for PER_SAMPLE (see Note [Convolution layout])."""
    n, c = x.shape[:2]
    view = windows(padded(x, lo, hi, layout=layout), kernel, stride, dilation, out, layout)
    cols = scratch(view.shape, x.dtype)
    parallel.copyto(cols, view)
    rows = (c // groups) * int(np.prod(kernel))
    positions = int(np.prod(out))
    if layout == PER_SAMPLE:
        return cols.reshape(n, groups, rows, positions)
    return cols.reshape(groups, rows, n * positions)


def weight_per_sample(x, y, kernel, stride, dilation, lo, hi):
    """The weight gradient (O, C, *kernel) of a groups-1 convolution of x (N, C, *S) with the output gradient
    y (N, O, *out), one sample at a time: the sample's im2col matrix (C * taps, positions) is built in scratch
    memory and, still in cache, multiplied into the running sum (BLAS's beta = 1) with y's sample (O, positions)
    as it lies in NCHW (Note [Per-sample weight gradient] in ember/_ops/conv.py). x and y share a dtype cblas
    takes; the batch and the positions are not empty."""
    n, c = x.shape[:2]
    o = y.shape[1]
    positions = int(np.prod(y.shape[2:]))
    rows = c * int(np.prod(kernel))
    view = windows(padded(x, lo, hi), kernel, stride, dilation, y.shape[2:], PER_SAMPLE)  # (N, C, *kernel, *out)
    ys = np.ascontiguousarray(y).reshape(n, o, positions)
    acc = np.zeros((1, rows, o), x.dtype)  # the sum, transposed: cols @ y^T packs the long dimension better
    cols = scratch(view.shape[1:], x.dtype)
    for i in range(n):
        np.copyto(cols, view[i])
        cblas.gemm(x.dtype, rows, o, positions, cols.ctypes.data, positions, ys[i].ctypes.data, positions,
                   acc.ctypes.data, o, 1.0, trans_b=True)
    return swapped(acc, (o, c) + tuple(kernel))


def weight_gemm(yt, cols, w_shape):
    """The weight gradient yt (G, O/G, L) @ cols (G, C/G * taps, L)^T, written by one np.matmul (OpenBLAS's
    own threads) into a fresh array of w_shape (O, C/G, *kernel), which is that product's layout: no
    transposed copy (Note [Weight-gradient GEMM] in ember/_ops/conv.py)."""
    w = allocator.empty(tuple(w_shape), np.result_type(yt, cols))
    np.matmul(yt, cols.transpose(0, 2, 1), out=w.reshape(cols.shape[0], yt.shape[1], cols.shape[1]))
    return w


def matmul_split(a, b, out=None):
    """np.matmul(a, b) into out (or a fresh array): when b has a leading samples axis that a lacks
    ((O, C) @ (N, C, P), (G, M, K) @ (N, G, K, L)) the samples, else b's columns, are split across the
    intra-op threads (Note [BLAS pieces] in ember/_backend/parallel.py)."""
    if out is None:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        out = allocator.empty(shape, np.result_type(a, b))
    flops = 2 * out.size * a.shape[-1]
    if b.ndim > a.ndim:
        parallel.run_blas(lambda i, j: np.matmul(a, b[i:j], out=out[i:j]), b.shape[0], flops)
    else:
        parallel.run_blas(lambda i, j: np.matmul(a, b[..., i:j], out=out[..., i:j]), b.shape[-1], flops)
    return out


def matmul_reduce(a, bt):
    """a (G, M, L) @ bt (G, L, N) for a long reduction L (a weight gradient's batch and positions):
    on 2+ threads each intra-op thread multiplies a range of L and the partial products are summed
    (Note [BLAS pieces] in ember/_backend/parallel.py)."""
    g, m, length = a.shape
    n = bt.shape[2]
    partial = {}

    def piece(i, j):
        partial[i] = np.matmul(a[:, :, i:j], bt[:, i:j])
    parallel.run_blas(piece, length, 2 * g * m * n * length)
    res = partial.pop(0)
    for p in partial.values():
        res += p
    return res


def matmul_sum(a, bt):
    """sum over n of a[n] @ bt[n] for stacks a (N, M, L), bt (N, L, K) (a 1x1 convolution's weight
    gradient), the samples split across the intra-op threads (Note [BLAS pieces])."""
    partial = {}

    def piece(i, j):
        partial[i] = np.matmul(a[i:j], bt[i:j]).sum(axis=0)
    parallel.run_blas(piece, a.shape[0], 2 * a.size * bt.shape[2])
    res = partial.pop(0)
    for p in partial.values():
        res += p
    return res


def scatter_windows(cols, kernel, stride, dilation, lo, hi, spatial):
    """Transpose of a window view: cols (A, *kernel, B, *out) summed into a zero (A, B, *padded)
    buffer with one strided add per tap; returns the (A, B, *spatial) crop (a view)."""
    a = cols.shape[0]
    b = cols.shape[1 + len(kernel)]
    out = cols.shape[2 + len(kernel):]
    full = tuple(s + x + y for s, x, y in zip(spatial, lo, hi))
    buf = allocator.zeros((a, b) + full, cols.dtype)
    taps = list(tap_slices(kernel, stride, dilation, out))

    def add(start, stop):
        for tap, sl in taps:
            buf[(slice(start, stop),) + sl[1:]] += cols[(slice(start, stop),) + tap]
    parallel.run(add, a, cols.nbytes)
    inner = tuple(slice(x, x + s) for x, s in zip(lo, spatial))
    return buf[(slice(None), slice(None)) + inner]


def col2im(cols, x_shape, kernel, stride, dilation, lo, hi, out):
    """Transpose of im2col: cols (C * taps, N * positions) summed back into a fresh (N, C, *S) array."""
    n, c = x_shape[:2]
    kernels = _kernels("col2im_jit", cols) if len(x_shape) == 4 and cols.flags.c_contiguous else None
    if kernels is not None:
        return kernels.col2im(cols, x_shape, kernel, stride, dilation, lo, out)
    cols = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(out))
    crop = scatter_windows(cols, kernel, stride, dilation, lo, hi, x_shape[2:])
    return contiguous(crop.transpose((1, 0) + tuple(range(2, crop.ndim))))


def swapped(a, shape):
    """a (G, M, N) with its last two axes swapped, as a fresh C-contiguous array of shape (G * N * M elements;
    allocated so, not reshaped after, so that autograd can take it as .grad without a copy): NumPy's strided
    copy reads a column at a time (a 2304x256 float32 weight gradient: 1.3 ms); the compiled layout copy goes
    by tiles (0.5 ms)."""
    res = allocator.empty(tuple(shape), a.dtype)
    out = res.reshape(a.shape[0], a.shape[2], a.shape[1])
    kernels = _kernels("layout_jit", a)
    if kernels is None:
        np.copyto(out, a.transpose(0, 2, 1))
    else:
        for g in range(a.shape[0]):
            kernels.transpose(a[g], out[g])
    return res


def to_channel_major(y, groups, layout=BATCH_SECOND):
    """y (N, O, *P) copied to (groups, O/groups, N * positions), the layout of a GEMM operand, its
    columns over (batch, position), or (position, batch) for BATCH_LAST."""
    o = y.shape[1]
    kernels = _batch_last_kernels(y, layout)
    if kernels is not None and y.strides[0] % 4096 == 0:  # (N, O, H, W) -> (O, H, W, N), see LAYOUT_JIT_MIN
        t = allocator.empty(y.shape[1:] + y.shape[:1], y.dtype)
        kernels.swap_last(y.transpose(1, 2, 0, 3), t)
    else:
        t = contiguous(y.transpose(_operand_order(y.ndim, layout)))
    return t.reshape(groups, o // groups, -1)


def from_channel_major(y, n, out, bias=None, layout=BATCH_SECOND):
    """y (O, N * positions) back to a fresh (N, O, *out) array, adding bias (O,) on the way; y's
    columns run over (batch, position), or (position, batch) for BATCH_LAST."""
    o = y.shape[0]
    nd = len(out)
    if layout == BATCH_LAST:
        src = y.reshape((o,) + tuple(out) + (n,)).transpose((nd + 1, 0) + tuple(range(1, nd + 1)))
    else:
        src = y.reshape((o, n) + tuple(out)).transpose((1, 0) + tuple(range(2, 2 + nd)))
    res = allocator.empty((n, o) + tuple(out), y.dtype)
    kernels = _batch_last_kernels(res, layout)
    if kernels is not None:  # (O, H, W, N) -> (N, O, H, W)
        kernels.swap_last(y.reshape((o,) + tuple(out) + (n,)), res.transpose(1, 2, 0, 3), bias)
    elif bias is None:
        parallel.copyto(res, src)
    else:
        b = bias.reshape((o,) + (1,) * nd).astype(y.dtype, copy=False)
        parallel.run(lambda i, j: np.add(src[i:j], b, out=res[i:j]), n, res.nbytes)
    return res


# ---- separable per-axis maps (see Note [Separable maps] in ember/_ops/sampling.py) ------------


_DENSE_LIMIT = 1 << 16  # in_size * out_size up to which a map is applied as a small dense GEMM
_MAX_RUNS = 8


def _runs(idx):
    """idx as a few runs (dst_start, src_start, step, length) with step -1, 0 or 1, or None."""
    runs = []
    o = 0
    n = idx.size
    while o < n:
        step = int(idx[o + 1] - idx[o]) if o + 1 < n else 1
        if step not in (-1, 0, 1):
            step = 1
        length = 1
        while o + length < n and idx[o + length] - idx[o + length - 1] == step:
            length += 1
        runs.append((o, int(idx[o]), step, length))
        if len(runs) > _MAX_RUNS:
            return None
        o += length
    return runs


class AxisMap:
    """One per-axis linear map: index (T, O) into an axis of length in_size, weight (T, O) or None.

    Applied as the cheapest of: a few slice copies (padding: runs of consecutive positions), np.repeat
    (nearest upsampling by an integer factor), a small dense GEMM along the axis (interpolation and
    adaptive pooling of modest sizes), or per-tap gathers (large sizes)."""
    __slots__ = ("axis", "index", "weight", "in_size", "runs", "repeat", "dense", "_groups")

    def __init__(self, axis, index, weight, in_size):
        self.axis = axis
        index = np.asarray(index, dtype=np.int64)
        self.index = index if index.ndim == 2 else index.reshape(1, -1)  # (taps, out)
        self.weight = None if weight is None else np.asarray(weight).reshape(self.index.shape)
        self.in_size = in_size
        self._groups = None
        taps, out = self.index.shape
        self.runs = _runs(self.index[0]) if weight is None and taps == 1 and out else None
        self.repeat = None
        if weight is None and taps == 1 and self.runs is None and in_size and out % in_size == 0:
            k = out // in_size
            if np.array_equal(self.index[0], np.repeat(np.arange(in_size), k)):
                self.repeat = k
        self.dense = None
        if weight is not None and in_size * out <= _DENSE_LIMIT:
            m = np.zeros((out, in_size), dtype=self.weight.dtype)
            cols = np.arange(out)
            for t in range(taps):
                np.add.at(m, (cols, self.index[t]), self.weight[t])
            self.dense = m

    def _bcast(self, w, ndim):
        return w.reshape((w.shape[0],) + (1,) * (ndim - self.axis - 1))

    def _matrix(self, x, m):
        """out[.., o, ..] = sum_i m[o, i] * x[.., i, ..] along self.axis, as GEMMs."""
        m = m.astype(x.dtype, copy=False)
        lead = int(np.prod(x.shape[:self.axis]))
        rest = int(np.prod(x.shape[self.axis + 1:]))
        shape = x.shape[:self.axis] + (m.shape[0],) + x.shape[self.axis + 1:]
        if rest == 1:
            return np.matmul(x.reshape(lead, x.shape[self.axis]), m.T).reshape(shape)
        x3 = np.ascontiguousarray(x).reshape(lead, x.shape[self.axis], rest)
        return np.matmul(m, x3).reshape(shape)

    def _slice(self, start, step, length):
        if step == 1:
            return slice(start, start + length)
        if step == -1:
            return slice(start, start - length if start - length >= 0 else None, -1)
        return slice(start, start + 1)

    def gather(self, x):
        axis = self.axis
        lead = (slice(None),) * axis
        if self.runs is not None:
            shape = x.shape[:axis] + (self.index.shape[1],) + x.shape[axis + 1:]
            out = np.empty(shape, dtype=x.dtype)
            for dst, src, step, length in self.runs:
                out[lead + (slice(dst, dst + length),)] = x[lead + (self._slice(src, step, length),)]
            return out
        if self.repeat is not None:
            return np.repeat(x, self.repeat, axis=axis)
        if self.dense is not None:
            return self._matrix(x, self.dense)
        out = np.take(x, self.index[0], axis=axis)
        if self.weight is None:
            return out
        out *= self._bcast(self.weight[0].astype(x.dtype, copy=False), x.ndim)
        for t in range(1, self.index.shape[0]):
            out += np.take(x, self.index[t], axis=axis) * self._bcast(self.weight[t].astype(x.dtype, copy=False), x.ndim)
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
        axis = self.axis
        lead = (slice(None),) * axis
        shape = list(g.shape)
        shape[axis] = self.in_size
        if self.repeat is not None:
            split = g.shape[:axis] + (self.in_size, self.repeat) + g.shape[axis + 1:]
            return g.reshape(split).sum(axis=axis + 1)
        if self.dense is not None:
            return self._matrix(g, self.dense.T)
        out = np.zeros(shape, dtype=g.dtype)
        if self.runs is not None:
            for dst, src, step, length in self.runs:
                part = g[lead + (slice(dst, dst + length),)]
                if step == 0:
                    part = part.sum(axis=axis, keepdims=True)
                out[lead + (self._slice(src, step, length if step else 1),)] += part
            return out
        for t, (order, starts, targets) in enumerate(self._grouping()):
            if starts is None:
                continue
            v = g if self.weight is None else g * self._bcast(self.weight[t].astype(g.dtype, copy=False), g.ndim)
            if order is not None:
                v = np.take(v, order, axis=axis)
            out[lead + (targets,)] += np.add.reduceat(v, starts, axis=axis)
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
    return _padded_source(x, dx, size, padding_mode, align_corners)


def _padded_source(x, dx, size, padding_mode, align_corners):
    """torch's compute_coordinates on source coordinates x (reflect, then clip), with dx carried along."""
    ft = x.dtype.type
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


def bicubic_taps(ix, iy, h, w, padding_mode, align_corners):
    """The 16 taps of bicubic grid sampling around (ix, iy) (unnormalized, unpadded source coordinates):
    [(j, i, flat index, in-bounds mask)] for rows floor(iy)-1+j and columns floor(ix)-1+i, each coordinate
    passed through the padding mode as torch's get_value_bounded does."""
    x0 = np.floor(ix)
    y0 = np.floor(iy)
    taps = []
    for j in range(4):
        ty = _padded_source(y0 - 1 + j, np.zeros_like(y0), h, padding_mode, align_corners)[0].astype(np.int64)
        for i in range(4):
            tx = _padded_source(x0 - 1 + i, np.zeros_like(x0), w, padding_mode, align_corners)[0].astype(np.int64)
            ok = (tx >= 0) & (tx < w) & (ty >= 0) & (ty < h)
            taps.append((j, i, np.clip(ty, 0, h - 1) * w + np.clip(tx, 0, w - 1), ok))
    return taps


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


def take_taps(flat, idx):
    """flat (n, c, voxels) at idx (n, points), the same positions for every channel: (n, c, points), np.take a
    sample at a time (take_along_axis's broadcast fancy index is ~5x slower)."""
    n, c, _ = flat.shape
    out = np.empty((n, c, idx.shape[1]), flat.dtype)
    for i in range(n):
        np.take(flat[i], idx[i], axis=1, out=out[i])
    return out


def tap_sums(g, idx, voxels):
    """take_taps's adjoint: g (n, c, points) summed at idx into a flat (n * c * voxels) float64 array (one
    np.bincount over sample, channel and voxel positions)."""
    n, c, _ = g.shape
    at = (np.arange(n * c).reshape(n, c, 1) * voxels + idx[:, None, :]).reshape(-1)
    return np.bincount(at, weights=g.reshape(-1), minlength=n * c * voxels)


def grid_sample_forward(x, grid, mode, padding_mode, align_corners):
    n, c, h, w = x.shape
    ix, _, iy, _ = _grid_setup(x, grid, padding_mode, align_corners)
    flat = x.reshape(n, c, h * w)
    out = np.zeros((n, c, ix.shape[1]), dtype=x.dtype)
    for idx, wgt, ok, _, _ in _corners(ix, iy, h, w, mode):
        vals = take_taps(flat, idx)
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
    for idx, wgt, ok, dwx, dwy in _corners(ix, iy, h, w, mode):
        if need_input:
            gx += tap_sums(g * np.where(ok, wgt, 0)[:, None, :], idx, h * w)
        if need_grid and dwx is not None:
            vals = take_taps(flat, idx)
            s = np.where(ok, np.einsum("ncp,ncp->np", vals, g), 0)
            gix += s * dwx
            giy += s * dwy
    gx = np.zeros(x.shape, x.dtype) if gx is None else gx.astype(x.dtype).reshape(x.shape)
    ggrid = np.stack([gix * dix, giy * diy], axis=-1).reshape(grid.shape).astype(grid.dtype)
    return gx, ggrid
