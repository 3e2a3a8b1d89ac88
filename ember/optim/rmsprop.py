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
            for p, grad in _params_with_grad(group, "RMSprop does not support sparse gradients"):
                self._update(p, grad, group, lr)
        return loss

    def _state_of(self, p, group):
        """p's state, created on its first step: the step counter and square_avg, then the buffers that
        momentum and centering need (torch's key order)."""
        state = self.state[p]
        if not state:
            _init_state(state, p, "square_avg")
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        return state

    @staticmethod
    def _rms(state, grad, group):
        """The eps-guarded root of the running second moment after folding in grad (its variance when
        centered); a new tensor, never a view of the state."""
        keep = group["alpha"]
        square_avg, = _real(state["square_avg"])
        square_avg.mul_(keep).addcmul_(grad, grad, value=1 - keep)
        if group["centered"]:
            mean, = _real(state["grad_avg"])
            mean.lerp_(grad, 1 - keep)
            rms = square_avg.addcmul(mean, mean, value=-1).sqrt_()
        else:
            rms = square_avg.sqrt()
        if group["differentiable"]:  # Note [Differentiable steps]: sqrt's output is saved, so no add_ on it
            return rms.add(group["eps"])
        return rms.add_(group["eps"])

    def _update(self, p, grad, group, lr):
        state = self._state_of(p, group)
        state["step"] += 1
        decay = group["weight_decay"]
        if decay != 0:
            grad = grad.add(p, alpha=decay)
        param, grad = _real(p, grad)
        rms = self._rms(state, grad, group)
        if group["momentum"] > 0:
            velocity, = _real(state["momentum_buffer"])
            velocity.mul_(group["momentum"]).addcdiv_(grad, rms)
            param.add_(velocity, alpha=-lr)
        else:
            param.addcdiv_(grad, rms, value=-lr)
