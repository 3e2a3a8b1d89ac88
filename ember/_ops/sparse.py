"""Sparse COO tensors: torch.sparse_coo_tensor, coalesce, to_dense/to_sparse, sparse @ dense,
sparse sums and the zero-preserving elementwise ops.

Note [Sparse COO storage]: a SparseTensor is an ember.Tensor subclass holding an int64 index
array (sparse_dim x nnz, NumPy), a values Tensor (nnz x dense dims) and the size. The
values Tensor carries all autograd history: every op on a sparse tensor is an op on its
values (gathers, scatter-adds, products), so gradients reach the values and the dense
operands through the ordinary engine. A sparse tensor never enters the engine itself,
and its `_data` refuses access, so a dense-only op fails loudly (NotImplementedError,
as torch's "Could not run ... with arguments from the 'SparseCPU' backend").

The gradient of a *leaf* sparse tensor (requires_grad=True) is its values' gradient
shown on the coalesced pattern: torch's answer for sparse.mm, to_dense, sum and the
elementwise ops. (torch.mm/matmul give a leaf sparse tensor a dense gradient instead;
ember keeps the sparse, masked one.)
"""
import numpy as np

from .. import _dtype as D
from .._backend.numpy_cpu import index_add_rows
from .._layout import sparse_coo
from .._tensor import Size, Tensor, _wrap_dim
from ..autograd import grad_mode
from ._registry import Op, install, namespace

_state = grad_mode._state
_make = Tensor._make
_new = object.__new__


def _long(arr):
    return _make(np.ascontiguousarray(arr, dtype=np.int64), D.int64)


def _flat(indices, sizes):
    """Row-major linear position of every column of `indices` among the sparse dims."""
    flat = np.zeros(indices.shape[1], dtype=np.int64)
    for d, n in enumerate(sizes):
        flat *= n
        flat += indices[d]
    return flat


def _unflat(flat, sizes):
    return np.stack(np.unravel_index(flat, sizes)).astype(np.int64) if len(sizes) else \
        np.zeros((0, flat.size), dtype=np.int64)


# ---- ops on values ---------------------------------------------------------------------

class Alias(Op):
    """The values themselves under a torch grad_fn name (the sparse tensor's history)."""
    view = True
    _name = "AliasBackward0"

    @staticmethod
    def forward(ctx, x):
        return x

    def backward(ctx, grad):
        return grad


_ALIASES = {}


def _alias(values, name):
    """values through an Alias node called `name` when they carry a graph, else values."""
    if not (_state.enabled and values._requires_grad):
        return values
    cls = _ALIASES.get(name)
    if cls is None:
        cls = _ALIASES[name] = type(name, (Alias,), {"__slots__": (), "_name": name})
    return cls.apply(values)


class ToDense(Op):
    """Scatter-add the values (nnz, *dense) into a zero array of the full size."""
    _name = "ToDenseBackward0"

    @staticmethod
    def forward(ctx, values, flat, n, shape):
        ctx.args = (flat,)
        out = np.zeros((n,) + values.shape[1:], dtype=values.dtype)
        index_add_rows(out, flat, values)
        return out.reshape(shape)

    def backward(ctx, grad):
        (flat,) = ctx.args
        rows = grad.reshape((-1,) + tuple(grad.shape[len(grad.shape) - len(ctx._input_meta[0][0]) + 1:]))
        return rows.index_select(0, _long(flat))


class CoalesceSum(Op):
    """Sum the values of duplicate indices: sorted order, one reduceat."""
    _name = "CoalesceBackward0"

    @staticmethod
    def forward(ctx, values, order, starts, inverse):
        ctx.args = (inverse,)
        if values.shape[0] == 0:
            return values.copy()
        return np.add.reduceat(values[order], starts, axis=0).astype(values.dtype, copy=False)

    def backward(ctx, grad):
        return grad.index_select(0, _long(ctx.args[0]))


