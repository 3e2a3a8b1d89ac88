"""ember.utils: data loading (ember.utils.data) and hook handles (ember.utils.hooks), as torch.utils."""
from . import data, hooks  # noqa: F401


def __getattr__(name):
    if name == "_pytree":  # torch.utils._pytree, imported on first use
        from . import _pytree
        return _pytree
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
