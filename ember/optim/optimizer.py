"""torch.optim.Optimizer: parameter groups, per-parameter state, state_dict, hooks.

See https://pytorch.org/docs/stable/optim.html. Subclasses write one `step`; this base
wraps it (once per class) to run under no_grad and to call the step hooks, so no
optimizer repeats that plumbing. ember has one implementation of every update rule:
`foreach` and `fused` are accepted for compatibility and select nothing.
"""
import copy
import functools
import sys
from collections import OrderedDict, defaultdict

import numpy as np

from .. import _dtype as D
from .. import tensor, zeros_like
from .._backend import jit, parallel
from .._tensor import Tensor
from ..autograd.grad_mode import _state as _grad_state
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks an option (such as lr of a custom optimizer) that each group must give."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) -> None or (args, kwargs), before every optimizer's step."""
    return _register(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs), after every optimizer's step."""
    return _register(_global_step_post_hooks, hook)


def _typename(obj):
    """torch.typename: 'torch.DoubleTensor' for tensors, 'module.Qualname' otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = cls.__module__
    if module in ("builtins", "__builtin__", None):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _span(name):
    """torch's record_function span around an optimizer call while a profiler records (else None); the
    recorder is looked up only if ember.profiler was ever imported, so training pays nothing otherwise."""
    recorder = sys.modules.get("ember.profiler._recorder")
    return recorder.begin(name, is_user_annotation=True) if recorder is not None else None


def _profiling():
    """Whether a profiler records now: the optimizers then take their op-by-op path, so the step's updates
    show as ops inside its span as in torch (their array fast paths record nothing)."""
    recorder = sys.modules.get("ember.profiler._recorder")
    return recorder is not None and recorder._state.recording


_BLOCK = 1 << 17  # elements per block of an array update (Adam: measured best of 2^13..2^20: fewer calls, in cache)


def _blocked_update(kernel, arrays, consts, temps, nbytes, compiled=None, compiled_consts=None):
    """kernel(*blocks of arrays, *temporaries, *consts) over the flat arrays (None entries stay None) in
    blocks of _BLOCK elements, the blocks split across the intra-op threads; each thread allocates `temps`
    scratch arrays of one block once. The optimizers' array fast paths (SGD, Adam) run on this. With
    ember[jit] (Note [JIT kernels]), the compiled counterpart optim_jit.<compiled>(*ranges of arrays,
    *compiled_consts) runs instead, one pass per range."""
    x = arrays[0]
    if compiled is not None:
        kernels = jit.load("optim_jit")
        if kernels is not None:
            fn = getattr(kernels, compiled)
            parallel.run(lambda a, b: fn(*(None if v is None else v[a:b] for v in arrays), *compiled_consts),
                         x.size, nbytes)
            return

    def blocks(start, stop):
        scratch = [np.empty(min(_BLOCK, stop - start), dtype=x.dtype) for _ in range(temps)]
        for a in range(start, stop, _BLOCK):
            b = min(stop, a + _BLOCK)
            kernel(*(None if v is None else v[a:b] for v in arrays), *(t[:b - a] for t in scratch), *consts)
    parallel.run(blocks, x.size, nbytes)


def _end_span(evt):
    if evt is not None:
        sys.modules["ember.profiler._recorder"].end(evt)


def _wrap_step(step):
    """Run a subclass's step with hooks, under no_grad (closures re-enable grad themselves)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self.__dict__.get("_in_step"):  # a subclass's step calling super().step(): hooks run once
            return step(self, *args, **kwargs)
        span = _span(f"Optimizer.step#{type(self).__name__}.step")
        try:
            return _hooked_step(step, self, (self, *args), kwargs)
        finally:
            _end_span(span)
    wrapper._ember_wrapped = True
    return wrapper


# Note [Differentiable steps]: with differentiable=True (meta-learning: parameters that are non-leaf tensors, their
# .grad made by backward(create_graph=True)) a step runs with grad mode on, so its updates are recorded in the
# graph. The array fast paths (SGD, Adam) record nothing and are skipped; the op-by-op paths take torch's own
# differentiable variants where torch's differ (a clone of a state that a later in-place op would overwrite, an
# out-of-place add instead of add_, Adam's and NAdam's scalings as tensor products), so the recorded graph, and
# with it the gradient through the step, is torch's (tests/test_optim_differentiable.py).
def _hooked_step(step, self, args, kwargs):
    """step between the pre and post hooks, under no_grad; as in torch, the hooks' args begin with self."""
    for hook in (*_global_step_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()):
        result = hook(self, args, kwargs)
        if result is not None:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), but got "
                                   f"{result}.")
            args, kwargs = result
    differentiable = self.defaults.get("differentiable", False)
    if differentiable.__class__ is not bool:  # torch's step runs under set_grad_enabled(differentiable)
        raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                        f"{_typename(differentiable)}")
    prev = _grad_state.enabled
    _grad_state.enabled = differentiable  # differentiable=True: the update is recorded (Note [Differentiable steps])
    self._in_step = True
    try:
        out = step(*args, **kwargs)
    finally:
        _grad_state.enabled = prev
        self._in_step = False
    self._opt_called = True
    for hook in (*self._optimizer_step_post_hooks.values(), *_global_step_post_hooks.values()):
        hook(self, args, kwargs)
    return out


