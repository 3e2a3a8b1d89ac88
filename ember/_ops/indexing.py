"""Indexing: Tensor.__getitem__/__setitem__, index_put, masked ops, take/put, nonzero,
searchsorted/bucketize, and the backward helpers of view ops.

Note [torch's indexing order]: torch applies the basic part of a key first (ints select,
slices narrow, None unsqueezes, left to right, on the running result: a view), then one
advanced index with the remaining tensors on that view (a copy). This differs from NumPy
when ints mix with arrays (`x[0, :, [0, 1]]` is (3, 2) in torch, (2, 3) in NumPy), so the
key is parsed here rather than handed to NumPy whole.
"""
import warnings

import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from .._tensor import Tensor
from ..autograd import grad_mode
from ._limited import refuse
from ._registry import Op, assign_result, check_inplace, install, register
from .geometry import iter_strides, strides_of
from .shape import Slice

_make = Tensor._make
_state = grad_mode._state
_SCALARS = (int, float, bool, complex, np.number, np.bool_)


# ---- parsing a key ------------------------------------------------------------------------

def _treat_as_tuple(key):
    """torch's legacy rule: a short non-tuple sequence holding slices, None, Ellipsis, tensors or
    sequences is a tuple of indices (deprecated in torch, with a warning)."""
    if isinstance(key, tuple):
        return True
    if isinstance(key, (Tensor, str)) or not isinstance(key, (list, np.ndarray)):
        return False
    if len(key) >= 32:
        return False
    for item in key:
        if item is None or item is Ellipsis or isinstance(item, (Tensor, list, tuple, slice, np.ndarray)):
            warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
                          "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will "
                          "be interpreted as tensor index, x[torch.tensor(seq)], which will result either in an "
                          "error or a different result", UserWarning, stacklevel=4)
            return True
    return False


def _index_array(item):
    """A list/array index as an integer or bool ndarray (what a tensor index holds)."""
    if isinstance(item, np.ndarray):
        arr = item
    else:
        arr = np.array(_plain(item)) if len(item) else np.array([], dtype=np.int64)
    if arr.dtype.kind == "b" or arr.dtype == np.uint8:
        return arr.astype(bool, copy=False)
    if arr.dtype.kind in "US":  # torch makes a tensor of the sequence first
        raise TypeError(f"new(): invalid data type '{'str' if arr.dtype.kind == 'U' else 'bytes'}'")
    if arr.dtype.kind not in "iu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr.astype(np.int64, copy=False)


def _plain(v):
    if isinstance(v, Tensor):
        return v._data
    if isinstance(v, (list, tuple)):
        return [_plain(u) for u in v]
    return v


