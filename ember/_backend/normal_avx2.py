"""torch's AVX2 float32 normal fill (normal_fill_16_AVX2) in NumPy, bit for bit, in few passes.

torch's kernel is Julien Pommier's Cephes-derived log256_ps/sincos256_ps (avx_mathfun.h) on float32
uniforms, every step a float32 operation and GCC contracting its multiply-adds into single-rounding
FMAs. Step for step, each FMA a * b + c is computed here in float64, where the product of two floats
is exact, and rounded once to float32; rounding the float64 sum again is a double rounding in
general, but over the kernel's whole input domain (the 2**24 float32 uniforms k * 2**-24) every
such float64 sum is either exact or not on a float32 halfway point, so the result is the FMA's.
Where a step's result stays in one binade [2**(q-1), 2**q) for every input, it is rounded to float32
in float64 by adding and subtracting 1.5 * 2**(q+28) (whose float64 ulp is that binade's float32 ulp).
tests/test_random_avx2.py checks this against the step-by-step emulation on every input.
"""
import numpy as np

from .mt19937 import fma32

_f32 = np.float32
_f64 = np.float64
_U = "unsafe"


def _c(*values):
    return [float(_f32(v)) for v in values]


_LOG_P = _c(7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
            -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1)
_LOG_Q1, _LOG_Q2 = _c(-2.12194440e-4, 0.693359375)
_DP = [_f32(v) for v in (-0.78515625, -2.4187564849853515625e-4)]
_DP3 = float(_f32(-3.77489497744594108e-8))
_DP_ALL = float(_DP[0]) + float(_DP[1]) + _DP3  # exact: 49 significant bits
_SIN = _c(-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)
_COS = _c(2.443315711809948E-005, -1.388731625493765E-003, 4.166664568298827E-002)
_FOPI = _f32(1.27323954473516)
_TWO_PI_F = _f32(2.0 * np.pi)
_SIGN = np.int32(-1 << 31)  # the float32 sign bit


def _magic(q):
    """K such that (t + K) - K rounds t to float32 when t lies in [2**(q-1), 2**q) (in magnitude)."""
    return 1.5 * 2.0 ** (q + 28)


# the constant-binade steps (their results' binades, measured over every input): cos's first two
# FMAs (2**-10.., 2**-5..), sin's first two (2**-7.., 2**-3..), the log polynomial's last
_KC1, _KC2, _KS1, _KS2, _KP8 = _magic(-9), _magic(-4), _magic(-6), _magic(-2), _magic(-1)


def radius(u1, scale=0):
    """sqrt(-2 * log256_ps(u1)) for float32 u1 = 1 - u (u a uniform), given as u1 * 2**scale (exact):
    writes over it, returns it. The exponent/mantissa split keeps log256_ps's (x in
    [sqrt(1/2) - 1, sqrt(2) - 1), e adjusted)."""
    n = u1.shape
    ix = u1.view(np.int32)
    ix += np.int32(0x3F800000 - 0x3F3504F3)  # mantissas below sqrt(1/2) stay in the lower binade
    e = np.right_shift(ix, 23)
    e -= 127 + scale
    e = e.astype(_f32)
    ix &= 0x7FFFFF
    ix += 0x3F3504F3
    x = ix.view(_f32)
    x -= _f32(1)
    X = x.astype(_f64)
    t = np.multiply(X, _LOG_P[0])
    t += _LOG_P[1]
    y = np.empty(n, _f32)
    Y = np.empty(n)
    for c in _LOG_P[2:-1]:  # Horner's FMAs whose results span two binades: round through float32
        np.copyto(y, t, casting=_U)
        np.copyto(Y, y)
        np.multiply(Y, X, out=t)
        t += c
    np.copyto(y, t, casting=_U)
    np.copyto(Y, y)
    Y *= X
    Y += _LOG_P[-1] + _KP8
    Y -= _KP8
    Y *= X  # y * x: exact in float64, then rounded
    np.copyto(y, Y, casting=_U)
    np.copyto(Y, y)
    z = np.multiply(x, x)  # z = x * x, rounded
    np.copyto(t, z)
    Y *= t  # y * z + e * q1 (e * q1 rounded first)
    np.multiply(e, _f32(_LOG_Q1), out=y)
    np.copyto(t, y)
    Y += t
    np.copyto(y, Y, casting=_U)
    z *= _f32(0.5)
    y -= z
    x += y
    np.multiply(e, _f32(_LOG_Q2), out=y)  # exact: the FMA adds it once
    x += y
    x *= _f32(-2)
    return np.sqrt(x, out=x)


