"""nn.Parameter and nn.Buffer: tensors that a Module registers by assignment.

See https://pytorch.org/docs/stable/generated/torch.nn.parameter.Parameter.html
"""
from collections import OrderedDict

from .._tensor import Tensor

__all__ = ["Parameter", "Buffer", "is_lazy"]

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


def is_lazy(param):
    """Lazy (uninitialized) parameters are not supported, so nothing is lazy."""
    return False
