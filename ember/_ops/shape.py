"""View and shape ops: outputs share storage with the input, as in torch.

Each view op is declared with `view = True`; apply() then shares the version counter
and records the base. In-place writes through views rebase history here
(rebase_history, see Note [In-place on views]).
"""
import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from .._tensor import Tensor, Size, _wrap_dim
from ..autograd.graph import init_node
from ._registry import Op, install, register

_make = Tensor._make


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
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
    return tuple(shape)


def dims_arg(dims, ndim):
    """Normalize a dim or sequence of dims (wrapping negatives)."""
    if isinstance(dims, (list, tuple)):
        return tuple(_wrap_dim(d, ndim) for d in dims)
    return (_wrap_dim(dims, ndim),)


# ---- view / reshape ---------------------------------------------------------------

class View(Op):
    view = True
    _name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        try:
            return np.reshape(x, shape, copy=False)
        except ValueError:
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) "
                               "instead.") from None

    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


class Reshape(Op):
    """reshape when a view is impossible: a copy (torch names it via clone+view)."""
    _name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return np.reshape(np.ascontiguousarray(x), shape)

    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


def _view_dtype(self, dtype):
    if dtype.itemsize != self._dtype.itemsize:
        raise RuntimeError("view(dtype) with a different element size is not supported by ember yet")
    t = _make(self._data.view(dtype.np), dtype)
    t._version = self._version
    t._base = self if self._base is None else self._base
    t._view_version = self._version.value
    return t


@register()
def view(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        return _view_dtype(self, shape[0])
    shape = infer_shape(shape_args(shape, "view"), self._data.size)
    return View.apply(self, shape=shape)


@register()
def reshape(input, *shape):
    shape = infer_shape(shape_args(shape, "reshape"), input._data.size)
    if shape == input._data.shape:
        return View.apply(input, shape=shape)
    try:
        np.reshape(input._data, shape, copy=False)
    except ValueError:
        return Reshape.apply(input, shape=shape)
    return View.apply(input, shape=shape)


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
    d = _wrap_dim(dim, input._data.ndim)
    sizes = tuple(sizes)
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
    return view(input, shape[:d] + sizes + shape[d + 1:]) if _viewable(input, shape[:d] + sizes + shape[d + 1:]) \
        else reshape(input, shape[:d] + sizes + shape[d + 1:])


def _viewable(t, shape):
    try:
        np.reshape(t._data, shape, copy=False)
        return True
    except ValueError:
        return False


@register()
def ravel(input):
    return reshape(input, (-1,))


# ---- transpose / permute ------------------------------------------------------------

class Permute(Op):
    view = True
    _name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return np.transpose(x, dims)

    def backward(ctx, grad):
        return grad.permute(tuple(np.argsort(ctx.dims)))


class Transpose(Op):
    view = True
    _name = "TransposeBackward0"

    @staticmethod
    def forward(ctx, x, dim0, dim1):
        ctx.dims = (dim0, dim1)
        return np.swapaxes(x, dim0, dim1)

    def backward(ctx, grad):
        return grad.transpose(*ctx.dims)


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
    if nd < 2:
        return View.apply(input, shape=input._data.shape)
    return Transpose.apply(input, dim0=d0, dim1=d1)


@register()
def t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    if nd < 2:
        return View.apply(input, shape=input._data.shape)
    r = Transpose.apply(input, dim0=0, dim1=1)
    if r._grad_fn is not None:
        r._grad_fn._name = "TBackward0"
    return r


@register()
def adjoint(input):
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
    order = [d for d in range(nd) if d not in src]
    for s, d in sorted(zip(dst, src)):
        order.insert(s, d)
    return permute(input, order)


# ---- expand / squeeze / unsqueeze -----------------------------------------------------

class Expand(Op):
    view = True
    _name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return B.expand_view(x, shape)

    def backward(ctx, grad):
        return grad.sum_to_size(ctx.in_shape)


@register()
def expand(input, *sizes, implicit=False):
    sizes = shape_args(sizes, "expand")
    shape = input._data.shape
    nd = len(sizes)
    if nd < len(shape):
        raise RuntimeError(f"expand({input.type()}{{{list(shape)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({nd}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({len(shape)})")
    pad = nd - len(shape)
    out = []
    for i, s in enumerate(sizes):
        if i < pad:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            out.append(s)
            continue
        cur = shape[i - pad]
        if s == -1:
            out.append(cur)
        elif cur == 1 or cur == s:
            out.append(s)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(shape)}")
    out = tuple(out)
    return Expand.apply(input, shape=out)


