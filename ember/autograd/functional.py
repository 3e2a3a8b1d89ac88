"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp on top of grad().

Everything is reverse mode; jvp uses the double-vjp trick (the vjp is linear in its
vector u, so differentiating it with respect to u gives J v). `vectorize=True` is
accepted and computed by the same loop (ember has no vmap): the results are equal.
See https://pytorch.org/docs/stable/autograd.html#functional-higher-level-api
"""
from . import grad_mode
from .engine import grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


def _as_tuple(x, arg_name, fn_name):
    """(tuple of tensors, whether x was a tuple) with torch's type error."""
    Tensor = _tensor_cls()
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                                f"the value at index {i} has type {type(t)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the given {arg_name} has type {type(t)}.")
    return tuple(items), is_tuple


def _prepare(inputs, create_graph, need_graph):
    """Fresh leaves (or, under create_graph, graph-connected aliases) to differentiate by."""
    res = []
    for t in inputs:
        if create_graph and t._requires_grad:
            res.append(t.view_as(t))
        else:
            res.append(t.detach().requires_grad_(need_graph))
    return tuple(res)


def _finish(items, create_graph):
    """Results keep their history only under create_graph."""
    if isinstance(items, tuple):
        return tuple(_finish(t, create_graph) for t in items)
    if items is None or create_graph:
        return items
    return items.detach()


def _fill(grads, like, strict, create_graph, what):
    """None gradients become zeros (strict=True raises instead, as torch)."""
    from .. import zeros_like
    res = []
    for i, (g, x) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                                   f"not allowed in strict mode{what}.")
            g = zeros_like(x)
        res.append(g)
    return tuple(res)


def _check_v(v, outputs, fn_name, arg="v", allow_none=True):
    if v is None:
        if len(outputs) != 1 or outputs[0]._data.size != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        from .. import ones_like
        return (ones_like(outputs[0]),)
    vs, _ = _as_tuple(v, arg, fn_name)
    if len(vs) != len(outputs):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(outputs)} but got {len(vs)}.")
    for i, (a, b) in enumerate(zip(vs, outputs)):
        if a._data.shape != b._data.shape:
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {b.shape} but got {a.shape}.")
    return vs


def _call(func, inputs, fn_name):
    out = func(*inputs)
    outputs, is_tuple = _as_tuple(out, "outputs of the user-provided function", fn_name)
    return outputs, is_tuple


