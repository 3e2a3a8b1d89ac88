"""Special functions NumPy lacks (erf, erfinv, lgamma, digamma, polygamma, i1, ndtr), vectorized.

Every function takes an array, computes in float64 and returns the input's dtype, except the
float32 paths of ndtr/erfc (see Note [Float32 paths]).
The rational approximations below are our own least-squares/minimax fits, made with
mpmath at 50 digits (Loeb iteration plus Lawson reweighting on Chebyshev nodes); the
comment at each table gives its range and maximum relative error in exact arithmetic.
Float64 results are accurate to a few ulp except next to the zeros of lgamma/digamma
away from 1 and 2, where the absolute error is a few ulp of the terms that cancel.
"""
import math

import numpy as np

_f64 = np.float64
_SQRT_PI = math.sqrt(math.pi)

# erf(x) / x as a polynomial in t = x*x, 0 <= x < 0.5 (rel. error 2e-20); lowest degree first
_ERF_SMALL = (1.1283791670955126, -0.3761263890318375, 0.11283791670954864, -0.02686617064499764,
              0.00522397762197428, -0.0008548326505810305, 0.00012055285869267372,
              -1.4922990233967199e-05, 1.6370954771237805e-06, -1.4618431826896872e-07)
# erfcx(x) = exp(x*x) erfc(x) = P(x) / Q(x), 0.5 <= x < 4 (rel. error 6e-17)
_ERFCX_MID_P = (1.0000000002855465, 1.5079343016542903, 1.1345945599463017, 0.5127321875801173,
                0.14503314774973425, 0.024309857540730652, 0.001909843353297807, -4.3008128477168415e-10)
_ERFCX_MID_Q = (1.0, 2.636313473092601, 3.1093557299952534, 2.1372038590570166, 0.9304274296374062,
                0.25874781286983056, 0.0430887959881012, 0.003385075953871826)
# x erfcx(x) = P(u) / Q(u) with u = 1/(x*x), x >= 4 (rel. error 1e-17)
_ERFCX_BIG_P = (0.5641895835477563, 12.237633245444883, 84.59291179739748, 215.67994031714562,
                172.18363319150293, 19.371571356172524)
_ERFCX_BIG_Q = (1.0, 22.190640171858103, 160.28235236057628, 447.65593681712807, 443.8487002218277,
                104.95199604032021)
# lgamma(2 + z) / z = P(z) / Q(z), -0.5 <= z <= 0.5 (rel. error 7e-19)
_LGAMMA_P = (0.42278433509846713, 0.9513745774211388, 0.7656227487130562, 0.2826300807624409,
             0.04906960746359437, 0.003541667086859705, 6.963401331957299e-05)
_LGAMMA_Q = (1.0, 1.487537479009368, 0.8356346781879626, 0.2194350666412885, 0.02687369685008512,
             0.001307945471872942, 1.5026543377180895e-05)
# Bernoulli numbers B_2 .. B_20 for the Stirling and digamma/polygamma asymptotic series
_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330)
# lgamma(v) ~ (v - 1/2)(log v - 1) + (log(2 pi) - 1)/2 + sum_k B_2k / (2k (2k-1) v^(2k-1))
_STIRLING = tuple(b / ((2 * k + 2) * (2 * k + 1)) for k, b in enumerate(_B2K[:9]))
_STIRLING_CONST = (math.log(2 * math.pi) - 1) / 2
# psi(v) ~ log v - 1/(2v) - sum_k B_2k / (2k v^(2k))
_DIGAMMA_SERIES = tuple(b / (2 * k + 2) for k, b in enumerate(_B2K[:8]))


def _polyval(coeffs, x):
    """sum(coeffs[k] * x**k) by Horner's rule (coefficients lowest degree first)."""
    acc = np.full_like(x, coeffs[-1])
    for c in coeffs[-2::-1]:
        acc *= x
        acc += c
    return acc


def _ratio(p, q, x):
    return _polyval(p, x) / _polyval(q, x)


# Note [Blocks]: each function below makes 20-60 passes over float64 temporaries. On big
# arrays those temporaries fall out of the CPU cache and are fresh (page-faulting) memory each
# time, so the public functions run on blocks of _BLOCK elements (128 KiB of float64, which
# malloc reuses); that is ~3x faster from ~100k elements on and changes no value (the
# functions are elementwise).
_BLOCK = 16384


