"""Sorting and order statistics: sort, argsort, topk, kthvalue, median, mode, quantile;
unique, unique_consecutive, bincount, histc.

Sorting is stable (NaN sorts as the largest value), so ties come out in input order;
torch documents tie order as unspecified for stable=False, and its median(dim) agrees
with the stable order. Gradients route to the selected indices (Note [Index routing]
in reduction.py).
"""
import numpy as np

from .. import _dtype as D
from .. import return_types
from .._tensor import Tensor
from .._backend import contiguous
from .._backend.numpy_cpu import relayout
from ._registry import Op, register
from .geometry import dense_strides_like, strides_of
from .reduction import (_as_1d, check_tensor, empty_dim_error, evenly_distribute, finish, gather, index_grad,
                        keep_shape, numpy_names, one_dim, refuse_complex)

_make = Tensor._make


def stable_argsort(x, dim, descending=False):
    """Indices sorting x along dim; equal elements keep their order, NaN is the largest.
    Descending sorts the reversed array ascending, so ties still come out in input order."""
    if not descending:
        return np.argsort(x, axis=dim, kind="stable")
    n = x.shape[dim]
    order = np.argsort(np.flip(x, dim), axis=dim, kind="stable")
    return np.flip(n - 1 - order, dim)


def _like_input(r, x):
    """r laid out as torch's sort lays out its results: like the input x (preserve_format's strides)."""
    if x.flags.c_contiguous:
        return contiguous(r)  # (a descending order's flipped view has negative strides)
    return relayout(r, dense_strides_like(x.shape, strides_of(x)))


def _nan_count(x, dim):
    if x.dtype.kind not in "fc":
        return np.zeros(keep_shape(x.shape, (dim,)), np.int64)
    return np.count_nonzero(np.isnan(x), axis=dim, keepdims=True)


def _no_bool(name, input):
    if input._dtype is D.bool:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")


# ---- sort / argsort / msort / topk ---------------------------------------------------------

class Sort(Op):
    _name = "SortBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, dim, descending):
        xs = _as_1d(x)
        idx = stable_argsort(xs, dim, descending)
        values = np.take_along_axis(xs, idx, axis=dim)
        ctx.args = (x.shape, dim, idx)
        return _like_input(values.reshape(x.shape), x), _like_input(idx.reshape(x.shape), x)

    def backward(ctx, grad, grad_indices=None):
        shape, dim, idx = ctx.args
        return index_grad(grad, idx, dim, shape)


@register()
@numpy_names
def sort(input, dim=-1, descending=False, *, stable=False, out=None):
    check_tensor(input, "sort")
    refuse_complex(input, message=" Sort does not support complex dtypes on CPU")
    d = one_dim(dim, input._data.ndim)
    values, indices = Sort.apply(input, dim=d, descending=descending)
    return finish(return_types.sort((values, indices)), out, "sort")


@register()
@numpy_names
def argsort(input, dim=-1, descending=False, *, stable=None, out=None):
    """Always a stable sort; stable=None: not given (torch takes out= only in its overload with stable=)."""
    if out is not None and stable is None:
        raise TypeError("argsort() received an invalid combination of arguments - got out= without stable=")
    check_tensor(input, "argsort")
    refuse_complex(input, message=" Sort does not support complex dtypes on CPU")
    d = one_dim(dim, input._data.ndim)
    x = input._data
    r = _make(_like_input(stable_argsort(_as_1d(x), d, descending).reshape(x.shape), x))
    return finish(r, out, "argsort", exact_dtype=True)  # torch: out= must be int64


@register()
def msort(input, *, out=None):
    return finish(sort(input, 0).values, out, "msort")


class TopK(Op):
    """The k largest (smallest) along dim: argpartition picks them, a stable sort orders them."""
    _name = "TopkBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, k, dim, largest):
        xs = _as_1d(x)
        n = xs.shape[dim]
        if k == n or k == 0:
            idx = np.take(stable_argsort(xs, dim, largest), np.arange(k), axis=dim)
        else:
            kth = n - k if largest else k - 1
            part = np.argpartition(xs, kth, axis=dim)
            cand = np.take(part, np.arange(n - k, n) if largest else np.arange(k), axis=dim)
            cand = np.sort(cand, axis=dim)  # equal values then come out in input order
            order = stable_argsort(np.take_along_axis(xs, cand, axis=dim), dim, largest)
            idx = np.take_along_axis(cand, order, axis=dim)
        values = np.take_along_axis(xs, idx, axis=dim)
        ctx.args = (x.shape, dim, idx)
        if x.ndim == 0:
            return values.reshape(()), idx.reshape(())
        return values, idx

    def backward(ctx, grad, grad_indices=None):
        shape, dim, idx = ctx.args
        return index_grad(grad, idx, dim, shape)


