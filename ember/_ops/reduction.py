"""Reductions: sum, mean, prod, max/min, var/std, norms, logsumexp, any/all ..."""
import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ._registry import Op, register

_make = Tensor._make


def reduce_dims(dim, ndim):
    """None -> all dims; int or sequence -> sorted tuple of wrapped dims (torch errors on repeats)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
        dims = tuple(_wrap_dim(d, ndim) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
        return tuple(sorted(dims))
    return (_wrap_dim(dim, ndim),)


def keep_shape(shape, dims):
    """The shape of a keepdim=True result: reduced dims become 1."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def expand_grad(grad, in_shape, dims, keepdim):
    """Bring a reduction's gradient back to the input's shape (unsqueeze, then expand)."""
    if not keepdim and dims:
        grad = grad.reshape(keep_shape(in_shape, dims))
    return grad.expand(in_shape)


def sum_dtype(d):
    """sum/prod of bool and integers accumulate in int64, as torch."""
    return D.int64 if d.category <= D.INT else d


class Sum(Op):
    _name = "SumBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.args = (x.shape, dims, keepdim)
        return np.sum(x, axis=dims, keepdims=keepdim, dtype=dtype.np)

    def backward(ctx, grad):
        return expand_grad(grad, *ctx.args)


@register()
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    nd = input._data.ndim
    dims = reduce_dims(dim, nd)
    d = dtype if dtype is not None else sum_dtype(input._dtype)
    r = Sum.apply(input, dims=dims, keepdim=keepdim, dtype=d)
    if dim is None and r._grad_fn is not None:
        r._grad_fn._name = "SumBackward0"
    if out is not None:
        from ._registry import write_out
        return write_out(out, r, "sum")
    return r


@register()
def sum_to_size(input, *size):
    """Sum broadcast dimensions so the result has `size` (the inverse of expand)."""
    from .shape import shape_args
    size = shape_args(size, "sum_to_size")
    shape = input._data.shape
    if shape == size:
        return input
    lead = len(shape) - len(size)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size) if s == 1 and shape[i + lead] != 1)
    r = sum(input, dims, keepdim=True) if dims else input
    if lead:
        r = r.reshape(size)
    return r


@register()
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    d = dtype if dtype is not None else input._dtype
    if d.category < D.FLOAT:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {D.SCALAR_NAMES[d]}")
    dims = reduce_dims(dim, input._data.ndim)
    n = 1
    for i in dims:
        n *= input._data.shape[i]
    x = input if dtype is None else input.to(dtype)
    r = Mean.apply(x, dims=dims, keepdim=keepdim, n=n)
    if out is not None:
        from ._registry import write_out
        return write_out(out, r, "mean")
    return r


class Mean(Op):
    _name = "MeanBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim, n):
        ctx.args = (x.shape, dims, keepdim)
        ctx.n = n
        return np.mean(x, axis=dims, keepdims=keepdim) if n else np.full(
            tuple(s for i, s in enumerate(x.shape) if i not in dims) if not keepdim else
            keep_shape(x.shape, dims), np.nan, x.dtype)

    def backward(ctx, grad):
        return expand_grad(grad / ctx.n, *ctx.args)