def _blockwise(f, block=_BLOCK):
    """Apply the elementwise array function f(x, *args) block by block on large inputs."""
    def run(x, *args):
        x = np.asarray(x)
        if x.size <= block:
            return f(x, *args)
        flat = x.reshape(-1)
        outs = None
        for start in range(0, flat.size, block):
            parts = f(flat[start:start + block], *args)
            if type(parts) is not tuple:
                parts = (parts,)
            if outs is None:
                outs = tuple(np.empty(flat.shape, part.dtype) for part in parts)
            for out, part in zip(outs, parts):
                out[start:start + block] = part
        if len(outs) == 1:
            return outs[0].reshape(x.shape)
        return tuple(out.reshape(x.shape) for out in outs)
    run.__name__ = f.__name__
    run.__doc__ = f.__doc__
    return run


def _float64(x):
    return np.asarray(x, dtype=_f64)


def _back(out, x):
    """Cast a float64 result to the input's dtype (no copy for float64)."""
    return out.astype(np.asarray(x).dtype, copy=False)


# ---- error functions ------------------------------------------------------------------
# Note [Branches]: masked gathers (a[mask]) cost ~15 multiplies each, so the cheap branches
# are evaluated on the whole array and picked with where(); only rare ranges (|x| >= 4 for
# erfc) are patched through a mask, and only when present.

def _erf_small(v):
    """erf(v), accurate for |v| < 0.5 (finite, meaningless elsewhere)."""
    return v * _polyval(_ERF_SMALL, v * v)


def _erfcx_pos(a):
    """exp(a*a) * erfc(a) for a >= 0.5 (NaN stays NaN, inf gives 0)."""
    out = _ratio(_ERFCX_MID_P, _ERFCX_MID_Q, np.minimum(a, 4.0))
    big = a >= 4
    if big.any():
        ab = a[big]
        out[big] = _ratio(_ERFCX_BIG_P, _ERFCX_BIG_Q, 1 / (ab * ab)) / ab
    return out


def _erfc_pos(a):
    """erfc(a) for a >= 0.5; the exp underflows to 0 past a ~ 27, as erfc does."""
    return np.exp(-a * a) * _erfcx_pos(a)


@_blockwise
def erf(x):
    v = _float64(x)
    a = np.abs(v)
    tail = np.copysign(1 - _erfc_pos(a), v)
    return _back(np.where(a < 0.5, _erf_small(np.clip(v, -0.5, 0.5)), tail), x)


@_blockwise
def _erfc64(x):
    """erfc in float64 (see erfc)."""
    v = _float64(x)
    a = np.abs(v)
    e = _erfc_pos(a)
    tail = np.where(v < 0, 2 - e, e)
    return _back(np.where(a < 0.5, 1 - _erf_small(np.clip(v, -0.5, 0.5)), tail), x)


@_blockwise
def erfinv(x):
    """Inverse of erf: Winitzki's closed-form first guess, then Halley steps on erf.

    The residual erf(g) - |y| is computed as (1 - |y|) - erfc(g) once g is large, so it
    keeps its relative precision as |y| approaches 1.
    """
    y = _float64(x)
    a = np.abs(y)
    inside = a < 1
    ai = a[inside]
    k = 0.147
    ln = np.log1p(-ai * ai)
    t = 2 / (math.pi * k) + ln / 2
    g = np.sqrt(np.sqrt(t * t - ln / k) - t)
    for _ in range(2):
        f = np.where(g >= 0.5, (1 - ai) - _erfc_pos(g), _erf_small(np.minimum(g, 0.5)) - ai)
        step = f / (2 / _SQRT_PI * np.exp(-g * g))
        g = g - step / (1 + g * step)
    out = np.where(a == 1, np.inf, np.nan)
    out[inside] = g
    return _back(np.copysign(out, y), x)


# ---- float32: the normal CDF and erfc -------------------------------------------------------
# Note [Float32 paths]: NumPy's float64 exp is several times slower than its float32 exp, and the
# float64 functions above make ~50 passes; float32 (and half, computed in float32 as torch's
# opmath does) inputs of ndtr and erfc have a float32 kernel instead: one rational function fitted
# to float32 accuracy, one exp, no select (np.where and masked ufuncs cost 10-50x an arithmetic
# pass when signs are mixed, so branches are blended arithmetically).

# Phi(-z) * exp(z*z/2) = P(z) / Q(z), 0 <= z <= 14.5 (rel. error 6e-9, a fifth of float32's half ulp)
_NDTR32_P = (0.5000000029333449, 0.43828152214862903, 0.1832244891478863, 0.04062943958968538,
             0.004115693877110585)
