"""torch's AVX2 float32 normal fill (normal_fill_16_AVX2) in NumPy, bit for bit, in few passes.

torch's kernel is Julien Pommier's Cephes-derived log256_ps/sincos256_ps (avx_mathfun.h) on float32
uniforms, every step a float32 operation and GCC contracting its multiply-adds into single-rounding
FMAs. Step for step, each FMA a * b + c is computed here in float64, where the product of two floats
is exact, and rounded once to float32; rounding the float64 sum again is a double rounding in
general, but over the kernel's whole input domain (the 2**24 float32 uniforms k * 2**-24) every
such float64 sum is either exact or not on a float32 halfway point, so the result is the FMA's.
Where a step's result stays in one binade [2**(q-1), 2**q) for every input, it is rounded to float32
in float64 by adding and subtracting 1.5 * 2**(q+28) (whose float64 ulp is that binade's float32 ulp).
The ~100 passes run over sub-blocks of at most _SUB radii and angles in two buffers allocated once per
call (Note [Normal fill passes]).
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
_LOG_Q1, _LOG_Q2 = _f32(-2.12194440e-4), _f32(0.693359375)
_DP = [_f32(v) for v in (-0.78515625, -2.4187564849853515625e-4)]
_DP3 = float(_f32(-3.77489497744594108e-8))
_DP_ALL = float(_DP[0]) + float(_DP[1]) + _DP3  # exact: 49 significant bits
_SIN = _c(-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)
_COS = _c(2.443315711809948E-005, -1.388731625493765E-003, 4.166664568298827E-002)
_FOPI = _f32(1.27323954473516)
_FOPI_HALF = _FOPI * _f32(0.5)
_TWO_PI_F = _f32(2.0 * np.pi)
_SIGN = np.int32(-1 << 31)  # the float32 sign bit
_SQRT_HALF_BITS = 0x3F3504F3  # float32 sqrt(1/2): log256_ps's mantissa split


def _magic(q):
    """K such that (t + K) - K rounds t to float32 when t lies in [2**(q-1), 2**q) (in magnitude)."""
    return 1.5 * 2.0 ** (q + 28)


# the constant-binade steps (their results' binades, measured over every input): cos's first two
# FMAs (2**-10.., 2**-5..), sin's first two (2**-7.., 2**-3..), the log polynomial's last
_KC1, _KC2, _KS1, _KS2, _KP8 = _magic(-9), _magic(-4), _magic(-6), _magic(-2), _magic(-1)
# the cosine (row 0) and sine (row 1) polynomials run as one (2, n) array: coefficients as columns
_CS0 = np.array([[_COS[0]], [_SIN[0]]])
_CS1 = np.array([[_COS[1] + _KC1], [_SIN[1] + _KS1]])
_CS1K = np.array([[_KC1], [_KS1]])
_CS2 = np.array([[_COS[2] + _KC2], [_SIN[2] + _KS2]])
_CS2K = np.array([[_KC2], [_KS2]])
_TAIL_ADD = np.array([[-0.5], [1.0]])

_SUB = 131072  # radii (and angles) per sub-block: two pieces of random_draws._CHUNK draws (Note [Normal fill passes])

# Note [Normal fill passes]: randn(1_000_000) float32 is ~100 NumPy passes over 500,000 radii and 500,000
# angles, ~0.2 ns per element for a float32 or int32 pass and ~0.33 ns for a float64 one over 32,768
# elements, the NumPy call's ~1-1.5 us included: ~13 ms of CPU time against ~4 ms for the draws and ~4-6 ms
# for torch's whole randn (2 cores, AMD EPYC, loaded, 2026-11-28). Smaller sub-blocks that stay in L2 were
# not faster (8,192: +30%, the calls' overhead), nor was reusing one thread's buffers across calls against
# allocating them per call (within 4%). Ufunc calls that cast on the fly (a float32 operand into a float64
# loop, a float64 result into a float32 `out`) cost more than the cast as a pass of its own (~0.6 ns
# against 0.2 + 0.3), so every rounding is an explicit copyto. What shortens the time is the threads:
# random_draws._blocks fills what is drawn on the intra-op threads while this thread draws. Sub-blocks of
# 131,072 (~9 MB of temporaries) keep the NumPy calls long enough for two threads to share the GIL (Note
# [Streamed work] in parallel.py); on one thread 32,768, 65,536 and 131,072 take the same time (within 4%).


def _radius(x, scale, f, d):
    """sqrt(-2 * log256_ps(u1)) for float32 u1 = 1 - u (u a uniform), given as x = u1 * 2**scale (exact):
    writes over x, returns it. f: four float32 rows, d: two float64 rows (temporaries). The exponent/mantissa
    split keeps log256_ps's (x in [sqrt(1/2) - 1, sqrt(2) - 1), e adjusted)."""
    y, z, e1, e2 = f
    X, T = d
    ix = x.view(np.int32)
    # mantissas below sqrt(1/2) move up one binade; the exponent's bias (and the scale) is taken off in the
    # same add: a multiple of 2**23 leaves the mantissa bits alone and shifts out exactly (arithmetic shift)
    ix += np.int32(0x3F800000 - _SQRT_HALF_BITS - ((127 + scale) << 23))
    ie = e1.view(np.int32)
    np.right_shift(ix, 23, out=ie)
    np.copyto(e2, ie)  # e as float (exact)
    np.multiply(e2, _LOG_Q1, out=e1)  # e * q1, rounded (the FMA's addend)
    e2 *= _LOG_Q2  # exact: the last FMA adds it once
    ix &= 0x7FFFFF
    ix += _SQRT_HALF_BITS
    x -= _f32(1)  # exact (Sterbenz)
    np.copyto(X, x)
    np.multiply(X, _LOG_P[0], out=T)
    T += _LOG_P[1]
    for c in _LOG_P[2:-1]:  # Horner's FMAs whose results span two binades: round through float32
        np.copyto(y, T, casting=_U)
        np.copyto(T, y)
        T *= X
        T += c
    np.copyto(y, T, casting=_U)
    np.copyto(T, y)
    T *= X
    T += _LOG_P[-1] + _KP8
    T -= _KP8
    T *= X  # y * x: exact in float64, then rounded
    np.copyto(y, T, casting=_U)
    np.multiply(x, x, out=z)  # z = x * x, rounded
    np.copyto(T, y)
    np.copyto(X, z)
    T *= X  # y * z + e * q1: the product exact, one rounding
    np.copyto(X, e1)
    T += X
    np.copyto(y, T, casting=_U)
    z *= _f32(0.5)
    y -= z
    x += y
    x += e2
    x *= _f32(-2)
    return np.sqrt(x, out=x)


