"""Process-wide switches and small helpers of torch's top-level namespace: the default device,
deterministic-algorithm flags, float32 matmul precision, typename.

ember computes on the CPU with NumPy, which is deterministic and always uses full float32
precision, so the flags are recorded and reported back exactly as torch does, and change
no result.
"""
import warnings

from ._device import device as _device_cls, as_device

__all__ = ["typename", "get_default_device", "set_default_device", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "set_warn_always", "is_warn_always_enabled", "_assert"]


def _assert(condition, message):
    """torch._assert: assert condition, message; a traced value (a torch.fx Proxy) records the check instead."""
    if not hasattr(condition, "_data") and hasattr(type(condition), "__torch_function__"):
        from ._ops._argcheck import torch_function
        return torch_function(_assert, (condition, message), {})
    assert condition, message


def typename(obj):
    """torch.typename: 'torch.FloatTensor' for tensors, else the module-qualified class name."""
    from ._tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


# ---- default device ---------------------------------------------------------------------

_default_device = [None]


def get_default_device():
    """The device factories use when none is given (ember: always the CPU)."""
    return _default_device[0] or as_device("cpu")


def set_default_device(device):
    """Only 'cpu' (or None, to reset) can be set: ember has no other device to allocate on."""
    if device is None:
        _default_device[0] = None
        return
    d = device if isinstance(device, _device_cls) else _device_cls(device)
    if d.type != "cpu":
        raise RuntimeError(f"ember runs on the CPU only; cannot make {d} the default device")
    _default_device[0] = d


# ---- deterministic algorithms ---------------------------------------------------------------

_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Recorded and reported; every ember kernel is deterministic already."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _deterministic["mode"] = mode
    _deterministic["warn_only"] = warn_only


def are_deterministic_algorithms_enabled():
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """0/'default': off, 1/'warn': deterministic with warnings, 2/'error': deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")


def get_deterministic_debug_mode():
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


# ---- float32 matmul precision ---------------------------------------------------------------

_matmul_precision = ["highest", False]  # the precision, and whether a script has set it


def set_float32_matmul_precision(precision):
    """Recorded ('highest', 'high', 'medium'); NumPy's float32 matmul is always 'highest'.
    Other values warn and change nothing, as in torch."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision[0] = precision
    _matmul_precision[1] = True


def get_float32_matmul_precision():
    return _matmul_precision[0]


def _fp32_precision():
    """torch.backends.cuda.matmul.fp32_precision: 'none' until a precision is set, then 'ieee' or 'tf32'."""
    if not _matmul_precision[1]:
        return "none"
    return "ieee" if _matmul_precision[0] == "highest" else "tf32"


_warn_always = [False]


def set_warn_always(b):
    _warn_always[0] = bool(b)


def is_warn_always_enabled():
    return _warn_always[0]
