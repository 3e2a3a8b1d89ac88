"""torch.distributed.autograd: backward through a graph that RPC calls spread over several workers.

Note [Distributed autograd]: inside `with context() as cid:`, a tensor that requires grad and travels in
an RPC (an argument, a result, a to_here() value) is recorded by its sender as send `i` of the context,
and the receiver gets it as the output of a RecvBackward node, whose backward sends the gradient back
(rpc_sync) to the sender, which runs backward from send `i` with it. backward(cid, roots) starts this on
the calling worker; each pass computes the gradients of the leaves it reaches with autograd.grad and
adds them to the context's table (get_gradients), not to .grad; gradients arriving in several passes add
up, as backward is linear. The graphs are kept (retain_graph) until the context ends, when the workers
it reached forget it. The RPC that carries a tensor names the context, and the callee runs the function
inside it, so nested calls and the reply record their tensors too.
"""
import itertools
import threading

from ... import autograd as _autograd
from ...autograd.function import Function
from ...autograd.graph import reached_leaves

__all__ = ["backward", "context", "get_gradients"]

_local = threading.local()
_contexts = {}  # context id -> _Context, on every worker it reached
_lock = threading.Lock()
_ids = itertools.count()


class _Context:
    __slots__ = ("id", "sends", "grads", "internal", "known", "lock", "send_ids")

    def __init__(self, context_id):
        self.id = context_id
        self.sends = {}  # send id -> the tensor this worker sent
        self.grads = {}  # leaf tensor -> its accumulated gradient
        self.internal = set()  # ids of the leaves RecvBackward hangs from (not the user's)
        self.known = set()  # workers this context reached from here
        self.lock = threading.Lock()
        self.send_ids = itertools.count()


def _rank():
    from .. import rpc
    return rpc._require().rank


def _context(context_id, create=False):
    with _lock:
        ctx = _contexts.get(context_id)
        if ctx is None:
            if not create:
                raise RuntimeError(f"Could not find autograd context with id: {context_id}")
            ctx = _contexts[context_id] = _Context(context_id)
        return ctx


def current_context_id():
    """The context of this thread (None outside one)."""
    return getattr(_local, "context_id", None)


class _Entered:
    """Run a block with this thread inside a context (RPC handlers use it for the caller's context)."""

    def __init__(self, context_id):
        self.context_id = context_id

    def __enter__(self):
        self.saved = current_context_id()
        if self.context_id is not None:
            _context(self.context_id, create=True)
        _local.context_id = self.context_id

    def __exit__(self, *exc):
        _local.context_id = self.saved


class context:
    """`with context() as context_id:` a distributed autograd context on this worker; released at the end, here and
    on every worker it reached."""

    def __enter__(self):
        if current_context_id() is not None:
            raise RuntimeError("Already have an autograd context id for this thread.")
        self.context_id = (_rank() << 48) + next(_ids)
        _context(self.context_id, create=True)
        _local.context_id = self.context_id
        return self.context_id

    def __exit__(self, *exc):
        _local.context_id = None
        _release(self.context_id)


def _release(context_id):
    """Forget a context here and on the workers it reached from here (they do the same)."""
    from .. import rpc
    with _lock:
        ctx = _contexts.pop(context_id, None)
    if ctx is None:
        return
    me = _rank()
    futures = [rpc.rpc_async(w, _release, (context_id,)) for w in ctx.known if w != me]
    for f in futures:
        f.wait()


def note_destination(rank):
    """An RPC from this thread goes to `rank`: the current context (if any) reaches it."""
    context_id = current_context_id()
    if context_id is not None:
        _context(context_id).known.add(rank)


# ---- tensors on the wire ----------------------------------------------------------------------

def reduce_sent_tensor(tensor):
    """The pickle reduction of a tensor that requires grad, sent inside a context (else None)."""
    context_id = current_context_id()
    if context_id is None or not tensor.requires_grad:
        return None
    ctx = _context(context_id)
    send_id = next(ctx.send_ids)
    ctx.sends[send_id] = tensor
    return _received, (context_id, _rank(), send_id, tensor.detach())


def _received(context_id, sender, send_id, data):
    """Unpickling on the receiver: the value as the output of a RecvBackward node of the context."""
    ctx = _context(context_id, create=True)
    ctx.known.add(sender)
    leaf = data.requires_grad_()
    with ctx.lock:
        ctx.internal.add(id(leaf))
    return _RecvBackward.apply(leaf, context_id, sender, send_id)


class _RecvBackward(Function):
    """Identity forward; backward hands the gradient to the worker that sent the tensor."""

    @staticmethod
    def forward(ctx, leaf, context_id, sender, send_id):
        ctx.route = (context_id, sender, send_id)
        return leaf.view_as(leaf)

    @staticmethod
    def backward(ctx, grad):
        from .. import rpc
        context_id, sender, send_id = ctx.route
        rpc.rpc_sync(sender, _continue, (context_id, send_id, grad.detach()))
        return None, None, None, None


def _continue(context_id, send_id, grad):
    """On the sender: backward from its sent tensor with the gradient that came back."""
    ctx = _context(context_id)
    with _Entered(context_id):
        _run(ctx, [ctx.sends[send_id]], [grad])


def _run(ctx, roots, grads):
    """One local backward pass: the gradients of every leaf reached (RecvBackward nodes on the way send
    theirs on); the user's leaves' added to the context's table."""
    leaves = reached_leaves(roots)
    if not leaves:
        return
    found = _autograd.grad(roots, leaves, grads, retain_graph=True, allow_unused=True)
    with ctx.lock:
        for leaf, g in zip(leaves, found):
            if g is not None and id(leaf) not in ctx.internal:
                old = ctx.grads.get(leaf)
                ctx.grads[leaf] = g if old is None else old + g


# ---- the public entry points --------------------------------------------------------------------

def backward(context_id, roots, retain_graph=False):
    """Backward from `roots` (scalars) through every worker the context's RPCs reached; the gradients of
    each worker's leaves go to that worker's get_gradients(context_id)."""
    from ... import ones_like
    ctx = _context(context_id)
    for r in roots:
        if r.numel() != 1:
            raise RuntimeError("Expected tensor of size 1 for root in distributed backward pass, got "
                               f"{list(r.shape)}")
        if not r.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    with _Entered(context_id):
        _run(ctx, list(roots), [ones_like(r) for r in roots])


def get_gradients(context_id):
    """{tensor: gradient} of this worker's leaves in the context."""
    ctx = _context(context_id)
    with ctx.lock:
        return dict(ctx.grads)