def _classify(item):
    """('none'|'ellipsis'|'bool'|'int'|'slice'|'array', value) for one index item."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, int):
        return "int", item
    if isinstance(item, slice):
        return "slice", item
    if isinstance(item, Tensor):
        d = item._dtype
        arr = item._data
        if d is D.bool or d is D.uint8:
            if arr.ndim == 0:
                return "bool", bool(arr)
            return "array", arr.astype(bool, copy=False)
        if d.category != D.INT:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if arr.ndim == 0:
            return "int", int(arr)
        return "array", arr
    if isinstance(item, (list, tuple, range, np.ndarray)):
        arr = _index_array(item)  # torch takes any sequence, e.g. x[range(n), y]
        if arr.ndim == 0 and arr.dtype != bool:
            return "int", int(arr)
        return "array", arr
    if hasattr(item, "__index__"):
        return "int", int(item.__index__())
    if isinstance(item, (str, bytes)):  # a sequence: torch makes a tensor of it first
        raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                     f"indices (got {type(item).__name__})")


class Parsed:
    """A key applied torch's way: the geometry of the basic-indexing view and the advanced
    indices left for it (see Note [torch's indexing order])."""
    __slots__ = ("shape", "strides", "offset", "np_key", "has_none", "identity", "adv", "last")


def parse_key(x, key):
    in_tuple = _treat_as_tuple(key)
    items = key if in_tuple else (key,)
    kinds = [_classify(item) for item in items]
    ndim = x.ndim
    specified = 0
    for kind, v in kinds:
        if kind in ("int", "slice"):
            specified += 1
        elif kind == "array":
            specified += v.ndim if v.dtype == bool else 1
    if specified > ndim:
        if ndim == 0 and kinds and kinds[0][0] == "int":
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    p = Parsed()
    shape = list(x.shape)
    strides = list(strides_of(x))
    offset = 0
    dim = 0
    real = 0
    np_key = []
    adv = []
    p.has_none = False
    p.identity = True
    p.last = None
    for kind, v in kinds:
        if kind == "ellipsis":  # torch allows several; each skips the unspecified dims
            skip = ndim - specified
            np_key.extend([slice(None)] * max(0, min(skip, ndim - real)))
            dim += skip
            real += skip
            continue
        if kind == "none" or kind == "bool":
            if dim > len(shape):
                n = len(shape)
                raise IndexError(f"Dimension out of range (expected to be in range of [{-n - 1}, {n}], but got "
                                 f"{dim})")
            stride = shape[dim] * strides[dim] if dim < len(shape) else 1
            shape.insert(dim, 1)
            strides.insert(dim, stride)
            np_key.append(None)
            p.has_none = True
            p.identity = False
            p.last = "UnsqueezeBackward0"
            if kind == "bool":  # unsqueeze, then index it with [0] (True) or [] (False)
                adv.append((dim, np.zeros(1 if v else 0, dtype=np.int64)))
            dim += 1
            continue
        if dim >= len(shape):
            if kind == "slice" and v.start in (None, 0) and v.stop is None and v.step in (None, 1):
                continue  # a full slice is skipped before its dim is looked at (several Ellipsis)
            raise IndexError(f"too many indices for tensor of dimension {ndim}")
        if kind == "int":
            n = shape[dim]
            if not -n <= v < n:
                raise IndexError(f"index {v} is out of bounds for dimension {real} with size {n}")
            if v < 0:
                v += n
            offset += v * strides[dim]
            del shape[dim]
            del strides[dim]
            np_key.append(v)
            p.identity = False
            p.last = "SelectBackward0"
            real += 1
            continue
        if kind == "slice":
            n = shape[dim]
            full = False
            if v.step is not None and _idx(v.step) <= 0:
                if _idx(v.step) == 0:
                    raise ValueError("slice step cannot be zero")
                raise ValueError("step must be greater than zero")
            start, stop, step = slice(_idx(v.start), _idx(v.stop), _idx(v.step)).indices(n)
            length = max(0, (stop - start + step - 1) // step)
            # torch skips (no op, no grad_fn) a slice written as full: start 0/None, stop >= size
            raw_start, raw_stop = _idx(v.start), _idx(v.stop)
            full = (raw_start in (None, 0) and step == 1 and (raw_stop is None or raw_stop >= n))
            if not full:
                p.identity = False
            offset += start * strides[dim]
            shape[dim] = length
            strides[dim] *= step
            np_key.append(slice(start, start + (length - 1) * step + 1 if length else start, step))
            if not (full and in_tuple):  # torch skips full slices inside a tuple key
                p.last = "SliceBackward0"
            dim += 1
            real += 1
            continue
        # advanced index: the basic view keeps these dims whole
        k = v.ndim if v.dtype == bool else 1
        if v.dtype == bool:
            _check_mask(v, shape, dim, x.shape)
        adv.append((dim, v))
        np_key.extend([slice(None)] * k)
        dim += k
        real += k
    p.shape = tuple(shape)
    p.strides = tuple(strides)
    p.offset = offset
    p.np_key = tuple(np_key)
    p.adv = adv
    return p


def _idx(v):
    if v is None or isinstance(v, int):
        return v
    if isinstance(v, Tensor):
        return int(v)
    return int(v.__index__())


def _check_mask(mask, shape, dim, full_shape):
    for j, n in enumerate(mask.shape):
        if dim + j >= len(shape) or shape[dim + j] != n:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does not match the shape of "
                             f"the indexed tensor {list(shape)} at index {dim + j}")


def adv_key(adv):
    """NumPy key for the advanced part: full slices before each index array."""
    key = []
    cur = 0
    for d, arr in adv:
        key.extend([slice(None)] * (d - cur))
        key.append(arr)
        cur = d + (arr.ndim if arr.dtype == bool else 1)
    return tuple(key)


def _index_strides(x, key, shape):
    """Strides torch's index kernel gives x[key] (key: full slices and index arrays): TensorIterator's
    order over the source, restrided to the result (0 on the indexed dims), then the index arrays."""
    dims = []  # per source dim: None (a full slice) or its index array
    for k in key:
        if isinstance(k, np.ndarray) and k.dtype == bool:
            dims.extend(np.nonzero(k) if k.ndim else [None])
        else:
            dims.append(k if isinstance(k, np.ndarray) else None)
    dims += [None] * (x.ndim - len(dims))
    adv = [d for d, k in enumerate(dims) if k is not None]
    if not adv or len(dims) != x.ndim:
        return strides_of(x) if x.shape == shape else B.layout_of(np.empty(shape, x.dtype))[1]
    arrays = np.broadcast_arrays(*[dims[d] for d in adv])
    nb = arrays[0].ndim
    at = adv[0] if adv == list(range(adv[0], adv[-1] + 1)) else 0  # NumPy and torch: at the front if apart
    src = list(strides_of(x))
    rest = [d for d in range(x.ndim) if dims[d] is None]
    src_strides = [src[d] for d in rest[:at]] + [0] * nb + [src[d] for d in rest[at:]]
    operands = [(shape, src_strides)]
    for a in arrays:
        st = [s // a.itemsize for s in a.strides]
        operands.append((shape, [0] * at + st + [0] * (len(shape) - at - nb)))
    return iter_strides(shape, operands)


def _view_array(x, p):
    """The array of the basic-indexing view of x."""
    if p.identity:
        return x
    return B.restride(x, p.shape, p.strides, p.offset)


def _index_error(e):
    msg = str(e)
    if "out of bounds" in msg:
        return IndexError(msg.replace("axis", "dimension"))
    if "shape mismatch" in msg:
        return IndexError(msg.replace("arrays", "tensors"))
    return IndexError(msg)


# ---- advanced indexing ops ----------------------------------------------------------------

def result_shape(shape, key):
    """Shape of x[key] for an advanced key (full slices and index arrays), without indexing:
    index results go where the first index sits if the indexed dims are adjacent, else first."""
    parts = []
    index_shapes = []
    d = 0
    for k in key:
        if isinstance(k, slice):
            parts.append(shape[d])
            d += 1
            continue
        if k.dtype == bool:
            index_shapes.append((int(np.count_nonzero(k)),))
            d += k.ndim
        else:
            index_shapes.append(k.shape)
            d += 1
        parts.append(None)
    try:
        b = np.broadcast_shapes(*index_shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(s)) for s in index_shapes)) from None
    where = [i for i, p in enumerate(parts) if p is None]
    dims = [p for p in parts if p is not None]
    if where[-1] - where[0] == len(where) - 1:
        out = tuple(parts[:where[0]]) + b + tuple(p for p in parts[where[0]:] if p is not None)
    else:
        out = b + tuple(dims)
    return out + tuple(shape[d:])


def _empty_result(x, key):
    """torch checks index bounds per written/read element, so an empty result never fails;
    NumPy checks them anyway. The shape of an empty result, or None."""
    _check_empty_dims(x.shape, key)
    shape = result_shape(x.shape, key)
    return shape if 0 in shape else None


def _check_empty_dims(shape, key):
    """An index into a size-0 dim fails even when the result is empty (as torch)."""
    d = 0
    for k in key:
        if isinstance(k, np.ndarray) and k.dtype != bool and shape[d] == 0 and k.size:
            raise IndexError("index is out of bounds for dimension with size 0")
        d += k.ndim if isinstance(k, np.ndarray) and k.dtype == bool else 1


def put_at(out, key, v, accumulate):
    """out[key] = v (or += v), with torch's checks: the value must broadcast to the result, and
    index bounds are only checked when something is written."""
    _check_empty_dims(out.shape, key)
    shape = result_shape(out.shape, key)
    vshape = v.shape
    while len(vshape) > len(shape) and vshape[0] == 1:
        vshape = vshape[1:]
    try:
        ok = np.broadcast_shapes(vshape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(shape)}")
    if 0 in shape:
        return out
    try:
        if accumulate:
            accumulate_at(out, key, v.reshape(vshape))
        else:
            out[key] = v
    except IndexError as e:
        raise _index_error(e) from None
    return out


def accumulate_at(out, key, v):
    """out[key] += v with duplicates summed. A single integer index (the common case: x[idx],
    embedding) goes to the sorted-rows helper; other keys use np.add.at."""
    arrays = [(i, k) for i, k in enumerate(key) if isinstance(k, np.ndarray)]
    if len(arrays) == 1 and arrays[0][1].dtype != bool and out.dtype.kind in "fc":
        d, idx = arrays[0]
        n = out.shape[d]
        idx = _wrap_index(idx, n, d)
        rows = B.index_add_rows
        vb = np.broadcast_to(v, result_shape(out.shape, key))
        vb = vb.reshape(out.shape[:d] + (idx.size,) + out.shape[d + 1:])
        rows(np.moveaxis(out, d, 0), idx.reshape(-1), np.moveaxis(vb, d, 0))
        return out
    np.add.at(out, key, v)
    return out


def _wrap_index(idx, n, d):
    if idx.size:
        lo = idx.min()
        hi = idx.max()
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
        if lo < 0:
            idx = np.where(idx < 0, idx + n, idx)
    return idx


class Index(Op):
    """Advanced indexing: a copy."""
    _name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, key):
        ctx.in_shape = x.shape
        ctx.key = key
        try:
            r = x[key]
            return B.relayout(r, _index_strides(x, key, r.shape)) if r.ndim > 1 and r.size > 1 else r
        except IndexError as e:
            empty = _empty_result(x, key)
            if empty is not None:
                return np.empty(empty, dtype=x.dtype)
            raise _index_error(e) from None

    def backward(ctx, grad):
        return IndexPut.apply(None, grad, key=ctx.key, accumulate=True, shape=ctx.in_shape)


