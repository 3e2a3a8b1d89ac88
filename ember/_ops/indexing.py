"""Indexing: __getitem__/__setitem__, cat/stack, masked ops, gather/scatter, index_* ...

Basic indexing (ints, slices, None, Ellipsis) returns a view like torch; any tensor,
list or boolean index makes a copy (advanced indexing, NumPy's rules, which torch follows).
"""
import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from .._tensor import Tensor, _wrap_dim
from ..autograd import grad_mode
from ._registry import Op, assign_result, check_inplace, install, make_inplace, register, write_out

_make = Tensor._make
_state = grad_mode._state


# ---- index keys -----------------------------------------------------------------------

def _convert_index(item):
    """One index item to what NumPy expects; (converted, is_advanced)."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        if isinstance(item, slice):
            if item.step is not None:
                step = int(item.step)
                if step <= 0:
                    raise ValueError("step must be greater than zero")
            item = slice(_idx(item.start), _idx(item.stop), _idx(item.step))
        return item, False
    if isinstance(item, bool):
        return item, True
    if isinstance(item, int):
        return item, False
    if isinstance(item, Tensor):
        d = item._dtype
        if d is D.bool or d is D.uint8:
            return item._data.astype(bool, copy=False), True
        if d.category != D.INT:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return item._data, True
    if isinstance(item, np.ndarray):
        return item, True
    if isinstance(item, (list, tuple)):
        arr = np.array([_list_item(v) for v in item]) if item else np.array([], dtype=np.int64)
        if arr.dtype.kind not in "iub":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return arr, True
    if hasattr(item, "__index__"):
        return int(item.__index__()), False
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                     "indices (got " + type(item).__name__ + ")")


def _list_item(v):
    if isinstance(v, Tensor):
        return v._data
    if isinstance(v, (list, tuple)):
        return [_list_item(u) for u in v]
    return v


def _idx(v):
    if v is None or isinstance(v, int):
        return v
    return int(v.__index__())


def convert_key(key):
    """(numpy key, has_advanced). A bare list is one advanced index, as in torch."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    adv = False
    for item in key:
        k, a = _convert_index(item)
        out.append(k)
        adv = adv or a
    return tuple(out), adv


def _check_ints(x, key):
    """IndexError with torch's wording for out-of-range integer indices."""
    dim = 0
    for i, k in enumerate(key):
        if k is None:
            continue
        if k is Ellipsis:
            rest = sum(1 for kk in key[i + 1:] if kk is not None and kk is not Ellipsis)
            dim = x.ndim - rest
            continue
        if isinstance(k, int) and not isinstance(k, bool):
            if dim >= x.ndim:
                raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
            n = x.shape[dim]
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {n}")
        dim += 1


# ---- getitem ---------------------------------------------------------------------------

class Index(Op):
    """Advanced indexing: a copy."""
    _name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, key):
        ctx.in_shape = x.shape
        ctx.key = key
        return x[key]

    def backward(ctx, grad):
        return IndexPut.apply(None, grad, key=ctx.key, accumulate=True, shape=ctx.in_shape)


class IndexPut(Op):
    """out = copy of x (or zeros of `shape`) with out[key] = v (or += v when accumulate)."""
    _name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, v, key, accumulate, shape=None):
        ctx.key = key
        ctx.accumulate = accumulate
        out = np.zeros(shape, dtype=v.dtype) if x is None else x.copy()
        v = v.astype(out.dtype, copy=False)
        if accumulate:
            np.add.at(out, key, v)
        else:
            out[key] = v
        return out

    def backward(ctx, grad):
        need = ctx.needs_input_grad
        gx = gv = None
        if need[0]:
            gx = grad if ctx.accumulate else IndexPut.apply(grad, grad.new_zeros(()), key=ctx.key,
                                                            accumulate=False)
        if need[1]:
            gv = Index.apply(grad, key=ctx.key)
        return gx, gv


def getitem(self, key):
    from .shape import Slice
    k, adv = convert_key(key)
    x = self._data
    if not adv:
        _check_ints(x, k)
        if len(k) == 1 and k[0] is Ellipsis:
            return Slice.apply(self, key=k, name="AliasBackward0")
        return Slice.apply(self, key=k, name=_basic_name(k))
    try:
        return Index.apply(self, key=k)
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None


def _basic_name(k):
    kinds = [type(i) for i in k if i is not Ellipsis]
    if kinds and all(t is int for t in kinds):
        return "SelectBackward0"
    if kinds and all(t is type(None) for t in kinds):
        return "UnsqueezeBackward0"
    return "SliceBackward0"


def setitem(self, key, value):
    k, adv = convert_key(key)
    if not adv:
        _check_ints(self._data, k)
    check_inplace(self)
    v = value
    if isinstance(v, Tensor):
        v_arr = v._data
    elif isinstance(v, (int, float, bool, complex, np.number, np.bool_)):
        v_arr = np.array(v)
    else:
        from .creation import tensor
        v = tensor(v, dtype=self._dtype)
        v_arr = v._data
    needs = _state.enabled and (self._requires_grad or (isinstance(v, Tensor) and v._requires_grad))
    if not needs:
        try:
            self._data[k] = v_arr.astype(self._data.dtype, copy=False) if v_arr.dtype != self._data.dtype \
                else v_arr
        except ValueError as e:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v_arr.shape)} cannot be broadcast "
                               f"to indexing result of shape {list(self._data[k].shape)}") from None
        except IndexError as e:
            raise IndexError(str(e).replace("axis", "dimension")) from None
        self._version.value += 1
        return
    if not isinstance(v, Tensor):
        v = _make(v_arr.astype(self._data.dtype))
    r = IndexPut.apply(self, v.to(self._dtype), key=k, accumulate=False)
    assign_result(self, r, "index_put_")


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem


