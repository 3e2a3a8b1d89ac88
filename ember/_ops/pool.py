"""Pooling: max_pool, avg_pool, adaptive_avg_pool, adaptive_max_pool (1-3 d), lp_pool1d/2d and
max_unpool (torch.nn.functional, and the torch.* names torch has).

Max pooling copies each window into a row (a strided view, one copy) and takes the row's argmax;
its indices are flat positions in the input plane (torch's format), and its backward is a scatter
of the gradient to those positions, whose own backward is a gather: gradients of every order work.
With ember[jit], 2-D windows of 2x2 and 3x3 without padding or dilation take a compiled forward
(ember/_backend/pool_jit.py, window_max), and 2-D backwards a compiled scatter.
Average pooling is a sum over the kernel taps of strided views times a per-position scale; its
backward (one strided add per tap) and that backward's backward are the same two kernels.
"""
from collections.abc import Iterable

import numpy as np

from .. import _dtype as D
from .._backend import conv_numpy as K
from .._backend import depthwise_numpy as DW
from .._backend import jit
from .._tensor import Tensor, _wrap_dim
from ._argcheck import ints_error
from ._registry import Op, install
from .sampling import _area_map, _named, apply_maps

# ---- geometry ---------------------------------------------------------------------------------


def _pool_out(size, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _hi_pad(size, k, s, p, d, out):
    """Extra right padding so the last (ceil_mode) window lies inside the buffer."""
    return max(0, (out - 1) * s + d * (k - 1) + 1 - size - p)


def _row_max(rows):
    """Max and argmax over the last axis with torch's rule: the first maximum wins, and NaN wins
    over numbers (the last NaN of the row, as torch's `val > max || isnan(val)` scan)."""
    arg = rows.argmax(-1)
    if rows.dtype.kind == "f":
        nan = np.isnan(rows)
        has = nan.any(-1)
        if has.any():
            last = rows.shape[-1] - 1 - nan[..., ::-1].argmax(-1)
            arg = np.where(has, last, arg)
    val = np.take_along_axis(rows, arg[..., None], -1)[..., 0]
    return val, arg


# ---- index scatter / gather (max pooling backward, max_unpool) -------------------------------


def _scatter(g, idx, plane_shape, unique, assign=False):
    """out (N, C, *plane) with out.flat-per-plane[idx] = (or +=) g."""
    n, c = g.shape[:2]
    plane = int(np.prod(plane_shape))
    flat_idx = idx.reshape(n * c, -1)
    vals = g.reshape(n * c, -1)
    if unique or assign:
        out = np.zeros((n * c, plane), dtype=g.dtype)
        np.put_along_axis(out, flat_idx, vals, axis=1)
    else:
        offsets = (np.arange(n * c) * plane)[:, None]
        out = np.bincount((flat_idx + offsets).ravel(), weights=vals.ravel(), minlength=n * c * plane)
        out = out.astype(g.dtype, copy=False)
    return out.reshape((n, c) + tuple(plane_shape))


def _gather(x, idx):
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    return np.take_along_axis(flat, idx.reshape(n, c, -1), axis=2).reshape(idx.shape)


class IndexScatter(Op):
    """Gradient routing of max pooling (sum at the argmax positions); max_unpool's forward (assign).
    src (the pooled input, not read) makes the result require grad when torch's does."""
    _name = "MaxPool2DWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, g, src, idx, plane_shape, unique, assign):
        ctx.idx = idx
        return _scatter(g, idx, plane_shape, unique, assign)

    def backward(ctx, grad):
        return IndexGather.apply(grad, idx=ctx.idx, plane_shape=tuple(grad.shape[2:])), None


class IndexGather(Op):
    """out = x at the flat per-plane positions idx (max_unpool's backward)."""
    _name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, idx, plane_shape):
        ctx.idx = idx
        ctx.plane_shape = plane_shape
        return _gather(x, idx)

    def backward(ctx, grad):
        return IndexScatter.apply(grad, None, idx=ctx.idx, plane_shape=ctx.plane_shape, unique=False, assign=False)


