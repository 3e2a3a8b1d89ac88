"""View ops: outputs share storage with the input, with torch's exact sizes, strides and
storage offsets (so stride(), is_contiguous() and storage_offset() agree with torch).

Each view op is declared with `view = True`; apply() then shares the version counter
and records `_base`. The geometry rules (torch's computeStride, inferExpandGeometry,
unsqueeze's stride ...) are small pure functions below; NumPy builds the view from them
(B.restride) wherever its own strides would differ (size-1 and zero-size dims).
In-place writes through views rebase history here (see Note [In-place on views]).
"""
import functools

import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from .._layout import contiguous_format, format_strides
from .._tensor import Tensor, _is_contiguous, _wrap_dim
from ._registry import Op, check_inplace, install, register
from .creation import varargs_or  # noqa: F401  (joining and reduction import it from here)
from .strided import as_strided, rebase_history, view_of_base  # noqa: F401  (others import them from here)
from .geometry import (contiguous_strides, dense_strides_like, diagonal_geometry, expand_geometry,  # noqa: F401
                       key_geometry, strides_of, view_strides)

_make = Tensor._make


# ---- arguments --------------------------------------------------------------------------

_REQUIRED = {"reshape": "shape", "repeat": "repeats", "expand": "size", "permute": "dims", "flip": "dims"}


def require_args(args, name):
    """torch's TypeError when a method taking sizes or dims as *args gets none."""
    if args:
        return
    if name == "view":
        raise TypeError("view() received an invalid combination of arguments - got (), but expected one of:\n"
                        " * (torch.dtype dtype)\n * (tuple of ints size)\n")
    if name in _REQUIRED:
        raise TypeError(f"{name}() missing 1 required positional arguments: \"{_REQUIRED[name]}\"")


def shape_args(args, name="view"):
    """Accept f(2, 3), f((2, 3)), f([2, 3]), f(torch.Size) and 0-d integer tensors."""
    require_args(args, name)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    try:
        return tuple(int(a.__index__()) for a in args)
    except (AttributeError, TypeError):
        bad = next(a for a in args if not hasattr(a, "__index__"))
        raise TypeError(f"{name}(): argument 'size' must be tuple of ints, but found element of type "
                        f"{type(bad).__name__}") from None


def infer_shape(shape, numel):
    """Resolve one -1 in shape; RuntimeError like torch when the size cannot work."""
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    text = ", ".join(map(str, shape))
    if neg:
        if known == 0:
            if numel == 0:
                raise RuntimeError(f"cannot reshape tensor of 0 elements into shape [{text}] because the "
                                   f"unspecified dimension size -1 can be any value and is ambiguous")
            raise RuntimeError(f"shape '[{text}]' is invalid for input of size {numel}")
        if numel % known:
            raise RuntimeError(f"shape '[{text}]' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '[{text}]' is invalid for input of size {numel}")
    return tuple(shape)


def dims_arg(dims, ndim):
    """Normalize a dim or sequence of dims (wrapping negatives)."""
    if isinstance(dims, (list, tuple)):
        return tuple(_wrap_dim(d, ndim) for d in dims)
    return (_wrap_dim(dims, ndim),)


def _int(v):
    return int(v.__index__()) if not isinstance(v, int) else v


# ---- view / reshape ---------------------------------------------------------------

class View(Op):
    view = True
    _name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape, strides):
        ctx.in_shape = x.shape
        try:
            native = np.reshape(x, shape, copy=False)
        except ValueError:
            return B.restride(x, shape, strides)
        return B.exact_or_restride(native, x, shape, strides)

    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


class ReshapeAlias(View):
    """reshape of a non-contiguous input that can still be viewed (torch's _reshape_alias)."""
    _name = "ReshapeAliasBackward0"


class UnsafeView(View):
    """reshape of a fresh contiguous copy: not a view of the input (torch's _unsafe_view)."""
    view = False
    _name = "UnsafeViewBackward0"


