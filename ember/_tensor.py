"""Tensor: a NumPy array plus dtype, autograd fields and a version counter.

Ops (math, shape, indexing ...) are installed as methods by ember/_ops/_registry.py;
this file holds only what a tensor *is*: storage, metadata and autograd state.
"""
import builtins
import weakref

import numpy as np

from . import _dtype as D
from ._device import CPU, as_device
from ._layout import strided as _strided
from ._backend import as_array
from .autograd import engine as _engine
from .autograd import grad_mode as _gm

_state = _gm._state


class Size(tuple):
    """torch.Size: a tuple of ints with torch's repr."""

    def __new__(cls, sizes=()):
        items = tuple(sizes)
        for i, s in enumerate(items):
            if type(s) is not int:
                items = _size_items(items)
                break
        return tuple.__new__(cls, items)

    def __repr__(self):
        return f"torch.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return _new_size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return _new_size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


def _new_size(shape):
    """A Size from a tuple already known to hold ints (no validation: the hot path of .shape)."""
    return tuple.__new__(Size, shape)


def _size_items(items):
    """Size's elements: ints, NumPy integers, and one-element integer tensors (as int)."""
    out = []
    for i, s in enumerate(items):
        if isinstance(s, Tensor):
            s = s.__index__()
        elif isinstance(s, (builtins.float, builtins.complex, builtins.str, builtins.bool)) or \
                not hasattr(s, "__index__"):
            raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is '{type(s).__name__}')")
        out.append(s)
    return tuple(out)


class VersionCounter:
    """Shared by a tensor and all its views; bumped by every in-place write."""
    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


_DTYPE_OF = {d.np: d for d in D.ALL}


def _dtype_of(arr):
    try:
        return _DTYPE_OF[arr.dtype]
    except KeyError:
        return D.from_numpy_dtype(arr.dtype)