_NDTR32_Q = (1.0, 1.6744480240060164, 1.2024604267611159, 0.46944236184344973, 0.10184935045172527,
             0.01031639487899406)
# erfc(v) * exp(v*v) = P(v) / Q(v), 0 <= v <= 10.5 (rel. error 6e-9)
_ERFC32_P = (1.0000000061394354, 1.2416173130205643, 0.7349660671947593, 0.23082240076832455,
             0.033133481902371816)
_ERFC32_Q = (1.0, 2.3699970980263543, 2.409211486949009, 1.3316447194488548, 0.409146910534849,
             0.058726922535540786)


def _horner32(coeffs, z, out):
    """sum(coeffs[k] * z**k) into out, in z's dtype (the Python floats are weak scalars)."""
    np.multiply(z, coeffs[-1], out=out)
    out += coeffs[-2]
    for c in coeffs[-3::-1]:
        out *= z
        out += c
    return out


def _gauss_tail32(x, p, q, c, cap):
    """(exp(-c z*z) P(z) / Q(z), exp(-c z*z)) with z = |x| (float32, in float32), for c = 1/2 or 1. z is capped at
    `cap`, past which exp underflows to 0 (so inf stays finite in P/Q). z*z is split exactly
    (Dekker: z = zh + zl with zh on 12 bits), so that exp's argument carries no rounding error:
    exp(-c z*z) = exp(-c fl(z*z)) * (1 - c err). Without it the error grows as z*z ulp."""
    z = np.abs(x)
    r = np.empty_like(z)
    r.fill(cap)
    np.minimum(z, r, out=z)  # against a full array: NumPy's min/max with a scalar is not vectorized
    _horner32(p, z, r)
    d = _horner32(q, z, np.empty_like(z))
    r /= d
    hi = np.bitwise_and(z.view(np.int32), np.int32(-4096)).view(np.float32)
    lo = np.subtract(z, hi)
    np.multiply(z, z, out=d)  # fl(z*z)
    z += hi
    z *= lo  # lo * (z + hi)
    hi *= hi  # exact: 12 bits squared
    hi -= d  # exact (Sterbenz)
    hi += z  # err = z*z - fl(z*z)
    hi *= -c
    hi += 1.0
    d *= -c
    np.exp(d, out=d)
    d *= hi
    r *= d
    return r, d


# float32 kernels run whole up to 256k elements (1 MB temporaries), in blocks of that size above
_BLOCK32 = 1 << 18


def _ndtr_pdf32(x):
    """(Phi(x), phi(x)) for float32 x: q = Phi(-|x|), then q for x < 0 and 1 - q for x >= 0, blended
    as q + (x >= 0) (1 - 2q); the density from the same exp. Within 8 ulp (tests/test_special32.py)."""
    q, e = _gauss_tail32(x, _NDTR32_P, _NDTR32_Q, 0.5, 14.5)
    out = np.multiply(q, -2.0)
    out += 1.0
    out *= x >= 0  # NaN >= 0 is False, and NaN * 0 stays NaN
    out += q
    e *= 1 / math.sqrt(2 * math.pi)
    return out, e


_ndtr_pdf32 = _blockwise(_ndtr_pdf32, _BLOCK32)


def _ndtr32(x):
    return _ndtr_pdf32(x)[0]


def _erfc32(x):
    """erfc(x) for float32 x: h = erfc(|x|), then h for x >= 0 and 2 - h for x < 0, blended as
    h + (x < 0) (2 - 2h)."""
    h = _gauss_tail32(x, _ERFC32_P, _ERFC32_Q, 1.0, 10.5)[0]
    out = np.multiply(h, -2.0)
    out += 2.0
    out *= x < 0
    out += h
    return out


_erfc32 = _blockwise(_erfc32, _BLOCK32)


def _half(x):
    """float16 or bfloat16 (ml_dtypes' kind is 'V')."""
    return x.dtype.itemsize == 2 and x.dtype.kind not in "iu"


def ndtr(x):
    """The standard normal CDF Phi; float64 as 0.5 erfc(-x/sqrt 2), float32 and half in float32."""
    x = np.asarray(x)
    if x.dtype == np.float32:
        return _ndtr32(x)
    if _half(x):
        return _ndtr32(x.astype(np.float32)).astype(x.dtype)
    return 0.5 * _erfc64(x * -math.sqrt(0.5))


