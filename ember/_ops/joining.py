"""Joining and rearranging copies: cat/stack and friends, flip/roll/rot90, repeat/tile/
repeat_interleave, tril/triu, diag/diag_embed/diagflat/trace, meshgrid, broadcasting helpers,
atleast_Nd."""
import functools
import warnings

import operator

import numpy as np

from .. import _dtype as D
from .._tensor import Size, Tensor, _wrap_dim
from ._argcheck import _is_int, ints_error, invalid_combination, wrong_type
from ._limited import refuse_flip
from ._registry import Op, assign_result, check_inplace, install, register, write_out
from .geometry import diagonal_geometry, strides_of
from .shape import dims_arg, require_args, shape_args, varargs_or
from .._backend import _dense, contiguous, numpy_cpu as B
from .._layout import channels_last, format_strides

_make = Tensor._make


def _tensor_list(tensors, name):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


def _promoted(tensors):
    dtype = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not dtype:
            dtype = D.promote_types(dtype, t._dtype)
    return dtype


# ---- cat / stack -----------------------------------------------------------------------------

def _skipped(a):
    """torch's legacy rule: 1-d empty tensors are ignored by cat (whatever the other shapes)."""
    return a.ndim == 1 and a.shape[0] == 0


def _joined_layout(r, arrays, stacked=None):
    """torch's layout for cat (channels-last when every input is, else contiguous) and stack (along
    dim 0 of channels-last inputs: channels-last slices); NumPy's follows the inputs' order."""
    if r.ndim < 2 or not all(B.is_channels_last(a) for a in arrays) or stacked not in (None, 0):
        return contiguous(r)
    if stacked is None:
        return B.relayout(r, format_strides(r.shape, channels_last))
    return B.relayout(r, (arrays[0].size,) + format_strides(arrays[0].shape, channels_last))


class Cat(Op):
    _name = "CatBackward0"

    @staticmethod
    def forward(ctx, *arrays, dim, dtype):
        ctx.dim = dim
        ctx.sizes = [0 if _skipped(a) else a.shape[dim] for a in arrays]
        ctx.skipped = [_skipped(a) for a in arrays]
        used = [a for a in arrays if not _skipped(a)]
        if not used:
            return np.empty((0,), dtype=dtype)
        return _joined_layout(np.concatenate(used, axis=dim, dtype=dtype, casting="unsafe"), used)

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


