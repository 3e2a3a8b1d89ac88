"""torch.optim.SparseAdam: https://pytorch.org/docs/stable/generated/torch.optim.SparseAdam.html"""
import math

import numpy as np

from .. import zeros_like
from .._tensor import Tensor
from .optimizer import Optimizer, _closure_loss, _value

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam restricted to the entries a sparse gradient names: moments and parameters elsewhere stay as
    they are (the optimizer for nn.Embedding(sparse=True))."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params, complex_params = [], []
        for gi, group in enumerate(self.param_groups):
            for pi, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse_params.append([gi, pi])
                if p.is_complex():
                    complex_params.append([gi, pi])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if not grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                state["step"] += 1
                _sparse_adam_update(p, grad, state, beta1, beta2, group["eps"], _value(group["lr"]),
                                    group.get("maximize", False))
        return loss


def _sparse_adam_update(p, grad, state, beta1, beta2, eps, lr, maximize):
    """torch's sparse_adam on the coalesced gradient's entries, in its order of operations."""
    grad = grad.coalesce()
    values = grad._values().detach()._data
    if values.size == 0:
        return
    if maximize:
        values = -values
    where = tuple(grad._indices()._data)
    m, v = state["exp_avg"], state["exp_avg_sq"]
    old_m = m._data[where]
    upd_m = (values - old_m) * values.dtype.type(1 - beta1)
    m._data[where] += upd_m
    old_v = v._data[where]
    upd_v = (values * values - old_v) * values.dtype.type(1 - beta2)
    v._data[where] += upd_v
    numer = upd_m + old_m
    denom = np.sqrt(upd_v + old_v) + values.dtype.type(eps)
    step = state["step"]
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    p._data[where] += values.dtype.type(-step_size) * (numer / denom)
    for t in (m, v, p):
        t._version_counter.value += 1
