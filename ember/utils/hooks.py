"""torch.utils.hooks: RemovableHandle, returned by every register_*_hook, and the machinery of
nn.Module's full backward hooks (BackwardHook)."""
import functools
import warnings
import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle", "unserializable_hook"]


# ---- handles -----------------------------------------------------------------------------------

def _take_id():
    """A fresh handle id. Ids only grow and are shared by every hook dict, so an id never names
    two hooks at once."""
    handle_id = RemovableHandle.next_id
    RemovableHandle.next_id = handle_id + 1
    return handle_id


def _skip_past(handle_id):
    """Make sure ids handed out later are above handle_id (an unpickled handle brings its own)."""
    if RemovableHandle.next_id <= handle_id:
        RemovableHandle.next_id = handle_id + 1


def _weak_refs(dicts):
    return tuple(weakref.ref(d) for d in dicts)


class RemovableHandle:
    """Removes its hook (and the id's entries in extra dicts) from the dict it was added to.

    Holds only weak references, so a handle never keeps a module alive. Pickles as
    (hooks dict, id, extra dicts), as torch's."""
    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = _take_id()
        # extra_dict: one dict or several, holding per-hook flags under the same id
        self.extra_dict_ref = _weak_refs([extra_dict] if isinstance(extra_dict, dict) else extra_dict or ())

    def remove(self):
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            store = ref()
            if store is not None:
                store.pop(self.id, None)

    def __getstate__(self):
        extras = tuple(ref() for ref in self.extra_dict_ref)
        return self.hooks_dict_ref(), self.id, extras

    def __setstate__(self, state):
        hooks_dict, handle_id = state[0], state[1]
        extras = state[2] if len(state) > 2 else None
        # a dead dict pickles as None: the revived handle then points at a throwaway one
        self.hooks_dict_ref = weakref.ref(OrderedDict() if hooks_dict is None else hooks_dict)
        self.id = handle_id
        _skip_past(handle_id)
        self.extra_dict_ref = _weak_refs(extras or ())

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


def unserializable_hook(f):
    """Mark a tensor hook as not to be serialized."""
    f.__torch_unserializable__ = True
    return f


class _WrappedHook:
    """A hook called with its module prepended to the arguments (when it has one).

    The module is held weakly, so a hook in one of its own hook dicts does not keep it alive;
    calling the hook after the module is gone is an error."""

    def __init__(self, hook, module=None):
        self.hook = hook
        self._attach_module(module)

    def _attach_module(self, module):
        self.with_module = module is not None
        if self.with_module:
            self.module = weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if not self.with_module:
            return self.hook(*args, **kwargs)
        owner = self.module()
        if owner is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(owner, *args, **kwargs)

    def __getstate__(self):
        state = dict(hook=self.hook, with_module=self.with_module)
        if self.with_module:
            state["module"] = self.module()  # the strong reference travels with the pickle
        return state

    def __setstate__(self, state):
        self.hook = state["hook"]
        owner = state["module"] if state["with_module"] else None
        if state["with_module"] and owner is None:
            raise RuntimeError("You are trying to revive the hook of a dead Module!")
        self._attach_module(owner)


# ---- full backward hooks -----------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _identity_hook_function():
    """The identity autograd.Function whose node carries a module's backward hooks
    (torch.nn.modules._functions.BackwardHookFunction); built on first use to avoid an import cycle."""
    from ..autograd import Function

    class BackwardHookFunction(Function):
        @staticmethod
        def forward(ctx, *args):
            ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
            # hooks must see the raw grad_output (None where no gradient arrived), while
            # grad_input holds zeros there, as torch materializes inside the backward
            ctx.set_materialize_grads(False)
            ctx.metas = [(a.shape, a.dtype) for a in args]
            return args

        @staticmethod
        def backward(ctx, *grads):
            from .._ops.creation import zeros
            return tuple(zeros(shape, dtype=dtype) if g is None else g
                         for g, (shape, dtype) in zip(grads, ctx.metas))

    return BackwardHookFunction


def _scatter(positions, values, size):
    """A tuple of `size` entries: values at positions, None elsewhere (non-tensor arguments)."""
    spread = [None] * size
    for pos, value in zip(positions, values):
        spread[pos] = value
    return tuple(spread)


def _gather(positions, values):
    """The entries of values at positions: the inverse of _scatter."""
    return tuple(values[pos] for pos in positions)


