"""Products with sparse CSR tensors: torch.sparse.sampled_addmm, and mm/matmul/addmm with a CSR left
operand (see Note [Sparse CSR storage] in sparse_csr.py). Forward in NumPy on the stored entries,
backward in ember ops (index_select / index_add over the entries), as torch's formulas."""
import numpy as np

from .. import _dtype as D
from .._backend.numpy_cpu import index_add_rows
from .._layout import strided
from .._tensor import Tensor
from .complex import cj
from .sparse_csr import Csr, CsrOp, FromValues, SparseCsrTensor, _dense, _make, _row_of_entry, sparse_mask


def _entry_rows_cols(crow, col, nbatch):
    """(row, col) of every entry as positions in the (B*m, .) and (B*n, .) stacks of the batch."""
    m = crow.shape[-1] - 1
    nnz = col.shape[-1]
    rows = _row_of_entry(crow).reshape(-1)
    cols = np.asarray(col, dtype=np.int64).reshape(-1)
    if crow.ndim == 1 and nbatch > 1:  # one pattern shared by the whole batch
        rows = np.tile(rows, nbatch)
        cols = np.tile(cols, nbatch)
    batch = np.repeat(np.arange(nbatch, dtype=np.int64), nnz)
    return batch, rows, cols, m


# ---- sampled_addmm ---------------------------------------------------------------------------

class SampledAddmm(CsrOp):
    """beta * input + alpha * (mat1 @ mat2) on input's pattern: one dot product per stored entry."""
    _name = "SparseSampledAddmmBackward0"

    @staticmethod
    def forward(ctx, s, mat1, mat2, beta, alpha):
        batch_shape = mat1.shape[:-2]
        nbatch = int(np.prod(batch_shape, dtype=np.int64))
        m, k = mat1.shape[-2:]
        n = mat2.shape[-1]
        b, rows, cols, _ = _entry_rows_cols(s.crow, s.col, nbatch)
        ctx.args = (b, rows, cols, beta, alpha, nbatch)
        left = mat1.reshape(nbatch * m, k)[b * m + rows]
        right = np.swapaxes(mat2, -1, -2).reshape(nbatch * n, k)[b * n + cols]
        prod = np.einsum("ik,ik->i", left, right).reshape(batch_shape + s.col.shape[-1:])
        values = s.values * beta + prod * alpha
        crow = np.broadcast_to(s.crow, batch_shape + s.crow.shape[-1:]).astype(np.int64)
        col = np.broadcast_to(s.col, batch_shape + s.col.shape[-1:]).astype(np.int64)
        return Csr(crow, col, values.astype(s.values.dtype, copy=False), batch_shape + (m, n))

    def backward(ctx, grad):
        inp, mat1, mat2 = ctx.saved_tensors
        b, rows, cols, beta, alpha, nbatch = ctx.args
        need = ctx.needs_input_grad
        g_self = g_mat1 = g_mat2 = None
        if need[0]:
            g_self = grad * cj(beta)  # torch's formula: the incoming gradient, in its own layout
            if grad.dim() > inp.dim():  # one pattern broadcast over the batch: sum the batch
                summed = _dense(g_self).sum(tuple(range(grad.dim() - inp.dim())))
                g_self = summed if grad.layout is strided else sparse_mask(summed, inp._csr_crow, inp._csr_col,
                                                                           inp._csr_size)
        if need[1] or need[2]:
            m, k = mat1.shape[-2:]
            n = mat2.shape[-1]
            flat = _make((b * m + rows) * n + cols)
            gv = _dense(grad).reshape(-1).index_select(0, flat) * cj(alpha)  # grad on the pattern
            at_rows = _make(b * m + rows)
            at_cols = _make(b * n + cols)
            if need[1]:  # grad_mat1[r] += gv * conj(mat2[:, c])
                right = cj(mat2).mT.reshape(nbatch * n, k).index_select(0, at_cols)
                acc = right.new_zeros((nbatch * m, k)).index_add(0, at_rows, right * gv.unsqueeze(-1))
                g_mat1 = acc.reshape(tuple(mat1.shape))
            if need[2]:  # grad_mat2[:, c] += conj(mat1[r]) * gv
                left = cj(mat1).reshape(nbatch * m, k).index_select(0, at_rows)
                acc = left.new_zeros((nbatch * n, k)).index_add(0, at_cols, left * gv.unsqueeze(-1))
                g_mat2 = acc.reshape(tuple(mat2.shape[:-2]) + (n, k)).mT
        return g_self, g_mat1, g_mat2


