"""Depthwise convolution and window maxima in a flat, channel-major phase layout (NumPy).

Used by conv (groups == channels) and by max pooling; see Note [Depthwise flat layout].
"""
import functools
import itertools

import numpy as np

from . import allocator, conv_numpy, depthwise_dense, parallel

# Note [Depthwise flat layout]: a depthwise convolution (one input channel per group) is K
# multiply-adds per output, too little work for a GEMM. Done as per-tap products of strided 4-D
# views, NumPy spends as long dispatching its short inner loops as computing. So the input is laid
# out channel-major, every channel one flat row holding its N planes one after another, split into
# stride phases (space-to-depth: padded position q*s + p goes to phase p at q). Tap k then reads one
# phase at one flat offset for *every* output position of a channel: a long contiguous slice, so a
# tap is one multiply by a per-channel weight column and one add per block of channels. Outputs
# whose window straddles a plane boundary are garbage and are cropped. The input gradient gathers
# the same way into the phase rows (each phase row from the gradient rows shifted back by its taps'
# offsets; measured ~15% faster than scattering into zeroed rows, MobileNetV2 shapes); the weight
# gradient is one row-wise dot product per tap.
# Measured on 32x192x28x28 (3x3): ~5x faster than per-tap products of 4-D views, and 25% faster than
# the same flat scheme in sample-major rows with precomputed weight planes.

# Note [Depthwise one split]: a forward is three passes per channel (the phase rows, the taps, the
# crop) and a backward four (the gradient rows, the input gradient's taps, the gather back to
# (N, C, *S), the weight gradient's taps), each touching only its own channels' rows. With a channel
# multiplier of 1, input and output channel ranges coincide, so one split over channel ranges runs
# them all, one range per intra-op thread: one hand-off per kernel instead of up to four, and the
# crops and layout copies, which split on their own only from 4 MB (Note [Split threshold]), run on
# both threads with the taps. On one thread the work is the same as stage by stage.

# Note [Depthwise phases kept]: the weight gradient reads the same phase rows of x as the forward.
# When the weight requires grad, the forward keeps them for the backward (Convolution saves them),
# and a first-order backward builds g's channel rows once for both gradients: in a MobileNetV2-style
# step that removed one phase split and one gradient layout per depthwise layer (~8% of the step).
# The rows are input-sized (plus padding), held from forward to backward, in pool blocks (Note
# [Caching allocator]) whatever their size: from glibc's heap, a step's held rows pushed its free
# top past the trim threshold (Note [Freed memory]), and every step page-faulted ~64 MB back in
# (16k faults, +30% CPU time on that step); from the pool, the next step reuses them.

_rowdot = getattr(np, "vecdot", None)
# elements per block (2 MB of float32): 5-10% faster than 2^17 on MobileNet's shapes, 2^20 slower;
# below 2^15 NumPy's per-call overhead dominates (2^13: 3x slower)
_BLOCK = 1 << 19


def _rowdot_fallback(a, b):
    return np.einsum("ij,ij->i", a, b)


if _rowdot is None:
    _rowdot = _rowdot_fallback