@register()
@numpy_names
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """Always returns sorted results (allowed by torch's sorted=False, whose order is unspecified)."""
    check_tensor(input, "topk")
    refuse_complex(input, message=" topk does not support complex dtypes on CPU")
    if input._dtype is D.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    d = one_dim(dim, input._data.ndim)
    n = input._data.shape[d] if input._data.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, indices = TopK.apply(input, k=k, dim=d, largest=largest)
    return finish(return_types.topk((values, indices)), out, "topk")


# ---- kthvalue / median / nanmedian / mode -----------------------------------------------------

class SelectSorted(Op):
    """values/indices of the element at one position of the stable sorted order along dim:
    the k-th smallest, the lower median (the first NaN if any), or the lower median of the
    non-NaN values."""
    _name = "KthvalueBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, dim, keepdim, which, k):
        xs = _as_1d(x)
        n = xs.shape[dim]
        nans = _nan_count(xs, dim)
        if which == "kth":
            idx = _kth_index(xs, dim, k - 1)
        elif which == "median" or not nans.any():
            idx = _kth_index(xs, dim, (n - 1) // 2)
            if nans.any():
                idx = np.where(nans > 0, np.argmax(np.isnan(xs), axis=dim, keepdims=True), idx)
        else:
            # a different position per slice: read it from the full stable order
            valid = n - nans
            pos = np.where(valid > 0, (valid - 1) // 2, 0)
            idx = np.take_along_axis(np.argsort(xs, axis=dim, kind="stable"), pos, axis=dim)
        values = np.take_along_axis(xs, idx, axis=dim)
        ctx.args = (x.shape, dim, idx)
        return _drop_dim(values, x, dim, keepdim), _drop_dim(idx, x, dim, keepdim)

    def backward(ctx, grad, grad_indices=None):
        shape, dim, idx = ctx.args
        return index_grad(grad.reshape(idx.shape) if len(shape) else grad, idx, dim, shape)


def _kth_index(x, dim, k):
    """Index (keepdim shape) of the element at position k of the stable sorted order, in O(n):
    np.partition finds the value v; it is the (k - #{x < v})-th occurrence of v in input order
    (NaN, sorting last, counts as larger than every number)."""
    v = np.take(np.partition(x, k, axis=dim), [k], axis=dim)
    if x.dtype.kind in "fc":
        v_nan = np.isnan(v)
        x_nan = np.isnan(x)
        below = np.where(v_nan, np.count_nonzero(~x_nan, axis=dim, keepdims=True),
                         np.count_nonzero(x < v, axis=dim, keepdims=True))
        equal = (x == v) | (x_nan & v_nan)
    else:
        below = np.count_nonzero(x < v, axis=dim, keepdims=True)
        equal = x == v
    seen = np.cumsum(equal, axis=dim)
    return np.argmax(seen > k - below, axis=dim, keepdims=True)


def _drop_dim(a, x, dim, keepdim):
    if x.ndim == 0:
        return a.reshape(())
    return a if keepdim else a.squeeze(dim)


_SELECT_NAMES = {"kth": ("kthvalue", "KthvalueBackward0"), "median": ("median", "MedianBackward1"),
                 "nanmedian": ("nanmedian", "NanmedianBackward1")}


def _select(which, input, dim, keepdim, k, out):
    name, node = _SELECT_NAMES[which]
    x = input._data
    d = one_dim(dim, x.ndim)
    if x.ndim:
        empty_dim_error(name, x, (d,))
    if which == "kth":
        n = x.shape[d] if x.ndim else 1
        if not 1 <= k <= n:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    values, indices = SelectSorted.apply(input, dim=d, keepdim=keepdim, which=which, k=k)
    if values._grad_fn is not None:
        values._grad_fn._name = node
    return finish(getattr(return_types, name)((values, indices)), out, name, inputs=(input,))


@register()
@numpy_names
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    check_tensor(input, "kthvalue")
    refuse_complex(input, "kthvalue_cpu")
    _no_bool("kthvalue", input)
    return _select("kth", input, dim, keepdim, k, out)


class MedianAll(Op):
    """Lower median of all elements (NaN if any is NaN; nanmedian skips NaNs); ties share the gradient."""
    _name = "MedianBackward0"

    @staticmethod
    def forward(ctx, x, skip_nan):
        flat = x.reshape(-1)
        if x.dtype.kind in "fc":
            nan = np.isnan(flat)
            if skip_nan:
                flat = flat[~nan]
            elif nan.any():
                flat = flat[nan]
        if flat.size == 0:
            # torch gives NaN for floats, the lowest value for int32/int64 and 0 for smaller integers
            wide = x.dtype.kind == "i" and x.dtype.itemsize >= 4
            out = np.array(np.nan if x.dtype.kind in "fc" else np.iinfo(x.dtype).min if wide else 0, x.dtype)
        else:
            k = (flat.size - 1) // 2
            out = np.partition(flat, k)[k]
        out = np.asarray(out, dtype=x.dtype)
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return evenly_distribute(grad, x, out)


def _median(which, input, dim, keepdim, out):
    check_tensor(input, which)
    if out is not None and dim is None:  # torch's out= overload is median(input, dim, keepdim, *, out)
        raise TypeError(f'{which}() missing 1 required positional arguments: "dim"')
    refuse_complex(input, "median_cpu" if dim is None else "median_out")
    _no_bool(which, input)
    if dim is None:
        r = MedianAll.apply(input, skip_nan=which == "nanmedian")
        if which == "nanmedian" and r._grad_fn is not None:
            r._grad_fn._name = "NanmedianBackward0"
        return finish(r, out, which)
    return _select(which, input, dim, keepdim, 0, out)


@register()
@numpy_names
def median(input, dim=None, keepdim=False, *, out=None):
    return _median("median", input, dim, keepdim, out)


@register()
@numpy_names
def nanmedian(input, dim=None, keepdim=False, *, out=None):
    return _median("nanmedian", input, dim, keepdim, out)


class Mode(Op):
    """Most frequent value along dim (the smallest among equally frequent ones) and the index of
    its last occurrence: runs of equal values are counted in the sorted order."""
    _name = "ModeBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        xs = np.moveaxis(_as_1d(x), dim, -1)
        n = xs.shape[-1]
        s = np.sort(xs, axis=-1)
        starts = np.ones(s.shape, bool)
        starts[..., 1:] = s[..., 1:] != s[..., :-1]
        pos = np.arange(n)
        run_start = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
        # a run of length m reaches count m only at its last element, so the first maximum
        # marks the end of the first longest run: the smallest most-frequent value
        best = np.argmax(pos - run_start, axis=-1)[..., None]
        value = np.take_along_axis(s, best, axis=-1)
        last = n - 1 - np.argmax((xs == value)[..., ::-1], axis=-1)[..., None]
        values = np.moveaxis(value, -1, dim)
        idx = np.moveaxis(last, -1, dim)
        ctx.args = (x.shape, dim, idx)
        return _drop_dim(values, x, dim, keepdim), _drop_dim(idx, x, dim, keepdim)

    def backward(ctx, grad, grad_indices=None):
        shape, dim, idx = ctx.args
        return index_grad(grad.reshape(idx.shape) if len(shape) else grad, idx, dim, shape)


@register()
@numpy_names
def mode(input, dim=-1, keepdim=False, *, out=None):
    check_tensor(input, "mode")
    refuse_complex(input, "mode_cpu")
    x = input._data
    d = one_dim(dim, x.ndim)
    if x.ndim:
        empty_dim_error("mode", x, (d,))
    values, indices = Mode.apply(input, dim=d, keepdim=keepdim)
    return finish(return_types.mode((values, indices)), out, "mode")


# ---- quantile / nanquantile ---------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _q_values(name, q, input):
    """q as a 1-D array of the input's dtype, and whether q was a scalar."""
    if isinstance(q, Tensor):
        if q._dtype is not input._dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if q._data.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        qv = q._data.reshape(-1)
        if not np.all((qv >= 0) & (qv <= 1)):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        return qv, q._data.ndim == 0
    if not 0 <= q <= 1:
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
    return np.array([q], dtype=input._data.dtype), True


def _quantile(name, input, q, dim, keepdim, interpolation, skip_nan, out):
    """Sort, then read (and interpolate) at rank q * (count - 1); a composite of sort and gather,
    so gradients flow to the selected elements."""
    check_tensor(input, name)
    if input._dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    qv, scalar_q = _q_values(name, q, input)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if input._data.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    nd = input._data.ndim
    if dim is None:
        x = input.reshape(-1)
        d = 0
    else:
        d = one_dim(dim, nd)
        x = (input if nd else input.reshape(1)).movedim(d, -1)
    ordered = sort(x, -1).values
    s = ordered._data
    n = s.shape[-1]
    dt = s.dtype
    if skip_nan:
        valid = n - np.count_nonzero(np.isnan(s), axis=-1, keepdims=True)
        ranks = np.maximum(qv * (valid - 1).astype(dt), 0).astype(dt)
        drank_dq = np.maximum(valid - 1, 0).astype(dt)
    else:
        has_nan = np.isnan(s).any(axis=-1, keepdims=True)
        ranks = np.where(has_nan, dt.type(n - 1), qv * dt.type(n - 1)).astype(dt)
        drank_dq = np.where(has_nan, dt.type(0), dt.type(n - 1)).astype(dt)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)  # half to even, as torch's round
    below = ranks.astype(np.int64)
    r = gather(ordered, below, -1)
    if interpolation in ("linear", "midpoint"):
        weight = np.full(ranks.shape, 0.5, dt) if interpolation == "midpoint" else (ranks - below).astype(dt)
        above = gather(ordered, np.ceil(ranks).astype(np.int64), -1)
        if interpolation == "linear" and isinstance(q, Tensor) and q.requires_grad:
            # the weight's value, with d weight / d q = d rank / d q (torch's composite differentiates q too)
            weight = _make(weight) + (q.reshape(-1) - q.detach().reshape(-1)) * _make(drank_dq)
        r = _lerp(r, above, weight)
    r = r.movedim(-1, 0)
    if keepdim and nd:
        r = r.reshape((r.shape[0],) + (1,) * nd) if dim is None else r.unsqueeze(d + 1)
    if scalar_q:
        r = r.squeeze(0)
    return finish(r, out, name)


def _lerp(start, end, weight):
    """torch's lerp: start + w * (end - start) for w < 0.5, else end - (end - start) * (1 - w)."""
    w = weight if isinstance(weight, Tensor) else _make(weight)
    low = w.detach() < 0.5
    return (start + w * (end - start)).where(low, end - (end - start) * (1 - w))


@register()
@numpy_names
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False, out)


