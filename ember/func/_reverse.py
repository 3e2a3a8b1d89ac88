"""Reverse-mode transforms of torch.func: grad, grad_and_value, vjp, jacrev.

Built on ember's autograd graph (Note [Transforms on the autograd graph] in _common.py), so they
nest (grad(grad(f)), jacrev(jacrev(f)), vmap(grad(f))) and compose with torch.autograd.
"""
import functools

from .. import eye
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..utils._pytree import tree_flatten, tree_unflatten
from ._batched import active_levels
from ._common import (autograd_grad, check_float_outputs, check_tensor_outputs, error_if_complex,
                      make_differentiable, reaches_outside, release, release_aux, replace_args, slice_argnums,
                      split_aux)

__all__ = ["grad", "grad_and_value", "vjp", "jacrev"]


def grad_and_value(func, argnums=0, has_aux=False):
    """torch.func.grad_and_value: a function returning (gradient, value) or (gradient, (value, aux))."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: a function returning the gradient of func's scalar output (and aux)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value_and_aux = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, value_and_aux[1]) if has_aux else g
    return wrapper


def _grad_and_value(func, argnums, has_aux, args, kwargs):
    api = "grad_and_value(f)(*args)"
    with enable_grad():
        diff = slice_argnums(args, argnums, as_tuple=False)
        wrapped, diff_tree, own = make_differentiable(diff)
        output = func(*replace_args(args, argnums, diff_tree), **kwargs)
        output, aux = split_aux(output, has_aux, api)
        if not isinstance(output, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with {output.dim()} "
                               f"dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        keep = reaches_outside([output], own)
        grads = autograd_grad([output], wrapped, create_graph=keep)
    spec = tree_flatten(diff)[1]
    grads = release(tree_unflatten(grads, spec), own)
    output = release(output, own)
    if has_aux:
        return grads, (output, release_aux(aux, own))
    return grads, output


def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (func(*primals), vjp_fn[, aux]); vjp_fn(cotangents) gives one gradient per primal."""
    api = "vjp(f, *primals)"
    with enable_grad():
        wrapped, diff_primals, own = make_differentiable(primals)
        output = func(*diff_primals)
        output, aux = split_aux(output, has_aux, api)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, api)
        check_float_outputs(flat_out)
        keep = reaches_outside(flat_out, own)
    primals_spec = tree_flatten(primals)[1]

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = is_grad_enabled()
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {_pprint(ct_spec)}, primal output: "
                               f"{_pprint(out_spec)}")
        with enable_grad():
            # a graph is worth building only when something outside this transform can use it
            needed = keep or any(isinstance(c, Tensor) and c.requires_grad for c in flat_ct)
            grads = autograd_grad(flat_out, wrapped, flat_ct, retain_graph=retain_graph,
                                  create_graph=create_graph and needed)
        return release(tree_unflatten(grads, primals_spec), own)

    result = release(output, own)
    if has_aux:
        return result, vjp_fn, release_aux(aux, own)
    return result, vjp_fn


def _pprint(spec):
    from ..utils._pytree import treespec_pprint
    return treespec_pprint(spec)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """torch.func.jacrev: the Jacobian by reverse mode, one vjp per output element (chunk_size only
    bounds memory in torch; the values are the same either way)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        error_if_complex("jacrev", args, is_input=True)
        with enable_grad():
            diff = slice_argnums(args, argnums)
            wrapped, diff_tuple, own = make_differentiable(diff)
            new = diff_tuple[0] if isinstance(argnums, int) else diff_tuple
            output = func(*replace_args(args, argnums, new))
            output, aux = split_aux(output, has_aux, "vjp(f, *primals)")
            flat_out, out_spec = tree_flatten(output)
            check_tensor_outputs(flat_out, "vjp(f, *primals)")
            check_float_outputs(flat_out)
            error_if_complex("jacrev", flat_out, is_input=False)
            keep = reaches_outside(flat_out, own)
            jacs = [_jacobian_rows(o, wrapped, keep) for o in flat_out]
        in_spec = tree_flatten(diff)[1]
        per_output = []
        for jac_ins in jacs:
            tree = tree_unflatten(jac_ins, in_spec)
            per_output.append(tree[0] if isinstance(argnums, int) else tree)
        result = release(tree_unflatten(per_output, out_spec), own)
        if has_aux:
            return result, release_aux(aux, own)
        return result
    return wrapper


def _jacobian_rows(out, inputs, keep):
    """d out / d input for every input: one vjp per element of out, shaped out.shape + input.shape
    (inside a vectorized vmap the inputs carry a leading dim per level: their samples' shapes count)."""
    import ember  # ember.stack: the dispatching one while a vectorized vmap runs
    from .. import zeros
    skip = len(active_levels())
    shapes = [tuple(x.shape)[skip:] for x in inputs]
    n = out.numel()
    if n == 0 or not out.requires_grad:
        return [zeros(tuple(out.shape) + s, dtype=x.dtype) for s, x in zip(shapes, inputs)]
    basis = eye(n, dtype=out.dtype)
    rows = [[] for _ in inputs]
    for i in range(n):
        g = autograd_grad([out], inputs, [basis[i].reshape(out.shape)], retain_graph=True, create_graph=keep)
        for j, gj in enumerate(g):
            rows[j].append(gj)
    return [ember.stack(r).reshape(tuple(out.shape) + s) for r, s in zip(rows, shapes)]
