"""torch.jit as honest pass-throughs: ember has no TorchScript, so script and trace return the function,
module or class they are given (it then runs eagerly, with the same results), the decorators return what
they decorate, and save/load raise because there is no TorchScript file format to write or read."""
import contextlib
import typing
import warnings

from ..nn.modules.module import Module

Final = typing.Final  # torch.jit.Final is typing.Final too


class ScriptModule(Module):
    """The type of a scripted module in torch. ember's script returns the module itself, so
    `isinstance(m, ember.jit.ScriptModule)` is False for it; old-style code subclassing ScriptModule (with
    @script_method methods) gets a plain Module that runs eagerly."""


class RecursiveScriptModule(ScriptModule):
    """See ScriptModule: named so isinstance checks in user code run; never instantiated by ember."""


class ScriptFunction:
    """The type of a scripted function in torch; ember's script returns the plain function instead."""


class TracedModule(ScriptModule):
    """See ScriptModule: ember's trace returns the module itself."""


TopLevelTracedModule = TracedModule


class Error(RuntimeError):
    """torch.jit.Error (TorchScript's raise): never raised by ember's eager code."""


def _deprecated(name, optimize):
    """torch 2.13's DeprecationWarning for TorchScript entry points (and its FutureWarning for optimize=).
    As in torch, the DeprecationWarning is attributed to the library, so the default filters hide it."""
    warnings.warn(f"`torch.jit.{name}` is deprecated. Please switch to `torch.compile` or `torch.export`.",
                  DeprecationWarning, stacklevel=1)
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with torch.jit.optimized_execution()` "
                      "instead", FutureWarning, stacklevel=3)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """torch.jit.script: returns obj (function, module or class) unchanged; it runs eagerly in ember.
    Warns as torch 2.13 does (TorchScript is deprecated there)."""
    _deprecated("script", optimize)
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-05,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """torch.jit.trace: returns func (function or module) unchanged without running it; calling it later runs
    the Python code eagerly, so data-dependent control flow is followed (a torch trace would freeze it)."""
    _deprecated("trace", optimize)
    if example_inputs is None and not isinstance(example_kwarg_inputs, dict):
        if isinstance(func, Module):
            raise RuntimeError("example_kwarg_inputs should be a dict")
        raise TypeError("trace() of a function needs example_inputs: 'NoneType' object is not iterable")
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-05,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    """torch.jit.trace_module: returns mod unchanged (see trace)."""
    _deprecated("trace_method", optimize)
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    return mod


def script_method(fn):
    """torch.jit.script_method (methods of a ScriptModule subclass): returns fn unchanged, with torch's
    DeprecationWarning."""
    warnings.warn("`torch.jit.script_method` is deprecated. Please switch to `torch.compile` or `torch.export`.",
                  DeprecationWarning, stacklevel=2)
    return fn


def ignore(drop=False, **kwargs):
    """torch.jit.ignore: a marker for the TorchScript compiler; returns the function unchanged (used bare
    or as ignore(drop=...))."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """torch.jit.unused: returns fn unchanged (it still runs eagerly when called)."""
    return fn


def export(fn):
    """torch.jit.export: returns fn unchanged."""
    return fn


def interface(obj):
    """torch.jit.interface: returns the class unchanged (with torch's DeprecationWarning)."""
    warnings.warn("`torch.jit.interface` is deprecated. Please use `torch.compile` instead.", DeprecationWarning,
                  stacklevel=2)
    return obj


def script_if_tracing(fn):
    """torch.jit.script_if_tracing: returns fn unchanged."""
    return fn


def is_scripting():
    """False: ember code never runs inside TorchScript."""
    return False


def is_tracing():
    """False: ember never traces."""
    return False


def annotate(the_type, the_value):
    """torch.jit.annotate: returns the_value (the type is for the TorchScript compiler only)."""
    return the_value


def fork(func, *args, **kwargs):
    """torch.jit.fork: runs func(*args, **kwargs) now (eager torch also runs it synchronously) and returns a
    completed torch.futures.Future of its result."""
    from ..futures import Future
    future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future):
    """torch.jit.wait: the Future's value."""
    return future.wait()


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """A context manager that changes nothing (there is no TorchScript executor)."""
    yield


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """torch.jit.freeze needs a ScriptModule; ember never makes one."""
    raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                       "torch.jit.trace to script your 'nn.Module'. (ember has no TorchScript: its script and "
                       "trace return the module unchanged)")


def _no_format(name):
    return RuntimeError(f"ember has no TorchScript format: torch.jit.{name} cannot write or read TorchScript "
                        "archives. Save the module's state_dict with ember.save and load it into the Python "
                        "module instead.")


def save(m, f, _extra_files=None):
    """Raises: ember has no TorchScript format (use ember.save(module.state_dict(), f))."""
    raise _no_format("save")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Raises: ember has no TorchScript format (use ember.load and module.load_state_dict)."""
    raise _no_format("load")


def __getattr__(name):
    if name == "Future":  # torch.jit.Future is torch.futures.Future (ember.futures loads on first use)
        from ..futures import Future
        return Future
    raise AttributeError(f"module 'ember.jit' has no attribute '{name}'")
