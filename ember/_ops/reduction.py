"""Reductions: sum, mean, prod, max/min, amax/amin, argmax, all/any (var/std, logsumexp and
norm are in statistics.py, scans in scan.py).

Kernels reduce with one NumPy call over a tuple of axes. Backward formulas are ember ops,
so second derivatives work. Gradients of value-selecting reductions (max with dim, sort,
median ...) go through the two private ops Gather/PlaceAlong, which are each other's
backward (see Note [Index routing]).
"""
import builtins

import numpy as np

from .._backend import numpy_cpu as B
from .. import _dtype as D
from .. import return_types
from .._tensor import Tensor, _wrap_dim
from ..autograd.grad_mode import _state
from ._argcheck import invalid_combination
from ._registry import Op, numpy_names, register, write_out
from ._limited import refuse
from .complex import cj
from .geometry import expand_geometry, strides_of

_make = Tensor._make
_bool = builtins.bool


# ---- argument helpers -----------------------------------------------------------------

def check_tensor(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def refuse_complex(input, kernel=None, message=None):
    """Ordering ops refuse complex input as torch does: NotImplementedError '"<kernel>" not implemented for
    '<dtype>'' from its kernel dispatch, or RuntimeError(message) where torch checks first."""
    if input._dtype.category != D.COMPLEX:
        return
    if message is not None:
        raise RuntimeError(message)
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.SCALAR_NAMES[input._dtype]}'")


def reduce_dims(dim, ndim):
    """None or () -> all dims; int or sequence -> sorted tuple of wrapped dims (torch errors on repeats).
    A 0-d tensor accepts dim 0 / -1 and reduces over nothing."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
        dims = tuple(_wrap_dim(_index(d), ndim) for d in dim)
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        return tuple(sorted(dims)) if ndim else ()
    d = _wrap_dim(_index(dim), ndim)
    return (d,) if ndim else ()


def _index(d):
    if isinstance(d, _bool) or not hasattr(d, "__index__"):
        raise TypeError(f"dim must be int or a tuple of ints, not {type(d).__name__}")
    return d.__index__()


def one_dim(dim, ndim):
    """A single wrapped dim; 0-d tensors accept 0 and -1."""
    if isinstance(dim, (list, tuple)):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    return _wrap_dim(_index(dim), ndim)


def keep_shape(shape, dims):
    """The shape of a keepdim=True result: reduced dims become 1."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def expand_grad(grad, in_shape, dims, keepdim):
    """Bring a reduction's gradient back to the input's shape (unsqueeze, then expand)."""
    return keep(grad, in_shape, dims, keepdim).expand(in_shape)


def _expanded(g, in_shape, dims, keepdim):
    """expand_grad on an array: g with the reduced dims kept, expanded to in_shape (stride 0), the
    same geometry as the reshape and expand ops give."""
    if not keepdim and dims:
        g = g.reshape(keep_shape(in_shape, dims))
    shape, strides = expand_geometry(g.shape, strides_of(g), in_shape)
    return B.restride(g, shape, strides)


def keep(t, in_shape, dims, keepdim):
    """t reshaped to the keepdim=True shape (a no-op if it already is)."""
    if not keepdim and dims:
        return t.reshape(keep_shape(in_shape, dims))
    return t


def numel_of(shape, dims):
    n = 1
    for i in dims:
        n *= shape[i]
    return n


def sum_dtype(d):
    """sum/prod/cumsum of bool and integers accumulate in int64, as torch."""
    return D.int64 if d.category <= D.INT else d


def accumulate_dtype(dtype, d, kernel):
    """The dtype sum/prod/cumsum/cumprod accumulate in: dtype= when given (torch has no such kernel for
    uint16/32/64: NotImplementedError), else sum_dtype of the input's dtype d."""
    if dtype is None:
        return sum_dtype(d)
    if dtype.limited:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.SCALAR_NAMES[dtype]}'")
    return dtype


def require_float(input, msg):
    if input._dtype.category < D.FLOAT:
        raise RuntimeError(msg.format(D.SCALAR_NAMES[input._dtype]))


