"""ember.utils: data loading (ember.utils.data), hook handles (ember.utils.hooks) and DLPack exchange
(ember.utils.dlpack), as torch.utils."""
from . import data, dlpack, hooks  # noqa: F401


def __getattr__(name):
    if name == "safetensors":  # ember.utils.safetensors, imported on first use
        import importlib
        return importlib.import_module(".safetensors", __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
