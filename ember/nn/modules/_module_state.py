"""state_dict / load_state_dict: the state half of nn.Module, mixed into Module in module.py.

Keys are dotted paths ("layers.0.weight"); the returned OrderedDict's `_metadata`
records each module's `_version`, which _load_from_state_dict receives as local_metadata
(so layers can convert old formats in a load_state_dict pre-hook).

Saving recurses through each child's public state_dict() (a subclass may override it, and a
child's replacement dict from a private post-hook is not seen by its parent, as in torch);
loading walks the module tree with an explicit stack (_load_tree)."""
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...utils.hooks import RemovableHandle, _WrappedHook
from ..parameter import Parameter, is_lazy

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """load_state_dict's result; reads "<All keys matched successfully>" when both are empty."""
    __slots__ = ()

    def __repr__(self):
        if self.missing_keys or self.unexpected_keys:
            return super().__repr__()
        return "<All keys matched successfully>"

    __str__ = __repr__


# ---- helpers -----------------------------------------------------------------------------------

def _attach(store, hook):
    """Add hook to one of a module's hook dicts; the handle removes it again."""
    handle = RemovableHandle(store)
    store[handle.id] = hook
    return handle


def _overrides(module, method):
    """Whether module's class replaces the base get_extra_state/set_extra_state (opting in to extra state)."""
    return getattr(type(module), method) is not getattr(_StateDictMixin, method)


def _persistent_state(module):
    """name -> tensor for what a module saves of its own: parameters, then persistent buffers; None skipped."""
    state = {name: p for name, p in module._parameters.items() if p is not None}
    transient = module._non_persistent_buffers_set
    state.update((name, b) for name, b in module._buffers.items() if b is not None and name not in transient)
    return state


def _merge_positional(args, destination, prefix, keep_vars):
    """Fold the deprecated positional form state_dict(destination, prefix, keep_vars) into the keywords;
    a keyword still at its default takes the positional value."""
    warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                  "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                  " for details.", FutureWarning, stacklevel=3)
    given = tuple(args[:3]) + (None, "", False)[len(args):]
    if destination is None:
        destination = given[0]
    if prefix == "":
        prefix = given[1]
    if keep_vars is False:
        keep_vars = given[2]
    return destination, prefix, keep_vars


def _file_version(module, destination, prefix):
    """module's local metadata ({"version": _version}), also filed in destination._metadata under
    the module's dotted path when the destination keeps metadata."""
    local_metadata = {"version": module._version}
    if hasattr(destination, "_metadata"):
        destination._metadata[prefix[:-1]] = local_metadata
    return local_metadata


def _finish_state_dict(module, destination, prefix, local_metadata):
    """Run module's state_dict post-hooks; a private-API hook may hand back a replacement dict."""
    for hook in module._state_dict_hooks.values():
        replacement = hook(module, destination, prefix, local_metadata)
        if replacement is None:
            continue
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("state_dict post-hook must return None")
        destination = replacement
    return destination


def _assigned_value(value, target):
    """What load_state_dict(assign=True) stores: a Parameter (with the target's requires_grad)
    in place of a Parameter, the checkpoint tensor itself in place of a buffer."""
    if not isinstance(target, Parameter):
        return value
    if isinstance(value, Parameter):
        value.requires_grad_(target.requires_grad)
        return value
    return Parameter(value, requires_grad=target.requires_grad)


def _load_one(module, name, target, key, value, assign, error_msgs):
    """Load checkpoint entry `key` into module's own tensor `name` (target), or say in error_msgs why not."""
    if not isinstance(value, Tensor):
        error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                          f"Tensor-like object from checkpoint but received {type(value)}")
        return
    if is_lazy(target):  # still uninitialized: a lazy module's load hook left it so (nothing to copy)
        return
    if target.dim() == 0 and value.shape == (1,):
        value = value[0]  # a 0-d parameter saved as shape (1,) by older versions
    if value.shape != target.shape:
        error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                          f"checkpoint, the shape in current model is {target.shape}.")
        return
    try:
        with no_grad():
            if assign:
                setattr(module, name, _assigned_value(value, target))
            else:
                target.copy_(value)
    except Exception as ex:
        error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                          f"{target.size()} and whose dimensions in the checkpoint are {value.size()}, "
                          f"an exception occurred : {ex.args}.")


def _unexpected_under(module, state_dict, prefix, own, extra_key):
    """Keys under prefix naming neither one of module's own tensors nor (before a dot) one of its children."""
    found = []
    for key in state_dict:
        if key == extra_key or not key.startswith(prefix):
            continue
        head, dot, _ = key[len(prefix):].partition(".")
        known = module._modules if dot else own
        if head not in known:
            found.append(key)
    return found