def _unpack(items, is_tuple):
    return items if is_tuple else items[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    with grad_mode.enable_grad():
        xs, in_tuple = _as_tuple(inputs, "inputs", "vjp")
        xs = _prepare(xs, create_graph, True)
        outputs, out_tuple = _call(func, xs, "vjp")
        vs = _check_v(v, outputs, "vjp")
        diff = [(o, g) for o, g in zip(outputs, vs) if o._requires_grad]
        grads = (None,) * len(xs)
        if diff:
            grads = _grad([o for o, _ in diff], xs, [g for _, g in diff], create_graph=create_graph,
                          allow_unused=True, retain_graph=True)
        grads = _fill(grads, xs, strict, create_graph, "")
    return _finish(_unpack(outputs, out_tuple), create_graph), _finish(_unpack(grads, in_tuple), create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by differentiating the vjp with respect to its vector."""
    from .. import zeros_like
    with grad_mode.enable_grad():
        xs, in_tuple = _as_tuple(inputs, "inputs", "jvp")
        xs = _prepare(xs, create_graph, True)
        if v is None:
            if len(xs) != 1 or xs[0]._data.size != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element.")
            from .. import ones_like
            vs = (ones_like(xs[0]),)
        else:
            vs, _ = _as_tuple(v, "v", "jvp")
        outputs, out_tuple = _call(func, xs, "jvp")
        us = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
        diff = [(o, u) for o, u in zip(outputs, us) if o._requires_grad]
        results = [None] * len(outputs)
        if diff:
            gs = _grad([o for o, _ in diff], xs, [u for _, u in diff], create_graph=True, allow_unused=True)
            pairs = [(g, w) for g, w in zip(gs, vs) if g is not None]
            if pairs:
                jv = _grad([g for g, _ in pairs], [u for _, u in diff], [w for _, w in pairs],
                           create_graph=create_graph, allow_unused=True)
                for (o, _), r in zip(diff, jv):
                    results[next(i for i, p in enumerate(outputs) if p is o)] = r
        results = _fill(results, outputs, strict, create_graph, "")
    return _finish(_unpack(outputs, out_tuple), create_graph), _finish(_unpack(results, out_tuple), create_graph)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """d func(inputs) / d inputs: for output i and input j a tensor of shape out_i.shape + in_j.shape."""
    from .. import stack, zeros, zeros_like
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                         'prefer to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` only works when "
                                  "`vectorize=True`.")
    with grad_mode.enable_grad():
        xs, in_tuple = _as_tuple(inputs, "inputs", "jacobian")
        xs = _prepare(xs, create_graph, True)
        outputs, out_tuple = _call(func, xs, "jacobian")
        table = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in xs]
            flat = out.reshape(-1)
            for e in range(flat._data.size):
                gs = (None,) * len(xs)
                if out._requires_grad:
                    gs = _grad((flat[e],), xs, retain_graph=True, create_graph=create_graph, allow_unused=True)
                for j, (g, x) in enumerate(zip(gs, xs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{j}. This is not allowed in strict mode.")
                        g = zeros_like(x)
                    rows[j].append(g)
            per_input = []
            for j, x in enumerate(xs):
                if rows[j]:
                    jac = stack(rows[j]).reshape(tuple(out.shape) + tuple(x.shape))
                else:
                    jac = zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype)
                per_input.append(_finish(jac, create_graph))
            table.append(_unpack(tuple(per_input), in_tuple))
    return _unpack(tuple(table), out_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Jacobian of the gradient of a scalar function."""
    xs, in_tuple = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*args):
        out = func(*args)
        outputs, _ = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if len(outputs) != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if outputs[0]._data.size != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return jacobian(lambda *a: func(*a).reshape(()), args if in_tuple else args[0], create_graph=True,
                        strict=strict)

    return jacobian(gradient, xs if in_tuple else xs[0], create_graph=create_graph, strict=strict,
                    vectorize=vectorize, strategy=outer_jacobian_strategy)


def _scalar_output(func, xs, fn_name):
    outputs, _ = _call(func, xs, fn_name)
    if len(outputs) != 1 or outputs[0]._data.size != 1:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor with a single element")
    return outputs[0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function."""
    with grad_mode.enable_grad():
        xs, in_tuple = _as_tuple(inputs, "inputs", "vhp")
        xs = _prepare(xs, create_graph, True)
        out = _scalar_output(func, xs, "vhp")
        vs = _input_vectors(v, xs, "vhp")
        jac = _grad((out,), xs, create_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(jac, vs) if g is not None and g._requires_grad]
        res = (None,) * len(xs)
        if pairs:
            res = _grad([g for g, _ in pairs], xs, [w for _, w in pairs], create_graph=create_graph,
                        allow_unused=True)
        res = _fill(res, xs, strict, create_graph, "")
    return _finish(out, create_graph), _finish(_unpack(res, in_tuple), create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function, by the double-backward trick."""
    from .. import zeros_like
    with grad_mode.enable_grad():
        xs, in_tuple = _as_tuple(inputs, "inputs", "hvp")
        xs = _prepare(xs, create_graph, True)
        out = _scalar_output(func, xs, "hvp")
        vs = _input_vectors(v, xs, "hvp")
        jac = _grad((out,), xs, create_graph=True, allow_unused=True)
        jac = _fill(jac, xs, strict, True, "")
        us = tuple(zeros_like(x).requires_grad_(True) for x in xs)
        diff = [(g, u) for g, u in zip(jac, us) if g._requires_grad]
        res = (None,) * len(xs)
        if diff:
            back = _grad([g for g, _ in diff], xs, [u for _, u in diff], create_graph=True, allow_unused=True)
            pairs = [(b, w) for b, w in zip(back, vs) if b is not None]
            if pairs:
                hv = _grad([b for b, _ in pairs], [u for _, u in diff], [w for _, w in pairs],
                           create_graph=create_graph, allow_unused=True)
                res = list(res)
                k = 0
                for j, g in enumerate(jac):
                    if g._requires_grad:
                        res[j] = hv[k]
                        k += 1
        res = _fill(res, xs, strict, create_graph, "")
    return _finish(out, create_graph), _finish(_unpack(res, in_tuple), create_graph)


def _input_vectors(v, xs, fn_name):
    if v is None:
        if len(xs) != 1 or xs[0]._data.size != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                               "Tensor with a single element.")
        from .. import ones_like
        return (ones_like(xs[0]),)
    vs, _ = _as_tuple(v, "v", fn_name)
    if len(vs) != len(xs):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(xs)} but got {len(vs)}.")
    return vs
