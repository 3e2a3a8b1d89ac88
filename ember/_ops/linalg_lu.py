"""Linear algebra, LU: lu_factor(_ex), lu, lu_solve. NumPy has no LU, so the factorization
is linalg_common.getrf (partial pivoting, LAPACK's pivot and info conventions)."""
import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._registry import Op, install
from .linalg import adj, matmul
from .linalg_common import (LinAlgError, batch_prefix, check_matrix, first_failure, getrf, pivots_to_perm, return_type,
                            tril, triu)
from .linalg_decomp import _out, linalg_solve_triangular

_make = Tensor._make

lu_factor_t = return_type("linalg_lu_factor", ["LU", "pivots"])
lu_factor_ex_t = return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_t = return_type("linalg_lu", ["P", "L", "U"])


# ---- LU -------------------------------------------------------------------------------

class LinalgLuFactorEx(Op):
    """Packed LU (L - I + U) with 1-based pivots, as LAPACK's getrf."""
    _name = "LinalgLuFactorExBackward0"
    nondiff = (1, 2)

    @staticmethod
    def forward(ctx, x, check):
        lu, piv, info = getrf(x)
        bad = first_failure(info)
        if check and bad is not None:
            raise LinAlgError(f"torch.linalg.lu_factor: {batch_prefix(x.shape, bad[0])}U[{bad[1]},{bad[1]}] is "
                              "zero and using it on lu_solve would result in a division by zero. If you still want "
                              "to perform the factorization, consider calling linalg.lu(A, pivot) or "
                              "linalg.lu_factor_ex(A, pivot)")
        ctx.save_for_backward(lu, piv)
        return lu, piv, info

    def backward(ctx, grad, grad_piv, grad_info):
        lu, piv = ctx.saved_tensors
        P, L, U = _unpack(lu, piv)
        k = min(lu._data.shape[-2:])
        return _lu_backward(tril(grad[..., :, :k], -1), triu(grad[..., :k, :]), P, L, U)


class LinalgLu(Op):
    """A = P L U (P a permutation matrix, L unit lower, U upper)."""
    _name = "LinalgLuBackward0"
    nondiff = (0,)

    @staticmethod
    def forward(ctx, x):
        lu, piv, _ = getrf(x)
        P, L, U = _unpack_arrays(lu, piv)
        ctx.save_for_backward(P, L, U)
        return P, L, U

    def backward(ctx, grad_p, grad_l, grad_u):
        P, L, U = ctx.saved_tensors
        return _lu_backward(grad_l, grad_u, P, L, U)


def _unpack_arrays(lu, piv):
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = np.tril(lu[..., :, :k], -1)
    idx = np.arange(k)
    L[..., idx, idx] = 1
    U = np.triu(lu[..., :k, :])
    perm = pivots_to_perm(piv, m)
    P = np.zeros(lu.shape[:-2] + (m, m), lu.dtype)
    np.put_along_axis(P, perm[..., None], 1, axis=-1)  # P0[i, perm[i]] = 1, so P0 A = A[perm]
    return np.swapaxes(P, -1, -2).copy(), L, U


def _unpack(lu, piv):
    """(P, L, U) from a packed LU tensor; L and U stay differentiable functions of it."""
    m, n = lu._data.shape[-2:]
    k = min(m, n)
    P = _make(_unpack_arrays(lu._data, piv._data)[0], lu._dtype)
    unit = _make(np.eye(m, k, dtype=lu._data.dtype), lu._dtype)
    return P, tril(lu[..., :, :k], -1) + unit, triu(lu[..., :k, :])


def _lu_backward(gL, gU, P, L, U):
    """A = P L U. Square: gA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H. Wide and tall
    matrices split into the square factorization plus the extra columns of U (wide) or
    rows of L (tall), whose dependence on A is a triangular solve."""
    from .indexing import cat
    m, n = L._data.shape[-2], U._data.shape[-1]
    if m == n:
        X = _lu_core(gL, gU, L, U)
    elif m < n:
        U1 = U[..., :, :m]
        U2 = U[..., :, m:]
        LgU2 = linalg_solve_triangular(adj(L), gU[..., :, m:], upper=True, unitriangular=True)
        X1 = _lu_core(gL - matmul(LgU2, adj(U2)), gU[..., :, :m], L, U1)
        X = cat([X1, LgU2], -1)
    else:
        L1 = L[..., :n, :]
        L2 = L[..., n:, :]
        gL2U = linalg_solve_triangular(adj(U), gL[..., n:, :], upper=False, left=False)
        X1 = _lu_core(gL[..., :n, :], gU - matmul(adj(L2), gL2U), L1, U)
        X = cat([X1, gL2U], -2)
    return matmul(P, X)


def _lu_core(gL, gU, L, U):
    M = tril(matmul(adj(L), gL), -1) + triu(matmul(gU, adj(U)))
    X = linalg_solve_triangular(adj(L), M, upper=True, unitriangular=True)
    return linalg_solve_triangular(adj(U), X, upper=False, left=False)


def _check_lu(A, name):
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: {list(A._data.shape)} "
                           "instead")
    if A._dtype.category < D.FLOAT:
        raise NotImplementedError(f'"lu_cpu" not implemented for \'{D.SCALAR_NAMES[A._dtype]}\'')
    check_matrix(A, name, square=False)


def linalg_lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    _check_lu(A, "torch.lu_factor")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    return _out(lu_factor_ex_t(*LinalgLuFactorEx.apply(A, check=check_errors)), out, "linalg.lu_factor_ex")


def linalg_lu_factor(A, *, pivot=True, out=None):
    _check_lu(A, "torch.lu_factor")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, _ = LinalgLuFactorEx.apply(A, check=True)
    return _out(lu_factor_t(lu, piv), out, "linalg.lu_factor")


def linalg_lu(A, *, pivot=True, out=None):
    _check_lu(A, "linalg.lu")
    if not pivot:
        raise RuntimeError("linalg.lu: LU without pivoting is not implemented on the CPU")
    return _out(lu_t(*LinalgLu.apply(A)), out, "linalg.lu")


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solve A X = B (or X A = B, with A^H if adjoint) from lu_factor's output."""
    if pivots._dtype is not D.int32:  # torch checks it first
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    P, L, U = _unpack(LU, pivots)
    if left and not adjoint:      # P L U X = B
        y = linalg_solve_triangular(L, matmul(P.mT, B), upper=False, unitriangular=True)
        x = linalg_solve_triangular(U, y, upper=True)
    elif left:                    # U^H L^H P^T X = B
        y = linalg_solve_triangular(adj(U), B, upper=False)
        y = linalg_solve_triangular(adj(L), y, upper=True, unitriangular=True)
        x = matmul(P, y)
    elif not adjoint:             # X P L U = B
        y = linalg_solve_triangular(U, B, upper=True, left=False)
        y = linalg_solve_triangular(L, y, upper=False, left=False, unitriangular=True)
        x = matmul(y, P.mT)
    else:                         # X U^H L^H P^T = B
        y = matmul(B, P)
        y = linalg_solve_triangular(adj(L), y, upper=True, left=False, unitriangular=True)
        x = linalg_solve_triangular(adj(U), y, upper=False, left=False)
    return _out(x, out, "linalg.lu_solve")


for _fn, _name in [(linalg_lu_factor, "lu_factor"), (linalg_lu_factor_ex, "lu_factor_ex"), (linalg_lu, "lu"),
                   (linalg_lu_solve, "lu_solve")]:
    install(_fn, "linalg." + _name, method=False, function=False)
