"""Linear algebra, part 1: products (matmul and its fused/batched relatives, einsum,
tensordot, kron, cross, multi_dot). Decompositions live in linalg_decomp.py, norms in
linalg_norm.py; both are imported at the end of this file so `_ops/__init__` needs
to know only this module.

Note [matmul hot path]: matmul/mm/bmm/addmm run straight into np.matmul (BLAS for
float32/float64) on the inputs' own arrays; the backward multiplies by transposed
*views* (`mT`), which NumPy hands to BLAS as transposed operands without copying.
A batch of matrices times one matrix is folded into a single GEMM when the batch is
contiguous, as torch does.
"""
import warnings

import ml_dtypes
import numpy as np

from .. import _dtype as D
from .._backend import scalar_array
from .._tensor import Tensor, _wrap_dim
from ._registry import Op, install, register, shapes_error, write_out

_make = Tensor._make

# float16/bfloat16 products accumulate in float32 (torch's CPU kernels do; NumPy's
# bfloat16 matmul would even return float32)
_LOW = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))

# the C type names torch prints in "expected m1 and m2 to have the same dtype" errors
_CNAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
           "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
           "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
           "complex128": "c10::complex<double>"}


def _sname(t):
    return D.SCALAR_NAMES[t._dtype]


def _cname(t):
    return _CNAMES[t._dtype.name]


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
        r = np.matmul(x.reshape(-1, k), y)
        return r.reshape(x.shape[:-1] + (y.shape[-1],))
    return np.matmul(x, y)


def matmul_backward(grad, x, y, need):
    """Gradients of x @ y (torch's 1-D promotion rules) written with ember ops."""
    xd = x._data.ndim
    yd = y._data.ndim
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
                gy = matmul(adj(x.reshape(-1, x._data.shape[-1])), grad.reshape(-1))
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
            gy = matmul(adj(x.reshape(-1, x._data.shape[-1])), grad.reshape(-1, grad._data.shape[-1]))
        else:
            gy = matmul(adj(x), grad)
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


def _dot_check(x, y, name="dot"):
    a = x._data.shape
    b = y._data.shape
    if len(a) != 1 or len(b) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(a)}D and {len(b)}D tensors")
    if x._dtype is not y._dtype:
        raise RuntimeError(f"{name} : expected both vectors to have same dtype, but found {_sname(x)} and "
                           f"{_sname(y)}")
    if a[0] != b[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the "
                           f"same number of elements, but got {a[0]} and {b[0]} elements respectively")
    if x._dtype is D.bool:
        raise _not_implemented(name, x)


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
        if xd <= 2 and yd <= 2 or yd <= 2:
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
    if not isinstance(other, Tensor):
        check_tensor(input, "matmul", "input", 1)
        check_tensor(other, "matmul", "other", 2)
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


def _bmm_check(x, y, name1="batch1", name2="batch2"):
    a = x._data.shape
    b = y._data.shape
    if len(a) != 3:
        raise RuntimeError(f"{name1} must be a 3D tensor")
    if len(b) != 3:
        raise RuntimeError(f"{name2} must be a 3D tensor")
    if a[0] != b[0] or a[2] != b[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a[0]}, {a[2]}] but "
                           f"got: [{b[0]}, {b[1]}].")
    if x._dtype is not y._dtype:
        raise RuntimeError(f"expected scalar type {_sname(x)} but found {_sname(y)}")
    if x._dtype is D.bool:
        raise _not_implemented("baddbmm_cpu", x)


@register()
def bmm(input, mat2, *, out=None):
    check_tensor(mat2, "bmm", "mat2", 2)
    _bmm_check(input, mat2)
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
    _dot_check(input, other, "vdot")
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
    if mat1._dtype is D.bool:
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
    if vec1._dtype is not vec2._dtype:
        raise RuntimeError(f"expected scalar type {_sname(vec1)} but found {_sname(vec2)}")
    out_shape = (vec1._data.shape[0], vec2._data.shape[0])
    return _add_product(Addr, "addr", input, vec1, vec2, beta, alpha, out, out_shape)


@register(inplace=True)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    check_tensor(batch1, "baddbmm", "batch1", 2)
    check_tensor(batch2, "baddbmm", "batch2", 3)
    _bmm_check(batch1, batch2)
    a = batch1._data.shape
    return _add_product(Baddbmm, "baddbmm", input, batch1, batch2, beta, alpha, out,
                        (a[0], a[1], batch2._data.shape[2]))


@register(inplace=True)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    check_tensor(batch1, "addbmm", "batch1", 2)
    check_tensor(batch2, "addbmm", "batch2", 3)
    _bmm_check(batch1, batch2)
    return _add_product(Addbmm, "addbmm", input, batch1, batch2, beta, alpha, out,
                        (batch1._data.shape[1], batch2._data.shape[2]))