def _view_dtype(self, dtype):
    """view(dtype): reinterpret the bytes. Not differentiable and no `_base` (as torch), but
    the version counter is shared."""
    old = self._dtype
    x = self._data
    shape = list(x.shape)
    strides = list(strides_of(x))
    if dtype.itemsize != old.itemsize:
        names = (D.SCALAR_NAMES[old], D.SCALAR_NAMES[dtype])
        what = f"to view {names[0]} as {names[1]} (different element sizes)"
        if x.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
        if dtype.itemsize > old.itemsize:
            ratio = dtype.itemsize // old.itemsize
            if shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {shape[-1]}")
            offset = B.storage_offset(x)
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}")
            for i in range(len(shape) - 1):
                if strides[i] % ratio:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, but got "
                                       f"{strides[i]}")
            shape[-1] //= ratio
            strides = [s // ratio for s in strides[:-1]] + [1]
        else:
            ratio = old.itemsize // dtype.itemsize
            shape[-1] *= ratio
            strides = [s * ratio for s in strides[:-1]] + [1]
    arr = B.restride_as(x, dtype.np, tuple(shape), tuple(strides))
    t = _make(arr, dtype)
    t._version_counter = self._version_counter
    return t


@register(function=False)
def view(self, *shape, size=None, dtype=None):
    if size is not None:
        shape = varargs_or(shape, size, "size", "view")
    if dtype is not None or (len(shape) == 1 and isinstance(shape[0], D.dtype)):
        return _view_dtype(self, dtype if dtype is not None else shape[0])
    x = self._data
    shape = infer_shape(shape_args(shape, "view"), x.size)
    strides = view_strides(x.shape, strides_of(x), shape)
    if strides is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return View.apply(self, shape=shape, strides=strides)


@register()
def reshape(input, *shape_, shape=None):
    """A view when torch's stride rule allows one, else a copy (UnsafeViewBackward0, no _base)."""
    if shape is not None:
        shape_ = varargs_or(shape_, shape, "shape", "reshape")
    shape = shape_
    x = input._data
    shape = infer_shape(shape_args(shape, "reshape"), x.size)
    strides = view_strides(x.shape, strides_of(x), shape)
    if strides is not None:
        if _is_contiguous(x):
            return View.apply(input, shape=shape, strides=strides)
        return ReshapeAlias.apply(input, shape=shape, strides=strides)
    c = Clone.apply(input, strides=None)
    return UnsafeView.apply(c, shape=shape, strides=contiguous_strides(shape))


@register(function=False)
def view_as(self, other):
    return view(self, other._data.shape)


@register(function=False)
def reshape_as(self, other):
    return reshape(self, other._data.shape)


@register()
def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    if nd == 0:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, nd)
    e = _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = input._data.shape
    n = 1
    for k in shape[s:e + 1]:
        n *= k
    return reshape(input, shape[:s] + (n,) + shape[e + 1:])


@register()
def unflatten(input, dim, sizes):
    nd = input._data.ndim
    d = _wrap_dim(dim, nd)
    sizes = shape_args((sizes,), "unflatten")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input._data.shape[d]
    if -1 in sizes:
        sizes = infer_shape(sizes, n)
    else:
        p = 1
        for s in sizes:
            p *= s
        if p != n:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                               f"{dim} ({n}) in the input tensor")
    shape = input._data.shape
    return view(input, shape[:d] + sizes + shape[d + 1:])


def _unflatten_method(checked):
    """Tensor.unflatten is Python code in torch: falsy sizes (None, {}, []) are refused before its parser runs."""
    @functools.wraps(checked)
    def unflatten(self, dim, sizes):
        if not sizes:
            raise RuntimeError("unflatten: sizes must be non-empty")
        return checked(self, dim, sizes)
    return unflatten


Tensor.unflatten = _unflatten_method(Tensor.unflatten)


@register()
def ravel(input):
    """contiguous().view(-1): a view of the input, or of its contiguous copy."""
    return view(contiguous(input), -1)


