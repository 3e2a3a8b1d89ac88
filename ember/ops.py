"""torch.ops: the `aten` namespace of the operator overloads torch's own tests call directly, and `profiler`'s
range functions (what a tracer records for record_function: pytorch/examples fx/profiling_tracer.py).

torch.ops.aten.<op>.<overload> is torch's dispatcher entry point; ember has no dispatcher, so `aten` holds
only the overloads that have no public name in torch (aten.slice, native_dropout_backward,
max_pool2d_with_indices_backward), each written with ember ops (so they are differentiable as torch's are).
"""
from ._ops import _aten

__all__ = ["aten", "profiler"]


class OpOverload:
    """One overload (aten.slice.Tensor): a callable with torch's name and schema arguments."""

    def __init__(self, packet, overload, fn):
        self._packet = packet
        self._overloadname = overload
        self._fn = fn
        self.__name__ = f"{packet}.{overload}"
        self.__doc__ = fn.__doc__

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __repr__(self):
        return f"<OpOverload(op='aten.{self._packet}', overload='{self._overloadname}')>"

    def __str__(self):
        return f"aten.{self.__name__}"


class OpOverloadPacket:
    """All overloads of one aten op (aten.slice): calling it calls its first overload."""

    def __init__(self, name, overloads):
        self.__name__ = name
        self._names = list(overloads)
        for overload, fn in overloads.items():
            setattr(self, overload, OpOverload(name, overload, fn))

    def overloads(self):
        return list(self._names)

    def __call__(self, *args, **kwargs):
        return getattr(self, self._names[0])(*args, **kwargs)

    def __repr__(self):
        return f"<OpOverloadPacket(op='aten.{self.__name__}')>"


class _OpNamespace:
    """torch.ops.<namespace>: its packets as attributes; an unknown name raises AttributeError as torch's."""

    def __init__(self, name, packets):
        self.name = name
        for op, overloads in packets.items():
            setattr(self, op, OpOverloadPacket(op, overloads))

    def __getattr__(self, op):
        raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op}'")


aten = _OpNamespace("aten", _aten.PACKETS)


def _record_function_enter(name, args=None):
    """Open a profiler range named `name` (record_function entered); returns its handle for the exit."""
    from .profiler import record_function
    handle = record_function(name, args)
    handle.__enter__()
    return handle


def _record_function_exit(handle):
    """Close the range _record_function_enter opened (a Proxy handle is recorded while tracing)."""
    from .profiler import record_function
    if not isinstance(handle, record_function):
        from ._ops._argcheck import torch_function
        result = torch_function(profiler._record_function_exit, (handle,), {})
        if result is not NotImplemented:
            return result
        raise TypeError(f"_record_function_exit(): expected the handle of _record_function_enter, got "
                        f"{type(handle).__name__}")
    handle.__exit__(None, None, None)


profiler = _OpNamespace("profiler", {"_record_function_enter": {"default": _record_function_enter},
                                     "_record_function_exit": {"default": _record_function_exit}})
