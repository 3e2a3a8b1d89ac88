"""Linear algebra, part 1: products (matmul, mm, bmm, mv, dot, vdot, inner, outer and the
fused addmm family). The rest of the family (linalg_contract: einsum/tensordot/kron/
cross/multi_dot; linalg_decomp and linalg_lu: inverses, solvers, Cholesky, LU;
linalg_spectral: QR/SVD/eig/pinv/lstsq; linalg_norm: norms) is imported at the end of
this file, so `_ops/__init__` needs to know only this module.

Note [matmul hot path]: matmul/mm/bmm/addmm run straight into np.matmul (BLAS for
float32/float64) on the inputs' own arrays; the backward multiplies by transposed
*views* (`mT`), which NumPy hands to BLAS as transposed operands without copying.
A batch of matrices times one matrix is folded into a single GEMM when the batch is
contiguous, as torch does.
"""
import ml_dtypes
import numpy as np

from .. import _backend as B
from .. import _dtype as D
from .._backend import scalar_array
from .._layout import strided as _strided
from .._tensor import Tensor, _wrap_dim
from ..autograd.grad_mode import _state
from ._registry import Op, install, register, shapes_error, write_out
from ..amp._dispatch import wrap as _autocast_wrap

_make = Tensor._make

# float16/bfloat16 products accumulate in float32 (torch's CPU kernels do; NumPy's
# bfloat16 matmul would even return float32)
_LOW = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))



def _sname(t):
    return D.SCALAR_NAMES[t._dtype]


def _cname(t):
    return D.C_TYPE_NAMES[t._dtype]


def conj(t):
    """t.conj() for complex tensors, t itself for real ones (no op on the hot path)."""
    return t.conj() if t._dtype.category == D.COMPLEX else t


def adj(t):
    """The conjugate transpose of the last two dims, as a view for real tensors."""
    return t.mT.conj() if t._dtype.category == D.COMPLEX else t.mT


def check_tensor(v, fname, argname, pos):
    if not isinstance(v, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not {type(v).__name__}")


def _finish(r, out, name):
    return r if out is None else write_out(out, r, name)


# ---- matmul kernels and backward ------------------------------------------------------

def matmul_kernel(x, y):
    """x @ y on arrays (see Note [matmul hot path])."""
    if x.dtype in _LOW:
        return np.matmul(x.astype(np.float32), y.astype(np.float32)).astype(x.dtype)
    if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous:
        k = x.shape[-1]
        r = B.matmul(x.reshape(_rows(x.shape), k), y)  # explicit rows: -1 is ambiguous when k == 0
        return r.reshape(x.shape[:-1] + (y.shape[-1],))
    return B.matmul(x, y)


def _rows(shape):
    """The number of rows when all but the last dim are folded into one."""
    return int(np.prod(shape[:-1]))


def matmul_backward(grad, x, y, need):
    """Gradients of x @ y (torch's 1-D promotion rules) written with ember ops."""
    xd = x._data.ndim
    yd = y._data.ndim
    if (xd >= 2 and yd >= 2 and not _state.enabled and x._dtype in _REAL and y._dtype is x._dtype
            and grad._dtype is x._dtype):
        return _matmul_backward_kernel(grad._data, x._data, y._data, need)  # Note [Fused norm backward]
    gx = gy = None
    if xd == 1 and yd == 1:
        if need[0]:
            gx = grad * conj(y)
        if need[1]:
            gy = grad * conj(x)
        return gx, gy
    if yd == 1:
        if need[0]:
            gx = grad.unsqueeze(-1) * conj(y)
        if need[1]:
            if xd == 2:
                gy = matmul(adj(x), grad)
            else:
                gy = matmul(adj(x.reshape(_rows(x._data.shape), x._data.shape[-1])), grad.reshape(-1))
        return gx, gy
    if xd == 1:
        if need[0]:
            if yd == 2:
                gx = matmul(conj(y), grad)
            else:
                gx = matmul(conj(y), grad.unsqueeze(-1)).squeeze(-1)
        if need[1]:
            gy = conj(x).unsqueeze(-1) * grad.unsqueeze(-2)
        return gx, gy
    if need[0]:
        gx = matmul(grad, adj(y))
    if need[1]:
        if yd == 2 and xd > 2:
            # fold the batch: one (k x B*n) @ (B*n x m) GEMM instead of a batch then a sum
            gy = matmul(adj(x.reshape(_rows(x._data.shape), x._data.shape[-1])),
                        grad.reshape(_rows(grad._data.shape), grad._data.shape[-1]))
        else:
            gy = matmul(adj(x), grad)
    return gx, gy


_REAL = (D.float32, D.float64)


def _matmul_backward_kernel(g, x, y, need):
    """matmul_backward's first-order gradients of real matrices on arrays: the same products of the
    same (transposed) arrays as its ember ops compute, without an op dispatch per term."""
    gx = gy = None
    if need[0]:
        gx = Tensor._make(matmul_kernel(g, y.swapaxes(-1, -2)))
    if need[1]:
        if y.ndim == 2 and x.ndim > 2:  # the batch folded, as above
            k = x.shape[-1]
            gy = B.matmul(x.reshape(_rows(x.shape), k).T, g.reshape(_rows(g.shape), g.shape[-1]))
        else:
            gy = matmul_kernel(x.swapaxes(-1, -2), g)
        gy = Tensor._make(gy)
    return gx, gy


class Matmul(Op):
    """input @ other in all of torch's dimension cases; batched results are torch's
    UnsafeViewBackward0, the 2-D/1-D special cases get their own names below."""
    __slots__ = ()
    _name = "UnsafeViewBackward0"

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return matmul_kernel(x, y)

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return matmul_backward(grad, x, y, ctx.needs_input_grad)


class Mm(Matmul):
    __slots__ = ()
    _name = "MmBackward0"


class Mv(Matmul):
    __slots__ = ()
    _name = "MvBackward0"


class Dot(Matmul):
    __slots__ = ()
    _name = "DotBackward0"


class Bmm(Matmul):
    __slots__ = ()
    _name = "BmmBackward0"


class VecMat(Matmul):
    __slots__ = ()
    _name = "SqueezeBackward4"


_MATMUL_CLASS = {(1, 1): Dot, (2, 1): Mv, (1, 2): VecMat, (2, 2): Mm}


# ---- matmul errors (only computed when a check fails) ---------------------------------

def _dtype_error(x, y):
    return RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_cname(x)} != {_cname(y)}")


