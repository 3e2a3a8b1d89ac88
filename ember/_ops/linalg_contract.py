"""Linear algebra, contractions: einsum, tensordot, kron, cross, multi_dot / chain_matmul.

einsum's backward is einsum again (over the other operands), so it differentiates to
any order; tensordot and kron are composites of permute/reshape/mm and mul.
"""
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ._registry import Op, install, register, shapes_error, write_out
from .linalg import _LOW, _cname, _sname, check_tensor, conj, mm

_make = Tensor._make


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
    return _einsum(operands, specs, out_spec)


def _result_dtype(operands, subs, out_sub):
    """The dtype torch's einsum returns, or its error. Note [einsum dtypes]: torch contracts left to right;
    labels only one operand still needs are summed on it first (bool and integers sum to int64); a pair
    with a label to contract goes through bmm, which needs one dtype (and none for bool); a pair without
    one is a broadcast multiply, which promotes."""
    later = [set(out_sub)]
    for s in reversed(subs[1:]):
        later.append(later[-1] | set(s))
    later.reverse()  # later[k]: labels needed after operand k is folded in (output and operands k+1...)

    def summed(dtype, labels, keep):
        if set(labels) - keep and dtype.category < D.FLOAT:
            return D.int64
        return dtype
    acc_labels = set(subs[0])
    keep = later[0] | set(subs[1]) if len(subs) > 1 else later[0]
    acc = summed(operands[0]._dtype, subs[0], keep)
    acc_labels &= keep
    for k in range(1, len(subs)):
        need = later[k]
        d = summed(operands[k]._dtype, subs[k], need | acc_labels)
        labels = set(subs[k]) & (need | acc_labels)
        if (acc_labels & labels) - need:
            if acc is D.bool:
                raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
            if d is not acc:
                raise RuntimeError(f"expected scalar type {D.SCALAR_NAMES[acc]} but found {D.SCALAR_NAMES[d]}")
        else:
            acc = D.promote_types(acc, d)
        acc_labels = (acc_labels | labels) & need
    return acc


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
    d = _result_dtype(operands, subs, out_sub)
    operands = [op if op._dtype is d else op.to(d) for op in operands]
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
    if not isinstance(dims, (tuple, list)):  # torch's Python-level check, before its parser's
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or list[list[int]] "
                           f"containing two lists, but got dims={dims}")
    da, db = dims
    for name, pos, ds in (("dims_self", 3, da), ("dims_other", 4, db)):
        if not isinstance(ds, (tuple, list)):
            raise TypeError(f"tensordot(): argument '{name}' (position {pos}) must be tuple of ints, "
                            f"not {type(ds).__name__}")
    da = list(da)
    db = list(db)
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
        if sb == 1 and sa != 1:  # torch broadcasts a size-1 contracted dim: the other side is summed there
            a = a.sum(i, keepdim=True)
        elif sa == 1 and sb != 1:
            b = b.sum(j, keepdim=True)
        elif sa != sb:
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
        return np.ascontiguousarray(np.cross(x, y, axisa=dim, axisb=dim, axisc=dim))  # torch's is contiguous

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
    if input._dtype is D.bool or input._dtype.limited:
        raise NotImplementedError(f"\"cross\" not implemented for '{D.SCALAR_NAMES[input._dtype]}'")
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


install(einsum, "einsum", method=False)
install(chain_matmul, "chain_matmul", method=False)
install(linalg_cross, "linalg.cross", method=False, function=False)
install(linalg_multi_dot, "linalg.multi_dot", method=False, function=False)