def finish(r, out, name, **checks):
    """Return r, or copy it into out= (a tensor, or a tuple of tensors for tuple results); checks: write_out's
    inputs= and exact_dtype=."""
    if out is None:
        return r
    if isinstance(r, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(r):
            raise TypeError(f"{name}(): argument 'out' must be tuple of {len(r)} Tensors")
        written = tuple(write_out(o, v, name, **checks) for o, v in zip(out, r))
        return type(r)(written) if type(r) is not tuple else written
    return write_out(out, r, name, **checks)


def empty_dim_error(name, x, dims):
    """IndexError like torch when a reduction without identity meets an empty dimension."""
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


# ---- Note [Index routing] ----------------------------------------------------------------
# max(dim), sort, topk, median, cummax ... pick input elements by index. Their gradient
# places the incoming gradient at those indices (PlaceAlong); PlaceAlong's own gradient
# reads it back (Gather), and Gather's gradient places again, so any order of derivative
# works. The index arrays are constants of the forward pass, kept on the node.

def _as_1d(x):
    return x.reshape(1) if x.ndim == 0 else x


class Gather(Op):
    """out = take_along_axis(x, index, dim) for a constant int64 index array."""
    _name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, index, dim, shape=None):
        ctx.args = (x.shape, index, dim)
        r = np.take_along_axis(_as_1d(x), _as_1d(index), axis=dim)
        return r.reshape(index.shape if shape is None else shape)

    def backward(ctx, grad):
        shape, index, dim = ctx.args
        return PlaceAlong.apply(grad, shape=shape, index=index, dim=dim, accumulate=True)


class PlaceAlong(Op):
    """out = zeros(shape) with src put at index along dim (summed where indices repeat)."""
    _name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, src, shape, index, dim, accumulate):
        ctx.args = (index, dim, src.shape)
        out_shape = shape if shape else (1,)
        idx = _as_1d(index)
        values = _as_1d(src)
        if accumulate and values.dtype.kind == "f":
            # np.bincount over flat positions sums repeats in one pass (float64, then cast back)
            flat = _flat_positions(out_shape, idx, dim)
            size = int(np.prod(out_shape))
            out = np.bincount(flat.ravel(), weights=values.ravel(), minlength=size).astype(values.dtype)
            return out.reshape(shape)
        out = np.zeros(out_shape, dtype=src.dtype)
        if accumulate:
            where = list(np.indices(idx.shape, sparse=True))
            where[dim] = idx
            np.add.at(out, tuple(where), values)
        else:
            np.put_along_axis(out, idx, values, axis=dim)
        return out.reshape(shape)

    def backward(ctx, grad):
        index, dim, src_shape = ctx.args
        return Gather.apply(grad, index=index, dim=dim, shape=src_shape)


def _flat_positions(shape, index, dim):
    """C-order flat position in an array of `shape` of each element of index (read along dim)."""
    dim = dim % index.ndim
    strides = np.cumprod((1,) + tuple(shape[:0:-1]))[::-1]
    flat = index * strides[dim]
    for axis, n in enumerate(index.shape):
        if axis != dim:
            view = [1] * index.ndim
            view[axis] = n
            flat = flat + np.arange(n).reshape(view) * strides[axis]
    return flat


def gather(t, index, dim):
    """t's elements at the int64 array `index` along dim, differentiably."""
    return Gather.apply(t, index=index, dim=dim)


def index_grad(grad, index, dim, in_shape, keepdim=True, accumulate=False):
    """Gradient of a value-selecting op: grad placed at index along dim, zeros elsewhere."""
    if not keepdim and len(in_shape):
        grad = grad.unsqueeze(dim)
        index = np.expand_dims(index, dim)
    return PlaceAlong.apply(grad, shape=in_shape, index=index, dim=dim, accumulate=accumulate)