def _cat_out(out, r, name, inputs=()):
    """write_out for cat and the joins torch builds on it: an out= dtype the result cannot be cast to is
    torch's TypeError (its cat checks it by TORCH_CHECK_TYPE)."""
    if isinstance(out, Tensor) and not D.can_cast(r._dtype, out._dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{D.SCALAR_NAMES[out._dtype]}")
    return write_out(out, r, name, inputs=inputs)


@register(method=False, aliases=("concat", "concatenate"))
def cat(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    ref_i = next((i for i, t in enumerate(tensors) if not _skipped(t._data)), 0)
    ref = tensors[ref_i]._data
    d = _wrap_dim(dim, ref.ndim)
    for i, t in enumerate(tensors):
        a = t._data
        if _skipped(a):
            continue
        if a.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {a.ndim}")
        for j in range(ref.ndim):
            if j != d and a.shape[j] != ref.shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[j]} but got size {a.shape[j]} for tensor number {i} in the list.")
    dtype = _promoted(tensors)
    r = Cat.apply(*tensors, dim=d, dtype=dtype.np)
    return r if out is None else _cat_out(out, r, "cat", inputs=tensors)


class Stack(Op):
    _name = "StackBackward0"

    @staticmethod
    def forward(ctx, *arrays, dim, dtype):
        ctx.dim = dim
        return _joined_layout(np.stack(arrays, axis=dim, dtype=dtype, casting="unsafe"), arrays, dim)

    def backward(ctx, grad):
        return tuple(grad.unbind(ctx.dim))


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
    r = Stack.apply(*tensors, dim=d, dtype=_promoted(tensors).np)
    return r if out is None else _cat_out(out, r, "stack")


@register(method=False)
def hstack(tensors, *, out=None):
    ts = _tensor_list(tensors, "hstack")
    if not ts:
        raise RuntimeError("hstack expects a non-empty TensorList")
    ts = atleast_1d(*ts)
    ts = (ts,) if isinstance(ts, Tensor) else ts
    r = cat(ts, 0 if ts and ts[0]._data.ndim == 1 else 1)
    return r if out is None else _cat_out(out, r, "hstack")


@register(method=False, aliases=("row_stack",))
def vstack(tensors, *, out=None):
    ts = _tensor_list(tensors, "vstack")
    if not ts:
        raise RuntimeError("vstack expects a non-empty TensorList")
    ts = atleast_2d(*ts)
    ts = (ts,) if isinstance(ts, Tensor) else ts
    r = cat(ts, 0)
    return r if out is None else _cat_out(out, r, "vstack")


@register(method=False)
def dstack(tensors, *, out=None):
    ts = _tensor_list(tensors, "dstack")
    if not ts:
        raise RuntimeError("dstack expects a non-empty TensorList")
    ts = atleast_3d(*ts)
    ts = (ts,) if isinstance(ts, Tensor) else ts
    r = cat(ts, 2)
    return r if out is None else _cat_out(out, r, "dstack")


@register(method=False)
def column_stack(tensors, *, out=None):
    ts = _tensor_list(tensors, "column_stack")
    if not ts:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    cols = [t.reshape(t._data.size, 1) if t._data.ndim <= 1 else t for t in ts]
    r = cat(cols, 1)
    return r if out is None else _cat_out(out, r, "column_stack")


# ---- atleast_Nd / broadcasting -----------------------------------------------------------------

def _atleast(args, fn):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(fn(t) for t in args[0])
    if len(args) == 1:
        return fn(args[0])
    return tuple(fn(t) for t in args)


def _at1(t):
    return t.reshape(1) if t._data.ndim == 0 else t


def _at2(t):
    nd = t._data.ndim
    if nd == 0:
        return t.reshape(1, 1)
    return t.unsqueeze(0) if nd == 1 else t


def _at3(t):
    nd = t._data.ndim
    if nd == 0:
        return t.reshape(1, 1, 1)
    if nd == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    return t.unsqueeze(-1) if nd == 2 else t


@register(method=False)
def atleast_1d(*tensors):
    return _atleast(tensors, _at1)


@register(method=False)
def atleast_2d(*tensors):
    return _atleast(tensors, _at2)


@register(method=False)
def atleast_3d(*tensors):
    return _atleast(tensors, _at3)


@register(method=False)
def broadcast_shapes(*shapes):
    result = []
    for i, s in enumerate(shapes):
        s = (s,) if isinstance(s, int) or hasattr(s, "__index__") and not isinstance(s, (tuple, list)) else s
        s = tuple(int(v) for v in s)
        for v in s:
            if v < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {v}: {list(s)}")
        pad = len(s) - len(result)
        if pad > 0:
            result = [1] * pad + result
        for j in range(1, len(s) + 1):
            a, b = result[-j], s[-j]
            if a == 1 or a == b:
                result[-j] = b
            elif b != 1:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                                   f"between arg {i - 1 if i else 0} and arg {i}.")
    return Size(result)


@register(method=False)
def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    try:
        shape = np.broadcast_shapes(*(t._data.shape for t in tensors))
    except ValueError:
        from ._registry import shapes_error
        raise shapes_error("broadcast_tensors", tensors[0]._data, tensors[1]._data) from None
    return tuple(t.expand(shape) for t in tensors)


@register(method=False)
def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t._data.size for t in ts)
    n = len(ts)
    grids = []
    for i, t in enumerate(ts):
        view_shape = [1] * n
        view_shape[i] = -1
        grids.append(t.view(view_shape).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


# ---- flip / roll / rot90 ---------------------------------------------------------------------

class Flip(Op):
    _name = "FlipBackward0"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        # a copy, in x's memory order when x is dense (torch's preserve_format), else C order
        return np.flip(x, dims).copy(order="K" if _dense(x) else "C")

    def backward(ctx, grad):
        return grad.flip(ctx.dims)


def _flip_dims(input, dims):
    nd = input._data.ndim
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    for i, d in enumerate(dims):
        if isinstance(d, (float, complex, str)) or d is None:  # flip(x, [1.5]): torch's TypeError
            raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, but found element of "
                            f"type {type(d).__name__} at pos {i}")
    ds = tuple(_wrap_dim(operator.index(d), nd) for d in dims)
    seen = set()
    for d in ds:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return ds


@register()
def flip(input, *dims_, dims=None):
    if dims is not None:
        dims_ = varargs_or(dims_, dims, "dims", "flip")
    dims = dims_
    require_args(dims, "flip")
    dims = _flip_dims(input, dims)
    refuse_flip(input, dims)
    return Flip.apply(input, dims=dims)


@register()
def fliplr(input):
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    refuse_flip(input, (1,))
    return Flip.apply(input, dims=(1,))


@register()
def flipud(input):
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    refuse_flip(input, (0,))
    return Flip.apply(input, dims=(0,))


