"""torch.utils.checkpoint: activation checkpointing (recompute the forward in backward).

See https://pytorch.org/docs/stable/checkpoint.html. Both of torch's flavours:

- reentrant (use_reentrant=True, torch 2.13's default with a warning): an autograd.Function
  whose forward runs under no_grad and whose backward reruns the function with grad and calls
  backward on it. It needs an input that requires grad, and refuses grad()/backward(inputs=).
- non-reentrant (use_reentrant=False): Note [Checkpoint without reentrancy].

Both replay the forward's RNG state (preserve_rng_state) and autocast state, and leave the
RNG stream outside as it was.
"""
import contextlib
import warnings

import numpy as np

from .._tensor import Tensor
from ..amp import autocast
from ..amp.autocast_mode import get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled
from ..autograd import graph as _graph
from ..autograd.engine import _is_checkpoint_valid
from ..autograd.function import Function
from ..autograd.grad_mode import _state as _grad_state, enable_grad, no_grad
from ..random import fork_rng, get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "detach_variable",
           "check_backward_validity", "noop_context_fn", "set_checkpoint_debug_enabled"]


class CheckpointError(RuntimeError):
    """Raised when the recomputed forward differs from the original one."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Tensors in the tuple detached, keeping requires_grad; other values as they are."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3)


_debug = [None]


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Accepted for torch's API; ember's checkpoint errors carry no extra debug trace."""
    prev = _debug[0]
    _debug[0] = enabled
    try:
        yield
    finally:
        _debug[0] = prev


def _autocast_kwargs():
    return {"enabled": is_autocast_enabled("cpu"), "dtype": get_autocast_dtype("cpu"),
            "cache_enabled": is_autocast_cache_enabled()}


# ---- reentrant ---------------------------------------------------------------------------------