class IndexPut(Op):
    """out = copy of x (or zeros of `shape`) with out[key] = v (or += v when accumulate)."""
    _name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, v, key, accumulate, shape=None, into=False):
        ctx.key = key
        ctx.accumulate = accumulate
        if x is None:
            out = np.zeros(shape, dtype=v.dtype)
        else:
            out = x if into else x.copy()
        put_at(out, key, v.astype(out.dtype, copy=False), accumulate)
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


# ---- __getitem__ ---------------------------------------------------------------------------

def getitem(self, key):
    x = self._data
    if type(key) is int and x.ndim:
        n = x.shape[0]
        if not -n <= key < n:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size {n}")
        return Slice.apply(self, key=(key,), name="SelectBackward0")
    p = parse_key(x, key)
    if not p.adv:
        name = p.last or "AliasBackward0"
        geom = (p.shape, p.strides, p.offset) if p.has_none else None
        return Slice.apply(self, key=p.np_key, name=name, geom=geom)
    base = self
    if not p.identity:
        geom = (p.shape, p.strides, p.offset) if p.has_none else None
        base = Slice.apply(self, key=p.np_key, name=p.last, geom=geom)
    return Index.apply(base, key=adv_key(p.adv))


# ---- __setitem__ ---------------------------------------------------------------------------