def evenly_distribute(grad, x, value, dims=None, keepdim=True):
    """Gradient of max/min/median over whole slices: split evenly among the elements equal to
    the result (among the NaNs when the result is NaN), as torch does for ties."""
    shape = x._data.shape
    if dims is None:
        mask = x.isnan() if np.isnan(value._data).any() else x == value
        return mask.to(grad.dtype) * (grad / mask.sum())
    v = keep(value, shape, dims, keepdim)
    mask = x == v
    g = keep(grad, shape, dims, keepdim)
    return (g / mask.sum(dims, keepdim=True)) * mask.to(grad.dtype)


# ---- sum / mean / prod ------------------------------------------------------------------

class Sum(Op):
    _name = "SumBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.args = (x.shape, dims, keepdim)
        return np.add.reduce(x, axis=dims, dtype=dtype.np, keepdims=keepdim)  # np.sum without its wrappers

    def backward(ctx, grad):
        if not _state.enabled:  # first order: the view on arrays, no nodes (Note [Fused norm backward])
            return _make(_expanded(grad._data, *ctx.args))
        return expand_grad(grad, *ctx.args)


_SUM_OVERLOADS = ("Tensor input, *, torch.dtype dtype = None",
                  "Tensor input, tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None")
_NO_DIM = object()  # sum(x) vs sum(x, None): torch's out= overload needs dim given (None allowed)


def _dim_shown_as_none(fn):
    """fn's signature as torch documents it (dim=None), over the _NO_DIM default that tells an omitted dim."""
    import inspect
    sig = inspect.signature(fn)
    fn.__signature__ = sig.replace(parameters=[p.replace(default=None) if p.name == "dim" else p
                                               for p in sig.parameters.values()])
    return fn


@register()
@numpy_names
@_dim_shown_as_none
def sum(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    check_tensor(input, "sum")
    if dim is _NO_DIM:
        if out is not None:
            if dtype is not None:
                raise TypeError('sum() missing 1 required positional arguments: "dim"')
            raise invalid_combination("sum", (input,), {"out": out}, _SUM_OVERLOADS)
        dim = None
    elif isinstance(dim, D.dtype):  # neither overload takes a dtype in dim's place
        raise invalid_combination("sum", (input, dim), {}, _SUM_OVERLOADS)
    dims = reduce_dims(dim, input._data.ndim)
    d = accumulate_dtype(dtype, input._dtype, "sum_cpu")
    r = Sum.apply(input, dims=dims, keepdim=keepdim, dtype=d)
    if dim is None and not keepdim and r._grad_fn is not None:
        r._grad_fn._name = "SumBackward0"
    return finish(r, out, "sum")


class NanSum(Op):
    """sum treating NaN as 0; the gradient is grad * (x is not NaN), so inf * 0 stays NaN as in torch."""
    _name = "NansumBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.args = (x.shape, dims, keepdim)
        ctx.save_for_backward(x)
        return np.nansum(x, axis=dims, keepdims=keepdim, dtype=dtype.np)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return expand_grad(grad, *ctx.args) * x.isnan().logical_not().to(grad.dtype)


@register()
@numpy_names
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    check_tensor(input, "nansum")
    refuse_complex(input, message="nansum on CPU does not support complex inputs")
    dims = reduce_dims(dim, input._data.ndim)
    d = accumulate_dtype(dtype, input._dtype, "sum_cpu")
    try:
        return finish(NanSum.apply(input, dims=dims, keepdim=keepdim, dtype=d), out, "nansum")
    except RuntimeError:
        _nansum_out_kernel(input, out)
        raise


def _nansum_out_kernel(input, out):
    """torch's nansum/nanmean run the kernel of out='s dtype: an integer out= for a floating input has none."""
    if isinstance(out, Tensor) and out._dtype.category < D.FLOAT <= input._dtype.category:
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for '{D.SCALAR_NAMES[out._dtype]}'")


@register()
def sum_to_size(input, *sizes, size=None):
    """Sum broadcast dimensions so the result has `size` (the inverse of expand)."""
    from .shape import shape_args, varargs_or
    if size is not None:
        sizes = varargs_or(sizes, size, "size", "sum_to_size")
    size = shape_args(sizes, "sum_to_size")
    shape = input._data.shape
    if not size:  # torch sums to a 0-d tensor (bool and integers widen to int64), even from 0-d
        return sum(input)
    if shape == size:
        return input
    lead = len(shape) - len(size)
    if lead < 0 or builtins.any(s != 1 and s != shape[i + lead] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size) if s == 1 and shape[i + lead] != 1)
    r = sum(input, dims, keepdim=True) if dims else input
    if lead:
        r = r.reshape(size)
    return r