def _poly_times_z(Z, coef, k1, k2, out):
    """(coef[0]*z^2 + coef[1]*z + coef[2]) * z in float64 `out`, each added coefficient rounded through its magic
    constant as the kernel's float32 FMAs round it (the cosine and sine polynomials of sincos share this shape)."""
    np.multiply(Z, coef[0], out=out)
    out += coef[1] + k1
    out -= k1
    out *= Z
    out += coef[2] + k2
    out -= k2
    out *= Z
    return out


def sincos(theta):
    """sincos256_ps for float32 theta in [0, 2*pi): (sin, cos). Reduction by j * pi/4 in three parts,
    the two polynomials, then the kernel's octant selection and sign flips."""
    j = np.multiply(theta, _FOPI).astype(np.int32)
    j += 1
    j &= ~1
    # x = theta + j * DP1 + j * DP2 (float32 steps that are exact) + j * DP3 (an FMA): the three parts are
    # one float64 constant, j times it exact in float64, so x is theta + j * (DP1 + DP2 + DP3) rounded once
    T = j.astype(_f64)
    T *= _DP_ALL
    X = theta.astype(_f64)
    X += T
    x = X.astype(_f32)
    np.copyto(X, x)
    z = np.multiply(x, x)
    Z = z.astype(_f64)
    C = _poly_times_z(Z, _COS, _KC1, _KC2, out=T)
    c = C.astype(_f32)
    np.copyto(C, c)
    C -= 0.5
    C *= Z  # c * z - z / 2 as (c - 1/2) * z: two float64 roundings, checked to agree on every input
    np.copyto(c, C, casting=_U)
    c += _f32(1)
    S = _poly_times_z(Z, _SIN, _KS1, _KS2, out=np.empty_like(Z))
    s = S.astype(_f32)
    np.copyto(S, s)
    S *= X
    S += X  # s * x + x
    np.copyto(s, S, casting=_U)
    # octant selection on the bits: where j & 2, sin takes the cosine polynomial and cos the sine's; sin's
    # sign flips where j & 4, cos's where (j + 2) & 4, that is where exactly one of j & 4 and j & 2 is set
    d = s.view(np.int32) ^ c.view(np.int32)
    j <<= 29  # bit 31: j & 4, bit 30: j & 2
    m = j << 1
    m >>= 31  # all ones where j & 2
    d &= m
    j &= _SIGN
    d ^= j
    sin = s.view(np.int32)
    sin ^= d  # the swap and sin's sign
    m &= _SIGN
    d ^= m
    cos = c.view(np.int32)
    cos ^= d  # the swap and cos's sign
    return s, c


_ANGLE_PER_K = _f32(float(_TWO_PI_F) * 2.0 ** -24)  # theta = fl(u * 2pi) = fl(k * this): 2**-24 scales exactly


_HALF_BLOCK = np.dtype((np.void, 32))  # 8 float32 values (or 8 uint32 draws), moved as one item


def normal_fill(k, mean, std, out):
    """normal_fill_16_AVX2 over blocks of 16 float32 uniforms u = k * 2**-24, given by their numerators k
    (the low 24 bits of the draws, uint32, shape (blocks, 16)), into out (float32, the same shape): radii
    from the first 8 of a block (1 - u enters as the integer 2**24 - k, exact in float32), angles from the
    last 8; n * std + mean is one FMA. Radii and angles are gathered into contiguous runs first (half
    blocks moved as single items: a fast copy)."""
    b = k.shape[0]
    halves = np.empty((2, b), dtype=_HALF_BLOCK)  # [first halves..., second halves...] of the blocks
    np.copyto(halves, k.view(_HALF_BLOCK).T)
    k = halves.view(np.int32)  # below 2**24: int32 converts to float32 exactly
    np.subtract(1 << 24, k[0], out=k[0])
    r = radius(k[0].astype(_f32), scale=24)
    theta = k[1].astype(_f32)
    theta *= _ANGLE_PER_K
    sin, cos = sincos(theta)
    w = np.empty((2, 8 * b), dtype=_f32)
    np.multiply(r, cos, out=w[0])
    np.multiply(r, sin, out=w[1])
    if not (std == 1 and mean == 0):
        w = fma32(w, _f32(std), _f32(mean))
    elif r.min() == 0:  # the FMA n * 1 + 0 turns -0 into +0 (products are zero only where the radius is, at u = 0)
        w[w == 0] = 0
    w = w.view(_HALF_BLOCK)
    halves = out.view(_HALF_BLOCK)
    halves[:, 0] = w[0]
    halves[:, 1] = w[1]
