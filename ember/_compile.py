"""torch.compile as an honest pass-through: ember runs every program eagerly, so a compiled
function is the function itself and a compiled module is torch's OptimizedModule wrapper around
the unchanged module (same calls, same results; state_dict keys gain torch's `_orig_mod.` prefix)."""
from .nn.modules.module import Module

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
# the backends torch 2.13 registers (torch._dynamo.list_backends(exclude_tags=())): all run eagerly here
_BACKENDS = ("aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner", "aot_ts", "cudagraphs",
             "eager", "eager_debug", "eager_noexcept", "inductor", "invoke_subgraph", "openxla", "openxla_eval",
             "pre_dispatch_eager", "ts", "tvm")


class InvalidBackend(RuntimeError):
    """torch._dynamo.exc.InvalidBackend: an unknown backend name."""


class OptimizedModule(Module):
    """What torch.compile returns for a module: a Module holding the original as `_orig_mod` and
    forwarding attribute reads and writes to it. ember calls the original module unchanged."""
    _opt_mod_attributes = {"_orig_mod", "dynamo_ctx", "forward", "_forward", "__dict__",
                           "_super_module_initialized"}

    def __init__(self, mod, dynamo_ctx=None):
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_super_module_initialized", False)
        super().__init__()
        object.__setattr__(self, "_super_module_initialized", True)
        self._orig_mod = mod  # registers the child: parameters appear as `_orig_mod.<name>`
        self.dynamo_ctx = dynamo_ctx
        self.forward = mod.__call__  # hooks of the original module still run, as in torch

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        if self.__dict__.get("_super_module_initialized"):
            self._orig_mod.training = value

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __len__(self):
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __reduce__(self):
        return (self.__class__, (self._orig_mod, self.dynamo_ctx))

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("forward", None)
        return state

    def __setstate__(self, state):
        self.__dict__ = state
        self.forward = self._orig_mod.__call__

    def __dir__(self):
        own = self._orig_mod.__dir__()
        return own + [a for a in super().__dir__() if a not in own]


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None,
            name=None, disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """torch.compile: checks the arguments as torch does, then returns the function unchanged or the
    module wrapped in an OptimizedModule (see module docstring); with model=None, a decorator.
    Inductor `options` are accepted without checking their names (ember has no inductor config)."""
    if model is None:
        def decorator(model):
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
        return decorator
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if isinstance(backend, str) and backend not in _BACKENDS:
        raise InvalidBackend(f"Invalid backend: '{backend}', see `torch._dynamo.list_backends()` for available "
                             "backends.")
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model)
    return model
