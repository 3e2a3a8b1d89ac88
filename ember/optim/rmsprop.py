"""torch.optim.RMSprop: https://pytorch.org/docs/stable/generated/torch.optim.RMSprop.html"""
from .. import zeros_like
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_nonnegative, _closure_loss, _init_state,
                        _params_with_grad, _real, _value)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """Divide the gradient by a running RMS (optionally centered by the running mean), with optional momentum."""

    _setstate_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                              capturable=False)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        _check_nonnegative(epsilon=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_capturable(group)
            lr = _value(group["lr"])
            alpha = group["alpha"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            for p, grad in _params_with_grad(group, "RMSprop does not support sparse gradients"):
                state = self.state[p]
                if len(state) == 0:
                    _init_state(state, p, "square_avg")
                    if momentum > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if centered:
                        state["grad_avg"] = zeros_like(p)
                step_t = state["step"]
                step_t += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                param, grad, square_avg = _real(p, grad, state["square_avg"])
                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if centered:
                    (grad_avg,) = _real(state["grad_avg"])
                    grad_avg.lerp_(grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add(eps) if group["differentiable"] else avg.add_(eps)  # Note [Differentiable steps]
                if momentum > 0:
                    (buf,) = _real(state["momentum_buffer"])
                    buf.mul_(momentum).addcdiv_(grad, avg)
                    param.add_(buf, alpha=-lr)
                else:
                    param.addcdiv_(grad, avg, value=-lr)
        return loss
