"""torch._dynamo.config: the flags scripts set, with torch 2.13's defaults. ember has no dynamo, so they
are recorded and read back and change nothing; an unknown name raises AttributeError as in torch."""
import sys
import types

_DEFAULTS = {
    "suppress_errors": False, "cache_size_limit": 8, "recompile_limit": 8, "accumulated_cache_size_limit": 256,
    "accumulated_recompile_limit": 256, "verbose": False, "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False, "automatic_dynamic_shapes": True, "assume_static_by_default": True,
    "optimize_ddp": True, "specialize_int": False, "dynamic_shapes": True, "guard_nn_modules": True,
    "inline_inbuilt_nn_modules": True, "force_parameter_static_shapes": True,
}


class _Config(types.ModuleType):
    """A module whose attributes are the known flags only."""

    def __getattr__(self, name):
        flags = self.__dict__["_flags"]
        if name in flags:
            return flags[name]
        raise AttributeError(f"torch._dynamo.config.{name} does not exist")

    def __setattr__(self, name, value):
        if name.startswith("__") or name == "_flags":
            return super().__setattr__(name, value)
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist")
        flags[name] = value


_module = sys.modules[__name__]
_module.__class__ = _Config
_flags = dict(_DEFAULTS)
