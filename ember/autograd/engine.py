"""backward() and grad(): an iterative traversal of the graph by dependency counts.

1. count, for every node reachable from the roots, how many edges point at it (an
   explicit stack, no recursion: a 100,000-op chain is fine);
2. with targets (grad(), backward(inputs=...)) keep only the nodes that lead to one;
3. run a ready stack: a node runs once all its consumers have passed their gradients
   on, and its saved tensors are released right after it ran (unless retain_graph).
Hooks run in torch's order: tensor hooks, retain_grad, node pre-hooks, backward, node hooks;
callbacks queued during the traversal (queue_callback) run after it, in grad mode create_graph.
"""
import threading
import warnings

import numpy as np

from .._backend import owns_memory
from .._layout import strided as _strided
from . import grad_mode
from .graph import AccumulateGrad, FREED_SLOT, gradient_edge

_state = grad_mode._state
_anomaly = grad_mode._anomaly
Tensor = None  # ember.Tensor, bound on first use (the tensor module imports this package)
_warned_create_graph = False
_running = threading.local()  # .callbacks: one list per backward running in this thread (hooks may nest them)


def _bind_tensor():
    global Tensor
    from .._tensor import Tensor as cls
    Tensor = cls


# ---- public API -----------------------------------------------------------------------

def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """torch.autograd.backward: accumulate d(tensors)/d(leaves) into the leaves' .grad."""
    if Tensor is None:
        _bind_tensor()
    if grad_variables is not None:
        warnings.warn("'grad_variables' is deprecated. Use 'grad_tensors' instead.", FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    targets = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        targets = set()
        for t in inputs:
            if t._grad_fn is not None:
                t.retain_grad()  # as torch: a non-leaf input gets its .grad through retain_grad
            elif not t._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            targets.add(gradient_edge(t))
    global _warned_create_graph
    if create_graph and not _warned_create_graph:
        _warned_create_graph = True  # torch warns once per process
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when creating "
                      "the graph to avoid this. If you have to use this function, make sure to reset the .grad fields "
                      "of your parameters to None after use to break the cycle and avoid the leak.", UserWarning,
                      stacklevel=3)
    roots, user_arrays = _root_gradients(tensors, grad_tensors)
    _execute(roots, retain_graph, create_graph, user_arrays, targets=targets)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """torch.autograd.grad: return d(outputs)/d(inputs) without touching any .grad."""
    if Tensor is None:
        _bind_tensor()
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=2)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    captures = {}
    for t in inputs:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
    for o in outputs:
        if not isinstance(o, Tensor):  # torch's Python grad() asserts it
            raise AssertionError("Expected output to be a torch.Tensor")
    for i, t in enumerate(inputs):
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        captures.setdefault(gradient_edge(t), []).append(i)
    roots, user_arrays = _root_gradients(outputs, grad_outputs)
    results = [None] * len(inputs)
    _execute(roots, retain_graph, create_graph, user_arrays, captures=captures, results=results)
    for i, r in enumerate(results):
        if r is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                from .. import zeros_like
                results[i] = zeros_like(inputs[i])
    return tuple(results)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize):
    """is_grads_batched=True: one grad() per slice of the leading dim of grad_outputs, stacked.
    (torch vectorizes with vmap; here it is a loop, same results.)"""
    from .. import stack, zeros_like
    n = grad_outputs[0].shape[0]
    per_input = [[] for _ in inputs]
    for b in range(n):
        go = tuple(g[b] for g in grad_outputs)
        keep = retain_graph or b < n - 1
        gs = grad(outputs, inputs, go, retain_graph=keep, create_graph=create_graph, allow_unused=True)
        for k, g in enumerate(gs):
            per_input[k].append(g)
    results = []
    for k, gs in enumerate(per_input):
        if all(g is None for g in gs):
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            results.append(stack([zeros_like(inputs[k])] * n) if materialize else None)
            continue
        results.append(stack([g if g is not None else zeros_like(inputs[k]) for g in gs]))
    return tuple(results)


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _root_gradients(tensors, grads):
    """[(edge, grad)] for the roots, checking torch's conditions; the ids of arrays the
    caller handed in (they must never be stolen into a .grad)."""
    if grads is not None and len(grads) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
    roots = []
    user_arrays = set()
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        g = grads[i] if grads is not None else None
        if g is None:
            if not t._requires_grad:
                raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._dtype.category != 2:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t._dtype}")
            shape = t._data.shape
            ones = np.array(1, dtype=t._data.dtype) if shape == () else np.ones(shape, dtype=t._data.dtype)
            g = Tensor._make(ones, t._dtype)
        else:
            if not isinstance(g, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                                   f"output[{i}] has a shape of {t.shape}.")
            if (g._dtype.category == 3) != (t._dtype.category == 3):
                raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                                   f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g._dtype} and "
                                   f"output[{i}] has a dtype of {t._dtype}.")
            if not t._requires_grad:
                raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
            if g.layout is _strided:
                user_arrays.add(id(g._data))
            if g._dtype is not t._dtype:
                g = g.to(t._dtype)
        roots.append((gradient_edge(t), g))
    return roots, user_arrays


