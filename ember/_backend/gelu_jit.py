"""GELU's float32 forward and backward, both forms, as compiled loops (numba) of plain float32 arithmetic that LLVM
turns into 8-wide AVX2 code: one pass per element, no table reads (the NumPy path's tables, Note [GELU tables] in
ember/_backend/gelu_numpy.py, take gathers that keep a loop scalar). They agree with the NumPy path to rounding,
not bit for bit (Note [Compiled GELU]). Loaded through jit.load("gelu_jit") (Note [JIT kernels]);
tests/test_gelu_jit.py and tests/test_gelu_tables.py hold them to float64 references and to torch.
"""
import math

import numba
import numpy as np

from .lstm_jit import _exp

# Note [Compiled GELU]: the erf form needs Phi(x). With a = |x|, Q(a) = Phi(-a) = exp(-a^2/2) R(a), where R(a) =
# erfcx(a / sqrt 2) / 2 is smooth and slowly varying (1/2 at 0, ~1 / (a sqrt(2 pi)) for large a), so
# R(a) = t S(t) with t = 1 / (1 + a/4) in (0.23, 1] and S a degree-9 polynomial (coefficients _S, fitted to
# erfcx in float64 by least squares relative to S over a in [0, 13.5], then rounded to float32, each rounding
# absorbed by refitting the lower ones: 1.6e-7 relative, 2.2e-7 with float32 Horner steps). Phi(x) is Q for
# x < 0 and 1 - Q above, so the left tail keeps its relative precision (no 1 + erf cancelling, as torch's does).
# exp(-a^2/2) is computed from a split a = ah + al, ah on a 2^-8 grid (ah^2 exact in float32):
# exp(-ah^2/2) * exp(-al (a + ah)/2), the second factor from three Taylor terms (|al (a + ah)/2| < 0.03); a
# single float32 -a^2/2 would carry an absolute error up to a^2 2^-25 into the exponent (4e-6 relative at a = 12).
# Measured over [-13, 13] and 10^5 normal values: x Phi(x) within 5e-7 relative (torch's float32: 5e-2 at
# x = -5), Phi + x phi (the backward) within 2.5e-7 absolute (torch's 2.6e-7). Q turns 0 from a = 13.22 (exp's
# argument below -87.3; Q is subnormal from 13.0), as a = 13.5, where every larger |x| is clamped.
# The tanh form is x sigmoid(v), v = 2u = x (k1 + k2 x^2), sigmoid from e = exp(-|v|) <= 1 as in the LSTM's
# cell: the NumPy path's x / (1 + exp(-2u)) with the same one exp. 256x1024 on one thread (2-core AMD EPYC,
# AVX2), tables -> these: erf forward 806 -> 414 us, backward 692 -> 431 (torch 331 and 587); tanh form 825 -> 280
# and 586 -> 362 (torch 1,041 and 1,100).
_F = np.float32
_AMAX = _F(13.5)
_SPLIT = _F(1.5 * 2 ** 15)  # adding and subtracting it rounds a (< 2^15) to a multiple of 2^-8
_INV_C = _F(0.25)
_S = tuple(_F(c) for c in (0.01838752254843712, -0.07218930125236511, 0.07275966554880142, 0.0016016808804124594,
                           0.03394712135195732, 0.07583107799291611, 0.07554824650287628, 0.09479553252458572,
                           0.09957455843687057, 0.09974391758441925))  # highest degree first
_INV_SQRT_2PI = _F(1 / math.sqrt(2 * math.pi))
_K1 = _F(2 * math.sqrt(2 / math.pi))  # v = 2u = x (_K1 + _K2 x^2)
_K2 = _F(2 * math.sqrt(2 / math.pi) * 0.044715)
_K3 = _F(3 * 2 * math.sqrt(2 / math.pi) * 0.044715)  # v' = _K1 + _K3 x^2
_ONE, _HALF, _SIXTH, _ZERO = _F(1), _F(0.5), _F(1 / 6), _F(0)
_CONTRACT = {"contract"}  # a * b + c as one FMA where LLVM can


@numba.njit(inline="always", error_model="numpy", fastmath=_CONTRACT)
def _tail(a):
    """(Phi(-a), exp(-a^2/2)) for 0 <= a <= _AMAX (NaN gives NaN)."""
    ah = (a + _SPLIT) - _SPLIT
    al = a - ah
    w = -_HALF * al * (a + ah)
    e = _exp(-_HALF * ah * ah) * (_ONE + w * (_ONE + w * (_HALF + w * _SIXTH)))
    t = _ONE / (_ONE + a * _INV_C)
    s = _S[0]
    for c in _S[1:]:
        s = s * t + c
    return e * (t * s), e


@numba.njit(inline="always", error_model="numpy")
def _clamped_abs(x):
    a = abs(x)
    return _AMAX if a > _AMAX else a  # NaN stays NaN


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_CONTRACT)
def erf_forward(x, out):
    """out = x Phi(x); x = inf gives inf, -inf gives -inf * 0 = NaN (torch's)."""
    for i in range(x.shape[0]):
        v = x[i]
        q, e = _tail(_clamped_abs(v))
        out[i] = v * (q if v < _ZERO else _ONE - q)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_CONTRACT)
def erf_backward(g, x, out):
    """out = g (Phi(x) + x phi(x)); +-inf gives NaN (inf * 0, torch's)."""
    for i in range(x.shape[0]):
        v = x[i]
        q, e = _tail(_clamped_abs(v))
        out[i] = g[i] * ((q if v < _ZERO else _ONE - q) + v * e * _INV_SQRT_2PI)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_CONTRACT)
def tanh_forward(x, out):
    """out = x sigmoid(v) (= x (1 + tanh u) / 2) as x / (1 + e) or x e / (1 + e), one rounding in the quotient
    as the NumPy path's x / (1 + exp(-v)); v = +-inf where x^2 overflows: x, or -0 for x < 0."""
    for i in range(x.shape[0]):
        v = x[i]
        z = v * (_K1 + _K2 * v * v)
        e = _exp(-abs(z))
        out[i] = (v if z >= _ZERO else v * e) / (_ONE + e)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_CONTRACT)
def tanh_backward(g, x, out):
    """out = g (s + x v' s (1 - s)), s = sigmoid(v), s and 1 - s from one e = exp(-|v|) (1 - s would cancel);
    NaN where x^2 overflows (inf * 0), as torch's."""
    for i in range(x.shape[0]):
        v = x[i]
        x2 = v * v
        z = v * (_K1 + _K2 * x2)
        e = _exp(-abs(z))
        r = _ONE / (_ONE + e)
        er = e * r
        s = r if z >= _ZERO else er
        sm = er if z >= _ZERO else r
        out[i] = g[i] * (s + v * (_K1 + _K3 * x2) * s * sm)
