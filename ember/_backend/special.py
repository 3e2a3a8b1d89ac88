"""Special functions NumPy lacks (erf, erfinv, lgamma, digamma ...), on arrays.

Computed in float64 and cast back to the input's dtype by the caller.
"""
import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)
_lgamma = np.frompyfunc(lambda v: math.lgamma(v) if not (v <= 0 and v == math.floor(v)) else math.inf, 1, 1)


def _apply(f, x):
    out = f(np.asarray(x, dtype=np.float64))
    return np.asarray(out, dtype=np.float64).astype(x.dtype, copy=False)


def erf(x):
    return _apply(_erf, x)


def erfc(x):
    return _apply(_erfc, x)


def lgamma(x):
    return _apply(_lgamma, x)


def erfinv(x):
    """Inverse error function: a rational first guess refined by Newton steps on erf."""
    y = np.asarray(x, dtype=np.float64)
    out = np.full(y.shape, np.nan)
    inside = np.abs(y) < 1
    a = 0.147
    yy = y[inside]
    ln = np.log1p(-yy * yy)
    t = 2 / (np.pi * a) + ln / 2
    guess = np.sign(yy) * np.sqrt(np.sqrt(t * t - ln / a) - t)
    for _ in range(3):
        err = _erf(guess).astype(np.float64) - yy
        guess = guess - err / (2 / np.sqrt(np.pi) * np.exp(-guess * guess))
    out[inside] = guess
    out[y == 1] = np.inf
    out[y == -1] = -np.inf
    return out.astype(x.dtype, copy=False)


def digamma(x):
    """psi(x): recurrence up to x >= 6, then the asymptotic series; reflection for x < 0."""
    v = np.asarray(x, dtype=np.float64)
    out = np.empty_like(v)
    neg = v < 0
    pole = (v <= 0) & (v == np.floor(v))
    z = np.where(neg, 1 - v, v)
    acc = np.zeros_like(z)
    while True:
        small = z < 6
        if not small.any():
            break
        acc = acc - np.where(small, 1 / np.where(small, z, 1), 0)
        z = np.where(small, z + 1, z)
    z2 = 1 / (z * z)
    series = (np.log(z) - 0.5 / z
              - z2 * (1 / 12 - z2 * (1 / 120 - z2 * (1 / 252 - z2 * (1 / 240 - z2 * (1 / 132))))))
    res = acc + series
    res = np.where(neg, res - np.pi / np.tan(np.pi * v), res)
    out[...] = res
    out[pole] = np.nan
    out[v == 0] = -np.inf  # torch: digamma(0) = -inf
    return out.astype(x.dtype, copy=False)


def polygamma(n, x):
    """psi^(n)(x) for n >= 1 by recurrence and asymptotic series (n = 0 is digamma)."""
    if n == 0:
        return digamma(x)
    v = np.asarray(x, dtype=np.float64)
    z = v.copy()
    acc = np.zeros_like(z)
    sign = (-1) ** (n + 1)
    fact = math.factorial(n)
    while True:
        small = z < 15
        if not small.any():
            break
        acc = acc + np.where(small, sign * fact / np.where(small, z, 1) ** (n + 1), 0)
        z = np.where(small, z + 1, z)
    # asymptotic: (-1)^(n+1) [ (n-1)!/z^n + n!/(2 z^(n+1)) + sum B2k (2k+n-1)!/((2k)! z^(2k+n)) ]
    b2k = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6]
    s = math.factorial(n - 1) / z ** n + fact / (2 * z ** (n + 1))
    for k, b in enumerate(b2k, start=1):
        s = s + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / z ** (2 * k + n)
    res = acc + sign * s
    res = np.where((v <= 0) & (v == np.floor(v)), np.nan, res)
    return res.astype(x.dtype, copy=False)


def i0(x):
    return np.i0(np.asarray(x, dtype=np.float64)).astype(x.dtype, copy=False)


def i1(x):
    """Modified Bessel function of the first kind, order 1 (power series / asymptotic)."""
    v = np.asarray(x, dtype=np.float64)
    ax = np.abs(v)
    out = np.zeros_like(ax)
    small = ax <= 15
    xs = ax[small] / 2
    term = xs.copy()
    total = term.copy()
    for k in range(1, 60):
        term = term * xs * xs / (k * (k + 1))
        total = total + term
    out[small] = total
    big = ~small
    xb = ax[big]
    mu = 4.0
    series = 1 - (mu - 1) / (8 * xb) + (mu - 1) * (mu - 9) / (2 * (8 * xb) ** 2) \
        - (mu - 1) * (mu - 9) * (mu - 25) / (6 * (8 * xb) ** 3)
    out[big] = np.exp(xb) / np.sqrt(2 * np.pi * xb) * series
    return (np.sign(v) * out).astype(x.dtype, copy=False)
