"""backward() and grad(): an iterative traversal of the graph by dependency counts.

1. discover the nodes reachable from the roots with an explicit stack and count each
   node's consumers; 2. run a ready stack: a node runs once all its consumers have
   passed it their gradients; 3. release saved tensors as each node finishes (unless
   retain_graph). No recursion, so a 100,000-op chain is fine.
"""
import warnings

import numpy as np

from . import grad_mode
from .graph import AccumulateGrad, gradient_edge

_state = grad_mode._state


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


def _make_root_grads(tensors, grads, name):
    Tensor = _tensor_cls()
    roots = []
    user_arrays = set()
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: expected Tensor as element {i} of tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        g = grads[i] if grads is not None else None
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._dtype.category < 2:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs but got "
                                   f"{t._dtype}")
            g = Tensor._make(np.ones(t._data.shape, dtype=t._data.dtype))
        else:
            if not isinstance(g, Tensor):
                raise TypeError(f"{name}: expected Tensor or None for gradient {i}, got {type(g).__name__}")
            if g._data.shape != t._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} and "
                                   f"output[{i}] has a shape of {tuple(t.shape)}.")
            if g._dtype.category != t._dtype.category:
                raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have "
                                   f"the same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                                   f"{g._dtype} and output[{i}] has a dtype of {t._dtype}.")
            user_arrays.add(id(g._data))
        roots.append((gradient_edge(t), g))
    return roots, user_arrays


