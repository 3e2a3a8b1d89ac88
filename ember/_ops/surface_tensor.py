"""More of torch's public surface (issue 13): torch.frombuffer, get_device, set_flush_denormal,
torch.binomial, and the Tensor methods as_subclass, dim_order, resize_as, apply_ and map_."""
import numpy as np

from .. import _dtype as D
from .._layout import channels_last, memory_format as _MemoryFormat
from .._tensor import Tensor
from ..autograd.function import Function
from ._argcheck import OVERRIDES, _type_name
from ._registry import install
from .random import _Sampled


# ---- torch.frombuffer -----------------------------------------------------------------------------

_READONLY_WARNED = []  # torch warns once per process


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor over the bytes of a Python buffer (no copy: writes show in the buffer). A read-only
    buffer (bytes) gives torch's warning; ember's tensor over it stays read-only (NumPy refuses writes)."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    if not view.c_contiguous:
        raise RuntimeError("could not retrieve buffer from object")
    length, size = view.nbytes, dtype.itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    if view.readonly and not _READONLY_WARNED:
        _READONLY_WARNED.append(True)
        import warnings
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to "
                      "a tensor. This type of warning will be suppressed for the rest of this program.",
                      UserWarning, stacklevel=3)
    arr = np.frombuffer(view.cast("B"), dtype=dtype.np, count=count, offset=offset)
    t = Tensor._make(arr, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


install(frombuffer, "frombuffer", method=False)


# ---- device and CPU switches --------------------------------------------------------------------

def get_device(input):
    """Tensor.get_device as a function: -1, the index torch gives CPU tensors."""
    return input.get_device()


def set_flush_denormal(mode):
    """Flush denormal floats to zero on this thread (x86 SSE3: MXCSR's DAZ and FTZ bits), as torch; True when
    the CPU supports it, False (and nothing changed) elsewhere."""
    from .._backend.cpu_features import set_flush_denormal as set_mxcsr
    if mode.__class__ is not bool:
        raise RuntimeError(f"flush_denormal expects a bool, but got {_type_name(mode)}")
    return set_mxcsr(mode)


install(get_device, "get_device", method=False)
install(set_flush_denormal, "set_flush_denormal", method=False)


# ---- torch.binomial ---------------------------------------------------------------------------------

def binomial(count, prob, generator=None):
    """Draws of Binomial(count, prob), broadcast, with torch's sampler (the stream torch.distributions'
    Binomial draws from: ember/_ops/random_draws.py). A NaN prob gives NaN, as torch."""
    from .random import _gen, _not_impl, _sampled
    from .random_draws import binomial as draw
    d = count._dtype
    if d.category != D.FLOAT:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {D.SCALAR_NAMES[d]}")
    if prob._dtype is not d:
        raise RuntimeError(f"Found dtype {D.SCALAR_NAMES[prob._dtype]} but expected {D.SCALAR_NAMES[d]}")
    if d.itemsize == 2:
        raise _not_impl("binomial_cpu", d)
    n, p = np.broadcast_arrays(count._data, prob._data)
    p = p.astype(np.float64).ravel()
    nan = np.isnan(p)
    drawn = draw(_gen(generator), n.astype(np.float64).ravel(), np.where(nan, 0.0, p), d is D.float32)
    drawn[nan] = np.nan  # torch's sampler returns NaN for such a prob without drawing
    values = drawn.astype(d.np).reshape(n.shape)
    return _sampled(_BINOMIAL, values, d, (count, prob))


class _NoBinomialDerivative(_Sampled):
    """grad_fn of a draw from inputs that require grad: torch has no derivative for binomial."""
    __slots__ = ()
    _name = "torch::autograd::NotImplemented"  # torch's name(); repr shows NotImplemented

    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::binomial is not implemented")


_BINOMIAL = _NoBinomialDerivative
install(binomial, "binomial", method=False)


# ---- Tensor methods -------------------------------------------------------------------------------

def as_subclass(self, cls):
    """self as an instance of the Tensor subclass cls: same storage, version counter and history (through
    an AliasBackward0 node when it requires grad, as torch)."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        "possible. Make sure your class inherits from Tensor.")
    from .sparse import Alias
    r = Alias.apply(self)
    r.__class__ = cls
    return r


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (torch's Tensor.dim_order): strides sorted as
    torch's elementwise-output layout rule sorts them; ambiguity_check raises where several orders fit."""
    if self.is_sparse:
        raise AttributeError(f"Can't get dim order on sparse type: {self.type()} Use Tensor.to_dense() to convert "
                             "to a dense tensor first.")
    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list) and all(isinstance(f, _MemoryFormat) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    shape, strides = tuple(self.shape), self.stride()
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    if ambiguity_check is not False and (any(n == 1 for n in shape)
                                         or any(a == b for a, b in zip(strides, strides[1:]))):
        if sum(1 for f in formats if self.is_contiguous(memory_format=f)) != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the "
                               "given memory formats.")
    order, ambiguous = _physical_order(self, shape, strides, bool(ambiguity_check))
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(order)


