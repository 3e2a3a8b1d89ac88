"""Tensor creation: tensor, as_tensor, from_numpy, zeros/ones/full/empty (+ _like, new_),
arange, linspace, logspace, eye, and the legacy Tensor(...) constructors."""
import numbers

import numpy as np

from .. import _dtype as D
from .._device import as_device, device as _device_cls
from .._tensor import Tensor
from ._registry import install, namespace

_make = Tensor._make


def _finish(arr, dtype, requires_grad, device=None):
    as_device(device)
    t = _make(arr, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _python_data_dtype(arr):
    """Python numbers parse as double/int64/bool/complex; torch then picks its defaults."""
    k = arr.dtype.kind
    if k == "f":
        return D.get_default_dtype()
    if k == "c":
        return D.default_complex_dtype()
    if k == "b":
        return D.bool
    if k in "iu":
        return D.int64
    raise TypeError(f"new(): invalid data type '{arr.dtype}'")


def _array_from_data(data):
    """(ndarray, inferred dtype) for tensor(data); NumPy data keeps its dtype."""
    if isinstance(data, Tensor):
        return data._data, data._dtype
    if isinstance(data, np.ndarray):
        return data, D.from_numpy_dtype(data.dtype)
    if isinstance(data, (np.generic,)):
        arr = np.asarray(data)
        return arr, D.from_numpy_dtype(arr.dtype)
    if isinstance(data, str) or data is None:
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if isinstance(data, (list, tuple)):
        flat_tensors = _tensor_leaves(data)
        if flat_tensors is not None:
            return flat_tensors
    try:
        arr = np.array(data)
    except ValueError as e:
        raise ValueError(f"expected a rectangular nested sequence of numbers ({e})") from None
    if arr.dtype == object:
        raise TypeError(f"new(): invalid data type '{type(_first_leaf(data)).__name__}'")
    if arr.dtype.kind in "US":
        raise TypeError("new(): invalid data type 'str'")
    return arr, _python_data_dtype(arr)


def _first_leaf(data):
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return data


def _tensor_leaves(data):
    """Lists of tensors: stack their values, promoting their dtypes like torch."""
    leaf = _first_leaf(data)
    if not isinstance(leaf, Tensor):
        return None
    dtype = None
    stack = [data]
    while stack:
        d = stack.pop()
        if isinstance(d, (list, tuple)):
            stack.extend(d)
        elif isinstance(d, Tensor):
            if d._data.size != 1 and d._data.ndim == 0:
                pass
            dtype = d._dtype if dtype is None else D.promote_types(dtype, d._dtype)
        else:
            dtype = D.scalar_dtype(d) if dtype is None else D.promote_types(dtype, D.scalar_dtype(d))

    def conv(d):
        if isinstance(d, (list, tuple)):
            return [conv(x) for x in d]
        if isinstance(d, Tensor):
            if d._data.ndim:
                if d._data.size != 1:
                    raise ValueError("only one element tensors can be converted to Python scalars")
            return d._data.reshape(()).astype(dtype.np)
        return d
    return np.array(conv(data), dtype=dtype.np), dtype


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """torch.tensor: always copies data."""
    arr, inferred = _array_from_data(data)
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                      "or sourceTensor.clone().detach().requires_grad_(True), rather than torch.tensor("
                      "sourceTensor).", UserWarning, stacklevel=2)
    d = dtype or inferred
    out = np.array(arr, dtype=d.np, copy=True, order="C")
    return _finish(out, d, requires_grad, device)


def as_tensor(data, dtype=None, device=None):
    """torch.as_tensor: shares memory with tensors and NumPy arrays when the dtype allows."""
    as_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None or dtype is data._dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        t = from_numpy(data)
        return t if dtype is None or dtype is t._dtype else t.to(dtype)
    return tensor(data, dtype=dtype)


asarray = as_tensor


def from_numpy(ndarray):
    """Zero-copy: the tensor and the array share memory."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if not ndarray.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    d = D.from_numpy_dtype(ndarray.dtype)
    if not ndarray.flags.writeable:
        import warnings
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                      "This means writing to this tensor will result in undefined behavior.", UserWarning,
                      stacklevel=2)
    return _make(ndarray, d)


def size_args(size, name):
    """zeros(2, 3) / zeros((2, 3)) / zeros([2, 3]) / zeros(torch.Size(...))."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for s in size:
        if not isinstance(s, numbers.Integral) and not (isinstance(s, Tensor) and s._dtype.category == D.INT):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {len(out)}")
        s = int(s)
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(s)
    return tuple(out)


def _zeros(shape, dtype):
    return _make(np.zeros(shape, dtype=dtype.np), dtype)


def _filled(name, fill):
    def fn(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
           memory_format=None):
        shape = size_args(size, name)
        d = dtype or D.get_default_dtype()
        arr = np.empty(shape, dtype=d.np) if fill is None else np.full(shape, fill, dtype=d.np)
        if out is not None:
            from ._registry import write_out
            return write_out(out, _make(arr, d), name)
        return _finish(arr, d, requires_grad, device)
    fn.__name__ = name
    return fn


zeros = _filled("zeros", 0)
ones = _filled("ones", 1)
empty = _filled("empty", None)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    shape = size_args((size,), "full")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = dtype or D.scalar_dtype(fill_value)
    arr = np.full(shape, fill_value, dtype=d.np)
    return _finish(arr, d, requires_grad, device)


def _like(name, fill):
    def fn(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        d = dtype or input._dtype
        shape = input._data.shape
        arr = np.empty(shape, dtype=d.np) if fill is None else np.full(shape, fill, dtype=d.np)
        return _finish(arr, d, requires_grad, device)
    fn.__name__ = name
    return fn


zeros_like = _like("zeros_like", 0)
ones_like = _like("ones_like", 1)
empty_like = _like("empty_like", None)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    d = dtype or input._dtype
    return _finish(np.full(input._data.shape, fill_value, dtype=d.np), d, requires_grad, device)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    from .._backend.numpy_cpu import layout_buffer
    d = dtype or D.get_default_dtype()
    _, arr = layout_buffer(tuple(size), tuple(stride), d.np)
    return _finish(arr, d, requires_grad, device)


# new_* methods: same dtype as self unless given
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    arr, _ = _array_from_data(data)
    d = dtype or self._dtype
    return _finish(np.array(arr, dtype=d.np, copy=True), d, requires_grad, device)


def _new_filled(name, base):
    def fn(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        return base(*size, dtype=dtype or self._dtype, device=device, requires_grad=requires_grad)
    fn.__name__ = name
    return fn


new_zeros = _new_filled("new_zeros", zeros)
new_ones = _new_filled("new_ones", ones)
new_empty = _new_filled("new_empty", empty)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    return full(size, fill_value, dtype=dtype or self._dtype, device=device, requires_grad=requires_grad)


def _scalar(v):
    return v.item() if isinstance(v, Tensor) else v


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        is_float = any(isinstance(v, (float, np.floating)) for v in (start, end, step))
        dtype = D.get_default_dtype() if is_float else D.int64
    n = int(np.ceil((end - start) / step))
    arr = (start + np.arange(max(n, 0), dtype=np.float64) * step) if dtype.category >= D.FLOAT or \
        any(isinstance(v, float) for v in (start, end, step)) else np.arange(start, end, step, dtype=np.int64)
    arr = arr.astype(dtype.np)
    if out is not None:
        from ._registry import write_out
        return write_out(out, _make(arr, dtype), "arange")
    return _finish(arr, dtype, requires_grad, device)


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated torch.range: includes end."""
    d = dtype or D.get_default_dtype()
    n = int(np.floor((end - start) / step)) + 1
    arr = (start + np.arange(n, dtype=np.float64) * step).astype(d.np)
    return _finish(arr, d, requires_grad, device)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    start, end = _scalar(start), _scalar(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = dtype or (D.default_complex_dtype() if isinstance(start, complex) or isinstance(end, complex)
                  else D.get_default_dtype())
    arr = _symmetric_linspace(start, end, steps)
    arr = arr.astype(d.np)
    if out is not None:
        from ._registry import write_out
        return write_out(out, _make(arr, d), "linspace")
    return _finish(arr, d, requires_grad, device)


def _symmetric_linspace(start, end, steps):
    """torch fills the first half forward from start and the second half back from end."""
    if steps == 0:
        return np.empty(0)
    if steps == 1:
        return np.array([start], dtype=np.float64 if not isinstance(start, complex) else np.complex128)
    step = (end - start) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    half = steps // 2
    return np.where(i < half, start + step * i, end - step * (steps - 1 - i))


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    d = dtype or D.get_default_dtype()
    arr = np.power(base, _symmetric_linspace(_scalar(start), _scalar(end), steps)).astype(d.np)
    return _finish(arr, d, requires_grad, device)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    m = n if m is None else m
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    d = dtype or D.get_default_dtype()
    return _finish(np.eye(n, m, dtype=d.np), d, requires_grad, device)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    d = dtype or D.get_default_dtype()
    return _finish(np.array(s, dtype=d.np), d, requires_grad, device)


# ---- legacy constructors ------------------------------------------------------------

def legacy_new(cls, dtype, args, device):
    """torch.Tensor(...) / FloatTensor(...): sizes -> uninitialized, data -> copy, tensor -> alias."""
    as_device(device)
    if len(args) == 0:
        arr = np.empty((0,), dtype=dtype.np)
    elif len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if src._dtype is not dtype:
            raise TypeError(f"expected {dtype} (got {src._dtype})")
        arr = src._data
    elif all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        arr = np.empty(tuple(int(a) for a in args), dtype=dtype.np)
    elif len(args) == 1 and type(args[0]).__name__ == "Size":
        arr = np.empty(tuple(args[0]), dtype=dtype.np)
    elif len(args) == 1:
        a, _ = _array_from_data(args[0])
        arr = np.array(a, dtype=dtype.np, copy=True)
    else:
        raise TypeError(f"new() received an invalid combination of arguments")
    t = object.__new__(cls)
    Tensor._init_copy(t, arr, dtype, False)
    return t


def _legacy_class(name, dtype):
    """FloatTensor, LongTensor ...: constructors and isinstance targets."""

    class _Meta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, Tensor) and obj._dtype is dtype

    def __new__(cls, *args, device=None):
        return legacy_new(Tensor, dtype, args, device)

    return _Meta(name, (), {"__new__": __new__, "_legacy_dtype": dtype, "dtype": dtype})


LEGACY = {n: _legacy_class(n, d) for n, d in [
    ("FloatTensor", D.float32), ("DoubleTensor", D.float64), ("HalfTensor", D.float16),
    ("BFloat16Tensor", D.bfloat16), ("LongTensor", D.int64), ("IntTensor", D.int32),
    ("ShortTensor", D.int16), ("CharTensor", D.int8), ("ByteTensor", D.uint8), ("BoolTensor", D.bool)]}


def legacy_type_dtype(name):
    name = name.replace("torch.", "")
    if name in LEGACY:
        return LEGACY[name]._legacy_dtype
    raise ValueError(f"invalid type: '{name}'")


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


for _fn in (tensor, as_tensor, from_numpy, zeros, ones, empty, full, zeros_like, ones_like, empty_like,
            full_like, empty_strided, arange, linspace, logspace, eye, scalar_tensor):
    install(_fn, _fn.__name__, method=False)
namespace["asarray"] = asarray
namespace["range"] = range_
for _fn in (new_tensor, new_zeros, new_ones, new_empty, new_full):
    install(_fn, _fn.__name__, function=False)
namespace.update(LEGACY)
