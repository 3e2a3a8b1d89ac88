"""Tensor creation: tensor, as_tensor, asarray, from_numpy, zeros/ones/full/empty (+ _like,
new_), arange, range, linspace, logspace, eye, empty_strided, scalar_tensor, and the
legacy Tensor(...) / FloatTensor(...) constructors."""
import collections.abc
import functools
import math
import warnings

import numpy as np

from .. import _backend as B
from .._backend import numpy_cpu
from .. import _dtype as D
from .._device import as_device, device as _device_cls
from .._tensor import Tensor, Size
from ..autograd import grad_mode
from ._argcheck import ints_error, invalid_combination
from ._registry import install, namespace
from .geometry import contiguous_strides, dense_strides_like, strides_of

_make = Tensor._make
_state = grad_mode._state
_PY_SCALARS = (bool, int, float, complex)


def finish(arr, dtype, requires_grad, device=None):
    """Wrap a fresh array as a factory result (device check, requires_grad)."""
    if device is not None:
        as_device(device)
    t = _make(arr, dtype)
    if requires_grad:
        if dtype.category < D.FLOAT:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def into_out(out, arr, dtype):
    """A factory's out=: out takes arr's values (resized silently if needed, as torch factories)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if _state.enabled and out._requires_grad:
        raise RuntimeError("functions with out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    if dtype is not out._dtype:
        raise RuntimeError(f"dtype {D.SCALAR_NAMES[dtype]} does not match dtype of out parameter "
                           f"({D.SCALAR_NAMES[out._dtype]})")
    if out._data.shape == arr.shape:
        np.copyto(out._data, arr, casting="unsafe")
    else:
        out._data = np.ascontiguousarray(arr)
    out._version_counter.value += 1
    return out


def _out_dtype(dtype, out, name):
    """Factories with out= and no dtype take out's dtype; a dtype that is not one is refused here too, for the
    callers inside ember (nn modules' factory_kwargs) that reach the factory past its argument check."""
    if dtype is None:
        return out._dtype if out is not None else D.get_default_dtype()
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"{name}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    return dtype


# ---- checked conversion of Python scalars ---------------------------------------------

def _overflow(d):
    return RuntimeError(f"value cannot be converted to type {_C_TYPE[d]} without overflow")


_C_TYPE = {D.uint8: "uint8_t", D.int8: "int8_t", D.int16: "int16_t", D.int32: "int32_t", D.int64: "int64_t",
           D.float16: "c10::Half", D.bfloat16: "c10::BFloat16", D.float32: "float", D.float64: "double",
           D.complex64: "c10::complex<float>", D.complex128: "c10::complex<double>", D.bool: "bool",
           D.uint16: "uint16_t", D.uint32: "uint32_t", D.uint64: "uint64_t"}


def checked_scalar(value, d):
    """value as a Python scalar ready for dtype d, with torch's overflow checks: floats must lie
    in [min, max] of an integer dtype, integers may wrap into unsigned types down to -max,
    finite floats must fit a float dtype, complex values with an imaginary part need a
    complex dtype."""
    if isinstance(value, Tensor):
        value = value.item()
    elif isinstance(value, (np.generic, np.ndarray)):
        value = value.item()
    cat = d.category
    if d is D.bool:
        return bool(value != 0)
    if type(value) is complex and cat != D.COMPLEX:
        if value.imag != 0:
            raise _overflow(d)
        value = value.real
    if cat == D.FLOAT:
        if type(value) is float and not math.isfinite(value):
            return value
        if abs(value) > _limits(d)[1]:
            raise _overflow(d)
        return value
    if cat == D.INT:
        lo, hi = _limits(d)
        if type(value) is float:
            # floats must lie in [min, max] before truncation (no wrapping)
            if not (math.isfinite(value) and lo <= value <= hi):
                raise _overflow(d)
            return int(value)
        value = int(value)
        if d is D.uint64:
            return _uint64_int(value)
        if lo == 0:
            if not -hi <= value <= hi:
                raise _overflow(d)
            return value & hi  # unsigned types take negatives modulo 2**bits
        if not lo <= value <= hi:
            raise _overflow(d)
        return value
    return value


_LIMITS = {}


def _limits(d):
    """(min, max) of dtype d as Python numbers (cached: np.iinfo/finfo are slow)."""
    r = _LIMITS.get(d)
    if r is None:
        if d.category == D.INT:
            info = np.iinfo(d.np)
            r = (int(info.min), int(info.max))
        else:
            mx = float(D.finfo(d).max)
            r = (-mx, mx)
        _LIMITS[d] = r
    return r


# ---- tensor(data): torch's inference of shape and dtype from nested data ---------------

def _is_seq(obj):
    return isinstance(obj, (list, tuple, range)) or (
        isinstance(obj, collections.abc.Sequence) and not isinstance(obj, (str, bytes)))


def _sizes(data):
    """Shape from the first element at each depth (torch's compute_sizes)."""
    shape = []
    obj = data
    while True:
        if isinstance(obj, np.ndarray):
            shape.extend(obj.shape)
            return shape
        if isinstance(obj, (str, bytes)) and shape:
            raise ValueError(f"too many dimensions '{type(obj).__name__}'")
        if isinstance(obj, Tensor) or not _is_seq(obj):
            return shape
        n = len(obj)
        shape.append(n)
        if n == 0:
            return shape
        obj = obj[0]


def _tname(v):
    """A value's type name as torch prints it (numpy.ndarray, float)."""
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__.split('.')[0]}.{t.__name__}"