@register()
@numpy_names
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True, out)


# ---- unique / unique_consecutive -------------------------------------------------------------

class Unique(Op):
    """Sorted unique values (or slices along dim) with inverse indices and counts. NaNs are
    all distinct, as in torch. Like torch, the values carry a grad_fn that cannot backward."""
    _name = "Unique2Backward0"
    nondiff = (1, 2)

    @staticmethod
    def forward(ctx, x, dim, consecutive, want_inverse, want_counts):
        if consecutive:
            return _unique_consecutive(x, dim)
        if dim is not None:
            values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
            return values, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)
        flat = x.reshape(-1)
        order = np.argsort(flat) if want_inverse else None
        ordered = flat[order] if want_inverse else np.sort(flat)
        starts = np.ones(ordered.shape, bool)
        starts[1:] = ordered[1:] != ordered[:-1]  # NaN != NaN: every NaN is its own value
        values = ordered[starts]
        inverse = counts = np.zeros(0, np.int64)
        if want_inverse:
            inverse = np.empty(flat.shape, np.int64)
            inverse[order] = np.cumsum(starts) - 1
            inverse = inverse.reshape(x.shape)
        if want_counts:
            counts = np.diff(np.append(np.flatnonzero(starts), flat.size)).astype(np.int64)
        return values, inverse, counts

    def backward(ctx, *grads):
        raise NotImplementedError(f"the derivative for '{_UNIQUE_ATEN[ctx.name()]}' is not implemented.")


