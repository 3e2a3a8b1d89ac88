"""Activation checkpointing as a module wrapper: torch.distributed.algorithms._checkpoint.checkpoint_wrapper.

checkpoint_wrapper(m) runs m through ember.utils.checkpoint on every call (non-reentrant by default),
offload_wrapper(m) under autograd.graph.save_on_cpu, and apply_activation_checkpointing(model, ...)
replaces the submodules a check (or an FSDP-style auto-wrap policy) picks by such wrappers, in place.
The wrapped module lives at `_checkpoint_wrapped_module`; that prefix is left out of state_dict keys and
parameter names, and added back when a state dict is loaded, so checkpoints load into the model with or
without the wrappers, as in torch. Needs no MPI.
"""
import abc
import enum
import functools

from .... import nn
from ....autograd.graph import save_on_cpu
from ....utils.checkpoint import checkpoint as _checkpoint

_CHECKPOINT_WRAPPED_MODULE = "_checkpoint_wrapped_module"
_CHECKPOINT_PREFIX = _CHECKPOINT_WRAPPED_MODULE + "."


class CheckpointImpl(enum.Enum):
    REENTRANT = enum.auto()
    NO_REENTRANT = enum.auto()


def _replace_prefix(state_dict, old, new):
    """Rename, in place, every key of state_dict that starts with `old` to start with `new` (moved to the end)."""
    if old == new:
        raise ValueError("old_prefix and new_prefix must be distinct")
    for key in list(state_dict):
        if key.startswith(old):
            state_dict[new + key[len(old):]] = state_dict.pop(key)


class ActivationWrapper(nn.Module, abc.ABC):
    """Base of the two wrappers: holds the module, forwards attribute and index lookups to it, and hides
    its prefix in parameter names and state dicts. Not made directly (forward is the subclasses')."""

    def __init__(self, mod):
        super().__init__()
        self._checkpoint_wrapped_module = mod
        self._register_state_dict_hook(self._post_state_dict_hook)
        self.register_load_state_dict_pre_hook(self._pre_load_state_dict_hook)

    @abc.abstractmethod
    def forward(self, *args, **kwargs):
        raise ValueError("Subclasses should implement forward().")

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._checkpoint_wrapped_module, name)

    def __getitem__(self, key):
        return self._checkpoint_wrapped_module.__getitem__(key)

    def named_parameters(self, *args, **kwargs):
        for name, param in super().named_parameters(*args, **kwargs):
            yield name.replace(_CHECKPOINT_PREFIX, ""), param

    @staticmethod
    def _post_state_dict_hook(module, state_dict, prefix, *args):
        _replace_prefix(state_dict, prefix + _CHECKPOINT_PREFIX, prefix)
        return state_dict

    @staticmethod
    def _pre_load_state_dict_hook(module, state_dict, prefix, *args):
        _replace_prefix(state_dict, prefix, prefix + _CHECKPOINT_PREFIX)


class OffloadWrapper(ActivationWrapper):
    """Keeps the wrapped module's saved activations on the CPU (save_on_cpu; on ember they are there already)."""

    def forward(self, *args, **kwargs):
        with save_on_cpu(pin_memory=True):
            return self._checkpoint_wrapped_module(*args, **kwargs)


class CheckpointWrapper(ActivationWrapper):
    """Runs the wrapped module through a checkpoint function (ember.utils.checkpoint unless one is given)."""

    def __init__(self, mod, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None, **checkpoint_fn_kwargs):
        super().__init__(mod)
        self.checkpoint_impl = checkpoint_impl
        if checkpoint_fn is None:  # the flavour comes from checkpoint_impl (and may not be given again)
            self.checkpoint_fn = functools.partial(_checkpoint, **checkpoint_fn_kwargs,
                                                   use_reentrant=checkpoint_impl == CheckpointImpl.REENTRANT)
        else:
            self.checkpoint_fn = functools.partial(checkpoint_fn, **checkpoint_fn_kwargs)

    def forward(self, *args, **kwargs):
        if self.checkpoint_impl == CheckpointImpl.REENTRANT and kwargs:
            # reentrant checkpointing takes positional inputs only: keyword values travel after them
            keys = tuple(kwargs)
            flat = args + tuple(kwargs.values())

            def call(*inputs):
                cut = len(inputs) - len(keys)
                return self._checkpoint_wrapped_module(*inputs[:cut], **dict(zip(keys, inputs[cut:])))

            return self.checkpoint_fn(call, *flat)
        return self.checkpoint_fn(self._checkpoint_wrapped_module, *args, **kwargs)


def offload_wrapper(module):
    """`module` wrapped so that its saved activations are kept on the CPU."""
    return OffloadWrapper(module)


def checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None, **checkpoint_fn_kwargs):
    """`module` wrapped so that each call checkpoints it: backward recomputes its activations."""
    return CheckpointWrapper(module, checkpoint_impl, checkpoint_fn, **checkpoint_fn_kwargs)


def _wrap_children(module, policy, wrap, only_children=False):
    """FSDP's recursive auto-wrap: children first (depth first, in order), then the module itself when the
    policy picks it for the parameters its children did not take. Returns (module, numel wrapped)."""
    numel = sum(p.numel() for p in module.parameters())
    if not policy(module=module, recurse=True, nonwrapped_numel=numel):
        return module, 0
    wrapped = 0
    for name, child in module.named_children():
        new_child, n = _wrap_children(child, policy, wrap)
        setattr(module, name, new_child)
        wrapped += n
    if not only_children and policy(module=module, recurse=False, nonwrapped_numel=numel - wrapped):
        return wrap(module), numel
    return module, wrapped


def apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=lambda _: True,
                                   auto_wrap_policy=None):
    """Replace, in place, the submodules of `model` that `check_fn(module)` picks (or that `auto_wrap_policy`,
    a callable (module, recurse, nonwrapped_numel) -> bool as FSDP's, picks) by checkpoint_wrapper_fn(module).
    Children are visited before their parent, so nested picks are wrapped inside out; `model` itself is not
    wrapped. Returns None."""
    if auto_wrap_policy is None:
        def auto_wrap_policy(module, recurse, nonwrapped_numel):
            return True if recurse else check_fn(module)
    elif not callable(auto_wrap_policy):
        raise ValueError(f"Expected {auto_wrap_policy} to be callable or be a pre-defined wrap policy")
    _wrap_children(model, auto_wrap_policy, checkpoint_wrapper_fn, only_children=True)


__all__ = ["ActivationWrapper", "CheckpointImpl", "CheckpointWrapper", "OffloadWrapper", "apply_activation_checkpointing",
           "checkpoint_wrapper", "offload_wrapper"]