# ---- the traversal --------------------------------------------------------------------

def _dependencies(roots):
    """For every node reachable from the roots: the number of edges pointing at it."""
    deps = {}
    stack = []
    for (node, _), _ in roots:
        if node not in deps:
            deps[node] = 0
            stack.append(node)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            n = deps.get(nxt)
            if n is None:
                deps[nxt] = 1
                stack.append(nxt)
            else:
                deps[nxt] = n + 1
    return deps


def _prune(deps, wanted):
    """Restrict the graph to what reaches a wanted edge: (needed, live, deps) where the
    needed nodes must run backward, and live ones (needed + targets) receive gradients."""
    counts = dict(deps)
    order = [node for node, n in counts.items() if n == 0]
    i = 0
    while i < len(order):  # Kahn's topological order, consumers first
        for nxt, _ in order[i].next_functions:
            if nxt is not None:
                counts[nxt] -= 1
                if counts[nxt] == 0:
                    order.append(nxt)
        i += 1
    target_nodes = {node for node, _ in wanted}
    needed = set()
    for node in reversed(order):
        for nxt, _ in node.next_functions:
            if nxt in needed or nxt in target_nodes:
                needed.add(node)
                break
    live = needed | target_nodes
    pruned = {}
    for node in needed:
        for nxt, _ in node.next_functions:
            if nxt in live:
                pruned[nxt] = pruned.get(nxt, 0) + 1
    return needed, live, pruned


def _execute(roots, retain_graph, create_graph, user_arrays, captures=None, results=None, targets=None):
    """Run backward from `roots` [((node, nr), grad)]. grad() passes captures
    {edge: [result index]}; backward(inputs=...) passes targets {edge}."""
    deps = _dependencies(roots)
    wanted = captures if captures is not None else targets
    needed = live = None
    if wanted is not None:
        needed, live, deps = _prune(deps, wanted)
    buffers = {}
    for (node, nr), g in roots:
        if live is not None and node not in live:
            continue  # leads to no input: nothing to do (and no hooks to run)
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * len(node._out_meta)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    ready = [node for node in buffers if deps.get(node, 0) == 0]
    leaves = _LeafSink(create_graph, user_arrays, captures, results)
    prev = _state.enabled
    _state.enabled = create_graph
    prev_valid = _checkpoint_valid[0]
    _checkpoint_valid[0] = wanted is None  # see _is_checkpoint_valid
    stack = _callback_stack()
    callbacks = []
    stack.append(callbacks)
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node)
            if type(node) is AccumulateGrad:
                leaves.receive(node, grads[0])
                continue
            if needed is not None and node not in needed:
                # a target from which no other target is reached: its gradient is final
                if node._pre_hooks:
                    grads = _tensor_pre_hooks(node, grads)
                if captures is not None:
                    _capture(node, grads, captures, results)
                elif not retain_graph and node._saved:
                    node._saved = (FREED_SLOT,) * len(node._saved)
                continue
            if captures is not None and node in leaves.capture_nodes:
                _capture(node, grads, captures, results)  # before hooks, as torch does for needed nodes
            if node._pre_hooks:
                leaves.may_steal = False  # a hook may keep a gradient that flows on into a .grad
                grads = _node_pre_hooks(node, _tensor_pre_hooks(node, grads))
            out = _call(node, grads)
            if not node._fresh_grads:
                leaves.may_steal = False
            if not retain_graph and node._saved:
                node._saved = (FREED_SLOT,) * len(node._saved)
            i = -1
            for nxt, nr in node.next_functions:
                i += 1
                if nxt is None or (live is not None and nxt not in live):
                    continue
                g = out[i]
                if g is not None:
                    shape, dtype = nxt._out_meta[nr]  # the input's metadata, as the node it came from holds it
                    if g.__class__ is not Tensor or g._data.shape != shape or g._dtype is not dtype:
                        g = _validate(g, node, i)
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * len(nxt._out_meta)
                    old = buf[nr]
                    buf[nr] = g if old is None else _sum_grads(old, g)
                n = deps[nxt] - 1
                deps[nxt] = n
                if n == 0:
                    if nxt in buffers:
                        ready.append(nxt)
                    else:
                        _no_gradient(nxt, deps, buffers, ready, live)
        i = 0
        while i < len(callbacks):  # a callback may queue another one
            callbacks[i]()
            i += 1
    finally:
        stack.pop()
        _state.enabled = prev
        _checkpoint_valid[0] = prev_valid