# ---- einsum ---------------------------------------------------------------------------

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_LABEL = {c: i for i, c in enumerate(_LETTERS)}  # torch orders implicit outputs A-Z before a-z


class Einsum(Op):
    """einsum over integer labels (np.einsum's sublist form). subs: one tuple of labels per
    operand, no repeats across broadcasting (the public function squeezes those away)."""
    __slots__ = ()
    _name = "EinsumBackward0"

    @staticmethod
    def forward(ctx, *arrays, subs, out_sub):
        ctx.subs = (subs, out_sub)
        ctx.save_for_backward(*arrays)
        dtype = arrays[0].dtype
        if dtype in _LOW:
            arrays = [a.astype(np.float32) for a in arrays]
        args = []
        for a, s in zip(arrays, subs):
            args.append(a)
            args.append(list(s))
        args.append(list(out_sub))
        r = np.einsum(*args, optimize=len(arrays) > 1)
        if len(arrays) == 1 and np.may_share_memory(r, arrays[0]):
            r = r.copy()  # np.einsum returns views for pure permutations/diagonals
        return np.asarray(r).astype(dtype, copy=False)

    def backward(ctx, grad):
        ops = ctx.saved_tensors
        subs, out_sub = ctx.subs
        need = ctx.needs_input_grad
        sizes = {}
        for t, s in zip(ops, subs):
            for lab, n in zip(s, t._data.shape):
                sizes[lab] = n
        grads = []
        for i, t in enumerate(ops):
            if not need[i]:
                grads.append(None)
                continue
            grads.append(_einsum_operand_grad(grad, ops, subs, out_sub, i, sizes))
        return tuple(grads)


def _einsum_operand_grad(grad, ops, subs, out_sub, i, sizes):
    """d/d(operand i): einsum of grad with the other operands onto operand i's labels.
    Labels only operand i has become a ones() factor (a broadcast), repeated labels
    (a diagonal) an eye() factor over a fresh label."""
    target = subs[i]
    dtype = ops[i]._dtype
    elsewhere = set(out_sub)
    for j, s in enumerate(subs):
        if j != i:
            elsewhere.update(s)
    used = set(sizes)
    free = (lab for lab in range(52) if lab not in used)
    operands = [grad]
    op_subs = [tuple(out_sub)]
    for j, s in enumerate(subs):
        if j != i:
            operands.append(conj(ops[j]))
            op_subs.append(s)
    new_target = []
    seen = set()
    for lab in target:
        if lab in seen:
            fresh = next(free)
            operands.append(_make(np.eye(sizes[lab], dtype=dtype.np), dtype))
            op_subs.append((lab, fresh))
            new_target.append(fresh)
            continue
        seen.add(lab)
        new_target.append(lab)
        if lab not in elsewhere:
            operands.append(_make(np.ones(sizes[lab], dtype=dtype.np), dtype))
            op_subs.append((lab,))
            elsewhere.add(lab)
    return Einsum.apply(*operands, subs=tuple(op_subs), out_sub=tuple(new_target))


def _parse_sublist(args):
    """einsum(op0, sub0, op1, sub1, ..., [out]) -> operands and label lists ('...' for Ellipsis)."""
    operands = []
    specs = []
    items = list(args)
    out = None
    if len(items) % 2 == 1:
        out = items.pop()
    for k in range(0, len(items), 2):
        operands.append(items[k])
        specs.append(_sublist_labels(items[k + 1]))
    return operands, specs, (None if out is None else _sublist_labels(out))


def _sublist_labels(sub):
    labels = []
    for v in sub:
        if v is Ellipsis:
            labels.append("...")
        else:
            if not 0 <= int(v) < 52:
                raise RuntimeError(f"einsum(): expected subscript to be within the range [0, 52), but got {v}")
            labels.append(_LETTERS[int(v)])
    return labels


