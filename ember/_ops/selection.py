"""Selection ops: masked_fill/select/scatter, take/put, nonzero/argwhere, searchsorted/bucketize."""
import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from .._tensor import Tensor
from ._argcheck import _is_number, wrong_type
from ._registry import Op, register, shapes_error, write_out
from ._limited import refuse
from .reduction import refuse_complex
from .scatter import apply_plan, inplace_variant

_make = Tensor._make


def _bool_mask(mask, name):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask._dtype is not D.bool:
        raise RuntimeError(f"{name}: expected BoolTensor for mask")
    return mask


def _broadcast_shape(name, *arrays):
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise shapes_error(name, arrays[0], arrays[1]) from None


# ---- masked_fill ---------------------------------------------------------------------------

class MaskedFill(Op):
    _name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask, value, into=False):
        ctx.save_for_backward(mask)
        if value.dtype.kind == "c" and x.dtype.kind != "c":
            value = value.real  # the plan refused a non-zero imaginary part
        if into:
            np.copyto(x, value.astype(x.dtype), where=mask)
            return x
        return np.where(mask, value.astype(x.dtype), x)

    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = grad.masked_fill(mask, 0) if need[0] else None
        gv = grad.masked_fill(~mask, 0).sum() if need[2] else None
        return gx, None, gv


class MaskedFill1(MaskedFill):
    _name = "MaskedFillBackward1"


def _masked_fill_plan(input, mask, value):
    if not isinstance(mask, Tensor) or mask._dtype is not D.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{D.SCALAR_NAMES[mask._dtype] if isinstance(mask, Tensor) else type(mask).__name__}")
    imag = value._data.imag if isinstance(value, Tensor) else getattr(value, "imag", 0)
    if input._data.dtype.kind != "c" and np.any(imag != 0):  # a complex value that does not fit a real input
        raise RuntimeError(f"value cannot be converted to type {D.C_TYPE_NAMES[input._dtype]} without overflow")
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        op = MaskedFill1
        v = value
    else:
        if value.__class__ is not float and value.__class__ is not int and not _is_number(value):  # None: nan
            raise wrong_type("masked_fill", "value", value, "Tensor", 3)
        op = MaskedFill
        from .._backend import scalar_array
        if isinstance(value, complex) and input._data.dtype.kind != "c":
            value = value.real  # 0j into a real tensor (a non-zero imaginary part was refused above)
        v = _make(scalar_array(value, input._data.dtype), input._dtype)
    _broadcast_shape("masked_fill", input._data, mask._data)
    return op, (mask, v), {}


@register()
def masked_fill(input, mask, value):
    return apply_plan(input, _masked_fill_plan(input, mask, value))


def _masked_fill_inplace_plan(self, mask, value):
    plan = _masked_fill_plan(self, mask, value)
    shape = np.broadcast_shapes(self._data.shape, mask._data.shape)
    if shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")
    return plan


inplace_variant(masked_fill, "masked_fill_", _masked_fill_inplace_plan, no_overlap=False,
                expanded="tensor[mask] = scalar")


# ---- masked_select / masked_scatter ---------------------------------------------------------

class MaskedSelect(Op):
    _name = "MaskedSelectBackward0"

    @staticmethod
    def forward(ctx, x, mask):
        shape = np.broadcast_shapes(x.shape, mask.shape)
        ctx.save_for_backward(mask)
        ctx.shape = shape
        return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]

    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        zeros = grad.new_zeros(ctx.shape)
        return masked_scatter(zeros, mask.expand(ctx.shape), grad), None


@register()
def masked_select(input, mask, *, out=None):
    _bool_mask(mask, "masked_select")
    _broadcast_shape("masked_select", input._data, mask._data)
    r = MaskedSelect.apply(input, mask)
    return r if out is None else write_out(out, r, "masked_select", inputs=(input, mask))