_checkpoint_valid = [True]


def _is_checkpoint_valid():
    """torch.autograd._is_checkpoint_valid: False while a backward pass runs for grad() or
    backward(inputs=...), which a reentrant checkpoint cannot serve (its backward accumulates
    into every leaf)."""
    return _checkpoint_valid[0]


def _callback_stack():
    stack = getattr(_running, "callbacks", None)
    if stack is None:
        stack = _running.callbacks = []
    return stack


def queue_callback(callback):
    """Run callback() once the backward now running has finished its traversal (torch's
    Variable._execution_engine.queue_callback; DDP waits for its all-reduces there)."""
    stack = getattr(_running, "callbacks", None)
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[-1].append(callback)


def _no_gradient(node, deps, buffers, ready, live):
    """A node all of whose consumers passed None: it will not run; tell its inputs."""
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


def _capture(node, grads, captures, results):
    for nr, g in enumerate(grads):
        for i in captures.get((node, nr), ()):
            results[i] = g


def _call(node, grads):
    """node.backward on the summed incoming gradients, checked; post hooks; NaN check."""
    if len(grads) > 1 and node.materialize_grads:
        grads = _materialize(node, grads)
    try:
        out = node.backward(*grads)
        if type(out) is not tuple:
            out = (out,)
        n = len(node.next_functions)
        if len(out) != n:
            out = _trim(node, out, n)
        if node._hooks:
            for fn in tuple(node._hooks.values()):
                r = fn(out, tuple(grads))
                if r is not None:
                    out = tuple(r)
        if _anomaly.enabled and _anomaly.check_nan:
            _check_nan(node, out)
    except Exception:
        if node._trace is not None and _anomaly.enabled:
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                          f"{node._trace}", UserWarning, stacklevel=2)
        raise
    return out


def _materialize(node, grads):
    """Zeros for outputs that got no gradient (ctx.set_materialize_grads(True), the default)."""
    if all(g is not None for g in grads):
        return grads
    from .._ops.creation import _zeros
    filled = []
    for g, (shape, dtype) in zip(grads, node._out_meta):
        filled.append(g if g is not None or dtype is None else _zeros(shape, dtype))
    return filled


def _trim(node, out, n):
    if len(out) > n and all(g is None for g in out[n:]):
        return out[:n]
    raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients (expected {n}, "
                       f"got {len(out)})")