class Fill(Op):
    """self.fill_(value) for a number or a 0-d tensor: the overwritten values get zero
    gradient, the value gets the sum."""
    _name = "FillBackward3"

    @staticmethod
    def forward(ctx, x, value):
        return np.full(x.shape, value, dtype=x.dtype)

    def backward(ctx, grad):
        need = ctx.needs_input_grad
        gx = grad.new_zeros(grad.shape) if need[0] else None  # torch: zeros_like(grad)
        return gx, grad.sum() if need[1] else None


class CopyFrom(Op):
    """self.copy_(src): src broadcast and cast to self's shape and dtype."""
    _name = "torch::autograd::CopyBackwards"  # torch's name(); its type is CopyBackwards

    @staticmethod
    def forward(ctx, x, src):
        out = np.empty(x.shape, dtype=x.dtype)
        out[...] = src
        return out

    def backward(ctx, grad):
        return grad.new_zeros(grad.shape) if ctx.needs_input_grad[0] else None, grad


def _strip_leading_ones(v):
    """torch drops a value's leading size-1 dims before assigning it (slicePrefix1sSize)."""
    shape = v._data.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return v.reshape(shape[k:]) if k else v


def setitem(self, key, value):
    if isinstance(value, Tensor):
        v = value
    elif isinstance(value, _SCALARS):
        v = None
    else:
        from ..autograd.graph import _type_name
        raise TypeError(f"can't assign a {type(value).__name__} to a torch.{_type_name(self)}")
    x = self._data
    if key is False:  # torch's one shortcut: a lone False writes nothing (and bumps no version)
        return
    p = parse_key(x, key)
    if p.adv and v is not None and v._dtype is not self._dtype:
        if v._data.size == 1 and len(p.adv) == 1 and p.adv[0][1].dtype == bool:
            v = v.to(self._dtype)  # torch fills through one mask with a one-element value: masked_fill_, any dtype
    if p.adv and v is not None and v._dtype is not self._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{D.SCALAR_NAMES[self._dtype]} for the destination and {D.SCALAR_NAMES[v._dtype]} "
                           f"for the source.")
    check_inplace(self)
    if v is not None:
        _check_partial_overlap(_view_array(x, p), v._data)
    if not (_state.enabled and (self._requires_grad or (v is not None and v._requires_grad))):
        _setitem_nograd(self, p, value if v is None else _strip_leading_ones(v)._data)
        return
    target = self
    if not p.identity:
        geom = (p.shape, p.strides, p.offset) if p.has_none else None
        target = Slice.apply(self, key=p.np_key, name=p.last, geom=geom)
    if v is None:
        from .._backend import scalar_array
        v = _make(scalar_array(value, x.dtype), self._dtype)
    elif v._data.ndim:
        v = _strip_leading_ones(v)
    if p.adv:
        r = IndexPut.apply(target, v, key=adv_key(p.adv), accumulate=False)
        assign_result(target, r, "index_put_")
        return
    if v._data.ndim == 0:
        r = Fill.apply(target, v)  # torch fills with numbers and 0-d tensors
    else:
        try:
            r = CopyFrom.apply(target, v)
        except ValueError:
            raise RuntimeError(_copy_shape_error(v, target)) from None
    assign_result(target, r, "copy_")


