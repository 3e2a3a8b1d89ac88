"""The index_* family along one dim: index_select, index_add, index_copy, index_fill,
index_reduce. Backward formulas pair index_select with index_add; duplicate indices are
summed by the backend's sorted-rows helper (B.index_add_rows)."""
import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from .._tensor import Tensor, _wrap_dim
from ._limited import refuse
from ._registry import Op, register, write_out
from .scatter import ScatterReduce, _start, _wrap, apply_plan, inplace_variant

_make = Tensor._make


def _index_reduce_plan(input, dim, index, source, reduce, *, include_self=True):
    """index_reduce as scatter_reduce with index broadcast along source's other dims."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = _wrap_dim(dim, input._data.ndim)
    idx = _vector_index(index, "index_reduce", input._data, d)
    if source._dtype is not input._dtype:
        raise RuntimeError(f"index_reduce_(): self ({D.SCALAR_NAMES[input._dtype]}) and source "
                           f"({D.SCALAR_NAMES[source._dtype]}) must have the same scalar type")
    _check_index_source("index_reduce_", input._data, d, idx, source._data)
    shape = [1] * max(source._data.ndim, 1)
    shape[d] = -1
    full = _make(np.ascontiguousarray(np.broadcast_to(idx.reshape(shape), source._data.shape or (1,))))
    return IndexReduce, (full, source), dict(dim=d, reduce=reduce, include_self=bool(include_self))


class IndexReduce(ScatterReduce):
    _name = "IndexReduceBackward0"


@register()
def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    r = apply_plan(input, _index_reduce_plan(input, dim, index, source, reduce, include_self=include_self))
    return r if out is None else write_out(out, r, "index_reduce")


inplace_variant(index_reduce, "index_reduce_", _index_reduce_plan)


# ---- index_select / index_add / index_copy / index_fill -------------------------------------

def _vector_index(index, name, x, dim):
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    idx = index._data
    if idx.ndim > 1:
        if name == "index_fill":  # torch's index_fill checks it as a RuntimeError
            raise RuntimeError("Index has to be a vector/scalar")
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if idx.dtype not in (np.int64, np.int32):
        raise IndexError(f"{name}(): Expected dtype int32/int64 for index")
    idx = idx.reshape(-1)
    n = x.shape[dim] if x.ndim else 1
    lowest = -n if name == "index_fill" else 0  # only index_fill counts negative indices from the end
    if idx.size and (idx.min() < lowest or idx.max() >= n):
        bad = int(idx[(idx < lowest) | (idx >= n)][0])
        raise _OUT_OF_RANGE.get(name, _out_of_range_in_self)(bad, dim, n)
    return _wrap(idx, n)


def _out_of_range_in_self(bad, dim, n):
    return IndexError("index out of range in self")


_OUT_OF_RANGE = {  # each kernel words its bounds error its own way
    "index_add": lambda bad, dim, n: RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {n}"),
    "index_copy": lambda bad, dim, n: IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {dim} "
                                                 f"with size {n}"),
    "index_fill": lambda bad, dim, n: IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}"),
}


class IndexSelect(Op):
    _name = "IndexSelectBackward0"

    @staticmethod
    def forward(ctx, x, index, dim):
        ctx.save_for_backward(index)
        ctx.args = (x.shape, dim)
        idx = _wrap(index.reshape(-1), x.shape[dim] if x.ndim else 1)
        if x.ndim == 0:
            return x.reshape(1)[idx].reshape(())  # a 0-d input gives a 0-d result (one index)
        return np.take(x, idx, axis=dim)

    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.args
        return grad.new_zeros(shape).index_add(dim, index, grad), None


@register()
def index_select(input, dim, index, *, out=None):
    d = _wrap_dim(dim, input._data.ndim)
    _vector_index(index, "index_select", input._data, d)
    if input._data.ndim == 0 and index._data.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index._data.size} value(s)")
    if input._data.ndim <= 1:
        refuse(input, "index_select")  # torch's 1-D kernel takes no uint16/32/64 (its n-D row copy does)
    r = IndexSelect.apply(input, index, dim=d)
    return r if out is None else write_out(out, r, "index_select", inputs=(input, index))


def _source_rows(source, x, dim, n):
    """source laid out as (len(index), rest...) rows along dim, as the kernels want."""
    s = source if source.ndim else source.reshape(1)
    return np.moveaxis(s, dim, 0) if x.ndim else s


def _check_index_source(name, x, dim, idx, source):
    if x.ndim and source.ndim and source.ndim != x.ndim:
        if name == "index_copy_":
            raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality "
                             f"must match. Source dimensionality ({source.ndim}), destination dimensionality "
                             f"({x.ndim})")
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(x.shape)} source.shape = {list(source.shape)}")
    n_src = source.shape[dim] if source.ndim else 1
    if idx.size != n_src:
        raise RuntimeError(f"{name}(): Number of indices ({idx.size}) should be equal to source.size(dim) "
                           f"({n_src})")
    for d in range(x.ndim):
        if d != dim and source.ndim and source.shape[d] != x.shape[d]:
            raise RuntimeError(f"{name}(): source ({list(source.shape)}) and destination ({list(x.shape)}) shapes do "
                               f"not match apart from dimension {dim}")


class IndexAdd(Op):
    _name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, x, index, source, dim, alpha, into=False):
        ctx.save_for_backward(index)
        ctx.args = (dim, alpha, source.shape)
        out = _start(x, into)
        idx = _wrap(index.reshape(-1), x.shape[dim] if x.ndim else 1)
        src = source.astype(out.dtype, copy=False)
        if alpha != 1:
            src = src * np.asarray(alpha, dtype=out.dtype)
        o = np.moveaxis(out, dim, 0) if out.ndim else out.reshape(1)
        B.index_add_rows(o, idx, _source_rows(src, x, dim, idx.size))
        return out

    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, alpha, source_shape = ctx.args
        need = ctx.needs_input_grad
        gx = grad if need[0] else None
        gs = None
        if need[2]:
            gs = grad.index_select(dim, index).reshape(source_shape)
            if alpha != 1:
                gs = gs * alpha
        return gx, None, gs


def _index_add_plan(input, dim, index, source, *, alpha=1):
    d = _wrap_dim(dim, input._data.ndim)
    idx = _vector_index(index, "index_add", input._data, d)
    if source._dtype is not input._dtype:
        raise RuntimeError(f"index_add_(): self ({D.SCALAR_NAMES[input._dtype]}) and source "
                           f"({D.SCALAR_NAMES[source._dtype]}) must have the same scalar type")
    _check_index_source("index_add_", input._data, d, idx, source._data)
    return IndexAdd, (index, source), dict(dim=d, alpha=alpha)


@register()
def index_add(input, dim, index, source, *, alpha=1, out=None):
    r = apply_plan(input, _index_add_plan(input, dim, index, source, alpha=alpha))
    return r if out is None else write_out(out, r, "index_add")


inplace_variant(index_add, "index_add_", _index_add_plan)


class IndexCopy(Op):
    _name = "IndexCopyBackward0"

    @staticmethod
    def forward(ctx, x, index, source, dim, into=False):
        ctx.save_for_backward(index)
        ctx.args = (dim, source.shape)
        out = _start(x, into)
        idx = _wrap(index.reshape(-1), x.shape[dim] if x.ndim else 1)
        o = np.moveaxis(out, dim, 0) if out.ndim else out.reshape(1)
        o[idx] = _source_rows(source.astype(out.dtype, copy=False), x, dim, idx.size)
        return out

    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, source_shape = ctx.args
        need = ctx.needs_input_grad
        gx = grad.index_fill(dim, index, 0) if need[0] else None
        gs = grad.index_select(dim, index).reshape(source_shape) if need[2] else None
        return gx, None, gs


def _index_copy_plan(input, dim, index, source):
    d = _wrap_dim(dim, input._data.ndim)
    idx = _vector_index(index, "index_copy", input._data, d)
    if source._dtype is not input._dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{D.SCALAR_NAMES[input._dtype]} and (source) {D.SCALAR_NAMES[source._dtype]}")
    _check_index_source("index_copy_", input._data, d, idx, source._data)
    return IndexCopy, (index, source), dict(dim=d)


@register()
def index_copy(input, dim, index, source, *, out=None):
    if out is not None and isinstance(out, Tensor) and out._dtype is not input._dtype:  # a structured op: out's
        _wrap_dim(dim, input._data.ndim)  # dtype is checked after the dim, before the index (torch's order)
        raise RuntimeError(f"Expected out tensor to have dtype {D.C_TYPE_NAMES[input._dtype]}, but got "
                           f"{D.C_TYPE_NAMES[out._dtype]} instead")
    r = apply_plan(input, _index_copy_plan(input, dim, index, source))
    return r if out is None else write_out(out, r, "index_copy", (index, source))  # out may be the input


inplace_variant(index_copy, "index_copy_", _index_copy_plan)


class IndexFill(Op):
    """index_fill with a number (IndexFillBackward0) or a 0-d tensor (IndexFillBackward1)."""
    _name = "IndexFillBackward0"

    @staticmethod
    def forward(ctx, x, index, value, dim, number, into=False):
        ctx.save_for_backward(index)
        ctx.dim = dim
        if value is not None:
            ctx._name = "IndexFillBackward1"
        out = _start(x, into)
        idx = _wrap(index.reshape(-1), x.shape[dim] if x.ndim else 1)
        o = np.moveaxis(out, dim, 0) if out.ndim else out.reshape(1)
        from .._backend import scalar_array
        o[idx] = value.astype(out.dtype) if value is not None else scalar_array(number, out.dtype)
        return out

    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = grad.index_fill(ctx.dim, index, 0) if need[0] else None
        gv = None
        if len(need) > 2 and need[2]:  # each filled slot once, as torch's grad.index_select(dim, unique(index)).sum()
            unique = Tensor._make(np.unique(index._data.reshape(-1)))  # (a negative index raises, as torch's)
            gv = grad.index_select(ctx.dim, unique).sum()
        return gx, None, gv


def _index_fill_plan(input, dim, index, value):
    d = _wrap_dim(dim, input._data.ndim)
    _vector_index(index, "index_fill", input._data, d)
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        return IndexFill, (index, value), dict(dim=d, number=None)
    return IndexFill, (index, None), dict(dim=d, number=value)


@register()
def index_fill(input, dim, index, value):
    return apply_plan(input, _index_fill_plan(input, dim, index, value))


inplace_variant(index_fill, "index_fill_", _index_fill_plan, no_overlap=False,
                expanded="tensor[mask] = scalar")
