"""torch.autograd.Function: user-defined ops with forward/backward on Tensors.

The node created for each call is also the `ctx` the user's forward and backward see,
the same Node the built-in ops use. See https://pytorch.org/docs/stable/autograd.html#function
"""
import functools

from . import grad_mode, saved_hooks
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
        if saved is None:  # inside forward / setup_context, before apply() resolved them
            return tuple(self.__dict__.get("_to_save", ()))
        return tuple(s.unpack(self) for s in saved)

    @property
    def saved_variables(self):
        return self.saved_tensors


class BackwardCFunction(FunctionCtx, Node):
    """The node (and ctx) of one autograd.Function call."""
    _forward_cls = None
    _fresh_grads = False  # the user's backward may return a tensor it keeps

    def backward(self, *grads):
        """The user's backward returns one gradient per forward argument; the engine
        wants one per Tensor argument."""
        res = self._forward_cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = self._n_args
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                                   f"(expected {n}, got {len(res)})")
        positions = self._tensor_positions
        for i, r in enumerate(res):
            if r is not None and i not in positions:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
        return tuple(res[i] for i in positions)

    def apply(self, *grads):
        return self.backward(*grads)

    def __call__(self, *grads):
        """Not callable, as torch's custom Function nodes (call .apply instead)."""
        raise TypeError(f"'{type(self).__name__}' object is not callable")


class FunctionMeta(type):
    """Gives every Function subclass its node class, named like torch's (MyFnBackward)."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls,
                                                                     "_name": name + "Backward"})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Subclass and define forward(ctx, *args) (or forward(*args) + setup_context) and
    backward(ctx, *grad_outputs); call with MyFn.apply(*args)."""

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are all static, "
                      "so you should invoke them on the class itself. Instantiating an autograd function will "
                      "raise an error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-style "
                           "autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

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
        enabled = _state.enabled
        ctx.needs_input_grad = tuple(enabled and isinstance(a, Tensor) and a._requires_grad for a in args)
        _state.enabled = False  # forward runs without recording, as in torch
        try:
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.enabled = enabled
        is_tuple = isinstance(output, tuple)
        outs = list(output) if is_tuple else [output]
        if enabled and any(t._requires_grad for t in tensors):
            _record(ctx, tensors, outs)
        else:
            _alias_returned_inputs(ctx, tensors, outs)
        return tuple(outs) if is_tuple else outs[0]


def _alias_returned_inputs(ctx, tensors, outs):
    """An input returned unchanged (and not marked dirty) comes back as a new alias."""
    dirty = ctx.__dict__.get("_dirty", ())
    for i, o in enumerate(outs):
        if _is_in(o, tensors) and not _is_in(o, dirty):
            outs[i] = _alias(o)


def _record(ctx, tensors, outs):
    """Make ctx the grad_fn of the outputs and resolve what forward saved."""
    from .._tensor import Tensor
    from .._ops.shape import rebase_history
    materialize = ctx.materialize_grads
    needs = ctx.needs_input_grad  # one flag per argument, not per tensor as init_node sets
    init_node(ctx, tensors)
    ctx.materialize_grads = materialize
    ctx.needs_input_grad = needs
    dirty = ctx.__dict__.get("_dirty", ())
    nondiff = ctx.__dict__.get("_non_differentiable", ())
    for t in dirty:
        if not _is_in(t, outs):
            raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                               "The inputs that are modified inplace must all be outputs of the Function.")
        _check_dirty(t)
    meta = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            meta.append(((), None))
            continue
        differentiable = not _is_in(o, nondiff) and o._dtype.category >= 2
        ours = not _is_in(o, tensors)  # a new tensor: its flags are ours to set
        if not ours and not _is_in(o, dirty):
            o = outs[i] = _alias(o)
            ours = True
        meta.append((o._data.shape, o._dtype))
        if not differentiable:
            if ours:
                o._requires_grad = False
                o._grad_fn = None
            continue
        if _is_in(o, dirty) and o._base is not None:
            carrier = Tensor._make(o._data, o._dtype)  # carries ctx as the history of the written window
            carrier._grad_fn = ctx
            carrier._output_nr = i
            carrier._requires_grad = True
            rebase_history(o, carrier)
            continue
        o._grad_fn = ctx
        o._output_nr = i
        o._requires_grad = True
    ctx._out_meta = tuple(meta)
    saved = []
    for k, t in enumerate(ctx.__dict__.pop("_to_save", ())):
        if t is None:
            saved.append(SavedTensor("value", None))
        elif not isinstance(t, Tensor):
            raise TypeError(f"save_for_backward can only save variables, but argument {k} is of type "
                            f"{type(t).__name__}")
        elif _is_in(t, outs) and not _is_in(t, tensors):
            nr = next(j for j, o in enumerate(outs) if o is t)
            saved.append(SavedTensor("output", t._data, t._version_counter, t._version_counter.value, nr))
        else:
            saved.append(SavedTensor("input", t, None, t._version_counter.value))
    ctx._saved = tuple(saved)
    if saved_hooks.active:  # Note [Packed saved tensors]
        saved_hooks.pack(ctx, outs)


def _is_in(t, items):
    for x in items:
        if x is t:
            return True
    return False


def _alias(t):
    """A new Tensor viewing the same storage (torch returns inputs as views of themselves)."""
    return t.view_as(t) if _state.enabled else _detached_view(t)


def _detached_view(t):
    with grad_mode.no_grad():
        return t.view_as(t)


def _check_dirty(t):
    """torch's errors for marking a leaf (or a view of one) that requires grad as modified."""
    if not t._requires_grad:
        return
    if t._grad_fn is None and t._base is None:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    base = t._base
    if base is not None and base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def once_differentiable(fn):
    """Run backward without recording a graph; differentiating its result again raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            out = fn(ctx, *args)
        if not _state.enabled:
            return out
        from .._tensor import Tensor
        inputs = tuple(a for a in args if isinstance(a, Tensor) and a._requires_grad)
        if not inputs:
            return out
        outs = out if isinstance(out, tuple) else (out,)
        node = object.__new__(_DelayedError)
        init_node(node, inputs)
        node._saved = ()
        node._out_meta = tuple((o._data.shape, o._dtype) if isinstance(o, Tensor) else ((), None) for o in outs)
        wrapped = []
        for i, o in enumerate(outs):
            if isinstance(o, Tensor) and o._dtype.category >= 2:
                o = o.detach()
                o._requires_grad = True
                o._grad_fn = node
                o._output_nr = i
            wrapped.append(o)
        return tuple(wrapped) if isinstance(out, tuple) else wrapped[0]
    return wrapper


class _DelayedError(Node):
    """The grad_fn of a @once_differentiable backward's results: running it is the error."""
    __slots__ = ()
    _name = "torch::autograd::Error"

    def backward(self, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


class InplaceFunction(Function):
    """Kept for torch compatibility: a Function with an `inplace` flag."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    """Kept for torch compatibility (legacy API); use Function."""