class MaxPool(Op):
    """Window maxima in the flat phase layout (Note [Depthwise flat layout]); output 1 (flat indices) only
    when asked for. Which tap each maximum came from stays in ctx for the backward."""
    _name = "MaxPool2DWithIndicesBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, dilation, out, want_indices):
        spatial = x.shape[2:]
        kernels = _compiled(x) if _plain_window(spatial, kernel, stride, padding, dilation, out) else None
        if kernels is not None:
            val, taps = kernels.window_max(x, kernel[0], stride, out)
            ctx.pool = _Argmax(None, taps, kernel, stride, padding, dilation, out, spatial)
        else:
            hi = tuple(_hi_pad(*a, o) for a, o in zip(zip(spatial, kernel, stride, padding, dilation), out))
            plan = DW.DepthwisePlan(x.shape, kernel, stride, dilation, padding, hi, 1)
            val, arg = plan.window_max(x)
            if any(padding):
                _first_valid_on_ties(plan, val, arg, kernel, stride, padding, dilation, out)
            ctx.pool = _Argmax(plan, arg, kernel, stride, padding, dilation, out, spatial)
        ctx.save_for_backward(x)
        if want_indices:
            return val, ctx.pool.indices()
        return val

    def backward(ctx, grad, *unused):
        name = ctx.name().replace("Backward0", "BackwardBackward0")
        (x,) = ctx.saved_tensors
        return _named(MaxPoolBackward, name)(grad, x, pool=ctx.pool)


def _plain_window(spatial, kernel, stride, padding, dilation, out):
    """Whether a max pooling's forward takes the compiled 2x2 / 3x3 kernel (pool_jit.window_max): a square 2-D
    window of 2 or 3 without padding or dilation, every window inside the input (ceil_mode's last may not be)."""
    return (len(kernel) == 2 and kernel[0] == kernel[1] and kernel[0] in (2, 3) and not any(padding)
            and all(d == 1 for d in dilation)
            and all((o - 1) * s + k <= size for o, s, k, size in zip(out, stride, kernel, spatial)))


class _Argmax:
    """Where each window's maximum came from: window_max's tap numbers and the window geometry that turns them into
    flat input positions. The tap numbers are in the plan's channel rows (the NumPy forward) or, with plan None, a
    (C, N, *out) grid (the compiled forward, ember/_backend/pool_jit.py)."""

    def __init__(self, plan, arg, kernel, stride, padding, dilation, out, spatial):
        self.plan, self.arg = plan, arg
        self.kernel, self.stride, self.padding, self.dilation, self.out = kernel, stride, padding, dilation, out
        self.spatial = spatial

    def _grid(self):
        """The tap numbers as a (C, N, *q) grid, q >= out (the plan's phase grid)."""
        if self.plan is None:
            return self.arg
        return self.arg.reshape((self.plan.c, self.plan.n) + self.plan.q)

    def _tables(self):
        return _index_tables(self.spatial, self.kernel, self.stride, self.padding, self.dilation, self.out)

    def indices(self):
        """Flat positions in the input plane, (N, C, *out) int64 (torch's indices)."""
        base, tap_off = self._tables()
        if self.plan is None:
            return base + tap_off[self.arg.transpose((1, 0) + tuple(range(2, self.arg.ndim)))]
        return base + tap_off[self.plan.valid_taps(self.arg)]

    def scatter(self, g):
        """g (N, C, *out) sent back to the maxima: an (N, C, *spatial) gradient."""
        kernels = _compiled(g)
        if kernels is not None:
            return kernels.scatter(g, self._grid(), *self._tables(), self.spatial)
        if self.plan is None or _by_index(g, self):
            return _scatter(g, self.indices(), self.spatial, unique=False)
        return self.plan.window_scatter(g, self.arg)


JIT_MIN = 1 << 10  # gradient elements from which the backward takes the compiled scatter (ember/_backend/pool_jit.py)


def _compiled(g):
    """The compiled scatter module for a 2-D pooling's float32/float64 g (N, C, OH, OW) of JIT_MIN elements, with
    ember[jit] installed and the switch on (Note [JIT kernels]); else None."""
    if g.ndim != 4 or g.dtype not in jit.DTYPES or g.size < JIT_MIN:
        return None
    return jit.load("pool_jit")