def _not_implemented(kernel, t):
    return NotImplementedError(f'"{kernel}" not implemented for \'{_sname(t)}\'')


def _dot_check(x, y):
    a = x._data.shape
    b = y._data.shape
    if len(a) != 1 or len(b) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(a)}D and {len(b)}D tensors")
    if x._dtype is not y._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_sname(x)} and "
                           f"{_sname(y)}")
    if a[0] != b[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the "
                           f"same number of elements, but got {a[0]} and {b[0]} elements respectively")
    if x._dtype is D.bool:
        raise _not_implemented("dot", x)


def _mm_shapes_error(a, b):
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})")


def _matmul_error(x, y):
    """torch's error for x @ y (called once we know the product is invalid)."""
    a = x._data.shape
    b = y._data.shape
    xd, yd = len(a), len(b)
    if xd == 0 or yd == 0:
        return RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {xd}D and {yd}D")
    if xd == 1 and yd == 1:
        try:
            _dot_check(x, y)
        except RuntimeError as e:
            return e
    if x._dtype is not y._dtype:
        if yd == 1:
            return RuntimeError(f"addmv input tensors must have the same dtype, but got {_sname(y)}, {_sname(x)}, and "
                                f"{_sname(y)}")
        if yd == 2:
            return _dtype_error(x, y)
        return RuntimeError(f"expected scalar type {_sname(x)} but found {_sname(y)}")
    if xd == 2 and yd == 1 or xd > 2 and yd == 1:
        rows = int(np.prod(a[:-1]))
        return RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{a[-1]}), vec ({b[0]})")
    if yd == 2 and xd <= 2:
        return _mm_shapes_error(a if xd == 2 else (1, a[0]), b)
    if yd == 2:
        return _mm_shapes_error((int(np.prod(a[:-1])), a[-1]), b)
    ba = a[:-2] if xd > 1 else ()
    bb = b[:-2]
    try:
        batch = np.broadcast_shapes(ba, bb)
    except ValueError:
        return shapes_error("matmul", np.empty(ba + (0,)), np.empty(bb + (0,)))
    n = int(np.prod(batch))
    k1 = a[-1]
    k2 = b[-2]
    return RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {k1}] but got: "
                        f"[{n}, {k2}].")


