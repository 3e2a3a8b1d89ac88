"""torch.optim.Adamax: https://pytorch.org/docs/stable/generated/torch.optim.Adamax.html"""
from .. import cat, maximum
from .optimizer import (Optimizer, _check_betas, _check_capturable, _check_lr, _closure_loss, _init_state,
                        _params_with_grad, _real, _value)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adam with the infinity norm: the second moment is an exponentially decayed running max of |grad|."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_capturable(group)
            lr = _value(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            for p, grad in _params_with_grad(group, "Adamax does not support sparse gradients"):
                state = self.state[p]
                if len(state) == 0:
                    _init_state(state, p, "exp_avg", "exp_inf")
                step_t = state["step"]
                step_t += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                param, grad, exp_avg, exp_inf = _real(p, grad, state["exp_avg"], state["exp_inf"])
                exp_avg.lerp_(grad, 1 - beta1)
                norm = grad.abs().add_(eps)
                if group["differentiable"]:  # Note [Differentiable steps]: the maximum as a recorded amax
                    exp_inf.copy_(cat([exp_inf.mul_(beta2).unsqueeze(0), norm.unsqueeze(0)], 0).amax(0))
                else:
                    maximum(exp_inf.mul_(beta2), norm, out=exp_inf)
                bias_correction = 1 - beta1 ** step_t.item()
                param.addcdiv_(exp_avg, exp_inf, value=-(lr / bias_correction))
        return loss