class Optimizer:
    """Base class of all optimizers: https://pytorch.org/docs/stable/optim.html#torch.optim.Optimizer"""

    # options a group may lack when it comes from an older pickle or state_dict: __setstate__ fills them in
    _setstate_defaults = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_wrapped", False):
            cls.step = _wrap_step(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state = defaultdict(dict)
        self.param_groups = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        for group in self.param_groups:
            for name, default in self._setstate_defaults.items():
                group.setdefault(name, default)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines += [""] * (i > 0) + [f"Parameter Group {i}"]  # torch leaves a blank line between groups
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        return "\n".join(lines) + "\n)"

    # ---- parameter groups -------------------------------------------------------------
    def add_param_group(self, param_group):
        """Append a group; missing options come from defaults. A tensor may be in one group only."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        tensors = []
        names = []
        for p in params:
            if isinstance(p, tuple):  # (name, tensor) pairs from named_parameters()
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}")
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter "
                                 f"{name}")
            param_group.setdefault(name, default)
        if len(tensors) != len(set(tensors)):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                kind = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if not seen.isdisjoint(tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- state_dict -------------------------------------------------------------------
    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}; tensors are not copied."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                if id(p) not in index:
                    index[id(p)] = len(index)
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            out = hook(self, result)
            if out is not None:
                result = out
        return result

    def load_state_dict(self, state_dict):
        """Load a state_dict: saved indices map to this optimizer's parameters in order."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, s in zip(groups, saved_groups):
            if len(g["params"]) != len(s["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        id_map = {}
        for g, s in zip(groups, saved_groups):
            for p, i in zip(g["params"], s["params"]):
                id_map[i] = p
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast_state(param, v, None)
            else:
                state[k] = v
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            new_groups.append(s)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # ---- gradients and steps ----------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Drop (set_to_none) or zero the .grad of every parameter."""
        span = _span(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad")
        try:
            self._zero_grad(set_to_none)
        finally:
            _end_span(span)

    def _zero_grad(self, set_to_none):
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    # ---- hooks ------------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        return _register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        return _register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)


def _register(store, hook, prepend=False):
    handle = RemovableHandle(store)
    store[handle.id] = hook
    if prepend:
        store.move_to_end(handle.id, last=False)
    return handle


def _cast_state(param, value, key):
    """A copy of loaded state: tensors take param's float dtype, except the 'step' counter."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype)
        return value
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_cast_state(param, v, None) for v in value)
    return value


# ---- helpers shared by the optimizers --------------------------------------------------

def _scalar_dtype():
    """dtype of step counters and other scalar state: float64 only when that is the default."""
    return D.float64 if D.get_default_dtype() is D.float64 else D.float32


def _step_tensor(value=0.0):
    """A 0-d counter in _scalar_dtype (torch 2.x stores 'step' as a tensor)."""
    return tensor(value, dtype=_scalar_dtype())


def _value(x):
    """A Python number from a number or a one-element tensor (lr may be a Tensor)."""
    return x.item() if isinstance(x, Tensor) else x


def _real(*tensors):
    """Complex tensors as real views (..., 2) so elementwise rules treat re and im separately."""
    if not any(t.is_complex() for t in tensors):
        return tensors
    from .. import view_as_real
    return tuple(view_as_real(t) if t.is_complex() else t for t in tensors)


def _closure_loss(closure):
    """Evaluate the optional closure with grad enabled, as torch's step does."""
    if closure is None:
        return None
    prev = _grad_state.enabled
    _grad_state.enabled = True
    try:
        return closure()
    finally:
        _grad_state.enabled = prev


def _params_with_grad(group, sparse_error=None):
    """(param, grad) for each parameter of the group that has a gradient, the gradient negated when the group
    maximizes; a sparse gradient raises RuntimeError(sparse_error) when that message is given."""
    for p in group["params"]:
        grad = p.grad
        if grad is None:
            continue
        if sparse_error is not None and grad.is_sparse:
            raise RuntimeError(sparse_error)
        if group["maximize"]:
            grad = -grad
        yield p, grad


def _init_state(state, p, *buffers, **scalars):
    """A parameter's state on its first step, in torch's key order: the 'step' counter, then each named
    0-d scalar (in _scalar_dtype), then a zero buffer like p for each name in buffers."""
    state["step"] = _step_tensor()
    for name, value in scalars.items():
        state[name] = _step_tensor(value)
    for name in buffers:
        state[name] = zeros_like(p)


def _check_nonnegative(**values):
    """torch's 'Invalid <name> value: <value>' ValueError for the first value that is not >= 0 (or is NaN)."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {name} value: {value}")


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_betas(betas, eps, weight_decay):
    _check_nonnegative(epsilon=eps)
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    _check_nonnegative(weight_decay=weight_decay)


def _check_fused(fused, foreach, params_groups):
    """torch's errors for fused=True: real floating parameters only, and not with foreach."""
    if not fused:
        return
    if foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    for group in params_groups:
        for p in group["params"]:
            if not p.is_floating_point():
                raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of "
                                   f"supported devices: ['cpu'] but {p.dtype} and cpu")


def _check_capturable(group):
    """capturable=True is for CUDA graphs; on CPU torch rejects it at step time."""
    if group.get("capturable"):
        raise AssertionError("If capturable=True, params and state_steps must be on supported devices: "
                             "['cuda', 'xpu', 'hpu'].")