def _physical_order(t, shape, strides, check):
    """(dims outermost first, whether two neighbours could swap): torch's stable insertion sort on strides."""
    ndim = len(shape)
    if ndim < 2:
        return list(range(ndim)), False
    contiguous, cl = t.is_contiguous(), t.is_contiguous(memory_format=channels_last)
    if contiguous and not cl:
        return list(range(ndim)), False
    if cl and not contiguous:
        return [0, *range(2, ndim), 1], False

    def order(a, b):  # > 0: dim a lies inside dim b (swap), < 0: outside, 0: either
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if _ge(shape[b], shape[a]) else 1
        if _ge(sb, sa):
            return -1
        return 1 if _ge(sa, sb) else 0

    perm = list(reversed(range(ndim)))  # innermost first while sorting
    for i in range(1, ndim):
        j = i
        for k in reversed(range(i)):
            c = order(perm[k], perm[j])
            if c > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif c < 0:
                break
    ambiguous = check and any(order(perm[i], perm[i + 1]) != -1 for i in range(ndim - 1))
    return list(reversed(perm)), ambiguous


def _ge(a, b):
    """torch's ordering test for sizes/strides (a >= 0, b >= 0): b is 0, or a >= b."""
    return b == 0 or (a != 0 and (a >= b or a % b == 0))


class Resize(Function):
    """torch.autograd._functions.Resize: a reshape keeping the element count (grad_fn ResizeBackward)."""

    @staticmethod
    def forward(ctx, tensor, sizes):
        numel = int(np.prod(sizes))
        if tensor.numel() != numel:
            raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements in total), but "
                               f"the given tensor has a size of {'x'.join(map(str, tensor.shape))} "
                               f"({tensor.numel()} elements). autograd's resize can only change the shape of a "
                               "given tensor, while preserving the number of elements. ")
        ctx.input_sizes = tensor.shape
        return tensor.contiguous().view(sizes)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.contiguous().view(ctx.input_sizes), None


def resize_as(self, tensor):
    """Deprecated out-of-place resize_as: a reshape to tensor's shape with the same element count."""
    import warnings
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=3)
    return Resize.apply(self, tuple(tensor.size()))


def _python_value(d):
    """The converter of a callback's result into dtype d's element, with torch's errors."""
    if d.category == D.BOOL:
        return bool
    if d.category == D.COMPLEX:
        return complex
    if d.category == D.FLOAT:
        def to_float(v):
            if isinstance(v, (complex, str, bytes)) or not hasattr(v, "__float__"):
                raise TypeError(f"must be real number, not {type(v).__name__}")
            return float(v)
        return to_float

    info = np.iinfo(d.np)

    def to_int(v):
        if isinstance(v, (complex, str, bytes)) or not (hasattr(v, "__index__") or hasattr(v, "__float__")):
            raise TypeError(f"must be real number, not {type(v).__name__}")
        i = int(v)
        if not info.min <= i <= info.max:
            raise RuntimeError(f"value cannot be converted to type {d.name} without overflow")
        return i
    return to_int


def _callback_into(self, name, values):
    """Write the callback results `values` (C order) into self; torch bumps no version for these."""
    if self._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    conv = _python_value(self._dtype)
    out = np.array([conv(v) for v in values], dtype=self._dtype.np).reshape(self._data.shape)
    np.copyto(self._data, out)
    return self


def apply_(self, callable):
    """Replace each element x by callable(x) (a Python scalar in, one out): CPU-only, slow, as torch's."""
    if self._requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead.")
    return _callback_into(self, "apply_", [callable(v) for v in self._data.ravel().tolist()])


def map_(self, other, callable):
    """self[i] = callable(self[i], other[i]) with other broadcast to self's shape (same dtype)."""
    from ..autograd.graph import _type_name
    if not isinstance(other, Tensor):
        raise TypeError(f"map_(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    if self._requires_grad:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use var.detach().map_() instead.")
    if other._dtype is not self._dtype:
        raise TypeError(f"map_: expected torch.{_type_name(self)} for 'other' (got torch.{_type_name(other)})")
    pairs = zip(self._data.ravel().tolist(), other.expand(self.shape)._data.ravel().tolist())
    return _callback_into(self, "map_", [callable(a, b) for a, b in pairs])


def map2_(self, x, y, callable):
    """self[i] = callable(self[i], x[i], y[i]) with x and y broadcast to self's shape (same dtype)."""
    from ..autograd.graph import _type_name as legacy_name
    for pos, (name, t) in enumerate((("x", x), ("y", y)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"map2_(): argument '{name}' (position {pos}) must be Tensor, not {type(t).__name__}")
    if self._requires_grad:
        raise RuntimeError("Can't call map2_() on Variable that requires grad. Use var.detach().map2_() instead.")
    for name, t in (("x", x), ("y", y)):
        if t._dtype is not self._dtype:
            raise TypeError(f"map2_: expected torch.{legacy_name(self)} for argument '{name}' (got "
                            f"torch.{legacy_name(t)})")
    xs = x.expand(self.shape)._data.ravel().tolist()
    ys = y.expand(self.shape)._data.ravel().tolist()
    return _callback_into(self, "map2_", [callable(a, b, c) for a, b, c in zip(self._data.ravel().tolist(), xs, ys)])


install(map2_, "map2_", function=False)
install(as_subclass, "as_subclass", function=False)
OVERRIDES["dim_order"] = {"ambiguity_check": None}  # a bool or a list of memory formats: checked in dim_order
install(dim_order, "dim_order", function=False)
install(resize_as, "resize_as", function=False)
install(apply_, "apply_", function=False)
install(map_, "map_", function=False)
