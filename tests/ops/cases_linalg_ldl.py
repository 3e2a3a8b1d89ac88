"""Op table rows: linalg.ldl_factor(_ex) and linalg.ldl_solve. ember calls the same LAPACK routines
(sytrf/hetrf, sytrs/hetrs, through SciPy) as torch, so LD and the Bunch-Kaufman pivots are compared
exactly, not only by reconstruction; neither op is differentiable (in torch either)."""
import numpy as np

from .harness import Case as C, T

ALL = ("float32", "float64", "complex128")
SYM = T((4, 4), grad=False)


def _sym(t, a, hermitian=False):
    return a + (a.mH if hermitian else a.mT)


def _factor_solve(t, a, b, hermitian=False):
    A = _sym(t, a, hermitian)
    LD, piv = t.linalg.ldl_factor(A, hermitian=hermitian)
    X = t.linalg.ldl_solve(LD, piv, b, hermitian=hermitian)
    return LD, piv, X, (A @ X)  # A X reproduces b


CASES = [
    C("linalg.ldl_factor", [SYM], lambda t, a: tuple(t.linalg.ldl_factor(_sym(t, a))), dtypes=ALL, grad=False),
    C("linalg.ldl_factor", [SYM], lambda t, a: tuple(t.linalg.ldl_factor(_sym(t, a, True), hermitian=True)),
      dtypes=ALL, grad=False, id="hermitian"),
    C("linalg.ldl_factor", [T((2, 3, 5, 5), grad=False)], lambda t, a: tuple(t.linalg.ldl_factor(_sym(t, a))),
      grad=False, id="batch"),
    C("linalg.ldl_factor_ex", [SYM], lambda t, a: tuple(t.linalg.ldl_factor_ex(_sym(t, a))), grad=False),
    C("linalg.ldl_factor_ex", [T((3, 3), values=np.zeros((3, 3)))], lambda t, a: tuple(t.linalg.ldl_factor_ex(a)),
      grad=False, id="singular-info"),
    C("linalg.ldl_factor", [(4, 4)], lambda t, a: t.linalg.ldl_factor(a + a.mT)[0].sum().backward(),
      error=RuntimeError, id="no-grad"),
    C("linalg.ldl_factor", [(3, 4)], lambda t, a: t.linalg.ldl_factor(a), grad=False, error=RuntimeError,
      id="square"),
    C("linalg.ldl_factor", [T((3, 3), dtype="int64")], lambda t, a: t.linalg.ldl_factor(a), dtypes=("int64",),
      error=RuntimeError, id="int"),
    C("linalg.ldl_solve", [SYM, T((4, 2), grad=False)], _factor_solve, dtypes=ALL, grad=False),
    C("linalg.ldl_solve", [SYM, T((4, 2), grad=False)], lambda t, a, b: _factor_solve(t, a, b, True), dtypes=ALL,
      grad=False, id="hermitian"),
    C("linalg.ldl_solve", [T((2, 4, 4), grad=False), T((2, 4, 3), grad=False)], _factor_solve, grad=False,
      id="batch"),
    C("linalg.ldl_solve", [SYM, T((4, 2), grad=False)],
      lambda t, a, b: t.linalg.ldl_solve(*t.linalg.ldl_factor(_sym(t, a)), b[:3]), grad=False, error=RuntimeError,
      id="sizes"),
    C("linalg.ldl_solve", [SYM, T((4, 2), grad=False)],
      lambda t, a, b: t.linalg.ldl_solve(t.linalg.ldl_factor(_sym(t, a))[0], t.linalg.ldl_factor(_sym(t, a))[1],
                                         b.double()), dtypes=("float32",), grad=False, error=RuntimeError,
      id="dtype"),
    C("linalg.ldl_solve", [SYM, (4, 2)],
      lambda t, a, b: t.linalg.ldl_solve(*t.linalg.ldl_factor(_sym(t, a)), b).sum().backward(), error=RuntimeError,
      id="no-grad"),
]