# ---- transpose / permute ------------------------------------------------------------

class Permute(Op):
    view = True
    _name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        if x.size == 0:  # NumPy keeps no strides for empty arrays; permute torch's
            st = strides_of(x)
            return B.restride(x, tuple(x.shape[d] for d in dims), tuple(st[d] for d in dims))
        return np.transpose(x, dims)

    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(inverse)


class Transpose(Op):
    view = True
    _name = "TransposeBackward0"

    @staticmethod
    def forward(ctx, x, dim0, dim1):
        ctx.dims = (dim0, dim1)
        if x.ndim == 0:
            return x[...]
        if x.size == 0:
            shape = list(x.shape)
            st = list(strides_of(x))
            shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
            st[dim0], st[dim1] = st[dim1], st[dim0]
            return B.restride(x, tuple(shape), tuple(st))
        return np.swapaxes(x, dim0, dim1)

    def backward(ctx, grad):
        return grad.transpose(*ctx.dims)


class TransposeT(Transpose):
    _name = "TBackward0"

    def backward(ctx, grad):
        return grad.t()


@register()
def permute(input, *dims_, dims=None):
    if dims is not None:
        dims_ = varargs_or(dims_, dims, "dims", "permute")
    dims = dims_
    dims = shape_args(dims, "permute")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
                           f"to len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(input, dims=dims)


@register(aliases=("swapdims",))
def transpose(input, dim0, dim1):
    nd = input._data.ndim
    d0 = _wrap_dim(dim0, nd)
    d1 = _wrap_dim(dim1, nd)
    return Transpose.apply(input, dim0=d0, dim1=d1)


@register()
def swapaxes(input, axis0, axis1):
    """transpose under NumPy's parameter names (torch's swapaxes keywords)."""
    return transpose(input, axis0, axis1)


@register()
def t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return TransposeT.apply(input, dim0=0, dim1=nd - 1 if nd else 0)


@register()
def adjoint(input):
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got {nd}-D "
                           f"tensor.")
    r = transpose(input, -2, -1)
    return r.conj() if r.is_complex() else r


@register(aliases=("moveaxis",))
def movedim(input, source, destination):
    nd = input._data.ndim
    src = dims_arg(source, nd)
    dst = dims_arg(destination, nd)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    order = [-1] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = [o if o != -1 else next(rest) for o in order]
    return Permute.apply(input, dims=tuple(order))


# ---- expand / squeeze / unsqueeze -----------------------------------------------------

class Expand(Op):
    view = True
    _name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x, shape, strides):
        ctx.in_shape = x.shape
        return B.restride(x, shape, strides)

    def backward(ctx, grad):
        return grad.sum_to_size(ctx.in_shape)


