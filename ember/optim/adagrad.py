"""torch.optim.Adagrad: https://pytorch.org/docs/stable/generated/torch.optim.Adagrad.html"""
from .. import full_like
from .optimizer import (Optimizer, _check_fused, _check_lr, _check_nonnegative, _closure_loss, _params_with_grad,
                        _real, _step_tensor, _value)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Per-coordinate step sizes from the running sum of squared gradients, with lr_decay per step."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        _check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, epsilon=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, self.param_groups)
        # unlike the other optimizers, Adagrad creates its state eagerly (torch does too)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p):
        state = self.state[p]
        state["step"] = _step_tensor()
        init = self.defaults["initial_accumulator_value"]
        state["sum"] = full_like(p, complex(init, init) if p.is_complex() else init)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _value(group["lr"])
            lr_decay = group["lr_decay"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            for p, grad in _params_with_grad(group):
                if len(self.state[p]) == 0:
                    self._init_state(p)
                state = self.state[p]
                step_t = state["step"]
                step_t += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                clr = lr / (1 + (step_t.item() - 1) * lr_decay)
                param, grad, state_sum = _real(p, grad, state["sum"])
                state_sum.addcmul_(grad, grad, value=1)
                std = state_sum.sqrt()
                std = std + eps if group["differentiable"] else std.add_(eps)  # Note [Differentiable steps]
                param.addcdiv_(grad, std, value=-clr)
        return loss
