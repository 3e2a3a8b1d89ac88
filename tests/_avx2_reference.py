"""The step-by-step emulation of torch's AVX2 float32 normal fill (normal_fill_16_AVX2): every
float32 operation of avx_mathfun.h's log256_ps/sincos256_ps in order, each FMA through fma32 (one
rounding). The oracle tests/test_random_avx2.py holds ember/_backend/normal_avx2.py to, input by input.
"""
import numpy as np

from ember._backend.mt19937 import fma32

_f32 = np.float32
_LOG_P = [_f32(c) for c in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                            1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                            3.3333331174E-1)]
_LOG_Q1 = _f32(-2.12194440e-4)
_LOG_Q2 = _f32(0.693359375)
_SQRTHF = _f32(0.707106781186547524)
_DP = [_f32(c) for c in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)]
_SINCOF = [_f32(c) for c in (-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)]
_COSCOF = [_f32(c) for c in (2.443315711809948E-005, -1.388731625493765E-003, 4.166664568298827E-002)]
_FOPI = _f32(1.27323954473516)
_TWO_PI_F = _f32(2.0 * np.pi)
_HALF = _f32(0.5)
_ONE = _f32(1.0)


def log256(x):
    """log256_ps for x in (0, 1]: exponent/mantissa split, then the degree-9 Cephes polynomial (GCC
    contracts its multiply-adds into FMAs in torch's AVX2 build)."""
    x = np.maximum(x, _f32(1.1754943508222875e-38))
    bits = x.view(np.int32)
    e = ((bits >> 23) - 127).astype(np.float32)
    e += _ONE
    x = ((bits & ~0x7F800000) | 0x3F000000).view(np.float32)
    low = (x < _SQRTHF).astype(np.float32)  # 1 where the mantissa is below sqrt(1/2)
    tmp = x * low
    x = x - _ONE
    e -= low
    x += tmp
    z = x * x
    y = fma32(_LOG_P[0], x, _LOG_P[1])
    for c in _LOG_P[2:]:
        y = fma32(y, x, c)
    y *= x
    y = fma32(y, z, e * _LOG_Q1)
    y -= z * _HALF
    x += y
    x += e * _LOG_Q2  # exact product (9-bit constant times a small integer): the FMA adds it once
    return x


def sincos256(x):
    """sincos256_ps for x >= 0: reduce by multiples of pi/4 (three-part Cody-Waite), two
    polynomials, then the kernel's bitwise selection and sign flips on the float bits."""
    j = (x * _FOPI).astype(np.int32)
    j += 1
    j &= ~1
    y = j.astype(np.float32)
    sign_sin = (j & 4) << 29
    sign_cos = (~(j - 2) & 4) << 29
    poly = ((j & 2) >> 1) - 1  # all ones where the sine takes the sine polynomial
    x = x + y * _DP[0]  # exact products (8- and 11-bit constants times j <= 8): FMA == multiply, add
    x += y * _DP[1]
    x = fma32(y, _DP[2], x)
    z = x * x
    c = fma32(_COSCOF[0], z, _COSCOF[1])
    c = fma32(c, z, _COSCOF[2])
    c *= z
    c = fma32(c, z, -(z * _HALF))
    c += _ONE
    s = fma32(_SINCOF[0], z, _SINCOF[1])
    s = fma32(s, z, _SINCOF[2])
    s *= z
    s = fma32(s, x, x)
    s_part = (s.view(np.int32) & poly).view(np.float32)
    c_part = (c.view(np.int32) & ~poly).view(np.float32)
    sin = c_part + s_part
    cos = (c - c_part) + (s - s_part)
    sin = (sin.view(np.int32) ^ sign_sin).view(np.float32)
    cos = (cos.view(np.int32) ^ sign_cos).view(np.float32)
    return sin, cos


def normal_fill_avx2(u, mean, std):
    """normal_fill_16_AVX2 over blocks of 16 float32 uniforms u (shape (blocks, 16)); the final
    n * std + mean is one fused multiply-add (emulated in float64, exact for std == 1)."""
    u1 = _ONE - u[:, :8]
    radius = np.sqrt(_f32(-2.0) * log256(u1))
    theta = _TWO_PI_F * u[:, 8:]
    sin, cos = sincos256(theta)
    out = np.empty(u.shape, dtype=np.float32)
    if std == 1 and mean == 0:
        np.multiply(radius, cos, out=out[:, :8])
        np.multiply(radius, sin, out=out[:, 8:])
        out += _f32(0)  # the FMA n * 1 + 0 turns -0 (the radius at u = 0) into +0
        return out
    out[:, :8] = fma32(radius * cos, _f32(std), _f32(mean))
    out[:, 8:] = fma32(radius * sin, _f32(std), _f32(mean))
    return out
