"""torch.accelerator: ember has no accelerator; scripts fall back to the cpu.

As in a CPU-only torch build: the queries answer (no accelerator, no devices), and everything that
needs a device raises torch's RuntimeError (index setters, synchronize, memory statistics).
"""
import warnings

from ._device import device as _device_cls

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    return False


def current_accelerator(check_available=False):
    return None


def device_count():
    return 0


def synchronize(device=None, /):
    raise RuntimeError(_NONE)


def empty_cache():
    raise RuntimeError(_NONE)


def memory_stats(device_index=None, /):
    """(The memory queries below take torch's signature: (device_index=None, /).)"""
    raise RuntimeError(_NONE)


memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = memory_stats
reset_peak_memory_stats = reset_accumulated_memory_stats = get_memory_info = memory_stats


def current_device_index():
    raise RuntimeError(_NONE)


def current_device_idx():
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /):
    """A no-op for a negative index, as in torch; any real device index needs an accelerator."""
    if isinstance(device, (str, _device_cls)):
        raise RuntimeError("Accelerator expected")
    if not isinstance(device, int) or isinstance(device, bool):
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
    if device < 0:
        return
    raise RuntimeError(_NONE)


def set_device_idx(device, /):
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    return set_device_index(device)


class device_index:
    """Context manager switching the accelerator's device index; `device_index(None)` does nothing."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            raise RuntimeError(_NONE)

    def __exit__(self, *exc_info):
        if self.idx is not None:
            raise RuntimeError(_NONE)
