"""torch.optim.NAdam: https://pytorch.org/docs/stable/generated/torch.optim.NAdam.html"""
from .optimizer import (Optimizer, _check_betas, _check_capturable, _check_lr, _check_nonnegative, _closure_loss,
                        _init_state, _params_with_grad, _real, _value)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Adam with Nesterov momentum and a momentum schedule (momentum_decay); L2 or decoupled weight decay."""

    _setstate_defaults = dict(maximize=False, foreach=None, capturable=False, differentiable=False,
                              decoupled_weight_decay=False)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        _check_nonnegative(momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_capturable(group)
            lr = _value(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            for p, grad in _params_with_grad(group, "NAdam does not support sparse gradients"):
                state = self.state[p]
                if len(state) == 0:
                    _init_state(state, p, "exp_avg", "exp_avg_sq", mu_product=1.0)
                step_t = state["step"]
                mu_product = state["mu_product"]
                param, grad, exp_avg, exp_avg_sq = _real(p, grad, state["exp_avg"], state["exp_avg_sq"])
                step_t += 1
                step = step_t.item()
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(param, alpha=weight_decay)
                # the momentum schedule: mu_t for this step and mu_{t+1} for the look-ahead term
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
                mu_product *= mu  # kept in the scalar dtype (float32 by default), as torch does
                mu_product_value = mu_product.item()
                mu_product_next = mu_product_value * mu_next
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2)
                if group["differentiable"]:  # Note [Differentiable steps]: the scalings as recorded products
                    denom = denom.sqrt().add(eps)
                    param.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product_value)), denom)
                    param.addcdiv_(exp_avg * ((-lr * mu_next) / (1.0 - mu_product_next)), denom)
                    continue
                denom.sqrt_().add_(eps)
                param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product_value))
                param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
        return loss
