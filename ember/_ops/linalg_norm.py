"""Linear algebra, part 4: norms (linalg.vector_norm, matrix_norm, norm, cond, and the
legacy torch.norm / Tensor.norm) plus small composites (vecdot, vander, diagonal)."""
import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ._registry import Op, install
from .linalg import check_tensor, conj
from .linalg_common import check_matrix
from .linalg_decomp import _out, linalg_inv
from .linalg_spectral import linalg_svdvals

_make = Tensor._make
_INF = math.inf


def _norm_dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    dims = tuple(_wrap_dim(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return dims if dims else tuple(range(ndim))


class LinalgVectorNorm(Op):
    """sum(|x|^ord)^(1/ord) over dims (max/min |x| for +-inf, count of nonzeros for 0)."""
    _name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        ctx.args = (ord, dims, keepdim)
        a = np.abs(x)
        if ord == 2:
            r = np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim))
        elif ord == 1:
            r = np.sum(a, axis=dims, keepdims=keepdim)
        elif ord == _INF:
            r = np.max(a, axis=dims, keepdims=keepdim)
        elif ord == -_INF:
            r = np.min(a, axis=dims, keepdims=keepdim)
        elif ord == 0:
            r = np.sum(a != 0, axis=dims, keepdims=keepdim).astype(a.dtype)
        else:
            r = np.sum(a ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)
        r = np.asarray(r).astype(a.dtype, copy=False)
        ctx.save_for_backward(x, r)
        return r

    def backward(ctx, grad):
        ord, dims, keepdim = ctx.args
        if ord == 0:
            return None
        x, norm = ctx.saved_tensors
        if not keepdim and dims:
            shape = tuple(1 if i in dims else s for i, s in enumerate(x._data.shape))
            grad = grad.reshape(shape)
            norm = norm.reshape(shape)
        if ord == 1:
            return grad * x.sgn()
        if ord == 2:
            return grad * (x / norm).masked_fill(norm == 0, 0)
        if ord == _INF or ord == -_INF:
            mask = (x.abs() == norm).to(norm._dtype)
            count = mask.sum(dims, keepdim=True)
            return grad * x.sgn() * (mask / count)
        scale = x.sgn() * x.abs().pow(ord - 1) / norm.pow(ord - 1)
        return grad * scale.masked_fill((norm == 0) | (x == 0), 0)


