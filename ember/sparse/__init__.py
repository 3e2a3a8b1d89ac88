"""torch.sparse: products and sums of sparse COO and CSR tensors (https://pytorch.org/docs/stable/sparse.html).

The COO tensor lives in ember/_ops/sparse.py (see Note [Sparse COO storage] there), its math in
ember/_ops/sparse_math.py; the CSR tensor in ember/_ops/sparse_csr.py, its products in sparse_csr_math.py.
"""
import warnings

from .. import _dtype as D
from .._ops.sparse import SparseTensor, sparse_coo_tensor
from .._ops.sparse_csr import SparseCsrTensor
from .._ops.sparse_csr_math import csr_mm_reduce, sampled_addmm
from .._ops.sparse_math import SparseAddmm, sparse_dense_mm, sparse_sum
from .._tensor import Tensor

__all__ = ["addmm", "mm", "sampled_addmm", "sum", "FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor"]


def mm(mat1, mat2, reduce="sum"):
    """sparse @ dense (or dense @ dense); gradients reach mat1's values (on its pattern) and mat2.
    reduce= ("sum", "mean", "amax", "amin") combines each row's terms of a sparse CSR mat1."""
    if isinstance(mat1, SparseCsrTensor):
        r = csr_mm_reduce(mat1, mat2, reduce)
        if r._grad_fn is not None and reduce == "sum":
            r._grad_fn._name = "SparseAddmmBackward0"
        return r
    if reduce != "sum":
        raise NotImplementedError(f"ember: torch.sparse.mm(reduce={reduce!r}) is implemented for sparse CSR "
                                  f"tensors only")
    if isinstance(mat1, SparseTensor):
        return sparse_dense_mm(mat1, mat2, SparseAddmm, "mm")
    return mat1.mm(mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2) for a sparse mat1 and dense mat and mat2."""
    if not isinstance(mat1, SparseTensor):
        raise RuntimeError("torch.sparse.addmm: expected mat1 to be a sparse COO tensor")
    prod = sparse_dense_mm(mat1, mat2, SparseAddmm, "addmm")
    if alpha != 1:
        prod = prod * alpha
    return prod + (mat if beta == 1 else mat * beta)


def sum(input, dim=None, dtype=None):
    """All entries (a dense 0-d tensor), or over dims: dense if every sparse dim is summed, else sparse."""
    if not isinstance(input, SparseTensor):
        raise RuntimeError("_sparse_sum expected sparse coordinate tensor layout but got Strided")
    return sparse_sum(input, dim, dtype)


def _legacy(dtype, name):
    """torch.sparse.FloatTensor(indices, values, size) / (*sizes): the pre-1.0 constructors."""

    def make(*args, size=None):
        if len(args) >= 2 and isinstance(args[0], Tensor):
            warnings.warn("torch.sparse.SparseTensor(indices, values, shape, *, device=) is deprecated.  Please use "
                          "torch.sparse_coo_tensor(indices, values, shape, dtype=, device=).", UserWarning,
                          stacklevel=2)
            shape = args[2] if len(args) > 2 else size
            return sparse_coo_tensor(args[0], args[1].to(dtype), shape)
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)
        from .. import zeros
        return sparse_coo_tensor(zeros((len(sizes), 0), dtype=D.int64), zeros(0, dtype=dtype), sizes)
    make.__name__ = make.__qualname__ = name
    return make


FloatTensor = _legacy(D.float32, "FloatTensor")
DoubleTensor = _legacy(D.float64, "DoubleTensor")
LongTensor = _legacy(D.int64, "LongTensor")
IntTensor = _legacy(D.int32, "IntTensor")
BoolTensor = _legacy(D.bool, "BoolTensor")