class SparseMm(Op):
    """out = S @ dense for a 2-d sparse S given as (values, rows, cols): out[r] += v * dense[c]."""
    _name = "MmBackward0"

    @staticmethod
    def forward(ctx, values, dense, rows, cols, m):
        ctx.save_for_backward(values, dense)
        ctx.args = (rows, cols)
        out = np.zeros((m, dense.shape[1]), dtype=dense.dtype)
        index_add_rows(out, rows, values[:, None] * dense[cols])
        return out

    def backward(ctx, grad):
        values, dense = ctx.saved_tensors
        rows, cols = ctx.args
        need = ctx.needs_input_grad
        gv = gd = None
        if need[0]:
            gv = (grad.index_select(0, _long(rows)) * dense.index_select(0, _long(cols))).sum(-1)
        if need[1]:
            gd = type(ctx).apply(values, grad, rows=cols, cols=rows, m=dense.shape[0])
        return gv, gd


class SparseAddmm(SparseMm):
    _name = "SparseAddmmBackward0"


# ---- the tensor ------------------------------------------------------------------------

def _no_dense(self):
    raise NotImplementedError("Could not run this operation with arguments from the 'SparseCPU' backend: ember "
                              "implements sparse COO tensors for coalesce, to_dense, mm/matmul, sum and "
                              "zero-preserving elementwise ops only. Call .to_dense() first.")


