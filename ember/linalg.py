"""ember.linalg: torch.linalg's namespace (https://pytorch.org/docs/stable/linalg.html).

The functions are declared in ember/_ops/linalg*.py; this module only names them.
"""
from ._ops.linalg import matmul
from ._ops.linalg_contract import linalg_cross as cross, linalg_multi_dot as multi_dot
from ._ops.linalg_common import LinAlgError
from ._ops.linalg_decomp import (linalg_cholesky as cholesky, linalg_cholesky_ex as cholesky_ex,
                                 linalg_det as det, linalg_inv as inv, linalg_inv_ex as inv_ex,
                                 linalg_matrix_power as matrix_power, linalg_slogdet as slogdet,
                                 linalg_solve as solve, linalg_solve_ex as solve_ex,
                                 linalg_solve_triangular as solve_triangular)
from ._ops.householder import householder_product
from ._ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from ._ops.linalg_func import (linalg_matrix_exp as matrix_exp, linalg_tensorinv as tensorinv,
                               linalg_tensorsolve as tensorsolve)
from ._ops.linalg_lu import (linalg_lu as lu, linalg_lu_factor as lu_factor, linalg_lu_factor_ex as lu_factor_ex,
                             linalg_lu_solve as lu_solve)
from ._ops.linalg_norm import (linalg_cond as cond, linalg_diagonal as diagonal, linalg_matrix_norm as matrix_norm,
                               linalg_norm as norm, linalg_vander as vander, linalg_vecdot as vecdot,
                               linalg_vector_norm as vector_norm)
from ._ops.linalg_spectral import (linalg_eig as eig, linalg_eigh as eigh, linalg_eigvals as eigvals,
                                   linalg_eigvalsh as eigvalsh, linalg_lstsq as lstsq,
                                   linalg_matrix_rank as matrix_rank, linalg_pinv as pinv, linalg_qr as qr,
                                   linalg_svd as svd, linalg_svdvals as svdvals)

from ._ops._registry import _takes_dim, numpy_names

# torch.linalg.matrix_exp takes no out= (its out overload is not bound in Python): neither does ember's

for _n, _fn in list(globals().items()):  # torch's C-level parser takes axis=/keepdims= here too
    if callable(_fn) and _takes_dim(_fn):
        globals()[_n] = numpy_names(_fn)
del _n, _fn

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve",
           "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul",
           "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
           "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot",
           "vector_norm"]

from .amp._dispatch import wrap_namespace as _wrap_namespace  # noqa: E402

_wrap_namespace(globals(), "linalg_")  # autocast policies (Note [Autocast dispatch] in ember/amp/_dispatch.py)

from ._ops._argcheck import guard_namespace as _guard_namespace  # noqa: E402

_guard_namespace(globals(), "linalg_", precheck=True)  # C-level in torch: Note [Checked at the boundary] in ember/_ops/_argcheck.py