class Roll(Op):
    _name = "RollBackward0"

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.args = (shifts, dims)
        return np.ascontiguousarray(np.roll(x, shifts, dims))  # torch's roll is contiguous; NumPy keeps x's layout

    def backward(ctx, grad):
        shifts, dims = ctx.args
        return grad.roll(tuple(-s for s in shifts), dims)


@register()
def roll(input, shifts, dims=None):
    err = None if shifts.__class__ is int else ints_error("roll", "shifts", shifts, 2)
    if err is not None:  # int() would take 1.5
        raise err
    shifts = (int(shifts),) if not isinstance(shifts, (list, tuple)) else tuple(int(s) for s in shifts)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        flat = input.flatten()
        return Roll.apply(flat, shifts=shifts, dims=(0,)).view(input._data.shape)
    dims = dims_arg(dims, input._data.ndim)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return Roll.apply(input, shifts=shifts, dims=dims)


class Rot90(Op):
    _name = "Rot90Backward0"

    @staticmethod
    def forward(ctx, x, k, dims):
        """torch's layout: a flip copy, transposed (so k = 1 or 3 gives a non-contiguous result)."""
        ctx.args = (k, dims)
        d0, d1 = dims
        if k == 1:
            return np.ascontiguousarray(np.flip(x, d1)).swapaxes(d0, d1)
        if k == 2:
            return np.ascontiguousarray(np.flip(x, dims))
        if k == 3:
            return np.ascontiguousarray(np.flip(x, d0)).swapaxes(d0, d1)
        return np.array(x, copy=True, order="C")

    def backward(ctx, grad):
        k, dims = ctx.args
        return grad.rot90(-k, dims)


@register()
def rot90(input, k=1, dims=(0, 1)):
    dims = list(dims)
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0 = _wrap_dim(dims[0], nd)
    d1 = _wrap_dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    if k.__class__ is not int and not _is_int(k):  # int() would take 1.5
        raise wrong_type("rot90", "k", k, "int", 2)
    k = int(k) % 4
    refuse_flip(input, {0: (), 1: (d1,), 2: (d0, d1), 3: (d0,)}[k])  # the dims torch's rotation flips
    return Rot90.apply(input, k=k, dims=(d0, d1))


# ---- repeat / tile / repeat_interleave -----------------------------------------------------------

class Repeat(Op):
    _name = "RepeatBackward0"

    @staticmethod
    def forward(ctx, x, repeats):
        ctx.args = (x.shape, repeats)
        pad = len(repeats) - x.ndim
        if not repeats:  # np.tile makes a 0-d input 1-d
            return x.copy()
        return np.ascontiguousarray(np.tile(x.reshape((1,) * pad + x.shape), repeats))  # contiguous, as torch's

    def backward(ctx, grad):
        in_shape, repeats = ctx.args
        pad = len(repeats) - len(in_shape)
        shape = (1,) * pad + tuple(in_shape)
        split = []
        for r, s in zip(repeats, shape):
            split.extend([r, s])
        summed = grad.reshape(split).sum(tuple(range(0, len(split), 2)))
        return summed.reshape(in_shape)


@register(function=False)
def repeat(input, *sizes, repeats=None):
    if repeats is not None:
        sizes = varargs_or(sizes, repeats, "repeats", "repeat")
    sizes = shape_args(sizes, "repeat")
    if len(sizes) < input._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    for s in sizes:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(sizes)}")
    return Repeat.apply(input, repeats=sizes)


@register()
def tile(input, dims):
    dims = shape_args((dims,), "tile")
    pad = input._data.ndim - len(dims)
    if pad > 0:
        dims = (1,) * pad + dims
    return repeat(input, dims)


@register()
def repeat_interleave(input=None, repeats=None, dim=None, *, output_size=None):
    """Composite: index_select with the repeated positions (so gradients sum per source).
    repeat_interleave(repeats) alone (torch's third overload) gives the repeated positions."""
    if repeats is None or input is None:
        reps = input if repeats is None else repeats
        if reps is None:
            raise TypeError('repeat_interleave() missing 1 required positional arguments: "repeats"')
        if reps._data.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if reps._data.dtype not in (np.int64, np.int32):
            raise RuntimeError("repeats has to be Long or Int tensor")
        counts = reps._data.reshape(-1)
        if counts.size and counts.min() < 0:
            raise RuntimeError("repeats can not be negative")
        r = np.repeat(np.arange(counts.size, dtype=reps._data.dtype), counts)
        if output_size is not None and output_size != r.size:
            raise RuntimeError("allocated size does not match required size")
        return _make(r)
    if dim is None:
        input = input.reshape(-1)
        d = 0
    else:
        d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d] if input._data.ndim else 1
    if repeats.__class__ is not int and not isinstance(repeats, Tensor) and not _is_int(repeats):
        raise wrong_type("repeat_interleave", "repeats", repeats, "Tensor", 2)  # int(1.5) would take it
    if isinstance(repeats, Tensor):
        counts = repeats._data.reshape(-1)
        if repeats._data.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if counts.size == 1:
            counts = np.full(n, int(counts[0]))
        elif counts.size != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{counts.size} and input.size({d}) = {n}")
    else:
        counts = np.full(n, int(repeats))
    if counts.size and counts.min() < 0:
        raise RuntimeError("repeats can not be negative")
    idx = np.repeat(np.arange(n, dtype=np.int64), counts)
    if output_size is not None and output_size != idx.size:
        raise RuntimeError("allocated size does not match required size")
    if input._data.ndim == 0:
        input = input.reshape(1)
    if isinstance(repeats, Tensor):  # torch: index_select (whose 1-D kernel refuses uint16/32/64)
        return input.index_select(d, _make(idx))
    from .index_ops import IndexSelect  # torch: expand + flatten, which takes every dtype
    return IndexSelect.apply(input, _make(idx), dim=d)


