"""Sparse CSR tensors: torch.sparse_csr_tensor, Tensor.to_sparse_csr, crow/col/values, to_dense,
COO <-> CSR, repr (https://pytorch.org/docs/stable/sparse.html#sparse-csr-tensor).

Note [Sparse CSR storage]: a SparseCsrTensor is an ember.Tensor subclass holding three NumPy
arrays, crow (*batch, nrows + 1), col (*batch, nnz) and values (*batch, nnz, *dense), with the
index dtype it was given (int32 or int64), and its size. Unlike a COO tensor, whose history lives
on its values Tensor (Note [Sparse COO storage]), a CSR tensor is itself an input and output of
graph nodes, as in torch: its gradient may be dense or CSR (torch.mm and sparse.sampled_addmm give
a CSR input the dense gradient, to_dense() and values() a CSR one on its pattern), so it carries
the ordinary autograd fields. Its `_data` refuses access, so a dense-only op fails loudly. CSR ops
are CsrOp classes: forward on arrays and Csr parts, backward in ember ops (the engine passes
gradients of any layout, Note [Sparse gradients]).

Unlike torch, which checks the CSR invariants only when asked (check_invariants=True), ember always
checks them: a NumPy kernel given bad indices would return a silently wrong answer.
"""
import inspect
from collections import namedtuple

import numpy as np

from .. import _dtype as D
from .._layout import sparse_coo, sparse_csr, strided
from .._tensor import _DTYPE_OF, Size, Tensor, VersionCounter, _wrap_dim
from ..autograd import grad_mode
from ..autograd.graph import Node, SavedTensor, gradient_edge, init_node
from ._registry import install, namespace

_state = grad_mode._state
_make = Tensor._make
_new = object.__new__

# the arrays of a CSR tensor, as a CsrOp's forward sees them
Csr = namedtuple("Csr", "crow col values size")


def _row_of_entry(crow):
    """The row of every stored entry, batch after batch: (*batch, nnz) int64."""
    crow = np.asarray(crow, dtype=np.int64)
    m = crow.shape[-1] - 1
    counts = np.diff(crow.reshape(-1, m + 1), axis=-1)
    rows = np.repeat(np.tile(np.arange(m, dtype=np.int64), counts.shape[0]), counts.ravel())
    return rows.reshape(crow.shape[:-1] + (-1,)) if crow.ndim > 1 else rows