def _sincos(theta, out, f, d):
    """sincos256_ps for float32 theta in [0, 2*pi) into out (float32, (2, n)): cos in row 0, sin in row 1.
    f: two float32 rows, d: five float64 rows (temporaries; theta may be one of f's). Reduction by j * pi/4
    in three parts, the two polynomials side by side, then the kernel's octant selection and sign flips."""
    hf, xf = f
    P, ZX, T = d[:2], d[2:4], d[4]
    Z, X = ZX
    # the kernel's j = (int(theta * 4/pi) + 1) & ~1 is 2 * int(theta * 2/pi + 1/2) here (halving is exact, and
    # the rounded + 1/2 never reaches the next integer: checked on every input); h = j / 2
    np.multiply(theta, _FOPI_HALF, out=xf)
    xf += _f32(0.5)
    h = hf.view(np.int32)
    np.copyto(h, xf, casting=_U)  # truncation
    # x = theta + j * DP1 + j * DP2 (float32 steps that are exact) + j * DP3 (an FMA): the three parts are
    # one float64 constant, j times it exact in float64, so x is theta + j * (DP1 + DP2 + DP3) rounded once
    np.copyto(T, h)
    T *= 2.0 * _DP_ALL
    np.copyto(X, theta)
    X += T
    np.copyto(xf, X, casting=_U)
    np.copyto(X, xf)
    np.multiply(xf, xf, out=xf)  # z = x * x, rounded
    np.copyto(Z, xf)
    np.multiply(Z, _CS0, out=P)  # (c0 * z + c1) * z + c2 for both, the additions rounded by their magic constants
    P += _CS1
    P -= _CS1K
    P *= Z
    P += _CS2
    P -= _CS2K
    P *= Z  # then times z (rounded)
    np.copyto(out, P, casting=_U)
    np.copyto(P, out)
    # cos: c * z - z / 2 as (c - 1/2) * z, sin: s * x + x as (s + 1) * x: two float64 roundings each, checked
    # to agree with the FMAs on every input
    P += _TAIL_ADD
    P *= ZX
    np.copyto(out, P, casting=_U)
    c, s = out
    c += _f32(1)
    # octant selection on the bits: where j & 2, sin takes the cosine polynomial and cos the sine's; sin's
    # sign flips where j & 4, cos's where (j + 2) & 4, that is where exactly one of j & 4 and j & 2 is set
    dd = xf.view(np.int32)
    np.bitwise_xor(s.view(np.int32), c.view(np.int32), out=dd)
    h <<= 30  # bit 31: j & 4, bit 30: j & 2
    m = T.view(np.int32)[:h.shape[0]]
    np.left_shift(h, 1, out=m)
    m >>= 31  # all ones where j & 2
    dd &= m
    h &= _SIGN
    dd ^= h
    sin = s.view(np.int32)
    sin ^= dd  # the swap and sin's sign
    m &= _SIGN
    dd ^= m
    cos = c.view(np.int32)
    cos ^= dd  # the swap and cos's sign
    return out


