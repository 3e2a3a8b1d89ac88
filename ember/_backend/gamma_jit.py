"""torch's CPU sample_gamma per element as a compiled loop: random_draws.standard_gamma's jit counterpart.

The steps are random_draws._gamma_one's (Marsaglia-Tsang, boosted below alpha = 1, torch's float shape
arithmetic for float32 alpha), on 53-bit uniforms the caller drew ahead and the generator's cached double
normal; each float32 operation of the Python loop is a float64 operation rounded to float32 here (exact for one
+, - or /), and log, log1p, sin, cos and pow are the C library's, as Python's math calls. Loaded through
jit.load("gamma_jit") (Note [JIT kernels]); tests/test_random_jit.py holds it to the Python loop bit for bit.
"""
import math

import numba
import numpy as np

_C0331 = float(np.float32(0.0331))
_THIRD = float(np.float32(1.0) / np.float32(3.0))
_TWO_PI = 2.0 * math.pi


@numba.njit(nogil=True, cache=True)
def _f32(x):
    return float(np.float32(x))


@numba.njit(nogil=True, cache=True)
def _one(a, single, u, k, cached, valid):
    """One draw from uniforms u[k:]: (value, next k, cached normal, cache valid, done); done is False when u ran
    out first (the caller then draws more and runs the element again from the state it had)."""
    nu = u.shape[0]
    scale = 1.0
    if a < 1.0:
        if a == 0.0:
            return 0.0, k, cached, valid, True
        if k >= nu:
            return 0.0, k, cached, valid, False
        b = u[k]
        k += 1
        e = _f32(1.0 / a) if single else 1.0 / a
        scale *= (1.0 - b) ** e
        a = _f32(a + 1.0) if single else a + 1.0
    d = _f32(a - _THIRD) if single else a - _THIRD
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            if valid:
                x = cached
                valid = False
            else:
                if k + 2 > nu:
                    return 0.0, k, cached, valid, False
                u1 = u[k]
                u2 = u[k + 1]
                k += 2
                r = math.sqrt(-2.0 * math.log1p(-u2))
                theta = _TWO_PI * u1
                cached = r * math.sin(theta)
                valid = True
                x = r * math.cos(theta)
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        if k >= nu:
            return 0.0, k, cached, valid, False
        w = 1.0 - u[k]
        k += 1
        xx = x * x
        if w < 1.0 - _C0331 * xx * xx:
            return scale * d * v, k, cached, valid, True
        if math.log(w) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v, k, cached, valid, True


@numba.njit(nogil=True, cache=True)
def gamma_fill(alpha, single, out, state, u):
    """out[i] = a Gamma(alpha[i], 1) draw for i from state[0] on, from uniforms u[state[1]:], the cached normal
    state[2] valid when state[3] != 0. Returns when every element is drawn or u runs out before one is; state
    then holds the next element, the next uniform and the cache."""
    i = int(state[0])
    k = int(state[1])
    cached = state[2]
    valid = state[3] != 0.0
    while i < alpha.shape[0]:
        value, k2, cached2, valid2, done = _one(alpha[i], single, u, k, cached, valid)
        if not done:
            break
        out[i] = value
        k = k2
        cached = cached2
        valid = valid2
        i += 1
    state[0] = i
    state[1] = k
    state[2] = cached
    state[3] = 1.0 if valid else 0.0
