"""Gather/scatter family: gather, scatter(_add/_reduce), index_select/add/copy/fill,
take_along_dim, and the *_scatter ops (select/slice/diagonal) that embed one tensor in another.

Backward formulas are written with these same ops (gather <-> scatter_add, index_select <->
index_add), so double backward works. Duplicate indices are summed with the sorted-rows
helper in the backend (B.index_add_rows) or NumPy's fast 1-d add.at.
"""
import warnings

import numpy as np

from .. import _dtype as D
from .._backend import check_internal_overlap, shares_elements
from .._backend import numpy_cpu as B
from .._tensor import Tensor, _wrap_dim
from ..autograd import grad_mode
from ._argcheck import invalid_combination
from ._limited import check_class_op
from ._registry import Op, assign_result, check_inplace, install, register, write_out
from .complex import cj

_make = Tensor._make
_state = grad_mode._state


# ---- Note [In-place without copies] ----------------------------------------------------------
# An op here is planned once: plan(input, *args) validates the arguments and returns
# (op class, tensor inputs, params). The out-of-place function applies the op (its forward
# copies the input first); the in-place variant, when no graph is needed, runs the same
# forward with into=True straight on self's array: index_add_ on a 100 MB weight must not
# copy it twice. With a graph, it computes out of place and assign_result records history.

def apply_plan(input, plan):
    cls, tensors, params = plan
    return cls.apply(input, *tensors, **params)


def _direct_ok(self, args, kwargs):
    x = self._data
    if not (x.flags.c_contiguous and x.flags.writeable):
        return False
    root = B.storage_root(x)
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            if _state.enabled and a._requires_grad:
                return False
            if B.storage_root(a._data) is root:  # the op would read what it writes
                return False
    return not (_state.enabled and self._requires_grad)


OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")


def check_no_overlap(self, args, kwargs):
    """torch refuses in-place index/scatter writes whose inputs share memory with self."""
    x = self._data
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor) and np.may_share_memory(x, a._data):
            raise RuntimeError(OVERLAP)


def inplace_variant(fn, name, plan=None, no_overlap=True, expanded=None):
    """name_ for an out-of-place op fn (see Note [In-place without copies]). no_overlap: refuse inputs that
    share memory with self. An expanded self is refused, or, where torch still writes into one with a
    deprecation warning, `expanded` is the warning's example (Note [Expanded self])."""
    def inplace(input, *args, **kwargs):
        check_inplace(input)
        if expanded is None:
            check_internal_overlap(input._data)
        elif shares_elements(input._data):
            warnings.warn(f"Use of {name} on expanded tensors is deprecated. Please clone() the tensor before "
                          f"performing this operation. This also applies to advanced indexing e.g. {expanded}",
                          UserWarning, stacklevel=2)
        if no_overlap:
            check_no_overlap(input, args, kwargs)
        if plan is not None and _direct_ok(input, args, kwargs):
            cls, tensors, params = plan(input, *args, **kwargs)
            if input._dtype.limited:  # (Op.apply checks this on the other path)
                check_class_op(cls, input._dtype)
            arrays = [t._data if isinstance(t, Tensor) else t for t in tensors]
            cls.forward(object.__new__(cls), input._data, *arrays, into=True, **params)
            input._version_counter.value += 1
            return input
        return assign_result(input, fn(input, *args, **kwargs), name)
    inplace.__name__ = inplace.__qualname__ = name
    install(inplace, name, function=False)
    return inplace


def _start(x, into):
    """The array a kernel writes: x itself for the in-place path, else a C-ordered copy."""
    return x if into else np.array(x, copy=True, order="C")


# ---- index along a dim --------------------------------------------------------------------

def _index_tensor(index, name, dtypes=(np.int64,)):
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.dtype not in dtypes and index._data.size:  # torch lets an empty index of any dtype through
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")
    if index._data.dtype not in dtypes:
        return index._data.astype(np.int64)
    return index._data


def _dim_key(index, dim):
    """The NumPy key that pairs every position of `index` with its target along dim:
    index itself at dim, broadcast aranges elsewhere (index may be smaller than the input)."""
    nd = index.ndim
    key = []
    for d in range(nd):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * nd
            shape[d] = index.shape[d]
            key.append(np.arange(index.shape[d]).reshape(shape))
    return tuple(key)


