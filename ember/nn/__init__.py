"""ember.nn: Module, Parameter, layers, functional, init, utils (torch.nn)."""
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from . import functional, init, parameter, utils  # noqa: F401


def __getattr__(name):
    """nn.parallel (and nn.DataParallel from it) load on first use: it imports ember.distributed."""
    if name == "attention":  # torch.nn.attention (sdpa_kernel): imported on first use
        import importlib
        return importlib.import_module(".attention", __name__)
    if name in ("parallel", "DataParallel"):
        import importlib
        parallel = importlib.import_module(".parallel", __name__)
        return parallel if name == "parallel" else parallel.DataParallel
    raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")