def ndtr_pdf(x):
    """(Phi(x), phi(x)): the normal CDF and density together (gelu's backward needs both)."""
    x = np.asarray(x)
    if x.dtype == np.float32:
        return _ndtr_pdf32(x)
    if _half(x):
        cdf, pdf = _ndtr_pdf32(x.astype(np.float32))
        return cdf.astype(x.dtype), pdf.astype(x.dtype)
    pdf = np.multiply(x, x)
    pdf *= -0.5
    np.exp(pdf, out=pdf)
    pdf *= 1 / math.sqrt(2 * math.pi)
    return ndtr(x), pdf


def erfc(x):
    """Complementary error function, accurate relative to its (tiny) value in the right tail."""
    x = np.asarray(x)
    if x.dtype == np.float32:
        return _erfc32(x)
    if _half(x):
        return _erfc32(x.astype(np.float32)).astype(x.dtype)
    return _erfc64(x)


# ---- gamma family -----------------------------------------------------------------------

def _sinpi_abs(v):
    """|sin(pi v)|, exact at integers: reduce v to [-0.5, 0.5] first."""
    r = v - np.round(v)
    return np.abs(np.sin(math.pi * r))


def _cotpi(v):
    """cot(pi v) with v reduced to r in [-0.5, 0.5] and cos(pi r) taken as sin(pi (0.5 - |r|)),
    so half-integers give exactly 0 (the reflection formulas cancel there)."""
    r = v - np.round(v)
    return np.sin(math.pi * (0.5 - np.abs(r))) / np.sin(math.pi * r)


def _lgamma_pos(v):
    """log Gamma(v) for v > 0, +inf or NaN (both branches on the whole array, see Note [Branches])."""
    # v >= 8: Stirling's series, written so that v = inf gives inf (not inf - inf)
    vb = np.maximum(v, 8.0)
    stirling = (vb - 0.5) * (np.log(vb) - 1) + _STIRLING_CONST + _polyval(_STIRLING, 1 / (vb * vb)) / vb
    # v < 8: v = n + z with n = round(v) in 0..8 and |z| <= 0.5; lgamma(2 + z) = z P(z)/Q(z), then
    # walk from 2 to n with Gamma(x + 1) = x Gamma(x). The zeros at 1 and 2 stay exact.
    vs = np.minimum(v, 8.0)
    n = np.round(vs)
    z = vs - n
    res = z * _ratio(_LGAMMA_P, _LGAMMA_Q, z)
    res -= np.where(n <= 1, np.log1p(z), 0)
    res -= np.log(np.where(n == 0, z, 1))
    prod = np.where(n > 2, 2 + z, 1)
    for j in range(3, 8):
        prod *= np.where(n > j, j + z, 1)
    res += np.log(prod)
    return np.where(v >= 8, stirling, res)


@_blockwise
def lgamma(x):
    """log|Gamma(x)|; +inf at the poles 0, -1, -2, ... and at -inf (as torch)."""
    v = _float64(x)
    pos = (v > 0) | np.isnan(v)
    w = np.where(pos, v, 1 - v)
    lg = _lgamma_pos(w)
    # reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    out = np.where(pos, lg, math.log(math.pi) - np.log(_sinpi_abs(v)) - lg)
    out = np.where(~pos & (np.floor(v) == v), np.inf, out)
    return _back(out, x)


def _digamma_pos(v):
    """psi(v) for v > 0: psi(v) = psi(v + 10) - sum_j 1/(v + j), then the asymptotic series."""
    acc = 1 / v
    for j in range(1, 10):
        acc += 1 / (v + j)
    z = v + 10
    w = 1 / (z * z)
    return np.log(z) - 0.5 / z - w * _polyval(_DIGAMMA_SERIES, w) - acc


@_blockwise
def digamma(x):
    """psi(x); -inf at +0, +inf at -0 and NaN at negative integers (as torch)."""
    v = _float64(x)
    pos = (v > 0) | np.isnan(v)
    w = np.where(pos, v, 1 - v)
    psi = _digamma_pos(w)
    # reflection: psi(1 - x) - psi(x) = pi cot(pi x)
    out = np.where(pos, psi, psi - math.pi * _cotpi(v))
    out = np.where(~pos & (np.floor(v) == v), np.nan, out)
    out = np.where(v == 0, np.copysign(np.inf, -v), out)
    return _back(out, x)


