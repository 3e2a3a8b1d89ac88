"""Sparse CSR tensors: the tensor, its graph nodes (to_dense, values(), from values, from dense), its
accessors and repr (https://pytorch.org/docs/stable/sparse.html#sparse-csr-tensor); construction and
conversions are in sparse_csr_build.py, products in sparse_csr_math.py.

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
from collections import namedtuple

import numpy as np

from .. import _dtype as D
from .._layout import sparse_coo, sparse_csr, strided
from .._tensor import _DTYPE_OF, Size, Tensor, VersionCounter, _wrap_dim
from ..autograd import grad_mode
from ..autograd.graph import Node, SavedTensor, init_node

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
    """init_node for inputs of any layout (init_node reads no array; the gradients' shapes come from the nodes
    the edges lead to, which hold their outputs' logical shapes)."""
    init_node(ctx, inputs)
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
        from .sparse_csr_build import csr_to_coo
        if layout is sparse_csr:
            return self
        if layout not in (None, sparse_coo):
            raise RuntimeError(f"ember stores sparse tensors as COO or CSR only, not layout {layout}")
        return csr_to_coo(self)

    def to_sparse_coo(self):
        from .sparse_csr_build import csr_to_coo
        return csr_to_coo(self)

    # ---- copies and casts -----------------------------------------------------------
    def detach(self):
        return _make_csr(self._csr_crow, self._csr_col, self._csr_values, self._csr_size, self._dtype)

    @property
    def data(self):
        return self.detach()

    def clone(self, *, memory_format=None):
        return FromValues.apply(self.values().clone(), crow=self._csr_crow.copy(), col=self._csr_col.copy(),
                                size=self._csr_size)

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
            raise RuntimeError("Unimplemented backend SparseCsrCPU")
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
        """csr + dense: a dense result, as torch's; csr + csr through dense (unlike torch's union of the
        patterns, entries that cancel to zero leave the result's pattern)."""
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


from . import sparse_csr_build  # noqa: E402,F401  (construction, invariants, conversions; installs the dense side)