# ---- matmul, mm, bmm, mv, dot, vdot, inner, outer -------------------------------------

def matmul(input, other, *, out=None):
    """torch.matmul: https://pytorch.org/docs/stable/generated/torch.matmul.html"""
    if not (isinstance(other, Tensor) and isinstance(input, Tensor)):
        check_tensor(input, "matmul", "input", 1)
        check_tensor(other, "matmul", "other", 2)
    if input.layout is not _strided:  # a sparse COO or CSR left operand (ember/_ops/sparse*.py)
        from .sparse import sparse_matmul
        from .sparse_csr_math import csr_matmul
        return _finish((sparse_matmul if input.is_sparse else csr_matmul)(input, other), out, "matmul")
    x = input._data
    y = other._data
    xd = x.ndim
    yd = y.ndim
    if input._dtype is not other._dtype or xd == 0 or yd == 0 or x.shape[-1] != y.shape[-2 if yd > 1 else 0]:
        raise _matmul_error(input, other)
    if input._dtype is D.bool:
        raise _not_implemented("dot" if xd == 1 and yd == 1 else "addmm_impl_cpu_", input)
    cls = _MATMUL_CLASS.get((xd, yd), Matmul)
    try:
        r = cls.apply(input, other)
    except ValueError:
        raise _matmul_error(input, other) from None
    return r if out is None else write_out(out, r, "matmul")


def _rmatmul(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


def _matmul_dunder(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(self, other)


@register()
def mm(input, mat2, *, out=None):
    if input.layout is not _strided:  # a sparse COO or CSR left operand (ember/_ops/sparse*.py)
        from .sparse import sparse_dense_mm
        from .sparse_csr_math import csr_mm
        return _finish((sparse_dense_mm if input.is_sparse else csr_mm)(input, mat2), out, "mm")
    check_tensor(mat2, "mm", "mat2", 2)
    x = input._data
    y = mat2._data
    if x.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if y.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input._dtype is not mat2._dtype:
        raise _dtype_error(input, mat2)
    if x.shape[1] != y.shape[0]:
        raise _mm_shapes_error(x.shape, y.shape)
    if input._dtype is D.bool:
        raise _not_implemented("addmm_impl_cpu_", input)
    return _finish(Mm.apply(input, mat2), out, "mm")


def _bmm_check(x, y, name1="batch1", name2="batch2", kernel=None):
    """Shapes and dtypes of a batched product; `kernel`: torch's bool error comes before the dtype check."""
    a = x._data.shape
    b = y._data.shape
    if len(a) != 3:
        raise RuntimeError(f"{name1} must be a 3D tensor")
    if len(b) != 3:
        raise RuntimeError(f"{name2} must be a 3D tensor")
    if a[0] != b[0] or a[2] != b[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a[0]}, {a[2]}] but "
                           f"got: [{b[0]}, {b[1]}].")
    if kernel is not None and (x._dtype is D.bool or x._dtype.limited):
        raise _not_implemented(kernel, x)
    if x._dtype is not y._dtype:
        raise RuntimeError(f"expected scalar type {_sname(x)} but found {_sname(y)}")
    if x._dtype is D.bool:
        raise _not_implemented("baddbmm_cpu", x)


@register()
def bmm(input, mat2, *, out=None):
    check_tensor(mat2, "bmm", "mat2", 2)
    _bmm_check(input, mat2, kernel="bmm")
    return _finish(Bmm.apply(input, mat2), out, "bmm")


def _mv_check(x, v):
    a = x._data.shape
    b = v._data.shape
    if len(a) != 2 or len(b) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {len(a)}, {len(b)}")
    if a[1] != b[0]:
        raise RuntimeError(f"size mismatch, got input ({a[0]}), mat ({a[0]}x{a[1]}), vec ({b[0]})")
    if x._dtype is not v._dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_sname(v)}, {_sname(x)}, and "
                           f"{_sname(v)}")
    if x._dtype is D.bool:
        raise _not_implemented("addmv_impl_cpu", x)


@register()
def mv(input, vec, *, out=None):
    check_tensor(vec, "mv", "vec", 2)
    _mv_check(input, vec)
    return _finish(Mv.apply(input, vec), out, "mv")


@register()
def dot(input, tensor, *, out=None):
    check_tensor(tensor, "dot", "tensor", 2)
    _dot_check(input, tensor)
    return _finish(Dot.apply(input, tensor), out, "dot")


