"""ember.autograd: reverse-mode automatic differentiation (torch.autograd)."""
from . import grad_mode
from . import grad_mode as anomaly_mode  # torch keeps anomaly mode in its own module
from .engine import _is_checkpoint_valid, backward, grad  # noqa: F401
from .function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, once_differentiable
from .grad_mode import (detect_anomaly, enable_grad, inference_mode, is_anomaly_check_nan_enabled,
                        is_anomaly_enabled, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_detect_anomaly, set_grad_enabled)
from . import graph
from . import functional
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # as torch: the names are the functions

from .variable import Variable


def __getattr__(name):
    if name in ("profiler", "forward_ad"):  # torch.autograd.profiler / forward_ad, imported on first use
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")
