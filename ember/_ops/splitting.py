"""Multi-output views: split/chunk/unbind (one node, several views), and tensor_split with
hsplit/vsplit/dsplit (one SliceBackward0 view per piece, as torch)."""
from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ._registry import Op, install, register
from .shape import Slice, _int, basic_view


class SplitWithSizes(Op):
    view = True
    _name = "SplitWithSizesBackward0"

    @staticmethod
    def forward(ctx, x, sizes, dim):
        ctx.dim = dim
        outs = []
        start = 0
        pre = (slice(None),) * dim
        for s in sizes:
            outs.append(basic_view(x, pre + (slice(start, start + s),)))
            start += s
        return tuple(outs)

    def backward(ctx, *grads):
        from .joining import cat
        return cat(grads, ctx.dim)


class Split(SplitWithSizes):
    _name = "SplitBackward0"


class UnsafeSplitWithSizes(SplitWithSizes):
    """unsafe_split*: the pieces share memory but are not tracked as views (no _base, own
    version counters, in-place allowed), as torch."""
    view = False
    _name = "UnsafeSplitWithSizesBackward0"


class UnsafeSplit(UnsafeSplitWithSizes):
    _name = "UnsafeSplitBackward0"


class Unbind(Op):
    view = True
    _name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        pre = (slice(None),) * dim
        return tuple(basic_view(x, pre + (i,)) for i in range(x.shape[dim]))

    def backward(ctx, *grads):
        from .joining import stack
        return stack(grads, ctx.dim)


def _multi_views(outs):
    """Mark outputs of a multi-view op: torch forbids in-place changes through them or their
    base once they carry history (checked in check_inplace and view_of_base)."""
    for o in outs:
        if o._grad_fn is not None:
            o._multi_view = o._grad_fn.name()
    return outs


def _split_dim(tensor, dim):
    if tensor._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, tensor._data.ndim)
    return d, tensor._data.shape[d]


def _equal_sizes(tensor, split_size, dim):
    d, n = _split_dim(tensor, dim)
    s = _int(split_size)
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    pieces = max(-(-n // s), 1) if s else 1
    return d, tuple([s] * (pieces - 1) + [n - s * (pieces - 1)])


@register(method=False)
def split(tensor, split_size_or_sections, dim=0):
    if isinstance(split_size_or_sections, (list, tuple)):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    d, sizes = _equal_sizes(tensor, split_size_or_sections, dim)
    return _multi_views(Split.apply(tensor, sizes=sizes, dim=d))


def _split_method(self, split_size, dim=0):
    """Tensor.split: torch.split under the method's own keyword (split_size)."""
    return split(self, split_size, dim)


install(_split_method, "split", function=False)


@register()
def unsafe_split(input, split_size, dim=0):
    d, sizes = _equal_sizes(input, split_size, dim)
    return UnsafeSplit.apply(input, sizes=sizes, dim=d)


def _given_sizes(input, split_sizes, dim):
    d, n = _split_dim(input, dim)
    sizes = tuple(_int(s) for s in split_sizes)
    for s in sizes:
        if s < 0:
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={list(sizes)}")
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={list(sizes)}")
    return d, sizes


@register()
def split_with_sizes(input, split_sizes, dim=0):
    d, sizes = _given_sizes(input, split_sizes, dim)
    return _multi_views(SplitWithSizes.apply(input, sizes=sizes, dim=d))


@register()
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    d, sizes = _given_sizes(input, split_sizes, dim)
    return UnsafeSplitWithSizes.apply(input, sizes=sizes, dim=d)


def _chunk(input, chunks, dim, unsafe):
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    size = -(-n // chunks)
    if size == 0 and n == 0:
        if unsafe:
            return UnsafeSplitWithSizes.apply(input, sizes=(0,) * chunks, dim=d)
        return _multi_views(SplitWithSizes.apply(input, sizes=(0,) * chunks, dim=d))
    return unsafe_split(input, size, d) if unsafe else split(input, size, d)


@register()
def chunk(input, chunks, dim=0):
    return _chunk(input, chunks, dim, False)


@register()
def unsafe_chunk(input, chunks, dim=0):
    return _chunk(input, chunks, dim, True)


def _sections(indices_or_sections):
    """int sections or a list of split indices (tensors allowed, as torch)."""
    v = indices_or_sections
    if isinstance(v, Tensor):
        if v._dtype.category != D.INT:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have an integral type, but "
                               f"got {v._dtype}")
        if v._data.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {v._data.ndim} dims")
        return int(v._data) if v._data.ndim == 0 else [int(i) for i in v._data]
    if isinstance(v, (list, tuple)):
        return [_int(i) for i in v]
    if not hasattr(v, "__index__"):
        raise TypeError(f"split(): received an invalid combination of arguments - got ({type(v).__name__}), but "
                        f"expected an int or a list of ints")
    return _int(v)


def _one_of(name, given):
    """The one of torch's alternative keywords (indices=, sections=, ...) the call used."""
    used = [v for v in given.values() if v is not None]
    if len(used) != 1:
        raise TypeError(f"{name}() missing 1 required positional arguments: \"{'/'.join(given)}\"" if not used
                        else f"{name}() got multiple values for argument '{'/'.join(given)}'")
    return used[0]


@register()
def tensor_split(input, sections=None, dim=0, *, indices=None, tensor_indices_or_sections=None):
    """torch's three overloads: an int of sections, a list of indices, or a tensor of either."""
    indices_or_sections = sections
    if sections is None or indices is not None or tensor_indices_or_sections is not None:
        indices_or_sections = _one_of("tensor_split", {"sections": sections, "indices": indices,
                                                       "tensor_indices_or_sections": tensor_indices_or_sections})
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, nd)
    n = input._data.shape[d]
    spec = _sections(indices_or_sections)
    if isinstance(spec, int):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        q, r = divmod(n, spec)
        bounds = [0]
        for i in range(spec):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    else:
        bounds = [0] + spec + [n]
    pre = (slice(None),) * d
    return tuple(Slice.apply(input, key=pre + (slice(a, b),), name="SliceBackward0")
                 for a, b in zip(bounds[:-1], bounds[1:]))


def _dir_split(input, sections, dim, name, min_dims):
    nd = input._data.ndim
    if nd < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {nd} dimensions!")
    spec = _sections(sections)
    if isinstance(spec, int):
        n = input._data.shape[dim]
        if spec == 0 or n % spec:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {n} is not divisible by the split_size {spec}!")
    return tensor_split(input, spec, dim)


@register()
def hsplit(input, sections=None, *, indices=None):
    spec = sections
    if indices is not None or sections is None:
        spec = _one_of("hsplit", {"sections": sections, "indices": indices})
    return _dir_split(input, spec, 1 if input._data.ndim > 1 else 0, "hsplit", 1)


@register()
def vsplit(input, sections=None, *, indices=None):
    spec = sections
    if indices is not None or sections is None:
        spec = _one_of("vsplit", {"sections": sections, "indices": indices})
    return _dir_split(input, spec, 0, "vsplit", 2)


@register()
def dsplit(input, sections=None, *, indices=None):
    spec = sections
    if indices is not None or sections is None:
        spec = _one_of("dsplit", {"sections": sections, "indices": indices})
    return _dir_split(input, spec, 2, "dsplit", 3)


@register()
def unbind(input, dim=0):
    if input._data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return _multi_views(Unbind.apply(input, dim=_wrap_dim(dim, input._data.ndim)))