class Tensor:
    """torch.Tensor. See https://pytorch.org/docs/stable/tensors.html"""
    __slots__ = ("_data", "_dtype", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_version_counter",
                 "_base", "_view_version", "_grad_acc", "_hooks", "_retains_grad", "__dict__",
                 "__weakref__")
    __array_priority__ = 1000  # NumPy defers binary operators to Tensor

    def __new__(cls, *args, device=None, dtype=None):
        """Legacy constructor: Tensor(sizes...) uninitialized, Tensor(data) from data."""
        from ._ops.creation import legacy_new
        return legacy_new(cls, D.get_default_dtype() if dtype is None else dtype, args, device)

    # ---- construction ---------------------------------------------------------------
    @staticmethod
    def _make(arr, dtype=None):
        """Wrap an ndarray (no copy) as a Tensor with no history. The invariant every op relies on holds
        here: storage is an ndarray, never a NumPy scalar (what 0-d NumPy results come back as)."""
        if type(arr) is not np.ndarray:
            arr = np.asarray(arr)
        t = _new(Tensor)
        t._data = arr
        t._dtype = _DTYPE_OF[arr.dtype] if dtype is None else dtype
        t._requires_grad = False
        t._grad = None
        t._grad_fn = None
        t._output_nr = 0
        t._version_counter = VersionCounter()
        t._base = None
        t._grad_acc = None
        t._hooks = None
        t._retains_grad = False
        return t

    # ---- metadata -------------------------------------------------------------------
    @property
    def shape(self):
        return _new_size(self._data.shape)

    def size(self, dim=None, *, axis=None):
        if dim is None:
            if axis is None:
                return _new_size(self._data.shape)
            dim = axis  # torch's parser takes NumPy's axis= for dim=
        return self._data.shape[_wrap_dim_of_sizes(dim, self._data.ndim)]

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return CPU

    @property
    def is_cuda(self):
        return False

    is_sparse = False
    is_quantized = False
    is_meta = False
    is_mps = False
    is_nested = False
    layout = property(lambda self: _strided, doc="torch.strided (read-only, as torch's)")

    def get_device(self):
        return -1

    def dim(self):
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    def stride(self, dim=None):
        strides = _element_strides(self._data)
        if dim is None:
            return strides
        return strides[_wrap_dim_of_sizes(dim, self._data.ndim)]

    def storage_offset(self):
        from ._backend.numpy_cpu import storage_offset
        return storage_offset(self._data)

    def is_contiguous(self, memory_format=None):
        if memory_format is not None and str(memory_format) == "torch.channels_last":
            from ._backend.numpy_cpu import is_channels_last_contiguous
            return is_channels_last_contiguous(self._data)
        if memory_format is not None and str(memory_format) == "torch.channels_last_3d":
            from ._layout import format_strides  # C innermost for 5-d tensors; size-1 dims may stride anyhow
            shape = self._data.shape
            return len(shape) == 5 and all(n == 1 or s == t for n, s, t in
                                           zip(shape, self.stride(), format_strides(shape, memory_format)))
        return _is_contiguous(self._data)

    def data_ptr(self):
        return self._data.__array_interface__["data"][0]

    def is_floating_point(self):
        return self._dtype.category == D.FLOAT

    def is_complex(self):
        return self._dtype.category == D.COMPLEX

    def is_signed(self):
        return self._dtype.is_signed

    def is_inference(self):
        return False

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    # ---- autograd state -------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value.__class__ is not builtins.bool:
            raise RuntimeError("requires_grad must be a bool")
        if self._grad_fn is not None:
            if not value:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to "
                                   "use a computed variable in a subgraph that doesn't require differentiation "
                                   "use var_no_grad = var.detach().")
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if value and self._dtype.category < D.FLOAT:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = builtins.bool(value)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self._grad_fn is not None:
            return self  # a no-op on a non-leaf (the setter raises instead)
        if requires_grad and self._dtype.category < D.FLOAT:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")  # torch's wording here
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        if (self._grad_fn is not None and self._base is not None
                and self._view_version != self._version_counter.value):
            from .autograd.graph import regenerate_view_grad_fn
            return regenerate_view_grad_fn(self)
        return self._grad_fn

    def _is_view(self):
        return self._base is not None

    @property
    def is_leaf(self):
        return self._grad_fn is None

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def _version(self):
        """torch's Tensor._version: how many in-place writes the storage has seen (an int)."""
        return self._version_counter.value

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad:
            import warnings
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                          ".grad attribute won't be populated during autograd.backward(). If you indeed "
                          "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() "
                          "on the non-leaf Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value._dtype is not self._dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype '{D.C_TYPE_NAMES[value._dtype]}' "
                                   f"to a tensor with grad_dtype '{D.SCALAR_NAMES[self._dtype]}'. The gradient must "
                                   "match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the "
                                   "tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. "
                                   "Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient "
                                   "may break downstream systems that assume they match.")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value._data.shape)}' to a tensor "
                                   f"of size '{list(self._data.shape)}'. Please ensure that the gradient and the "
                                   "tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        return self._retains_grad

    def retain_grad(self):
        """Keep .grad of a non-leaf after backward (a hook on its grad_fn)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        ref = weakref.ref(self)

        def retain(grad):
            t = ref()
            if t is not None:
                # a copy, or a sum: keeps history under create_graph (the engine's grad mode)
                t._grad = grad.clone() if t._grad is None else t._grad + grad
        self.grad_fn._add_pre_hook("retain", self._output_nr, retain)

    def register_hook(self, hook):
        """hook(grad) -> Tensor or None, called when the gradient of self is computed."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self.grad_fn._add_pre_hook("tensor", self._output_nr, hook)
        from .autograd.graph import _Handle
        if self._hooks is None:
            self._hooks = {}
        return _Handle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        from .autograd.graph import _Handle
        store = self.__dict__.setdefault("_post_acc_hooks", {})
        return _Handle(store, hook)

    def detach(self):
        """A tensor sharing storage and version counter, with no history."""
        t = Tensor._make(self._data, self._dtype)
        t._version_counter = self._version_counter
        return t

    def detach_(self):
        if self._base is not None and self._requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                               "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                               "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                               "function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    @property
    def data(self):
        """Same storage, no history, and a separate version counter (as torch's .data)."""
        return Tensor._make(self._data, self._dtype)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._dtype = value._dtype

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        _engine.backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph,
                         inputs=inputs)

    # ---- conversion -----------------------------------------------------------------
    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item() if self._dtype is not D.bfloat16 else \
            builtins.float(self._data.reshape(()).astype(np.float32))

    def tolist(self):
        if self._dtype is D.bfloat16:
            return self._data.astype(np.float32).tolist()
        return self._data.tolist()

    def numpy(self, *, force=False):
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self._data

    def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule viewing this tensor's memory (versioned when max_version >= (1, 0)), as torch."""
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if stream is not None and type(stream) is not int:
            raise TypeError("stream must be ``int`` or ``none``")
        if stream is not None and stream != -1:
            raise AssertionError("stream should be None on cpu.")
        from ._backend import dlpack
        if max_version is not None and max_version[0] < 1:
            max_version = None
        return dlpack.export(self._data, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """(DLDeviceType.kDLCPU, 0): ember tensors live in host memory."""
        from .utils.dlpack import DLDeviceType
        return (DLDeviceType.kDLCPU, 0)

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if dtype is not None and dtype != self._data.dtype:
            return self._data.astype(dtype)
        return self._data.copy() if copy else self._data

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        """NumPy ufuncs on tensors return tensors, as with torch."""
        arr = as_array(arr)
        try:
            return Tensor._make(arr)
        except TypeError:
            return arr

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self._data.reshape(()))

    def __float__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return builtins.float(self.item())

    def __int__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return builtins.int(self.item())

    def __complex__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return builtins.complex(self.item())

    def __index__(self):
        if self._dtype.category != D.INT or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self._data.reshape(()))

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    __hash__ = object.__hash__

    def __reversed__(self):
        return self.flip(0)

    def __contains__(self, element):
        if not isinstance(element, (Tensor, builtins.int, builtins.float, builtins.complex, np.number, np.bool_)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return builtins.bool((self == element).any())

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __dir__(self):
        return sorted(set(object.__dir__(self)))

    def __reduce_ex__(self, proto):
        from .serialization import _rebuild_tensor_pickle
        return _rebuild_tensor_pickle(self)

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the "
                               "deepcopy protocol at the moment.  If you were attempting to deepcopy a "
                               "module, this may be because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        new = _new(type(self))
        Tensor._init_copy(new, self._data.copy(), self._dtype, self._requires_grad)
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        if self.__dict__:
            import copy
            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = new
        return new

    @staticmethod
    def _init_copy(t, arr, dtype, requires_grad):
        t._data = arr
        t._dtype = dtype
        t._requires_grad = requires_grad
        t._grad = None
        t._grad_fn = None
        t._output_nr = 0
        t._version_counter = VersionCounter()
        t._base = None
        t._grad_acc = None
        t._hooks = None
        t._retains_grad = False

    # ---- device and dtype moves -----------------------------------------------------
    def to(self, *args, **kwargs):
        """to(dtype) / to(device) / to(device, dtype) / to(other); copies only when needed."""
        fmt = kwargs.get("memory_format")
        if fmt is not None and str(fmt) != "torch.preserve_format":
            kwargs.pop("memory_format")
            return self.to(*args, **kwargs).contiguous(memory_format=fmt)
        from ._ops.creation import parse_to_args
        device, dtype, copy = parse_to_args(args, kwargs)
        as_device(device)
        if dtype is None or dtype is self._dtype:
            return self.clone() if copy else self
        from ._ops.pointwise import _to_dtype
        return _to_dtype(self, dtype)

    def cpu(self, memory_format=None):
        return self

    def cuda(self, device=None, non_blocking=False, *, memory_format=None):
        raise AssertionError("Torch not compiled with CUDA enabled")

    def pin_memory(self, device=None):
        return self

    def is_pinned(self, device=None):
        return False

    def share_memory_(self):
        """Move the storage into shared memory, in place (see Note [Shared segments])."""
        from ._shared_memory import share_
        return share_(self)

    def is_shared(self):
        from ._shared_memory import segment_of
        return segment_of(self._data) is not None

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            from .autograd.graph import _type_name
            return "torch." + _type_name(self)
        if isinstance(dtype, str):
            from ._ops.creation import legacy_type_dtype
            dtype = legacy_type_dtype(dtype)
        elif isinstance(dtype, type) and hasattr(dtype, "_legacy_dtype"):
            dtype = dtype._legacy_dtype
        return self.to(dtype)

    def type_as(self, other):
        return self.to(other._dtype)

    # float()/double()/long()/... are made by _conversion() below the class

    def resize_(self, *sizes, size=None, memory_format=None):
        """Reshape in place; growing keeps the old elements first (new ones are uninitialized)."""
        from ._ops.creation import size_args, varargs_or
        if size is not None:
            sizes = varargs_or(sizes, size, "size", "resize_")
        if self._requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        shape = size_args(sizes, "resize_")
        n = 1
        for k in shape:
            n *= k
        flat = self._data.reshape(-1) if _is_contiguous(self._data) else np.ascontiguousarray(self._data).ravel()
        if n <= flat.size:
            self._data = flat[:n].reshape(shape)
        else:
            grown = np.empty(n, dtype=self._data.dtype)
            grown[:flat.size] = flat
            self._data = grown.reshape(shape)
        return self

    def resize_as_(self, the_template, *, memory_format=None):
        return self.resize_(the_template._data.shape)

    def resize(self, *sizes):
        """Deprecated out-of-place resize: a tensor of the new size over the same elements."""
        import warnings
        warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
        return self.detach().resize_(*sizes)

    @property
    def is_cpu(self):
        return True

    # numpy-facing properties (torch exposes these too)
    @property
    def T(self):
        nd = self._data.ndim
        if nd != 2:
            import warnings
            warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases."
                          if nd == 0 else
                          "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                          "deprecated and it will throw an error in a future release. Consider `x.mT` to transpose "
                          "batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                          "dimensions of a tensor.", UserWarning, stacklevel=2)
        return self.permute(*range(nd - 1, -1, -1))

    @property
    def mT(self):
        nd = self._data.ndim
        if nd == 0:
            import warnings
            warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.",
                          UserWarning, stacklevel=2)
            return self
        if nd < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {nd}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self):
        nd = self._data.ndim
        if nd == 0:
            import warnings
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning,
                          stacklevel=2)
            return self
        if nd != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor."
                               + (" For batches of matrices, consider using tensor.mH" if nd > 2 else ""))
        return self.transpose(0, 1).conj() if self.is_complex() else self.transpose(0, 1)

    @property
    def mH(self):
        nd = self._data.ndim
        if nd == 0:
            import warnings
            warnings.warn("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().", UserWarning,
                          stacklevel=2)
            return self
        if nd < 2:
            raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {nd}-D tensor.")
        return self.transpose(-2, -1).conj() if self.is_complex() else self.transpose(-2, -1)


