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
from .._device import as_device
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
    s._version_counter = values._version_counter
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
    as_device(device)  # torch's errors for a device ember lacks or cannot parse
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


from . import sparse_math  # noqa: E402  (products, sums and elementwise ops; installs them on SparseTensor)
from .sparse_math import sparse_dense_mm, sparse_matmul, spmm  # noqa: E402,F401  (used by linalg's mm/matmul)

from ._argcheck import guard  # noqa: E402

sparse_coo_tensor = guard(sparse_coo_tensor, "sparse_coo_tensor")  # Note [Checked at the boundary]
namespace.update(sparse_coo_tensor=sparse_coo_tensor, spmm=spmm)