def _polygamma_pos(n, v):
    """psi^(n)(v), n >= 1, v > 0: shift by 15 with the recurrence, then the asymptotic series
    (-1)^(n+1) [(n-1)!/z^n + n!/(2 z^(n+1)) + sum_k B_2k (2k+n-1)!/(2k)! / z^(2k+n)]."""
    sign = -1.0 if n % 2 == 0 else 1.0
    fact = math.factorial(n)
    acc = v ** -(n + 1)
    for j in range(1, 15):
        acc += (v + j) ** -(n + 1)
    z = v + 15
    w = 1 / (z * z)
    coeffs = tuple(b * math.factorial(2 * k + n + 1) / math.factorial(2 * k + 2) for k, b in enumerate(_B2K[:8]))
    s = math.factorial(n - 1) / z ** n + fact / (2 * z ** (n + 1)) + w * _polyval(coeffs, w) / z ** n
    return sign * (fact * acc + s)


def _cot_derivative_poly(n):
    """Coefficients of P_n with d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x)):
    P_0(c) = c and P_{k+1}(c) = -(1 + c^2) P_k'(c)."""
    p = [0.0, 1.0]
    for _ in range(n):
        d = [k * p[k] for k in range(1, len(p))]
        new = [0.0] * (len(d) + 2)
        for k, c in enumerate(d):
            new[k] -= c
            new[k + 2] -= c
        p = new
    return tuple(p)


def polygamma(n, x):
    """psi^(n)(x), blockwise over x (see Note [Blocks])."""
    return _polygamma(x, n)


@_blockwise
def _polygamma(x, n):
    """psi^(n)(x); for x < 0 the reflection of psi differentiated n times:
    psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x))."""
    if n == 0:
        return digamma(x)
    v = _float64(x)
    pos = (v > 0) | np.isnan(v)
    pg = _polygamma_pos(n, np.where(pos, v, 1 - v))
    reflected = (-1) ** n * pg - math.pi ** (n + 1) * _polyval(_cot_derivative_poly(n), _cotpi(v))
    out = np.where(pos, pg, reflected)
    # poles at 0, -1, -2 ...: the limit from the right, (-1)^(n+1) inf (as torch)
    out = np.where(~pos & (np.floor(v) == v), np.inf if n % 2 == 1 else -np.inf, out)
    if n == 1:
        out = np.where(v == -np.inf, np.nan, out)
        out = _trigamma_at_negative_integers(x, v, out)
    else:
        out = np.where(v == np.inf, np.nan, out)  # torch's zeta gives NaN at q = inf
    return _back(out, x)


def _trigamma_at_negative_integers(x, v, out):
    """torch's trigamma reflects with pi^2 / sin(pi x)^2 in x's precision, so at -1, -2, ... it returns
    that finite value (sin(pi x) rounds to a tiny non-zero), less trigamma(1 - x), not the pole's inf."""
    at = (v < 0) & (np.floor(v) == v)
    if not at.any():
        return out
    dt = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    pi = dt.type(math.pi)
    with np.errstate(all="ignore"):
        s = np.sin(pi * x.astype(dt))
        reflected = (pi * pi / (s * s)).astype(np.float64) - _polygamma_pos(1, 1 - v)
    return np.where(at, reflected, out)


# ---- Bessel -----------------------------------------------------------------------------

def i0(x):
    """Modified Bessel function of the first kind, order 0 (NumPy's own)."""
    v = _float64(x)
    return _back(np.i0(v) if v.size else v.copy(), x)


@_blockwise
def i1(x):
    """Modified Bessel function of the first kind, order 1: the power series (all terms
    positive) up to |x| = 30, then 16 terms of the asymptotic expansion."""
    v = _float64(x)
    a = np.abs(v)
    out = np.empty_like(a)
    small = a <= 30
    h = a[small] / 2
    hh = h * h
    term = h.copy()
    total = h.copy()
    for k in range(1, 48):
        term *= hh / (k * (k + 1))
        total += term
    out[small] = total
    big = ~small
    ab = a[big]
    # e^x / sqrt(2 pi x) * sum_k (-1)^k prod_{j<=k} (4 - (2j-1)^2) / (k! (8x)^k)
    coeffs = [1.0]
    for k in range(1, 17):
        coeffs.append(-coeffs[-1] * (4 - (2 * k - 1) ** 2) / (k * 8))
    with np.errstate(over="ignore"):
        scale = np.exp(ab / 2)
        out[big] = scale * (scale / np.sqrt(2 * math.pi * ab)) * _polyval(tuple(coeffs), 1 / ab)
    out[a == np.inf] = np.nan  # as torch's i1
    return _back(np.where(v < 0, -out, out), x)
