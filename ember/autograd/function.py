"""torch.autograd.Function: user-defined ops with forward/backward on Tensors.

The node created for each call is also the `ctx` the user's forward and backward see,
the same Node the built-in ops use.
"""
import functools

from . import grad_mode
from .graph import Node, SavedTensor, init_node

_state = grad_mode._state


class FunctionCtx:
    """Methods of ctx; mixed into the per-call node."""
    __slots__ = ()

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._to_save_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is None:
            return tuple(self.__dict__.get("_to_save", ()))
        return tuple(s.unpack(self) for s in saved)

    @property
    def saved_variables(self):
        return self.saved_tensors


class BackwardCFunction(FunctionCtx, Node):
    """The node (and ctx) of one autograd.Function call."""
    _forward_cls = None

    def backward(self, *grads):
        cls = self._forward_cls
        res = cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = self._n_args
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                                   f"(expected {n}, got {len(res)})")
        return tuple(res[i] for i in self._tensor_positions)

    def apply(self, *grads):
        return self.backward(*grads)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls,
                                                                     "_name": name + "Backward"})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Subclass and define forward(ctx, *args) (or forward(*args) + setup_context) and backward(ctx, *grads)."""

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are all static, "
                      "so you should invoke them on the class itself.", DeprecationWarning)

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        tensors = tuple(args[i] for i in positions)
        ctx = object.__new__(cls._backward_cls)
        ctx._saved = None
        ctx.materialize_grads = True
        ctx._n_args = len(args)
        ctx._tensor_positions = positions
        needs = _state.enabled and any(t._requires_grad for t in tensors)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad and _state.enabled for a in args)
        custom_setup = cls.setup_context is not Function.setup_context
        prev = _state.enabled
        _state.enabled = False
        try:
            if custom_setup:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.enabled = prev
        if not needs:
            return output
        materialize = ctx.materialize_grads
        init_node(ctx, tensors)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        ctx.materialize_grads = materialize
        is_tuple = isinstance(output, tuple)
        outs = list(output) if is_tuple else [output]
        dirty = {id(t) for t in ctx.__dict__.get("_dirty", ())}
        nondiff = {id(t) for t in ctx.__dict__.get("_non_differentiable", ())}
        input_ids = {id(t) for t in tensors}
        meta = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                meta.append(((), None))
                continue
            if id(o) in input_ids and id(o) not in dirty:
                o = o.view_as(o)  # an input returned as-is becomes a new alias with this history
                outs[i] = o
            meta.append((o._data.shape, o._dtype))
            if id(o) in nondiff or o._dtype.category < 2:
                o._requires_grad = False if o._grad_fn is None else o._requires_grad
                continue
            if id(o) in dirty and o._base is not None:
                from .._ops.shape import rebase_history
                fake = Tensor._make(o._data)
                fake._grad_fn = ctx
                fake._output_nr = i
                rebase_history(o, fake)
                continue
            o._grad_fn = ctx
            o._output_nr = i
            o._requires_grad = True
        ctx._out_meta = tuple(meta)
        to_save = ctx.__dict__.pop("_to_save", ())
        saved = []
        for t in to_save:
            if t is None:
                saved.append(SavedTensor("value", None))
            elif not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {len(saved)} is of "
                                f"type {type(t).__name__}")
            elif any(t is o for o in outs) and id(t) not in input_ids:
                k = next(i for i, o in enumerate(outs) if o is t)
                saved.append(SavedTensor("output", t._data, t._version, t._version.value, k))
            else:
                saved.append(SavedTensor("input", t, None, t._version.value))
        ctx._saved = tuple(saved)
        return tuple(outs) if is_tuple else outs[0]


def once_differentiable(fn):
    """Run backward without recording a graph; double backward through it raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            out = fn(ctx, *args)
        if not _state.enabled:
            return out
        from .._tensor import Tensor
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return out
        outs = out if isinstance(out, tuple) else (out,)
        wrapped = tuple(_DelayedError.apply(o) if isinstance(o, Tensor) else o for o in outs)
        return wrapped if isinstance(out, tuple) else wrapped[0]
    return wrapper


class _DelayedError(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


class InplaceFunction(Function):
    pass


class NestedIOFunction(Function):
    pass