_UNIQUE_ATEN = {"Unique2Backward0": "_unique2", "UniqueDimBackward0": "unique_dim",
                "UniqueConsecutiveBackward0": "unique_consecutive"}


def _unique_consecutive(x, dim):
    """Vectorized: an element (slice) starts a new group where it differs from the previous one."""
    if dim is None:
        flat = x.reshape(-1)
        n = flat.size
        starts = np.ones(n, bool)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse_shape = x.shape
    else:
        moved = np.moveaxis(x, dim, 0)
        n = moved.shape[0]
        rest = int(np.prod(moved.shape[1:]))  # explicit: reshape(n, -1) cannot infer it when n == 0
        if n and not rest:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        rows = moved.reshape(n, rest)
        starts = np.ones(n, bool)
        starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        values = np.compress(starts, x, axis=dim)
        inverse_shape = (n,)
    inverse = (np.cumsum(starts) - 1).reshape(inverse_shape)
    counts = np.diff(np.append(np.flatnonzero(starts), n))
    return values, inverse.astype(np.int64), counts.astype(np.int64)


def _unique_result(values, inverse, counts, return_inverse, return_counts):
    if not return_inverse and not return_counts:
        return values
    r = (values,)
    if return_inverse:
        r += (inverse,)
    if return_counts:
        r += (counts,)
    return r