def _thread_through(hooks, grads, call, who, what):
    """Pass grads through each hook in turn: call(hook, grads) returns None (keep grads) or a
    replacement of the same length (anything else is a RuntimeError naming `who` and `what`)."""
    for hook in hooks:
        replacement = call(hook, grads)
        if replacement is None:
            continue
        if len(replacement) != len(grads):
            raise RuntimeError(f"{who} returned an invalid number of {what}, got {len(replacement)}, "
                               f"but expected {len(grads)}")
        grads = replacement
    return grads


def _all_none(result):
    return result is None or (isinstance(result, tuple) and all(r is None for r in result))


class BackwardHook:
    """Runs a module's full backward (pre-)hooks: identity nodes are put on the module's
    input and output tensors; the output node's hook sees grad_output, the input node's
    hook sees grad_input (None for arguments that are not tensors, zeros for tensors that
    do not require grad, as torch).

    The output node runs first: it applies the pre-hooks and keeps grad_outputs until the
    input node runs the hooks with both (or runs them at once when no input needs a gradient)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks, self.user_pre_hooks = user_hooks, user_pre_hooks
        self.grad_outputs = None
        # per side: how many arguments there were, and at which positions the tensors sit
        # (None when no identity node was put there)
        self.n_inputs = self.n_outputs = -1
        self.input_tensors_index = self.output_tensors_index = None

    def _route(self, args, node_hook):
        """Send the tensors among args through one identity node with node_hook on it. Returns
        (args with those tensors replaced, their positions), or (args, None) if no gradient will flow."""
        from .._tensor import Tensor
        from ..autograd.grad_mode import is_grad_enabled
        positions = [pos for pos, a in enumerate(args) if isinstance(a, Tensor)]
        if not is_grad_enabled() or not any(args[pos].requires_grad for pos in positions):
            return args, None
        routed = _identity_hook_function().apply(*_gather(positions, args))
        node = next(t.grad_fn for t in routed
                    if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward")
        node.register_hook(node_hook)
        replaced = list(args)
        for pos, tensor in zip(positions, routed):
            replaced[pos] = tensor
        rebuilt = tuple(replaced) if type(args) is tuple else type(args)(*replaced)
        return rebuilt, positions

    def _on_grad_input(self, grad_input, _):
        """The input node's hook: the user hooks see (grad_input, grad_output) and may replace grad_input."""
        if self.grad_outputs is None:
            return None  # the gradient reached the inputs without passing the outputs (double backward)
        grads = _scatter(self.input_tensors_index, grad_input, self.n_inputs)
        grads = _thread_through(self.user_hooks, grads, lambda hook, g: hook(self.module, g, self.grad_outputs),
                                "Backward hook", "grad_input")
        self.grad_outputs = None
        return _gather(self.input_tensors_index, grads)

    def _on_grad_output(self, _, grad_output):
        """The output node's hook: the pre-hooks may replace grad_output, which is kept for _on_grad_input."""
        self.grad_outputs = _scatter(self.output_tensors_index, grad_output, self.n_outputs)
        self.grad_outputs = _thread_through(self.user_pre_hooks, self.grad_outputs,
                                            lambda hook, g: hook(self.module, g), "Backward pre hook", "grad_output")
        passed_on = self.grad_outputs
        if self.input_tensors_index is None:
            # the input node does not exist, so the hooks fire here with grad_input all None
            warnings.warn("Full backward hook is firing when gradients are computed with respect to "
                          "module outputs since no inputs require gradients. See https://docs.pytorch.org"
                          "/docs/main/generated/torch.nn.Module.html#torch.nn.Module.register_full_"
                          "backward_hook for more details.", stacklevel=5)
            self._fire_without_inputs()
        return _gather(self.output_tensors_index, passed_on)

    def _fire_without_inputs(self):
        no_grads = (None,) * self.n_inputs
        for hook in self.user_hooks:
            if not _all_none(hook(self.module, no_grads, self.grad_outputs)):
                raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                   "should always return None or None for all gradients.")
        self.grad_outputs = None

    def setup_input_hook(self, args):
        routed, positions = self._route(args, self._on_grad_input)
        self.n_inputs = len(args)
        self.input_tensors_index = positions
        return routed

    def setup_output_hook(self, result):
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        routed, positions = self._route(outputs, self._on_grad_output)
        self.n_outputs = len(outputs)
        self.output_tensors_index = positions
        return routed[0] if single else routed
