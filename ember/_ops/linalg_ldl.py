"""linalg.ldl_factor(_ex) and linalg.ldl_solve: LAPACK's Bunch-Kaufman LDL^T (sytrf/hetrf, lower) and
its solve (sytrs/hetrs) through SciPy (the `special` extra), so LD and pivots are LAPACK's, as torch's.
Not differentiable (torch has no derivative either: backward raises)."""
import numpy as np

from .. import _dtype as D
from .. import return_types
from .._backend import special_scipy
from .._tensor import Tensor
from ._registry import Op
from .linalg_common import LinAlgError, check_float

_make = Tensor._make


def _routine(kind, x, hermitian):
    return special_scipy.lapack(("he" if hermitian and x.dtype.kind == "c" else "sy") + kind, x)


class LdlFactorEx(Op):
    """LD (lower triangle: L below the diagonal, the 1x1/2x2 blocks of D on it), pivots, info per matrix."""
    _name = "NotImplemented"
    nondiff = (1, 2)

    @staticmethod
    def forward(ctx, a, hermitian):
        batch = a.shape[:-2]
        n = a.shape[-1]
        flat = a.reshape((int(np.prod(batch)), n, n))  # (an empty matrix has no -1 to infer)
        ld = np.zeros_like(flat)
        piv = np.zeros((flat.shape[0], n), dtype=np.int32)
        info = np.zeros(flat.shape[0], dtype=np.int32)
        for i, m in enumerate(flat):
            if n == 0:
                continue
            factor, ipiv, inf = _routine("trf", m, hermitian)(m, lower=1)
            ld[i] = np.tril(factor)
            piv[i] = ipiv
            info[i] = inf
        return ld.reshape(a.shape), piv.reshape(batch + (n,)), info.reshape(batch)

    def backward(ctx, *grads):
        raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")


def _check_square(A, name):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def ldl_factor_ex(input, *, hermitian=False, check_errors=False, out=None):
    """See https://pytorch.org/docs/stable/generated/torch.linalg.ldl_factor_ex.html"""
    name = "torch.linalg.ldl_factor_ex"
    _check_square(input, name)
    check_float(input, name)
    ld, piv, info = LdlFactorEx.apply(input, hermitian=bool(hermitian))
    if check_errors:
        _raise_info(info, "torch.linalg.ldl_factor_ex")
    return return_types.linalg_ldl_factor_ex((ld, piv, info))


def _raise_info(info, name):
    bad = np.flatnonzero(info._data.reshape(-1))
    if bad.size:
        k = int(info._data.reshape(-1)[bad[0]])
        prefix = f"(Batch element {bad[0]}): " if info.dim() else ""
        raise LinAlgError(f"{name}: {prefix}The factorization could not be completed because the input is not "
                          f"invertible: D[{k - 1}, {k - 1}] is exactly zero (LAPACK info={k}).")


def ldl_factor(input, *, hermitian=False, out=None):
    """LD and pivots; raises for a zero pivot. (torch 2.13 reports that case as an internal assert;
    ember raises LinAlgError, a RuntimeError.) See torch.linalg.ldl_factor."""
    ld, piv, info = ldl_factor_ex(input, hermitian=hermitian)
    _raise_info(info, "torch.linalg.ldl_factor")
    return return_types.linalg_ldl_factor((ld, piv))


class LdlSolve(Op):
    """X solving A X = B from A's LDL factorization, per (broadcast) batch matrix."""
    _name = "NotImplemented"

    @staticmethod
    def forward(ctx, ld, b, pivots, hermitian):
        batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2], pivots.shape[:-1])
        count = int(np.prod(batch))  # (empty matrices have no -1 to infer)
        ld_b = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape((count,) + ld.shape[-2:])
        b_b = np.broadcast_to(b, batch + b.shape[-2:]).reshape((count,) + b.shape[-2:])
        p_b = np.broadcast_to(pivots, batch + pivots.shape[-1:]).reshape((count, pivots.shape[-1]))
        out = np.empty(b_b.shape, dtype=b.dtype)
        for i in range(out.shape[0]):
            if b_b.shape[-2] == 0 or b_b.shape[-1] == 0:
                out[i] = b_b[i]
                continue
            x, _ = _routine("trs", ld_b[i], hermitian)(ld_b[i], p_b[i].astype(np.int32), b_b[i], lower=1)
            out[i] = x
        return out.reshape(batch + b.shape[-2:])

    def backward(ctx, *grads):
        raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """See https://pytorch.org/docs/stable/generated/torch.linalg.ldl_solve.html"""
    name = "torch.linalg.ldl_solve"
    _check_square(LD, name)
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if pivots._dtype.category != D.INT:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {D.SCALAR_NAMES[pivots._dtype]}")
    if LD._dtype is not B._dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but found LD of type "
                           f"{D.SCALAR_NAMES[LD._dtype]} and B of type {D.SCALAR_NAMES[B._dtype]} instead")
    if LD.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {LD.shape[-2]} by "
                           f"{LD.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    x = LdlSolve.apply(LD, B, pivots=pivots._data, hermitian=bool(hermitian))
    if out is not None:
        return out.resize_(x.shape).copy_(x)
    return x
