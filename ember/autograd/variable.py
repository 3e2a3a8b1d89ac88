"""torch.autograd.Variable: the pre-0.4 wrapper, kept by torch as a thin alias of Tensor.

`Variable(t, requires_grad=False)` returns a detached tensor sharing t's storage (requires_grad as
asked), `Variable()` an empty float tensor, and every Tensor is an instance of Variable.
"""
import warnings


class VariableMeta(type):
    def __instancecheck__(cls, other):
        from .._tensor import Tensor
        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    def __new__(cls, data=None, requires_grad=False, volatile=False):
        from .._tensor import Tensor
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            from .. import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


class _ImperativeEngine:
    """torch's Variable._execution_engine: the engine's queue_callback, the part of it user code calls."""

    @staticmethod
    def queue_callback(callback):
        from .engine import queue_callback
        queue_callback(callback)


Variable._execution_engine = _ImperativeEngine()
