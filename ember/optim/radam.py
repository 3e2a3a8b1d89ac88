"""torch.optim.RAdam: https://pytorch.org/docs/stable/generated/torch.optim.RAdam.html"""
import math

from .optimizer import (Optimizer, _check_betas, _check_capturable, _check_lr, _closure_loss, _init_state,
                        _params_with_grad, _real, _value)

__all__ = ["RAdam"]


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
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p, grad in _params_with_grad(group, "RAdam does not support sparse gradients"):
                state = self.state[p]
                if len(state) == 0:
                    _init_state(state, p, "exp_avg", "exp_avg_sq")
                param, grad, exp_avg, exp_avg_sq = _real(p, grad, state["exp_avg"], state["exp_avg_sq"])
                step_t = state["step"]
                step_t += 1
                step = step_t.item()
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(param, alpha=weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                update = exp_avg / bias_correction1
                update.mul_(lr)
                # length of the approximated SMA; the adaptive term is used only once it exceeds 5
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    adaptive = exp_avg_sq.sqrt()
                    adaptive.add_(eps).reciprocal_().mul_(bias_correction2 ** 0.5)
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    update.mul_(adaptive).mul_(rect)
                param.sub_(update)
        return loss