def _np_dtype(np_dtype):
    """The ember dtype of a NumPy dtype; torch's TypeError for the ones it cannot hold."""
    try:
        return D.from_numpy_dtype(np_dtype)
    except TypeError:
        raise TypeError(f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).type.__name__}. The only "
                        f"supported types are: {D.NUMPY_TYPES}.") from None


def _leaf_dtype(v, into=None):
    """dtype torch infers for one scalar element (into: the dtype given, which torch converts it to)."""
    t = type(v)
    if t is float:
        return D.get_default_dtype()
    if t is int:
        return D.int64
    if t is bool:
        return D.bool
    if t is complex:
        return D.default_complex_dtype()
    if isinstance(v, Tensor):
        if v._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return v._dtype
    if isinstance(v, (np.generic, np.ndarray)):
        return _np_dtype(v.dtype)
    if isinstance(v, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{t.__name__}'")
    if _is_seq(v):
        raise TypeError(f"'{t.__name__}' object cannot be interpreted as an integer")
    if into is not None:  # tensor(None, dtype=float32): torch converts the element to the dtype's Python type
        if into.category in (D.FLOAT, D.COMPLEX):
            raise TypeError(f"must be real number, not {t.__name__}")
        raise TypeError(f"'{t.__name__}' object cannot be interpreted as an integer")
    raise RuntimeError(f"Could not infer dtype of {t.__name__}")


def _scan(obj, dim, shape, found, into=None):
    """Check obj is rectangular with shape[dim:]; collect its elements' Python types (plain
    numbers) or dtypes (tensors, NumPy arrays and scalars) into `found`."""
    if dim == len(shape):
        found.add(_leaf_dtype(obj, into))
        return
    if isinstance(obj, np.ndarray):
        if obj.shape != tuple(shape[dim:]):
            bad = next(i for i in range(obj.ndim) if obj.shape[i] != shape[dim + i]) if obj.ndim == len(
                shape) - dim else 0
            raise ValueError(f"expected sequence of length {shape[dim + bad]} at dim {dim + bad} "
                             f"(got {obj.shape[bad] if obj.ndim else 0})")
        found.add(_np_dtype(obj.dtype))
        return
    if isinstance(obj, (str, bytes)):
        raise ValueError(f"too many dimensions '{type(obj).__name__}'")
    if not _is_seq(obj):
        raise TypeError("not a sequence")
    if len(obj) != shape[dim]:
        raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(obj)})")
    if dim == len(shape) - 1:
        types = set(map(type, obj))
        if types.issubset(_PY_SCALARS):
            found.update(types)
            return
    for v in obj:
        _scan(v, dim + 1, shape, found, into)


def _found_dtype(found):
    d = None
    for f in found:
        fd = _leaf_dtype(f()) if isinstance(f, type) else f
        d = fd if d is None else D.promote_types(d, fd)
    return d or D.get_default_dtype()


def _to_plain(obj):
    """Nested data with tensors replaced by their values (so NumPy can stack it)."""
    if isinstance(obj, Tensor):
        return obj._data.reshape(())
    if isinstance(obj, np.ndarray) or not _is_seq(obj):
        return obj
    return [_to_plain(v) for v in obj]


def _flatten(obj):
    if _is_seq(obj):
        for v in obj:
            yield from _flatten(v)
    else:
        yield obj