# ---- backward helpers of view ops --------------------------------------------------------

class SliceScatter(Op):
    """zeros(in_shape) with the basic-index window `key` set to src (SliceBackward's formula)."""
    _name = "SliceScatterBackward0"

    @staticmethod
    def forward(ctx, src, in_shape, key):
        ctx.key = key
        out = np.zeros(in_shape, dtype=src.dtype)
        out[key] = src
        return out

    def backward(ctx, grad):
        from .shape import Slice
        return Slice.apply(grad, key=ctx.key)


def slice_backward(grad, in_shape, key):
    return SliceScatter.apply(grad, in_shape=in_shape, key=key)


class UnfoldBackward(Op):
    _name = "UnfoldBackwardBackward0"

    @staticmethod
    def forward(ctx, g, in_shape, dim, size, step):
        ctx.args = (dim, size, step)
        out = np.zeros(in_shape, dtype=g.dtype)
        n = g.shape[dim]
        positions = np.arange(n) * step
        for k in range(size):
            idx = (slice(None),) * dim + (positions + k,)
            out[idx] += g[..., k]
        return out

    def backward(ctx, grad):
        return grad.unfold(*ctx.args)


def unfold_backward(grad, in_shape, dim, size, step):
    return UnfoldBackward.apply(grad, in_shape=in_shape, dim=dim, size=size, step=step)


class DiagonalBackward(Op):
    _name = "DiagonalBackwardBackward0"

    @staticmethod
    def forward(ctx, g, in_shape, offset, dim1, dim2):
        ctx.args = (offset, dim1, dim2)
        out = np.zeros(in_shape, dtype=g.dtype)
        B.diagonal_view(out, offset, dim1, dim2)[...] = g
        return out

    def backward(ctx, grad):
        return grad.diagonal(*ctx.args)


def diagonal_backward(grad, in_shape, offset, dim1, dim2):
    return DiagonalBackward.apply(grad, in_shape=in_shape, offset=offset, dim1=dim1, dim2=dim2)


# ---- cat / stack --------------------------------------------------------------------------

class Cat(Op):
    _name = "CatBackward0"

    @staticmethod
    def forward(ctx, *arrays, dim, dtype):
        ctx.dim = dim
        ctx.sizes = [a.shape[dim] if a.ndim else 0 for a in arrays]
        ctx.skipped = [a.ndim == 1 and a.shape[0] == 0 for a in arrays]
        used = [a for a in arrays if not (a.ndim == 1 and a.shape[0] == 0)] or [arrays[0]]
        return np.concatenate([a.astype(dtype, copy=False) for a in used], axis=dim if used[0].ndim else 0)

    def backward(ctx, grad):
        outs = []
        start = 0
        for size, skipped in zip(ctx.sizes, ctx.skipped):
            if skipped:
                outs.append(None)
                continue
            outs.append(grad.narrow(ctx.dim, start, size))
            start += size
        return tuple(outs)


def _tensor_list(tensors, name):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


@register(method=False, aliases=("concat", "concatenate"))
def cat(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    ref = next((t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)), tensors[0])
    nd = ref._data.ndim
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    d = _wrap_dim(dim, nd)
    for i, t in enumerate(tensors):
        if t._data.ndim == 1 and t._data.shape[0] == 0 and nd != 1:
            continue
        if t._data.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {t._data.ndim}")
        for j in range(nd):
            if j != d and t._data.shape[j] != ref._data.shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref._data.shape[j]} but got size {t._data.shape[j]} for tensor number {i} "
                                   f"in the list.")
    dtype = tensors[0]._dtype
    for t in tensors[1:]:
        dtype = D.promote_types(dtype, t._dtype)
    r = Cat.apply(*tensors, dim=d, dtype=dtype.np)
    return r if out is None else write_out(out, r, "cat")


@register(method=False)
def stack(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                               f"and {list(t._data.shape)} at entry {i}")
    d = _wrap_dim(dim, len(shape) + 1)
    r = cat([t.unsqueeze(d) for t in tensors], d)
    if r._grad_fn is not None:
        r._grad_fn._name = "StackBackward0"
    return r if out is None else write_out(out, r, "stack")


# ---- masked ops ------------------------------------------------------------------------------

class MaskedFill(Op):
    _name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        return np.where(mask, value.astype(x.dtype), x)

    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = grad.masked_fill(mask, 0) if need[0] else None
        gv = grad.masked_fill(~mask, 0).sum() if need[2] else None
        return gx, None, gv


@register(inplace=True)
def masked_fill(input, mask, value):
    if not isinstance(mask, Tensor) or mask._dtype not in (D.bool, D.uint8):
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    if mask._dtype is D.uint8:
        mask = mask.bool()
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        v = value
    else:
        v = _make(np.array(value, dtype=input._data.dtype))
    try:
        return MaskedFill.apply(input, mask, v)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({input.shape[-1] if input.ndim else 1}) must match the size "
                           f"of tensor b ({mask.shape[-1] if mask.ndim else 1}) at non-singleton dimension "
                           f"{max(input.ndim, mask.ndim) - 1}") from None
