"""ember.utils: data loading (ember.utils.data), hook handles (ember.utils.hooks), activation checkpointing
(ember.utils.checkpoint) and DLPack exchange (ember.utils.dlpack), as torch.utils."""
from . import dlpack, hooks  # noqa: F401

# imported on first use (`ember.utils.data`, as `import ember.utils.data`, loads it): data is a sixth of `import
# ember` (its DataLoader workers' multiprocessing and queue modules), and a program that loads none pays nothing
_LAZY = ("data", "checkpoint", "_pytree", "safetensors", "model_zoo")


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
