"""torch.autocast / torch.amp.autocast and torch's autocast state functions.

See https://pytorch.org/docs/stable/amp.html. Which op runs in which dtype is in policy.py,
applied by the op wrappers of _dispatch.py; this module only switches the state. ember's
tensors live on the cpu, so only CPU autocast changes results; 'cuda' warns and disables
itself as torch does without CUDA, other device types are recorded and change nothing.
"""
import collections.abc
import functools
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._dispatch import DEFAULT_DTYPES, DEVICE_TYPES, state

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]


def _check_device_type(device_type):
    if device_type not in DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")


def is_autocast_available(device_type):
    """torch.amp.is_autocast_available: whether torch has autocast for this device type."""
    _check_device_type(device_type)
    return device_type in DEFAULT_DTYPES and device_type != "hip"


def is_autocast_enabled(device_type=None):
    """torch.is_autocast_enabled(device_type); without an argument, CUDA's flag (as torch)."""
    if device_type is None:
        device_type = "cuda"
    _check_device_type(device_type)
    if device_type == "cpu":
        return state.cpu
    return state.enabled.get(device_type, False)


def set_autocast_enabled(device_type, enabled=None):
    """torch.set_autocast_enabled(device_type, enabled); set_autocast_enabled(enabled) sets CUDA's."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _check_device_type(device_type)
    if device_type == "cpu":
        state.cpu = bool(enabled)
    else:
        state.enabled[device_type] = bool(enabled)


def get_autocast_dtype(device_type):
    _check_device_type(device_type)
    d = state.dtypes.get(device_type)
    if d is None:
        raise RuntimeError("unsupported scalarType")
    return d


def set_autocast_dtype(device_type, dtype):
    _check_device_type(device_type)
    state.dtypes[device_type] = dtype


def _deprecated(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return state.cpu


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    state.cpu = bool(enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return state.dtypes["cpu"]


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    state.dtypes["cpu"] = dtype


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return state.dtypes["cuda"]


def is_autocast_cache_enabled():
    return state.cache_enabled


def set_autocast_cache_enabled(enabled):
    state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    state.cache.clear()


def autocast_increment_nesting():
    state.nesting += 1
    return state.nesting


def autocast_decrement_nesting():
    state.nesting -= 1
    return state.nesting


class autocast:
    """Context manager and decorator: ops inside run in the dtypes of torch's autocast policy.
    See https://pytorch.org/docs/stable/amp.html#torch.autocast"""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda":
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in (D.bfloat16, D.float16):
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        # leaving the outermost region drops the cached casts of the weights
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            f"Did you mean to use autocast as a context manager? For example:\n"
                            f"    with torch.autocast(device_type=...):\n"
                            f"        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cast(value, device_type, dtype):
    """Floating tensors (float64 excepted) in value, and in containers of it, cast to dtype."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not D.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        if isinstance(value, (list, tuple)):
            return type(value)(iterable)
        return iterable
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom autograd.Function's forward: with cast_inputs, inside an autocast
    region, floating inputs are cast to it and forward runs with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom autograd.Function's backward: runs with forward's autocast state."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
