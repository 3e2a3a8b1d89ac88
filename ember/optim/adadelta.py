"""torch.optim.Adadelta: https://pytorch.org/docs/stable/generated/torch.optim.Adadelta.html"""
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_nonnegative, _closure_loss, _init_state,
                        _params_with_grad, _real, _value)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Steps scaled by RMS(previous updates) / RMS(gradients), both running averages with rate rho."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(epsilon=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_capturable(group)
            lr = _value(group["lr"])
            rho = group["rho"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            for p, grad in _params_with_grad(group, "Adadelta does not support sparse gradients"):
                state = self.state[p]
                if len(state) == 0:
                    _init_state(state, p, "square_avg", "acc_delta")
                step_t = state["step"]
                step_t += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                param, grad, square_avg, acc_delta = _real(p, grad, state["square_avg"], state["acc_delta"])
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_()
                if group["differentiable"]:  # Note [Differentiable steps]
                    delta = delta.clone()
                delta.div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                param.add_(delta, alpha=-lr)
        return loss
