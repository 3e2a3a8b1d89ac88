"""float32 exp, sigmoid and tanh as compiled loops (numba) that LLVM turns into 8-wide AVX2 code, from 16K elements:
NumPy's float32 exp runs at 1.8-2.6 ns an element here, and 5-10 ns on arrays of 4 MB and more (2-core AMD EPYC,
AVX2; torch's: 0.4-0.8), where this exp takes ~0.5; NumPy's tanh 1.5-3 ns (torch's ~2). Within 1-3 ulp of the
exact value (NumPy's and torch's within 1), so not NumPy's bits. Loaded through jit.load("unary_jit") (Note [JIT kernels]); callers:
ember/_backend/__init__.py's in_pieces (np.exp, np.tanh) and ember/_ops/pointwise.py's sigmoid; tests/test_unary_jit.py
holds them to float64 and to torch.
"""
import numba
import numpy as np

from .lstm_jit import _ONE, _ZERO, _bits_to_float32, _float32_bits, exp_head, reduce_ln2, reduced_exp

_F = np.float32
_LO = _F(-104.0)  # below: exp(x) < 2^-150 rounds to 0
_HI = _F(89.0)  # above: exp(x) > 2^128 is inf (so is exp(89) here: 2^128 * exp(0.3))
_ROUND_BITS = np.int32(0x4B400000)  # the bits of lstm_jit._ROUND (1.5 * 2^23)
_BIAS = np.int32(127)


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def exp32(x):
    """exp(x) for any float32 x: x = k ln 2 + r, exp(r) from lstm_jit.reduced_exp (the LSTM's exp), 2^k applied as
    2^(k//2) * 2^(k - k//2) so that both factors are normal for k in [-150, 128] (subnormal results round once, in
    the last product); inf above _HI, 0 below _LO, NaN stays NaN."""
    t = _LO if x < _LO else x
    t = _HI if t > _HI else t
    p, v = reduced_exp(t)
    n = np.int32(_float32_bits(v) - _ROUND_BITS)  # k as an integer
    n1 = np.int32(n >> np.int32(1))
    s1 = _bits_to_float32(np.int32((n1 + _BIAS) << np.int32(23)))
    s2 = _bits_to_float32(np.int32((n - n1 + _BIAS) << np.int32(23)))
    return (p * s1) * s2


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"contract"})
def exp(x, out):
    for i in range(x.shape[0]):
        out[i] = exp32(x[i])


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"contract"})
def sigmoid(x, out):
    """1 / (1 + e) for x >= 0, e / (1 + e) below, e = exp(-|x|) <= 1: no overflow, and the left tail keeps its
    relative precision (torch's 1 / (1 + exp(-x)) the same way)."""
    for i in range(x.shape[0]):
        v = x[i]
        e = exp32(-abs(v))
        out[i] = (_ONE if v >= _ZERO else e) / (_ONE + e)


_TWO = _F(2)
_TANH_FLAT = _F(9.1)  # from here tanh(x) rounds to +-1 in float32 (1 - tanh(9.1) = 2.5e-8 < 2^-25)
_TANH_SMALL = _F(0.55)  # below: tanh from exp(-2|x|) - 1; above (exp(-2|x|) <= 1/3) from exp(-2|x|)


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def _exp_and_expm1(x):
    """(exp(x), exp(x) - 1) for float32 -18.2 <= x <= 0 from one reduction (lstm_jit.reduce_ln2): x = k ln 2 + r,
    q = exp(r) - 1 = r h(r) (lstm_jit.exp_head: no cancellation near 0), exp(x) = 2^k (1 + q), exp(x) - 1 =
    2^k q + (2^k - 1) (2^k - 1 is exact for k >= -24)."""
    r, v = reduce_ln2(x)
    q = exp_head(r) * r
    s = _bits_to_float32(np.int32((np.int32(_float32_bits(v) - _ROUND_BITS) + _BIAS) << np.int32(23)))  # 2^k
    return s * (_ONE + q), s * q + (s - _ONE)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"contract"})
def tanh(x, out):
    """tanh(|x|) with x's sign, from e = exp(-2|x|) and m = e - 1: -m / (2 + m) below |x| = 0.55 (no cancellation
    near 0, where tanh x ~ x), (1 - e) / (1 + e) above (e <= 1/3: no cancellation near 1); +-1 from |x| = 9.1, NaN
    stays NaN, -0.0 stays -0.0."""
    for i in range(x.shape[0]):
        v = x[i]
        a = abs(v)
        a = _TANH_FLAT if a > _TANH_FLAT else a
        e, m = _exp_and_expm1(-_TWO * a)
        small = a < _TANH_SMALL
        t = (-m if small else _ONE - e) / (_TWO + m if small else _ONE + e)
        out[i] = -t if v < _ZERO else (t if v > _ZERO else v)
