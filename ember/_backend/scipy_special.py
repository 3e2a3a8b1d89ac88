"""Kernels borrowed from SciPy (scipy.special, LAPACK through scipy.linalg; the optional `ember[special]`
extra), imported on first use so `import ember` does not pay for SciPy."""
import numpy as np


def special():
    """scipy.special, or an ImportError naming the extra that provides it."""
    try:
        import scipy.special
    except ImportError as e:  # pragma: no cover - scipy is in the test extra
        raise ImportError("this function needs SciPy: install ember with the `special` extra "
                          "(pip install 'ember[special]')") from e
    return scipy.special


def gammainc(a, x):
    """Regularized lower incomplete gamma P(a, x), in a's dtype."""
    return np.asarray(special().gammainc(a, x), dtype=a.dtype)


def gammaincc(a, x):
    """Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x), in a's dtype."""
    return np.asarray(special().gammaincc(a, x), dtype=a.dtype)


def lapack(name, arr):
    """SciPy's LAPACK routine `name` (e.g. 'sytrf') for arr's dtype."""
    special()  # the same extra, the same error when SciPy is missing
    from scipy.linalg import lapack as L
    return L.get_lapack_funcs((name,), (arr,))[0]
