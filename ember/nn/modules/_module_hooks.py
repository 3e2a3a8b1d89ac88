"""Module hooks: the global register_module_* hooks and the hook half of nn.Module
(register_*_hook and the forward call that runs them). Mixed into Module in module.py.

Every hook table is an OrderedDict from handle id to hook; per-hook options (with_kwargs,
always_call) are separate dicts keyed by the same id, so a handle removes a hook with one pop
per dict. The tables keep torch.nn.modules.module's names."""
import itertools
import warnings
from collections import OrderedDict

from ..._tensor import Tensor
from ...utils.hooks import BackwardHook, RemovableHandle, _WrappedHook

# ---- global hooks (torch.nn.modules.module.register_module_*) ---------------------------

_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()

_MIXED_BACKWARD_HOOKS = ("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                         "Please use only one of them.")


def _install(table, hook, options=(), prepend=False):
    """Add hook to table under a fresh handle and return the handle.

    options: (option dict, wanted) pairs; the hook's id is marked in each dict it wants, and
    the handle removes the id from all of them."""
    handle = RemovableHandle(table, extra_dict=[flags for flags, _ in options])
    table[handle.id] = hook
    for flags, wanted in options:
        if wanted:
            flags[handle.id] = True
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


def register_module_buffer_registration_hook(hook):
    return _install(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    return _install(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    return _install(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook):
    return _install(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    return _install(_global_forward_hooks, hook,
                    [(_global_forward_hooks_always_called, always_call),
                     (_global_forward_hooks_with_kwargs, with_kwargs)])


def register_module_full_backward_pre_hook(hook):
    return _install(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    return _install(_global_backward_hooks, hook)


# ---- one hooked forward call ------------------------------------------------------------

class _HookedCall:
    """Arguments and result of one hooked forward call, rewritten by hooks as it goes; if a step
    raises, the always_call forward hooks still see the latest values."""
    __slots__ = ("args", "kwargs", "result", "always_done")

    def __init__(self, args, kwargs):
        self.args, self.kwargs, self.result = args, kwargs, None
        self.always_done = set()  # ids of always_call hooks that ran normally


def _marked(hook_id, *flag_dicts):
    return any(hook_id in flags for flags in flag_dicts)


def _forward_hook_items(module):
    return itertools.chain(_global_forward_hooks.items(), module._forward_hooks.items())


def _call_forward_hook(module, hook, call, with_kwargs):
    """One forward hook; its non-None return value replaces the result."""
    if with_kwargs:
        out = hook(module, call.args, call.kwargs, call.result)
    else:
        out = hook(module, call.args, call.result)
    if out is not None:
        call.result = out


def _run_forward_pre_hooks(module, call):
    """Global, then the module's, forward pre-hooks; each may replace the arguments."""
    for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(), module._forward_pre_hooks.items()):
        if hook_id not in module._forward_pre_hooks_with_kwargs:
            out = hook(module, call.args)
            if out is not None:
                call.args = out if isinstance(out, tuple) else (out,)
            continue
        out = hook(module, call.args, call.kwargs)
        if out is None:
            continue
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got "
                               f"{out}.")
        call.args, call.kwargs = out


def _run_forward_hooks(module, call):
    """Global, then the module's, forward hooks after a successful forward."""
    for hook_id, hook in _forward_hook_items(module):
        if _marked(hook_id, module._forward_hooks_always_called, _global_forward_hooks_always_called):
            call.always_done.add(hook_id)
        wants_kwargs = _marked(hook_id, module._forward_hooks_with_kwargs, _global_forward_hooks_with_kwargs)
        _call_forward_hook(module, hook, call, wants_kwargs)


def _run_always_call_hooks_after_error(module, call):
    """forward (or a hook) raised: the always_call forward hooks that have not run yet run now;
    an error of theirs only warns, since the original one is re-raised."""
    for hook_id, hook in _forward_hook_items(module):
        if hook_id in call.always_done:
            continue
        if not _marked(hook_id, module._forward_hooks_always_called, _global_forward_hooks_always_called):
            continue
        try:
            # only the module's own hooks get kwargs here, as in torch
            _call_forward_hook(module, hook, call, hook_id in module._forward_hooks_with_kwargs)
        except Exception as e:
            scope = "global module" if hook_id in _global_forward_hooks else "module"
            warnings.warn(f"{scope} forward hook with ``always_call=True`` raised an exception that was "
                          f"silenced as another error was raised in forward: {e}", stacklevel=2)


def _split_backward_hooks(module):
    """(full backward hooks, hooks of the deprecated register_backward_hook) for one call."""
    if not (module._backward_hooks or _global_backward_hooks):
        return [], []
    full, legacy = list(_global_backward_hooks.values()), []
    if module._is_full_backward_hook is True:
        full += module._backward_hooks.values()
    elif module._is_full_backward_hook is False:
        legacy = list(module._backward_hooks.values())
    return full, legacy


def _first_tensor(output):
    """The tensor legacy backward hooks attach to: first element of sequences, first tensor
    value of dicts, down to a tensor."""
    while not isinstance(output, Tensor):
        if isinstance(output, dict):
            output = next(v for v in output.values() if isinstance(v, Tensor))
        else:
            output = output[0]
    return output


class _HooksMixin:
    """Hook registration and the slow (hooked) forward call of nn.Module."""

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args; with_kwargs: hook(module, args, kwargs) -> None or (args, kwargs)."""
        return _install(self._forward_pre_hooks, hook, [(self._forward_pre_hooks_with_kwargs, with_kwargs)],
                        prepend)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or new output (with_kwargs: hook(module, args, kwargs, output))."""
        return _install(self._forward_hooks, hook,
                        [(self._forward_hooks_with_kwargs, with_kwargs),
                         (self._forward_hooks_always_called, always_call)], prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or new grad_output, before grad_input is computed."""
        return _install(self._backward_pre_hooks, hook, prepend=prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input."""
        # _is_full_backward_hook: None until the first backward hook decides the kind for good
        if self._is_full_backward_hook is False:
            raise RuntimeError(_MIXED_BACKWARD_HOOKS)
        self._is_full_backward_hook = True
        return _install(self._backward_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook):
        """Deprecated: hook(module, grad_input, grad_output) on the grad_fn of the output."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(_MIXED_BACKWARD_HOOKS)
        self._is_full_backward_hook = False
        return _install(self._backward_hooks, hook)

    def _call_impl(self, *args, **kwargs):
        """forward with forward pre-hooks, forward hooks and full backward (pre-)hooks."""
        call = _HookedCall(args, kwargs)
        try:
            full_bw, legacy_bw = _split_backward_hooks(self)
            bw_pre = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            _run_forward_pre_hooks(self, call)
            bw_hook = BackwardHook(self, full_bw, bw_pre) if full_bw or bw_pre else None
            if bw_hook is not None:
                call.args = bw_hook.setup_input_hook(call.args)
            call.result = self.forward(*call.args, **call.kwargs)
            _run_forward_hooks(self, call)
            if bw_hook is not None:
                if not isinstance(call.result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple "
                                  f"of Tensors but received {type(call.result)}", stacklevel=2)
                call.result = bw_hook.setup_output_hook(call.result)
            if legacy_bw:
                grad_fn = _first_tensor(call.result).grad_fn
                if grad_fn is not None:
                    for hook in legacy_bw:
                        grad_fn.register_hook(_WrappedHook(hook, self))
            return call.result
        except Exception:
            _run_always_call_hooks_after_error(self, call)
            raise
