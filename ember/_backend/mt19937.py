"""torch's CPU random streams in NumPy: the mt19937 engine (NumPy's MT19937 bit generator, which
is the same engine) and the transforms torch's CPU kernels apply to its 32-bit outputs.

See Note [Random streams] in ember/random.py. Every function here draws a whole block with one
`random_raw` call and transforms it with array arithmetic, in the order torch draws.
"""
import numpy as np

N = 624
_MASK32 = 0xFFFFFFFF
_f32 = np.float32


def init_genrand(seed):
    """The 624-word key of mt19937 seeded by init_genrand with the low 32 bits of seed (as torch)."""
    key = np.empty(N, dtype=np.uint32)
    x = seed & _MASK32
    key[0] = x
    for j in range(1, N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & _MASK32
        key[j] = x
    return key


def new_engine(key, pos):
    """A NumPy MT19937 whose next output is key[pos] (pos == 624: the key is regenerated first)."""
    bg = np.random.MT19937(0)
    bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
    return bg


def engine_state(bg):
    st = bg.state["state"]
    return st["key"].astype(np.uint32), int(st["pos"])


def u32(bg, n):
    """n outputs of the engine as uint32 (torch's generator->random())."""
    return bg.random_raw(n).astype(np.uint32)


def u64(bg, n):
    """n 64-bit draws, each two outputs with the first as the high word (torch's random64())."""
    r = bg.random_raw(2 * n)
    hi = r[0::2]
    hi <<= np.uint64(32)
    hi |= r[1::2]
    return hi


# ---- uniform reals ------------------------------------------------------------------------------

def uniform_from_bits(bits, digits, np_dtype):
    """(bits & (2**digits - 1)) * 2**-digits in np_dtype (exact): torch's uniform_real on [0, 1)."""
    mask = (1 << digits) - 1
    x = (bits & bits.dtype.type(mask)).astype(np_dtype)
    x *= np_dtype(2.0 ** -digits)
    return x


# ---- normals: the scalar Box-Muller path (double, one value cached) -----------------------------

def box_muller(u):
    """Box-Muller on 53-bit uniforms taken in pairs (u1 angle, u2 radius), interleaved as torch
    returns them: r*cos(theta), then the value it caches, r*sin(theta)."""
    theta = u[0::2] * (2.0 * np.pi)
    r = np.sqrt(-2.0 * np.log1p(-u[1::2]))
    out = np.empty(u.shape[0])
    out[0::2] = r * np.cos(theta)
    out[1::2] = r * np.sin(theta)
    return out


# ---- normals: the vectorized fill (size >= 16, contiguous) --------------------------------------

def normal_fill_f64(u, mean, std):
    """torch's normal_fill_16 over whole blocks of 16 uniforms u (float64, shape (blocks, 16))."""
    u1 = 1.0 - u[:, :8]
    radius = np.sqrt(-2.0 * np.log(u1))
    theta = (2.0 * np.pi) * u[:, 8:]
    out = np.empty_like(u)
    if std == 1 and mean == 0:
        out[:, :8] = radius * np.cos(theta)
        out[:, 8:] = radius * np.sin(theta)
        return out
    out[:, :8] = fma64(radius * np.cos(theta), std, mean)  # GCC contracts `* std + mean`
    out[:, 8:] = fma64(radius * np.sin(theta), std, mean)
    return out


# The AVX2 kernel: Julien Pommier's Cephes-derived log256_ps/sincos256_ps (avx_mathfun.h), every
# operation a float32 operation, emulated step for step so the results are bit-identical.
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


def fma64(a, b, c):
    """float64 fused multiply-add a * b + c with one rounding: Dekker's exact product, TwoSum, and
    the small remainder rounded to odd before the final addition."""
    a = np.asarray(a, dtype=np.float64)
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(np.float64(b))
    perr = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + _add_round_odd(t, perr)


def _split(x):
    """Veltkamp split of x into two halves of 26 bits each (x == hi + lo exactly)."""
    t = x * 134217729.0
    hi = t - (t - x)
    return hi, x - hi


def _add_round_odd(a, b):
    """a + b in float64 rounded to odd (the last bit set when the sum is inexact)."""
    s = np.asarray(a + b, dtype=np.float64)
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    inexact_even = (err != 0) & ((s.view(np.int64) & 1) == 0)
    if inexact_even.any():
        s[inexact_even] = np.nextafter(s[inexact_even], np.where(err > 0, np.inf, -np.inf)[inexact_even])
    return s


_LOW29 = np.int64((1 << 29) - 1)  # the float64 bits below float32's precision
_HALF29 = np.int64(1 << 28)


def fma32(a, b, c):
    """float32 fused multiply-add a * b + c with one rounding. The product of two floats is exact
    in float64 and the sum rounds once there; rounding that to float32 is then exact unless the
    double landed on a float32 halfway point without being exact (rare): those are redone with the
    sum rounded to odd."""
    s = a.astype(np.float64) if isinstance(a, np.ndarray) else np.asarray(b, dtype=np.float64) * a
    if isinstance(a, np.ndarray):
        s *= b
    s += c
    low = s.view(np.int64) & _LOW29
    tie = low == _HALF29
    if tie.any():
        a2 = np.broadcast_to(a, s.shape)[tie]
        b2 = np.broadcast_to(b, s.shape)[tie]
        c2 = np.broadcast_to(c, s.shape)[tie]
        s[tie] = _add_round_odd(np.multiply(a2, b2, dtype=np.float64), np.asarray(c2, dtype=np.float64))
    return s.astype(np.float32)


def _log256(x):
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


def _sincos256(x):
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
    radius = np.sqrt(_f32(-2.0) * _log256(u1))
    theta = _TWO_PI_F * u[:, 8:]
    sin, cos = _sincos256(theta)
    out = np.empty(u.shape, dtype=np.float32)
    if std == 1 and mean == 0:
        np.multiply(radius, cos, out=out[:, :8])
        np.multiply(radius, sin, out=out[:, 8:])
        return out
    out[:, :8] = fma32(radius * cos, _f32(std), _f32(mean))
    out[:, 8:] = fma32(radius * sin, _f32(std), _f32(mean))
    return out