def _check_dim_index(x, dim, index, name, src=None):
    """torch's shape rules for gather/scatter: same ndim, index no larger than self (and src)
    outside dim; indices in range."""
    if max(index.ndim, 1) != max(x.ndim, 1) and index.size:  # torch compares ensure_nonempty_dim of both
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           f"{'input' if name == 'gather' else 'self'} tensor")
    for d in range(index.ndim if index.size else 0):  # torch checks no sizes for an empty index
        if d == dim:
            continue
        if x.ndim and index.shape[d] > x.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be no "
                               f"larger than self {list(x.shape)} apart from dimension {dim}")
        if src is not None and src.ndim and index.shape[d] > src.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be no "
                               f"larger than src {list(src.shape)}")
    n = x.shape[dim] if x.ndim else 1
    if index.size:
        lo, hi = index.min(), index.max()
        if lo < 0 or hi >= n:  # no wrapping of negative indices here (unlike index_select)
            bad = index.flat[np.argmax(((index < 0) | (index >= n)).ravel())]  # torch names the first, in C order
            raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {n}")


def _wrap(index, n):
    return np.where(index < 0, index + n, index) if index.size and index.min() < 0 else index


def _as_nd(x):
    return x.reshape(1) if x.ndim == 0 else x


# ---- gather -----------------------------------------------------------------------------------

class Gather(Op):
    _name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, index, dim):
        ctx.save_for_backward(index)
        ctx.args = (x.shape, dim)
        if not index.size:  # torch: an empty index (any shape, any integer dtype) gathers nothing
            return np.empty(index.shape, x.dtype)
        xx = _as_nd(x)
        idx = _wrap(_as_nd(index), xx.shape[dim])
        return xx[_dim_key(idx, dim)].reshape(index.shape)

    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.args
        if not index.numel():
            return grad.new_zeros(shape), None
        return grad.new_zeros(shape).scatter_add(dim, index, grad), None


@register()
def gather(input, dim, index, *, sparse_grad=False, out=None):
    idx = _index_tensor(index, "gather", (np.int64, np.int32))
    d = _wrap_dim(dim, input._data.ndim)
    _check_dim_index(input._data, d, idx, "gather")
    r = Gather.apply(input, index, dim=d)
    return r if out is None else write_out(out, r, "gather", inputs=(input, index), exact_dtype=True)


# ---- scatter ----------------------------------------------------------------------------------

def _scatter_into(out, index, src, dim, reduce):
    """out[index positions along dim] (op)= src (src cut to index's shape)."""
    o = _as_nd(out)
    idx = _wrap(_as_nd(index), o.shape[dim])
    key = _dim_key(idx, dim)
    if src is None:
        vals = None
    else:
        s = _as_nd(src)
        vals = s[tuple(slice(0, n) for n in idx.shape)] if s.shape != idx.shape else s
        vals = vals.astype(out.dtype, copy=False)
    if reduce is None:
        o[key] = vals
        return out
    if reduce == "sum":
        B.flat_add_at(o, np.ravel_multi_index(np.broadcast_arrays(*key), o.shape), vals)
        return out
    ufunc = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    ufunc.at(o, key, vals)
    return out