def _flat_positions(crow, col, size):
    """Row-major position of every stored entry in the (*batch, nrows, ncols) block: (B * nnz,) int64."""
    nb = crow.ndim - 1
    m, n = size[nb], size[nb + 1]
    rows = _row_of_entry(crow).reshape(-1)
    cols = np.asarray(col, dtype=np.int64).reshape(-1)
    nnz = col.shape[-1]
    batch = np.repeat(np.arange(rows.size // max(nnz, 1) if nnz else 0, dtype=np.int64), nnz)
    return (batch * m + rows) * n + cols


# ---- graph nodes with CSR inputs or outputs ----------------------------------------------

def _parts(t):
    if t is None:
        return None
    if t.__class__ is SparseCsrTensor:
        return Csr(t._csr_crow, t._csr_col, t._csr_values, t._csr_size)
    return t._data


class CsrOp(Node):
    """An op some of whose inputs or outputs are CSR tensors: forward(ctx, *parts, **params) gets
    arrays for dense inputs and Csr parts for CSR ones and returns an array or a Csr;
    backward(ctx, grad) is written in ember ops, as for Op. ctx.saved_tensors gives the inputs."""
    __slots__ = ()

    @classmethod
    def apply(cls, *inputs, **params):
        ctx = _new(cls)
        ctx._saved = ()
        out = cls.forward(ctx, *[_parts(t) for t in inputs], **params)
        result = _wrap(out)
        if _state.enabled and any(t is not None and t._requires_grad for t in inputs):
            _attach(ctx, inputs, result)
        return result


def _wrap(out):
    if isinstance(out, Csr):
        return _make_csr(out.crow, out.col, out.values, out.size)
    return _make(out)


def _attach(ctx, inputs, result):
    """init_node for inputs of any layout (their logical shapes are the gradients' shapes)."""
    init_node(ctx, ())
    edges = []
    needs = []
    meta = []
    for t in inputs:
        if t is None:
            edges.append((None, 0))
            needs.append(False)
            meta.append(None)
            continue
        meta.append((tuple(t.shape), t._dtype))
        needs.append(t._requires_grad)
        edges.append(gradient_edge(t) if t._requires_grad else (None, 0))
    ctx.next_functions = tuple(edges)
    ctx.needs_input_grad = tuple(needs)
    ctx._input_meta = tuple(meta)
    ctx._saved = tuple(SavedTensor("input", t, None, t._version_counter.value) for t in inputs if t is not None)
    ctx._out_meta = ((tuple(result.shape), result._dtype),)
    if result._dtype.category >= D.FLOAT:
        result._requires_grad = True
        result._grad_fn = ctx


class ToDense(CsrOp):
    """The dense tensor of a CSR one; its gradient is the incoming one on the CSR pattern."""
    _name = "ToDenseBackward0"

    @staticmethod
    def forward(ctx, s):
        ctx.args = (s.crow, s.col, s.size)
        out = np.zeros(s.size, dtype=s.values.dtype)
        nb = s.crow.ndim - 1
        flat = out.reshape((-1,) + s.size[nb + 2:])
        flat[_flat_positions(s.crow, s.col, s.size)] = s.values.reshape((-1,) + s.values.shape[nb + 1:])
        return out

    def backward(ctx, grad):
        return sparse_mask(grad, *ctx.args)


class Values(CsrOp):
    """csr.values(): the stored values (*batch, nnz, *dense); the gradient comes back on the pattern."""
    _name = "ValuesBackward0"

    @staticmethod
    def forward(ctx, s):
        ctx.args = (s.crow, s.col, s.size)
        return s.values

    def backward(ctx, grad):
        crow, col, size = ctx.args
        return FromValues.apply(grad, crow=crow, col=col, size=size)


class FromValues(CsrOp):
    """A CSR tensor on a given pattern from a values tensor (sparse_csr_tensor, sparse_mask, COO -> CSR)."""
    _name = "SparseCompressedTensorBackward0"

    @staticmethod
    def forward(ctx, values, crow, col, size):
        ctx.args = (crow, col, size)
        return Csr(crow, col, values, size)

    def backward(ctx, grad):
        crow, col, size = ctx.args
        return _gather(_dense(grad), crow, col, size)


class DenseToCsr(CsrOp):
    """Tensor.to_sparse_csr of a dense tensor (pattern: its non-zeros); the gradient goes back dense."""
    _name = "ToSparseCsrBackward0"

    @staticmethod
    def forward(ctx, x, dense_dim):
        return _dense_to_csr_parts(x, dense_dim)

    def backward(ctx, grad):
        return _dense(grad)


def _dense(t):
    return t if t.layout is strided else ToDense.apply(t)


def _gather(dense, crow, col, size):
    """The entries of a dense tensor at a CSR pattern, shaped like its values (ember ops)."""
    nb = crow.ndim - 1
    rows = dense.reshape((-1,) + tuple(size[nb + 2:]))
    picked = rows.index_select(0, _make(_flat_positions(crow, col, size)))
    return picked.reshape(tuple(col.shape) + tuple(size[nb + 2:]))


def sparse_mask(dense, crow, col, size):
    """A dense tensor's entries on a CSR pattern, as a CSR tensor (torch's Tensor.sparse_mask)."""
    return FromValues.apply(_gather(_dense(dense), crow, col, size), crow=crow, col=col, size=tuple(size))


def _dense_to_csr_parts(x, dense_dim):
    dense_dim = 0 if dense_dim is None else int(dense_dim)
    nb = x.ndim - 2 - dense_dim
    if x.ndim < 2 + dense_dim or nb < 0:
        raise RuntimeError(f"to_sparse_csr: expected a tensor of at least {2 + dense_dim} dims (2 sparse + "
                           f"{dense_dim} dense), got {x.ndim}")
    batch = x.shape[:nb]
    m, n = x.shape[nb], x.shape[nb + 1]
    nbatch = int(np.prod(batch, dtype=np.int64))
    blocks = x.reshape((nbatch, m, n, int(np.prod(x.shape[nb + 2:], dtype=np.int64))))
    nonzero = (blocks != 0).any(axis=-1) if blocks.shape[-1] else np.zeros(blocks.shape[:3], dtype=bool)
    counts = nonzero.reshape(nonzero.shape[0], -1).sum(axis=1)
    if counts.size and (counts != counts[0]).any():
        raise RuntimeError("Expect the same number of specified elements per batch.")
    crow = np.zeros((nonzero.shape[0], m + 1), dtype=np.int64)
    np.cumsum(nonzero.sum(axis=2), axis=1, out=crow[:, 1:])
    b_idx, r_idx, c_idx = np.nonzero(nonzero)
    values = x.reshape((nbatch, m, n) + x.shape[nb + 2:])[b_idx, r_idx, c_idx]
    nnz = int(counts[0]) if counts.size else 0
    return Csr(crow.reshape(batch + (m + 1,)), c_idx.astype(np.int64).reshape(batch + (nnz,)),
               values.reshape(batch + (nnz,) + x.shape[nb + 2:]), tuple(x.shape))


# ---- the tensor ------------------------------------------------------------------------------

def _no_dense(self):
    raise NotImplementedError("Could not run this operation with arguments from the 'SparseCsrCPU' backend: ember "
                              "implements sparse CSR tensors for conversions, sparse.sampled_addmm and mm/matmul "
                              "only. Call .to_dense() first.")


def _refuse(message, exc=RuntimeError):
    def fn(self, *args, **kwargs):
        raise exc(message)
    return fn


class SparseCsrTensor(Tensor):
    """A tensor of layout torch.sparse_csr (see Note [Sparse CSR storage])."""
    __slots__ = ("_csr_crow", "_csr_col", "_csr_values", "_csr_size")
    is_sparse = False
    is_sparse_csr = True
    layout = sparse_csr
    _data = property(_no_dense)

    def __new__(cls, *args, **kwargs):
        raise TypeError("construct sparse CSR tensors with torch.sparse_csr_tensor(crow_indices, col_indices, values)")

    # ---- metadata -------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._csr_size)

    def size(self, dim=None):
        if dim is None:
            return Size(self._csr_size)
        return self._csr_size[_wrap_dim(dim, len(self._csr_size))]

    def dim(self):
        return len(self._csr_size)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._csr_size)

    def numel(self):
        return int(np.prod(self._csr_size, dtype=np.int64))

    nelement = numel

    def __len__(self):
        return self._csr_size[0]

    def sparse_dim(self):
        return 2

    def dense_dim(self):
        return self._csr_values.ndim - self._csr_crow.ndim

    def _nnz(self):
        return self._csr_col.shape[-1]

    def storage_offset(self):
        return 0

    stride = _refuse("Sparse CSR tensors do not have strides")
    is_contiguous = _refuse("Sparse CSR tensors do not have is_contiguous")
    data_ptr = _refuse("Cannot access data pointer of Tensor that doesn't have storage")
    tolist = data_ptr
    is_coalesced = _refuse("is_coalesced expected sparse coordinate tensor layout but got SparseCsr")
    indices = _refuse("indices expected sparse coordinate tensor layout but got SparseCsr")
    coalesce = _refuse("coalesce expected sparse coordinate tensor layout but got SparseCsr")

    def numpy(self, *, force=False):
        raise TypeError("can't convert SparseCsr layout tensor to numpy. Use Tensor.to_dense() first.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert SparseCsr layout tensor to numpy. Use Tensor.to_dense() first.")

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.to_dense())

    # ---- accessors ------------------------------------------------------------------
    def crow_indices(self):
        return _make(self._csr_crow)

    def col_indices(self):
        return _make(self._csr_col)

    def values(self):
        if _state.enabled and self._requires_grad:
            return Values.apply(self)
        return _make(self._csr_values, self._dtype)

    def to_dense(self, dtype=None, *, masked_grad=None):
        out = ToDense.apply(self)
        return out if dtype is None else out.to(dtype)

    def to_sparse_csr(self, dense_dim=None):
        if dense_dim is not None:
            raise RuntimeError("to_sparse_csr: conversion from SparseCsr to SparseCsr with dense_dim argument "
                               "!= None is not supported")
        return self

    def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None):
        if layout is sparse_csr:
            return self
        if layout not in (None, sparse_coo):
            raise RuntimeError(f"ember stores sparse tensors as COO or CSR only, not layout {layout}")
        return csr_to_coo(self)

    def to_sparse_coo(self):
        return csr_to_coo(self)

    # ---- copies and casts -----------------------------------------------------------
    def detach(self):
        return _make_csr(self._csr_crow, self._csr_col, self._csr_values, self._csr_size, self._dtype)

    @property
    def data(self):
        return self.detach()

    def clone(self, *, memory_format=None):
        values = FromValues.apply(self.values().clone(), crow=self._csr_crow.copy(), col=self._csr_col.copy(),
                                  size=self._csr_size)
        return values

    def to(self, *args, **kwargs):
        from .creation import parse_to_args
        device, dtype, copy = parse_to_args(args, kwargs)
        if dtype is None or dtype is self._dtype:
            return self.clone() if copy else self
        return FromValues.apply(self.values().to(dtype), crow=self._csr_crow, col=self._csr_col, size=self._csr_size)

    def float(self, memory_format=None):
        return self.to(D.float32)

    def double(self, memory_format=None):
        return self.to(D.float64)

    def cfloat(self, memory_format=None):
        return self.to(D.complex64)

    def cdouble(self, memory_format=None):
        return self.to(D.complex128)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            from ..autograd.graph import _type_name
            return "torch.sparse_csr." + _type_name(self)  # ember's own name: torch raises here
        return self.to(dtype)

    def __reduce_ex__(self, proto):
        return (_rebuild, (self._csr_crow, self._csr_col, self._csr_values, self._csr_size, self._requires_grad))

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
        new = _make_csr(self._csr_crow.copy(), self._csr_col.copy(), self._csr_values.copy(), self._csr_size)
        new._requires_grad = self._requires_grad
        memo[id(self)] = new
        return new

    def __repr__(self, *, tensor_contents=None):
        return csr_repr(self)

    __str__ = __repr__

    # ---- arithmetic that gradients need ---------------------------------------------
    def __mul__(self, other):
        """csr * number (or 0-d tensor): a CSR tensor on the same pattern."""
        if isinstance(other, Tensor) and other.layout is strided and other.dim() == 0 or \
                isinstance(other, (int, float, complex, bool)):
            return FromValues.apply(self.values() * other, crow=self._csr_crow, col=self._csr_col,
                                    size=self._csr_size)
        raise NotImplementedError("ember: a sparse CSR tensor can be multiplied only by a number here")

    __rmul__ = mul = __mul__

    def __neg__(self):
        return self * -1

    neg = __neg__

    def __add__(self, other):
        """csr + dense (a dense result, as torch's) or csr + csr (through dense, the union pattern)."""
        if isinstance(other, Tensor) and other.layout is strided:
            return self.to_dense() + other
        if isinstance(other, SparseCsrTensor):
            return (self.to_dense() + other.to_dense()).to_sparse_csr()
        raise NotImplementedError(f"ember: sparse CSR + {type(other).__name__} is not implemented")

    add = __add__

    def __radd__(self, other):
        if isinstance(other, Tensor) and other.layout is strided:
            return other + self.to_dense()
        raise NotImplementedError(f"ember: {type(other).__name__} + sparse CSR is not implemented")

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        if dim is None and not keepdim:
            return self.values().sum(dtype=dtype)
        return self.to_dense().sum(dim, keepdim, dtype=dtype)


