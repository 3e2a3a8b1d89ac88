"""ember.signal: torch.signal's namespace (only its windows submodule, as torch)."""
from . import windows  # noqa: F401

__all__ = ["windows"]
