"""ember.utils: data loading (ember.utils.data), hook handles (ember.utils.hooks), activation checkpointing
(ember.utils.checkpoint) and DLPack exchange (ember.utils.dlpack), as torch.utils."""
from . import checkpoint, data, dlpack, hooks  # noqa: F401

_LAZY = ("_pytree", "safetensors")  # torch.utils._pytree, ember.utils.safetensors: imported on first use


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