def _make_csr(crow, col, values, size, dtype=None):
    """A SparseCsrTensor around its arrays (no checks, no history)."""
    s = _new(SparseCsrTensor)
    s._csr_crow = crow
    s._csr_col = col
    s._csr_values = values
    s._csr_size = tuple(int(n) for n in size)
    s._dtype = _DTYPE_OF[values.dtype] if dtype is None else dtype
    s._requires_grad = False
    s._grad = None
    s._grad_fn = None
    s._output_nr = 0
    s._version_counter = VersionCounter()
    s._base = None
    s._grad_acc = None
    s._hooks = None
    s._retains_grad = False
    return s


def _rebuild(crow, col, values, size, requires_grad):
    s = _make_csr(crow, col, values, size)
    s._requires_grad = requires_grad
    return s


# ---- construction and invariants ------------------------------------------------------------

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


# ---- repr --------------------------------------------------------------------------------

def csr_repr(s):
    """torch's format: tensor(crow_indices=..., col_indices=..., values=..., size=..., nnz=..., layout=...)."""
    from .._tensor_str import _add_suffixes
    from .sparse import _inner_str
    outer = len("tensor(")
    pad = " " * outer
    index_dtype = _DTYPE_OF[s._csr_crow.dtype]
    body = ("crow_indices=tensor(" + _inner_str(s._csr_crow, index_dtype, outer + len("crow_indices=tensor(")) +
            "),\n" + pad + "col_indices=tensor(" + _inner_str(s._csr_col, index_dtype, outer + len("col_indices=tensor("))
            + "),\n" + pad + "values=tensor(" + _inner_str(s._csr_values, s._dtype, outer + len("values=tensor(")) + ")")
    suffixes = [f"size={tuple(s._csr_size)}", f"nnz={s._nnz()}"]
    if s._dtype not in (D.get_default_dtype(), D.default_complex_dtype(), D.int64, D.bool):
        suffixes.append(f"dtype={s._dtype!r}")
    suffixes.append("layout=torch.sparse_csr")
    if s._grad_fn is not None:
        suffixes.append(f"grad_fn=<{s._grad_fn.name()}>")
    elif s._requires_grad:
        suffixes.append("requires_grad=True")
    return "tensor(" + _add_suffixes(body, suffixes, outer)


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
