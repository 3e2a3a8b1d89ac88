"""Special functions and their gradients over their whole domains against torch: the asymptotic branches
(large |x| for i0/erfc/lgamma/digamma), |y| -> 1 for erfinv, near the poles of lgamma/digamma, not only [-5, 5]
(issue 19: branches no other test reached)."""
import mpmath as mp
import numpy as np
import pytest
import torch

import ember

# a grid per function: (values, float32 rtol, float64 rtol); gradients use the same tolerances
_WIDE = np.concatenate([-np.logspace(-8, 2.6, 60), [0.0], np.logspace(-8, 2.6, 60)])
_POS = np.logspace(-8, 6, 90)
_POLES = np.concatenate([-k + np.array([-0.3, -1e-3, 1e-3, 0.3]) for k in range(0, 12)] + [[-0.5, -20.5]])
_UNIT = np.concatenate([np.tanh(np.linspace(-9, 9, 61)), 1 - np.logspace(-15, -1, 15), -1 + np.logspace(-15, -1, 15)])
DOMAINS = {
    "i0": (np.linspace(-700, 700, 141), 2e-6, 1e-12),
    "erf": (_WIDE, 2e-6, 1e-13),
    "erfc": (np.concatenate([_WIDE, np.linspace(20, 27, 15)]), 5e-6, 1e-12),
    "erfinv": (_UNIT, 5e-6, 1e-11),
    "lgamma": (np.concatenate([_POS, _POLES]), 5e-6, 1e-12),
    "digamma": (np.concatenate([_POS, _POLES, -_POS[:40] - 0.5]), 5e-5, 1e-10),
    "expm1": (_WIDE[np.abs(_WIDE) < 80], 2e-6, 1e-13),
    "log1p": (np.concatenate([-1 + np.logspace(-12, -1, 20), _POS]), 2e-6, 1e-13),
    "sinc": (_WIDE, 2e-6, 1e-12),
    "sigmoid": (_WIDE, 2e-6, 1e-13),
    "atanh": (_UNIT, 5e-6, 1e-12),
}


def _run(lib, name, values, dtype):
    x = lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)
    y = getattr(lib, name)(x)
    g = np.random.RandomState(0).uniform(0.5, 1.5, values.shape).astype(dtype)
    (gx,) = lib.autograd.grad(y, x, lib.tensor(g, dtype=getattr(lib, dtype)))
    return y.detach().numpy().astype(np.float64), gx.numpy().astype(np.float64)


# the truth: each function and its derivative at 40 digits (mpmath, which torch's sympy brings)
mp.mp.dps = 40
_SQRT_PI = mp.sqrt(mp.pi)
TRUTH = {
    "i0": (lambda x: mp.besseli(0, x), lambda x: mp.besseli(1, x)),
    "erf": (mp.erf, lambda x: 2 / _SQRT_PI * mp.exp(-x * x)),
    "erfc": (mp.erfc, lambda x: -2 / _SQRT_PI * mp.exp(-x * x)),
    "erfinv": (mp.erfinv, lambda y: _SQRT_PI / 2 * mp.exp(mp.erfinv(y) ** 2)),
    "lgamma": (lambda x: mp.log(abs(mp.gamma(x))), mp.digamma),
    "digamma": (mp.digamma, lambda x: mp.polygamma(1, x)),
    "expm1": (mp.expm1, mp.exp),
    "log1p": (mp.log1p, lambda x: 1 / (1 + x)),
    "sinc": (lambda x: mp.sincpi(x), lambda x: mp.diff(mp.sincpi, x)),
    "sigmoid": (lambda x: 1 / (1 + mp.exp(-x)), lambda x: mp.exp(-x) / (1 + mp.exp(-x)) ** 2),
    "atanh": (mp.atanh, lambda x: 1 / (1 - x * x)),
}


def _truth(name, x, g):
    """(values, gradients) at the points x (float64), upstream gradient g, as float64 (inf where they overflow)."""
    f, df = TRUTH[name]
    vals, grads = [], []
    for xi, gi in zip(x, g):
        xm = mp.mpf(float(xi))
        try:
            v, d = f(xm), df(xm)
        except (ValueError, ZeroDivisionError):  # a pole or the edge of the domain: torch's own value decides
            v = d = mp.nan
        vals.append(float(mp.re(v)) if mp.isfinite(v) else np.nan)
        grads.append(float(mp.re(d * gi)) if mp.isfinite(d) else np.nan)
    return np.array(vals), np.array(grads)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_at_least_as_accurate_as_torch(name, dtype):
    """Against the 40-digit truth at the same (rounded) points: ember's error may not exceed torch's error by
    more than a few ulps (near roots and poles both lose digits; a wrong branch loses all of them)."""
    values, rtol32, rtol64 = DOMAINS[name]
    rtol = rtol32 if dtype == "float32" else rtol64
    x = values.astype(dtype).astype(np.float64)
    g = np.random.RandomState(0).uniform(0.5, 1.5, x.shape).astype(dtype).astype(np.float64)
    truth = _truth(name, x, g)
    ours, theirs = _run(ember, name, x, dtype), _run(torch, name, x, dtype)
    top = np.finfo(dtype).max
    for what, t, tt, e in zip(("values", "gradient"), truth, theirs, ours):
        finite = np.isfinite(t) & (np.abs(t) < top)  # where torch overflows early, ember may be finite
        assert np.array_equal(np.isfinite(e[~finite]), np.isfinite(tt[~finite])), f"{name} {what}: non-finite"
        err_t = np.abs(tt - t)[finite]
        err_e = np.abs(e - t)[finite]
        bound = 2 * err_t + 4 * rtol * np.abs(t[finite]) + np.finfo(dtype).tiny
        worst = np.argmax(err_e - bound)
        assert np.all(err_e <= bound), (f"{name} {what} at x={x[finite][worst]!r}: ember {e[finite][worst]!r}, torch "
                                        f"{tt[finite][worst]!r}, truth {t[finite][worst]!r}")
