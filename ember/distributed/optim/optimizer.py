"""torch.distributed.optim.DistributedOptimizer: one step over parameters that live on several workers.

Each owner of some of the parameters (RRefs) gets a local optimizer of `optimizer_class` over its own
(created through remote()); step(context_id) asks every owner to step with the gradients the distributed
autograd context holds for its parameters (get_gradients), in parallel, and waits for all. The local step
sees them as .grad for its duration (the parameters' own .grad is put back after)."""
import threading

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    """On an owner: the optimizer over its parameters, one step at a time."""

    def __init__(self, optimizer_class, rrefs, args, kwargs):
        self.params = [r.local_value() for r in rrefs]
        self.optim = optimizer_class(self.params, *args, **kwargs)
        self.lock = threading.Lock()

    def step(self, context_id):
        from .. import autograd as dist_autograd
        grads = dist_autograd.get_gradients(context_id)
        with self.lock:
            saved = [p.grad for p in self.params]
            try:
                for p in self.params:
                    p.grad = grads.get(p)
                self.optim.step()
            finally:
                for p, g in zip(self.params, saved):
                    p.grad = g


def _new_local(optimizer_class, rrefs, args, kwargs):
    return _LocalOptimizer(optimizer_class, rrefs, args, kwargs)


def _local_step(optimizer_rref, context_id):
    optimizer_rref.local_value().step(context_id)


class DistributedOptimizer:
    """DistributedOptimizer(optimizer_class, params_rref, *args, **kwargs): the optimizer class (and its
    arguments) applied on each parameter's owner; step(context_id) with that context's gradients."""

    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        from .. import rpc
        by_owner = {}
        for rref in params_rref:
            by_owner.setdefault(rref.owner().id, []).append(rref)
        self.remote_optimizers = [rpc.remote(owner, _new_local, (optimizer_class, rrefs, args, kwargs))
                                  for owner, rrefs in by_owner.items()]

    def step(self, context_id):
        from .. import rpc
        from .. import autograd as dist_autograd
        dist_autograd._context(context_id)  # the context must exist here (torch's error otherwise)
        futures = [rpc.rpc_async(o.owner(), _local_step, (o, context_id)) for o in self.remote_optimizers]
        for f in futures:
            f.wait()