class Mean(Op):
    _name = "MeanBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim, n):
        ctx.args = (x.shape, dims, keepdim)
        ctx.n = n
        s = np.sum(x, axis=dims, keepdims=keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.true_divide(s, n, dtype=x.dtype) if n else np.full(s.shape, np.nan, x.dtype)

    def backward(ctx, grad):
        return expand_grad(grad / ctx.n, *ctx.args)


@register()
@numpy_names
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    check_tensor(input, "mean")
    d = dtype if dtype is not None else input._dtype
    if d.category < D.FLOAT:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {D.SCALAR_NAMES[d]}")
    dims = reduce_dims(dim, input._data.ndim)
    x = input if dtype is None else input.to(dtype)
    r = Mean.apply(x, dims=dims, keepdim=keepdim, n=numel_of(input._data.shape, dims))
    if dim is None and not keepdim and r._grad_fn is not None:
        r._grad_fn._name = "MeanBackward0"
    return finish(r, out, "mean")


@register()
@numpy_names
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    check_tensor(input, "nanmean")
    refuse_complex(input, message="nansum on CPU does not support complex inputs")
    require_float(input, "nanmean(): expected input to have floating point or complex dtype but got {}")
    count = input.isnan().logical_not().sum(dim, keepdim)
    try:
        return finish(nansum(input, dim, keepdim, dtype=dtype) / count, out, "nanmean")
    except RuntimeError:
        _nansum_out_kernel(input, out)
        raise


class Prod(Op):
    _name = "ProdBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.args = (x.shape, dims, keepdim)
        out = np.asarray(np.prod(x, axis=dims, keepdims=keepdim, dtype=dtype.np))
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.args
        g = expand_grad(grad, shape, dims, keepdim)
        if not (x._data == 0).any():
            return g * cj(expand_grad(out, shape, dims, keepdim)) / cj(x)
        # with zeros, divide-by-x is undefined: use the product of all *other* elements,
        # written with cumprods so that it is differentiable again (second order at zeros)
        if len(dims) == 1:
            return g * cj(prod_of_others(x, dims[0]))
        flat = x.reshape(-1)
        return g * cj(prod_of_others(flat, 0).reshape(shape))


def prod_of_others(x, dim):
    """prod_{j != i} x_j along dim, from exclusive cumulative products from both ends."""
    from .scan import cumprod_dir
    n = x._data.shape[dim]
    if n <= 1:
        return x * 0 + 1
    one = x.narrow(dim, 0, 1) * 0 + 1
    left = cumprod_dir(x.narrow(dim, 0, n - 1), dim, reverse=False)
    right = cumprod_dir(x.narrow(dim, 1, n - 1), dim, reverse=True)
    from .indexing import cat
    return cat([one, left], dim) * cat([right, one], dim)


_PROD_OVERLOADS = ("Tensor input, *, torch.dtype dtype = None",
                   "Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None")


@register()
@numpy_names
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    check_tensor(input, "prod")
    if isinstance(dim, D.dtype):  # neither overload takes a dtype in dim's place
        raise invalid_combination("prod", (input, dim), {}, _PROD_OVERLOADS)
    if dim is not None:
        if isinstance(dim, (list, tuple)):  # neither overload takes several dims
            raise invalid_combination("prod", (input, dim), {}, _PROD_OVERLOADS)
        dims = (one_dim(dim, input._data.ndim),) if input._data.ndim else ()
    else:
        if out is not None:  # torch's out= overload is prod(input, int dim, keepdim, *, dtype, out)
            raise invalid_combination("prod", (input,), {"out": out}, _PROD_OVERLOADS)
        dims = tuple(range(input._data.ndim))
    d = accumulate_dtype(dtype, input._dtype, "prod_out_cpu")
    r = Prod.apply(input, dims=dims, keepdim=keepdim, dtype=d)
    if dim is None and r._grad_fn is not None:
        r._grad_fn._name = "ProdBackward0"
    return finish(r, out, "prod")


# ---- max / min / amax / amin / argmax ----------------------------------------------------

class MaxAll(Op):
    """max()/min() of every element; ties share the gradient evenly."""
    _name = "MaxBackward1"

    @staticmethod
    def forward(ctx, x, largest):
        out = np.asarray(np.max(x) if largest else np.min(x))
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return evenly_distribute(grad, x, out)


class MaxDim(Op):
    """max(dim)/min(dim): (values, indices); the first extreme element wins, NaN counts as extreme."""
    _name = "MaxBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, dim, keepdim, largest):
        xs = _as_1d(x)
        idx = np.argmax(xs, axis=dim, keepdims=True) if largest else np.argmin(xs, axis=dim, keepdims=True)
        values = np.take_along_axis(xs, idx, axis=dim)
        ctx.args = (x.shape, dim, idx)
        if x.ndim == 0 or not keepdim:
            shape = tuple(s for i, s in enumerate(x.shape) if i != dim) if not keepdim else x.shape
            return values.reshape(shape), idx.reshape(shape)
        return values, idx

    def backward(ctx, grad, grad_indices=None):
        shape, dim, idx = ctx.args
        return index_grad(grad.reshape(idx.shape) if len(shape) else grad, idx, dim, shape)


def _max_min(name, largest, input, dim, keepdim, other, out):
    check_tensor(input, name)
    if isinstance(dim, Tensor) or other is not None:
        from .pointwise import maximum, minimum
        r = (maximum if largest else minimum)(input, dim if other is None else other)
        return finish(r, out, name)
    if dim is None:
        refuse_complex(input, "max_all" if largest else "min_all")
    refuse_complex(input, message=f"{name}(): does not support complex input")
    x = input._data
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (keepdim=bool)")
        if x.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        r = MaxAll.apply(input, largest=largest)
        if r._grad_fn is not None and not largest:
            r._grad_fn._name = "MinBackward1"
        return finish(r, out, name)
    d = one_dim(dim, x.ndim)
    if x.ndim:
        empty_dim_error(name, x, (d,))
    values, indices = MaxDim.apply(input, dim=d, keepdim=keepdim, largest=largest)
    if values._grad_fn is not None and not largest:
        values._grad_fn._name = "MinBackward0"
    return finish(getattr(return_types, name)((values, indices)), out, name)


@register()
@numpy_names
def max(input, dim=None, keepdim=False, *, other=None, out=None):
    return _max_min("max", True, input, dim, keepdim, other, out)


@register()
@numpy_names
def min(input, dim=None, keepdim=False, *, other=None, out=None):
    return _max_min("min", False, input, dim, keepdim, other, out)


class Amax(Op):
    """amax/amin over a tuple of dims; ties share the gradient evenly."""
    _name = "AmaxBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, largest):
        ctx.args = (dims, keepdim)
        out = np.amax(x, axis=dims, keepdims=keepdim) if largest else np.amin(x, axis=dims, keepdims=keepdim)
        out = np.asarray(out)
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims, keepdim = ctx.args
        return evenly_distribute(grad, x, out, dims, keepdim)


def _amax_amin(name, largest, input, dim, keepdim, out):
    check_tensor(input, name)
    refuse_complex(input, "max_values_cpu" if largest else "min_values_cpu")
    x = input._data
    dims = reduce_dims(dim, x.ndim)
    if x.size == 0 and (dim is None or (isinstance(dim, (tuple, list)) and not dim)):
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")
    if x.ndim:
        empty_dim_error(name, x, dims)
    r = Amax.apply(input, dims=dims, keepdim=keepdim, largest=largest)
    if r._grad_fn is not None and not largest:
        r._grad_fn._name = "AminBackward0"
    return finish(r, out, name)


@register()
@numpy_names
def amax(input, dim=(), keepdim=False, *, out=None):
    return _amax_amin("amax", True, input, dim, keepdim, out)


@register()
@numpy_names
def amin(input, dim=(), keepdim=False, *, out=None):
    return _amax_amin("amin", False, input, dim, keepdim, out)


@register()
@numpy_names
def aminmax(input, *, dim=None, keepdim=False, out=None):
    check_tensor(input, "aminmax")
    refuse_complex(input, "aminmax_cpu")
    x = input._data
    dims = reduce_dims(dim, x.ndim) if dim is not None else tuple(range(x.ndim))
    if dim is not None and isinstance(dim, (list, tuple)):
        raise TypeError("aminmax(): argument 'dim' must be int, not tuple")
    if x.size == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                           "no identity.")
    if dim is not None and x.ndim and x.shape[dims[0]] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {dims[0]} to have non-zero size.")
    lo = Amax.apply(input, dims=dims, keepdim=keepdim, largest=False)
    hi = Amax.apply(input, dims=dims, keepdim=keepdim, largest=True)
    for r in (lo, hi):
        if r._grad_fn is not None:
            r._grad_fn._name = "AminmaxBackward0"
    return finish(return_types.aminmax((lo, hi)), out, "aminmax", exact_dtype=True)