def _parse_equation(eq):
    """'ij,jk->ik' -> per-operand label lists and the output list (None if implicit)."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    specs = []
    pos = 0
    for part in lhs.split(","):
        specs.append(_term_labels(part, pos, eq))
        pos += len(part) + 1
    out = _term_labels(rhs, len(lhs) + 2, eq) if arrow else None
    return specs, out


def _term_labels(term, offset, eq):
    labels = []
    k = 0
    while k < len(term):
        c = term[k]
        if c == ".":
            if term[k:k + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for operand {eq[:offset].count(',')} that is not part of "
                                   "any ellipsis")
            labels.append("...")
            k += 3
            continue
        if c not in _LABEL:
            raise RuntimeError(f"einsum(): invalid subscript given at index {offset + k} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        labels.append(c)
        k += 1
    return labels


def einsum(*args):
    """torch.einsum: https://pytorch.org/docs/stable/generated/torch.einsum.html"""
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    if isinstance(args[0], str):
        operands = list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
        specs, out_spec = _parse_equation(args[0])
        if len(operands) < len(specs):
            raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
        if len(operands) > len(specs):
            raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    else:
        operands, specs, out_spec = _parse_sublist(args)
    for k, op in enumerate(operands):
        check_tensor(op, "einsum", "operands", k + 2)
    d = operands[0]._dtype
    for op in operands[1:]:
        if op._dtype is not d:
            raise RuntimeError(f"expected scalar type {D.SCALAR_NAMES[d]} but found {D.SCALAR_NAMES[op._dtype]}")
    return _einsum(operands, specs, out_spec)


def _einsum(operands, specs, out_spec):
    ell_ndim = 0
    for k, (op, spec) in enumerate(zip(operands, specs)):
        nd = op._data.ndim
        n_named = len(spec) - spec.count("...")
        if "..." in spec:
            ell_ndim = max(ell_ndim, nd - n_named)
        elif nd != n_named:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_named}) does not match the "
                               f"number of dimensions ({nd}) for operand {k} and no ellipsis was given")
    used = {_LABEL[c] for spec in specs for c in spec if c != "..."}
    if out_spec is not None:
        used.update(_LABEL[c] for c in out_spec if c != "...")
    spare = [lab for lab in range(52) if lab not in used]
    ell = tuple(spare[:ell_ndim])  # labels for the broadcast ellipsis dims, right-aligned
    subs = []
    for op, spec in zip(operands, specs):
        s = []
        for c in spec:
            if c == "...":
                n = op._data.ndim - (len(spec) - 1)
                s.extend(ell[ell_ndim - n:])
            else:
                s.append(_LABEL[c])
        subs.append(s)
    counts = {}
    for s in subs:
        for lab in s:
            counts[lab] = counts.get(lab, 0) + 1
    if out_spec is None:
        out_sub = list(ell) + sorted(lab for lab, c in counts.items() if c == 1 and lab not in ell)
    else:
        out_sub = []
        for c in out_spec:
            if c == "...":
                out_sub.extend(ell)
                continue
            lab = _LABEL[c]
            if lab not in counts:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
            if lab in out_sub:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            out_sub.append(lab)
    sizes = {}
    for k, (op, s) in enumerate(zip(operands, subs)):
        for lab, n in zip(s, op._data.shape):
            prev = sizes.get(lab, 1)
            if n != 1 and prev != 1 and n != prev:
                name = _LETTERS[lab] if lab not in ell else "..."
                raise RuntimeError(f"einsum(): subscript {name} has size {n} for operand {k} which does not "
                                   f"broadcast with previously seen size {prev}")
            if n != 1:
                sizes[lab] = n
            else:
                sizes.setdefault(lab, 1)
    # broadcasting: a size-1 dim under a label that is larger elsewhere is squeezed away
    final_ops = []
    final_subs = []
    for op, s in zip(operands, subs):
        drop = [k for k, lab in enumerate(s) if op._data.shape[k] == 1 and sizes[lab] != 1]
        if drop:
            op = op.squeeze(tuple(drop))
            s = [lab for k, lab in enumerate(s) if k not in drop]
        final_ops.append(op)
        final_subs.append(tuple(s))
    return Einsum.apply(*final_ops, subs=tuple(final_subs), out_sub=tuple(out_sub))


install(einsum, "einsum", method=False)


# ---- tensordot, kron, cross, multi_dot ------------------------------------------------

def _tensordot_dims(dims, a, b):
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a._data.ndim or dims > b._data.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(a._data.ndim - dims, a._data.ndim)), list(range(dims))
    da, db = dims
    da = [da] if isinstance(da, int) else list(da)
    db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    return da, db


@register(method=False)
def tensordot(a, b, dims=2, out=None):
    check_tensor(a, "tensordot", "a", 1)
    check_tensor(b, "tensordot", "b", 2)
    da, db = _tensordot_dims(dims, a, b)
    if a._dtype is not b._dtype:
        raise RuntimeError("both inputs should have same dtype")
    na = a._data.ndim
    nb = b._data.ndim
    da = [_wrap_dim(d, na) for d in da]
    db = [_wrap_dim(d, nb) for d in db]
    for i, j in zip(da, db):
        sa = a._data.shape[i]
        sb = b._data.shape[j]
        if sa != sb:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in dim {i - na} and "
                               f"second has size {sb} in dim {j}")
    free_a = [d for d in range(na) if d not in da]
    free_b = [d for d in range(nb) if d not in db]
    k = int(np.prod([a._data.shape[d] for d in da]))
    sa = [a._data.shape[d] for d in free_a]
    sb = [b._data.shape[d] for d in free_b]
    pa = a.permute(free_a + da).reshape(int(np.prod(sa)), k)
    pb = b.permute(db + free_b).reshape(k, int(np.prod(sb)))
    r = mm(pa, pb).reshape(sa + sb)
    return r if out is None else write_out(out, r, "tensordot")