@register()
def expand_as(input, other):
    return expand(input, other._data.shape)


@register(function=True)
def broadcast_to(input, size):
    return expand(input, tuple(size))


class Squeeze(Op):
    view = True
    _name = "SqueezeBackward0"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.in_shape = x.shape
        return np.squeeze(x, axis=dims) if dims is not None else np.squeeze(x)

    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


@register()
def squeeze(input, dim=None):
    shape = input._data.shape
    if dim is None:
        return Squeeze.apply(input, dims=None)
    dims = dims_arg(dim, input._data.ndim)
    dims = tuple(d for d in dims if input._data.ndim and shape[d] == 1)
    return Squeeze.apply(input, dims=dims)


class Unsqueeze(Op):
    view = True
    _name = "UnsqueezeBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return np.expand_dims(x, dim)

    def backward(ctx, grad):
        return grad.squeeze(ctx.dim)


@register()
def unsqueeze(input, dim):
    return Unsqueeze.apply(input, dim=_wrap_dim(dim, input._data.ndim + 1))


# ---- slicing views: narrow, select, unfold, diagonal, as_strided ---------------------

class Slice(Op):
    """Basic indexing with slices/ints/None/Ellipsis: a view (torch: SliceBackward0...)."""
    view = True
    _name = "SliceBackward0"

    @staticmethod
    def forward(ctx, x, key, name="SliceBackward0"):
        ctx.in_shape = x.shape
        ctx.key = key
        ctx._name = name
        r = x[key]
        return r

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
    start = int(start)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if length < 0 or start + length > n:
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
    index = int(index)
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
        return B.sliding_windows(x, dim, size, step)

    def backward(ctx, grad):
        from .indexing import unfold_backward
        return unfold_backward(grad, *ctx.args)


@register()
def unfold(input, dimension, size, step):
    nd = input._data.ndim
    d = _wrap_dim(dimension, nd) if nd else 0
    n = input._data.shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if nd == 0:
        return View.apply(input, shape=(1,))
    return Unfold.apply(input, dim=d, size=size, step=step)


class Diagonal(Op):
    view = True
    _name = "DiagonalBackward0"

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.args = (x.shape, offset, dim1, dim2)
        return B.diagonal_view(x, offset, dim1, dim2)

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