def _arg(name, largest, input, dim, keepdim, out):
    check_tensor(input, name)
    refuse_complex(input, message=f"{name}(): does not support complex input")
    if input._dtype is D.bool:
        raise RuntimeError(f"{name}(): does not support bool input")
    refuse(input, f"{name}_cpu")
    x = input._data
    if dim is None:
        if x.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        flat = x.reshape(-1)
        r = np.argmax(flat) if largest else np.argmin(flat)
        r = np.asarray(r, dtype=np.int64).reshape((1,) * x.ndim if keepdim else ())
        return finish(_make(r), out, name, exact_dtype=True)  # torch: out= must be int64
    d = one_dim(dim, x.ndim)
    if x.ndim == 0:
        return finish(_make(np.zeros((), np.int64)), out, name, exact_dtype=True)
    empty_dim_error(name, x, (d,))
    r = np.argmax(x, axis=d, keepdims=keepdim) if largest else np.argmin(x, axis=d, keepdims=keepdim)
    return finish(_make(r.astype(np.int64, copy=False)), out, name, exact_dtype=True)


@register()
@numpy_names
def argmax(input, dim=None, keepdim=False, *, out=None):
    return _arg("argmax", True, input, dim, keepdim, out)


@register()
@numpy_names
def argmin(input, dim=None, keepdim=False, *, out=None):
    return _arg("argmin", False, input, dim, keepdim, out)


