"""torch.distributed.checkpoint.state_dict: model and optimizer state dicts keyed by parameter names (FQNs).

Names are those of the model without its wrappers: DistributedDataParallel's `module.` and the activation
checkpointing wrappers' `_checkpoint_wrapped_module.` are left out, as torch's helpers do, so a checkpoint
loads whether or not the model is wrapped. Optimizer states are keyed by those names instead of indices.
Sharded models (FSDP) do not exist in ember; cpu_offload and broadcast_from_rank0 change nothing here."""
from dataclasses import dataclass

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict", "get_state_dict",
           "set_model_state_dict", "set_optimizer_state_dict", "set_state_dict"]


@dataclass
class StateDictOptions:
    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


_WRAPPED = ("module", "_checkpoint_wrapped_module")  # DDP's and checkpoint_wrapper's attribute


def _clean(name, model):
    """A state-dict key or parameter name of `model` without its wrappers' segments."""
    parts = []
    module = model
    for part in name.split("."):
        child = getattr(module, "_modules", {}).get(part) if module is not None else None
        wrapper = type(module).__name__ in ("DistributedDataParallel", "CheckpointWrapper", "OffloadWrapper")
        if not (wrapper and part in _WRAPPED):
            parts.append(part)
        module = child
    return ".".join(parts)


def _options(options):
    options = options or StateDictOptions()
    if options.flatten_optimizer_state_dict:
        raise NotImplementedError("ember's get_optimizer_state_dict does not flatten (flatten_optimizer_state_dict)")
    return options


def get_model_state_dict(model, *, submodules=None, options=None):
    """model.state_dict() keyed by the unwrapped names (frozen parameters left out with ignore_frozen_params)."""
    options = _options(options)
    frozen = {_clean(n, model) for n, p in model.named_parameters() if not p.requires_grad}
    out = {}
    for key, value in model.state_dict().items():
        name = _clean(key, model)
        if options.ignore_frozen_params and name in frozen:
            continue
        out[name] = value
    return out


def set_model_state_dict(model, model_state_dict, *, options=None):
    """Load an unwrapped-name state dict into `model` (strict as options.strict); the missing and unexpected keys."""
    options = _options(options)
    names = {_clean(k, model): k for k in model.state_dict()}
    mapped = {names.get(k, k): v for k, v in model_state_dict.items()}
    return model.load_state_dict(mapped, strict=options.strict)


def _param_names(model):
    return {id(p): _clean(n, model) for n, p in model.named_parameters(remove_duplicate=False)}


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None):
    """The optimizer's state_dict with parameter names in place of indices (several optimizers: merged)."""
    _options(options)
    optimizers = optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]
    names = _param_names(model)
    state, groups = {}, []
    for optimizer in optimizers:
        sd = optimizer.state_dict()
        index_to_name = {}
        params = [p for g in optimizer.param_groups for p in g["params"]]
        for i, p in enumerate(params):
            index_to_name[i] = names[id(p)]
        for i, value in sd["state"].items():
            state[index_to_name[i]] = value
        for g in sd["param_groups"]:
            g = dict(g)
            g["params"] = [index_to_name[i] for i in g["params"]]
            groups.append(g)
    return {"state": state, "param_groups": groups}


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *, options=None):
    """Load a name-keyed optimizer state dict (get_optimizer_state_dict's form) into the optimizer(s)."""
    _options(options)
    optimizers = optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]
    names = _param_names(model)
    for optimizer in optimizers:
        params = [p for g in optimizer.param_groups for p in g["params"]]
        index_of = {names[id(p)]: i for i, p in enumerate(params)}
        mine = set(index_of)
        groups = []
        for g in optim_state_dict["param_groups"]:
            if mine.intersection(g["params"]):
                g = dict(g)
                g["params"] = [index_of[n] for n in g["params"]]
                groups.append(g)
        state = {index_of[n]: v for n, v in optim_state_dict["state"].items() if n in index_of}
        optimizer.load_state_dict({"state": state, "param_groups": groups})


def get_state_dict(model, optimizers, *, submodules=None, options=None):
    """(get_model_state_dict, get_optimizer_state_dict)."""
    return (get_model_state_dict(model, options=options),
            get_optimizer_state_dict(model, optimizers, options=options))


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict, options=None):
    """set_model_state_dict then set_optimizer_state_dict; the model's missing and unexpected keys."""
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys


def _init_optim_state(optim):
    """Give an optimizer its state (Adam's moments, SGD's momentum buffers...) before a checkpoint loads into it:
    one step on zero gradients at learning rate 0, as torch's helper does. Nothing happens when it has state
    already, or when any parameter has a gradient (a stateless optimizer would then step on it); afterwards
    the gradients are None and the learning rates are back."""
    if optim.state:
        return
    params = [p for group in optim.param_groups for p in group["params"]]
    if any(p.grad is not None for p in params):
        return
    import ember
    for p in params:
        if p.requires_grad:
            p.grad = ember.zeros_like(p)
    rates = [group.get("lr") for group in optim.param_groups]
    for group in optim.param_groups:
        if "lr" in group:
            group["lr"] = ember.tensor(0.0) if isinstance(group["lr"], ember.Tensor) else 0.0
    optim.step()
    for group, rate in zip(optim.param_groups, rates):
        if "lr" in group:
            group["lr"] = rate
    optim.zero_grad(set_to_none=True)
