"""ember.utils: data loading (ember.utils.data), hook handles (ember.utils.hooks) and activation
checkpointing (ember.utils.checkpoint), as torch.utils."""
from . import checkpoint, data, hooks  # noqa: F401


def __getattr__(name):
    if name == "_pytree":  # torch.utils._pytree, imported on first use
        import importlib
        return importlib.import_module("._pytree", __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
