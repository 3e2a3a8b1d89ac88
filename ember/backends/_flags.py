"""A module whose attributes are flags with torch's defaults and type checks (torch's PropModule): reading
and setting them works as in torch; ember's kernels do not depend on them (see each module's docstring)."""
import contextlib
import sys
import types


class FlagModule(types.ModuleType):
    """Flags live in `_flags` (name -> value); `_checks` maps a flag to its setter name in torch's errors."""

    def __getattr__(self, name):
        flags = self.__dict__.get("_flags", {})
        if name in flags:
            return flags[name]
        raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")

    def __setattr__(self, name, value):
        flags = self.__dict__.get("_flags", {})
        if name in flags:
            setter = self.__dict__.get("_checks", {}).get(name)
            if setter is not None and not isinstance(value, bool):
                raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")
            flags[name] = value
            return
        super().__setattr__(name, value)


def install(module_name, flags, checks=None):
    """Make the named module a FlagModule holding `flags` (a dict of defaults)."""
    module = sys.modules[module_name]
    module.__class__ = FlagModule
    module.__dict__["_flags"] = dict(flags)
    module.__dict__["_checks"] = dict(checks or {})
    return module


@contextlib.contextmanager
def set_for(module, **values):
    """Set flags for the duration of a with-block, restoring them after (torch's backends.*.flags)."""
    old = {k: module._flags[k] for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            module._flags[k] = v
