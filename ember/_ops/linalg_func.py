"""Linear algebra, matrix functions and tensor forms: matrix_exp, tensorinv, tensorsolve,
and the deprecated torch.lu / lu_unpack / lu_solve spellings."""
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._registry import Op, install
from .linalg import adj, check_tensor
from .linalg_common import check_matrix, return_type
from .linalg_decomp import _out, linalg_inv, linalg_solve
from .linalg_lu import _unpack, linalg_lu_factor_ex, linalg_lu_solve

_make = Tensor._make

# Pade(13) coefficients and its scaling threshold (Higham, "The scaling and squaring
# method for the matrix exponential revisited", 2005)
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm(a):
    """exp of each matrix in a batch: scaling and squaring around a Pade(13) approximant,
    computed in double precision."""
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    x = a.astype(wide)
    norm1 = np.max(np.sum(np.abs(x), axis=-2), axis=-1) if x.size else np.zeros(x.shape[:-2])
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm1, 1e-300) / _THETA13))).astype(np.int64)
    x = x / (2.0 ** s)[..., None, None]
    b = _PADE13
    eye = np.eye(x.shape[-1], dtype=wide)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for k in range(int(s.max(initial=0))):
        more = (s > k)[..., None, None]
        r = np.where(more, r @ r, r)
    return r.astype(a.dtype)


class LinalgMatrixExp(Op):
    """exp(A). Backward: the adjoint of the Frechet derivative, read off the top-right
    block of exp([[A^H, G], [0, A^H]]) (matrix_exp again, so it differentiates again)."""
    _name = "LinalgMatrixExpBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _expm(x)

    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        from .indexing import cat
        n = A._data.shape[-1]
        Ah = adj(A)
        zeros = Ah * 0
        top = cat([Ah, grad], -1)
        bottom = cat([zeros, Ah], -1)
        big = linalg_matrix_exp(cat([top, bottom], -2))
        return big[..., :n, n:]


def linalg_matrix_exp(input):
    check_matrix(input, "linalg.matrix_exp")
    return LinalgMatrixExp.apply(input)


def linalg_tensorinv(input, ind=2, *, out=None):
    check_tensor(input, "linalg.tensorinv", "A", 1)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = input._data.shape
    rows = int(np.prod(shape[:ind]))
    cols = int(np.prod(shape[ind:]))
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    r = linalg_inv(input.reshape(rows, cols)).reshape(shape[ind:] + shape[:ind])
    return _out(r, out, "linalg.tensorinv")


def linalg_tensorsolve(input, other, dims=None, *, out=None):
    check_tensor(input, "linalg.tensorsolve", "A", 1)
    check_tensor(other, "linalg.tensorsolve", "B", 2)
    if dims is not None:
        nd = input._data.ndim
        dims = [d % nd for d in dims]
        input = input.movedim(tuple(dims), tuple(range(nd - len(dims), nd)))
    xshape = input._data.shape[other._data.ndim:]
    rows = int(np.prod(input._data.shape[:other._data.ndim]))  # torch compares sizes, not shapes (dims= may permute)
    cols = int(np.prod(xshape))
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    r = linalg_solve(input.reshape(rows, cols), other.reshape(rows)).reshape(xshape)
    return _out(r, out, "linalg.tensorsolve")


# ---- deprecated LU spellings ----------------------------------------------------------

lu_unpack_t = return_type("lu_unpack", ["P", "L", "U"])


def lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu (deprecated): (LU, pivots[, infos]) like linalg.lu_factor_ex."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    LU, piv, info = linalg_lu_factor_ex(A, pivot=pivot)
    r = (LU, piv, info) if get_infos else (LU, piv)
    return _out(r, out, "lu") if out is not None else r


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    if LU_pivots._dtype is not D.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype. "
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    P, L, U = _unpack(LU_data, LU_pivots)
    empty = _make(np.empty((0,), LU_data._data.dtype), LU_data._dtype)
    r = lu_unpack_t(P if unpack_pivots else empty, L if unpack_data else empty, U if unpack_data else empty)
    return _out(r, out, "lu_unpack")


def lu_solve(input, LU_data, LU_pivots, *, out=None):
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be removed in a future "
                  "PyTorch release.", UserWarning, stacklevel=2)
    return linalg_lu_solve(LU_data, LU_pivots, input, out=out)


for _fn, _name in [(linalg_matrix_exp, "matrix_exp"), (linalg_tensorinv, "tensorinv"),
                   (linalg_tensorsolve, "tensorsolve")]:
    install(_fn, "linalg." + _name, method=False, function=False)
install(linalg_matrix_exp, "matrix_exp")
install(lu, "lu", method=False)


def _lu_method(self, pivot=True, get_infos=False):
    """Tensor.lu: torch.lu without its out= (torch's method takes none)."""
    return lu(self, pivot, get_infos)


install(_lu_method, "lu", function=False)
install(lu_unpack, "lu_unpack", method=False)
install(lu_solve, "lu_solve")