class Scatter(Op):
    """scatter with a src tensor (ScatterBackward0) or a value (ScatterBackward1)."""
    _name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, x, index, src, dim, value=None, reduce=None, into=False):
        ctx.save_for_backward(index)
        ctx.dim = dim
        if src is None:
            ctx._name = "ScatterBackward1"
            src = np.full(index.shape, value, dtype=x.dtype)
        out = _start(x, into)
        _scatter_into(out, index, src, dim, None if reduce is None else
                      {"add": "sum", "multiply": "prod"}[reduce])
        ctx.reduce = reduce
        return out

    def backward(ctx, grad):
        if ctx.reduce is not None:
            raise RuntimeError("the derivative for 'scatter' with reduce is not implemented.")
        (index,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = grad.scatter(ctx.dim, index, 0) if need[0] else None
        # index-shaped, like torch: a src larger than index fails the engine's shape check there too
        gs = grad.gather(ctx.dim, index) if need[2] else None
        return gx, None, gs


def _reduce_arg(reduce, name):
    if reduce is None:
        return None
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    return reduce


_SCATTER_OVERLOADS = ("Tensor input, int dim, Tensor index, Tensor src, *, Tensor out = None",
                      "Tensor input, int dim, Tensor index, Tensor src, *, str reduce, Tensor out = None",
                      "Tensor input, int dim, Tensor index, Number value, *, Tensor out = None",
                      "Tensor input, int dim, Tensor index, Number value, *, str reduce, Tensor out = None")


def _scatter_plan(input, dim, index, src=None, value=None, *, reduce=None):
    if src is not None and value is not None:  # one overload takes src, the other value: never both
        raise invalid_combination("scatter", (input, dim, index, src, value), {} if reduce is None else
                                  {"reduce": reduce}, _SCATTER_OVERLOADS)
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    idx = _index_tensor(index, "scatter", (np.int64, np.int32))
    d = _wrap_dim(dim, input._data.ndim)
    if src is not None:
        if src._dtype is not input._dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        _check_dim_index(input._data, d, idx, "scatter", src._data)
    else:
        _check_dim_index(input._data, d, idx, "scatter")
        if isinstance(value, Tensor):
            value = value.item()
    return Scatter, (index, src), dict(dim=d, value=value, reduce=_reduce_arg(reduce, "scatter"))


@register()
def scatter(input, dim, index, src=None, value=None, *, reduce=None, out=None):
    r = apply_plan(input, _scatter_plan(input, dim, index, src, value, reduce=reduce))
    return r if out is None else write_out(out, r, "scatter")


inplace_variant(scatter, "scatter_", _scatter_plan)


class ScatterReduce(Op):
    """scatter_reduce / scatter_add: reduce src into self at index along dim."""
    _name = "ScatterReduceBackward0"

    @staticmethod
    def forward(ctx, x, index, src, dim, reduce, include_self, into=False):
        ctx.args = (dim, reduce, include_self)
        # torch's forward still takes the old names max/min; its backward refuses them
        reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
        out = _start(x, into)
        if not include_self or reduce == "mean":
            identity = _identity(reduce, x.dtype)
            if not include_self:
                _scatter_into(out, index, np.full(index.shape, identity, dtype=x.dtype), dim, None)
        kernel = "sum" if reduce == "mean" else reduce
        _scatter_into(out, index, src, dim, kernel)
        if reduce == "mean":
            count = _counts(x, index, dim, include_self)
            if out.dtype.kind in "fc":
                np.divide(out, count.astype(out.dtype), out=out)
            else:
                np.floor_divide(out, count.astype(out.dtype), out=out)
            ctx.count = count
        ctx.save_for_backward(x, index, src, out)
        return out

    def backward(ctx, grad):
        dim, reduce, include_self = ctx.args
        if reduce in ("max", "min"):
            raise RuntimeError(f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got "
                               f"{reduce}.")
        x, index, src, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = gs = None
        if reduce == "sum":
            if need[0]:
                gx = grad if include_self else grad.scatter(dim, index, 0)
            if need[2]:
                gs = grad.gather(dim, index)
        elif reduce == "mean":
            count = _make(ctx.count.astype(grad._data.dtype))
            g = grad / count
            if need[0]:
                gx = g if include_self else g.scatter(dim, index, 0)
            if need[2]:
                gs = g.gather(dim, index)
        elif reduce == "prod":
            gx, gs = _prod_grads(grad, x, index, _cut(src, index), out, dim, include_self, need)
        else:
            gx, gs = _minmax_grads(grad, x, index, _cut(src, index), out, dim, include_self, need)
        return gx, None, gs


def _cut(src, index):
    """The part of src that index reaches (src may be larger than index outside dim)."""
    if src._data.shape == index._data.shape:
        return src
    if src._data.ndim == 0:  # index_reduce of a 0-d source: its index is (1,)
        return src.reshape(index._data.shape)
    return src[tuple(slice(0, n) for n in index._data.shape)]


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind in "fc":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _counts(x, index, dim, include_self):
    count = np.full(x.shape, 1 if include_self else 0, dtype=np.int64)
    _scatter_into(count, index, np.ones(index.shape, dtype=np.int64), dim, "sum")
    return np.maximum(count, 1)


def _prod_grads(grad, x, index, src, out, dim, include_self, need):
    """d out / d self = product of the src values reduced into it; d out / d src_j = the product
    of everything else at its position (exact with zeros: no division by a zero src)."""
    gx = gs = None
    ones = x.new_ones(x.shape)
    src_prod = ones.scatter_reduce(dim, index, src, "prod")
    if need[0]:
        gx = grad * cj(src_prod) if include_self else grad.scatter(dim, index, 0)
    if need[2]:
        nonzero_src = src.masked_fill(src == 0, 1)
        zero_count = x.new_zeros(x.shape).scatter_add(dim, index, (src == 0).to(x.dtype))
        prod_nonzero = ones.scatter_reduce(dim, index, nonzero_src, "prod")
        if include_self:
            prod_nonzero = prod_nonzero * x
        g_pos = (grad * cj(prod_nonzero)).gather(dim, index)
        zc = zero_count.gather(dim, index)
        is_zero = src == 0
        # nonzero src: the others' product is prod_nonzero / src_j when no zero sits there, else 0
        g_nonzero = (g_pos / cj(nonzero_src)).masked_fill(zc != 0, 0)  # (a count; != also works for complex)
        # a zero src: the others' product is prod_nonzero when it is the only zero there, else 0
        g_zero = g_pos.masked_fill(zc != 1, 0)
        from .pointwise import where
        gs = where(is_zero, g_zero, g_nonzero)
    return gx, gs


def _minmax_grads(grad, x, index, src, out, dim, include_self, need):
    """amax/amin: the gradient is shared evenly among all values equal to the result."""
    gx = gs = None
    picked = out.gather(dim, index)
    src_hits = (src == picked).to(grad.dtype)
    self_hits = (x == out).to(grad.dtype)
    if not include_self:
        self_hits = self_hits.scatter(dim, index, 0)
    count = self_hits.scatter_add(dim, index, src_hits)
    g = grad / count.masked_fill(count == 0, 1)
    if need[0]:
        gx = g * self_hits
    if need[2]:
        gs = g.gather(dim, index) * src_hits
    return gx, gs


def _scatter_reduce_plan(input, dim, index, src, reduce, *, include_self=True):
    if reduce not in ("sum", "prod", "mean", "amax", "amin", "max", "min"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    idx = _index_tensor(index, "scatter_reduce", (np.int64, np.int32))
    if src._dtype is not input._dtype:
        raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to src.dtype")
    d = _wrap_dim(dim, input._data.ndim)
    _check_dim_index(input._data, d, idx, "scatter_reduce", src._data)
    return ScatterReduce, (index, src), dict(dim=d, reduce=reduce, include_self=bool(include_self))


@register()
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    r = apply_plan(input, _scatter_reduce_plan(input, dim, index, src, reduce, include_self=include_self))
    return r if out is None else write_out(out, r, "scatter_reduce")


inplace_variant(scatter_reduce, "scatter_reduce_", _scatter_reduce_plan)


class ScatterAdd(ScatterReduce):
    _name = "ScatterAddBackward0"


def _scatter_add_plan(input, dim, index, src):
    idx = _index_tensor(index, "scatter_add", (np.int64, np.int32))
    if src._dtype is not input._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = _wrap_dim(dim, input._data.ndim)
    _check_dim_index(input._data, d, idx, "scatter_add", src._data)
    return ScatterAdd, (index, src), dict(dim=d, reduce="sum", include_self=True)


@register()
def scatter_add(input, dim, index, src, *, out=None):
    r = apply_plan(input, _scatter_add_plan(input, dim, index, src))
    return r if out is None else write_out(out, r, "scatter_add")


inplace_variant(scatter_add, "scatter_add_", _scatter_add_plan)


# ---- take_along_dim ---------------------------------------------------------------------------

@register()
def take_along_dim(input, indices, dim=None, *, out=None):
    """Composite: gather on the broadcast of input and indices (flattened when dim is None)."""
    if not isinstance(indices, Tensor) or indices._dtype is not D.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{D.SCALAR_NAMES[indices._dtype] if isinstance(indices, Tensor) else type(indices)}")
    if dim is None:
        r = input.reshape(-1).gather(0, indices.reshape(-1))
    else:
        nd = input._data.ndim
        if nd != indices._data.ndim:
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                               f"dimensions, but got {nd} dimensions for input, and {indices._data.ndim} "
                               f"dimensions for indices")
        d = _wrap_dim(dim, nd)
        a = list(input._data.shape)
        b = list(indices._data.shape)
        a[d] = 1
        b[d] = 1
        try:
            common = list(np.broadcast_shapes(tuple(a), tuple(b)))
        except ValueError:
            from ._registry import shapes_error
            raise shapes_error("take_along_dim", np.broadcast_to(0, a), np.broadcast_to(0, b)) from None
        shape_in = common.copy()
        shape_in[d] = input._data.shape[d]
        shape_idx = common.copy()
        shape_idx[d] = indices._data.shape[d]
        idx = indices._data
        if idx.size and idx.min() < 0:  # along a dim, torch counts negative indices from the end
            indices = Tensor._make(np.where(idx < 0, idx + input._data.shape[d], idx), D.int64)
        r = input.expand(shape_in).gather(d, indices.expand(shape_idx))
    return r if out is None else write_out(out, r, "take_along_dim")


from . import index_ops, window  # noqa: E402,F401  (index_* ops; select/slice/diagonal_scatter)