@register()
def kron(input, other, *, out=None):
    check_tensor(other, "kron", "other", 2)
    nd = max(input._data.ndim, other._data.ndim)
    sa = (1,) * (nd - input._data.ndim) + input._data.shape
    sb = (1,) * (nd - other._data.ndim) + other._data.shape
    a = input.reshape(tuple(v for s in sa for v in (s, 1)))
    b = other.reshape(tuple(v for s in sb for v in (1, s)))
    r = (a * b).reshape(tuple(x * y for x, y in zip(sa, sb)))
    return r if out is None else write_out(out, r, "kron")


class Cross(Op):
    _name = "LinalgCrossBackward0"

    @staticmethod
    def forward(ctx, x, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(x, y)
        return np.cross(x, y, axisa=dim, axisb=dim, axisc=dim)

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        d = ctx.dim
        gx = _cross(conj(y), grad, d) if need[0] else None
        gy = _cross(grad, conj(x), d) if need[1] else None
        return gx, gy


def _cross(x, y, dim):
    nd = max(x._data.ndim, y._data.ndim)
    return Cross.apply(x, y, dim=dim - nd if dim >= 0 else dim)


def _cross_checked(input, other, dim, name):
    check_tensor(other, name, "other", 2)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"expected scalar type {_sname(input)} but found {_sname(other)}")
    a = input._data.shape
    b = other._data.shape
    if len(a) != len(b):
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    try:
        shape = np.broadcast_shapes(a, b)
    except ValueError:
        raise shapes_error(name, input._data, other._data) from None
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=3)
    d = _wrap_dim(dim, len(shape))
    if a[d] != 3 or b[d] != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got {a[d]} and {b[d]}")
    return _cross(input, other, d)


@register()
def cross(input, other, dim=None, *, out=None):
    r = _cross_checked(input, other, dim, "linalg.cross")
    return r if out is None else write_out(out, r, "cross")


def linalg_cross(input, other, *, dim=-1, out=None):
    r = _cross_checked(input, other, dim, "linalg.cross")
    return r if out is None else write_out(out, r, "linalg.cross")


def _chain_order(shapes):
    """Optimal parenthesization of a matrix chain (the classic O(n^3) dynamic program)."""
    n = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j] = c
                    split[i][j] = k
    return split


def _chain_product(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return mm(_chain_product(mats, split, i, k), _chain_product(mats, split, k + 1, j))


def linalg_multi_dot(tensors, *, out=None):
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first = tensors[0]._data.ndim
    last = tensors[-1]._data.ndim
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i in range(1, n - 1):
        if tensors[i]._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i]._data.ndim}D")
    d = tensors[0]._dtype
    for i, t in enumerate(tensors):
        if t._dtype is not d:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_cname(tensors[0])} and tensor {i} {_cname(t)}")
    mats = list(tensors)
    if first == 1:
        mats[0] = mats[0].unsqueeze(0)
    if last == 1:
        mats[-1] = mats[-1].unsqueeze(-1)
    shapes = [m._data.shape for m in mats]
    for i in range(n - 1):
        if shapes[i][1] != shapes[i + 1][0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i]._data.shape)} and "
                               f"{list(tensors[i + 1]._data.shape)} cannot be multiplied")
    r = _chain_product(mats, _chain_order(shapes), 0, n - 1)
    if first == 1 and last == 1:
        r = r.reshape(())
    elif first == 1:
        r = r.reshape(-1)
    elif last == 1:
        r = r.reshape(-1)
    return r if out is None else write_out(out, r, "linalg.multi_dot")


def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 0:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        if m._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m._data.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        r = matrices[0].clone()
    else:
        r = linalg_multi_dot(matrices)
    return r if out is None else write_out(out, r, "chain_matmul")


install(matmul, "matmul")
Tensor.__matmul__ = _matmul_dunder
Tensor.__rmatmul__ = _rmatmul
install(chain_matmul, "chain_matmul", method=False)
install(linalg_cross, "linalg.cross", method=False, function=False)
install(linalg_multi_dot, "linalg.multi_dot", method=False, function=False)

from . import linalg_decomp, linalg_spectral, linalg_norm  # noqa: E402,F401  (the rest of the family)