def _uint64_int(v):
    """A Python int as torch reads it into uint64 (a C unsigned long long, or a long long that wraps)."""
    if v > 2 ** 64 - 1:
        raise OverflowError("int too big to convert")
    if v < -2 ** 63:
        raise OverflowError("can't convert negative int to unsigned")
    return v & (2 ** 64 - 1)


def _to_uint64(raw):
    """tensor(data, dtype=uint64): torch reads each element as a C unsigned long long: Python ints in [0, 2**64)
    and bools only (TypeError for floats, NumPy scalars and tensors, OverflowError for negatives, unlike
    full()/fill_(), which wrap them)."""
    values = raw.ravel().tolist()
    if any(type(v) is not int and type(v) is not bool for v in values):
        raise TypeError("an integer is required")
    if any(v < 0 for v in values):
        raise OverflowError("can't convert negative int to unsigned")
    return np.array([_uint64_int(int(v)) for v in values], dtype=np.uint64).reshape(raw.shape)


def _convert(raw, d):
    """raw (parsed Python numbers) as dtype d, with torch's overflow checks for integers."""
    if d is D.uint64:
        return _to_uint64(raw)
    k = raw.dtype.kind
    if k == "O" or k == "u":
        if d.category == D.INT:
            raise ValueError("Overflow when unpacking long long")
        raw = raw.astype(np.float64 if d.category < D.COMPLEX else np.complex128)
        k = raw.dtype.kind
    if d.category == D.INT:
        if k == "c":
            raise TypeError("must be real number, not complex")
        if raw.size:
            info = np.iinfo(d.np)
            # unsigned types take negative integers modulo 2**bits (down to -max), never negative floats
            lo = -int(info.max) if info.min == 0 and k != "f" else int(info.min)
            if k == "f" and not np.isfinite(raw).all():
                raise RuntimeError(f"value cannot be converted to type {d.name} without overflow")
            if raw.min() < lo or raw.max() > int(info.max):
                raise RuntimeError(f"value cannot be converted to type {d.name} without overflow")
        return raw.astype(d.np)
    if d.category == D.FLOAT and k == "c":
        raise TypeError("must be real number, not complex")
    if d is D.bool:
        return raw != 0
    return raw.astype(d.np)


def _array_from_data(data, dtype=None):
    """(new C-contiguous ndarray, dtype) for tensor(data): torch's shape/dtype inference."""
    if isinstance(data, Tensor):
        d = dtype or data._dtype
        return np.array(data._data, dtype=d.np, order="C"), d
    if isinstance(data, np.ndarray):
        if not data.dtype.isnative:
            data = data.astype(data.dtype.newbyteorder("="))
        d = dtype or _np_dtype(data.dtype)
        return np.array(data, dtype=d.np, order="C"), d
    if isinstance(data, np.generic):
        d = dtype or _np_dtype(data.dtype)
        if d is D.uint64:
            raise TypeError("an integer is required")  # see _to_uint64
        return np.array(data, dtype=d.np), d
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    shape = _sizes(data)
    found = set()
    _scan(data, 0, shape, found, dtype)
    d = dtype or _found_dtype(found)
    if any(not isinstance(f, type) for f in found):
        if d is D.uint64:
            return _to_uint64(np.array(list(_flatten(data)), dtype=object).reshape(shape)), d
        return np.array(_to_plain(data), dtype=d.np).reshape(shape), d
    if d.category == D.INT and float in found and len(found) > 1:
        # mixed ints and floats into an integer dtype: torch checks each by its own type
        return np.array([checked_scalar(v, d) for v in _flatten(data)], dtype=d.np).reshape(shape), d
    try:
        raw = np.array(data, dtype=object if d is D.uint64 else None)  # (NumPy would take 2**64-1 to float64)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    if not shape:
        raw = raw.reshape(())
    return _convert(raw.reshape(shape), d), d


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """torch.tensor: always copies data."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor("
                      "sourceTensor).", UserWarning, stacklevel=2)
    arr, d = _array_from_data(data, dtype)
    return finish(arr, d, requires_grad, device)


def as_tensor(data, *, dtype=None, device=None):
    """torch.as_tensor: shares memory with tensors and NumPy arrays when the dtype allows."""
    as_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None or dtype is data._dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        t = from_numpy(data)
        return t if dtype is None or dtype is t._dtype else t.to(dtype)
    arr, d = _array_from_data(data, dtype)
    return _make(arr, d)


def _buffer(obj):
    """A memoryview of obj when it exports the buffer protocol (bytes, bytearray, array.array ...), else None."""
    if isinstance(obj, (str, int, float, complex, bool, list, tuple)) or obj is None:
        return None
    try:
        return memoryview(obj)
    except TypeError:
        return None


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """torch.asarray: aliases tensors, NumPy arrays and buffers unless a copy is asked for or needed."""
    as_device(device)
    if isinstance(obj, Tensor):
        t = obj
        if dtype is not None and dtype is not obj._dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{D.SCALAR_NAMES[obj._dtype]}' into dtype "
                                 f"'{D.SCALAR_NAMES[dtype]}'.")
            t = obj.to(dtype)
        elif copy:
            t = obj.clone()
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__") or _buffer(obj) is not None:
        if isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
            arr = np.asarray(obj)
        else:  # torch reads a buffer's bytes as dtype (default: the default dtype), whatever its format says
            dtype = dtype if dtype is not None else D.get_default_dtype()
            arr = np.frombuffer(_buffer(obj), dtype=dtype.np)
        t = from_numpy(arr)
        if dtype is not None and dtype is not t._dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{D.SCALAR_NAMES[t._dtype]}' into dtype "
                                 f"'{D.SCALAR_NAMES[dtype]}'.")
            t = _make(arr.astype(dtype.np), dtype)
        elif copy:
            t = _make(arr.copy(), t._dtype)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        arr, d = _array_from_data(obj, dtype)
        t = _make(arr, d)
    if requires_grad and not t._requires_grad:
        t.requires_grad_(True)  # on obj itself when it is returned (torch's)
    return t


def from_numpy(ndarray):
    """Zero-copy: the tensor and the array share memory."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if not ndarray.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    d = _np_dtype(ndarray.dtype)
    isz = ndarray.itemsize
    for s in ndarray.strides:
        if s < 0:
            raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                             "strides are not currently supported. (You can probably work around this by making a "
                             "copy of your array  with array.copy().) ")
        if s % isz:
            raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy "
                             "array to reallocate the memory.")
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                      "This means writing to this tensor will result in undefined behavior. You may want to copy "
                      "the array to protect its data or make it writable before converting it to a tensor. This "
                      "type of warning will be suppressed for the rest of this program.", UserWarning, stacklevel=2)
    return _make(ndarray, d)


