"""torch.backends.opt_einsum: ember's einsum contracts through NumPy (its own path optimizer), not the
opt_einsum package, so is_available() is False and the flags, torch's values without that package
(enabled False, strategy None), change no result."""
from ._flags import install, set_for

_module = install(__name__, {"enabled": False, "strategy": None})


def is_available():
    return False


def get_opt_einsum():
    return None


def flags(enabled=None, strategy=None):
    """A with-block with these flag values, restored after; a strategy needs opt_einsum (ValueError, as torch
    without the package)."""
    if strategy is not None:
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {strategy} will not be "
                         "meaningful. torch.einsum will bypass path calculation and simply contract from left to "
                         "right. Please install opt_einsum or unset `strategy`.")
    values = {}
    if enabled is not None:
        values["enabled"] = enabled
    if strategy is not None:
        values["strategy"] = strategy
    return set_for(_module, **values)