class SparseTensor(Tensor):
    """A tensor of layout torch.sparse_coo (see Note [Sparse COO storage])."""
    __slots__ = ("_sp_indices", "_sp_values", "_sp_size", "_sp_coalesced")
    is_sparse = True
    layout = sparse_coo
    _data = property(_no_dense)

    def __new__(cls, *args, **kwargs):
        raise TypeError("construct sparse tensors with torch.sparse_coo_tensor(indices, values, size)")

    # ---- metadata -------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._sp_size)

    def size(self, dim=None):
        if dim is None:
            return Size(self._sp_size)
        return self._sp_size[_wrap_dim(dim, len(self._sp_size))]

    def dim(self):
        return len(self._sp_size)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._sp_size)

    def numel(self):
        return int(np.prod(self._sp_size, dtype=np.int64))

    nelement = numel

    def __len__(self):
        if not self._sp_size:
            raise TypeError("len() of a 0-d tensor")
        return self._sp_size[0]

    def is_contiguous(self, memory_format=None):
        return False

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def sparse_dim(self):
        return self._sp_indices.shape[0]

    def dense_dim(self):
        return len(self._sp_size) - self._sp_indices.shape[0]

    def _nnz(self):
        return self._sp_indices.shape[1]

    def is_coalesced(self):
        return self._sp_coalesced

    def _coalesced_(self, coalesced):
        self._sp_coalesced = bool(coalesced)
        return self

    # ---- autograd state (all of it lives on the values) ----------------------------
    @property
    def requires_grad(self):
        return self._sp_values._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._sp_values.requires_grad = value

    def requires_grad_(self, requires_grad=True):
        self._sp_values.requires_grad_(requires_grad)
        return self

    @property
    def _requires_grad(self):
        return self._sp_values._requires_grad

    @property
    def grad_fn(self):
        return self._sp_values.grad_fn

    @property
    def _grad_fn(self):
        return self._sp_values._grad_fn

    @property
    def is_leaf(self):
        return self._sp_values._grad_fn is None

    @property
    def grad(self):
        """A leaf's gradient on its coalesced pattern (each duplicate's values got the same one)."""
        v = self._sp_values
        if v._grad_fn is not None:
            return Tensor.grad.fget(v)
        g = v._grad
        if g is None:
            return None
        if self._sp_coalesced:
            return _make_sparse(self._sp_indices.copy(), g.detach(), self._sp_size, True)
        sizes = self._sp_size[:self.sparse_dim()]
        unique, first = np.unique(_flat(self._sp_indices, sizes), return_index=True)
        return _make_sparse(_unflat(unique, sizes), g.detach().index_select(0, _long(first)), self._sp_size, True)

    @grad.setter
    def grad(self, value):
        if value is None:
            self._sp_values._grad = None
            return
        if not (isinstance(value, SparseTensor) and value._sp_size == self._sp_size and self._sp_coalesced
                and np.array_equal(value.coalesce()._sp_indices, self._sp_indices)):
            raise RuntimeError("ember can assign to the .grad of a sparse tensor only None or a sparse tensor with "
                               "its own (coalesced) pattern")
        self._sp_values._grad = value.coalesce()._sp_values.detach()

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        raise RuntimeError("ember: backward() from a sparse tensor is not supported; reduce it to a dense tensor "
                           "(e.g. torch.sparse.sum) first")

    def retain_grad(self):
        raise RuntimeError("ember: retain_grad() is not supported on sparse tensors")

    def register_hook(self, hook):
        return self._sp_values.register_hook(hook)

    def detach(self):
        return _make_sparse(self._sp_indices, self._sp_values.detach(), self._sp_size, self._sp_coalesced)

    @property
    def data(self):
        return self.detach()

    def clone(self, *, memory_format=None):
        return _make_sparse(self._sp_indices.copy(), self._sp_values.clone(), self._sp_size, self._sp_coalesced)

    # ---- conversions ----------------------------------------------------------------
    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def numpy(self, *, force=False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.to_dense())

    def to(self, *args, **kwargs):
        from .creation import parse_to_args
        device, dtype, copy = parse_to_args(args, kwargs)
        if dtype is None or dtype is self._dtype:
            return self.clone() if copy else self
        return _make_sparse(self._sp_indices, self._sp_values.to(dtype), self._sp_size, self._sp_coalesced)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            from ..autograd.graph import _type_name
            return "torch.sparse." + _type_name(self._sp_values)
        return Tensor.type(self, dtype)

    def contiguous(self, memory_format=None):
        raise RuntimeError("unsupported memory format option Contiguous")

    def __repr__(self, *, tensor_contents=None):
        return sparse_repr(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
        if id(self) in memo:
            return memo[id(self)]
        new = self.clone().detach()
        new._sp_values.requires_grad_(self.requires_grad)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, proto):
        return (_rebuild, (self._sp_indices, self._sp_values.detach()._data, self._sp_size, self._sp_coalesced,
                           self.requires_grad))

    # ---- sparse accessors -----------------------------------------------------------
    def _indices(self):
        return _long(self._sp_indices)

    def _values(self):
        return self._sp_values.detach()

    def indices(self):
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return _long(self._sp_indices)

    def values(self):
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        v = _alias(self._sp_values, "ValuesBackward0")
        return v.detach() if v is self._sp_values else v

    def coalesce(self):
        if self._sp_coalesced:
            return self
        return _coalesce(self)

    def to_dense(self, dtype=None, *, masked_grad=None):
        return to_dense(self, dtype)

    def to_sparse(self, *args, layout=None, **kwargs):
        if layout not in (None, sparse_coo):
            raise RuntimeError(f"ember stores only sparse COO tensors, not layout {layout}")
        return self

    to_sparse_coo = to_sparse



def _make_sparse(indices, values, size, coalesced):
    """A SparseTensor around an int64 index array and a values Tensor (no checks)."""
    s = _new(SparseTensor)
    s._sp_indices = indices
    s._sp_values = values
    s._sp_size = tuple(size)
    s._sp_coalesced = bool(coalesced)
    s._dtype = values._dtype
    s._output_nr = 0
    s._version = values._version
    s._base = None
    s._grad_acc = None
    s._hooks = None
    s._retains_grad = False
    return s


def _rebuild(indices, values, size, coalesced, requires_grad):
    v = _make(values)
    v._requires_grad = requires_grad
    return _make_sparse(indices, v, size, coalesced)


# ---- construction and validation -------------------------------------------------------

