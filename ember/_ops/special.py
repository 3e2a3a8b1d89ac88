"""The elementwise functions of torch.special that ember had no op for, one row each (kernel, promotion,
derivative), named `_special_<name>` (torch has them only in torch.special; ember/special/ names them).
Kernels are in _backend/special_scipy.py (SciPy, the optional extra ember[special]) and
_backend/polynomials.py. Derivatives where torch has them; the Bessel, Airy and polynomial functions
are not differentiable in torch (their results do not require grad), and zeta's and igamma's
derivatives with respect to their first argument raise, as torch's do.
"""
import math

from .. import _dtype as D
from .._backend import polynomials as P
from .._backend import special as S
from .._backend import special_scipy as SC
from ._registry import SAME, TO_FLOAT, binary, unary

_NAMES = D.SCALAR_NAMES


def _refuse(kernel, halves=True, integers=False):
    """torch's NotImplementedError for complex dtypes (and the half types / integers where its cpu
    kernel has none)."""
    def check(d):
        if d.category == D.COMPLEX or (halves and d.itemsize == 2 and d.category == D.FLOAT) or \
                (integers and d.category < D.FLOAT):
            raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'{_NAMES[d]}\'')
    return check


def _no_derivative(name):
    def dx(g):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")
    return dx


def _public(fn, name):
    """The row's function under its torch.special name (for repr and help)."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}: https://pytorch.org/docs/stable/special.html"
    return fn


def _row(name, kernel, dx=None, halves=True, node=None):
    return _public(unary(f"_special_{name}", kernel, TO_FLOAT, dx=dx, check=_refuse(name, halves), method=False,
                         inplace=False, node_name=node), name)


def _named_x(row_fn):
    """The functions torch declares as f(x) rather than f(input)."""
    def fn(x, *, out=None):
        return row_fn(x, out=out)
    return _public(fn, row_fn.__name__)


# ---- not differentiable in torch -----------------------------------------------------------------

airy_ai = _named_x(_row("airy_ai", SC.airy_ai))
bessel_j0 = _row("bessel_j0", SC.j0)
bessel_j1 = _row("bessel_j1", SC.j1)
bessel_y0 = _row("bessel_y0", SC.y0)
bessel_y1 = _row("bessel_y1", SC.y1)
modified_bessel_i0 = _row("modified_bessel_i0", SC.i0)
modified_bessel_i1 = _row("modified_bessel_i1", SC.i1)
modified_bessel_k0 = _row("modified_bessel_k0", SC.k0)
modified_bessel_k1 = _row("modified_bessel_k1", SC.k1)
scaled_modified_bessel_k0 = _named_x(_row("scaled_modified_bessel_k0", SC.k0e))
scaled_modified_bessel_k1 = _named_x(_row("scaled_modified_bessel_k1", SC.k1e))
spherical_bessel_j0 = _named_x(_row("spherical_bessel_j0", SC.spherical_bessel_j0))

# ---- differentiable ------------------------------------------------------------------------------

_SQRT_2PI = math.sqrt(2 * math.pi)

entr = _row("entr", SC.entr, halves=False, node="SpecialEntrBackward0",
            dx=lambda g, x: g * -(1 + x.log()))
erfcx = _row("erfcx", SC.erfcx, node="SpecialErfcxBackward0",
             dx=lambda g, x, out: g * (2 * x * out - 2 / math.sqrt(math.pi)))
i0e = _row("i0e", SC.i0e, halves=False, node="SpecialI0EBackward0",
           dx=lambda g, x, out: g * (i1e(x) - x.sgn() * out))
i1e = _row("i1e", SC.i1e, halves=False, node="SpecialI1EBackward0",
           dx=lambda g, x, out: g * (i0e(x) - out * (x.sgn() + x.reciprocal())).where(x != 0, 0.5))
i1 = _row("i1", S.i1, halves=False, node="SpecialI1Backward0",
          dx=lambda g, x, out: g * (x.i0() - out / x).where(x != 0, 0.5))
# phi(x) / Phi(x) = sqrt(2/pi) / erfcx(-x/sqrt(2)): no cancellation for x << 0 (torch's exp(-x^2/2 - out)
# loses every digit below x = -1e3 in float32 and gives inf or noise further out); NaN at -inf as torch's
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
log_ndtr = _row("log_ndtr", SC.log_ndtr, node="SpecialLogNdtrBackward0",
                dx=lambda g, x: g * (_SQRT_2_OVER_PI / erfcx(x * -math.sqrt(0.5))).where(x != -math.inf, math.nan))
ndtr = _row("ndtr", SC.ndtr, halves=False, node="MulBackward1",
            dx=lambda g, x: g * (-0.5 * x * x).exp() / _SQRT_2PI)
ndtri = _row("ndtri", SC.ndtri, node="SpecialNdtriBackward0",
             dx=lambda g, out: g * _SQRT_2PI * (0.5 * out * out).exp())


def _xlog1py_dx(g, x, y):
    """g log1p(y), 0 where g is 0 (unless y is NaN) and where x == 0 and y <= -1 (torch's formula)."""
    return xlog1py(g, y).masked_fill((x == 0) & (y <= -1), 0)


xlog1py = binary("_special_xlog1py", SC.xlog1py, TO_FLOAT, dx=_xlog1py_dx, dy=lambda g, x, y: g * x / (y + 1),
                 check=_refuse("xlog1py", halves=False), method=False, inplace=False,
                 node_name="SpecialXlog1PyBackward0")
zeta = binary("_special_zeta", SC.zeta, TO_FLOAT, dx=_no_derivative("zeta"), dy=_no_derivative("zeta"),
              check=_refuse("zeta"), method=False, inplace=False, node_name="SpecialZetaBackward0",
              tensors=())



# ---- orthogonal polynomials p_n(x) (input x, degree n; not differentiable in torch) ---------------


def _poly(name, kernel):
    """The row of p_n(x), called as torch names its arguments: (x, n)."""
    row_fn = binary(f"_special_{name}", kernel, TO_FLOAT, check=_refuse(name), method=False, inplace=False)

    def fn(x, n, *, out=None):
        return row_fn(x, n, out=out)
    return _public(fn, name)


chebyshev_polynomial_t = _poly("chebyshev_polynomial_t", P.chebyshev_t)
chebyshev_polynomial_u = _poly("chebyshev_polynomial_u", P.chebyshev_u)
chebyshev_polynomial_v = _poly("chebyshev_polynomial_v", P.chebyshev_v)
chebyshev_polynomial_w = _poly("chebyshev_polynomial_w", P.chebyshev_w)
shifted_chebyshev_polynomial_t = _poly("shifted_chebyshev_polynomial_t", P.shifted_chebyshev_t)
shifted_chebyshev_polynomial_u = _poly("shifted_chebyshev_polynomial_u", P.shifted_chebyshev_u)
shifted_chebyshev_polynomial_v = _poly("shifted_chebyshev_polynomial_v", P.shifted_chebyshev_v)
shifted_chebyshev_polynomial_w = _poly("shifted_chebyshev_polynomial_w", P.shifted_chebyshev_w)
hermite_polynomial_h = _poly("hermite_polynomial_h", P.hermite_h)
hermite_polynomial_he = _poly("hermite_polynomial_he", P.hermite_he)
laguerre_polynomial_l = _poly("laguerre_polynomial_l", P.laguerre_l)
legendre_polynomial_p = _poly("legendre_polynomial_p", P.legendre_p)

for _fn, _name in ((xlog1py, "xlog1py"), (zeta, "zeta")):
    _public(_fn, _name)