def _check_partial_overlap(target, value):
    """torch's copy_/index_put_ refuse a value that overlaps the written window, unless it is
    that very window (`y[:, 1] += w` writes a view back onto itself)."""
    if not np.may_share_memory(target, value):
        return
    if (target.shape == value.shape and target.strides == value.strides
            and B.data_ptr(target) == B.data_ptr(value)):
        return
    from .scatter import OVERLAP
    raise RuntimeError(OVERLAP)


def _copy_shape_error(v, target):
    return (f"expand({v.type()}{{{list(v._data.shape)}}}, size={list(target._data.shape)}): the number of sizes "
            f"provided ({target._data.ndim}) must be greater or equal to the number of dimensions in the tensor "
            f"({v._data.ndim})" if v._data.ndim > target._data.ndim else
            f"The expanded size of the tensor ({target._data.shape[-1] if target._data.ndim else 1}) must match "
            f"the existing size ({v._data.shape[-1]}) at non-singleton dimension {target._data.ndim - 1}.  "
            f"Target sizes: {list(target._data.shape)}.  Tensor sizes: {list(v._data.shape)}")


def _setitem_nograd(self, p, value):
    x = self._data
    view = _view_array(x, p)
    if isinstance(value, np.ndarray):
        if value.dtype != x.dtype:
            value = value.astype(x.dtype)
    else:
        from .._backend import scalar_array
        value = scalar_array(value, x.dtype)
    if p.adv:
        refuse(self, "index_put")  # torch's index_put kernel takes no uint16/32/64
        put_at(view, adv_key(p.adv), value, False)
    else:
        try:
            view[...] = value
        except ValueError:
            raise RuntimeError(_copy_shape_error(_make(value), _make(view))) from None
    self._version_counter.value += 1


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem


# ---- index_put -----------------------------------------------------------------------------

def _indices_key(self, indices, name):
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    if len(indices) > self._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self._data.ndim} (got {len(indices)})")
    adv = []
    dim = 0
    for t in indices:
        if t is None:
            dim += 1
            continue
        kind, arr = _classify(t if isinstance(t, Tensor) else np.asarray(t))
        if kind == "int":
            arr = np.array(arr, dtype=np.int64)
        elif kind == "bool":
            arr = np.array(arr)
        if arr.dtype == bool:
            _check_mask(arr, self._data.shape, dim, self._data.shape)
        adv.append((dim, arr))
        dim += arr.ndim if arr.dtype == bool else 1
    return adv_key(adv)


def _index_put_plan(input, indices, values, accumulate=False):
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' must be Tensor, not {type(values).__name__}")
    if values._dtype is not input._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{D.SCALAR_NAMES[input._dtype]} for the destination and {D.SCALAR_NAMES[values._dtype]} "
                           f"for the source.")
    key = _indices_key(input, indices, "index_put")
    return IndexPut, (values,), dict(key=key, accumulate=bool(accumulate))


@register()
def index_put(input, indices, values, accumulate=False):
    from .scatter import apply_plan
    return apply_plan(input, _index_put_plan(input, indices, values, accumulate))


from . import joining, scatter, selection  # noqa: E402,F401  (the rest of the family installs its ops)
from .window import diagonal_backward, slice_backward, unfold_backward  # noqa: E402,F401
from .joining import cat, stack  # noqa: E402,F401  (other families import them from here)
from .scatter import inplace_variant  # noqa: E402

inplace_variant(index_put, "index_put_", _index_put_plan, expanded="tensor[indices] = tensor")
install(Tensor.index_put_, "index_put_", method=False)  # torch.index_put_ exists as a function too
