"""Regularized incomplete gamma functions igamma (P) and igammac (Q), elementwise rows over SciPy's
kernels (ember/_backend/special_scipy.py). torch differentiates them only in `other` (x)."""
from .._backend import special_scipy
from ._registry import binary, namespace
from .pointwise import _nyi, _not_float


def _no_input_grad(name):
    def dx(g):
        raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
    return dx


def _density(x, y):
    """d P(x, y) / dy = y^(x-1) e^(-y) / Gamma(x), computed in logs as torch does."""
    return ((x - 1) * y.log() - y - x.lgamma()).exp()


_T2 = ("input", "other")
igamma = binary("igamma", special_scipy.gammainc, dx=_no_input_grad("igamma"),
                dy=lambda g, x, y: g * _density(x, y), tensors=_T2, check=_nyi("igamma_cpu", _not_float))
igammac = binary("igammac", special_scipy.gammaincc, dx=_no_input_grad("igammac"),
                 dy=lambda g, x, y: -g * _density(x, y), tensors=_T2, check=_nyi("igammac_cpu", _not_float))
namespace.pop("igamma_")  # torch has the in-place forms as Tensor methods only
namespace.pop("igammac_")
