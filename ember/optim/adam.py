"""torch.optim.Adam: https://pytorch.org/docs/stable/generated/torch.optim.Adam.html"""
import numpy as np

from .. import _dtype as D
from .. import maximum, zeros_like
from .._tensor import Tensor
from .optimizer import (Optimizer, _blocked_update, _check_betas, _check_capturable, _check_fused, _check_lr,
                        _closure_loss, _init_state, _params_with_grad, _profiling, _real, _step_tensor, _value)

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
            fast = not _profiling() and not group["differentiable"]  # array fast paths record no graph
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
                if fast and weight_decay == 0 and not amsgrad and _plain(p, grad, state):
                    _count(step_t)
                    _update(p, grad, state, lr, beta1, beta2, eps)
                    continue
                step_t += 1
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                if fast and not amsgrad and _plain(p, grad, state):
                    _update(p, grad, state, lr, beta1, beta2, eps)
                    continue
                param, grad, exp_avg, exp_avg_sq = _real(p, grad, state["exp_avg"], state["exp_avg_sq"])
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                step = step_t.item()
                bias_correction1 = 1 - beta1 ** step
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                if amsgrad:
                    (max_exp_avg_sq,) = _real(state["max_exp_avg_sq"])
                    if group["differentiable"]:
                        max_exp_avg_sq.copy_(maximum(max_exp_avg_sq.clone(), exp_avg_sq))
                    else:
                        maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
                    denom = max_exp_avg_sq.sqrt()
                else:
                    denom = exp_avg_sq.sqrt()
                if group["differentiable"]:  # Note [Differentiable steps]: torch's scalings, on the step tensor
                    step_size_neg = (lr / (1 - beta1 ** step_t)).neg()
                    denom = (denom / ((1 - beta2 ** step_t).sqrt() * step_size_neg)).add_(eps / step_size_neg)
                    param.addcdiv_(exp_avg.clone(), denom)
                    continue
                denom.div_(bias_correction2_sqrt).add_(eps)
                param.addcdiv_(exp_avg, denom, value=-(lr / bias_correction1))
        return loss


def _plain(p, grad, state):
    """Whether a parameter takes _update: float32/float64 parameter, gradient and moments of one dtype
    and shape, the written ones C-contiguous, a float32 step counter."""
    d = p._dtype
    if d is not D.float32 and d is not D.float64:
        return False
    m = state["exp_avg"]
    v = state["exp_avg_sq"]
    shape = p._data.shape
    return (type(grad) is Tensor and not grad.is_sparse and grad._dtype is d and m._dtype is d and v._dtype is d
            and grad._data.shape == shape and m._data.shape == shape and v._data.shape == shape
            and state["step"]._dtype is D.float32
            and p._data.flags.c_contiguous and m._data.flags.c_contiguous  # flat views write through
            and v._data.flags.c_contiguous)


def _count(step_t):
    """step_t += 1 for the float32 step counter, on its 0-d array (the in-place op's value and version)."""
    a = step_t._data
    np.add(a, a.dtype.type(1), out=a)
    step_t._version_counter.value += 1


def _update(p, grad, state, lr, beta1, beta2, eps):
    """One Adam step straight on the arrays: the same operations, in the same order and precision, as
    the general path's lerp_, mul_, addcmul_, sqrt, div_, add_ and addcdiv_ (so the same values), with
    no op dispatch per term, in cache-sized blocks split across the intra-op threads: 1000 elements
    21 vs 30 us, 1M elements 1.4 vs 2.5 ms. Versions are bumped as those ops would."""
    step = float(state["step"]._data)  # already counted by the caller
    f = p._data.dtype.type
    consts = (f(1 - beta1), f(beta2), f(1 - beta2), f((1 - beta2 ** step) ** 0.5), f(eps),
              f(-(lr / (1 - beta1 ** step))))
    m = state["exp_avg"]
    v = state["exp_avg_sq"]
    x = p._data.reshape(-1)
    arrays = (x, grad._data.reshape(-1), m._data.reshape(-1), v._data.reshape(-1))
    w = consts[0]
    _blocked_update(_update_block, arrays, consts, 2, x.size * x.itemsize * 4, "adam", (w, f(1) - w) + consts[1:])
    m._version_counter.value += 1
    v._version_counter.value += 1
    p._version_counter.value += 1


def _update_block(x, g, m, v, t, denom, w, beta2, one_minus_beta2, bias_correction2_sqrt, eps, step_size):
    np.subtract(g, m, out=t)  # lerp_: torch's branch for the weight
    if abs(w) < 0.5:
        t *= w
        m += t
    else:
        t *= 1 - w
        np.subtract(g, t, out=m)
    v *= beta2
    np.multiply(g, one_minus_beta2, out=t)  # addcmul_: (value * g) * g
    t *= g
    v += t
    np.sqrt(v, out=denom)
    denom /= bias_correction2_sqrt
    denom += eps
    np.multiply(m, step_size, out=t)  # addcdiv_: (value * m) / denom
    t /= denom
    x += t