def _scalar(value, dtype, name):
    """beta/alpha as a number of the input's kind (torch: a complex value for a real tensor overflows)."""
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, complex) and dtype.category != D.COMPLEX:
        if value.imag != 0:
            raise RuntimeError("value cannot be converted to type float without overflow")
        value = value.real
    return value


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """torch.sparse.sampled_addmm: https://pytorch.org/docs/stable/generated/torch.sparse.sampled_addmm.html"""
    if not isinstance(input, SparseCsrTensor):
        backend = "SparseCPU" if getattr(input, "is_sparse", False) else "CPU"
        raise NotImplementedError(f"Could not run 'aten::sparse_sampled_addmm' with arguments from the '{backend}' "
                                  f"backend.")
    for name, mat in (("mat1", mat1), ("mat2", mat2)):
        if not isinstance(mat, Tensor):
            raise TypeError(f"sampled_addmm(): argument '{name}' must be Tensor, not {type(mat).__name__}")
        if mat.layout is not strided:
            raise RuntimeError(f"sampled_addmm: Expected {name} to have strided layout, but got "
                               f"{'SparseCsr' if mat.layout is input.layout else 'Sparse'}")
    if input._dtype.category < D.FLOAT:
        raise RuntimeError(f"sparse_sampled_addmm: Expected self to be a floating-point or complex tensor, but got "
                           f"{D.SCALAR_NAMES[input._dtype]}")
    if input.dense_dim():
        raise RuntimeError("sampled_addmm: Expected non-hybrid self tensor")
    for name, mat in (("mat1", mat1), ("mat2", mat2)):
        if mat.dim() < 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a matrix, got {mat.dim()}-D tensor")
    if mat1._dtype is not mat2._dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, but got "
                           f"{D.SCALAR_NAMES[mat1._dtype]} and {D.SCALAR_NAMES[mat2._dtype]}")
    if input._dtype is not mat1._dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and self to have the same dtype, but got "
                           f"{D.SCALAR_NAMES[mat1._dtype]} and {D.SCALAR_NAMES[input._dtype]}")
    a = tuple(mat1.shape)
    b = tuple(mat2.shape)
    if a[:-2] != b[:-2]:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same batch size, but got "
                           f"{list(a[:-2])} and {list(b[:-2])}")
    if a[-1] != b[-2]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied ({a[-2]}x{a[-1]} and "
                           f"{b[-2]}x{b[-1]})")
    size = tuple(input.shape)
    if size[-2] != a[-2]:
        raise RuntimeError("sampled_addmm: self.shape[-2] must match mat1.shape[-2]")
    if size[-1] != b[-1]:
        raise RuntimeError("sampled_addmm: self.shape[-1] must match mat2.shape[-1]")
    if len(size) > 2 and size[:-2] != a[:-2]:
        raise RuntimeError(f"sampled_addmm: Expected self and mat1 to have the same batch size, but got "
                           f"{list(size[:-2])} and {list(a[:-2])}")
    beta = _scalar(beta, input._dtype, "beta")
    alpha = _scalar(alpha, input._dtype, "alpha")
    result = SampledAddmm.apply(input, mat1, mat2, beta=beta, alpha=alpha)
    if out is None:
        return result
    return _write_csr_out(out, result)