@register(function=False)
def expand(input, *sizes, size=None, implicit=False):
    if size is not None:
        sizes = varargs_or(sizes, size, "size", "expand")
    sizes = shape_args(sizes, "expand")
    x = input._data
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand({input.type()}{{{list(x.shape)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({x.ndim})")
    shape, strides = expand_geometry(x.shape, strides_of(x), sizes)
    return Expand.apply(input, shape=shape, strides=strides)


@register(function=False)
def expand_as(input, other):
    return expand(input, other._data.shape)


@register()
def broadcast_to(input, size):
    return expand(input, tuple(size))


class Squeeze(Op):
    view = True
    _name = "SqueezeBackward0"

    @staticmethod
    def forward(ctx, x, dims, name):
        ctx.in_shape = x.shape
        ctx._name = name
        if x.size == 0:
            st = strides_of(x)
            keep = [i for i in range(x.ndim) if i not in dims]
            return B.restride(x, tuple(x.shape[i] for i in keep), tuple(st[i] for i in keep))
        return np.squeeze(x, axis=dims)

    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


@register()
def squeeze(input, dim=None):
    x = input._data
    if dim is None:
        dims = tuple(i for i, n in enumerate(x.shape) if n == 1)
        return Squeeze.apply(input, dims=dims, name="SqueezeBackward0")
    name = "SqueezeBackward2" if isinstance(dim, (list, tuple)) else "SqueezeBackward1"
    dims = dims_arg(dim, x.ndim)
    dims = tuple(sorted({d for d in dims if x.ndim and x.shape[d] == 1}))
    return Squeeze.apply(input, dims=dims, name=name)


class Unsqueeze(Op):
    view = True
    _name = "UnsqueezeBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        shape = list(x.shape)
        strides = list(strides_of(x))
        stride = shape[dim] * strides[dim] if dim < x.ndim else 1
        shape.insert(dim, 1)
        strides.insert(dim, stride)
        shape = tuple(shape)
        return B.exact_or_restride(np.reshape(x, shape, copy=False), x, shape, tuple(strides))

    def backward(ctx, grad):
        return grad.squeeze(ctx.dim)


@register()
def unsqueeze(input, dim):
    return Unsqueeze.apply(input, dim=_wrap_dim(dim, input._data.ndim + 1))


# ---- slicing views: narrow, select, unfold, diagonal, as_strided ---------------------

def basic_view(x, key):
    """x[key] as a view with torch's geometry. NumPy's own indexing is exact except that it
    returns a scalar for a full selection and puts empty results at offset 0."""
    r = x[key]
    if type(r) is np.ndarray and r.size:
        return r
    return B.restride(x, *key_geometry(x.shape, strides_of(x), key))


class Slice(Op):
    """Basic indexing (ints, slices, None, Ellipsis) as one view. `geom` is the torch geometry
    (shape, strides, offset) when NumPy's own would differ (None dims), else NumPy indexes."""
    view = True
    _name = "SliceBackward0"

    @staticmethod
    def forward(ctx, x, key, name="SliceBackward0", geom=None):
        ctx.in_shape = x.shape
        ctx.key = key
        ctx._name = name
        if geom is None:
            return basic_view(x, key)
        # None dims: NumPy gives them stride 0; add them by reshape, which usually agrees with torch
        shape, strides, offset = geom
        r = basic_view(x, tuple(k for k in key if k is not None))
        try:
            native = np.reshape(r, shape, copy=False)
        except ValueError:
            return B.restride(x, shape, strides, offset)
        return B.exact_or_restride(native, x, shape, strides, offset)

    def backward(ctx, grad):
        from .window import slice_backward
        return slice_backward(grad, ctx.in_shape, ctx.key)


@register()
def narrow(input, dim, start, length):
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    n = input._data.shape[d]
    if isinstance(start, Tensor) and (start._data.ndim or start._dtype.category != D.INT):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    start = _int(start)
    length = _int(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    return Slice.apply(input, key=key, name="SliceBackward0")


@register()
def select(input, dim, index):
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    n = input._data.shape[d]
    index = _int(index)
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input._data.shape)} at "
                         f"dimension {dim}")
    key = (slice(None),) * d + (index,)
    return Slice.apply(input, key=key, name="SelectBackward0")


class Unfold(Op):
    view = True
    _name = "UnfoldBackward0"

    @staticmethod
    def forward(ctx, x, dim, size, step):
        ctx.args = (x.shape, dim, size, step)
        if x.ndim == 0:
            return B.restride(x, (1,), (1,))
        shape = list(x.shape)
        strides = list(strides_of(x))
        shape[dim] = (shape[dim] - size) // step + 1
        strides.append(strides[dim])
        strides[dim] *= step
        shape.append(size)
        return B.restride(x, tuple(shape), tuple(strides))

    def backward(ctx, grad):
        from .window import unfold_backward
        return unfold_backward(grad, *ctx.args)


@register(function=False)
def unfold(input, dimension, size, step):
    nd = input._data.ndim
    d = _wrap_dim(dimension, nd)
    n = input._data.shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return Unfold.apply(input, dim=d, size=size, step=step)


class Diagonal(Op):
    view = True
    _name = "DiagonalBackward0"

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.args = (x.shape, offset, dim1, dim2)
        return B.restride(x, *diagonal_geometry(x.shape, strides_of(x), offset, dim1, dim2))

    def backward(ctx, grad):
        from .window import diagonal_backward
        return diagonal_backward(grad, *ctx.args)


@register()
def diagonal(input, offset=0, dim1=0, dim2=1):
    nd = input._data.ndim
    d1 = _wrap_dim(dim1, nd)
    d2 = _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, offset=offset, dim1=d1, dim2=d2)


# ---- contiguous / clone -------------------------------------------------------------

class Clone(Op):
    _name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x, strides=None):
        if strides is None or strides == contiguous_strides(x.shape):
            return np.array(x, copy=True, order="C")
        buf = np.empty(x.size, dtype=x.dtype)
        out = B.restride(buf, x.shape, strides)
        out[...] = x
        return out

    def backward(ctx, grad):
        return grad