class AsStrided(Op):
    """torch.as_strided: a view of the input's storage with explicit geometry."""
    view = True
    _name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, size, stride, storage_offset):
        root = B.storage_root(x)
        need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
        avail = root.nbytes // x.itemsize
        if need > avail:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                               f"{storage_offset}, and itemsize {x.itemsize} requiring a storage size of "
                               f"{need * x.itemsize} are out of bounds for storage of size {root.nbytes}")
        ctx.geom = (x.shape, tuple(s // x.itemsize for s in x.strides), B.storage_offset(x),
                    tuple(size), tuple(stride), storage_offset)
        return B.strided_from(root.reshape(-1) if root.flags.c_contiguous else root, size, stride,
                              storage_offset)

    def backward(ctx, grad):
        in_shape, in_strides, in_off, size, stride, off = ctx.geom
        return StridedScatter.apply(None, grad, base_shape=in_shape, base_strides=in_strides,
                                    size=size, stride=stride, offset=off - in_off)


@register()
def as_strided(input, size, stride, storage_offset=None):
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    off = input.storage_offset() if storage_offset is None else int(storage_offset)
    return AsStrided.apply(input, size=size, stride=stride, storage_offset=off)


# ---- split / chunk / unbind (multi-output views) ------------------------------------

class SplitWithSizes(Op):
    view = True
    _name = "SplitWithSizesBackward0"

    @staticmethod
    def forward(ctx, x, sizes, dim):
        ctx.dim = dim
        ctx.sizes = sizes
        outs = []
        start = 0
        pre = (slice(None),) * dim
        for s in sizes:
            outs.append(x[pre + (slice(start, start + s),)])
            start += s
        return tuple(outs)

    def backward(ctx, *grads):
        from .indexing import cat
        return cat(grads, ctx.dim)


class Unbind(Op):
    view = True
    _name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        pre = (slice(None),) * dim
        return tuple(x[pre + (i,)] for i in range(x.shape[dim]))

    def backward(ctx, *grads):
        from .indexing import stack
        return stack(grads, ctx.dim)


@register()
def split(tensor, split_size_or_sections, dim=0):
    d = _wrap_dim(dim, tensor._data.ndim)
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, int) or hasattr(split_size_or_sections, "__index__") and \
            not isinstance(split_size_or_sections, (list, tuple)):
        s = int(split_size_or_sections)
        if s <= 0 and not (s == 0 and n == 0):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [s] * (n // s) + ([n % s] if n % s else []) if s else [0]
        if not sizes:
            sizes = [0]
        outs = SplitWithSizes.apply(tensor, sizes=tuple(sizes), dim=d)
        return outs
    sizes = tuple(int(s) for s in split_size_or_sections)
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={list(sizes)}")
    return SplitWithSizes.apply(tensor, sizes=sizes, dim=d)


@register()
def split_with_sizes(input, split_sizes, dim=0):
    return split(input, list(split_sizes), dim)


@register()
def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    size = -(-n // chunks) if n else 0
    if size == 0:
        return split(input, [0] * min(chunks, 1) if n == 0 else [n], d) if n == 0 else split(input, n, d)
    return split(input, size, d)


@register()
def tensor_split(input, indices_or_sections, dim=0):
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
    else:
        idx = [int(i) for i in indices_or_sections]
        bounds = [0] + [min(max(i, 0), n) for i in idx] + [n]
        sizes = [max(b - a, 0) for a, b in zip(bounds[:-1], bounds[1:])]
        outs = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            outs.append(narrow(input, d, min(a, n), max(b - a, 0)))
        return tuple(outs)
    return SplitWithSizes.apply(input, sizes=tuple(sizes), dim=d)


@register()
def unbind(input, dim=0):
    return Unbind.apply(input, dim=_wrap_dim(dim, input._data.ndim))


# ---- contiguous / clone -------------------------------------------------------------

class Clone(Op):
    _name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x):
        return np.array(x, copy=True, order="C")

    def backward(ctx, grad):
        return grad


@register()
def clone(input, *, memory_format=None):
    return Clone.apply(input)


@register()
def contiguous(input, memory_format=None):
    from .._tensor import _is_contiguous
    if _is_contiguous(input._data):
        return input
    return Clone.apply(input)


# ---- Note [In-place on views] ------------------------------------------------------
# An in-place op on a view v of base b (with autograd) is recorded as an out-of-place
# op on the base: b_new = StridedScatter(b_old, r) where r = op(v_old, ...), named
# CopySlices like torch; v's history becomes StridedGather(b_new) ("AsStridedBackward0").
# Other views of b notice the version change and regenerate their grad_fn from b.

class StridedScatter(Op):
    """out = x (or zeros) in the base layout, with the window `size/stride/offset` set to src."""
    _name = "CopySlices"

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
