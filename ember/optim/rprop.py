"""torch.optim.Rprop: https://pytorch.org/docs/stable/generated/torch.optim.Rprop.html"""
from .. import full_like
from .optimizer import (Optimizer, _check_capturable, _check_lr, _closure_loss, _init_state, _params_with_grad, _real,
                        _value)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Resilient backprop: per-coordinate step sizes grow by etaplus while the gradient keeps its sign, shrink by
    etaminus when it flips (and that coordinate skips one update); only the gradient's sign is used."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_capturable(group)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p, grad in _params_with_grad(group, "Rprop does not support sparse gradients"):
                state = self.state[p]
                if len(state) == 0:
                    lr = _value(group["lr"])
                    _init_state(state, p, "prev")
                    state["step_size"] = full_like(grad, complex(lr, lr) if p.is_complex() else lr)
                step_t = state["step"]
                step_t += 1
                param, grad, prev, step_size = _real(p, grad, state["prev"], state["step_size"])
                # Note [Differentiable steps]: a clone of prev, which the copy_ below overwrites
                factor = grad.mul(prev.clone() if group["differentiable"] else prev).sign()
                factor.masked_fill_(factor.gt(0), etaplus)
                factor.masked_fill_(factor.lt(0), etaminus)
                factor.masked_fill_(factor.eq(0), 1)
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                # where the sign flipped, forget the gradient: no update now, and no flip detected next time
                grad = grad.clone()
                grad.masked_fill_(factor.eq(etaminus), 0)
                param.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
