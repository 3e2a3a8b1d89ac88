"""ember.special: torch.special's namespace (https://pytorch.org/docs/stable/special.html).

The functions ember had no op for are declared in ember/_ops/special.py (several need SciPy: the extra
ember[special]); the rest are torch's aliases of ops ember has, named here.
"""
from .._ops import special as _s
from .._ops._registry import namespace as _public, numpy_names  # the installed forms (NumPy spellings, autocast)

digamma, erf, erfc, erfinv, exp2, expm1, i0, log1p, sinc, xlogy = (
    _public[n] for n in ("digamma", "erf", "erfc", "erfinv", "exp2", "expm1", "i0", "log1p", "sinc", "xlogy"))
gammaln, expit, logit, polygamma, multigammaln, round = (
    _public[n] for n in ("lgamma", "sigmoid", "logit", "polygamma", "mvlgamma", "round"))
logsumexp = _public["logsumexp"]


@numpy_names
def softmax(input, dim, dtype=None):
    """torch.special.softmax: dtype positional, as nn.functional's (special.log_softmax's is keyword-only)."""
    return _public["softmax"](input, dim, dtype=dtype)


@numpy_names
def log_softmax(input, dim, *, dtype=None):
    """torch.special.log_softmax: dtype is keyword-only here (nn.functional's takes it positionally)."""
    return _public["log_softmax"](input, dim, dtype=dtype)

psi = digamma
airy_ai = _s.airy_ai
bessel_j0, bessel_j1, bessel_y0, bessel_y1 = _s.bessel_j0, _s.bessel_j1, _s.bessel_y0, _s.bessel_y1
modified_bessel_i0, modified_bessel_i1 = _s.modified_bessel_i0, _s.modified_bessel_i1
modified_bessel_k0, modified_bessel_k1 = _s.modified_bessel_k0, _s.modified_bessel_k1
scaled_modified_bessel_k0, scaled_modified_bessel_k1 = _s.scaled_modified_bessel_k0, _s.scaled_modified_bessel_k1
spherical_bessel_j0 = _s.spherical_bessel_j0
entr, erfcx, i0e, i1, i1e = _s.entr, _s.erfcx, _s.i0e, _s.i1, _s.i1e
log_ndtr, ndtr, ndtri = _s.log_ndtr, _s.ndtr, _s.ndtri
xlog1py, zeta = _s.xlog1py, _s.zeta
gammainc, gammaincc = _public["igamma"], _public["igammac"]  # torch.special's names for torch.igamma/igammac
chebyshev_polynomial_t, chebyshev_polynomial_u = _s.chebyshev_polynomial_t, _s.chebyshev_polynomial_u
chebyshev_polynomial_v, chebyshev_polynomial_w = _s.chebyshev_polynomial_v, _s.chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _s.shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _s.shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _s.shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _s.shifted_chebyshev_polynomial_w
hermite_polynomial_h, hermite_polynomial_he = _s.hermite_polynomial_h, _s.hermite_polynomial_he
laguerre_polynomial_l, legendre_polynomial_p = _s.laguerre_polynomial_l, _s.legendre_polynomial_p

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf",
           "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
           "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]

from .._ops._argcheck import guard_namespace as _guard_namespace  # noqa: E402

_guard_namespace(globals(), "special_")  # Note [Checked at the boundary] in ember/_ops/_argcheck.py