def _first_valid_on_ties(plan, val, arg, kernel, stride, padding, dilation, out):
    """Windows whose maximum is the padding's fill value (all -inf, or an integer type's minimum) keep the
    first tap, which with padding may lie outside the input; torch's scan starts at the window's first
    in-bounds position and keeps it. Those windows' taps (arg, channel rows) are set to it."""
    fill = -np.inf if val.dtype.kind in "fV" else np.iinfo(val.dtype).min
    tied = val == fill
    if not tied.any():
        return
    first = np.zeros((), dtype=np.int64)  # per output position, the tap number of its first in-bounds tap
    for k, s, p, d, o in zip(kernel, stride, padding, dilation, out):
        origin = np.arange(o) * s - p
        first = np.add.outer(first * k, np.maximum(0, -(origin // d)))  # ceil(-origin / d) taps lie before 0
    taps = plan._valid(arg)  # a view of arg at the outputs, (N, C, *out)
    taps[tied] = np.broadcast_to(first, taps.shape)[tied]


# Note [Max pooling backward by index]: the gradient goes back to each window's maximum. For overlapping
# strided windows it is scattered by flat input index (np.bincount over the outputs in order, torch's order
# of accumulation) rather than per tap through the phase rows (window_scatter: a compare, a multiply and an
# add per tap, then the phase rows copied back). Backward alone, CPU time at 1 thread, batch 32, medians of
# 21 alternating pairs (ms), window_scatter -> by index: 3x3 stride 2, float32: 64 channels at 15x15
# 2.5 -> 1.6, 64 at 7x7 1.0 -> 0.55, 32 at 32x32 3.4 -> 3.5 (bincount's float64 sums over a large input
# plane cost what the taps save); float64 32 at 32x32 7.8 -> 3.9; the three pools of an AlexNet-style step
# (bench/models.py), backward 8.2 -> 6.0 ms per step. Kept on window_scatter: windows that do not
# overlap (2x2 stride 2: even to 1.33x slower by index, with np.put_along_axis), stride 1 (1.07x slower),
# padding (not measured), half precision (its sums in that precision). BY_INDEX = False turns it off (the tests compare both).
BY_INDEX = True
_BY_INDEX_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _by_index(g, pool):
    """Whether max pooling's backward scatters g by flat index (Note [Max pooling backward by index])."""
    kernel, stride, padding, dilation = pool.kernel, pool.stride, pool.padding, pool.dilation
    return (BY_INDEX and g.dtype in _BY_INDEX_DTYPES and not any(padding) and all(s > 1 for s in stride)
            and any(d * (k - 1) >= s for k, s, d in zip(kernel, stride, dilation)))


class MaxPoolBackward(Op):
    """The gradient sent back to each window's maximum (src, the pooled input, is not read: it makes the
    result require grad when torch's does). Its own backward gathers at the same positions."""
    _name = "MaxPool2DWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, g, src, pool):
        ctx.pool = pool
        return pool.scatter(g)

    def backward(ctx, grad):
        return IndexGather.apply(grad, idx=ctx.pool.indices(), plane_shape=ctx.pool.spatial), None


def _index_tables(spatial, kernel, stride, padding, dilation, out):
    """(base, tap_off): a window's flat origin in the (unpadded) input plane per output position (*out), and
    each tap's flat offset from it (taps,); the maximum of window o at tap k lies at base[o] + tap_off[k]."""
    nd = len(kernel)
    base = np.zeros((), dtype=np.int64)
    tap_off = np.zeros((), dtype=np.int64)
    for i in range(nd):
        origin = np.arange(out[i]) * stride[i] - padding[i]
        base = np.add.outer(base * spatial[i], origin)
        tap_off = np.add.outer(tap_off * spatial[i], np.arange(kernel[i]) * dilation[i])
    return base, tap_off.reshape(-1)


# ---- average pooling ----------------------------------------------------------------------------


def _window_sum(xp, kernel, stride, out, acc_dtype):
    acc = None
    for tap, sl in K.tap_slices(kernel, stride, (1,) * len(kernel), out):
        v = xp[sl]
        if acc is None:
            acc = v.astype(acc_dtype, copy=True)
        else:
            acc += v
    return acc


class AvgPool(Op):
    """sum over the window times scale (1/divisor per output position)."""
    _name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, hi, out, scale):
        ctx.args = (x.shape, kernel, stride, padding, hi, out, scale)
        ctx.save_for_backward(x)
        xp = K.padded(x, padding, hi)
        if x.dtype.kind in "iu":
            acc = _window_sum(xp, kernel, stride, out, np.int64)
            return np.trunc(acc / scale).astype(x.dtype)  # integer inputs: truncating division (scale = divisor)
        acc_dtype = np.float32 if x.dtype.itemsize == 2 else x.dtype
        acc = _window_sum(xp, kernel, stride, out, acc_dtype)
        acc *= scale
        return acc.astype(x.dtype, copy=False)

    def backward(ctx, grad):
        name = ctx.name().replace("Backward0", "BackwardBackward0")
        (x,) = ctx.saved_tensors
        return _named(AvgPoolBackward, name)(grad, x, args=ctx.args)


class AvgPoolBackward(Op):
    """The transpose of AvgPool: grad * scale added back to every tap's positions (src, the pooled
    input, is not read: it makes the result require grad when torch's does)."""
    _name = "AvgPool2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, src, args):
        ctx.args = args
        x_shape, kernel, stride, padding, hi, out, scale = args
        n, c = g.shape[:2]
        gs = (g * scale).astype(g.dtype, copy=False)
        ones = (1,) * len(kernel)
        shape = (n * c,) + tuple(kernel) + (1,) + tuple(out)
        cols = np.broadcast_to(gs.reshape((n * c,) + ones + (1,) + tuple(out)), shape)
        crop = K.scatter_windows(cols, kernel, stride, (1,) * len(kernel), padding, hi, x_shape[2:])
        return np.ascontiguousarray(crop).reshape(x_shape)

    def backward(ctx, grad):
        x_shape, kernel, stride, padding, hi, out, scale = ctx.args
        return AvgPool.apply(grad, kernel=kernel, stride=stride, padding=padding, hi=hi, out=out, scale=scale), None


def _avg_scale(spatial, kernel, stride, padding, out, count_include_pad, divisor_override, dtype):
    """1/divisor for every output position (torch's pool_size / count rules, 0 for empty windows)."""
    if divisor_override:
        return 1.0 / divisor_override if dtype.kind == "f" else np.array(divisor_override)
    sizes = []
    counts = []
    for s, k, st, p, o in zip(spatial, kernel, stride, padding, out):
        start = np.arange(o) * st - p
        end = np.minimum(start + k, s + p)
        sizes.append(end - start)
        counts.append(np.minimum(end, s) - np.maximum(start, 0))
    div = np.ones((), dtype=np.int64)
    for v in (sizes if count_include_pad else counts):
        div = np.multiply.outer(div, v)
    empty = np.ones((), dtype=bool)
    for c in counts:
        empty = np.logical_and.outer(empty, c > 0)
    if dtype.kind != "f":
        return np.where(empty, div, 1)
    ft = np.float32 if dtype.itemsize <= 4 else np.float64
    return np.where(empty, 1.0 / np.maximum(div, 1), 0.0).astype(ft)


# ---- argument parsing (torch's messages) -----------------------------------------------------


def _tuple_arg(value, nd, fname, what, allow_none=False):
    """An int or a tuple of 1 or nd ints, as torch's pooling functions accept."""
    if allow_none and (value is None or (isinstance(value, (tuple, list)) and len(value) == 0)):
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * nd
    err = ints_error(fname, what, value)
    if err is not None:  # torch's parser takes no floats (the guard re-words this with the argument's position)
        raise err
    items = tuple(value)
    if len(items) == 1:
        return (int(items[0]),) * nd
    if len(items) != nd:
        if nd == 1:
            raise RuntimeError(f"{fname}() {what} must be an int, list of ints or tuple of ints of size 1 but got "
                               f"size {len(items)}")
        count = {2: "two", 3: "three"}[nd]
        verb = {"kernel_size": "must either be a single int", "stride": "must either be omitted, a single int",
                "padding": "must either be a single int", "dilation": "must be either a single int"}[what]
        raise RuntimeError(f"{fname}: {what} {verb}, or a tuple of {count} ints")
    return tuple(int(v) for v in items)


def _size(shape):
    return "x".join(str(s) for s in shape)


def _check_input(input, nd, fname):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() not in (nd + 1, nd + 2):
        if fname == "avg_pool2d" and input.dim() < 3:
            _wrap_dim(-3, input.dim())  # ATen's avg_pool2d reads input.size(-3) before this check: an IndexError
        if nd == 1:
            raise RuntimeError(f"{fname}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                               f"input, but got:{list(input.shape)}")
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    if any(s == 0 for s in input.shape[-(nd + 1):]):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")
    return input if input.dim() == nd + 2 else input.unsqueeze(0)


def _pool_args(input, nd, fname, kernel_size, stride, padding, dilation, ceil_mode, is_max):
    kernel = _tuple_arg(kernel_size, nd, fname, "kernel_size")
    stride = _tuple_arg(stride, nd, fname, "stride", allow_none=True)
    stride = kernel if stride is None else stride
    padding = _tuple_arg(padding, nd, fname, "padding")
    dilation = _tuple_arg(dilation, nd, fname, "dilation")
    if nd == 1 and is_max:
        for what, v, low, rule in (("kernel_size", kernel[0], 1, "greater than zero"),
                                   ("stride", stride[0], 1, "greater than zero"),
                                   ("padding", padding[0], 0, "non-negative"),
                                   ("dilation", dilation[0], 1, "greater than zero")):
            if v < low:
                raise RuntimeError(f"{fname}() {what} must be {rule}, but got {v}")
        if padding[0] > kernel[0] // 2:
            raise RuntimeError(f"{fname}() padding should be at most half of kernel size, but got padding={padding[0]}"
                               f" and kernel_size={kernel[0]}")
    else:
        if any(k <= 0 for k in kernel):
            raise RuntimeError(f"kernel size should be greater than zero, but got {_named_dims(kernel, 'k')}")
        if any(s == 0 for s in stride):
            raise RuntimeError("stride should not be zero")
        if any(p < 0 for p in padding):
            raise RuntimeError(f"pad must be non-negative, but got pad: {padding[0]}")
        for k, p, d in zip(kernel, padding, dilation):
            if p > ((k - 1) * d + 1) // 2:
                raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                                   f"kernel_size={k} and dilation={d}")
        if is_max and any(d <= 0 for d in dilation):
            named = " ".join(f"dilation{a}: {d}" for a, d in zip("THW"[3 - nd:], dilation))
            raise RuntimeError(f"dilation should be greater than zero, but got {named}")
        if is_max and any(p > k // 2 for k, p in zip(kernel, padding)):
            pads = ", ".join(f"pad{a} = {p}" for a, p in zip("WHD", reversed(padding)))
            ks = ", ".join(f"k{a} = {k}" for a, k in zip("WHD", reversed(kernel)))
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got {pads}, {ks}")
    x = _check_input(input, nd, fname)
    spatial = tuple(x.shape[2:])
    out = tuple(_pool_out(s, k, st, p, d, ceil_mode) for s, k, st, p, d in
                zip(spatial, kernel, stride, padding, dilation))
    if any(o < 1 for o in out):
        if nd == 1 and is_max:
            raise RuntimeError(f"{fname}() Invalid computed output size: {out[0]}")
        c = x.shape[1]
        lead = (c, 1) if nd == 1 else (c,)  # torch pools 1-d input as 2-d of height 1
        raise RuntimeError(f"Given input size: ({_size(lead + spatial)}). Calculated output size: "
                           f"({_size(lead + tuple(max(o, 0) for o in out))}). Output size is too small")
    return x, kernel, stride, padding, dilation, out


def _named_dims(values, prefix):
    names = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}[len(values)]
    return " ".join(f"kernel_{n}: {v}" for n, v in zip(names, values))


def _unbatch(r, input, nd):
    if input.dim() == nd + 2:
        return r
    if isinstance(r, tuple):
        return tuple(t.squeeze(0) for t in r)
    return r.squeeze(0)


# ---- max pooling ---------------------------------------------------------------------------------


def _max_pool(nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    fname = f"max_pool{nd}d"
    x, kernel, stride, padding, dilation, out = _pool_args(input, nd, fname, kernel_size, stride, padding, dilation,
                                                           ceil_mode, True)
    if x.dtype is D.bool or x.dtype.category == D.COMPLEX or (nd == 1 and x.dtype.category < D.FLOAT):
        kernel = "max_pool1d_impl" if nd == 1 else fname
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_scalar(x.dtype)}'")
    op = _named(MaxPool, f"MaxPool{max(nd, 2)}DWithIndicesBackward0")
    r = op(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation, out=out, want_indices=return_indices)
    return _unbatch(r, input, nd)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.max_pool1d.html"""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.max_pool2d.html"""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.max_pool3d.html"""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _with_indices(fn):
    def with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        """(output, indices) whatever return_indices says, as torch's *_with_indices."""
        return fn(input, kernel_size, stride, padding, dilation, ceil_mode, True)
    with_indices.__name__ = with_indices.__qualname__ = fn.__name__ + "_with_indices"
    return with_indices


max_pool1d_with_indices = _with_indices(max_pool1d)
max_pool2d_with_indices = _with_indices(max_pool2d)
max_pool3d_with_indices = _with_indices(max_pool3d)


# ---- average pooling -----------------------------------------------------------------------------


def _avg_pool(nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    fname = f"avg_pool{nd}d"
    if nd == 1 and isinstance(input, Tensor) and input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for avg_pool1d)")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    x, kernel, stride, padding, _, out = _pool_args(input, nd, fname, kernel_size, stride, padding, 1, ceil_mode,
                                                    False)
    if x.dtype.category < D.FLOAT and x.dtype is not D.int64 or x.dtype.category == D.COMPLEX:
        raise NotImplementedError(f"\"{fname}\" not implemented for '{_scalar(x.dtype)}'")
    spatial = tuple(x.shape[2:])
    if nd == 3 and any(s < k for s, k in zip(spatial, kernel)):  # torch checks this for avg_pool3d only
        raise RuntimeError("input image (T: {} H: {} W: {}) smaller than kernel size (kT: {} kH: {} kW: {})".format(
            *spatial, *kernel))
    hi = tuple(_hi_pad(s, k, st, p, 1, o) for s, k, st, p, o in zip(spatial, kernel, stride, padding, out))
    scale = _avg_scale(spatial, kernel, stride, padding, out, count_include_pad, divisor_override, x._data.dtype)
    op = _named(AvgPool, f"AvgPool{max(nd, 2)}DBackward0")
    r = op(x, kernel=kernel, stride=stride, padding=padding, hi=hi, out=out, scale=scale)
    return _unbatch(r, input, nd)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.avg_pool1d.html"""
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.avg_pool2d.html"""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.avg_pool3d.html"""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


_SCALAR = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
           "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
           "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _scalar(d):
    return _SCALAR.get(d.name, d.name)


# ---- adaptive pooling ----------------------------------------------------------------------------


def _adaptive_sizes(input, nd, output_size, fname):
    if output_size is None:  # torch: the 1-d binding's type check, or Python's len() of the size in the others
        raise TypeError(f"{fname}(): argument 'output_size' (position 2) must be tuple of ints, not NoneType" if nd == 1
                        else "object of type 'NoneType' has no len()")
    if isinstance(output_size, (int, np.integer)):
        sizes = (output_size,) * nd
    else:
        sizes = tuple(output_size)
    if len(sizes) != nd:
        if nd == 1:
            raise RuntimeError(f"{fname}() argument 'output_size' should contain one int (got {len(sizes)})")
        if fname.startswith("adaptive_max"):
            raise RuntimeError(f"{fname}(): internal error: output_size.size() must be {nd}")
        raise RuntimeError(f"{fname}: output_size must be {nd}")
    spatial = input.shape[-nd:] if input.dim() >= nd else ()
    sizes = tuple(int(spatial[i]) if s is None else s for i, s in enumerate(sizes))  # torch's _list_with_default
    err = ints_error(fname, "output_size", sizes, 2)
    if err is not None:
        raise err
    sizes = tuple(int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"{fname}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(map(str, sizes))}}}")
    return sizes


def _adaptive_input(input, nd, fname):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
                               f"#1 'self' (while checking arguments for {fname})")
        sep = ": " if fname.startswith("adaptive_max") else " "
        raise RuntimeError(f"{fname}(): Expected {nd + 1}D or {nd + 2}D tensor, but got{sep}{list(input.shape)}")
    for i in range(1 if input.dim() == nd + 2 else 0, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"{fname}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {i} being empty")
    return input if input.dim() == nd + 2 else input.unsqueeze(0)


def _output_size_rank(input, output_size, nd):
    """torch.nn.functional's _list_with_default: a sequence output_size needs an input of higher rank."""
    if nd > 1 and isinstance(output_size, (list, tuple)) and input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


def _adaptive_avg_pool(input, output_size, fname):
    nd = int(fname[-2])
    _output_size_rank(input, output_size, nd)
    if nd == 1:
        x = _adaptive_input(input, nd, fname)
        sizes = _adaptive_sizes(x, nd, output_size, fname)
    else:  # torch's Python form reads output_size (_list_with_default, its length) before the input's dims
        sizes = _adaptive_sizes(input, nd, output_size, fname)
        x = _adaptive_input(input, nd, fname)
    if x.dtype.category < D.FLOAT or x.dtype.category == D.COMPLEX:
        raise NotImplementedError(f"\"{fname}\" not implemented for '{_scalar(x.dtype)}'")
    spatial = tuple(x.shape[2:])
    name = f"AdaptiveAvgPool{max(nd, 2)}DBackward0"
    if all(s == 1 for s in sizes):  # global pooling is a mean, as in torch
        return input.mean(tuple(range(input.dim() - nd, input.dim())), keepdim=True)
    if all(o > 0 and s % o == 0 for s, o in zip(spatial, sizes)):
        kernel = tuple(s // o for s, o in zip(spatial, sizes))  # regular windows: plain average pooling
        scale = np.array(1.0 / np.prod(kernel)).astype(np.float64 if x.dtype is D.float64 else np.float32)
        op = _named(AvgPool, name)
        r = op(x, kernel=kernel, stride=kernel, padding=(0,) * nd, hi=(0,) * nd, out=sizes, scale=scale)
    else:
        maps = []
        for i in range(nd):
            idx, w = _area_map(spatial[i], sizes[i])
            maps.append(K.AxisMap(2 + i, idx, w.astype(x._data.dtype), spatial[i]))
        r = apply_maps(x, maps, name, keep_input=True)
    return _unbatch(r, input, nd)


def adaptive_avg_pool1d(input, output_size):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.adaptive_avg_pool1d.html"""
    return _adaptive_avg_pool(input, output_size, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.adaptive_avg_pool2d.html"""
    return _adaptive_avg_pool(input, output_size, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.adaptive_avg_pool3d.html"""
    return _adaptive_avg_pool(input, output_size, "adaptive_avg_pool3d")


class AdaptiveMaxPool(Op):
    _name = "AdaptiveMaxPool2DBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, sizes, want_indices):
        spatial = x.shape[2:]
        nd = len(sizes)
        ctx.save_for_backward(x)
        ctx.plane = spatial
        if any(s == 0 for s in sizes):
            ctx.idx = np.zeros(x.shape[:2] + tuple(sizes), dtype=np.int64)
            val = np.empty(ctx.idx.shape, dtype=x.dtype)
            return (val, ctx.idx) if want_indices else val
        rows = x
        index = []
        for i in range(nd):
            idx, _ = _area_map(spatial[i], sizes[i])  # (taps, out): window positions, last one repeated
            index.append(idx.T)
            rows = np.take(rows, idx.T, axis=2 + 2 * i)  # (.., out_i, taps_i, ..)
        n, c = x.shape[:2]
        order = (0, 1) + tuple(2 + 2 * i for i in range(nd)) + tuple(3 + 2 * i for i in range(nd))
        rows = np.ascontiguousarray(rows.transpose(order)).reshape((n, c) + tuple(sizes) + (-1,))
        val, arg = _row_max(rows)
        taps = np.unravel_index(arg, tuple(ix.shape[1] for ix in index))
        flat = np.zeros(arg.shape, dtype=np.int64)
        for i in range(nd):
            shape = [1] * nd
            shape[i] = sizes[i]
            o = np.arange(sizes[i]).reshape(shape)
            flat = flat * spatial[i] + index[i][o, taps[i]]
        ctx.idx = flat
        return (val, flat) if want_indices else val

    def backward(ctx, grad, *unused):
        name = ctx.name().replace("Backward0", "BackwardBackward0")
        (x,) = ctx.saved_tensors
        return _named(IndexScatter, name)(grad, x, idx=ctx.idx, plane_shape=ctx.plane, unique=False, assign=False)


def _adaptive_max_pool(nd, input, output_size, return_indices):
    fname = f"adaptive_max_pool{nd}d"
    _output_size_rank(input, output_size, nd)
    if nd == 1:
        x = _adaptive_input(input, nd, fname)
        sizes = _adaptive_sizes(x, nd, output_size, fname)
    else:
        sizes = _adaptive_sizes(input, nd, output_size, fname)
        x = _adaptive_input(input, nd, fname)
    if x.dtype.category < D.FLOAT or x.dtype.category == D.COMPLEX:
        raise NotImplementedError(f"\"{fname}\" not implemented for '{_scalar(x.dtype)}'")
    op = _named(AdaptiveMaxPool, f"AdaptiveMaxPool{max(nd, 2)}DBackward0")
    return _unbatch(op(x, sizes=sizes, want_indices=return_indices), input, nd)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.adaptive_max_pool1d.html"""
    return _adaptive_max_pool(1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.adaptive_max_pool2d.html"""
    return _adaptive_max_pool(2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.adaptive_max_pool3d.html"""
    return _adaptive_max_pool(3, input, output_size, return_indices)


# ---- power-average pooling -----------------------------------------------------------------------


def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    """(sum over the window of x^p)^(1/p): avg_pool of x^p times the window size (torch's composite)."""
    if nd > 1 and kernel_size.__class__ is not int:  # torch's F unpacks _pair/_triple(kernel_size) first
        n_kernel = len(tuple(kernel_size)) if isinstance(kernel_size, Iterable) else nd
        if n_kernel != nd:
            raise ValueError(f"{'not enough' if n_kernel < nd else 'too many'} values to unpack (expected {nd}, "
                             f"got {n_kernel})")
    kernel = _tuple_arg(kernel_size, nd, f"lp_pool{nd}d", "kernel_size")
    pool = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[nd]
    if stride is not None:
        out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * out.abs().relu()).mul(int(np.prod(kernel))).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.lp_pool1d.html"""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.lp_pool2d.html"""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.lp_pool3d.html"""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# ---- max_unpool ----------------------------------------------------------------------------------


def _ntuple(value, nd):
    """torch.nn.modules.utils._single/_pair/_triple: any iterable becomes a tuple of its items (a dict: its keys)."""
    return tuple(value) if isinstance(value, Iterable) else (value,) * nd


def _max_unpool(nd, input, indices, kernel_size, stride, padding, output_size):
    """torch's order: F computes the output size in Python (errors of its arithmetic surface as they are), then the
    kernel of max_unpool2d (which max_unpool1d runs on an unsqueezed input) or max_unpool3d checks it."""
    kernel = _ntuple(kernel_size, nd)
    stride = kernel if stride is None else _ntuple(stride, nd)
    padding = _ntuple(padding, nd)
    shape = tuple(input.shape)
    try:
        default = [(shape[d - len(kernel)] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(len(kernel))]
    except IndexError:  # as torch's F: input.size() or the stride/padding tuple is shorter than kernel_size
        raise IndexError("tuple index out of range") from None
    if output_size is None:
        sizes = default
    else:
        if len(output_size) == len(kernel) + 2:
            output_size = output_size[2:]
        if len(output_size) != len(kernel):
            raise ValueError(f"output_size should be a sequence containing {len(kernel)} or {len(kernel) + 2} "
                             f"elements, but it has a length of '{len(output_size)}'")
        for d in range(len(kernel)):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < output_size[d] < hi:
                raise ValueError(f"invalid output_size \"{output_size}\" (dim {d} must be between {lo} and {hi})")
        sizes = list(output_size)
    for d in range(len(kernel)):
        if sizes[d] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={sizes[d]}")
    kernel_nd = max(nd, 2)
    fname = f"max_unpool{kernel_nd}d"
    if nd == 1:
        sizes = sizes + [1]
    c_args = [("output_size", 3, sizes)] + ([("stride", 4, stride), ("padding", 5, padding)] if nd == 3 else [])
    for name, position, values in c_args:  # the C-level parser reads each int[]'s first item ...
        if values and not isinstance(values[0], (int, np.integer)):
            raise TypeError(f"{fname}(): argument '{name}' (position {position}) must be tuple of ints, but found "
                            f"element of type {type(values[0]).__name__} at pos 0")
    for name, position, values in c_args[::-1]:  # ... and unpacks the rest as the kernel's arguments, last first
        for i, v in enumerate(values[1:], 2):
            if not isinstance(v, (int, np.integer)):
                raise TypeError(f"{fname}(): argument '{name}' failed to unpack the object at pos {i} with error "
                                f"\"type must be tuple of ints,but got {type(v).__name__}\"")
    dims = input.dim() + (nd == 1)
    bad_dims = dims not in (kernel_nd + 1, kernel_nd + 2)
    words = {2: "two elements (height, width)", 3: "three elements (depth, height, width)"}[kernel_nd]
    if kernel_nd == 3 and bad_dims or len(sizes) == kernel_nd and bad_dims:  # max_unpool3d checks dims first
        raise RuntimeError(f"Input to max_unpooling{kernel_nd}d should be a {kernel_nd + 1}d or {kernel_nd + 2}d "
                           f"Tensor, but got a tensor with {dims} dimensions.")
    for name, _, values in c_args:
        if len(values) != kernel_nd:
            got = "" if name == "output_size" else ":"
            raise RuntimeError(f"There should be exactly {words} in {name}, but got{got} {len(values)} elements.")
    if nd == 3 and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
    sizes = [int(v) for v in sizes[:nd]]
    if indices.dtype is not D.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_scalar(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    idx = (indices if batched else indices.unsqueeze(0))._data
    plane = int(np.prod(sizes))
    if idx.size and (idx.min() < 0 or idx.max() >= plane):
        bad = int(idx.max() if idx.max() >= plane else idx.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, sizes))})")
    op = _named(IndexScatter, f"MaxUnpool{max(nd, 2)}DBackward0")
    r = op(x, None, idx=idx, plane_shape=tuple(sizes), unique=True, assign=True)
    return r if batched else r.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.max_unpool1d.html"""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.max_unpool2d.html"""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.max_unpool3d.html"""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


FUNCTIONAL = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
              "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
              "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
              "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d",
              "max_unpool3d"]

# the torch.* names torch itself has (torch.avg_pool2d does not exist)
for _fn in (max_pool1d, max_pool2d, max_pool3d, avg_pool1d, adaptive_avg_pool1d, max_pool1d_with_indices):
    install(_fn, _fn.__name__, method=False)
del _fn
