"""torch.nn.utils.stateless: call a module with other tensors in place of its parameters and buffers.

The swap writes the given tensors into the owning module's _parameters/_buffers dicts (or as plain
attributes) for the duration of the call and puts the originals back afterwards, also when the
call raises. ember.func.functional_call is the public entry; this module keeps torch's older path.
"""
import contextlib
import warnings

from ..._tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module, parameters_and_buffers):
    """The given dict extended to every name tied to a given one (torch's tie_weights=True)."""
    all_named = {}
    all_named.update(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    names_of = {}
    for name, t in all_named.items():
        names_of.setdefault(id(t), set()).add(name)
    tied = {}
    for names in names_of.values():
        if len(names) > 1:
            for name in names:
                tied[name] = names
    given_tied = [name for name in parameters_and_buffers if name in tied]
    for name in given_tied:
        group = tied[name]
        given_in_group = [n for n in group if n in parameters_and_buffers]
        if len(given_in_group) > 1 and len({id(parameters_and_buffers[n]) for n in given_in_group}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(group)}, which are tied. "
                             f"Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given_tied:
        for other in tied[name]:
            untied[other] = parameters_and_buffers[name]
    return untied


def _swap_tensor(module, name, tensor):
    """Put `tensor` at module.<name> (parameter, buffer or attribute); return what was there."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    params = module._parameters
    buffers = module._buffers
    if name in params:
        orig = params[name]
        if tensor is _MISSING:
            del params[name]
        else:
            params[name] = tensor
        return orig
    if name in buffers:
        orig = buffers[name]
        if tensor is _MISSING:
            del buffers[name]
        else:
            buffers[name] = tensor
        return orig
    orig = getattr(module, name, _MISSING)
    if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        object.__setattr__(module, name, tensor)
    elif orig is not _MISSING:
        object.__delattr__(module, name)
    return orig


def _swap_all(module, tensors, originals):
    """Swap every dotted name of `tensors` into the module tree, recording each original as it goes
    (so that a failure half way restores what was swapped)."""
    for dotted, tensor in tensors.items():
        prefix, _, attr = dotted.rpartition(".")
        owner = module.get_submodule(prefix) if prefix else module
        originals[dotted] = _swap_tensor(owner, attr, tensor)


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    """Within the block, the module reads the given tensors in place of its own."""
    if tie_weights:
        tensors = _untie_named_tensors_map(module, parameters_and_buffers)
    else:
        tensors = parameters_and_buffers
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(valid - set(tensors))
        unexpected = sorted(set(tensors) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                 "\n\t".join(msgs)))
    originals = {}
    try:
        _swap_all(module, tensors, originals)
        yield
    finally:
        current = {}
        _swap_all(module, originals, current)
        # a module that replaced an entry in place during the call hands the new tensor back
        for k in parameters_and_buffers:
            if k in current and current[k] is not _MISSING:
                parameters_and_buffers[k] = current[k]


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Deprecated torch path of torch.func.functional_call (one dict only); warns as torch does."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