def radius(u1, scale=0):
    """sqrt(-2 * log256_ps(u1)) for float32 u1 = 1 - u (u a uniform) given as u1 * 2**scale (exact): writes
    over it, returns it (whole arrays, for tests; the fill runs _radius on sub-blocks)."""
    n = u1.shape[0]
    return _radius(u1, scale, np.empty((4, n), _f32), np.empty((2, n)))


def sincos(theta):
    """sincos256_ps for float32 theta in [0, 2*pi): (sin, cos) (whole arrays, for tests)."""
    n = theta.shape[0]
    out = _sincos(theta, np.empty((2, n), _f32), np.empty((2, n), _f32), np.empty((5, n)))
    return out[1], out[0]


_ANGLE_PER_K = _f32(float(_TWO_PI_F) * 2.0 ** -24)  # theta = fl(u * 2pi) = fl(k * this): 2**-24 scales exactly
_HALF_BLOCK = np.dtype((np.void, 32))  # 8 float32 values (or 8 uint32 draws), moved as one item


def normal_fill(k, mean, std, out):
    """normal_fill_16_AVX2 over blocks of 16 float32 uniforms u = k * 2**-24, given by their numerators k
    (the low 24 bits of the draws, uint32, shape (blocks, 16)), into out (float32, the same shape), in
    sub-blocks of _SUB radii and angles: radii from the first 8 of a block (1 - u enters as the integer
    2**24 - k, exact in float32), angles from the last 8; n * std + mean is one FMA."""
    sub = _SUB // 8
    m = min(k.shape[0], sub) * 8
    f = np.empty(8 * m, _f32)  # the passes' buffers, reused by every sub-block: 8 float32 rows, 5 float64 rows
    d = np.empty(5 * m, _f64)
    for a in range(0, k.shape[0], sub):
        b = min(sub, k.shape[0] - a)
        _fill(k[a:a + b], mean, std, out[a:a + b], f[:64 * b].reshape(8, 8 * b), d[:40 * b].reshape(5, 8 * b))


def _fill(k, mean, std, out, f, d):
    b = k.shape[0]
    # radii and angles gathered into contiguous runs: half blocks moved as single items (a fast copy)
    np.copyto(f[:2].reshape(-1).view(_HALF_BLOCK).reshape(2, b), k.view(_HALF_BLOCK).T)
    kr, ka = f[0].view(np.int32), f[1].view(np.int32)  # below 2**24: int32 converts to float32 exactly
    np.subtract(1 << 24, kr, out=kr)
    r = f[4]
    np.copyto(r, kr)
    theta = f[1]
    np.copyto(theta, ka)
    theta *= _ANGLE_PER_K
    cs = _sincos(theta, f[2:4], f[5:7], d)
    r = _radius(r, 24, (f[0], f[5], f[6], f[7]), d[:2])
    w = f[:2]
    np.multiply(cs, r, out=w)  # (r * cos, r * sin)
    if not (std == 1 and mean == 0):
        w = fma32(w, _f32(std), _f32(mean))
    elif r.min() == 0:  # the FMA n * 1 + 0 turns -0 into +0 (products are zero only where the radius is, at u = 0)
        w[w == 0] = 0
    np.copyto(out.view(_HALF_BLOCK), w.reshape(-1).view(_HALF_BLOCK).reshape(2, b).T)
