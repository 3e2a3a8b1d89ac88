"""nn.Parameter and nn.Buffer: tensors that a Module registers by assignment.

See https://pytorch.org/docs/stable/generated/torch.nn.parameter.Parameter.html
"""
from collections import OrderedDict

from .._tensor import Tensor

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer", "is_lazy"]

_new = object.__new__


class Parameter(Tensor):
    """A Tensor that shares `data`'s storage and is a module parameter when assigned.

    requires_grad defaults to True; results of ops on a Parameter are plain Tensors.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .._ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        p = _new(cls)
        Tensor._init_copy(p, data._data, data._dtype, False)
        p._version_counter = data._version_counter  # like detach(): same storage, same version counter
        if requires_grad:
            if data._dtype.category < 2:
                raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
            p._requires_grad = True
        return p

    def __deepcopy__(self, memo):
        """A fresh Parameter with a copy of the data (the grad is not copied, as torch)."""
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self._requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        """Pickle as torch does: (data tensor, requires_grad, hooks[, extra __dict__ state])."""
        from ..serialization import _rebuild_parameter
        args = (self.data, self._requires_grad, OrderedDict())
        state = dict(self.__dict__)
        return (_rebuild_parameter, args + (state,) if state else args)


class _BufferMeta(type):
    """isinstance(t, Buffer) is true for the plain tensors Buffer() marks."""

    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and instance.__dict__.get("_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """Buffer(data, persistent=True): a detached tensor marked to be registered as a buffer
    when assigned to a Module attribute (torch returns a plain Tensor, so do we)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .._ops.creation import empty
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


# ---- uninitialized (lazy) parameters and buffers ---------------------------------------------

_STORAGE = Tensor.__dict__["_data"]  # the slot itself: UninitializedTensorMixin guards the attribute
_UNINITIALIZED = ("Attempted to use an uninitialized parameter. This error happens when you are using a `LazyModule` "
                  "or explicitly manipulating `torch.nn.parameter.UninitializedParameter` objects. When using "
                  "LazyModules Call `forward` with a dummy batch to initialize the parameters before calling torch "
                  "functions")


def _uninitialized_data(self):
    raise ValueError(_UNINITIALIZED)


class UninitializedTensorMixin:
    """A tensor without data yet: every op on it raises torch's ValueError (ops read `_data`, which is
    guarded here); dtype, requires_grad, size(), .data and the dtype/device conversions that Module.to
    uses work on its empty placeholder. materialize() gives it data and turns it into cls_to_become."""
    __slots__ = ()
    _data = property(_uninitialized_data, _STORAGE.__set__)

    def materialize(self, shape, device=None, dtype=None):
        """Allocate (uninitialized) data of `shape` and become an ordinary cls_to_become, in place."""
        from .._ops.creation import empty
        d = self._dtype if dtype is None else dtype
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        _STORAGE.__set__(self, empty(shape, dtype=d)._data)
        self._dtype = d
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def size(self, dim=None):
        placeholder = Tensor._make(_STORAGE.__get__(self), self._dtype)
        return placeholder.size(dim)

    @property
    def ndim(self):
        """The empty placeholder's (1), as torch answers before materialize()."""
        return _STORAGE.__get__(self).ndim

    @property
    def data(self):
        return Tensor._make(_STORAGE.__get__(self), self._dtype)

    @data.setter
    def data(self, value):
        _STORAGE.__set__(self, _STORAGE.__get__(value))
        self._dtype = value._dtype

    def to(self, *args, **kwargs):
        """A new uninitialized tensor of the converted dtype (torch keeps the subclass under to())."""
        converted = self.data.to(*args, **kwargs)
        return self._new_like(converted._dtype)

    def _new_like(self, dtype):
        raise NotImplementedError

    def float(self, memory_format=None):
        return self.to(dtype=_dtype_named("float32"))

    def double(self, memory_format=None):
        return self.to(dtype=_dtype_named("float64"))

    def half(self, memory_format=None):
        return self.to(dtype=_dtype_named("float16"))

    def cpu(self, memory_format=None):
        return self

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (type(self), (self._requires_grad,))


def _dtype_named(name):
    from .. import _dtype
    return getattr(_dtype, name)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is decided on a lazy module's first forward.
    See https://pytorch.org/docs/stable/generated/torch.nn.parameter.UninitializedParameter.html"""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from .._ops.creation import empty
        return Parameter.__new__(cls, empty(0, dtype=dtype, device=device), requires_grad)

    def _new_like(self, dtype):
        return UninitializedParameter(self._requires_grad, dtype=dtype)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = UninitializedParameter(self._requires_grad, dtype=self._dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is decided on a lazy module's first forward.
    See https://pytorch.org/docs/stable/generated/torch.nn.parameter.UninitializedBuffer.html"""
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        from .._ops.creation import empty
        placeholder = empty(0, dtype=dtype, device=device)
        t = object.__new__(cls)
        Tensor._init_copy(t, placeholder._data, placeholder._dtype, requires_grad)
        t.persistent = persistent
        return t

    def _new_like(self, dtype):
        return UninitializedBuffer(self._requires_grad, dtype=dtype, persistent=self.__dict__.get("persistent", True))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = self._new_like(self._dtype)
        return memo[id(self)]


def is_lazy(param):
    """True for an uninitialized (lazy) parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)