_new = object.__new__



def _conversion(name, dtype):
    """Tensor.float() and friends: self.to(dtype)."""
    def convert(self, *, memory_format=None):
        return self.to(dtype)
    convert.__name__ = convert.__qualname__ = name
    return convert


for _name, _d in (("float", D.float32), ("double", D.float64), ("half", D.float16), ("bfloat16", D.bfloat16),
                  ("long", D.int64), ("int", D.int32), ("short", D.int16), ("char", D.int8), ("byte", D.uint8),
                  ("bool", D.bool), ("cfloat", D.complex64), ("cdouble", D.complex128)):
    setattr(Tensor, _name, _conversion(_name, _d))


def _element_strides(arr):
    isz = arr.itemsize
    if arr.size == 0 and not any(arr.strides):
        from ._ops.geometry import contiguous_strides  # NumPy allocates empty arrays with 0 strides
        return contiguous_strides(arr.shape)
    return tuple(s // isz for s in arr.strides)


def _is_contiguous(arr):
    """torch's rule: strides must be C-order except where a dim has size 1 (or numel is 0)."""
    if arr.flags.c_contiguous:
        return True
    if arr.size == 0:
        return True
    expected = arr.itemsize
    for n, s in zip(reversed(arr.shape), reversed(arr.strides)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def _wrap_dim_of_sizes(dim, ndim):
    """_wrap_dim for size(dim) and stride(dim): a 0-d tensor has no entry to read at any dim (torch's message)."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, ndim)


def _wrap_dim(dim, ndim):
    """Normalize a possibly negative dim; IndexError like torch when out of range."""
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim
