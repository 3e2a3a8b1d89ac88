"""View ops: outputs share storage with the input, with torch's exact sizes, strides and
storage offsets (so stride(), is_contiguous() and storage_offset() agree with torch).

Each view op is declared with `view = True`; apply() then shares the version counter
and records `_base`. The geometry rules (torch's computeStride, inferExpandGeometry,
unsqueeze's stride ...) are small pure functions below; NumPy builds the view from them
(B.restride) wherever its own strides would differ (size-1 and zero-size dims).
In-place writes through views rebase history here (see Note [In-place on views]).
"""
import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from .._tensor import Tensor, _is_contiguous, _wrap_dim
from ..autograd.graph import init_node
from ._registry import Op, register

_make = Tensor._make


# ---- arguments --------------------------------------------------------------------------

def shape_args(args, name="view"):
    """Accept f(2, 3), f((2, 3)), f([2, 3]), f(torch.Size) and 0-d integer tensors."""
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


# ---- torch's geometry rules (element strides) -------------------------------------------

def strides_of(arr):
    isz = arr.itemsize
    return tuple(s // isz for s in arr.strides)


def contiguous_strides(shape):
    """Row-major strides, treating size-0 dims as size 1 (torch's rule)."""
    strides = [1] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def view_strides(old_shape, old_strides, new_shape):
    """Strides of a view of (old_shape, old_strides) as new_shape, or None when no view exists
    (torch's computeStride: old dims split into contiguous chunks that new dims must tile)."""
    if not old_shape:
        return (1,) * len(new_shape)
    numel = 1
    for s in old_shape:
        numel *= s
    if numel == 0:
        return tuple(old_strides) if tuple(old_shape) == tuple(new_shape) else contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = old_strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def expand_geometry(shape, strides, sizes):
    """(sizes, strides) of expand (torch's inferExpandGeometry), or raise torch's error."""
    nd = len(sizes)
    pad = nd - len(shape)
    out_shape = [0] * nd
    out_strides = [0] * nd
    for i in range(nd - 1, -1, -1):
        d = i - pad
        size = shape[d] if d >= 0 else 1
        if d >= 0:
            stride = strides[d]
        else:
            stride = out_shape[i + 1] * out_strides[i + 1] if i + 1 < nd else 1
        target = sizes[i]
        if target == -1:
            if d < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            target = size
        if target < 0:
            raise RuntimeError(f"The expanded size of the tensor ({target}) isn't allowed in a leading, "
                               f"non-existing dimension {i}")
        if size != target:
            if size != 1:
                raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size "
                                   f"({size}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                                   f"Tensor sizes: {list(shape)}")
            size = target
            stride = 0
        out_shape[i] = size
        out_strides[i] = stride
    return tuple(out_shape), tuple(out_strides)


def is_non_overlapping_and_dense(shape, strides):
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    order = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, strides[d]))
    expected = 1
    for d in order:
        if shape[d] < 2:
            return True
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def dense_strides_like(shape, strides):
    """Strides torch's preserve_format gives a copy: the input's own if it is non-overlapping
    and dense, else dense strides in the input's stride order (infer_dense_strides)."""
    if is_non_overlapping_and_dense(shape, strides):
        return tuple(strides)
    n = len(shape)
    perm = list(range(n - 1, -1, -1))  # perm[0] is the innermost dim

    def should_swap(a, b):
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa != sb:
            return -1 if sa < sb else 1
        return 1 if shape[a] > shape[b] else 0

    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out = [0] * n
    acc = 1
    for d in perm:
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


# ---- view / reshape ---------------------------------------------------------------

class View(Op):
    view = True
    _name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape, strides):
        ctx.in_shape = x.shape
        return B.restride(x, shape, strides)

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
    t._version = self._version
    return t


@register()
def view(self, *shape, dtype=None):
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
def reshape(input, *shape):
    """A view when torch's stride rule allows one, else a copy (UnsafeViewBackward0, no _base)."""
    x = input._data
    shape = infer_shape(shape_args(shape, "reshape"), x.size)
    strides = view_strides(x.shape, strides_of(x), shape)
    if strides is not None:
        if _is_contiguous(x):
            return View.apply(input, shape=shape, strides=strides)
        return ReshapeAlias.apply(input, shape=shape, strides=strides)
    c = Clone.apply(input, strides=None)
    return UnsafeView.apply(c, shape=shape, strides=contiguous_strides(shape))


