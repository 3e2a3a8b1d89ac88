"""torch.optim.RAdam: https://pytorch.org/docs/stable/generated/torch.optim.RAdam.html"""
import math

from .optimizer import (Optimizer, _check_betas, _check_capturable, _check_lr, _closure_loss, _init_state,
                        _params_with_grad, _real, _value)

__all__ = ["RAdam"]

_TRACTABLE_SMA = 5.0  # the adaptive term is trusted only once the SMA length exceeds this


def _sma_length(step, beta2, rho_inf, bias_correction2):
    """rho_t, the length of the simple moving average that the EMA of squares approximates at this step."""
    return rho_inf - 2 * step * (beta2 ** step) / bias_correction2


def _rectification(rho_t, rho_inf):
    """r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)): the variance correction."""
    numerator = (rho_t - 4) * (rho_t - 2) * rho_inf
    denominator = (rho_inf - 4) * (rho_inf - 2) * rho_t
    return math.sqrt(numerator / denominator)


class RAdam(Optimizer):
    """Rectified Adam: plain momentum SGD until the variance estimate is tractable (rho_t > 5)."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                              capturable=False)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_capturable(group)
            lr = _value(group["lr"])
            for p, grad in _params_with_grad(group, "RAdam does not support sparse gradients"):
                self._update(p, grad, group, lr)
        return loss

    def _update(self, p, grad, group, lr):
        state = self.state[p]
        if not state:
            _init_state(state, p, "exp_avg", "exp_avg_sq")
        param, grad, first, second = _real(p, grad, state["exp_avg"], state["exp_avg_sq"])
        state["step"] += 1
        step = state["step"].item()
        beta1, beta2 = group["betas"]
        decay = group["weight_decay"]
        if decay != 0 and group["decoupled_weight_decay"]:
            param.mul_(1 - lr * decay)
        elif decay != 0:
            grad = grad.add(param, alpha=decay)
        first.lerp_(grad, 1 - beta1)
        second.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        update = first / bias_correction1
        update.mul_(lr)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = _sma_length(step, beta2, rho_inf, bias_correction2)
        if rho_t > _TRACTABLE_SMA:
            inverse_rms = second.sqrt()
            inverse_rms.add_(group["eps"]).reciprocal_().mul_(bias_correction2 ** 0.5)
            update.mul_(inverse_rms).mul_(_rectification(rho_t, rho_inf))
        param.sub_(update)