# ---- sizes and the filled factories ---------------------------------------------------

def varargs_or(args, kw, kwname, name):
    """torch takes sizes and dims as `f(*size)` or as one keyword `f(size=(2, 3))`: the one the call used."""
    if args:
        raise TypeError(f"{name}() got multiple values for argument '{kwname}'")
    return (kw,)


def size_args(size, name):
    """zeros(2, 3) / zeros((2, 3)) / zeros([2, 3]) / zeros(torch.Size(...)) -> a tuple of ints."""
    if len(size) == 0:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
        whole = False
    else:
        whole = len(size) == 1
    for s in size:  # the common case: non-negative ints already
        if type(s) is not int or s < 0:
            break
    else:
        return tuple(size)
    out = []
    for i, s in enumerate(size):
        if type(s) is not int:
            if isinstance(s, bool) or not hasattr(s, "__index__") or (
                    isinstance(s, Tensor) and (s._dtype.category != D.INT or s._data.size != 1)):
                if whole:
                    raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not "
                                    f"{type(s).__name__}")
                raise TypeError(f"{name}(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                                f"\"type must be tuple of ints,but got {type(s).__name__}\"")
            s = int(s.__index__())
        if s < 0:
            if name == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {[int(v) for v in size]}")
        out.append(s)
    return tuple(out)


def _zeros(shape, dtype):
    return _make(B.zeros(shape, dtype.np), dtype)


def _filled(name, fill):
    def fn(*sizes, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False, memory_format=None):
        shape = size_args(sizes if size is None else varargs_or(sizes, size, "size", name), name)
        d = _out_dtype(dtype, out, name)
        if fill is None:
            arr = B.empty(shape, d.np)
            if memory_format is not None and str(memory_format) != "torch.preserve_format":
                from .._layout import format_strides  # channels_last strides, as torch.empty
                from .._backend.numpy_cpu import layout_buffer
                arr = layout_buffer(shape, format_strides(shape, memory_format), d.np)[1]
        elif fill == 0:
            arr = B.zeros(shape, d.np)
        else:
            arr = B.full(shape, 1, d.np)
        if out is not None:
            return into_out(out, arr, d)
        return finish(arr, d, requires_grad, device)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: see https://pytorch.org/docs/stable/generated/torch.{name}.html"
    return fn