class DepthwisePlan:
    """Geometry of one depthwise convolution in the flat phase layout."""

    def __init__(self, x_shape, kernel, stride, dilation, lo, hi, mult):
        self.n, self.c = x_shape[:2]
        self.spatial = tuple(x_shape[2:])
        self.mult = mult
        self.lo = tuple(lo)
        self.hi = tuple(hi)
        self.stride = tuple(stride)
        self.kernel = tuple(kernel)
        self.dilation = tuple(dilation)
        padded_sizes = [s + a + b for s, a, b in zip(self.spatial, lo, hi)]
        self.out = tuple((p - d * (k - 1) - 1) // st + 1 for p, k, st, d in
                         zip(padded_sizes, kernel, stride, dilation))
        self.q = tuple(-(-p // st) for p, st in zip(padded_sizes, stride))  # phase grid
        self.row = self.n * int(np.prod(self.q))  # one channel: its N planes of the phase grid
        qstrides = [int(np.prod(self.q[i + 1:])) for i in range(len(self.q))]
        self.phases = list(itertools.product(*[range(s) for s in stride]))
        phase_index = {p: i for i, p in enumerate(self.phases)}
        self.taps = []
        for tap in itertools.product(*[range(k) for k in kernel]):
            shift = [t * d for t, d in zip(tap, dilation)]
            ph = phase_index[tuple(v % s for v, s in zip(shift, stride))]
            off = sum((v // s) * qs for v, s, qs in zip(shift, stride, qstrides))
            self.taps.append((ph, off))
        self.tail = max(off for _, off in self.taps)

    @functools.cached_property
    def dense(self):
        """The plane matrices of a small-plane convolution (Note [Depthwise plane matrices]), or None."""
        return depthwise_dense.plane_matrix(self)

    def _phase_slices(self, p):
        """(phase-grid slices, input slices) of the input positions that land in phase p."""
        qs, xs = [], []
        for pi, s, a, size, q in zip(p, self.stride, self.lo, self.spatial, self.q):
            q0 = max(0, -(-(a - pi) // s))
            i0 = q0 * s + pi - a
            count = max(0, min(q - q0, -(-(size - i0) // s)))
            qs.append(slice(q0, q0 + count))
            xs.append(slice(i0, i0 + s * (count - 1) + 1 if count else i0, s))
        return tuple(qs), tuple(xs)

    def _grid(self, buf, i):
        return buf[i, :, :self.row].reshape((buf.shape[1], self.n) + self.q)

    def _phase_views(self, buf, x):
        """(phase-grid view, input view) pairs, both (C, N, ...): the positions of x (N, C, *S) that
        each phase of buf (phases, C, row + tail) holds."""
        xt = x.transpose((1, 0) + tuple(range(2, x.ndim)))
        lead = (slice(None), slice(None))
        views = []
        for i, p in enumerate(self.phases):
            qs, xs = self._phase_slices(p)
            views.append((self._grid(buf, i)[lead + qs], xt[lead + xs]))
        return views

    def _phase_buffer(self, dtype, held=False):
        """An uninitialised (phases, C, row + tail) buffer; held: kept until the backward, from the pool
        (see Note [Depthwise phases kept])."""
        shape = (len(self.phases), self.c, self.row + self.tail)
        if held and allocator.enabled:
            return allocator.pooled(shape, dtype, allocator.nbytes(shape, np.dtype(dtype).itemsize))
        return allocator.empty(shape, dtype)

    def _phases_in(self, buf, x, fill):
        """part(start, stop) writing channels start:stop of x (N, C, *S) into buf as to_phases does."""
        views = self._phase_views(buf, x)

        def part(start, stop):  # the fill, then the copies, for a range of channels
            np.copyto(buf[:, start:stop], fill, casting="unsafe")
            for grid, xv in views:
                grid[start:stop] = xv[start:stop]
        return part

    def _phases_out(self, buf, x):
        """part(start, stop) writing channels start:stop of buf's phase rows back into x (N, C, *S)."""
        views = self._phase_views(buf, x)

        def part(start, stop):
            for grid, xv in views:
                xv[start:stop] = grid[start:stop]
        return part

    def to_phases(self, x, fill=0, held=False):
        """x (N, C, *S) -> (phases, C, row + tail): channel rows per phase, padded with `fill`; held: kept
        until the backward (see Note [Depthwise phases kept])."""
        buf = self._phase_buffer(x.dtype, held)
        parallel.run(self._phases_in(buf, x, fill), self.c, buf.nbytes)
        return buf

    def from_phases(self, buf):
        """The transpose of to_phases: (phases, C, row + tail) -> a fresh (N, C, *S) array."""
        x = allocator.empty((self.n, self.c) + self.spatial, buf.dtype)
        parallel.run(self._phases_out(buf, x), self.c, x.nbytes)
        return x

    def _blocks(self, start, stop):
        """(c0, c1, a, b): blocks of whole channel rows, or pieces of one row when a row is long."""
        if self.row <= _BLOCK:
            cb = max(1, _BLOCK // self.row)
            return [(c, min(stop, c + cb), 0, self.row) for c in range(start, stop, cb)]
        return [(c, c + 1, a, min(self.row, a + _BLOCK)) for c in range(start, stop) for a in range(0, self.row, _BLOCK)]

    def _scratch_blocks(self, start, stop, *dtypes):
        """(c0, c1, a, b, *scratch) for each of _blocks: scratch arrays shaped like the block, one per
        dtype, reused from block to block."""
        bufs = [np.empty(_BLOCK, dtype=d) for d in dtypes]
        for c0, c1, a, b in self._blocks(start, stop):
            shape = (c1 - c0, b - a)
            yield (c0, c1, a, b) + tuple(buf[:shape[0] * shape[1]].reshape(shape) for buf in bufs)

    def _each_channel_range(self, channels, parts, itemsize):
        """Each of parts(start, stop), in order, over channel ranges, one range per intra-op thread (see
        Note [Depthwise one split]): every kernel below writes only the rows of its own channels, so the
        ranges run concurrently."""
        def body(start, stop):
            for part in parts:
                part(start, stop)
        parallel.run(body, channels, channels * self.row * itemsize * len(self.taps))

    def forward(self, x, w, bias, keep=False):
        """The convolution (N, C*mult, *out); with keep, (it, the phase rows of x) so that the weight
        gradient need not build them again (see Note [Depthwise phases kept]), or (it, x) for a plan
        with plane matrices (Note [Depthwise plane matrices])."""
        if self.dense is not None:
            taps = w.reshape(self.c, -1)
            if depthwise_dense.usable(x, taps):
                out = self.dense.forward(x, taps, bias)
            else:
                out = self._forward(x, w, bias, False)
            return (out, x) if keep else out
        return self._forward(x, w, bias, keep)

    def _forward(self, x, w, bias, keep):
        channels = self.c * self.mult
        parts = []
        if self.mult > 1:  # input channel ranges are not output ones: the phase rows first, on their own
            src = np.repeat(self.to_phases(x), self.mult, axis=1)
        else:
            src = self._phase_buffer(x.dtype, keep)
            parts.append(self._phases_in(src, x, 0))
        taps = w.reshape(channels, -1)
        y = np.empty((channels, self.row), dtype=x.dtype)
        out = np.empty((self.n, channels) + self.out, dtype=x.dtype)

        def part(start, stop):
            for c0, c1, a, b, t in self._scratch_blocks(start, stop, x.dtype):
                yb = y[c0:c1, a:b]
                for k, (ph, off) in enumerate(self.taps):
                    wk = taps[c0:c1, k:k + 1]
                    if k == 0:
                        np.multiply(src[ph, c0:c1, a + off:b + off], wk, out=yb)
                    else:
                        np.multiply(src[ph, c0:c1, a + off:b + off], wk, out=t)
                        yb += t
        parts += [part, self._crop(y, bias, out)]
        self._each_channel_range(channels, parts, y.itemsize)
        return (out, src) if keep else out

    def _valid_rows(self, rows, out=None):
        """The (channels, N, *out) view of channel rows at the outputs' positions (the first `out`,
        default all, of each phase-grid dim)."""
        grid = rows.reshape((rows.shape[0], self.n) + self.q)
        return grid[(slice(None), slice(None)) + tuple(slice(0, o) for o in (out or self.out))]

    def _valid(self, rows):
        valid = self._valid_rows(rows)
        return valid.transpose((1, 0) + tuple(range(2, valid.ndim)))  # (N, channels, *out)

    def _crop(self, y, bias, out):
        """part(start, stop) writing channels start:stop of the rows y, at the outputs' positions, plus
        bias, into out (N, channels, *out)."""
        valid = self._valid_rows(y)
        dst = out.transpose((1, 0) + tuple(range(2, out.ndim)))
        if bias is not None:
            bias = bias.reshape((-1,) + (1,) * (len(self.out) + 1)).astype(y.dtype, copy=False)

        def part(start, stop):
            if bias is None:
                dst[start:stop] = valid[start:stop]
            else:
                np.add(valid[start:stop], bias[start:stop], out=dst[start:stop])
        return part

    def _grad_rows_in(self, gp, g):
        """part(start, stop) writing channels start:stop of g (N, C*mult, *out) into gp as channel rows,
        zero at the garbage positions, after `tail` zeros (the input gradient reads up to `tail`
        before a row's start; the rows themselves are [:, tail:]). g may cover fewer positions than
        out (a transposed convolution's output_padding at stride 1 makes the plan's input longer than
        the gradient reaches): the rest is zero."""
        valid = self._valid_rows(gp[:, self.tail:], g.shape[2:])
        src = g.transpose((1, 0) + tuple(range(2, g.ndim)))

        def part(start, stop):
            gp[start:stop] = 0
            valid[start:stop] = src[start:stop]
        return part

    def _grad_rows(self, g):
        """g's channel rows (see _grad_rows_in), a fresh (C*mult, tail + row) array."""
        gp = allocator.empty((g.shape[1], self.tail + self.row), g.dtype)
        parallel.run(self._grad_rows_in(gp, g), gp.shape[0], gp.nbytes)
        return gp

    def _input_taps(self, gp, w, dst):
        """part(start, stop) gathering channels start:stop of the input gradient's phase rows into dst
        (phases, C*mult, row) from the gradient rows gp: see input_grad."""
        taps = w.reshape(dst.shape[1], -1)
        by_phase = [[(k, off) for k, (p, off) in enumerate(self.taps) if p == ph] for ph in range(len(self.phases))]
        lead = self.tail

        def part(start, stop):
            for c0, c1, a, b, t in self._scratch_blocks(start, stop, dst.dtype):
                for ph, phase_taps in enumerate(by_phase):
                    db = dst[ph, c0:c1, a:b]
                    if not phase_taps:  # a kernel smaller than the stride reaches no position of this phase
                        db[...] = 0
                    for j, (k, off) in enumerate(phase_taps):
                        gb = gp[c0:c1, lead + a - off:lead + b - off]
                        if j == 0:
                            np.multiply(gb, taps[c0:c1, k:k + 1], out=db)
                        else:
                            np.multiply(gb, taps[c0:c1, k:k + 1], out=t)
                            db += t
        return part

    def _input_parts(self, gp, w):
        """(the input gradient's array, [parts]) when the multiplier is 1: the gathers, then the phase
        rows back to (N, C, *S), per channel range; None otherwise."""
        if self.mult > 1:
            return None
        dst = allocator.empty((len(self.phases), self.c, self.row), gp.dtype)
        x = allocator.empty((self.n, self.c) + self.spatial, gp.dtype)
        return x, [self._input_taps(gp, w, dst), self._phases_out(dst, x)]

    def input_grad(self, g, w, gp=None):
        """The input gradient; gp: _grad_rows(g) when the caller has it already.
        Each phase row gathers its taps' shifted gradient rows (a correlation with the taps: the same
        multiply-accumulate as forward, with no zeroed scatter target): tap k sends g at j to
        position j + off_k, so position i receives g at i - off_k (zero before the row: gp's lead)."""
        if gp is None and self._dense_grads(g):
            taps = w.reshape(self.c, -1)
            if depthwise_dense.usable(g, taps):
                return self.dense.input_grad(g, taps)
        channels = self.c * self.mult
        parts = []
        if gp is None:
            gp = allocator.empty((g.shape[1], self.tail + self.row), g.dtype)
            parts.append(self._grad_rows_in(gp, g))
        single = self._input_parts(gp, w)
        if single is not None:
            self._each_channel_range(channels, parts + single[1], g.itemsize)
            return single[0]
        dst = allocator.empty((len(self.phases), channels, self.row), g.dtype)
        self._each_channel_range(channels, parts + [self._input_taps(gp, w, dst)], g.itemsize)
        return self.from_phases(dst.reshape(len(self.phases), self.c, self.mult, -1).sum(2))

    def _weight_taps(self, gp, src, gw):
        """part(start, stop) summing channels start:stop of the weight gradient into gw (C*mult, taps)."""
        gz = gp[:, self.tail:]

        def part(start, stop):
            for c0, c1, a, b in self._blocks(start, stop):
                gb = gz[c0:c1, a:b]
                for k, (ph, off) in enumerate(self.taps):
                    gw[c0:c1, k] += _rowdot(gb, src[ph, c0:c1, a + off:b + off])
        return part

    def weight_grad(self, x, g, w_shape, src=None, gp=None):
        """The weight gradient; src, gp: x's phase rows (from forward(keep=True)) and _grad_rows(g)
        when the caller has them already (x is then not read)."""
        if src is None and gp is None and self._dense_grads(g) and x.dtype == g.dtype:
            return self.dense.weight_grad(x, g).reshape(w_shape)
        if src is None:
            src = self._source(x)
        parts = []
        if gp is None:
            gp = allocator.empty((g.shape[1], self.tail + self.row), g.dtype)
            parts.append(self._grad_rows_in(gp, g))
        channels = self.c * self.mult
        gw = np.zeros((channels, len(self.taps)), dtype=g.dtype)
        self._each_channel_range(channels, parts + [self._weight_taps(gp, src, gw)], gw.itemsize)
        return self._checked(gw, x, g).reshape(w_shape)

    def _checked(self, gw, x, g):
        """gw, or where it is not finite, the weight gradient over the outputs' own windows: a garbage
        position's zero gradient times an inf or NaN input makes NaN in the rows' sums (any tap that reads
        it there), which the windows never read. Recomputed, only then, as a grouped convolution's weight
        gradient: im2col of x (one group per channel) times g, up to g's own positions (it may stop short
        of out)."""
        if np.isfinite(gw).all() or x is None:
            return gw
        cols = conv_numpy.im2col(x, self.kernel, self.stride, self.dilation, self.lo, self.hi, g.shape[2:], self.c)
        yt = conv_numpy.to_channel_major(g, self.c)  # (C, mult, N * positions)
        return conv_numpy.matmul_reduce(cols, yt.transpose(0, 2, 1)).transpose(0, 2, 1).reshape(gw.shape)

    def _source(self, x):
        """Phase rows of x, one per output channel (repeated for a channel multiplier)."""
        phases = self.to_phases(x)
        return np.repeat(phases, self.mult, axis=1) if self.mult > 1 else phases

    def _dense_grads(self, g):
        """Whether the gradients of g take the plane matrices: g covers exactly the outputs (a transposed
        convolution's output_padding can leave it shorter) in a dtype they take."""
        return self.dense is not None and g.shape[2:] == self.out and depthwise_dense.usable_dtype(g)

    def backward(self, src, g, w, need_input, x=None):
        """(input gradient or None, weight gradient) from what forward(keep=True) returned: the phase
        rows (g's channel rows are built once for both, and one split over channel ranges runs the rows,
        both gradients' taps and the phase gather: Note [Depthwise one split]), or x itself for a plan
        with plane matrices."""
        if self.dense is not None:
            gx = self.input_grad(g, w) if need_input else None
            return gx, self.weight_grad(src, g, w.shape)
        gp = allocator.empty((g.shape[1], self.tail + self.row), g.dtype)
        channels = self.c * self.mult
        gw = np.zeros((channels, len(self.taps)), dtype=g.dtype)
        parts = [self._grad_rows_in(gp, g)]
        single = self._input_parts(gp, w) if need_input else None
        if single is not None:
            parts += single[1]
        parts.append(self._weight_taps(gp, src, gw))
        self._each_channel_range(channels, parts, g.itemsize)
        gx = single[0] if single is not None else self.input_grad(g, w, gp) if need_input else None
        return gx, self._checked(gw, x, g).reshape(w.shape)

    def window_max(self, x):
        """Max pooling in the flat layout: (max, tap index of the max) per output, both (N, C, *out).
        Ties keep the first tap; NaN wins, the last NaN of the window (torch's scan order)."""
        fill = -np.inf if x.dtype.kind in "fV" else np.iinfo(x.dtype).min  # V: bfloat16 (ml_dtypes)
        src = self.to_phases(x, fill)
        m = np.empty((self.c, self.row), dtype=x.dtype)
        # the tap of the last strict improvement is the largest k with v_k > running max, so the argmax is
        # a running maximum of k * (v_k > m): integer arithmetic, ~50x faster than masked assignment
        code = np.uint8 if len(self.taps) < 256 else np.int32
        arg = np.zeros((self.c, self.row), dtype=code)

        def part(start, stop):
            for c0, c1, a, b, gb in self._scratch_blocks(start, stop, bool):
                mb = m[c0:c1, a:b]
                ab = arg[c0:c1, a:b]
                for k, (ph, off) in enumerate(self.taps):
                    v = src[ph, c0:c1, a + off:b + off]
                    if k == 0:
                        np.copyto(mb, v)
                        continue
                    np.greater(v, mb, out=gb)
                    step = gb.view(np.uint8) if code is np.uint8 else gb.astype(code)
                    np.maximum(ab, step * code(k), out=ab)
                    np.maximum(mb, v, out=mb)  # NaN propagates into the max
        self._each_channel_range(self.c, [part], x.itemsize)
        val = self._valid(m)
        if x.dtype.kind == "f":
            nan = np.isnan(val)
            if nan.any():  # NaN windows: the index of the last NaN tap
                idx = self._valid(arg)
                for k, (ph, off) in enumerate(self.taps):
                    v = self._valid(src[ph, :, off:off + self.row])
                    idx[nan & np.isnan(v)] = k
        return np.ascontiguousarray(val), arg

    def window_scatter(self, g, arg):
        """The transpose of window_max: g (N, C, *out) sent to the tap arg (channel rows) chose."""
        gz = self._grad_rows(g)[:, self.tail:]
        dst = np.zeros((len(self.phases), self.c, self.row + self.tail), dtype=g.dtype)

        def part(start, stop):
            for c0, c1, a, b, t, e in self._scratch_blocks(start, stop, g.dtype, bool):
                gb = gz[c0:c1, a:b]
                ab = arg[c0:c1, a:b]
                for k, (ph, off) in enumerate(self.taps):
                    np.equal(ab, k, out=e)
                    np.multiply(gb, e, out=t)
                    dst[ph, c0:c1, a + off:b + off] += t
        self._each_channel_range(self.c, [part], g.itemsize)
        return self.from_phases(dst)

    def valid_taps(self, arg):
        """arg (channel rows) cropped to an (N, C, *out) array."""
        return np.ascontiguousarray(self._valid(arg))