class MaskedScatter(Op):
    _name = "MaskedScatterBackward0"

    @staticmethod
    def forward(ctx, x, mask, source, into=False):
        shape = np.broadcast_shapes(x.shape, mask.shape)
        m = np.broadcast_to(mask, shape)
        n = int(np.count_nonzero(m))
        if n > source.size:
            raise RuntimeError("masked_scatter: expected source to have at least as many elements as the ones in "
                               "mask")
        ctx.save_for_backward(mask)
        ctx.args = (shape, source.shape, n)
        out = x if into else np.array(np.broadcast_to(x, shape), dtype=x.dtype)
        out[m] = source.reshape(-1)[:n]
        return out

    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        shape, source_shape, n = ctx.args
        need = ctx.needs_input_grad
        gx = grad.masked_fill(mask, 0) if need[0] else None
        gs = None
        if need[2]:
            selected = grad.masked_select(mask)
            size = 1
            for s in source_shape:
                size *= s
            from .joining import cat
            gs = cat([selected, grad.new_zeros(size - n)]).reshape(source_shape)
        return gx, None, gs


def _masked_scatter_plan(input, mask, source):
    _bool_mask(mask, "masked_scatter_")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but got "
                           f"{D.SCALAR_NAMES[input._dtype]} and {D.SCALAR_NAMES[source._dtype]}")
    _broadcast_shape("masked_scatter", input._data, mask._data)
    return MaskedScatter, (mask, source), {}


@register()
def masked_scatter(input, mask, source):
    return apply_plan(input, _masked_scatter_plan(input, mask, source))


def _masked_scatter_inplace_plan(self, mask, source):
    plan = _masked_scatter_plan(self, mask, source)
    shape = np.broadcast_shapes(self._data.shape, mask._data.shape)
    if shape != self._data.shape:
        raise RuntimeError(f"masked_scatter_: expected mask to be broadcastable to self {list(self._data.shape)}, "
                           f"got {list(mask._data.shape)}")
    return plan


inplace_variant(masked_scatter, "masked_scatter_", _masked_scatter_inplace_plan, no_overlap=False)


# ---- take / put ------------------------------------------------------------------------------

def _long_index(index, name):
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._dtype is not D.int64:
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {D.SCALAR_NAMES[index._dtype]}")
    return index._data


def _flat_index(idx, n):
    if idx.size:
        lo, hi = idx.min(), idx.max()
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
        if lo < 0:
            idx = np.where(idx < 0, idx + n, idx)
    return idx


class Take(Op):
    _name = "TakeBackward0"

    @staticmethod
    def forward(ctx, x, index):
        idx = _flat_index(index, x.size)
        ctx.save_for_backward(index)
        ctx.in_shape = x.shape
        return x.reshape(-1)[idx]

    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return grad.new_zeros(ctx.in_shape).put(index, grad, accumulate=True), None


@register(out=True)
def take(input, index):
    _long_index(index, "take")
    return Take.apply(input, index)


class Put(Op):
    _name = "PutBackward0"

    @staticmethod
    def forward(ctx, x, index, source, accumulate, into=False):
        if index.size != source.size:
            raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                               f"source.numel() = {source.size}, index.numel() = {index.size}")
        idx = _flat_index(index, x.size).reshape(-1)
        ctx.save_for_backward(index)
        ctx.accumulate = accumulate
        ctx.source_shape = source.shape
        out = x if into else np.array(x, copy=True, order="C")
        src = source.reshape(-1).astype(x.dtype, copy=False)
        if accumulate:
            B.flat_add_at(out, idx, src)
        else:
            out.reshape(-1)[idx] = src
        return out

    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = gs = None
        if need[0]:
            gx = grad if ctx.accumulate else grad.put(index, grad.new_zeros(index.shape))
        if need[2]:
            gs = grad.take(index).reshape(ctx.source_shape)
        return gx, None, gs


def _put_plan(input, index, source, accumulate=False):
    _long_index(index, "put_")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{D.SCALAR_NAMES[input._dtype]} and source.dtype = {D.SCALAR_NAMES[source._dtype]}")
    return Put, (index, source), dict(accumulate=bool(accumulate))


@register()
def put(input, index, source, accumulate=False):
    return apply_plan(input, _put_plan(input, index, source, accumulate))


inplace_variant(put, "put_", _put_plan)


# ---- nonzero / argwhere ---------------------------------------------------------------------

