"""torch.cpu.amp: the deprecated CPU spellings of torch.amp.autocast and torch.amp.GradScaler."""
import warnings

from ...amp import autocast as _autocast, GradScaler as _GradScaler
from ... import _dtype as D

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """torch.amp.autocast('cpu', ...), with torch's FutureWarning."""

    def __init__(self, enabled=True, dtype=D.bfloat16, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """torch.amp.GradScaler('cpu', ...), with torch's FutureWarning."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cpu', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