def _as_tensor(x, dtype=None):
    if isinstance(x, Tensor):
        return x if dtype is None or x._dtype is dtype else x.to(dtype)
    from .creation import tensor
    return tensor(x, dtype=dtype)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor. Unlike torch (which skips the check unless asked), ember always
    checks that indices are non-negative and inside `size` (see Note [Sparse COO storage])."""
    idx_t = _as_tensor(indices)
    if idx_t._dtype.category >= D.FLOAT:
        idx_t = idx_t.to(D.int64)  # torch casts float indices (used by some legacy loaders)
    vals = _as_tensor(values, dtype)
    idx = np.ascontiguousarray(idx_t._data, dtype=np.int64)
    if vals._data.ndim == 0:
        raise RuntimeError("values must have at least 1 dimension (nnz x dense dims)")
    if size is not None and idx.ndim >= 1 and len(size) != idx.shape[0] + vals._data.ndim - 1:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {idx.shape[0]}, dense_dim = {vals._data.ndim - 1}")
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    sparse_dim, nnz = idx.shape
    if vals._data.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from values: "
                           f"{vals._data.shape[0]}")
    dense_shape = tuple(vals._data.shape[1:])
    if nnz and (idx < 0).any():
        d = int(np.flatnonzero((idx < 0).any(axis=1))[0])
        raise RuntimeError(f"found negative index {int(idx[d].min())} for dim {d}")
    if size is None:
        sizes = tuple(int(m) + 1 for m in idx.max(axis=1)) if nnz else (0,) * sparse_dim
        size = sizes + dense_shape
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + len(dense_shape):
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = {len(dense_shape)}")
    if tuple(size[sparse_dim:]) != dense_shape:
        raise RuntimeError(f"values has incorrect size, expected [{nnz}, {', '.join(map(str, size[sparse_dim:]))}], "
                           f"got {list(vals._data.shape)}")
    if nnz:
        top = idx.max(axis=1)
        for d in range(sparse_dim):
            if top[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {int(top[d])}")
    if vals._requires_grad and _state.enabled:
        v = _alias(vals, "SparseCooTensorWithDimsAndTensorsBackward0")
    else:
        v = vals.detach()
        if requires_grad:
            v.requires_grad_(True)
    coalesced = nnz <= 1 if is_coalesced is None else is_coalesced
    return _make_sparse(idx, v, size, coalesced)


def _coalesce(s):
    sizes = s._sp_size[:s.sparse_dim()]
    flat = _flat(s._sp_indices, sizes)
    order = np.argsort(flat, kind="stable")
    sorted_flat = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_flat[1:] != sorted_flat[:-1]))) if flat.size else \
        np.zeros(0, dtype=np.int64)
    inverse = np.empty(flat.size, dtype=np.int64)
    inverse[order] = np.cumsum(np.concatenate(([False], sorted_flat[1:] != sorted_flat[:-1]))) if flat.size else 0
    values = CoalesceSum.apply(s._sp_values, order=order, starts=starts, inverse=inverse)
    return _make_sparse(_unflat(sorted_flat[starts], sizes), values, s._sp_size, True)


def to_dense(s, dtype=None):
    """The dense tensor of s; duplicate entries add up."""
    if not isinstance(s, SparseTensor):
        return s if dtype is None else s.to(dtype)
    v = s._sp_values if dtype is None else s._sp_values.to(dtype)
    sizes = s._sp_size[:s.sparse_dim()]
    n = int(np.prod(sizes, dtype=np.int64))
    return ToDense.apply(v, flat=_flat(s._sp_indices, sizes), n=n, shape=s._sp_size)


def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None, sparse_dim=None):
    """Tensor.to_sparse(sparse_dim) / to_sparse(layout=torch.sparse_coo) of a dense tensor:
    the blocks of the first sparse_dim dims that hold any non-zero become the entries."""
    if args:
        if len(args) > 1 or sparse_dim is not None:
            raise TypeError("to_sparse() takes at most 1 positional argument (sparse_dim)")
        sparse_dim = args[0]
    if isinstance(self, SparseTensor):
        return self
    if layout not in (None, sparse_coo):
        raise RuntimeError(f"ember stores only sparse COO tensors, not layout {layout}")
    x = self._data
    nd = x.ndim
    k = nd if sparse_dim is None else int(sparse_dim)
    if dense_dim is not None:
        k = nd - int(dense_dim)
    if not 0 <= k <= nd:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{nd}] range, but {k} is given")
    sizes = x.shape[:k]
    blocks = x.reshape((int(np.prod(sizes, dtype=np.int64)),) + x.shape[k:])
    nonzero = blocks.reshape(blocks.shape[0], -1) != 0 if blocks.ndim > 1 else blocks != 0
    if nonzero.ndim > 1:
        nonzero = nonzero.any(axis=1)
    flat = np.flatnonzero(nonzero).astype(np.int64)
    values = self.reshape((blocks.shape[0],) + x.shape[k:]).index_select(0, _long(flat))
    values = _alias(values, "ToSparseBackward1")
    return _make_sparse(_unflat(flat, sizes), values, x.shape, True)


def to_sparse_coo(self):
    return to_sparse(self)


# ---- products --------------------------------------------------------------------------

def _mm_operands(s, dense, fname):
    if not isinstance(dense, Tensor):
        raise TypeError(f"{fname}(): argument 'mat2' (position 2) must be Tensor, not {type(dense).__name__}")
    if isinstance(dense, SparseTensor):
        raise NotImplementedError("ember: sparse @ sparse products are not implemented; use to_dense() on one side")
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {s.dim()}D tensor")
    if dense.dim() != 2:
        raise RuntimeError(f"addmm: matrices expected, got {dense.dim()}D tensor")
    if s._dtype is not dense._dtype:
        raise RuntimeError(f"expected scalar type {D.SCALAR_NAMES[s._dtype]} but found {D.SCALAR_NAMES[dense._dtype]}")
    if dense._data.shape[0] != s._sp_size[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._sp_size[1]}, got "
                           f"{dense._data.shape[0]}")


def sparse_dense_mm(s, dense, cls=SparseMm, fname="mm"):
    """s @ dense for a 2-d sparse s and a 2-d dense matrix (gradients to s's values and dense)."""
    _mm_operands(s, dense, fname)
    idx = s._sp_indices
    return cls.apply(s._sp_values, dense, rows=idx[0], cols=idx[1], m=s._sp_size[0])


def sparse_matmul(s, other):
    """s @ other: sparse x (matrix or vector) as torch.matmul / the @ operator."""
    if isinstance(other, Tensor) and not isinstance(other, SparseTensor) and other._data.ndim == 1:
        r = sparse_dense_mm(s, other.unsqueeze(1), fname="matmul").squeeze(1)
        if r._grad_fn is not None:
            r._grad_fn._name = "MvBackward0"
        return r
    return sparse_dense_mm(s, other, fname="matmul")


def spmm(input, mat2):
    """torch.spmm: sparse @ dense (dense @ dense also works, as in torch)."""
    if isinstance(input, SparseTensor):
        return sparse_dense_mm(input, mat2, fname="spmm")
    return input.mm(mat2)


# ---- reductions ------------------------------------------------------------------------

def sparse_sum(s, dim=None, dtype=None, name="SparseSumBackward0"):
    """Sum over dims: a dense result when every sparse dim is summed, else a coalesced sparse one."""
    v = s._sp_values if dtype is None else s._sp_values.to(dtype)
    if dim is None:
        return v.sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    nd = s.dim()
    dims = sorted({_wrap_dim(d, nd) for d in dims})
    k = s.sparse_dim()
    dense_dims = [d - k + 1 for d in dims if d >= k]
    if dense_dims:
        v = v.sum(dense_dims)
    keep = [d for d in range(k) if d not in dims]
    if not keep:
        return v.sum(0)
    size = tuple(s._sp_size[d] for d in range(nd) if d not in dims)
    part = _make_sparse(np.ascontiguousarray(s._sp_indices[keep]), v, size, False)
    out = _coalesce(part)
    out._sp_values = _alias(out._sp_values, name)
    return out


def _tensor_sum(self, dim=None, keepdim=False, *, dtype=None):
    if keepdim:
        raise RuntimeError("ember: sum(keepdim=True) of a sparse tensor is not supported")
    if dim is None:
        return sparse_sum(self, None, dtype)
    return sparse_sum(self, dim, dtype, name="SumBackward1")


# ---- elementwise ------------------------------------------------------------------------

def _with_values(s, values, coalesced=None):
    return _make_sparse(s._sp_indices, values, s._sp_size, s._sp_coalesced if coalesced is None else coalesced)


def _is_number(x):
    return isinstance(x, (int, float, bool, complex, np.number))


def _same_size(a, b, op):
    if a._sp_size != b._sp_size:
        raise RuntimeError(f"{op}: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(a._sp_size)} while other has size {list(b._sp_size)} (FYI: op2-sparse "
                           f"ops only support same-size operands)")


def _merge_positions(a, b):
    """torch's sparse add: walk both index lists, taking the smaller head (equal heads share one
    result entry). Returns each entry's slot in the result and the result's flat indices."""
    na, nb = a.size, b.size
    if np.all(a[1:] > a[:-1]) and np.all(b[1:] > b[:-1]):  # both strictly sorted: one vectorized union
        union = np.union1d(a, b)
        return np.searchsorted(union, a), np.searchsorted(union, b), union
    la, lb = a.tolist(), b.tolist()
    pa, pb, out = [], [], []
    i = j = 0
    while i < na or j < nb:
        if j >= nb or (i < na and la[i] < lb[j]):
            pa.append(len(out))
            out.append(la[i])
            i += 1
        elif i >= na or lb[j] < la[i]:
            pb.append(len(out))
            out.append(lb[j])
            j += 1
        else:
            pa.append(len(out))
            pb.append(len(out))
            out.append(la[i])
            i += 1
            j += 1
    return np.array(pa, dtype=np.int64), np.array(pb, dtype=np.int64), np.array(out, dtype=np.int64)


def _add(self, other, alpha=1):
    if isinstance(other, SparseTensor):
        _same_size(self, other, "add")
        ov = other._sp_values if alpha == 1 else other._sp_values * alpha
        if ov._dtype is not self._dtype:
            ov = ov.to(self._dtype)
        sizes = self._sp_size[:self.sparse_dim()]
        pa, pb, flat = _merge_positions(_flat(self._sp_indices, sizes), _flat(other._sp_indices, sizes))
        sv = self._sp_values
        values = sv.new_zeros((flat.size,) + tuple(sv.shape[1:])).index_add(0, _long(pa), sv)
        values = values.index_add(0, _long(pb), ov)
        if values._grad_fn is not None:
            values._grad_fn._name = "AddBackward0"
        coalesced = self._sp_coalesced and other._sp_coalesced
        return _make_sparse(_unflat(flat, sizes), values, self._sp_size, coalesced)
    if isinstance(other, Tensor):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    raise TypeError(f"add(): sparse tensors add only tensors, not {type(other).__name__}")


def _radd(self, other):
    """dense + sparse (Python asks the sparse subclass first): a dense result."""
    if isinstance(other, Tensor):
        return other + to_dense(self)
    raise TypeError(f"unsupported operand: {type(other).__name__} + sparse tensor")


def _sub(self, other, alpha=1):
    return _add(self, other, -alpha)


def _rsub(self, other):
    if isinstance(other, Tensor):
        return other - to_dense(self)
    raise TypeError(f"unsupported operand: {type(other).__name__} - sparse tensor")


def _mul(self, other):
    if _is_number(other) or (isinstance(other, Tensor) and not isinstance(other, SparseTensor)
                             and other._data.ndim == 0):
        return _with_values(self, self._sp_values * other)
    if isinstance(other, SparseTensor):
        _same_size(self, other, "mul")
        a = self.coalesce()
        b = other.coalesce()
        sizes = self._sp_size[:self.sparse_dim()]
        common, ia, ib = np.intersect1d(_flat(a._sp_indices, sizes), _flat(b._sp_indices, sizes),
                                        assume_unique=True, return_indices=True)
        values = a._sp_values.index_select(0, _long(ia)) * b._sp_values.index_select(0, _long(ib))
        return _make_sparse(_unflat(common, sizes), values, self._sp_size, True)
    if isinstance(other, Tensor):
        if tuple(other._data.shape) != self._sp_size:
            raise RuntimeError(f"mul: sparse * dense needs equal sizes, got {list(self._sp_size)} and "
                               f"{list(other._data.shape)}")
        k = self.sparse_dim()
        flat = _flat(self._sp_indices, self._sp_size[:k])
        picked = other.reshape((-1,) + self._sp_size[k:]).index_select(0, _long(flat))
        return _with_values(self, self._sp_values * picked)
    raise TypeError(f"mul(): unsupported operand type {type(other).__name__}")


def _div(self, other):
    if _is_number(other) or (isinstance(other, Tensor) and not isinstance(other, SparseTensor)
                             and other._data.ndim == 0):
        return _with_values(self, self._sp_values / other)
    raise RuntimeError("ember: a sparse tensor can be divided only by a number or a 0-d dense tensor")


def _pow(self, exponent):
    if not _is_number(exponent) or not exponent > 0:
        raise RuntimeError("pow of a sparse tensor needs a positive number exponent (0 ** p must stay 0)")
    s = self.coalesce()
    return _with_values(s, s._sp_values ** exponent)


def _unary(name):
    """A zero-preserving elementwise op applied to the values (duplicates must be summed first
    for nonlinear ones, as torch does)."""
    linear = name == "neg"

    def fn(self):
        s = self if linear else self.coalesce()
        return _with_values(s, getattr(s._sp_values, name)())
    fn.__name__ = name
    return fn


def _zero_(self):
    self._sp_indices = np.zeros((self.sparse_dim(), 0), dtype=np.int64)
    v = self._sp_values
    self._sp_values = _make(np.zeros((0,) + tuple(v._data.shape[1:]), dtype=v._data.dtype), v._dtype)
    self._sp_values._requires_grad = v._requires_grad and v._grad_fn is None
    self._sp_coalesced = True
    return self


def _transpose(self, dim0, dim1):
    nd = self.dim()
    d0 = _wrap_dim(dim0, nd)
    d1 = _wrap_dim(dim1, nd)
    k = self.sparse_dim()
    if (d0 < k) != (d1 < k):
        raise RuntimeError("transpose: transposing a sparse dimension with a dense dimension is not supported")
    size = list(self._sp_size)
    size[d0], size[d1] = size[d1], size[d0]
    if d0 >= k:
        values = self._sp_values.transpose(d0 - k + 1, d1 - k + 1)
        return _make_sparse(self._sp_indices, values, size, self._sp_coalesced)
    idx = self._sp_indices.copy()
    idx[[d0, d1]] = idx[[d1, d0]]
    values = _alias(self._sp_values, "TransposeBackward0")
    return _make_sparse(idx, values, size, self._sp_coalesced and d0 == d1)


def _t(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                           f"{self.sparse_dim()} sparse and {self.dense_dim()} dense dimensions")
    if self.dim() < 2:
        return self
    r = _transpose(self, 0, 1)
    if r._sp_values._grad_fn is not None:
        r._sp_values._grad_fn._name = "TBackward0"
    return r


# ---- repr ------------------------------------------------------------------------------

def _inner_str(arr, dtype, indent):
    """The bracketed body of an indices/values tensor inside a sparse repr (no dtype, no grad)."""
    from .._tensor_str import _tensor_str
    if arr.size == 0:
        return f"[], size={tuple(arr.shape)}"
    return _tensor_str(arr, dtype, indent)


def sparse_repr(s):
    """torch's format: tensor(indices=..., values=..., size=..., nnz=..., layout=torch.sparse_coo)."""
    from .._tensor_str import _add_suffixes
    outer = len("tensor(")
    v = s._sp_values
    body = ("indices=tensor(" + _inner_str(s._sp_indices, D.int64, outer + len("indices=tensor(")) + "),\n" +
            " " * outer + "values=tensor(" + _inner_str(v._data, v._dtype, outer + len("values=tensor(")) + ")")
    suffixes = [f"size={tuple(s._sp_size)}", f"nnz={s._nnz()}"]
    if v._dtype not in (D.get_default_dtype(), D.default_complex_dtype(), D.int64, D.bool):
        suffixes.append(f"dtype={v._dtype!r}")
    suffixes.append("layout=torch.sparse_coo")
    if v._grad_fn is not None:
        suffixes.append(f"grad_fn=<{v._grad_fn.name()}>")
    elif v._requires_grad:
        suffixes.append("requires_grad=True")
    # torch starts the suffixes on a new line for sparse tensors
    return "tensor(" + _add_suffixes(body + ",\n" + " " * outer + suffixes[0], suffixes[1:], outer)


# ---- dense-tensor sides of the sparse API -----------------------------------------------

def _layout_error(name):
    def fn(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got Strided")
    fn.__name__ = name
    return fn


def _backend_error(name):
    def fn(self, *args, **kwargs):
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the 'CPU' backend.")
    fn.__name__ = name
    return fn


def _dense_sparse_dim(self):
    return 0


def _dense_dense_dim(self):
    return self._data.ndim


def _dense_to_dense(self, dtype=None, *, masked_grad=None):
    return self if dtype is None or dtype is self._dtype else self.to(dtype)


for _n in ("is_coalesced", "coalesce", "indices", "values"):
    install(_layout_error(_n), _n, function=False)
for _n in ("_nnz", "_values", "_indices"):
    install(_backend_error(_n), _n, function=False)
install(_dense_sparse_dim, "sparse_dim", function=False)
install(_dense_dense_dim, "dense_dim", function=False)
install(_dense_to_dense, "to_dense", function=False)
install(to_sparse, "to_sparse", function=False)
install(to_sparse_coo, "to_sparse_coo", function=False)

# the sparse class's own versions of ops installed on Tensor
for _n, _fn in (("sum", _tensor_sum), ("mm", lambda self, mat2: sparse_dense_mm(self, mat2)),
                ("matmul", sparse_matmul), ("__matmul__", sparse_matmul), ("add", _add), ("__add__", _add),
                ("__radd__", _radd), ("sub", _sub), ("__sub__", _sub), ("__rsub__", _rsub), ("mul", _mul),
                ("__mul__", _mul), ("__rmul__", _mul), ("div", _div), ("__truediv__", _div), ("pow", _pow),
                ("__pow__", _pow), ("__neg__", _unary("neg")), ("zero_", _zero_), ("transpose", _transpose),
                ("t", _t), ("float", lambda self, memory_format=None: self.to(D.float32)),
                ("double", lambda self, memory_format=None: self.to(D.float64)),
                ("half", lambda self, memory_format=None: self.to(D.float16)),
                ("long", lambda self, memory_format=None: self.to(D.int64)),
                ("int", lambda self, memory_format=None: self.to(D.int32)),
                ("bool", lambda self, memory_format=None: self.to(D.bool))):
    setattr(SparseTensor, _n, _fn)
for _n in ("neg", "abs", "sqrt", "sin", "tan", "tanh", "sinh", "asin", "atan", "asinh", "atanh", "expm1",
           "log1p", "relu", "sign", "trunc", "floor", "ceil", "round", "square"):
    setattr(SparseTensor, _n, _unary(_n))
namespace.update(sparse_coo_tensor=sparse_coo_tensor, spmm=spmm)
