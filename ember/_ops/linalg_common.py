"""Shared pieces of the linalg family: argument checks with torch's messages,
LinAlgError, the named-tuple return types, and small differentiable helpers
(triangle masks, identity, diag_embed) built from ember ops so that backward
formulas using them differentiate again."""
import collections

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor

_make = Tensor._make


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: singular or not positive-definite input (a RuntimeError, as in torch)."""


def return_type(name, fields):
    """A torch.return_types-style named tuple (a real tuple, so unpacking and indexing work)."""
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "ember.return_types"
    return cls


# ---- argument checks ------------------------------------------------------------------

def check_matrix(A, name, square=True, argname="A", allow_int=False):
    """torch's checks for a (batch of) matrix argument of a linalg function."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument '{argname}' must be Tensor, not {type(A).__name__}")
    shape = A._data.shape
    if len(shape) < 2:
        raise RuntimeError(f"{name}: The input tensor {argname} must have at least 2 dimensions.")
    check_float(A, name, allow_int)
    if square and shape[-1] != shape[-2]:
        raise RuntimeError(f"{name}: {argname} must be batches of square matrices, but they are {shape[-2]} by "
                           f"{shape[-1]} matrices")


def check_float(A, name, allow_int=False):
    d = A._dtype
    if d.category < D.FLOAT and not allow_int:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{D.SCALAR_NAMES[d]}")
    if d is D.float16 or d is D.bfloat16:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {D.SCALAR_NAMES[d]}")


def check_same_dtype(A, B, name):
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of type "
                           f"{D.SCALAR_NAMES[A._dtype]} and B of type {D.SCALAR_NAMES[B._dtype]} instead")


def batch_prefix(shape, index):
    """'(Batch element i): ' for batched inputs, as torch prefixes per-matrix errors."""
    return f"(Batch element {index}): " if len(shape) > 2 else ""


def first_failure(info):
    """(flat batch index, info value) of the first nonzero info, or None."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size == 0:
        return None
    return int(bad[0]), int(flat[bad[0]])


def eps_of(dtype):
    return float(np.finfo(dtype.to_real().np).eps)


# ---- LU with partial pivoting (LAPACK getrf semantics) ----------------------------------

def getrf(a, block=32):
    """LU factorization with partial pivoting of a batch (..., m, n) of arrays.

    Returns (LU packed as L - I + U, pivots 1-based int32, info int32), with LAPACK's
    conventions: the pivot is the first entry of largest magnitude (|Re|+|Im| for complex), info = j > 0 names
    the first exactly-zero pivot U[j-1, j-1]. NumPy has no LU, so this is LAPACK's blocked
    right-looking algorithm written with NumPy: each panel of `block` columns is eliminated
    column by column (vectorized over the batch), then the trailing matrix is updated with
    one triangular solve and one GEMM.
    """
    shape = a.shape
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    lu = np.array(flat_batch(a), copy=True)
    nb = lu.shape[0]
    piv = np.empty((nb, k), np.int32)
    info = np.zeros(nb, np.int32)
    rows = np.arange(nb)
    for j0 in range(0, k, block):
        j1 = min(j0 + block, k)
        for j in range(j0, j1):
            p = j + np.argmax(_pivot_size(lu[:, j:, j]), axis=1)
            piv[:, j] = p + 1
            if np.any(p != j):
                top = lu[rows, j].copy()
                lu[rows, j] = lu[rows, p]
                lu[rows, p] = top
            pivot = lu[:, j, j]
            zero = pivot == 0
            info[(info == 0) & zero] = j + 1
            scale = np.where(zero, np.ones((), lu.dtype), pivot)  # LAPACK skips the scaling for a zero pivot
            lu[:, j + 1:, j] /= scale[:, None]
            lu[:, j + 1:, j + 1:j1] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:j1]
        if j1 < n:
            unit_lower = np.tril(lu[:, j0:j1, j0:j1], -1) + np.eye(j1 - j0, dtype=lu.dtype)
            lu[:, j0:j1, j1:] = np.linalg.solve(unit_lower, lu[:, j0:j1, j1:])
            lu[:, j1:, j1:] -= lu[:, j1:, j0:j1] @ lu[:, j0:j1, j1:]
    return lu.reshape(shape), piv.reshape(shape[:-2] + (k,)), info.reshape(shape[:-2])


def _pivot_size(col):
    """LAPACK's i?amax measure: |x| for reals, |Re x| + |Im x| for complex (not the modulus)."""
    if np.iscomplexobj(col):
        return np.abs(col.real) + np.abs(col.imag)
    return np.abs(col)


def flat_batch(a, core=2):
    """a with its batch dims flattened into one (reshape((-1, ...)) fails for empty matrices)."""
    shape = a.shape
    return a.reshape((int(np.prod(shape[:-core])),) + shape[len(shape) - core:])


def pivots_to_perm(piv, m):
    """LAPACK row interchanges (1-based, applied in order) -> permutation array perm with
    A[perm] = L @ U, for a batch (..., k)."""
    batch = piv.shape[:-1]
    flat = piv.reshape((int(np.prod(batch)), piv.shape[-1])) - 1
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        a = perm[rows, j].copy()
        perm[rows, j] = perm[rows, p]
        perm[rows, p] = a
    return perm.reshape(batch + (m,))


# ---- differentiable helpers (ember ops on Tensors) --------------------------------------

def eye_like(t, n=None):
    """An n x n identity in t's dtype (a constant)."""
    n = t._data.shape[-1] if n is None else n
    return _make(np.eye(n, dtype=t._data.dtype), t._dtype)


def tril(t, k=0):
    """t with the part above diagonal k zeroed (a product with a constant mask)."""
    m, n = t._data.shape[-2:]
    return t * _make(np.tri(m, n, k, dtype=t._data.dtype), t._dtype)


def triu(t, k=0):
    m, n = t._data.shape[-2:]
    return t * _make(1 - np.tri(m, n, k - 1, dtype=t._data.dtype), t._dtype)


def diag_embed(v):
    """(..., n) -> (..., n, n) with v on the diagonal."""
    return v.unsqueeze(-1) * eye_like(v)


def diagonal(t):
    return t.diagonal(0, -2, -1)


def real_dtype_of(t):
    return t._dtype.to_real()
