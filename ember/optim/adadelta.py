"""torch.optim.Adadelta: https://pytorch.org/docs/stable/generated/torch.optim.Adadelta.html"""
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_nonnegative, _closure_loss, _init_state,
                        _params_with_grad, _real, _value)

__all__ = ["Adadelta"]


def _mix_in_square(avg, x, rho):
    """avg <- rho * avg + (1 - rho) * x * x, in place."""
    avg.mul_(rho).addcmul_(x, x, value=1 - rho)


def _root(avg, eps):
    """sqrt(avg + eps) as a new tensor: the RMS that the update divides or multiplies by."""
    return avg.add(eps).sqrt_()


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
            for p, grad in _params_with_grad(group, "Adadelta does not support sparse gradients"):
                self._update(p, grad, group, lr)
        return loss

    def _update(self, p, grad, group, lr):
        """One Adadelta step of p; state holds the running mean squares of gradients and of updates."""
        state = self.state[p]
        if not state:
            _init_state(state, p, "square_avg", "acc_delta")
        state["step"] += 1
        rho = group["rho"]
        decay = group["weight_decay"]
        if decay != 0:
            grad = grad.add(p, alpha=decay)
        param, grad, grads_sq, updates_sq = _real(p, grad, state["square_avg"], state["acc_delta"])
        _mix_in_square(grads_sq, grad, rho)
        grad_rms = _root(grads_sq, group["eps"])
        update = _root(updates_sq, group["eps"])
        # Note [Differentiable steps]: sqrt_ saved its output, which the in-place div_ below would overwrite
        if group["differentiable"]:
            update = update.clone()
        update.div_(grad_rms).mul_(grad)
        _mix_in_square(updates_sq, update, rho)
        param.add_(update, alpha=-lr)