zeros = _filled("zeros", 0)
ones = _filled("ones", 1)
empty = _filled("empty", None)


def _fill_value(fill_value, name):
    """(Python number, dtype it implies or None) for a fill value; 0-d tensors count as numbers."""
    if isinstance(fill_value, Tensor):
        if fill_value._data.ndim:
            raise TypeError(f"{name}(): argument 'fill_value' (position 2) must be Number, not Tensor")
        return fill_value.item(), None
    if isinstance(fill_value, np.bool_):
        return bool(fill_value), D.get_default_dtype()  # torch's parser reads NumPy bools as numbers
    if not isinstance(fill_value, (_PY_SCALARS, np.number)):
        raise TypeError(f"{name}(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(fill_value).__name__}")
    return fill_value, None


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    return _full(size, fill_value, out, dtype, device, requires_grad, "full")


def _full(size, fill_value, out, dtype, device, requires_grad, name):
    """full / new_full: dtype from the fill value (bool, int64, default float or complex) unless given."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not {_tname(size)}")
    shape = size_args((size,), name)
    value, vdtype = _fill_value(fill_value, name)
    d = dtype or (out._dtype if out is not None else vdtype or D.scalar_dtype(value))
    arr = B.full(shape, checked_scalar(value, d), d.np)
    if out is not None:
        return into_out(out, arr, d)
    return finish(arr, d, requires_grad, device)


def _like_array(input, d, memory_format, fill):
    """A new array of input's shape; preserve_format gives torch's strides (the input's own when it
    is dense, else dense strides in its stride order: expanded and overlapping inputs included)."""
    x = input._data
    shape = x.shape
    order = None
    if memory_format is None or str(memory_format) == "torch.preserve_format":
        if not x.flags.c_contiguous and x.ndim > 1:
            strides = dense_strides_like(shape, strides_of(x))
            if strides != contiguous_strides(shape):
                buf = B.empty(x.size, d.np) if fill is None else B.full(x.size, fill, d.np)
                return numpy_cpu.restride(buf, shape, strides)
    elif str(memory_format) == "torch.channels_last" and x.ndim == 4:
        order = [0, 2, 3, 1]
    if order is None:
        return B.empty(shape, d.np) if fill is None else B.full(shape, fill, d.np)
    perm_shape = tuple(shape[i] for i in order)
    buf = B.empty(perm_shape, d.np) if fill is None else B.full(perm_shape, fill, d.np)
    return buf.transpose(np.argsort(order))


def _is_dense(x):
    """Non-overlapping and dense: some permutation of x is C-contiguous."""
    dims = sorted((s, n) for s, n in zip(x.strides, x.shape) if n != 1)
    expected = x.itemsize
    for s, n in dims:
        if s != expected:
            return False
        expected *= n
    return True


def _like(name, fill):
    def fn(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
           pin_memory=False):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {_tname(input)}")
        d = dtype or input._dtype
        return finish(_like_array(input, d, memory_format, fill), d, requires_grad, device)
    fn.__name__ = fn.__qualname__ = name
    return fn


zeros_like = _like("zeros_like", 0)
ones_like = _like("ones_like", 1)
empty_like = _like("empty_like", None)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None, pin_memory=False):
    if not isinstance(input, Tensor):
        raise TypeError(f"full_like(): argument 'input' (position 1) must be Tensor, not {_tname(input)}")
    d = dtype or input._dtype
    value, _ = _fill_value(fill_value, "full_like")
    return finish(_like_array(input, d, memory_format, checked_scalar(value, d)), d, requires_grad, device)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    from .._backend.numpy_cpu import layout_buffer
    shape = size_args((size,), "empty_strided")
    err = ints_error("empty_strided", "stride", stride, 2)
    if err is not None:
        raise err
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(stride)}")
    d = dtype or D.get_default_dtype()
    _, arr = layout_buffer(shape, stride, d.np)
    return finish(arr, d, requires_grad, device)


# new_* methods: self's dtype unless given
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than tensor.new_tensor("
                      "sourceTensor).", UserWarning, stacklevel=2)
    arr, d = _array_from_data(data, dtype or self._dtype)
    return finish(arr, d, requires_grad, device)


def _new_filled(name, base):
    def fn(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        return base(*sizes, size=size, dtype=dtype or self._dtype, device=device, requires_grad=requires_grad)
    fn.__name__ = fn.__qualname__ = name
    return fn


new_zeros = _new_filled("new_zeros", zeros)
new_ones = _new_filled("new_ones", ones)
new_empty = _new_filled("new_empty", empty)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    return _full(size, fill_value, None, dtype or self._dtype, device, requires_grad, "new_full")


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    d = dtype or D.get_default_dtype()
    value, _ = _fill_value(s, "scalar_tensor")
    return finish(np.array(checked_scalar(value, d), dtype=d.np), d, requires_grad, device)


# ---- ranges ---------------------------------------------------------------------------

def _number(v, name):
    """A range endpoint as a Python number (0-d tensors and NumPy scalars allowed)."""
    if isinstance(v, Tensor):
        if v._data.size != 1:
            raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors")
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, complex):
        raise RuntimeError("value cannot be converted to type double without overflow")
    if not isinstance(v, (int, float)):
        raise TypeError(f"{name}(): argument must be Number, not {type(v).__name__}")
    return v


def _range_dtype(dtype, values, opname):
    if dtype is None:
        return D.get_default_dtype() if any(isinstance(v, float) for v in values) else D.int64
    if dtype is D.bool or dtype.category == D.COMPLEX or dtype.limited:
        raise NotImplementedError(f'"{opname}_cpu" not implemented for \'{D.SCALAR_NAMES[dtype]}\'')
    return dtype


def _acc_np(d):
    """torch's CPU accumulate type of dtype d: int64 for integers, float32 for half types, double else."""
    if d.category == D.INT:
        return np.int64
    if d is D.float16 or d is D.bfloat16:
        return np.float32
    return np.float64


