"""ember.autograd: reverse-mode automatic differentiation (torch.autograd)."""
from .engine import backward, grad
from .function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, once_differentiable
from .grad_mode import (detect_anomaly, enable_grad, inference_mode, is_anomaly_check_nan_enabled,
                        is_anomaly_enabled, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_detect_anomaly, set_grad_enabled)
from . import graph

Variable = None  # replaced by ember.Tensor in ember/__init__.py (torch.autograd.Variable is Tensor)


def __getattr__(name):
    if name in ("gradcheck", "gradgradcheck"):
        from . import gradcheck as _gc
        return getattr(_gc, name)
    if name == "functional":
        import importlib
        return importlib.import_module(".functional", __name__)
    raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")
