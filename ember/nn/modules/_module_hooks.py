"""Module hooks: the global register_module_* hooks and the hook half of nn.Module
(register_*_hook and the forward call that runs them). Mixed into Module in module.py."""
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


def _add_global(store, hook):
    handle = RemovableHandle(store)
    store[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook):
    return _add_global(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    return _add_global(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    return _add_global(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook):
    return _add_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    handle = RemovableHandle(_global_forward_hooks,
                             extra_dict=[_global_forward_hooks_always_called, _global_forward_hooks_with_kwargs])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook):
    return _add_global(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    return _add_global(_global_backward_hooks, hook)


class _HooksMixin:
    """Hook registration and the slow (hooked) forward call of nn.Module."""

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args; with_kwargs: hook(module, args, kwargs) -> None or (args, kwargs)."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or new output (with_kwargs: hook(module, args, kwargs, output))."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or new grad_output, before grad_input is computed."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single "
                               "Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated: hook(module, grad_input, grad_output) on the grad_fn of the output."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single "
                               "Module. Please use only one of them.")
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def _call_impl(self, *args, **kwargs):
        """forward with forward pre-hooks, forward hooks and full backward (pre-)hooks."""
        called_always = set()
        result = None
        try:
            full_bw, non_full_bw = [], []
            if self._backward_hooks or _global_backward_hooks:
                full_bw = list(_global_backward_hooks.values())
                if self._is_full_backward_hook is True:
                    full_bw += self._backward_hooks.values()
                elif self._is_full_backward_hook is False:
                    non_full_bw = list(self._backward_hooks.values())
            bw_pre = list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())
            for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(), self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if not (isinstance(res, tuple) and len(res) == 2):
                            raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {res}.")
                        args, kwargs = res
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_hook = None
            if full_bw or bw_pre:
                bw_hook = BackwardHook(self, full_bw, bw_pre)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in itertools.chain(_global_forward_hooks.items(), self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple "
                                  f"of Tensors but received {type(result)}", stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full_bw:
                var = result
                while not isinstance(var, Tensor):
                    var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) \
                        else var[0]
                if var.grad_fn is not None:
                    for hook in non_full_bw:
                        var.grad_fn.register_hook(_WrappedHook(hook, self))
            return result
        except Exception:
            self._run_always_called_hooks(called_always, args, kwargs, result)
            raise

    def _run_always_called_hooks(self, already, args, kwargs, result):
        """After forward raised: forward hooks registered with always_call=True still run."""
        for hook_id, hook in itertools.chain(_global_forward_hooks.items(), self._forward_hooks.items()):
            always = hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called
            if not always or hook_id in already:
                continue
            try:
                if hook_id in self._forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            except Exception as e:
                warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                              f"silenced as another error was raised in forward: {e}", stacklevel=2)