def linalg_vector_norm(input, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    name = "linalg.vector_norm"
    check_tensor(input, name, "x", 1)
    d = input._dtype
    if d.category < D.FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{D.SCALAR_NAMES[d]}")
    if isinstance(ord, str) or isinstance(ord, bool):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    if dtype is not None:
        if not D.can_cast(d, dtype) or (d.category == dtype.category and d.itemsize > dtype.itemsize):
            raise RuntimeError(f"{name}: the dtype of the input ({D.SCALAR_NAMES[d]}) should be convertible without "
                               f"narrowing to the specified dtype ({D.SCALAR_NAMES[dtype]})")
        input = input.to(dtype)
    dims = _norm_dims(dim, input._data.ndim)
    shape = input._data.shape
    if input._data.ndim == 0:
        dims = ()  # a 0-d input accepts dim 0 / -1 and has nothing to reduce
    if ord < 0 or ord == _INF:
        for i in dims:
            if shape[i] == 0:
                where = "an empty tensor " if dim is None else f"the dimension {i}because this dimension is empty and "
                raise RuntimeError(f"{name} cannot compute the {float(ord):g} norm on {where}"
                                   f"{'because ' if dim is None else ''}the operation does not have an identity")
    r = LinalgVectorNorm.apply(input, ord=float(ord), dims=dims, keepdim=keepdim)
    return _out(r, out, name)


# ---- matrix norms ---------------------------------------------------------------------

_MATRIX_ORDS = ("fro", "nuc", _INF, -_INF, 1, -1, 2, -2)


def linalg_matrix_norm(input, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    name = "linalg.matrix_norm"
    check_tensor(input, name, "A", 1)
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if input._dtype.category < D.FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{D.SCALAR_NAMES[input._dtype]}")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"{name}: Order {ord} not supported.")
    elif ord not in _MATRIX_ORDS:
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    d0 = _wrap_dim(dim[0], nd)
    d1 = _wrap_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if dtype is not None:
        input = input.to(dtype)
    if input._data.size == 0 and ord not in ("fro", "nuc"):
        # torch: ord 1/-1 take the max/min over dim1 of sums over dim0, inf/-inf over dim0 of sums over
        # dim1; a max over nothing, or a min over a non-empty dim of zero sums, is 0; a min over nothing fails
        emptied = {-1: d1, -_INF: d0}.get(ord)
        if ord == -2 or emptied is not None and input._data.shape[emptied] == 0:
            raise IndexError(f"amin(): Expected reduction dim {-1 if ord == -2 else 0} to have non-zero size.")
        return _out(linalg_vector_norm(input, 2, (d0, d1), keepdim), out, name)
    if ord == "fro":
        r = linalg_vector_norm(input, 2, (d0, d1), keepdim)
    elif ord in ("nuc", 2, -2):
        s = linalg_svdvals(input.movedim((d0, d1), (-2, -1)))
        if ord == "nuc":
            r = s.sum(-1)
        else:
            r = s.amax(-1) if ord == 2 else s.amin(-1)  # as torch: ties share the gradient (a zero matrix)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
    else:
        # 1 / -1: max/min column sum; inf / -inf: max/min row sum
        sum_dim, pick_dim = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = linalg_vector_norm(input, 1, sum_dim, keepdim=True)
        r = linalg_vector_norm(sums, _INF if ord > 0 else -_INF, pick_dim, keepdim=True)
        if not keepdim:
            r = r.squeeze((d0, d1))
    return _out(r, out, name)


def linalg_norm(input, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    name = "linalg.norm"
    check_tensor(input, name, "A", 1)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"{name}: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
            return linalg_vector_norm(input, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)
        if len(dims) == 2:
            return linalg_matrix_norm(input, "fro" if ord is None else ord, dims, keepdim, dtype=dtype, out=out)
        raise RuntimeError(f"{name}: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return linalg_vector_norm(input, 2, None, keepdim, dtype=dtype, out=out)
    nd = input._data.ndim
    if nd not in (1, 2):
        raise RuntimeError(f"{name}: If dim is not specified but ord is, the input must be 1D or 2D. Got {nd}D.")
    if nd == 1:
        if isinstance(ord, str):
            raise RuntimeError(f"{name}: Order {ord} not supported.")
        return linalg_vector_norm(input, ord, None, keepdim, dtype=dtype, out=out)
    return linalg_matrix_norm(input, ord, (-2, -1), keepdim, dtype=dtype, out=out)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Deprecated torch.norm: a number p is a vector norm over dim (all dims by default);
    'fro' is the 2-norm over dim; 'nuc' a nuclear (matrix) norm."""
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return linalg_vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
        dims = tuple(range(input._data.ndim)) if dim is None else dim
        return linalg_matrix_norm(input, p, dims, keepdim, dtype=dtype, out=out)
    return linalg_vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype, out=out)


def linalg_cond(input, p=None, *, out=None):
    check_matrix(input, "linalg.cond", square=p not in (None, 2, -2))
    if p is None or p in (2, -2):
        s = linalg_svdvals(input)
        big = s.narrow(-1, 0, 1).squeeze(-1)
        small = s.narrow(-1, s._data.shape[-1] - 1, 1).squeeze(-1)
        r = big / small if p != -2 else small / big
    else:
        r = linalg_matrix_norm(input, p) * linalg_matrix_norm(linalg_inv(input), p)
    return _out(r, out, "linalg.cond")


# ---- small composites -----------------------------------------------------------------

def linalg_vecdot(x, y, *, dim=-1, out=None):
    check_tensor(x, "linalg.vecdot", "x", 1)
    check_tensor(y, "linalg.vecdot", "y", 2)
    if x._dtype.category < D.FLOAT:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{D.SCALAR_NAMES[x._dtype]}")
    if x._dtype is not y._dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{D.SCALAR_NAMES[x._dtype]} and y of type {D.SCALAR_NAMES[y._dtype]} instead")
    return _out((conj(x) * y).sum(dim), out, "linalg.vecdot")


def linalg_vander(x, *, N=None):
    check_tensor(x, "linalg.vander", "x", 1)
    if x._dtype is D.bool:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    n = (x._data.shape[-1] if x._data.ndim else 1) if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    from .indexing import stack
    if x._data.ndim == 0:  # torch treats a 0-d x as one point: (1, N)
        x = x.reshape(1)
    cols = [x.new_ones(x._data.shape)]
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    return stack(cols, -1)


def linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


for _fn, _name in [(linalg_vector_norm, "vector_norm"), (linalg_matrix_norm, "matrix_norm"), (linalg_norm, "norm"),
                   (linalg_cond, "cond"), (linalg_vecdot, "vecdot"), (linalg_vander, "vander"),
                   (linalg_diagonal, "diagonal")]:
    install(_fn, "linalg." + _name, method=False, function=False)
# torch.norm / Tensor.norm are installed by statistics.py (the reduction family owns them)
