"""Forward-mode transforms of torch.func: jvp, linearize, jacfwd, hessian.

Note [jvp by double vjp]: ember has no dual numbers; a Jacobian-vector product is computed
exactly from reverse mode. With u a fresh leaf shaped like the output, g(u) = J^T u is a vjp
built with create_graph=True, and it is linear in u, so its vjp with respect to u against a
tangent t is J t. Every ember backward formula is written in ember ops, so this holds for every
op; the cost is two backward passes instead of one forward pass.
"""
import functools

from .. import eye, zeros, zeros_like
from .. import autograd as _autograd
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from ..utils._pytree import tree_flatten, tree_unflatten
from ._batched import active_levels, rewrap, to_full
from ._common import (check_tensor_outputs, error_if_complex, make_differentiable, reaches_outside, release,
                      release_aux, replace_args, slice_argnums, split_aux)
from ._reverse import jacrev
from ._vmap import check_randomness, randomness_mode

__all__ = ["jvp", "linearize", "jacfwd", "hessian"]

_JVP = "jvp(f, primals, tangents)"


class _Linearization:
    """The double-vjp graph of one call: outputs, their u leaves, and g = J^T u per input."""

    def __init__(self, flat_out, wrapped, own):
        self.flat_out = flat_out
        # inside a vectorized vmap: the graph of the whole batch (Note [Transforms on the autograd graph])
        self.levels = active_levels()
        plain = [to_full(o, self.levels) for o in flat_out] if self.levels else flat_out
        self.diff = [i for i, o in enumerate(plain) if o._requires_grad]
        self.us = [zeros_like(plain[i]).requires_grad_() for i in self.diff]
        self.own = own + self.us
        self.keep = reaches_outside(flat_out, own)
        if self.diff:
            outs = [plain[i] for i in self.diff]
            self.gs = _autograd.grad(outs, wrapped, self.us, create_graph=True, allow_unused=True)
        else:
            self.gs = (None,) * len(wrapped)

    def apply(self, tangents, strict=False, retain_graph=True):
        """J t for the tangents t (one per input; None for an input that does not move), one tensor per output."""
        if self.levels:
            tangents = [None if t is None else to_full(t, self.levels) for t in tangents]
        pairs = [(g, t) for g, t in zip(self.gs, tangents) if t is not None and g is not None and g._requires_grad]
        result = [None] * len(self.flat_out)
        if pairs:
            keep = self.keep or any(t._requires_grad for _, t in pairs)
            jv = _autograd.grad([g for g, _ in pairs], self.us, [t for _, t in pairs], retain_graph=retain_graph,
                                create_graph=keep, allow_unused=True)
            for i, v in zip(self.diff, jv):
                result[i] = v if v is None or not self.levels else rewrap(v, self.levels)
        for i, o in enumerate(self.flat_out):
            if result[i] is None:
                if strict:
                    raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of "
                                       "the inputs. This is not allowed with strict=True.")
                result[i] = zeros_like(o)
        return result


def _check_primals_tangents(primals, tangents):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           f"if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    for name, flat in (("primals", flat_p), ("tangents", flat_t)):
        if len(flat) == 0:
            raise RuntimeError(f"{_JVP}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{_JVP}: Expected {name} to only contain Tensors, got {type(x)}")
    for p, t in zip(flat_p, flat_t):
        _check_dual([p], "primal")
        _check_dual([t], "tangent")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while the "
                               f"given forward gradient is of size {list(t.shape)}.")
    return flat_t