@register()
def vdot(input, other, *, out=None):
    check_tensor(other, "vdot", "other", 2)
    _dot_check(input, other)
    return _finish(Dot.apply(conj(input), other), out, "vdot")


@register()
def inner(input, other, *, out=None):
    check_tensor(other, "inner", "other", 2)
    if input._data.ndim == 0 or other._data.ndim == 0:
        return _finish(input * other, out, "inner")
    a = input._data.shape
    b = other._data.shape
    if a[-1] != b[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a)} and {list(b)}")
    from .linalg_contract import tensordot
    return _finish(tensordot(input, other, dims=([-1], [-1])), out, "inner")


@register(aliases=("ger",))
def outer(input, vec2, *, out=None):
    check_tensor(vec2, "outer", "vec2", 2)
    if input._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input._data.ndim}-D")
    if vec2._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2._data.ndim}-D")
    return _finish(input.reshape(-1, 1) * vec2, out, "outer")


# ---- beta * input + alpha * product: addmm, addmv, addr, addbmm, baddbmm ----------------

def _expand_error(shape, target):
    nd = len(target)
    if len(shape) > nd:
        return RuntimeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(target)}): the number of sizes "
                            f"provided ({nd}) must be greater or equal to the number of dimensions in the tensor "
                            f"({len(shape)})")
    pad = nd - len(shape)
    for i in range(len(shape)):
        if shape[i] != 1 and shape[i] != target[pad + i]:
            return RuntimeError(f"The expanded size of the tensor ({target[pad + i]}) must match the existing size "
                                f"({shape[i]}) at non-singleton dimension {pad + i}.  Target sizes: {list(target)}.  "
                                f"Tensor sizes: {list(shape)}")
    return RuntimeError(f"cannot expand {list(shape)} to {list(target)}")


class AddProduct(Op):
    """beta * input + alpha * product(a, b) in one node (torch's fused addmm family;
    a Linear layer's forward is one addmm)."""
    __slots__ = ()

    @staticmethod
    def product(a, b):
        return matmul_kernel(a, b)

    @staticmethod
    def forward(ctx, inp, a, b, beta, alpha):
        ctx.scalars = (beta, alpha)
        ctx.save_for_backward(a, b)
        r = type(ctx).product(a, b)
        if alpha != 1:
            r = np.multiply(r, scalar_array(alpha, r.dtype), out=r)
        if beta == 0:
            return r
        if beta != 1:
            inp = inp * scalar_array(beta, inp.dtype)
        return np.add(r, inp, out=r)

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        beta, alpha = ctx.scalars
        if isinstance(beta, complex) or isinstance(alpha, complex):
            beta = complex(beta).conjugate()
            alpha = complex(alpha).conjugate()
        need = ctx.needs_input_grad
        gi = None
        if need[0]:
            gi = grad if beta == 1 else grad * beta
        if not (need[1] or need[2]):
            return gi, None, None
        ga, gb = type(ctx).grads(grad, a, b, need[1:])
        if alpha != 1:
            ga = None if ga is None else ga * alpha
            gb = None if gb is None else gb * alpha
        return gi, ga, gb

    @staticmethod
    def grads(grad, a, b, need):
        return matmul_backward(grad, a, b, need)


class Addmm(AddProduct):
    __slots__ = ()
    _name = "AddmmBackward0"


class Addmv(AddProduct):
    __slots__ = ()
    _name = "AddmvBackward0"


class Baddbmm(AddProduct):
    __slots__ = ()
    _name = "BaddbmmBackward0"


class Addbmm(AddProduct):
    __slots__ = ()
    _name = "AddbmmBackward0"

    @staticmethod
    def product(a, b):
        return matmul_kernel(a, b).sum(axis=0)


class Addr(AddProduct):
    __slots__ = ()
    _name = "AddrBackward0"

    @staticmethod
    def product(a, b):
        if a.dtype in _LOW:
            return np.multiply.outer(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
        return np.multiply.outer(a, b)

    @staticmethod
    def grads(grad, a, b, need):
        ga = matmul(grad, conj(b)) if need[0] else None
        gb = matmul(grad.mT, conj(a)) if need[1] else None
        return ga, gb


def _add_product(cls, name, input, a, b, beta, alpha, out, out_shape):
    check_tensor(input, name, "input", 1)
    shape = input._data.shape
    if shape != out_shape and not _broadcastable(shape, out_shape):
        raise _expand_error(shape, out_shape)
    if input._dtype is not a._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_sname(input)} and {_sname(a)}")
    if input._dtype.category < D.FLOAT and (isinstance(alpha, float) or isinstance(beta, float)):
        alpha = int(alpha)
        beta = int(beta)
    r = cls.apply(input, a, b, beta=beta, alpha=alpha)
    return r if out is None else write_out(out, r, name)


