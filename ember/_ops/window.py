"""Writing one tensor into a window of another: select_scatter, slice_scatter,
diagonal_scatter (each the out-of-place form of an in-place write through a view),
narrow_copy, and the backward helpers of the slicing views (slice, unfold, diagonal)."""
import numpy as np

from .._backend import numpy_cpu as B
from .._tensor import _wrap_dim
from ._registry import Op, register
from .geometry import diagonal_geometry, strides_of
from .shape import Slice


class Embed(Op):
    """out = copy of x (or zeros of `shape`) with the basic-index window `key` set to src."""
    _name = "SliceScatterBackward0"

    @staticmethod
    def forward(ctx, x, src, key, shape=None, name=None):
        ctx.key = key
        if name is not None:
            ctx._name = name
        out = np.zeros(shape, dtype=src.dtype) if x is None else np.array(x, copy=True, order="C")
        try:
            out[key] = src
        except ValueError:
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(out[key].shape)}") from None
        return out

    def backward(ctx, grad):
        need = ctx.needs_input_grad
        gx = gs = None
        if need[0]:
            gx = Embed.apply(grad, grad.new_zeros(()), key=ctx.key)
        if need[1]:
            gs = Slice.apply(grad, key=ctx.key).clone()
        return gx, gs


def _same_dtype(name, input, src):
    if src._dtype is not input._dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")


def _exact_src(name, window_shape, src):
    if tuple(src._data.shape) != tuple(window_shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(window_shape)}")


@register()
def select_scatter(input, src, dim, index):
    window = input.select(dim, index)
    _same_dtype("select_scatter", input, src)
    _exact_src("select_scatter", window._data.shape, src)
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    key = (slice(None),) * d + (index + n if index < 0 else index,)
    return Embed.apply(input, src, key=key, name="SelectScatterBackward0")


@register(out=True)
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    nd = input._data.ndim
    d = _wrap_dim(dim, nd)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    n = input._data.shape[d]
    s, e, st = slice(start, end, step).indices(n)
    key = (slice(None),) * d + (slice(s, max(e, s), st),)
    _same_dtype("slice_scatter", input, src)
    _exact_src("slice_scatter", input._data[key].shape, src)
    return Embed.apply(input, src, key=key, name="SliceScatterBackward0")


class DiagonalScatter(Op):
    _name = "DiagonalScatterBackward0"

    @staticmethod
    def forward(ctx, x, src, offset, dim1, dim2):
        ctx.args = (offset, dim1, dim2)
        out = np.array(x, copy=True, order="C")
        B.restride(out, *diagonal_geometry(out.shape, strides_of(out), offset, dim1, dim2))[...] = src
        return out

    def backward(ctx, grad):
        offset, dim1, dim2 = ctx.args
        need = ctx.needs_input_grad
        gx = gs = None
        if need[0]:
            window = grad.diagonal(offset, dim1, dim2)
            gx = DiagonalScatter.apply(grad, window.new_zeros(window.shape), offset=offset, dim1=dim1, dim2=dim2)
        if need[1]:
            gs = grad.diagonal(offset, dim1, dim2).clone()
        return gx, gs


@register()
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    window = input.diagonal(offset, dim1, dim2)
    _same_dtype("diagonal_scatter", input, src)
    _exact_src("diagonal_scatter", window._data.shape, src)
    nd = input._data.ndim
    return DiagonalScatter.apply(input, src, offset=offset, dim1=_wrap_dim(dim1, nd), dim2=_wrap_dim(dim2, nd))


class NarrowCopy(Op):
    _name = "NarrowCopyBackward0"

    @staticmethod
    def forward(ctx, x, key):
        ctx.args = (x.shape, key)
        return np.array(x[key], copy=True, order="C")

    def backward(ctx, grad):
        shape, key = ctx.args
        return slice_backward(grad, shape, key)


@register(out=True)
def narrow_copy(input, dim, start, length):
    if input._data.ndim and dim >= input._data.ndim:  # torch's narrow_copy checks dim with TORCH_CHECK
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an enhancement request "
                           "to PyTorch.)")
    view = input.narrow(dim, start, length)
    d = _wrap_dim(dim, input._data.ndim)
    off = view._data.shape[d]
    begin = int(start) + (input._data.shape[d] if int(start) < 0 else 0)
    key = (slice(None),) * d + (slice(begin, begin + off),)
    return NarrowCopy.apply(input, key=key)


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
        return Slice.apply(grad, key=ctx.key)


def slice_backward(grad, in_shape, key):
    return SliceScatter.apply(grad, in_shape=in_shape, key=key)


class UnfoldBackward(Op):
    _name = "UnfoldBackwardBackward0"

    @staticmethod
    def forward(ctx, g, in_shape, dim, size, step):
        ctx.args = (dim, size, step)
        if len(in_shape) == 0:
            return g.reshape(())
        out = np.zeros(in_shape, dtype=g.dtype)
        n = g.shape[dim]
        positions = np.arange(n) * step
        pre = (slice(None),) * dim
        for k in range(size):
            out[pre + (positions + k,)] += g[..., k]
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
        B.restride(out, *diagonal_geometry(out.shape, strides_of(out), offset, dim1, dim2))[...] = g
        return out

    def backward(ctx, grad):
        return grad.diagonal(*ctx.args)


def diagonal_backward(grad, in_shape, offset, dim1, dim2):
    return DiagonalBackward.apply(grad, in_shape=in_shape, offset=offset, dim1=dim1, dim2=dim2)