# ---- all / any / count_nonzero ----------------------------------------------------------

def _logical_reduce(name, fn, input, dim, keepdim, out):
    check_tensor(input, name)
    x = input._data
    dims = reduce_dims(dim, x.ndim)
    r = fn(x, axis=dims, keepdims=keepdim)
    r = np.asarray(r, dtype=np.uint8 if input._dtype is D.uint8 else np.bool_)
    if isinstance(out, Tensor) and out._dtype is not D.bool and out._dtype is not D.uint8:
        raise RuntimeError(f"{name} only supports bool tensor for result, got: {D.SCALAR_NAMES[out._dtype]}")
    return finish(_make(r), out, name)


@register()
@numpy_names
def all(input, dim=None, keepdim=False, *, out=None):
    return _logical_reduce("all", np.all, input, dim, keepdim, out)


@register()
@numpy_names
def any(input, dim=None, keepdim=False, *, out=None):
    return _logical_reduce("any", np.any, input, dim, keepdim, out)


@register()
@numpy_names
def count_nonzero(input, dim=None):
    check_tensor(input, "count_nonzero")
    if dim is None:  # (with a dim torch counts with ne and sum, which take uint16/32/64)
        refuse(input, "nonzero_count_cpu")
    x = input._data
    dims = reduce_dims(dim, x.ndim)
    r = np.count_nonzero(x, axis=dims) if dims else (x != 0)
    return _make(np.asarray(r, dtype=np.int64))


from . import scan, statistics  # noqa: E402,F401  (cumsum ... diff; var/std, logsumexp, norm)
