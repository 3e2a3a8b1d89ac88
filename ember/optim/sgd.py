"""torch.optim.SGD: https://pytorch.org/docs/stable/generated/torch.optim.SGD.html"""
import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from .optimizer import (Optimizer, _blocked_update, _check_fused, _check_lr, _closure_loss, _params_with_grad,
                        _profiling, _value)

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent with optional (Nesterov) momentum, dampening and L2 weight decay."""

    _setstate_defaults = dict(nesterov=False, maximize=False, foreach=None, differentiable=False, fused=False)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused(fused, foreach, self.param_groups)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            fast = not _profiling() and not group["differentiable"]  # array fast paths record no graph
            lr = _value(group["lr"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            weight_decay = group["weight_decay"]
            nesterov = group["nesterov"]
            for p, grad in _params_with_grad(group):
                buf = None
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if fast and buf is not None and _plain(p, grad, buf):
                        _update(p, grad, buf, lr, momentum, dampening, weight_decay, nesterov)
                        continue
                elif fast and _plain(p, grad, None):
                    _update(p, grad, None, lr, momentum, dampening, weight_decay, nesterov)
                    continue
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                if momentum != 0:
                    if buf is None:
                        buf = grad.detach().clone()
                        state["momentum_buffer"] = buf
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    if nesterov:
                        grad = grad.add(buf, alpha=momentum)
                    else:
                        grad = buf
                p.add_(grad, alpha=-lr)
        return loss


def _plain(p, grad, buf):
    """Whether a parameter takes _update: a float32/float64 parameter, its dense gradient and momentum
    buffer of one dtype and shape, the written ones (parameter, buffer) C-contiguous."""
    d = p._dtype
    if d is not D.float32 and d is not D.float64:
        return False
    shape = p._data.shape
    if not (type(grad) is Tensor and grad._dtype is d and grad._data.shape == shape and not grad.is_sparse
            and p._data.flags.c_contiguous):
        return False
    return buf is None or (buf._dtype is d and buf._data.shape == shape and buf._data.flags.c_contiguous)


def _update(p, grad, buf, lr, momentum, dampening, weight_decay, nesterov):
    """One SGD step straight on the arrays, as torch's foreach step runs per tensor: the general path's
    operations (add with alpha, mul_, add_, add_), in the same order and precision, so the same values,
    with no op dispatch per term, in cache-sized blocks split across the intra-op threads. Versions
    are bumped as those in-place ops would."""
    f = p._data.dtype.type
    damp = None if buf is None or 1 - dampening == 1 else f(1 - dampening)  # as torch: read only with a buffer
    consts = (f(-lr), f(momentum), damp, None if weight_decay == 0 else f(weight_decay), nesterov)
    x = p._data.reshape(-1)
    arrays = (x, grad._data.reshape(-1), None if buf is None else buf._data.reshape(-1))
    # the work given to the thread split is one array's bytes: it splits from 1M float32 elements. Below that the
    # arrays stay in cache and one thread is faster (2-core VM, medians of 15 alternating rounds, 1 vs 2 threads:
    # 401,408 elements 235 vs 341 us, 524,288 278 vs 382, 786,432 even, 1,048,576 620 vs 583, 2M 1982 vs 1318)
    _blocked_update(_update_block, arrays, consts, 2, x.size * x.itemsize, "sgd", consts[:4] + (bool(nesterov),))
    if buf is not None:
        buf._version_counter.value += 2  # mul_, add_
    p._version_counter.value += 1


def _update_block(x, g, b, t, u, neg_lr, momentum, one_minus_dampening, weight_decay, nesterov):
    d = g
    if weight_decay is not None:  # grad.add(p, alpha=weight_decay): weight_decay * p, then the sum
        np.multiply(x, weight_decay, out=t)
        np.add(g, t, out=t)
        d = t
    if b is not None:
        b *= momentum
        if one_minus_dampening is None:  # alpha 1: a plain add
            b += d
        else:
            np.multiply(d, one_minus_dampening, out=u)
            b += u
        if nesterov:  # grad.add(buf, alpha=momentum)
            np.multiply(b, momentum, out=u)
            np.add(d, u, out=u)
            d = u
        else:
            d = b
    out = d if d is t or d is u else t  # p.add_(d, alpha=-lr): -lr * d, then the sum
    np.multiply(d, neg_lr, out=out)
    x += out