@register()
def view_as(self, other):
    return view(self, other._data.shape)


@register()
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
        return np.swapaxes(x, dim0, dim1)

    def backward(ctx, grad):
        return grad.transpose(*ctx.dims)


class TransposeT(Transpose):
    _name = "TBackward0"

    def backward(ctx, grad):
        return grad.t()


@register()
def permute(input, *dims):
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


@register(aliases=("swapaxes", "swapdims"))
def transpose(input, dim0, dim1):
    nd = input._data.ndim
    d0 = _wrap_dim(dim0, nd)
    d1 = _wrap_dim(dim1, nd)
    return Transpose.apply(input, dim0=d0, dim1=d1)


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


@register()
def expand(input, *sizes, implicit=False):
    sizes = shape_args(sizes, "expand")
    x = input._data
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand({input.type()}{{{list(x.shape)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({x.ndim})")
    shape, strides = expand_geometry(x.shape, strides_of(x), sizes)
    return Expand.apply(input, shape=shape, strides=strides)


@register()
def expand_as(input, other):
    return expand(input, other._data.shape)


@register(method=False)
def broadcast_to(input, size):
    return expand(input, tuple(size))


class Squeeze(Op):
    view = True
    _name = "SqueezeBackward0"

    @staticmethod
    def forward(ctx, x, dims, name):
        ctx.in_shape = x.shape
        ctx._name = name
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
        return B.restride(x, tuple(shape), tuple(strides))

    def backward(ctx, grad):
        return grad.squeeze(ctx.dim)


@register()
def unsqueeze(input, dim):
    return Unsqueeze.apply(input, dim=_wrap_dim(dim, input._data.ndim + 1))


# ---- slicing views: narrow, select, unfold, diagonal, as_strided ---------------------

def key_geometry(shape, strides, key):
    """(shape, strides, offset) of basic indexing with a normalized key (ints in range, slices
    with positive steps, None, Ellipsis), by torch's rules (slices clamp, None unsqueezes)."""
    shape = list(shape)
    strides = list(strides)
    offset = 0
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    dim = 0
    for k in key:
        if k is Ellipsis:
            dim += len(shape) - dim - (consumed - _consumed_before(key, k))
        elif k is None:
            stride = shape[dim] * strides[dim] if dim < len(shape) else 1
            shape.insert(dim, 1)
            strides.insert(dim, stride)
            dim += 1
        elif isinstance(k, slice):
            start, stop, step = k.indices(shape[dim])
            length = max(0, (stop - start + step - 1) // step)
            offset += start * strides[dim]
            shape[dim] = length
            strides[dim] *= step
            dim += 1
        else:
            offset += (k + shape[dim] if k < 0 else k) * strides[dim]
            del shape[dim]
            del strides[dim]
    return tuple(shape), tuple(strides), offset


def _consumed_before(key, ellipsis):
    n = 0
    for k in key:
        if k is ellipsis:
            return n
        if k is not None:
            n += 1
    return n


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
        return B.restride(x, *geom)

    def backward(ctx, grad):
        from .indexing import slice_backward
        return slice_backward(grad, ctx.in_shape, ctx.key)


@register()
def narrow(input, dim, start, length):
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    n = input._data.shape[d]
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
        from .indexing import unfold_backward
        return unfold_backward(grad, *ctx.args)


@register()
def unfold(input, dimension, size, step):
    nd = input._data.ndim
    d = _wrap_dim(dimension, nd)
    n = input._data.shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return Unfold.apply(input, dim=d, size=size, step=step)


def diagonal_geometry(shape, strides, offset, dim1, dim2):
    """(shape, strides, element offset) of torch's diagonal view; the diagonal is the last dim."""
    n1, n2 = shape[dim1], shape[dim2]
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        start = offset * strides[dim2]
    else:
        length = max(0, min(n1 + offset, n2))
        start = -offset * strides[dim1]
    if length == 0:
        start = 0
    keep = [i for i in range(len(shape)) if i not in (dim1, dim2)]
    new_shape = tuple(shape[i] for i in keep) + (length,)
    new_strides = tuple(strides[i] for i in keep) + (strides[dim1] + strides[dim2],)
    return new_shape, new_strides, start


class Diagonal(Op):
    view = True
    _name = "DiagonalBackward0"

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.args = (x.shape, offset, dim1, dim2)
        return B.restride(x, *diagonal_geometry(x.shape, strides_of(x), offset, dim1, dim2))

    def backward(ctx, grad):
        from .indexing import diagonal_backward
        return diagonal_backward(grad, *ctx.args)


@register()
def diagonal(input, offset=0, dim1=0, dim2=1):
    nd = input._data.ndim
    d1 = _wrap_dim(dim1, nd)
    d2 = _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, offset=offset, dim1=d1, dim2=d2)


def storage_index(shape, strides, offset):
    """Storage positions of every element of a (shape, strides, offset) geometry, as an int array."""
    idx = np.full((), offset, dtype=np.int64)
    for i, (n, s) in enumerate(zip(shape, strides)):
        r = np.arange(n, dtype=np.int64) * s
        idx = idx[..., None] + r if i else idx + r
    return idx.reshape(shape)


class AsStrided(Op):
    """torch.as_strided: a view of the input's storage with explicit geometry."""
    view = True
    _name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, size, stride, storage_offset):
        root = B.storage_root(x)
        ctx.geoms = ((x.shape, strides_of(x), B.storage_offset(x)), (size, stride, storage_offset))
        ctx.storage = root.nbytes // x.itemsize
        return B.restride(x, size, stride, storage_offset - B.storage_offset(x))

    def backward(ctx, grad):
        in_geom, out_geom = ctx.geoms
        return StorageMove.apply(grad, src=out_geom, dst=in_geom, storage=ctx.storage)


class StorageMove(Op):
    """Gradient of as_strided: add the elements of geometry `src` into a zero storage (overlaps
    accumulate), then read geometry `dst` from it. Its own gradient is the reverse move."""
    _name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, g, src, dst, storage):
        ctx.args = (src, dst, storage)
        buf = np.zeros(storage, dtype=g.dtype)
        np.add.at(buf, storage_index(*src).reshape(-1), g.reshape(-1))
        return buf[storage_index(*dst)]

    def backward(ctx, grad):
        src, dst, storage = ctx.args
        return StorageMove.apply(grad, src=dst, dst=src, storage=storage)


@register()
def as_strided(input, size, stride, storage_offset=None):
    size = tuple(_int(s) for s in size)
    stride = tuple(_int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    x = input._data
    off = B.storage_offset(x) if storage_offset is None else _int(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    need = off + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    avail = B.storage_root(x).nbytes
    if need * x.itemsize > avail:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                           f"{off}, and itemsize {x.itemsize} requiring a storage size of "
                           f"{need * x.itemsize} are out of bounds for storage of size {avail}")
    return AsStrided.apply(input, size=size, stride=stride, storage_offset=off)


# ---- split / chunk / unbind (multi-output views) ------------------------------------

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


@register()
def split(tensor, split_size_or_sections, dim=0):
    if isinstance(split_size_or_sections, (list, tuple)):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    d, n = _split_dim(tensor, dim)
    s = _int(split_size_or_sections)
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    pieces = max(-(-n // s), 1) if s else 1
    sizes = [s] * (pieces - 1) + [n - s * (pieces - 1)]
    return _multi_views(Split.apply(tensor, sizes=tuple(sizes), dim=d))


@register()
def split_with_sizes(input, split_sizes, dim=0):
    d, n = _split_dim(input, dim)
    sizes = tuple(_int(s) for s in split_sizes)
    for s in sizes:
        if s < 0:
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={list(sizes)}")
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={list(sizes)}")
    return _multi_views(SplitWithSizes.apply(input, sizes=sizes, dim=d))


@register()
def chunk(input, chunks, dim=0):
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    size = -(-n // chunks)
    if size == 0 and n == 0:
        return _multi_views(SplitWithSizes.apply(input, sizes=(0,) * chunks, dim=d))
    return split(input, size, d)


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
    return _int(v)


@register()
def tensor_split(input, indices_or_sections, dim=0):
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
def hsplit(input, indices_or_sections):
    return _dir_split(input, indices_or_sections, 1 if input._data.ndim > 1 else 0, "hsplit", 1)


@register()
def vsplit(input, indices_or_sections):
    return _dir_split(input, indices_or_sections, 0, "vsplit", 2)


@register()
def dsplit(input, indices_or_sections):
    return _dir_split(input, indices_or_sections, 2, "dsplit", 3)


@register()
def unbind(input, dim=0):
    if input._data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return _multi_views(Unbind.apply(input, dim=_wrap_dim(dim, input._data.ndim)))


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
    if fmt != "preserve_format" and fmt != "preserve":
        raise RuntimeError(f"clone(): memory_format {fmt} is not supported by ember")
    return Clone.apply(input, strides=dense_strides_like(x.shape, strides_of(x)))


@register()
def contiguous(input, memory_format=None):
    if _is_contiguous(input._data):
        return input
    return Clone.apply(input, strides=None)


# ---- Note [In-place on views] ------------------------------------------------------
# An in-place op on a view v of base b (with autograd) is recorded as an out-of-place
# op on the base: b_new = StridedScatter(b_old, r) where r = op(v_old, ...), named
# CopySlices like torch; v's history becomes StridedGather(b_new) ("AsStridedBackward0").
# Other views of b notice the version change and regenerate their grad_fn from b.

class StridedScatter(Op):
    """out = x (or zeros) in the base layout, with the window `size/stride/offset` set to src."""
    _name = "torch::autograd::CopySlices"  # torch's name(); repr shows CopySlices

    @staticmethod
    def forward(ctx, x, src, base_shape, base_strides, size, stride, offset):
        ctx.geom = (base_shape, base_strides, size, stride, offset)
        dtype = src.dtype if x is None else np.result_type(x, src)
        buf, bview = B.layout_buffer(base_shape, base_strides, dtype)
        if x is not None:
            bview[...] = x
        if src.size:
            B.window(buf, size, stride, offset)[...] = src
        return np.ascontiguousarray(bview)

    def backward(ctx, grad):
        base_shape, base_strides, size, stride, offset = ctx.geom
        need = ctx.needs_input_grad
        gx = gsrc = None
        if need[0]:
            zeros = grad.new_zeros(size)
            gx = StridedScatter.apply(grad, zeros, base_shape=base_shape, base_strides=base_strides,
                                      size=size, stride=stride, offset=offset)
        if need[1]:
            gsrc = StridedGather.apply(grad, base_shape=base_shape, base_strides=base_strides, size=size,
                                       stride=stride, offset=offset)
        return gx, gsrc


class StridedGather(Op):
    """A copy of the window `size/stride/offset` of x laid out as the base."""
    _name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, base_shape, base_strides, size, stride, offset):
        ctx.geom = (base_shape, base_strides, size, stride, offset)
        buf, bview = B.layout_buffer(base_shape, base_strides, x.dtype)
        bview[...] = x
        return np.array(B.window(buf, size, stride, offset), copy=True)

    def backward(ctx, grad):
        base_shape, base_strides, size, stride, offset = ctx.geom
        return StridedScatter.apply(None, grad, base_shape=base_shape, base_strides=base_strides, size=size,
                                    stride=stride, offset=offset)


def _view_node(view, base):
    """Give `view` the history 'a window of base' (StridedGather of base)."""
    base_shape, base_strides = B.layout_of(base._data)
    size, stride, offset = B.geometry(base._data, view._data)
    node = object.__new__(StridedGather)
    init_node(node, (base,))
    node._saved = ()
    node.geom = (base_shape, base_strides, size, stride, offset)
    node._out_meta = ((view._data.shape, view._dtype),)
    view._grad_fn = node
    view._output_nr = 0
    view._requires_grad = True
    view._view_version = view._version.value
    return node


def view_of_base(t):
    """Regenerate the grad_fn of view t from its base's current history."""
    base = t._base
    if t.__dict__ and "_multi_view" in t.__dict__:
        raise RuntimeError(f"Output {t._output_nr} of {t._multi_view} is a view and its base or another view of "
                           "its base has been modified inplace. This view is the output of a function that returns "
                           "multiple views. Such functions do not allow the output views to be modified inplace. "
                           "You should replace the inplace operation by an out-of-place one.")
    if not base._requires_grad:
        t._view_version = t._version.value
        return t._grad_fn
    return _view_node(t, base)


def rebase_history(self, r):
    """After an in-place op wrote r into self: make r's history self's (see Note above)."""
    if self._base is None:
        self._grad_fn = r._grad_fn
        self._output_nr = r._output_nr
        self._requires_grad = True
        return
    base = self._base
    base_shape, base_strides = B.layout_of(base._data)
    size, stride, offset = B.geometry(base._data, self._data)
    node = object.__new__(StridedScatter)
    init_node(node, (base, r))
    node._saved = ()
    node.geom = (base_shape, base_strides, size, stride, offset)
    node._out_meta = ((base._data.shape, base._dtype),)
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    _view_node(self, base)
