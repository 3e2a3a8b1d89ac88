"""torch.optim.ASGD: https://pytorch.org/docs/stable/generated/torch.optim.ASGD.html"""
from .. import as_tensor
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_nonnegative, _closure_loss, _init_state,
                        _params_with_grad, _real, _value)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD: decaying step size eta, and a running average `ax` of the iterates after step t0."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_capturable(group)
            lr = _value(group["lr"])
            lambd = group["lambd"]
            alpha = group["alpha"]
            t0 = group["t0"]
            weight_decay = group["weight_decay"]
            for p, grad in _params_with_grad(group, "ASGD does not support sparse gradients"):
                state = self.state[p]
                if len(state) == 0:
                    # eta and mu live in the scalar dtype (float32 by default), so they round like torch's
                    _init_state(state, p, "ax", eta=lr, mu=1.0)
                step_t = state["step"]
                eta = state["eta"]
                mu = state["mu"]
                param, grad, ax = _real(p, grad, state["ax"])
                step_t += 1
                if weight_decay != 0:
                    grad = grad.add(param, alpha=weight_decay)
                eta_value = eta.item()
                param.mul_(1 - lambd * eta_value)
                param.add_(grad, alpha=-eta_value)
                if mu.item() != 1:
                    ax.add_(param.sub(ax).mul_(mu))
                else:
                    ax.copy_(param)
                step = step_t.item()
                # new values pass through a default-dtype tensor, so they round like torch's even after a
                # load_state_dict has cast eta and mu to the parameter's dtype
                eta.copy_(as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
                mu.copy_(as_tensor(1 / max(1, step - t0)))
        return loss
