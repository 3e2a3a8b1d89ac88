"""torch.cuda.amp: the deprecated CUDA spellings of torch.amp. Without CUDA (always, in ember)
autocast and GradScaler warn and disable themselves, as torch does on a CPU-only build."""
import warnings

from ...amp import autocast as _autocast, GradScaler as _GradScaler
from ...amp import custom_bwd as _custom_bwd, custom_fwd as _custom_fwd
from ... import _dtype as D

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]


def amp_definitely_not_available():
    """True: ember has no CUDA."""
    return True


def _deprecated(old, new):
    warnings.warn(f"`torch.cuda.amp.{old}(args...)` is deprecated. Please use `torch.amp.{new}` instead.",
                  FutureWarning, stacklevel=3)


class autocast(_autocast):
    """torch.amp.autocast('cuda', ...), with torch's FutureWarning (and, without CUDA, disabled)."""

    def __init__(self, enabled=True, dtype=D.float16, cache_enabled=True):
        _deprecated("autocast", "autocast('cuda', args...)")
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """torch.amp.GradScaler('cuda', ...), with torch's FutureWarning (and, without CUDA, disabled)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        _deprecated("GradScaler", "GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    _deprecated("custom_fwd", "custom_fwd(args..., device_type='cuda')")
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    _deprecated("custom_bwd", "custom_bwd(args..., device_type='cuda')")
    return _custom_bwd(bwd, device_type="cuda")