def _range_checks(start, end, step):
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_num_str(start)} -> {_num_str(end)}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


def _num_str(v):
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


_ARANGE_OVERLOADS = (
    "Number end, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device device = "
    "None, bool pin_memory = False, bool requires_grad = False",
    "Number start, Number end, *, torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
    "bool pin_memory = False, bool requires_grad = False",
    "Number start, Number end, Number step = 1, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout "
    "= None, torch.device device = None, bool pin_memory = False, bool requires_grad = False")


def _one_bound_is_end(fn):
    """torch's one-bound arange is (end) alone: start= or step= without an end matches none of its overloads."""
    @functools.wraps(fn)
    def arange(*args, **kwargs):
        if kwargs and len(args) < 2 and kwargs.get("end") is None and ("start" in kwargs or "step" in kwargs):
            if "step" not in kwargs:
                raise TypeError('arange() missing 1 required positional arguments: "end"')
            if args or "start" in kwargs:
                given = {k: kwargs[k] for k in ("step", "start") if k in kwargs}
                raise invalid_combination("arange", args, given, _ARANGE_OVERLOADS)
        return fn(*args, **kwargs)
    return arange


@_one_bound_is_end
def arange(start=None, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False):
    """Values start + i * step computed in torch's accumulate type (int64 / double / float); start=None: not given
    (torch's overloads are (end) and (start, end, step): arange() is refused, an explicit None by NOT_NONE)."""
    if end is None:
        if start is None:
            raise TypeError('arange() missing 1 required positional arguments: "end"')
        start, end = 0, start
    elif start is None:  # arange(end=5)
        start = 0
    start, end, step = _number(start, "arange"), _number(end, "arange"), _number(step, "arange")
    d = _range_dtype(dtype if dtype is not None else (None if out is None else out._dtype),
                     (start, end, step), "arange")
    _range_checks(start, end, step)
    acc = _acc_np(d)
    if d is D.int64:
        # int64 casts the endpoints first and sizes the range from the cast values
        xs, xe, xst = int(start), int(end), int(step)
        if xst == 0:
            raise ValueError("step must be nonzero")
        n = max(-((xs - xe) // xst), 0)
        arr = np.arange(xs, xs + n * xst, xst, dtype=np.int64) if n else np.empty(0, np.int64)
    else:
        n = max(math.ceil((end - start) / step), 0)
        arr = (acc(start) + np.arange(n, dtype=acc) * acc(step)).astype(d.np, copy=False)
    if out is not None:
        if out._data.size != n:
            warnings.warn(f"The number of elements in the out tensor of shape {list(out._data.shape)} is "
                          f"{out._data.size} which does not match the computed number of elements {n}. Note that "
                          "this may occur as a result of rounding error. The out tensor will be resized to a "
                          f"tensor of shape ({n},).", UserWarning, stacklevel=2)
        return into_out(out, arr, d)
    return finish(arr, d, requires_grad, device)


def range_(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False):
    """Deprecated torch.range: includes end; the default dtype even for integer arguments."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    start, end, step = _number(start, "range"), _number(end, "range"), _number(step, "range")
    d = dtype or D.get_default_dtype()
    _range_checks(start, end, step)
    acc = _acc_np(d)
    n = int(math.floor((end - start) / step)) + 1
    arr = (acc(start) + np.arange(n, dtype=acc) * acc(step)).astype(d.np)
    if out is not None:
        return into_out(out, arr, d)
    return finish(arr, d, requires_grad, device)


def _steps_arg(steps, name):
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"{name}() received an invalid combination of arguments - 'steps' must be int, not "
                        f"{type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return int(steps)


def _space_endpoints(start, end, name):
    """start and end as Python numbers; tensors must be 0-d."""
    ts, te = isinstance(start, Tensor), isinstance(end, Tensor)
    if (ts and start._data.ndim) or (te and end._data.ndim):
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got start with "
                           f"{start._data.ndim if ts else 0} dimension(s) and end with "
                           f"{end._data.ndim if te else 0} dimension(s).")
    return tuple(v.item() if isinstance(v, (Tensor, np.generic)) else v for v in (start, end))


def _linspace_values(start, end, steps, d):
    """torch's CPU kernel: computed in d's own arithmetic (double steps for integers), first
    half forward from start, second half backward from end."""
    if steps == 1:
        return np.full(1, start, dtype=d.np) if d.category != D.INT else np.array([int(start)], dtype=d.np)
    if d.category == D.INT:
        s, e = float(int(start)), float(int(end))
        ct = np.dtype(np.float64)
    else:
        ct = d.np
        s, e = ct.type(start), ct.type(end)
    step = (ct.type(e) - ct.type(s)) / ct.type(steps - 1)
    i = np.arange(steps)
    half = steps // 2
    lo = ct.type(s) + step * i[:half].astype(ct)
    hi = ct.type(e) - step * (steps - 1 - i[half:]).astype(ct)
    return np.concatenate([lo, hi]).astype(d.np)


def _space_dtype(dtype, out, start, end):
    if dtype is None:
        if out is not None:
            return out._dtype
        if isinstance(start, complex) or isinstance(end, complex):
            return D.default_complex_dtype()
        return D.get_default_dtype()
    return dtype


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    s, e = _space_endpoints(start, end, "linspace")
    steps = _steps_arg(steps, "linspace")
    d = _space_dtype(dtype, out, s, e)
    if d is D.bool or d.limited:
        raise NotImplementedError(f"\"linspace_cpu\" not implemented for '{D.SCALAR_NAMES[d]}'")
    arr = _linspace_values(s, e, steps, d) if steps else np.empty(0, d.np)
    if out is not None:
        return into_out(out, arr, d)
    return finish(arr, d, requires_grad, device)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """base ** (linspace exponents), the power taken in double (complex exponents allowed)."""
    s, e = _space_endpoints(start, end, "logspace")
    steps = _steps_arg(steps, "logspace")
    d = _space_dtype(dtype, out, s, e)
    if d is D.bool or d.limited:
        raise NotImplementedError(f"\"logspace_cpu\" not implemented for '{D.SCALAR_NAMES[d]}'")
    if steps == 0:
        arr = np.empty(0, d.np)
    else:
        if d.category == D.INT:
            exps = _int_log_exponents(s, e, steps)
        else:
            exps = _linspace_values(s, e, steps, d)
        wide = np.complex128 if d.category == D.COMPLEX else np.float64
        arr = np.power(np.asarray(base, dtype=wide), exps.astype(wide)).astype(d.np)
    if out is not None:
        return into_out(out, arr, d)
    return finish(arr, d, requires_grad, device)


def _int_log_exponents(start, end, steps):
    """Integer logspace: endpoints cast to int, exponents in double."""
    s, e = float(int(start)), float(int(end))
    if steps == 1:
        return np.array([s])
    step = (e - s) / (steps - 1)
    i = np.arange(steps)
    half = steps // 2
    return np.concatenate([s + step * i[:half], e - step * (steps - 1 - i[half:])])


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"eye(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    n = int(n.__index__())
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is None:
        m = n
    elif isinstance(m, bool) or not hasattr(m, "__index__"):
        raise TypeError(f"eye(): argument 'm' (position 2) must be int, not {type(m).__name__}")
    m = int(m.__index__())
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    d = _out_dtype(dtype, out, "eye")
    if d.limited:
        raise NotImplementedError(f"\"eye\" not implemented for '{D.SCALAR_NAMES[d]}'")
    arr = np.eye(n, m, dtype=d.np)
    if out is not None:
        return into_out(out, arr, d)
    return finish(arr, d, requires_grad, device)


# ---- legacy constructors --------------------------------------------------------------

def legacy_new(cls, dtype, args, device, typed=False):
    """torch.Tensor(...) / FloatTensor(...): sizes -> uninitialized; a Size -> uninitialized;
    a tensor -> that tensor (torch.Tensor aliases any dtype); a NumPy array of the same
    dtype -> shared memory; other data -> a copy in dtype."""
    as_device(device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if typed and src._dtype is not dtype:
            raise TypeError(f"expected {dtype} (got {src._dtype})")
        if cls is Tensor:
            return src
        arr, dtype = src._data, src._dtype
    elif len(args) == 0:
        arr = np.empty((0,), dtype=dtype.np)
    elif len(args) == 1 and isinstance(args[0], Size):
        arr = np.empty(size_args(args, "new"), dtype=dtype.np)
    elif all(hasattr(a, "__index__") and not isinstance(a, (bool, np.bool_, Tensor, np.ndarray)) for a in args):
        arr = np.empty(size_args(args, "new"), dtype=dtype.np)
    elif len(args) == 1 and isinstance(args[0], np.ndarray) and args[0].dtype == dtype.np:
        arr = from_numpy(args[0])._data
    elif len(args) == 1 and (_is_seq(args[0]) or isinstance(args[0], np.ndarray)):
        arr, _ = _array_from_data(args[0], dtype)
    elif len(args) == 1:
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    else:
        bad = next(a for a in args if not hasattr(a, "__index__") or isinstance(a, bool))
        raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {args.index(bad) + 1} with "
                        f"error \"type must be tuple of ints,but got {type(bad).__name__}\"")
    t = object.__new__(cls)
    Tensor._init_copy(t, arr, dtype, False)
    return t


def _legacy_class(name, dtype):
    """FloatTensor, LongTensor ...: constructors and isinstance targets (instances are Tensors)."""

    class _Meta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, Tensor) and obj._dtype is dtype

    def __new__(cls, *args, device=None):
        return legacy_new(Tensor, dtype, args, device, typed=True)

    attrs = {"__new__": __new__, "_legacy_dtype": dtype, "dtype": dtype, "is_cuda": False, "is_sparse": False,
             "__module__": "torch"}
    return _Meta(name, (), attrs)


LEGACY = {n: _legacy_class(n, d) for n, d in [
    ("FloatTensor", D.float32), ("DoubleTensor", D.float64), ("HalfTensor", D.float16),
    ("BFloat16Tensor", D.bfloat16), ("LongTensor", D.int64), ("IntTensor", D.int32),
    ("ShortTensor", D.int16), ("CharTensor", D.int8), ("ByteTensor", D.uint8), ("BoolTensor", D.bool),
    ("ComplexFloatTensor", D.complex64), ("ComplexDoubleTensor", D.complex128)]}


def legacy_type_dtype(name):
    name = name.replace("torch.", "")
    if name in LEGACY:
        return LEGACY[name]._legacy_dtype
    raise ValueError(f"invalid type: '{name}'")


def new(self, *args, size=None, device=None):
    """Tensor.new(...): the legacy constructor with self's dtype."""
    if size is not None:
        args = varargs_or(args, Size(size), "size", "new")
    return legacy_new(Tensor, self._dtype, args, device, typed=True)


# ---- Tensor.to argument parsing -----------------------------------------------------

def parse_to_args(args, kwargs):
    """(device, dtype, copy) from the forms of Tensor.to / Module.to."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: {sorted(kwargs)}")
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, (str, _device_cls)):
            device = a
        elif isinstance(a, Tensor):
            dtype = a._dtype
        elif isinstance(a, bool):
            pass  # non_blocking / copy positional flags
        elif a is None:
            pass
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    return device, dtype, copy


for _fn in (tensor, as_tensor, asarray, from_numpy, zeros, ones, empty, full, zeros_like, ones_like, empty_like,
            full_like, empty_strided, arange, linspace, logspace, eye, scalar_tensor):
    install(_fn, _fn.__name__, method=False)
namespace["range"] = range_
for _fn in (new_tensor, new_zeros, new_ones, new_empty, new_full, new):
    install(_fn, _fn.__name__, function=False)
namespace.update(LEGACY)