class CheckpointFunction(Function):
    """The reentrant checkpoint: forward without a graph, backward recomputes and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.cpu_autocast_kwargs = _autocast_kwargs()
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad(), autocast("cpu", **ctx.cpu_autocast_kwargs):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        from ..autograd import backward
        backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


# ---- non-reentrant -----------------------------------------------------------------------------

# Note [Checkpoint without reentrancy]: the function runs with grad recording as usual, so its
# outputs have their ordinary grad_fns and grad(), backward(inputs=...), keyword arguments and
# inputs that need no grad all work. Then every graph node the call created (sequence numbers
# between two marks) is stripped of what it holds for backward: its saved tensors become
# placeholders, and arrays kept as ctx attributes are dropped. That is where activations live,
# so they are freed now (torch does this with saved-tensor hooks). A pre-hook on each stripped
# node (and any placeholder unpacked) triggers one recomputation of the whole call, with the
# forward's RNG and autocast state, and the values the new nodes saved are moved into the old
# nodes, matched in creation order. Nested checkpoints: a node made inside an inner call is stripped by
# the inner frame and then again by the outer one (which records placeholders); when the outer call is
# recomputed, its inner call strips the new nodes again, so the inner placeholders found there are
# recomputed before their values are moved into the old nodes (else the old nodes would get placeholders
# of a frame that fills only the new nodes), and every array attribute the new node holds moves too.

class _Frame:
    """One non-reentrant checkpointed call: what recomputing it needs, and the stripped nodes."""

    def __init__(self, function, args, kwargs, preserve_rng_state, recompute_context, determinism_check):
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.preserve = preserve_rng_state
        self.rng_state = get_rng_state() if preserve_rng_state else None
        self.autocast_kwargs = _autocast_kwargs()
        self.recompute_context = recompute_context
        self.check = determinism_check == "default"
        self.nodes = []         # stripped nodes, in creation order
        self.meta = []          # per node: metadata of its saved values (the determinism check)
        self.dropped = []       # per node: names of the ctx attributes removed
        self.handles = []
        self.done = False

    def strip(self, outputs, lo, hi):
        self.nodes = _region_nodes(outputs, lo, hi)
        for node in self.nodes:
            saved = node._saved
            self.meta.append(_saved_meta(saved))
            if saved:
                node._saved = tuple(_Placeholder(self, j) for j in range(len(saved)))
            names = _array_attrs(node)
            for k in names:
                del node.__dict__[k]
            self.dropped.append(names)
            self.handles.append(node.register_prehook(self._prehook))

    def _prehook(self, grad_outputs):
        self.recompute()

    def recompute(self):
        if self.done:
            return
        fork = fork_rng(enabled=self.preserve)
        with fork, enable_grad(), autocast("cpu", **self.autocast_kwargs), self.recompute_context:
            if self.preserve:
                set_rng_state(self.rng_state)
            lo = _graph._next_seq()
            outputs = self.function(*self.args, **self.kwargs)
            hi = _graph._next_seq()
        new = _region_nodes(outputs, lo, hi)
        if len(new) != len(self.nodes):
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the "
                                  "original forward and recomputation.\n"
                                  f"Number of tensors saved during forward: {len(self.nodes)}\n"
                                  f"Number of tensors saved during recomputation: {len(new)}")
        for i, (old, fresh) in enumerate(zip(self.nodes, new)):
            if self.check and (type(old) is not type(fresh) or _saved_meta(fresh._saved) != self.meta[i]):
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      "different metadata than during the forward pass.\n"
                                      f"node {i} ({old.name()}):\nsaved metadata: {self.meta[i]}\n"
                                      f"recomputed metadata: {_saved_meta(fresh._saved)}\n")
        for i, (old, fresh) in enumerate(zip(self.nodes, new)):  # checked first: this fills nested frames' nodes
            for s in fresh._saved or ():  # a nested checkpoint's placeholders: recompute it now (Note above)
                if isinstance(s, _Placeholder):
                    s.frame.recompute()
            old._saved = fresh._saved
            for k in set(self.dropped[i]).union(_array_attrs(fresh)):
                old.__dict__[k] = fresh.__dict__[k]
        for h in self.handles:
            h.remove()
        self.done = True
        self.function = self.args = self.kwargs = self.nodes = self.handles = None  # keep nothing alive


class _Placeholder(_graph.SavedTensor):
    """A saved value that a checkpoint freed: unpacking it recomputes the checkpointed call."""
    __slots__ = ("frame", "slot")

    def __init__(self, frame, slot):
        super().__init__("checkpointed", None)
        self.frame = frame
        self.slot = slot

    def unpack(self, node):
        self.frame.recompute()
        return node._saved[self.slot].unpack(node)


def _holds_arrays(v):
    if isinstance(v, (np.ndarray, Tensor)):
        return True
    return type(v) in (tuple, list) and any(isinstance(x, (np.ndarray, Tensor)) for x in v)


def _array_attrs(node):
    """Names of the ctx attributes holding arrays or tensors (kept for backward, like saved tensors)."""
    return [k for k, v in node.__dict__.items() if _holds_arrays(v)]


def _saved_meta(saved):
    meta = []
    for s in saved or ():
        obj = s.obj
        if isinstance(obj, Tensor):
            meta.append((tuple(obj._data.shape), obj._dtype))
        elif isinstance(obj, np.ndarray):
            meta.append((obj.shape, obj.dtype))
        else:
            meta.append(s.kind)
    return tuple(meta)


def _region_nodes(outputs, lo, hi):
    """The graph nodes created between sequence marks lo and hi that the outputs reach and that
    hold something for backward, in creation order (explicit stack: no recursion). Nodes holding
    nothing are left out: the recomputation may create more of them (a weight's autocast cast
    cached before the call is cast again), as torch matches saved tensors, not nodes."""
    stack = [t._grad_fn for t in _tensors_in(outputs) if t._grad_fn is not None]
    seen = set()
    found = []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        seq = getattr(node, "_seq", None)
        if seq is None or not (lo < seq < hi) or type(node) is _graph.AccumulateGrad:
            continue
        if node._saved or _array_attrs(node):
            found.append(node)
        for nxt, _ in node.next_functions:
            stack.append(nxt)
    found.sort(key=lambda n: n._seq)
    return found


def _tensors_in(value):
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    return []


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs):
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    if not _grad_state.enabled:
        with forward_context:
            return function(*args, **kwargs)
    frame = _Frame(function, args, kwargs, preserve, recompute_context, determinism_check)
    with forward_context:
        lo = _graph._next_seq()
        outputs = function(*args, **kwargs)
        hi = _graph._next_seq()
    frame.strip(outputs, lo, hi)
    return outputs


# ---- public API ------------------------------------------------------------------------------

_REENTRANT_WARNING = ("the use_reentrant parameter should be passed explicitly. {} use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences between the two "
                      "variants.")


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """function(*args, **kwargs) without keeping its activations; backward recomputes them.
    See https://pytorch.org/docs/stable/checkpoint.html#torch.utils.checkpoint.checkpoint
    (debug and early_stop are accepted; recomputation always runs the whole call)."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: " + _REENTRANT_WARNING.format(
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception."),
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a sequence of modules/functions in `segments` chunks, checkpointing all but the last.
    See https://pytorch.org/docs/stable/checkpoint.html#torch.utils.checkpoint.checkpoint_sequential"""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: " + _REENTRANT_WARNING.format(
            "In version 2.9 we will raise an exception if use_reentrant is not passed."), stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