def _broadcastable(shape, target):
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != 1 and s != t:
            return False
    return True


@register(inplace=True)
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    check_tensor(mat1, "addmm", "mat1", 2)
    check_tensor(mat2, "addmm", "mat2", 3)
    if mat1.layout is not _strided and not mat1.is_sparse:  # a sparse CSR mat1 (ember/_ops/sparse_csr_math.py)
        from .sparse_csr_math import csr_addmm
        return _finish(csr_addmm(input, mat1, mat2, beta, alpha), out, "addmm")
    a = mat1._data
    b = mat2._data
    if a.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {a.ndim}-D tensor")
    if b.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {b.ndim}-D tensor")
    if mat1._dtype is not mat2._dtype:
        raise _dtype_error(mat1, mat2)
    if a.shape[1] != b.shape[0]:
        raise _mm_shapes_error(a.shape, b.shape)
    if mat1._dtype is D.bool and getattr(input, "_dtype", None) is D.bool:  # else: torch's dtype error first
        raise _not_implemented("addmm_impl_cpu_", mat1)
    return _add_product(Addmm, "addmm", input, mat1, mat2, beta, alpha, out, (a.shape[0], b.shape[1]))


@register(inplace=True)
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    check_tensor(mat, "addmv", "mat", 2)
    check_tensor(vec, "addmv", "vec", 3)
    _mv_check(mat, vec)
    return _add_product(Addmv, "addmv", input, mat, vec, beta, alpha, out, (mat._data.shape[0],))


@register(inplace=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    check_tensor(vec1, "addr", "vec1", 2)
    check_tensor(vec2, "addr", "vec2", 3)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    check_tensor(input, "addr", "input", 1)
    if not (input._dtype is vec1._dtype is vec2._dtype):
        d = D.result_type_of((input, vec1, vec2))  # torch's addr promotes all three (an outer product and add)
        input, vec1, vec2 = (t if t._dtype is d else t.to(d) for t in (input, vec1, vec2))
    out_shape = (vec1._data.shape[0], vec2._data.shape[0])
    return _add_product(Addr, "addr", input, vec1, vec2, beta, alpha, out, out_shape)


def _result_sizes_read(batch1, batch2):
    """torch's (b)addbmm read batch2.size(2) and batch1.size(1) for the result's shape before checking the ranks:
    a tensor with too few dims is its IndexError."""
    _wrap_dim(2, batch2._data.ndim)
    _wrap_dim(1, batch1._data.ndim)


@register(inplace=True)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    check_tensor(batch1, "baddbmm", "batch1", 2)
    check_tensor(batch2, "baddbmm", "batch2", 3)
    try:
        _bmm_check(batch1, batch2)
    except RuntimeError:
        _result_sizes_read(batch1, batch2)
        raise
    a = batch1._data.shape
    return _add_product(Baddbmm, "baddbmm", input, batch1, batch2, beta, alpha, out,
                        (a[0], a[1], batch2._data.shape[2]))


@register(inplace=True)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    check_tensor(batch1, "addbmm", "batch1", 2)
    check_tensor(batch2, "addbmm", "batch2", 3)
    try:
        _bmm_check(batch1, batch2)
    except RuntimeError:
        _result_sizes_read(batch1, batch2)
        raise
    return _add_product(Addbmm, "addbmm", input, batch1, batch2, beta, alpha, out,
                        (batch1._data.shape[1], batch2._data.shape[2]))


install(matmul, "matmul")
install(matmul, "linalg.matmul", method=False, function=False)
Tensor.__matmul__ = _autocast_wrap(_matmul_dunder, "matmul")  # install() wraps the named forms
Tensor.__rmatmul__ = _autocast_wrap(_rmatmul, "matmul")

# the rest of the family
from . import linalg_contract, linalg_decomp, linalg_lu, linalg_spectral, linalg_norm, linalg_func  # noqa: E402,F401
