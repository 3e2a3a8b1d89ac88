"""Storage-level views and writes: as_strided (and its overlap-aware backward), and the
machinery that records in-place writes through views (CopySlices), see Note [In-place on views]."""
import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from ..autograd.graph import init_node
from ._registry import Op, register
from .geometry import storage_index, strides_of


def _int(v):
    return int(v.__index__()) if not isinstance(v, int) else v


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
        raise RuntimeError("mismatch in length of strides and shape")
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


# Note [Views that change the dtype]: real/imag/view_as_real of a complex tensor (and
# view_as_complex of a real one) address half (or two) elements of their base. Their window is
# described in the real layout (a complex array read as its (..., 2) real view, same memory),
# and RealLayoutScatter/RealLayoutGather pass gradients through view_as_real/view_as_complex
# around the ordinary strided scatter/gather.

def _real_layout(arr):
    """arr itself, or a complex arr as its (..., 2) real view."""
    if arr.dtype.kind != "c":
        return arr
    re = arr.real
    strides = tuple(s // re.itemsize for s in re.strides)
    return B.strided_view(re, arr.shape + (2,), strides + (1,))


def _layouts(base, view):
    """(base array, view array, whether in the real layout) for the window geometry."""
    b = base._data
    v = view._data
    if (b.dtype.kind == "c") == (v.dtype.kind == "c"):
        return b, v, False
    return _real_layout(b), _real_layout(v), True


def _as_real(g):
    from .complex import view_as_real
    return view_as_real(g) if g._data.dtype.kind == "c" else g


def _from_real(g, dtype):
    """A gradient computed in the real layout, back in `dtype` (complex: view_as_complex)."""
    if dtype.category != D.COMPLEX:
        return g
    from .complex import view_as_complex
    return view_as_complex(g.contiguous())


class RealLayoutScatter(StridedScatter):
    """StridedScatter for a view whose dtype is not its base's (Note [Views that change the dtype])."""

    def backward(ctx, grad):
        geom = dict(zip(("base_shape", "base_strides", "size", "stride", "offset"), ctx.geom))
        need = ctx.needs_input_grad
        gr = _as_real(grad)
        gx = gsrc = None
        if need[0]:
            gx = _from_real(StridedScatter.apply(gr, gr.new_zeros(geom["size"]), **geom), ctx._input_meta[0][1])
        if need[1]:
            gsrc = _from_real(StridedGather.apply(gr, **geom), ctx._input_meta[1][1])
        return gx, gsrc


class RealLayoutGather(StridedGather):
    """StridedGather for a view whose dtype is not its base's (Note [Views that change the dtype])."""

    def backward(ctx, grad):
        base_shape, base_strides, size, stride, offset = ctx.geom
        g = StridedScatter.apply(None, _as_real(grad), base_shape=base_shape, base_strides=base_strides, size=size,
                                 stride=stride, offset=offset)
        return _from_real(g, ctx._input_meta[0][1])


def _view_node(view, base):
    """Give `view` the history 'a window of base' (StridedGather of base)."""
    b, v, real_layout = _layouts(base, view)
    base_shape, base_strides = B.layout_of(b)
    size, stride, offset = B.geometry(b, v)
    node = object.__new__(RealLayoutGather if real_layout else StridedGather)
    init_node(node, (base,))
    node._saved = ()
    node.geom = (base_shape, base_strides, size, stride, offset)
    node._out_meta = ((view._data.shape, view._dtype),)
    view._grad_fn = node
    view._output_nr = 0
    view._requires_grad = True
    view._view_version = view._version_counter.value
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
        t._view_version = t._version_counter.value
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
    b, v, real_layout = _layouts(base, self)
    base_shape, base_strides = B.layout_of(b)
    size, stride, offset = B.geometry(b, v)
    node = object.__new__(RealLayoutScatter if real_layout else StridedScatter)
    init_node(node, (base, r))
    node._saved = ()
    node.geom = (base_shape, base_strides, size, stride, offset)
    node._out_meta = ((base._data.shape, base._dtype),)
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    _view_node(self, base)