@register()
@numpy_names
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Always sorted: torch's CPU kernel sorts for sorted=False too."""
    check_tensor(input, "unique")
    refuse_complex(input, "unique" if dim is None else "unique_dim")
    d = None if dim is None else one_dim(dim, input._data.ndim)
    values, inverse, counts = Unique.apply(input, dim=d, consecutive=False, want_inverse=return_inverse,
                                           want_counts=return_counts)
    if d is not None and values._grad_fn is not None:
        values._grad_fn._name = "UniqueDimBackward0"
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


@register()
@numpy_names
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    check_tensor(input, "unique_consecutive")
    refuse_complex(input, "unique" if dim is None else "unique_dim")
    d = None if dim is None else one_dim(dim, input._data.ndim)
    values, inverse, counts = Unique.apply(input, dim=d, consecutive=True, want_inverse=True, want_counts=True)
    if values._grad_fn is not None:
        values._grad_fn._name = "UniqueConsecutiveBackward0"
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


# ---- bincount / histc --------------------------------------------------------------------------

class Bincount(Op):
    _name = "NotImplemented"

    @staticmethod
    def forward(ctx, x, weights, minlength, dtype):
        r = np.bincount(x, weights=weights, minlength=minlength)
        return r.astype(dtype, copy=False)

    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::bincount is not implemented")


@register()
def bincount(input, weights=None, minlength=0):
    check_tensor(input, "bincount")
    d = input._dtype
    if d.category != D.INT:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{D.SCALAR_NAMES[d]}'")
    x = input._data
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights._data.ndim != 1 or weights._data.shape[0] != x.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None:
        dtype = np.int64
    else:
        dtype = np.float32 if weights._dtype is D.float32 else np.float64
    return Bincount.apply(input, weights, minlength=minlength, dtype=dtype)


@register()
def histc(input, bins=100, min=0, max=0, *, out=None):
    """Counts in `bins` equal-width bins over [min, max] (the data's range when min == max);
    values outside are ignored, max itself goes to the last bin. Not differentiable (as torch)."""
    check_tensor(input, "histc")
    if input._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{D.SCALAR_NAMES[input._dtype]}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    x = input._data.reshape(-1)
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    edges = _linspace_edges(lo, hi, bins, x.dtype)
    inside = (x >= edges[0]) & (x <= edges[-1])
    v = x[inside]
    pos = ((v.astype(np.float64) - float(edges[0])) * bins / (float(edges[-1]) - float(edges[0]))).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    # the float edges decide, not the rounded division: step one bin where they disagree
    pos = pos - (v < edges[pos])
    pos = pos + ((pos < bins - 1) & (v >= edges[np.minimum(pos + 1, bins)]))
    counts = np.bincount(pos, minlength=bins).astype(x.dtype)
    return finish(_make(counts), out, "histc")


def _linspace_edges(lo, hi, bins, dtype):
    """bins + 1 evenly spaced edges, computed from both ends as torch's linspace does."""
    i = np.arange(bins + 1, dtype=np.float64)
    step = (hi - lo) / bins
    half = (bins + 1) // 2
    edges = np.where(i < half, lo + step * i, hi - step * (bins - i))
    return edges.astype(dtype)
