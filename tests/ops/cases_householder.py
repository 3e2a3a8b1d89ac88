"""Op table rows: geqrf (LAPACK's compact QR), linalg.householder_product (orgqr) and ormqr."""
from .harness import Case as C, T

CPLX = ("float32", "float64", "complex128")


CASES = [
    C("geqrf", [(5, 3)], lambda t, a: tuple(t.geqrf(a.detach())), dtypes=CPLX),
    C("geqrf", [(2, 3, 4)], lambda t, a: tuple(a.detach().geqrf()), id="wide-batch"),
    C("geqrf", [(5, 3)], lambda t, a: t.geqrf(a)[0].sum().backward(), error=NotImplementedError, id="grad"),
    C("geqrf", [(5, 3)], lambda t, a: t.geqrf(a)[1].requires_grad, id="requires-grad"),
    C("geqrf", [(3,)], lambda t, a: t.geqrf(a), error=RuntimeError, id="1d"),
    C("geqrf", [T((3, 3), dtype="int64")], lambda t, a: t.geqrf(a), dtypes=("int64",), error=NotImplementedError,
      id="int"),
    C("linalg.householder_product", [(5, 3), (3,)], lambda t, a, tau: t.linalg.householder_product(a, tau),
      dtypes=CPLX, gradgrad=True),
    C("linalg.householder_product", [(2, 4, 3), (2, 2)], lambda t, a, tau: t.linalg.householder_product(a, tau),
      id="batch-fewer-tau"),
    C("linalg.householder_product", [(5, 3)], lambda t, a: t.linalg.householder_product(*t.geqrf(a.detach())),
      id="geqrf-q"),
    C("orgqr", [(5, 3), (3,)], lambda t, a, tau: a.orgqr(tau), id="method"),
    C("linalg.householder_product", [(3, 5), (2,)], lambda t, a, tau: t.linalg.householder_product(a, tau),
      error=RuntimeError, id="wide"),
    C("linalg.householder_product", [(5, 3), (4,)], lambda t, a, tau: t.linalg.householder_product(a, tau),
      error=RuntimeError, id="long-tau"),
    C("linalg.householder_product", [(5, 3), T((3,), dtype="float64")],
      lambda t, a, tau: t.linalg.householder_product(a, tau), dtypes=("float32",), error=RuntimeError, id="dtype"),
    C("ormqr", [(5, 3), (3,), (5, 2)], lambda t, a, tau, c: t.ormqr(a, tau, c), dtypes=CPLX),
    C("ormqr", [(5, 3), (3,), (5, 2)], lambda t, a, tau, c: t.ormqr(a, tau, c, transpose=True), dtypes=CPLX,
      id="transpose"),
    C("ormqr", [(5, 3), (3,), (2, 5)], lambda t, a, tau, c: a.ormqr(tau, c, left=False), id="right"),
    C("ormqr", [(2, 5, 3), (2, 3), (2, 2, 5)], lambda t, a, tau, c: t.ormqr(a, tau, c, left=False, transpose=True),
      dtypes=CPLX, id="right-transpose"),
    C("ormqr", [(5, 3), (3,), (4, 2)], lambda t, a, tau, c: t.ormqr(a, tau, c), error=RuntimeError, id="shape"),
    C("ormqr", [(5, 3), (2,), (5, 2)], lambda t, a, tau, c: t.ormqr(a, tau, c), error=RuntimeError, id="short-tau"),
    C("ormqr", [(5, 3), (3,), T((5, 2), dtype="float64")], lambda t, a, tau, c: t.ormqr(a, tau, c),
      dtypes=("float32",), error=RuntimeError, id="dtype"),
]