def _check_dual(tensors, what):
    """Forward-mode products are defined for floating and complex tensors only (torch's make_dual check)."""
    for x in tensors:
        if isinstance(x, Tensor) and not (x.is_floating_point() or x.is_complex()):
            raise ValueError(f"Expected {what} to be floating point or complex, but got: {x.dtype}")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """torch.func.jvp: (func(*primals), J @ tangents[, aux]), by Note [jvp by double vjp]."""
    flat_t = _check_primals_tangents(primals, tangents)
    with enable_grad():
        wrapped, diff_primals, own = make_differentiable(primals)
        output = func(*diff_primals)
        output, aux = split_aux(output, has_aux, _JVP)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, _JVP)
        lin = _Linearization(flat_out, wrapped, own)
        jv = lin.apply(flat_t, strict=strict, retain_graph=False)
    result = (release(output, lin.own), release(tree_unflatten(jv, out_spec), lin.own))
    if has_aux:
        return result + (release_aux(aux, own),)
    return result


def linearize(func, *primals):
    """torch.func.linearize: (func(*primals), jvp_fn) where jvp_fn(*tangents) is the jvp at primals."""
    with enable_grad():
        wrapped, diff_primals, own = make_differentiable(primals)
        output = func(*diff_primals)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, _JVP)
        lin = _Linearization(flat_out, wrapped, own)

    def jvp_fn(*tangents):
        flat_t = _check_primals_tangents(primals, tangents)
        with enable_grad():
            jv = lin.apply(flat_t)
        return release(tree_unflatten(jv, out_spec), lin.own)

    return release(output, lin.own), jvp_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """torch.func.jacfwd: the Jacobian column by column, one jvp per input element (Note [jvp by double
    vjp]); as in torch, random ops inside func raise under randomness='error'."""
    @functools.wraps(func)
    def wrapper(*args):
        error_if_complex("jacfwd", args, is_input=True)
        check_randomness(randomness)  # as torch: checked when called, not when wrapped
        with enable_grad():
            diff = slice_argnums(args, argnums)
            _check_dual(tree_flatten(diff)[0], "primal")
            wrapped, diff_tuple, own = make_differentiable(diff)
            new = diff_tuple[0] if isinstance(argnums, int) else diff_tuple
            with randomness_mode(randomness):
                output = func(*replace_args(args, argnums, new))
            output, aux = split_aux(output, has_aux, _JVP)
            flat_out, out_spec = tree_flatten(output)
            check_tensor_outputs(flat_out, _JVP)
            error_if_complex("jacfwd", flat_out, is_input=False)
            lin = _Linearization(flat_out, wrapped, own)
            per_input = [_jacobian_columns(lin, j, x) for j, x in enumerate(wrapped)]
        in_spec = tree_flatten(diff)[1]
        per_output = []
        for k in range(len(flat_out)):
            tree = tree_unflatten([cols[k] for cols in per_input], in_spec)
            per_output.append(tree[0] if isinstance(argnums, int) else tree)
        result = release(tree_unflatten(per_output, out_spec), lin.own)
        if has_aux:
            return result, release_aux(aux, own)
        return result
    return wrapper


def _jacobian_columns(lin, j, x):
    """d out / d x (x the j-th input) for every output, shaped out.shape + x.shape (inside a
    vectorized vmap x carries a leading dim per level: its samples' shape counts)."""
    import ember  # ember.stack: the dispatching one while a vectorized vmap runs
    shape = tuple(x.shape)[len(lin.levels):]
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return [zeros(tuple(o.shape) + shape, dtype=o.dtype) for o in lin.flat_out]
    basis = eye(n, dtype=x.dtype)
    cols = [[] for _ in lin.flat_out]
    for e in range(n):
        tangents = [None] * len(lin.gs)
        tangents[j] = basis[e].reshape(shape)
        jv = lin.apply(tangents)  # the other inputs get no tangent
        for k, v in enumerate(jv):
            cols[k].append(v)
    out = []
    for o, c in zip(lin.flat_out, cols):
        out.append(ember.stack(c, dim=-1).reshape(tuple(o.shape) + shape))
    return out


def hessian(func, argnums=0):
    """torch.func.hessian: jacfwd(jacrev(func, argnums), argnums), as torch composes it."""
    return jacfwd(jacrev(func, argnums), argnums)
