"""The optimizers' array steps (SGD, Adam) as compiled loops (numba): one pass over each parameter where
their NumPy blocks make 6 and 13 (ember/optim/sgd.py and adam.py, _update_block), with the same float
operations in the same order, so the same values bit for bit (no fused multiply-adds: numba contracts
none without fastmath). Loaded through jit.load("optim_jit") (Note [JIT kernels]); tests/test_optim_jit.py
holds them to the NumPy blocks.
"""
import numba
import numpy as np


@numba.njit(nogil=True, cache=True, error_model="numpy")
def sgd(x, g, b, neg_lr, momentum, one_minus_dampening, weight_decay, nesterov):
    """sgd.py's _update_block over whole arrays: b (the momentum buffer), one_minus_dampening and
    weight_decay may be None."""
    for i in range(x.shape[0]):
        d = g[i]
        if weight_decay is not None:
            d = d + x[i] * weight_decay
        if b is not None:
            bi = b[i] * momentum
            if one_minus_dampening is None:
                bi = bi + d
            else:
                bi = bi + d * one_minus_dampening
            b[i] = bi
            if nesterov:
                d = d + bi * momentum
            else:
                d = bi
        x[i] = x[i] + d * neg_lr


@numba.njit(nogil=True, cache=True, error_model="numpy")
def adam(x, g, m, v, w, one_minus_w, beta2, one_minus_beta2, bias_correction2_sqrt, eps, step_size):
    """adam.py's _update_block over whole arrays (lerp_ by torch's two branches on the weight w)."""
    low = abs(w) < 0.5
    for i in range(x.shape[0]):
        gi = g[i]
        t = gi - m[i]
        if low:
            mi = m[i] + t * w
        else:
            mi = gi - t * one_minus_w
        m[i] = mi
        vi = v[i] * beta2 + (gi * one_minus_beta2) * gi
        v[i] = vi
        x[i] = x[i] + (mi * step_size) / (np.sqrt(vi) / bias_correction2_sqrt + eps)