def _write_csr_out(out, result):
    """out= for a CSR result: out takes the result's indices and values (torch resizes it)."""
    if not isinstance(out, SparseCsrTensor):
        raise RuntimeError(f"sampled_addmm: Expected result to have sparse csr layout, but got "
                           f"{'Sparse' if out.is_sparse else 'Strided'}")
    if out._dtype is not result._dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result._dtype}, but got {out._dtype} instead")
    if result._requires_grad:
        raise RuntimeError("sampled_addmm(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    out._csr_crow = result._csr_crow
    out._csr_col = result._csr_col
    out._csr_values = result._csr_values
    out._csr_size = result._csr_size
    out._version_counter.value += 1
    return out


# ---- CSR @ dense ------------------------------------------------------------------------------

class CsrMm(CsrOp):
    """A 2-d CSR matrix times a dense matrix: out[r] += v * dense[c] per stored entry."""
    _name = "MmBackward0"

    @staticmethod
    def forward(ctx, s, dense):
        rows = _row_of_entry(s.crow)
        cols = s.col.astype(np.int64)
        ctx.args = (rows, cols)
        out = np.zeros((s.size[0], dense.shape[1]), dtype=dense.dtype)
        np.add.at(out, rows, s.values[:, None] * dense[cols])
        return out

    def backward(ctx, grad):
        s, dense = ctx.saved_tensors
        rows, cols = ctx.args
        need = ctx.needs_input_grad
        g_s = g_dense = None
        if need[0]:
            g_s = grad.mm(cj(dense).mT)  # torch gives the CSR operand of mm the dense gradient
        if need[1]:
            v = cj(s.values())
            picked = grad.index_select(0, _make(rows)) * v.unsqueeze(-1)
            g_dense = picked.new_zeros(tuple(dense.shape)).index_add(0, _make(cols), picked)
        return g_s, g_dense


class CsrMmReduce(CsrOp):
    """torch.sparse.mm(csr, dense, reduce): per row, the sum, mean, amax or amin of v * dense[c] over the
    row's stored entries (0 for an empty row); the CSR operand's gradient stays on its pattern."""
    _name = "SparseMmReduceImplBackward0"

    @staticmethod
    def forward(ctx, s, dense, reduce):
        rows = _row_of_entry(s.crow)
        cols = s.col.astype(np.int64)
        m = s.size[0]
        counts = np.diff(s.crow).astype(np.int64)
        terms = s.values[:, None] * dense[cols]
        winner = None
        if reduce in ("sum", "mean"):
            out = np.zeros((m, dense.shape[1]), dtype=dense.dtype)
            index_add_rows(out, rows, terms)
            if reduce == "mean":
                out /= np.maximum(counts, 1)[:, None].astype(out.dtype)
        else:
            fill = -np.inf if reduce == "amax" else np.inf
            out = np.full((m, dense.shape[1]), fill, dtype=dense.dtype)
            (np.maximum if reduce == "amax" else np.minimum).at(out, rows, terms)
            out[counts == 0] = 0
            winner = _first_winners(terms, rows, out)
        ctx.args = (rows, cols, counts, reduce, winner, s.crow, s.col, s.size)
        return out

    def backward(ctx, grad):
        s, dense = ctx.saved_tensors
        rows, cols, counts, reduce, winner, crow, col, size = ctx.args
        need = ctx.needs_input_grad
        weight = grad.index_select(0, _make(rows))  # (nnz, p): the gradient each entry's term gets
        if reduce == "mean":
            weight = weight / _make(np.maximum(counts, 1)[rows][:, None].astype(weight._data.dtype))
        elif winner is not None:
            weight = weight * _make(winner)
        g_s = g_dense = None
        if need[0]:
            g_vals = (weight * cj(dense).index_select(0, _make(cols))).sum(-1)
            g_s = FromValues.apply(g_vals, crow=crow, col=col, size=size)
        if need[1]:
            contrib = weight * cj(s.values()).unsqueeze(-1)
            g_dense = contrib.new_zeros(tuple(dense.shape)).index_add(0, _make(cols), contrib)
        return g_s, g_dense


def _first_winners(terms, rows, out):
    """(nnz, p) mask of the entry that gives each row's amax/amin (the first of equal ones)."""
    hit = terms == out[rows]
    mask = np.zeros(terms.shape, dtype=terms.dtype)
    for j in range(terms.shape[1]):
        at = np.flatnonzero(hit[:, j])
        _, first = np.unique(rows[at], return_index=True)
        mask[at[first], j] = 1
    return mask


def csr_mm_reduce(s, dense, reduce):
    """torch.sparse.mm with a CSR operand: sparse_mm_reduce's checks, then CsrMmReduce."""
    if reduce not in ("sum", "mean", "amax", "amin"):
        raise RuntimeError(f"sparse_mm_reduce: reduce type of {reduce} has not been enabled.")
    _mm_checks(s, dense, "mm")
    return CsrMmReduce.apply(s, dense, reduce=reduce)


def _mm_checks(s, dense, fname):
    """torch.mm's checks of a 2-d CSR s times a 2-d dense matrix."""
    if not isinstance(dense, Tensor):
        raise TypeError(f"{fname}(): argument 'mat2' (position 2) must be Tensor, not {type(dense).__name__}")
    if dense.layout is not strided:
        raise NotImplementedError("ember: sparse @ sparse products are not implemented; use to_dense() on one side")
    if s.dim() != 2 or s.dense_dim():
        raise RuntimeError("self must be a matrix")
    if dense.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if s._dtype is not dense._dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: {s._dtype} != {dense._dtype}")
    if s._csr_size[1] != dense.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s._csr_size[0]}x{s._csr_size[1]} and "
                           f"{dense.shape[0]}x{dense.shape[1]})")


def csr_mm(s, dense, fname="mm"):
    """s @ dense for a 2-d CSR s and a 2-d dense matrix, torch.mm's checks."""
    _mm_checks(s, dense, fname)
    return CsrMm.apply(s, dense)


def csr_matmul(s, other):
    """s @ other for a 2-d CSR s: a matrix (mm) or a vector (mv)."""
    if isinstance(other, Tensor) and other.layout is strided and other.dim() == 1:
        r = csr_mm(s, other.unsqueeze(1), "matmul").squeeze(1)
        if r._grad_fn is not None:
            r._grad_fn._name = "MvBackward0"
        return r
    return csr_mm(s, other, "matmul")


def csr_addmm(input, s, dense, beta=1, alpha=1):
    """beta * input + alpha * (s @ dense) with a CSR s (torch.addmm's composite)."""
    prod = csr_mm(s, dense, "addmm")
    if alpha != 1:
        prod = prod * alpha
    return prod + (input if beta == 1 else input * beta)


SparseCsrTensor.mm = lambda self, mat2: csr_mm(self, mat2)
SparseCsrTensor.matmul = SparseCsrTensor.__matmul__ = csr_matmul
