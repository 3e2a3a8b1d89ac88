"""torch.amp: automatic mixed precision (autocast, GradScaler, custom_fwd/custom_bwd).

See https://pytorch.org/docs/stable/amp.html. The per-op policy is in policy.py.
"""
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
