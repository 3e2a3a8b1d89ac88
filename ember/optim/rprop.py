"""torch.optim.Rprop: https://pytorch.org/docs/stable/generated/torch.optim.Rprop.html"""
from .. import full_like
from .optimizer import (Optimizer, _check_capturable, _check_lr, _closure_loss, _init_state, _params_with_grad, _real,
                        _value)

__all__ = ["Rprop"]


def _step_size_factors(agreement, shrink, grow):
    """Per-coordinate multipliers from sign(grad * prev), in place: grow where the sign held, shrink
    where it flipped, 1 where either was 0. Each mask is taken after the previous fill, as torch does."""
    agreement.masked_fill_(agreement.gt(0), grow)
    agreement.masked_fill_(agreement.lt(0), shrink)
    agreement.masked_fill_(agreement.eq(0), 1)
    return agreement


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
            for p, grad in _params_with_grad(group, "Rprop does not support sparse gradients"):
                self._update(p, grad, group)
        return loss

    def _state_of(self, p, grad, group):
        """p's state; on the first step every coordinate's step size starts at lr (lr + lr*i when complex)."""
        state = self.state[p]
        if not state:
            lr = _value(group["lr"])
            _init_state(state, p, "prev")
            state["step_size"] = full_like(grad, complex(lr, lr) if p.is_complex() else lr)
        return state

    def _update(self, p, grad, group):
        state = self._state_of(p, grad, group)
        state["step"] += 1
        shrink, grow = group["etas"]
        smallest, largest = group["step_sizes"]
        param, grad, prev, sizes = _real(p, grad, state["prev"], state["step_size"])
        # Note [Differentiable steps]: a clone of prev, which the copy_ below overwrites
        seen = prev.clone() if group["differentiable"] else prev
        factors = _step_size_factors(grad.mul(seen).sign(), shrink, grow)
        sizes.mul_(factors).clamp_(smallest, largest)
        # where the sign flipped, forget the gradient: no update now, and no flip detected next time
        grad = grad.clone()
        grad.masked_fill_(factors.eq(shrink), 0)
        direction = grad.sign()
        param.addcmul_(direction, sizes, value=-1)
        prev.copy_(grad)
