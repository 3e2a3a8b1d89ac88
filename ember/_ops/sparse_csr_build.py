"""Sparse CSR construction, invariants and conversions: torch.sparse_csr_tensor, Tensor.to_sparse_csr,
COO <-> CSR, and the dense side of the CSR API (see Note [Sparse CSR storage] in sparse_csr.py)."""
import inspect

import numpy as np

from .. import _dtype as D
from .._tensor import _DTYPE_OF, Tensor
from ._registry import install, namespace
from .sparse_csr import (SparseCsrTensor, DenseToCsr, FromValues, _make_csr, _row_of_entry, _state)


def _as_tensor(x, dtype=None):
    if isinstance(x, Tensor):
        return x if dtype is None or x._dtype is dtype else x.to(dtype)
    from .creation import tensor
    return tensor(x, dtype=dtype)


_INDEX_NAMES = {np.dtype(np.int32): "Int", np.dtype(np.int64): "Long"}


def check_invariants(crow, col, nnz_values, size, dense_dim):
    """torch's _validate_sparse_compressed_tensor_args for CSR, with its messages."""
    nb = crow.ndim - 1
    if crow.dtype != col.dtype:
        raise RuntimeError(f"crow_indices and col_indices must have the same dtype, bot got "
                           f"{D.SCALAR_NAMES[_DTYPE_OF[crow.dtype]]} and {D.SCALAR_NAMES[_DTYPE_OF[col.dtype]]}, "
                           f"respectively")
    if crow.dtype not in _INDEX_NAMES:
        raise RuntimeError(f"crow_indices and col_indices must be an int32 or int64 type, but got: "
                           f"{D.SCALAR_NAMES[_DTYPE_OF[crow.dtype]]}")
    if crow.ndim < 1:
        raise RuntimeError(f"crow_indices must have dimensionality >= 1 but got {crow.ndim}")
    if crow.ndim != col.ndim:
        raise RuntimeError(f"crow_indices and col_indices dimensionalities must be equal but got {crow.ndim} and "
                           f"{col.ndim}, respectively")
    if len(size) != nb + 2 + dense_dim:
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense dimensionalities (={nb} + 2 "
                           f"+ {dense_dim}) but got {len(size)}")
    if tuple(crow.shape[:-1]) != tuple(col.shape[:-1]) or tuple(crow.shape[:-1]) != tuple(size[:nb]):
        raise RuntimeError(f"all batch dimensions of crow_indices ({list(crow.shape[:-1])}), col_indices "
                           f"({list(col.shape[:-1])}) and the size ({list(size[:nb])}) must be equal")
    m, n = size[nb], size[nb + 1]
    if crow.shape[-1] != m + 1:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 (={m + 1}), but got "
                           f"{crow.shape[-1]}")
    if col.shape[-1] != nnz_values:
        raise RuntimeError(f"col_indices.shape[-1] must be equal to nnz (={nnz_values}) as defined by values.shape[{nb}]"
                           f", but got {col.shape[-1]}")
    if crow.size and (crow[..., 0] != 0).any():
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if crow.size and (crow[..., -1] != nnz_values).any():
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    steps = np.diff(crow, axis=-1)
    if (steps < 0).any() or (steps > n).any():
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied.")
    if col.size and ((col < 0).any() or (col >= n).any()):
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")
    if col.size:
        rows = _row_of_entry(crow)
        same_row = rows[..., 1:] == rows[..., :-1]
        if (same_row & (col[..., 1:] <= col[..., :-1])).any():
            raise RuntimeError("`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, ..., "
                               "nrows are sorted and distinct along the last dimension values` is not satisfied.")


def _index_array(t, size):
    if t._data.dtype not in _INDEX_NAMES:
        if size is None:  # torch fails estimating the size first
            raise NotImplementedError(f"\"estimate_sparse_compressed_tensor_size\" not implemented for "
                                      f"'{D.SCALAR_NAMES[t._dtype]}'")
        raise RuntimeError(f"crow_indices and col_indices dtype must be Int or Long, but got "
                           f"{D.SCALAR_NAMES[t._dtype]}")
    return np.ascontiguousarray(t._data)


def _type_error(fname, name, expected, value, position=None):
    where = "" if position is None else f" (position {position})"
    return TypeError(f"{fname}(): argument '{name}'{where} must be {expected}, not {type(value).__name__}")


class _NoSize:
    """size left out (torch refuses an explicit size=None: its overloads take a size or none)."""

    def __repr__(self):
        return "None"


_NO_SIZE = _NoSize()