_REPEAT_INTERLEAVE_METHODS = ("Tensor repeats, int dim = None, *, int output_size = None",
                              "int repeats, int dim = None, *, int output_size = None")


def _repeat_interleave_method(checked):
    """Tensor.repeat_interleave: the repeats-only form (the repeated positions) is torch.repeat_interleave's alone."""
    @functools.wraps(checked)
    def repeat_interleave(self, *args, **kwargs):
        if (args[0] if args else kwargs.get("repeats")) is None:
            given = {k: v for k, v in kwargs.items() if v is not None and k != "repeats"}
            raise invalid_combination("repeat_interleave", args[1:], given, _REPEAT_INTERLEAVE_METHODS)
        return checked(self, *args, **kwargs)
    return repeat_interleave


Tensor.repeat_interleave = _repeat_interleave_method(Tensor.repeat_interleave)


# ---- tril / triu -------------------------------------------------------------------------------

def _triangle(name, kernel, node):
    class Tri(Op):
        _name = node

        @staticmethod
        def forward(ctx, x, diagonal):
            ctx.diagonal = diagonal
            return kernel(x, diagonal)

        def backward(ctx, grad):
            return getattr(grad, name)(ctx.diagonal)

    def fn(input, diagonal=0, *, out=None):
        if input._data.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        r = Tri.apply(input, diagonal=int(diagonal))
        return r if out is None else write_out(out, r, name)

    def inplace(self, diagonal=0):
        check_inplace(self)
        return assign_result(self, fn(self, diagonal), name + "_")

    fn.__name__ = fn.__qualname__ = name
    inplace.__name__ = inplace.__qualname__ = name + "_"
    install(fn, name)
    install(inplace, name + "_", function=False)
    return fn


tril = _triangle("tril", np.tril, "TrilBackward0")
triu = _triangle("triu", np.triu, "TriuBackward0")


# ---- diag / diag_embed / diagflat / trace --------------------------------------------------------

class DiagEmbed(Op):
    _name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.args = (offset, dim1, dim2)
        n = x.shape[-1] + abs(offset)
        nd = x.ndim + 1
        lead = iter(x.shape[:-1])
        shape = tuple(n if i in (dim1, dim2) else next(lead) for i in range(nd))
        out = np.zeros(shape, dtype=x.dtype)
        B.restride(out, *diagonal_geometry(shape, strides_of(out), offset, dim1, dim2))[...] = x
        return out

    def backward(ctx, grad):
        return grad.diagonal(*ctx.args)


@register()
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    nd = input._data.ndim + 1
    d1 = _wrap_dim(dim1, nd)
    d2 = _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if input._data.ndim == 0:
        input = input.reshape(1)
    return DiagEmbed.apply(input, offset=int(offset), dim1=d1, dim2=d2)


@register()
def diag(input, diagonal=0, *, out=None):
    nd = input._data.ndim
    if nd == 1:
        r = diag_embed(input, diagonal, 0, 1)
    elif nd == 2:
        r = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")
    return r if out is None else write_out(out, r, "diag")


@register()
def diagflat(input, offset=0):
    return diag_embed(input.reshape(-1), offset, 0, 1)


class Trace(Op):
    _name = "TraceBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        dtype = np.int64 if x.dtype.kind in "biu" else x.dtype
        return np.asarray(np.trace(x, dtype=dtype))

    def backward(ctx, grad):
        from .window import diagonal_backward
        n = min(ctx.shape)
        return diagonal_backward(grad.expand(n), ctx.shape, 0, 0, 1)


@register()
def trace(input):
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    return Trace.apply(input)