def _as_tuple(x):
    if x is None:
        return None
    Tensor = _tensor_cls()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate d(tensors)/d(leaves) into the leaves' .grad."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables)
    if grad_tensors is not None and len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} tensors and {len(tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    targets = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        targets = {}
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            node, nr = gradient_edge(t)
            targets[(node, nr)] = t
    roots, user_arrays = _make_root_grads(tensors, grad_tensors, "backward")
    _run(roots, retain_graph, create_graph, user_arrays, accumulate_into=targets)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return d(outputs)/d(inputs) without touching any .grad."""
    Tensor = _tensor_cls()
    single = isinstance(inputs, Tensor)
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if grad_outputs is not None and len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one gradient per output; got {len(grad_outputs)} gradients for "
                           f"{len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    capture = {}
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): expected Tensor as element {i} of inputs, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.setdefault(gradient_edge(t), []).append(i)
    roots, user_arrays = _make_root_grads(outputs, grad_outputs, "grad")
    results = [None] * len(inputs)
    _run(roots, retain_graph, create_graph, user_arrays, capture=capture, results=results)
    for i, r in enumerate(results):
        if r is None:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                from .._ops.creation import zeros_like
                results[i] = zeros_like(inputs[i])
    return tuple(results)


def _discover(roots):
    """Count, for every reachable node, how many edges point at it."""
    deps = {}
    stack = []
    seen = set()
    for (node, _), _ in roots:
        if node is not None and node not in seen:
            seen.add(node)
            stack.append(node)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, seen


def _needed(roots, deps, nodes, targets):
    """Nodes from which some target edge is reachable (only those must run)."""
    counts = dict(deps)
    order = [n for n in nodes if counts.get(n, 0) == 0]
    i = 0
    while i < len(order):
        for nxt, _ in order[i].next_functions:
            if nxt is not None:
                counts[nxt] -= 1
                if counts[nxt] == 0:
                    order.append(nxt)
        i += 1
    target_nodes = {node for node, _ in targets}
    needed = set()
    for node in reversed(order):
        if any(n in needed or n in target_nodes for n, _ in node.next_functions if n is not None):
            needed.add(node)
    return needed, needed | target_nodes


def _run(roots, retain_graph, create_graph, user_arrays, capture=None, results=None, accumulate_into=None):
    deps, nodes = _discover(roots)
    targets = capture if capture is not None else accumulate_into
    needed = live = None
    if targets is not None:
        needed, live = _needed(roots, deps, nodes, targets)
        deps = {}
        for node in needed:
            for nxt, _ in node.next_functions:
                if nxt in live:
                    deps[nxt] = deps.get(nxt, 0) + 1
    buffers = {}
    for (node, nr), g in roots:
        if node is None:
            continue
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * len(node._out_meta)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    ready = [node for node in buffers if deps.get(node, 0) == 0]
    stolen = set()
    prev = _state.enabled
    _state.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node)
            if node._pre_hooks:
                grads = _run_pre_hooks(node, grads)
            if capture is not None:
                for nr, g in enumerate(grads):
                    for i in capture.get((node, nr), ()):
                        results[i] = g
            if type(node) is AccumulateGrad:
                if capture is None and (accumulate_into is None or (node, 0) in accumulate_into):
                    if grads[0] is not None:
                        _accumulate(node.variable, grads[0], create_graph, user_arrays, stolen)
                continue
            if needed is not None and node not in needed:
                continue
            out = _call_backward(node, grads)
            if not retain_graph:
                node._release()
            for i, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None or (live is not None and nxt not in live):
                    continue
                g = out[i]
                if g is not None:
                    g = _validate(g, node, i)
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * len(nxt._out_meta)
                    buf[nr] = g if buf[nr] is None else buf[nr] + g
                n = deps[nxt] - 1
                deps[nxt] = n
                if n == 0:
                    if nxt in buffers:
                        ready.append(nxt)
                    else:
                        _skip(nxt, deps, buffers, ready, live)
    finally:
        _state.enabled = prev


def _skip(node, deps, buffers, ready, live):
    """A node that received no gradient at all: pass the news on (iteratively)."""
    stack = [node]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None or (live is not None and nxt not in live):
                continue
            n = deps[nxt] - 1
            deps[nxt] = n
            if n == 0:
                if nxt in buffers:
                    ready.append(nxt)
                else:
                    stack.append(nxt)


def _run_pre_hooks(node, grads):
    grads = list(grads)
    for hook in list(node._pre_hooks.values()):
        if hook[0] == "tensor":
            _, nr, fn = hook
            if grads[nr] is None:
                continue
            if isinstance(fn, tuple):  # retain_grad runs after the other tensor hooks
                continue
            r = fn(grads[nr])
            if r is not None:
                grads[nr] = r
        else:
            r = hook[1](tuple(grads))
            if r is not None:
                grads = list(r)
    for hook in list(node._pre_hooks.values()):
        if hook[0] == "tensor" and isinstance(hook[2], tuple) and grads[hook[1]] is not None:
            hook[2][1](grads[hook[1]])
    return grads


def _call_backward(node, grads):
    if all(g is None for g in grads):
        return (None,) * len(node.next_functions)
    if node.materialize_grads and any(g is None for g in grads):
        from .._ops.creation import _zeros
        grads = [g if g is not None else _zeros(shape, dtype) for g, (shape, dtype) in zip(grads, node._out_meta)]
    try:
        out = node.backward(*grads)
    except Exception as e:
        if node._trace is not None:
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                          f"{node._trace}", RuntimeWarning)
        raise
    if not isinstance(out, tuple):
        out = (out,)
    n = len(node.next_functions)
    if len(out) != n:
        if len(out) > n and all(g is None for g in out[n:]):
            out = out[:n]
        else:
            raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(out)})")
    if node._hooks:
        for fn in list(node._hooks.values()):
            r = fn(out, tuple(grads))
            if r is not None:
                out = tuple(r)
    if _state.anomaly or node._trace is not None:
        _check_nan(node, out)
    return out


def _check_nan(node, out):
    if not grad_mode._state.anomaly_check_nan:
        return
    for i, g in enumerate(out):
        if g is not None and g._dtype.category >= 2 and np.isnan(g._data).any():
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node._trace is not None:
                msg += "\nTraceback of forward call that caused the error:\n" + node._trace
            raise RuntimeError(msg)


def _validate(g, node, i):
    """Check a formula's gradient against the input it belongs to: undo broadcasting,
    cast to the input's dtype, or raise torch's 'invalid gradient' error."""
    Tensor = _tensor_cls()
    if not isinstance(g, Tensor):
        raise TypeError(f"function {node.name()} returned a gradient different than None at position "
                        f"{i + 1}, but the corresponding forward input was not a Variable")
    meta = node._input_meta[i]
    if meta is None:
        return g
    shape, dtype = meta
    if g._data.shape != shape:
        if not _expandable(shape, g._data.shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                               f"{list(g._data.shape)} but expected shape compatible with {list(shape)}")
        from .._ops.reduction import sum_to_size
        g = sum_to_size(g, shape)
    if g._dtype is not dtype:
        if g._dtype.category == 3 and dtype.category != 3:
            g = g.real
        g = g.to(dtype)
    return g


def _expandable(shape, to):
    if len(shape) > len(to):
        return False
    for a, b in zip(reversed(shape), reversed(to)):
        if a != b and a != 1:
            return False
    return True


def _accumulate(t, g, create_graph, user_arrays, stolen):
    """AccumulateGrad: run the leaf's hooks, then add g into t.grad."""
    if t._hooks:
        for hook in list(t._hooks.values()):
            r = hook(g)
            if r is not None:
                g = r
    Tensor = _tensor_cls()
    if t._grad is None:
        if create_graph:
            t._grad = g
        else:
            arr = g._data
            if (arr.flags.owndata and arr.flags.c_contiguous and arr.flags.writeable
                    and id(arr) not in user_arrays and id(arr) not in stolen):
                stolen.add(id(arr))
            else:
                arr = np.ascontiguousarray(arr).copy() if arr.flags.c_contiguous else np.ascontiguousarray(arr)
            t._grad = Tensor._make(arr, g._dtype)
    elif create_graph or t._grad._requires_grad or g._requires_grad:
        t._grad = t._grad + g
    else:
        np.add(t._grad._data, g._data, out=t._grad._data, casting="unsafe")
    post = t.__dict__.get("_post_acc_hooks") if t.__dict__ else None
    if post:
        for hook in list(post.values()):
            hook(t)