def _key_problems(missing_keys, unexpected_keys):
    """The strict-mode messages that lead load_state_dict's error list: missing first, then unexpected."""
    messages = []
    for title, keys in (("Missing", missing_keys), ("Unexpected", unexpected_keys)):
        if keys:
            quoted = ", ".join(f'"{k}"' for k in keys)
            messages.append(f"{title} key(s) in state_dict: {quoted}. ")
    return messages


# ---- the mixin ---------------------------------------------------------------------------------

class _StateDictMixin:
    """state_dict, load_state_dict, their hooks, and the extra-state protocol."""

    def get_extra_state(self):
        """Override (with set_extra_state) to save non-tensor state under '<prefix>_extra_state'."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # -- saving

    def _register_state_dict_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None or a new state_dict."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        return _attach(self._state_dict_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """Like _register_state_dict_hook, but the hook must return None (checked when it runs)."""
        hook._from_public_api = True
        return _attach(self._state_dict_hooks, hook)

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars), before the module's state is saved."""
        return _attach(self._state_dict_pre_hooks, hook)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Put this module's own parameters, persistent buffers and extra state in destination."""
        for name, value in _persistent_state(self).items():
            destination[prefix + name] = value if keep_vars else value.detach()
        if _overrides(self, "get_extra_state"):
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer by dotted name (detached
        unless keep_vars); its _metadata records each module's _version."""
        if args:
            destination, prefix, keep_vars = _merge_positional(args, destination, prefix, keep_vars)
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = _file_version(self, destination, prefix)
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        return _finish_state_dict(self, destination, prefix, local_metadata)

    # -- loading

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs),
        with the module first when with_module."""
        return _attach(self._load_state_dict_pre_hooks, _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook):
        """The public form: the hook receives the module as its first argument."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None; may edit the key lists in place."""
        return _attach(self._load_state_dict_post_hooks, hook)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Copy this module's own entries from state_dict; record missing/unexpected keys and errors."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        own = _persistent_state(self)  # read after the pre-hooks: a lazy module's hook may materialize
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, target in own.items():
            key = prefix + name
            if key in state_dict:
                _load_one(self, name, target, key, state_dict[key], assign, error_msgs)
            elif strict:
                missing_keys.append(key)
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        has_extra = extra_key in state_dict
        if _overrides(self, "set_extra_state"):
            if has_extra:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif has_extra and strict:
            unexpected_keys.append(extra_key)
        if strict:
            unexpected_keys.extend(_unexpected_under(self, state_dict, prefix, own, extra_key))

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from state_dict (or assign them when assign=True);
        returns _IncompatibleKeys, raises RuntimeError listing every problem when strict."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # our own copy: pre-hooks may add or drop entries
        if metadata is not None:
            state_dict._metadata = metadata
        missing_keys, unexpected_keys, error_msgs = [], [], []
        _load_tree(self, state_dict, metadata, assign, missing_keys, unexpected_keys, error_msgs)
        if strict:
            error_msgs[:0] = _key_problems(missing_keys, unexpected_keys)
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)


def _load_tree(root, state_dict, metadata, assign, missing_keys, unexpected_keys, error_msgs):
    """Load root and every submodule, in torch's order: a module's own entries before its children's
    (pre-order), its load post-hooks once all its children are done (post-order).

    Each stack frame is (module, the entries under its prefix, its prefix, an iterator over its
    children); a child only sees the entries under its own prefix."""

    def enter(module, entries, prefix):
        local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
        if assign:
            local_metadata["assign_to_params_buffers"] = assign  # as torch: written into the caller's metadata
        module._load_from_state_dict(entries, prefix, local_metadata, True, missing_keys, unexpected_keys,
                                     error_msgs)
        return module, entries, prefix, iter(module._modules.items())

    stack = [enter(root, state_dict, "")]
    while stack:
        module, entries, prefix, children = stack[-1]
        name, child = next(((n, c) for n, c in children if c is not None), (None, None))
        if child is None:
            stack.pop()
            _finish_load(module, missing_keys, unexpected_keys)
            continue
        child_prefix = f"{prefix}{name}."
        subset = {k: v for k, v in entries.items() if k.startswith(child_prefix)}
        stack.append(enter(child, subset, child_prefix))


def _finish_load(module, missing_keys, unexpected_keys):
    """Run module's load post-hooks; they see (and may edit in place) the running key lists."""
    incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
    for hook in module._load_state_dict_post_hooks.values():
        if hook(module, incompatible) is not None:
            raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not expected to "
                                 "return new values, if incompatible_keys need to be modified, it should be done "
                                 "inplace.")
