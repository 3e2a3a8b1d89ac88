"""What the grad-type transforms of ember.func share: argnums, differentiable inputs, graph release.

Note [Transforms on the autograd graph]: torch.func wraps tensors per transform level; ember
builds ordinary autograd graphs instead. A transform makes each differentiated input a fresh
leaf (or, when the input already requires grad, a graph-connected alias), runs the function,
and calls autograd.grad. It keeps the graph of its results (create_graph=True) only when the
function's graph reaches some leaf that is not its own: an enclosing transform's input, a
closed-over tensor that requires grad, or an input that requires grad. That is exactly when
torch.func's results stay differentiable (nested transforms, composition with
torch.autograd); otherwise the results are detached, plain tensors as in torch.func.

Inside a vectorized vmap (Note [Vectorized vmap], _batched.py) a transform works on the whole
batch: each differentiated input becomes a leaf with a dim per vmap level (to_full: an unbatched
input is expanded, so each sample gets a gradient of its own), outputs and cotangents are taken
the same way, and the gradients go back to the function as BatchedTensors (rewrap); jvp and
jacfwd (_forward.py) take their double-vjp graph the same way.
"""
from .. import autograd as _autograd
from .._tensor import Tensor
from ..autograd.graph import reached_leaves
from ..autograd.grad_mode import is_grad_enabled
from ..utils._pytree import tree_flatten, tree_unflatten
from ._batched import active_levels, rewrap, to_full


def slice_argnums(args, argnums, as_tuple=True):
    """The positional args that argnums selects (a tuple, or the single arg for an int when not as_tuple)."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    argnums = wrap_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return (args[argnums],) if as_tuple else args[argnums]
    return tuple(args[i] for i in argnums)


def wrap_argnums(argnums, num_args):
    """argnums with negative entries counted from the end, checked as torch checks them."""
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    wrapped = tuple(_wrap_argnum(a, num_args) for a in argnums)
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return wrapped


def _wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def replace_args(args, argnums, new):
    """args with the entries at argnums replaced by `new` (one value, or a tuple for tuple argnums)."""
    argnums = wrap_argnums(argnums, len(args))
    out = list(args)
    if isinstance(argnums, int):
        out[argnums] = new
    else:
        for i, v in zip(argnums, new):
            out[i] = v
    return tuple(out)


def make_differentiable(tree):
    """(flat inputs to differentiate by, the tree rebuilt from them, the transform's own fresh leaves)."""
    leaves, spec = tree_flatten(tree)
    outer = is_grad_enabled()
    levels = active_levels()
    wrapped = []
    own = []
    for t in leaves:
        if not isinstance(t, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(t)}")
        if levels:
            t = to_full(t, levels)
        if outer and t._requires_grad:
            w = t.view_as(t)  # an alias: gradients flow on to the enclosing graph
        else:
            w = t.detach().requires_grad_()
            own.append(w)
        wrapped.append(w)
    given = [rewrap(w, levels) for w in wrapped] if levels else wrapped
    return wrapped, tree_unflatten(given, spec), own


def reaches_outside(tensors, own):
    """Whether the graph behind `tensors` reaches a leaf that requires grad other than `own`
    (see Note [Transforms on the autograd graph]), by the walk autograd.graph.reached_leaves makes."""
    if not is_grad_enabled():
        return False
    levels = active_levels()
    if levels:
        tensors = [to_full(t, levels) if isinstance(t, Tensor) else t for t in tensors]
    own_ids = {id(t) for t in own}
    tracked = [t for t in tensors if isinstance(t, Tensor) and t._requires_grad]
    return any(id(leaf) not in own_ids for leaf in reached_leaves(tracked))


def release(tree, own):
    """Detach every tensor of `tree` whose graph leads only to the transform's own leaves."""
    leaves, spec = tree_flatten(tree)
    levels = active_levels()
    out = []
    for t in leaves:
        batched = levels and isinstance(t, Tensor) and type(t) is not Tensor
        if batched:
            t = to_full(t, levels)
        if isinstance(t, Tensor) and t._requires_grad and not reaches_outside([t], own):
            t = t.detach()
        out.append(rewrap(t, levels) if batched else t)
    return tree_unflatten(out, spec)


def release_aux(aux, own):
    """release() for has_aux outputs, which torch requires to hold only tensors."""
    for t in tree_flatten(aux)[0]:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
    return release(aux, own)


def autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=True):
    """autograd.grad over the outputs that require grad; zeros where an input is unused (as torch.func)."""
    from .. import ones_like
    levels = active_levels()
    if levels:  # per-sample outputs: each sample's gradient of its own output
        outputs = [to_full(o, levels) for o in outputs]
        grad_outputs = [ones_like(o) for o in outputs] if grad_outputs is None else \
            [to_full(g, levels) if isinstance(g, Tensor) else g for g in grad_outputs]
        grads = _plain_grad(outputs, inputs, grad_outputs, retain_graph, create_graph)
        return tuple(rewrap(g, levels) for g in grads)
    return _plain_grad(outputs, inputs, grad_outputs, retain_graph, create_graph)


def _plain_grad(outputs, inputs, grad_outputs, retain_graph, create_graph):
    from .. import zeros_like
    if grad_outputs is None:
        pairs = [(o, None) for o in outputs if o._requires_grad]
    else:
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o._requires_grad]
    if not pairs:
        return tuple(zeros_like(x) for x in inputs)
    outs = [o for o, _ in pairs]
    gos = None if grad_outputs is None else [g for _, g in pairs]
    grads = _autograd.grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph,
                           allow_unused=True)
    return tuple(zeros_like(x) if g is None else g for g, x in zip(grads, inputs))


def split_aux(output, has_aux, api):
    """(output, aux) from a has_aux function's result, with torch's error for anything else."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def check_tensor_outputs(flat, api):
    """torch's check that a function under vjp/jacrev/jvp returned tensors, at least one."""
    if len(flat) < 1 or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def check_float_outputs(flat):
    """vjp's refusal of integer and bool outputs."""
    for o in flat:
        if not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                               f"with dtype {o.dtype}")


def error_if_complex(func_name, tree, is_input):
    """jacrev and jacfwd take and give real tensors only (torch's check)."""
    for idx, x in enumerate(tree_flatten(tree)[0]):
        if isinstance(x, Tensor) and x.is_complex():
            kind = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{func_name}: Expected all {kind} to be real but received complex tensor at flattened "
                               f"input idx: {idx}")