def sparse_csr_tensor(crow_indices, col_indices, values, size=_NO_SIZE, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """torch.sparse_csr_tensor (the invariants are always checked, see Note [Sparse CSR storage])."""
    if size is None:
        raise TypeError("sparse_csr_tensor() received an invalid combination of arguments - got an explicit "
                        "size=None; leave size out to infer it")
    if size is _NO_SIZE:
        size = None
    for name, flag in (("requires_grad", requires_grad), ("pin_memory", pin_memory)):
        if flag.__class__ is not bool:
            raise _type_error("sparse_csr_tensor", name, "bool", flag)
    crow_t = _as_tensor(crow_indices)
    col_t = _as_tensor(col_indices)
    vals = _as_tensor(values, dtype)
    if check_invariants is not None and check_invariants.__class__ is not bool:
        raise _type_error("sparse_csr_tensor", "check_invariants", "bool", check_invariants)
    if size is not None and not (isinstance(size, (tuple, list)) and all(isinstance(n, int) for n in size)):
        raise _type_error("sparse_csr_tensor", "size", "tuple of ints", size, 4)
    crow = _index_array(crow_t, size)
    col = _index_array(col_t, size)
    nb = max(crow.ndim - 1, 0)
    if vals._data.ndim <= nb:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block dimensionalities (={nb} + 0) "
                           f"but got {vals._data.ndim}")
    dense_dim = vals._data.ndim - nb - 1
    if size is None:
        if crow.ndim < 1:
            raise RuntimeError(f"crow_indices must have dimensionality >= 1 but got {crow.ndim}")
        ncols = int(col.max()) + 1 if col.size else 0
        size = tuple(crow.shape[:-1]) + (crow.shape[-1] - 1, ncols) + tuple(vals._data.shape[nb + 1:])
    size = tuple(int(s) for s in size)
    _check(crow, col, vals._data.shape[nb] if vals._data.ndim > nb else 0, size, dense_dim)
    if dense_dim and tuple(vals._data.shape[nb + 1:]) != size[nb + 2:]:
        raise RuntimeError(f"values.shape[{nb + 1}:] must be equal to the dense dimensions of the size "
                           f"{list(size[nb + 2:])}, but got {list(vals._data.shape[nb + 1:])}")
    if vals._requires_grad and _state.enabled:
        return FromValues.apply(vals, crow=crow, col=col, size=size)
    out = _make_csr(crow, col, vals._data, size, vals._dtype)
    if requires_grad:
        out.requires_grad_(True)
    return out


_check = check_invariants


def to_sparse_csr(self, dense_dim=None):
    """Tensor.to_sparse_csr of a dense tensor: its non-zeros, batched over the leading dims."""
    if dense_dim is not None and not isinstance(dense_dim, int) or isinstance(dense_dim, bool):
        raise _type_error("to_sparse_csr", "dense_dim", "int", dense_dim, 1)
    if isinstance(self, SparseCsrTensor):
        return self.to_sparse_csr(dense_dim)
    if self.is_sparse:
        return coo_to_csr(self)
    if self._data.ndim < 2:
        raise RuntimeError(f"to_sparse_csr: expected a tensor of at least 2 dims, got {self._data.ndim}")
    return DenseToCsr.apply(self, dense_dim=dense_dim)


def csr_to_coo(s):
    """CSR -> COO (coalesced): indices (rows, cols) of a 2-d CSR tensor; values keep the history."""
    from .sparse import _make_sparse
    if s._csr_crow.ndim != 1 or s.dense_dim():
        raise RuntimeError("ember: to_sparse() of a batched or hybrid sparse CSR tensor is not implemented")
    idx = np.stack([_row_of_entry(s._csr_crow), s._csr_col.astype(np.int64)]) if s._nnz() else \
        np.zeros((2, 0), dtype=np.int64)
    return _make_sparse(idx, s.values() if s._requires_grad else s.values().detach(), s._csr_size, True)


def coo_to_csr(c):
    """COO -> CSR: coalesce (duplicates summed), then compress the row indices."""
    if c.sparse_dim() != 2:
        raise RuntimeError("coo_to_sparse_csr: conversion from Sparse to SparseCsr for input tensors with "
                           "sparse_dim()!=2 is not supported")
    c = c.coalesce()
    rows = c._sp_indices[0]
    m = c._sp_size[0]
    crow = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m), out=crow[1:])
    col = np.ascontiguousarray(c._sp_indices[1])
    v = c._sp_values
    if v._requires_grad and _state.enabled:
        return FromValues.apply(v, crow=crow, col=col, size=c._sp_size)
    return _make_csr(crow, col, v._data, c._sp_size, v._dtype)


# ---- the dense side of the CSR API ------------------------------------------------------------

def _layout_error(name):
    def fn(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected sparse row compressed tensor layout but got "
                           f"{'Sparse' if self.is_sparse else 'Strided'}")
    fn.__name__ = name
    return fn


for _n in ("crow_indices", "col_indices"):
    install(_layout_error(_n), _n, function=False)
install(to_sparse_csr, "to_sparse_csr", function=False)
Tensor.is_sparse_csr = False

from .sparse import SparseTensor  # noqa: E402  (COO -> CSR)

SparseTensor.to_sparse_csr = lambda self, dense_dim=None: coo_to_csr(self)

from ._argcheck import guard  # noqa: E402

sparse_csr_tensor.__signature__ = inspect.signature(sparse_csr_tensor).replace(parameters=[
    p.replace(default=None) if p.name == "size" else p
    for p in inspect.signature(sparse_csr_tensor).parameters.values()])  # torch's stub: size=None
sparse_csr_tensor = guard(sparse_csr_tensor, "sparse_csr_tensor")  # Note [Checked at the boundary]
namespace.update(sparse_csr_tensor=sparse_csr_tensor)