@register()
def nonzero(input, *, out=None, as_tuple=False):
    refuse(input, "nonzero_count_cpu")
    x = input._data
    if as_tuple:
        if x.ndim == 0:
            return (_make(np.flatnonzero(x.reshape(1)).astype(np.int64)),)
        return tuple(_make(np.ascontiguousarray(i, np.int64)) for i in np.nonzero(x))  # (NumPy's: column views)
    if x.ndim == 0:
        r = _make(np.zeros((int(x != 0), 0), dtype=np.int64))
    else:
        r = _make(np.argwhere(x).astype(np.int64, copy=False))
    if out is not None and isinstance(out, Tensor) and out._dtype is not D.int64:
        raise RuntimeError(f"nonzero: Expected out tensor to have scalar type Long but got scalar type"
                           f"{D.SCALAR_NAMES[out._dtype]}")
    return r if out is None else write_out(out, r, "nonzero")


@register(out=True)
def nonzero_static(input, *, size, fill_value=-1):
    """nonzero padded with fill_value (or cut) to exactly `size` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got size: {size}")
    x = input._data
    idx = np.argwhere(x.reshape(1) if x.ndim == 0 else x).astype(np.int64, copy=False)
    if x.ndim == 0:
        idx = idx[:, :0]
    out = np.full((size, idx.shape[1]), fill_value, dtype=np.int64)
    n = min(size, idx.shape[0])
    out[:n] = idx[:n]
    return _make(out)


@register()
def argwhere(input):
    return nonzero(input)


# ---- searchsorted / bucketize ---------------------------------------------------------------

def _search(boundaries, values, side, sorter):
    """np.searchsorted over the last dim of boundaries (1-d, or matching leading dims)."""
    if boundaries.ndim == 1:
        if sorter is not None:
            return np.searchsorted(boundaries, values, side=side, sorter=sorter)
        return np.searchsorted(boundaries, values, side=side)
    lead = boundaries.shape[:-1]
    rows = int(np.prod(lead))  # explicit sizes: reshape(-1, ...) cannot infer a dim of an empty array
    b2 = boundaries.reshape(rows, boundaries.shape[-1])
    v2 = values.reshape(rows, values.shape[-1])
    s2 = None if sorter is None else sorter.reshape(b2.shape)
    out = np.empty(v2.shape, dtype=np.int64)
    for i in range(b2.shape[0]):
        out[i] = np.searchsorted(b2[i], v2[i], side=side, sorter=None if s2 is None else s2[i])
    return out.reshape(lead + values.shape[-1:])


@register(method=False)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if out is not None and isinstance(out, Tensor) and out._dtype is not (D.int32 if out_int32 else D.int64):
        raise RuntimeError("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
                           "Long(int64) depending on whether out_int32 flag is True, but we got output tensor's "
                           f"dtype {D.SCALAR_NAMES[out._dtype]} and out_int32 flag is {out_int32}")
    refuse_complex(sorted_sequence, "searchsorted_out_cpu")
    b = sorted_sequence._data
    scalar = not isinstance(input, Tensor)
    values = np.asarray(input) if scalar else input._data
    if values.size:  # (no values: torch returns without running its kernel)
        refuse(sorted_sequence, "searchsorted_out_cpu")
    if b.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if b.ndim > 1:
        if scalar:
            raise RuntimeError("torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                               f"dimension is 1, but we got boundaries tensor dim({b.ndim}) and input value's "
                               f"dim(0) numel(1)")
        if values.shape[:-1] != b.shape[:-1]:
            raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               f"dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(b.shape)} and input value tensor {list(values.shape)}")
    s = None
    if sorter is not None:
        s = sorter._data
        if s.shape != b.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(b.shape)}and got sorter tensor {list(s.shape)}")
        if s.dtype != np.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got "
                               f"{D.SCALAR_NAMES[sorter._dtype]}")
    common = D.result_type_of((sorted_sequence, input))  # the dtype torch's kernel is chosen by
    if common is D.bool or common.category == D.COMPLEX:
        raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for '{D.SCALAR_NAMES[common]}'")
    side = "right" if right else "left"
    r = _search(b, values, side, s)
    r = np.asarray(r, dtype=np.int32 if out_int32 else np.int64)
    t = _make(r)
    return t if out is None else write_out(out, t, "searchsorted")


@register(method=False)
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)
