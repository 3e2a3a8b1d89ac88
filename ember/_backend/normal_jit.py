"""torch's AVX2 float32 normal fill (normal_fill_16_AVX2) as compiled loops: normal_avx2's jit counterpart.

The steps are those of tests/_avx2_reference.py (log256_ps and sincos256_ps of avx_mathfun.h on float32
uniforms, in order), each float32 operation a float32 operation here and each multiply-add that torch's
build contracts into an FMA a real one (llvm.fma: one rounding, as the vfmadd torch runs), so no step
needs normal_avx2's float64 emulation. The loops run over chunks of _CHUNK radii and angles in small
scratch arrays (each loop simple enough for LLVM to vectorize; the float/int bit casts go through array
views). Loaded through jit.load("normal_jit") (Note [JIT kernels]); tests/test_random_jit.py holds it
to normal_avx2.normal_fill on every radius and every angle input.
"""
import numba
import numpy as np

from . import normal_avx2 as A
from .jit import fma_intrinsic

fma = fma_intrinsic()

_f32 = np.float32
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7, _P8 = (_f32(c) for c in A._LOG_P)
_Q1, _Q2 = _f32(A._LOG_Q1), _f32(A._LOG_Q2)
_SQRTHF = np.array([A._SQRT_HALF_BITS], np.int32).view(np.float32)[0]
_DP1, _DP2, _DP3 = _f32(A._DP[0]), _f32(A._DP[1]), _f32(A._DP3)
_S0, _S1, _S2 = (_f32(c) for c in A._SIN)
_C0, _C1, _C2 = (_f32(c) for c in A._COS)
_FOPI, _TWO_PI = _f32(A._FOPI), _f32(A._TWO_PI_F)
_HALF, _ONE, _ZERO, _M2 = _f32(0.5), _f32(1), _f32(0), _f32(-2)
_SCALE = _f32(2.0 ** -24)

_CHUNK = 512  # radii (and angles) per round of loops: the scratch stays in L1


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _fill(k, out, mean, std):
    """k: the 24-bit numerators (uint32, flat, whole blocks of 16); out: float32, the same length."""
    x = np.empty(_CHUNK, np.float32)
    xi = x.view(np.int32)
    e = np.empty(_CHUNK, np.float32)
    r = np.empty(_CHUNK, np.float32)
    c = np.empty(_CHUNK, np.float32)
    ci = c.view(np.int32)
    s = np.empty(_CHUNK, np.float32)
    si = s.view(np.int32)
    jj = np.empty(_CHUNK, np.int32)
    blocks = k.shape[0] // 16
    per = _CHUNK // 8
    for b0 in range(0, blocks, per):
        m = (min(blocks, b0 + per) - b0) * 8
        for i in range(m):  # radius inputs u1 = 1 - u (exact, >= 2**-24) and angles 2*pi*u
            at = ((b0 + (i >> 3)) << 4) | (i & 7)
            x[i] = _ONE - np.float32(k[at]) * _SCALE
            c[i] = _TWO_PI * (np.float32(k[at + 8]) * _SCALE)
        for i in range(m):  # log256_ps: exponent, and the mantissa moved into [1/2, 1)
            bits = xi[i]
            e[i] = np.float32((bits >> 23) - 127) + _ONE
            xi[i] = (bits & ~0x7F800000) | 0x3F000000
        for i in range(m):  # log256_ps's polynomial, then the radius sqrt(-2 log u1)
            v = x[i]
            ev = e[i]
            low = _ONE if v < _SQRTHF else _ZERO
            tmp = v * low
            v = v - _ONE
            ev -= low
            v += tmp
            z = v * v
            y = fma(_P0, v, _P1)
            y = fma(y, v, _P2)
            y = fma(y, v, _P3)
            y = fma(y, v, _P4)
            y = fma(y, v, _P5)
            y = fma(y, v, _P6)
            y = fma(y, v, _P7)
            y = fma(y, v, _P8)
            y *= v
            y = fma(y, z, ev * _Q1)
            y -= z * _HALF
            v += y
            v += ev * _Q2
            r[i] = np.sqrt(_M2 * v)
        for i in range(m):  # sincos256_ps: reduction by j * pi/4 in three parts, the two polynomials
            th = c[i]
            j = np.int32(th * _FOPI)
            j += 1
            j &= ~1
            jj[i] = j
            yj = np.float32(j)
            v = th + yj * _DP1
            v += yj * _DP2
            v = fma(yj, _DP3, v)
            z = v * v
            cv = fma(_C0, z, _C1)
            cv = fma(cv, z, _C2)
            cv *= z
            cv = fma(cv, z, -(z * _HALF))
            cv += _ONE
            sv = fma(_S0, z, _S1)
            sv = fma(sv, z, _S2)
            sv *= z
            sv = fma(sv, v, v)
            c[i] = cv
            s[i] = sv
        for i in range(m):  # the octant: where j & 2 the two swap; the signs from j & 4 and (j - 2) & 4
            j = jj[i]
            poly = ((j & 2) >> 1) - 1  # all ones where sin takes the sine polynomial
            sb = si[i]
            cb = ci[i]
            si[i] = ((sb & poly) | (cb & ~poly)) ^ ((j & 4) << 29)
            ci[i] = ((cb & poly) | (sb & ~poly)) ^ ((~(j - 2) & 4) << 29)
        for i in range(m):  # n * std + mean, one FMA (it turns the radius-0 products' -0 into +0)
            at = ((b0 + (i >> 3)) << 4) | (i & 7)
            out[at] = fma(r[i] * c[i], std, mean)
            out[at + 8] = fma(r[i] * s[i], std, mean)


def normal_fill(k, mean, std, out):
    """normal_avx2.normal_fill, compiled: k (blocks, 16) uint32 numerators, out (blocks, 16) float32."""
    _fill(k.reshape(-1), out.reshape(-1), _f32(mean), _f32(std))
