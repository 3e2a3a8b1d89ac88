"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode; anomaly mode.

The grad mode is one thread-local object read on every op (`_state.enabled`), so the
check costs an attribute load.
"""
import functools
import inspect
import os
import sys
import threading
import traceback
import warnings


class _GradState(threading.local):
    """Grad mode and inference mode, per thread as in torch (a new thread starts with
    grad recording on)."""

    def __init__(self):
        self.enabled = True
        self.inference = False


class _AnomalyState:
    """Anomaly mode is process-wide in torch."""
    __slots__ = ("enabled", "check_nan")


_state = _GradState()
_anomaly = _AnomalyState()
_anomaly.enabled = False
_anomaly.check_nan = True


def is_grad_enabled():
    return _state.enabled


def is_inference_mode_enabled():
    return _state.inference


class _DecoratorContextManager:
    """Usable as `with mode():` and as `@mode()` on functions and generator functions
    (for a generator the mode holds while it runs, not between its yields)."""

    def __call__(self, orig_func):
        func = orig_func
        if isinstance(func, type):
            raise RuntimeError("Cannot decorate classes; it is ambiguous")
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, func):
        @functools.wraps(func)
        def generator(*args, **kwargs):
            gen = func(*args, **kwargs)
            with self.clone():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with self.clone():
                        gen.close()
                    raise
                except BaseException:
                    with self.clone():
                        response = gen.throw(*sys.exc_info())
                else:
                    with self.clone():
                        response = gen.send(request)
        return _stop_iteration_value(generator)

    def clone(self):
        return self.__class__()


def _stop_iteration_value(generator_function):
    """A generator's `return value` survives the wrapping (StopIteration carries it)."""

    @functools.wraps(generator_function)
    def wrapper(*args, **kwargs):
        try:
            return (yield from generator_function(*args, **kwargs))
        except StopIteration as stop:
            return stop.value
    return wrapper


class no_grad(_DecoratorContextManager):
    """Disable gradient recording inside the block."""

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if callable(func) and not isinstance(func, bool):  # bare @no_grad
            self.__init__()
            return self(func)
        return self

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = False

    def __exit__(self, *exc):
        _state.enabled = self.prev


class enable_grad(no_grad):
    """Enable gradient recording inside the block (e.g. inside no_grad)."""

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = True


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off; takes effect immediately, restores on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(mode).__name__}")
        self.prev = _state.enabled
        self.mode = mode
        _state.enabled = mode

    def __call__(self, orig_func):
        _state.enabled = self.prev  # used as a decorator: the mode applies inside func only
        return super().__call__(orig_func)

    def __enter__(self):
        _state.enabled = self.mode

    def __exit__(self, *exc):
        _state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)

    def __repr__(self):
        return f"ember.autograd.grad_mode.set_grad_enabled(mode={self.mode})"


class inference_mode(_DecoratorContextManager):
    """Like no_grad. (torch also marks tensors created inside as inference tensors;
    ember does not: Tensor.is_inference() is always False.)"""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode) and not isinstance(mode, bool):
            self.__init__(True)
            return self(mode)
        return self

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (_state.enabled, _state.inference)
        _state.enabled = not self.mode  # inference_mode(False) turns grad mode on, as torch
        _state.inference = self.mode

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)


# ---- anomaly mode -----------------------------------------------------------------

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def anomaly_trace():
    """The forward call stack, recorded on each node while anomaly mode is on: up to the user's
    call, as torch's (ember's own frames at its end are dropped, however deep the op's path)."""
    if not _anomaly.enabled:
        return None
    frames = traceback.extract_stack()
    while frames and frames[-1].filename.startswith(_EMBER_DIR):
        frames.pop()
    return "".join(traceback.format_list(frames))


def is_anomaly_enabled():
    return _anomaly.enabled


def is_anomaly_check_nan_enabled():
    return _anomaly.check_nan


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.set_anomaly_enabled: switch anomaly mode on or off globally."""
    _anomaly.enabled = bool(enabled)
    _anomaly.check_nan = bool(check_nan)


class detect_anomaly:
    """Record forward tracebacks on nodes and raise when backward produces NaN
    (a context manager only, as in torch)."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        _anomaly.enabled = True
        _anomaly.check_nan = self.check_nan

    def __exit__(self, *exc):
        _anomaly.enabled, _anomaly.check_nan = self.prev


class set_detect_anomaly:
    """Turn anomaly detection on or off now; as a context manager, restore on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        self.mode, self.check_nan = bool(mode), bool(check_nan)
        _anomaly.enabled, _anomaly.check_nan = self.mode, self.check_nan

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _anomaly.enabled, _anomaly.check_nan = self.prev