def _check_nan(node, out):
    for i, g in enumerate(out):
        if g is not None and g._dtype.category >= 2 and np.isnan(g._data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _validate(g, node, i):
    """A formula's gradient for input i: undo broadcasting, cast to the input's dtype,
    or raise torch's 'invalid gradient' error."""
    if not isinstance(g, Tensor):
        raise TypeError(f"function {node.name()} returned a gradient different than None at position {i + 1}, "
                        f"but the corresponding forward input was not a Variable")
    shape, dtype = node._input_meta[i]
    if g.layout is not _strided:  # a sparse gradient (Note [Sparse gradients]) passes as it is, its size checked
        if tuple(g.shape) != tuple(shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                               f"{list(g.shape)} but expected shape compatible with {list(shape)}")
        return g
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


# ---- hooks ------------------------------------------------------------------------------

def _tensor_pre_hooks(node, grads):
    """Hooks registered with Tensor.register_hook on the node's outputs, then retain_grad."""
    hooks = tuple(node._pre_hooks.values())
    grads = list(grads)
    for kind, nr, fn in hooks:
        if kind == "tensor" and grads[nr] is not None:
            grads[nr] = _run_tensor_hook(fn, grads[nr])
    for kind, nr, fn in hooks:
        if kind == "retain" and grads[nr] is not None:
            fn(grads[nr])
    return grads


def _node_pre_hooks(node, grads):
    """Hooks registered with Node.register_prehook: fn(grad_outputs) -> new grad_outputs or None."""
    for kind, _, fn in tuple(node._pre_hooks.values()):
        if kind == "node":
            r = fn(tuple(grads))
            if r is not None:
                grads = list(r)
    return grads


def _run_tensor_hook(fn, g):
    r = fn(g)
    if r is None:
        return g
    if not isinstance(r, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
    name = getattr(fn, "__name__", type(fn).__name__)
    if r._data.shape != g._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if r._dtype is not g._dtype:
        from .graph import _type_name
        raise RuntimeError(f"hook '{name}' has changed the type of value (was torch.{_type_name(g)} got "
                           f"torch.{_type_name(r)})")
    return r


class _LeafSink:
    """What happens at AccumulateGrad nodes: leaf hooks, then capture (grad()) or
    accumulation into .grad (backward())."""
    __slots__ = ("create_graph", "user_arrays", "captures", "results", "capture_nodes", "may_steal")

    def __init__(self, create_graph, user_arrays, captures, results):
        self.create_graph = create_graph
        self.user_arrays = user_arrays
        self.captures = captures
        self.results = results
        self.capture_nodes = None if captures is None else {node for node, _ in captures}
        self.may_steal = True

    def receive(self, node, g):
        t = node.variable
        if t._hooks:
            self.may_steal = False  # a hook may keep the tensor it was given
            for fn in tuple(t._hooks.values()):
                g = _run_tensor_hook(fn, g)
        if self.captures is not None:
            for i in self.captures.get((node, 0), ()):
                self.results[i] = g
            return
        if node._pre_hooks:
            g = _node_pre_hooks(node, [g])[0]
        self.accumulate(t, g)
        post = t.__dict__.get("_post_acc_hooks") if t.__dict__ else None
        if post:
            for hook in tuple(post.values()):
                hook(t)
        if node._hooks:
            for fn in tuple(node._hooks.values()):
                fn((), (g,))

    def accumulate(self, t, g):
        """t.grad += g the way torch's AccumulateGrad does: steal g's buffer when nobody
        else can see it, add in place when grad mode is off, else build a new tensor."""
        old = t._grad
        if g.layout is not _strided or (old is not None and old.layout is not _strided):
            t._grad = g if old is None else _sum_grads(old, g)  # Note [Sparse gradients]
            return
        if old is None:
            if self.create_graph:
                t._grad = _copy_with_history(g)
                return
            arr = g._data
            if not self._stealable(arr):
                arr = np.array(arr, order="C", copy=True)
            self.user_arrays.add(id(arr))  # never steal the same buffer twice
            t._grad = Tensor._make(arr, g._dtype)
        elif self.create_graph:
            t._grad = old + g
        else:
            try:
                np.add(old._data, g._data, out=old._data, casting="unsafe")
            except ValueError:  # a read-only or broadcast .grad set by the user
                t._grad = Tensor._make(old._data + g._data, old._dtype)
                return
            old._version_counter.value += 1

    def _stealable(self, arr):
        return (self.may_steal and id(arr) not in self.user_arrays and owns_memory(arr)
                and arr.flags.c_contiguous and arr.flags.writeable)


# Note [Sparse gradients]: embedding(sparse=True) returns a sparse COO gradient for the table, and the
# CSR ops (Note [Sparse CSR storage]) sparse CSR ones. They pass through the engine unchanged (their
# size checked), sum with other gradients as torch's do (sparse + sparse stays sparse, a dense term makes
# the sum dense) and land in .grad as they are; the optimizers that take sparse gradients (SGD,
# SparseAdam) read them there.

def _sum_grads(a, b):
    """a + b for two gradients of one tensor, either possibly sparse (dense + sparse is dense)."""
    if a.layout is not _strided and b.layout is _strided:
        return b + a
    return a + b


def _copy_with_history(g):
    """torch clones the first gradient under create_graph (grad_fn CopyBackwards)."""
    c = g.clone()
    if c._grad_fn is not None:
        c._grad_fn._name = "torch::autograd::CopyBackwards"
    return c


# ---- calling a node directly ------------------------------------------------------------
# Note [Calling a node]: torch's grad_fn objects are callable: node(*grads), one gradient per differentiable
# output of the forward (float or complex; an integer output such as max's indices takes none), runs the node's
# formula once and returns the gradients of its inputs: the tensor itself when the forward had one input, else
# a tuple with None where an input needed no gradient. No hook runs, the node's saved values are not freed and
# grad mode applies as for any op (the result has history if the saved tensors do). All-None gradients give
# None back without running the formula; a missing one among others is zeros. Unlike torch, whose formulas meet
# a wrong-sized gradient however they may (an error, or a broadcast), a gradient must broadcast to its output's
# shape and is expanded to it (copied), else a RuntimeError names both shapes. An AccumulateGrad node adds its one
# gradient into the leaf's .grad (a copy, never the caller's tensor) and returns (); a custom Function's node is
# not callable (torch's TypeError).

def call_node(node, grads):
    """node(*grads): the node's formula on grads given for its differentiable outputs (Note [Calling a node])."""
    if Tensor is None:
        _bind_tensor()
    meta = node._out_meta
    slots = [i for i, (_, dtype) in enumerate(meta) if dtype is not None and dtype.category >= 2]
    if len(grads) != len(slots):
        raise TypeError(f"expected {len(slots)} arguments, got {len(grads)} instead")
    full = [None] * len(meta)
    for k, (i, g) in enumerate(zip(slots, grads)):
        if g is None:
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"argument {k} is not a Variable")
        full[i] = _expand_grad(node, i, g)
    edges = node.next_functions
    if all(g is None for g in full):
        out = (None,) * len(edges)
    else:
        out = node.backward(*(_materialize(node, full) if node.materialize_grads else full))
        if type(out) is not tuple:
            out = (out,)
        if len(out) != len(edges):
            out = _trim(node, out, len(edges))
        out = tuple(None if fn is None else g for (fn, _), g in zip(edges, out))
    return out[0] if len(out) == 1 else out


def _expand_grad(node, i, g):
    """g expanded to output i's shape, or torch's size-mismatch RuntimeError."""
    shape = tuple(node._out_meta[i][0])
    if tuple(g.shape) == shape:
        return g
    if not _expandable(tuple(g.shape), shape):
        raise RuntimeError(f"Function {node.name()} got a gradient of shape {list(g.shape)} for its output {i}, "
                           f"which has shape {list(shape)}")
    return g.expand(shape).contiguous()  # a fresh array: a formula never meets a broadcast view


def call_accumulate_grad(node, grads):
    """AccumulateGrad(g): g added into the leaf's .grad (Note [Calling a node])."""
    if Tensor is None:
        _bind_tensor()
    if len(grads) != 1:
        raise TypeError(f"expected 1 arguments, got {len(grads)} instead")
    g = grads[0]
    if g is not None:
        if not isinstance(g, Tensor):
            raise TypeError("argument 0 is not a Variable")
        sink = _LeafSink(_state.enabled and g._requires_grad, set(), None, None)
        sink.may_steal = False
        sink.accumulate(node.variable, _expand_grad(node, 0, g))
    return ()
