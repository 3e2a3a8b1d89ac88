"""Sparse COO math: sparse @ dense products with gradients to the values and the dense operand,
sums over sparse and dense dims, and the zero-preserving elementwise ops (see Note [Sparse COO
storage] in sparse.py). Installed as methods of SparseTensor at import."""
import numpy as np

from .. import _dtype as D
from .._backend.numpy_cpu import index_add_rows
from .._tensor import Tensor, _wrap_dim
from ._registry import Op
from .complex import cj
from .sparse import SparseTensor, _alias, _coalesce, _flat, _long, _make_sparse, _unflat, to_dense

_make = Tensor._make


# ---- sparse @ dense ------------------------------------------------------------------------

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
            gv = (grad.index_select(0, _long(rows)) * cj(dense.index_select(0, _long(cols)))).sum(-1)
        if need[1]:
            gd = type(ctx).apply(cj(values), grad, rows=cols, cols=rows, m=dense.shape[0])  # S^H @ grad
        return gv, gd


class SparseAddmm(SparseMm):
    _name = "SparseAddmmBackward0"


def _mm_operands(s, dense, fname):
    if not isinstance(dense, Tensor):
        raise TypeError(f"{fname}(): argument 'mat2' (position 2) must be Tensor, not {type(dense).__name__}")
    if isinstance(dense, SparseTensor):
        raise NotImplementedError("ember: sparse @ sparse products are not implemented; use to_dense() on one side")
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {s.dim()}D tensor")
    if dense.dim() == 1:  # torch reads size(1) of the dense operand first
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
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


def _rmatmul(self, other):
    """dense @ sparse, as (sparse^T @ dense^T)^T."""
    if not isinstance(other, Tensor):
        return NotImplemented
    if other._data.ndim == 1:
        return sparse_matmul(_t(self), other)
    return sparse_dense_mm(_t(self), other.mT, fname="matmul").mT


# the sparse class's own versions of ops installed on Tensor
for _n, _fn in (("sum", _tensor_sum), ("mm", lambda self, mat2: sparse_dense_mm(self, mat2)),
                ("matmul", sparse_matmul), ("__matmul__", sparse_matmul), ("__rmatmul__", _rmatmul),
                ("add", _add), ("__add__", _add),
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


# ---- in-place updates with sparse operands (optimizer steps on sparse gradients) ---------------

def _sparse_inplace(op):
    """The in-place form of a sparse op: compute, then take over the result's indices and values."""
    def inplace(self, *args, **kwargs):
        r = op(self, *args, **kwargs)
        self._sp_indices = r._sp_indices
        self._sp_values = r._sp_values
        self._sp_coalesced = r._sp_coalesced
        self._dtype = r._dtype
        return self
    return inplace


SparseTensor.add_ = _sparse_inplace(_add)
SparseTensor.sub_ = _sparse_inplace(_sub)
SparseTensor.mul_ = _sparse_inplace(_mul)
SparseTensor.div_ = _sparse_inplace(_div)
_dense_add_ = Tensor.add_


def _dense_add_sparse_(self, other, *, alpha=1):
    """dense.add_(sparse): torch adds the sparse tensor's entries in place (duplicates summed)."""
    if other.__class__ is SparseTensor:
        other = to_dense(other)
    return _dense_add_(self, other, alpha=alpha)


_dense_add_sparse_.__name__ = _dense_add_sparse_.__qualname__ = "add_"
Tensor.add_ = _dense_add_sparse_
