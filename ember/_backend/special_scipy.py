"""Special functions for ember.special that NumPy lacks, on SciPy's scipy.special (Cephes, as torch's
own kernels), imported on first use so that `import ember` does not pay for SciPy: the optional extra
ember[special]. Each kernel takes arrays, computes in float64 and returns the input's float dtype.
A few short ones are NumPy (entr, spherical_bessel_j0, xlog1py)."""
import numpy as np

from . import special as _own

_scipy = []


def scipy_special():
    """scipy.special, or an ImportError that names the extra to install."""
    if not _scipy:
        try:
            import scipy.special
        except ImportError:
            raise ImportError("this ember.special function needs SciPy: pip install 'ember[special]' "
                              "(or pip install scipy)") from None
        _scipy.append(scipy.special)
    return _scipy[0]


def lapack(name, arr):
    """SciPy's LAPACK routine `name` (e.g. 'sytrf') for arr's dtype (linalg.ldl_factor: the routines torch
    calls); the same extra, and the same error when SciPy is missing."""
    scipy_special()
    from scipy.linalg import lapack as L
    return L.get_lapack_funcs((name,), (arr,))[0]


def _unary(name):
    """A float64 SciPy ufunc applied to an array of any float dtype, the result in that dtype."""
    def kernel(x):
        return getattr(scipy_special(), name)(x.astype(np.float64)).astype(x.dtype, copy=False)
    kernel.__name__ = name
    return kernel


j0, j1, y0, y1 = _unary("j0"), _unary("j1"), _unary("y0"), _unary("y1")
i0, i1, k0, k1 = _unary("i0"), _unary("i1"), _unary("k0"), _unary("k1")
i0e, i1e, k0e, k1e = _unary("i0e"), _unary("i1e"), _unary("k0e"), _unary("k1e")
erfcx, log_ndtr, ndtri = _unary("erfcx"), _unary("log_ndtr"), _unary("ndtri")


def airy_ai(x):
    """Ai(x), the first of scipy's (Ai, Ai', Bi, Bi')."""
    return scipy_special().airy(x.astype(np.float64))[0].astype(x.dtype, copy=False)


def zeta(x, q):
    """The Hurwitz zeta function sum_k (k + q)^-x."""
    return scipy_special().zeta(x.astype(np.float64), q.astype(np.float64)).astype(x.dtype, copy=False)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (torch.igamma)."""
    return scipy_special().gammainc(a.astype(np.float64), x.astype(np.float64)).astype(a.dtype, copy=False)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (torch.igammac)."""
    return scipy_special().gammaincc(a.astype(np.float64), x.astype(np.float64)).astype(a.dtype, copy=False)


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below (NaN stays NaN)."""
    v = x.astype(np.float64)
    out = np.where(v > 0, -v * np.log(np.where(v > 0, v, 1.0)), np.where(v == 0, 0.0, -np.inf))
    return np.where(np.isnan(v), v, out).astype(x.dtype, copy=False)


def spherical_bessel_j0(x):
    """sin(x) / x, 1 at 0 (and 0 at +-inf)."""
    v = x.astype(np.float64)
    safe = np.where(v == 0, 1.0, v)
    out = np.where(v == 0, 1.0, np.sin(safe) / safe)
    return np.where(np.isinf(v), 0.0, out).astype(x.dtype, copy=False)


def xlog1py(x, y):
    """x log1p(y), 0 where x == 0 unless y is NaN."""
    out = x * np.log1p(y)
    return np.where((x == 0) & ~np.isnan(y), np.zeros((), out.dtype), out)


def ndtr(x):
    """ember's own normal CDF (special.py), given at least one dimension: its float32 path writes into
    0-d temporaries with out=, which NumPy refuses for the scalars a 0-d input gives."""
    return _own.ndtr(x.reshape(-1)).reshape(x.shape)