def _memory_format_name(memory_format):
    return "preserve" if memory_format is None else str(memory_format).replace("torch.", "")


@register()
def clone(input, *, memory_format=None):
    """preserve_format (the default) keeps the input's layout, as torch."""
    fmt = _memory_format_name(memory_format)
    x = input._data
    if fmt == "contiguous_format":
        return Clone.apply(input, strides=None)
    if fmt in ("channels_last", "channels_last_3d"):  # C innermost (ember/_layout.py)
        return Clone.apply(input, strides=format_strides(x.shape, memory_format))
    if fmt != "preserve_format" and fmt != "preserve":
        raise RuntimeError(f"clone(): memory_format {fmt} is not supported by ember")
    return Clone.apply(input, strides=dense_strides_like(x.shape, strides_of(x)))


@register(function=False)
def contiguous(input, *, memory_format=None):
    strides = format_strides(input._data.shape, memory_format) if memory_format is not None else None
    if strides is not None and memory_format is not contiguous_format:  # channels_last formats
        same = all(n == 1 or s == t for n, s, t in zip(input._data.shape, input.stride(), strides))
        return input if same else Clone.apply(input, strides=strides)
    if _is_contiguous(input._data):
        return input
    return Clone.apply(input, strides=None)


# ---- in-place view ops: new geometry for self ---------------------------------------------

def _meta_inplace(name, fn, node_name):
    """name_: self takes the geometry of fn(self) (a view of its own storage); the version is
    bumped and, with a graph, fn's node (under torch's in-place name) becomes self's history."""
    def inplace(input, *args, **kwargs):
        check_inplace(input)
        r = fn(input, *args, **kwargs)
        input._data = r._data
        input._version_counter.value += 1
        node = r._grad_fn
        if node is not None:
            node._name = node_name(args, kwargs) if callable(node_name) else node_name
            input._grad_fn = node
            input._output_nr = 0
            input._requires_grad = True
        if input._base is not None:
            input._view_version = input._version_counter.value
        return input
    inplace.__name__ = inplace.__qualname__ = name
    install(inplace, name, function=False)
    return inplace


def _squeeze_name(args, kwargs):
    dim = args[0] if args else kwargs.get("dim")
    if dim is None:
        return "SqueezeBackward3"
    return "SqueezeBackward5" if isinstance(dim, (list, tuple)) else "SqueezeBackward4"


_meta_inplace("unsqueeze_", unsqueeze, "UnsqueezeBackward1")
_meta_inplace("squeeze_", squeeze, _squeeze_name)
_meta_inplace("t_", t, "TBackward1")
for _n in ("transpose_", "swapaxes_", "swapdims_"):
    _meta_inplace(_n, transpose, "TransposeBackward1")
install(_meta_inplace("as_strided_", as_strided, "AsStridedBackward1"), "as_strided_", method=False)


from . import splitting, view_copies  # noqa: E402,F401  (split/chunk/unbind/tensor_split, *_copy ops)
