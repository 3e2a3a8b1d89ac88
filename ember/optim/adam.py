"""torch.optim.Adam: https://pytorch.org/docs/stable/generated/torch.optim.Adam.html"""
from .. import maximum, zeros_like
from .._tensor import Tensor
from .optimizer import (Optimizer, _check_betas, _check_capturable, _check_fused, _check_lr, _closure_loss,
                        _init_state, _params_with_grad, _real, _step_tensor, _value)

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (amsgrad, maximize, L2 or decoupled weight decay); AdamW is this with decoupled_weight_decay."""

    _setstate_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                              decoupled_weight_decay=False, fused=None)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        both_float = isinstance(betas[0], float) and isinstance(betas[1], float)
        both_tensor = isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor)
        if not (both_float or both_tensor):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, b in enumerate(betas):
            if isinstance(b, Tensor) and b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, self.param_groups)

    def __setstate__(self, state):
        super().__setstate__(state)
        for s in self.state.values():
            if "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = _step_tensor(float(s["step"]))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_capturable(group)
            lr = _value(group["lr"])
            beta1, beta2 = (_value(b) for b in group["betas"])
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            amsgrad = group["amsgrad"]
            sparse_error = "Adam does not support sparse gradients, please consider SparseAdam instead"
            for p, grad in _params_with_grad(group, sparse_error):
                state = self.state[p]
                if len(state) == 0:
                    _init_state(state, p, "exp_avg", "exp_avg_sq")
                    if amsgrad:
                        state["max_exp_avg_sq"] = zeros_like(p)
                step_t = state["step"]
                step_t += 1
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                param, grad, exp_avg, exp_avg_sq = _real(p, grad, state["exp_avg"], state["exp_avg_sq"])
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                step = step_t.item()
                bias_correction1 = 1 - beta1 ** step
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                if amsgrad:
                    (max_exp_avg_sq,) = _real(state["max_exp_avg_sq"])
                    maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
                    denom = max_exp_avg_sq.sqrt()
                else:
                    denom = exp_avg_sq.sqrt()
                denom.div_(bias_correction2_sqrt).add_(eps)
                param.addcdiv_(exp_avg, denom, value=-(lr / bias_correction1))
        return loss
