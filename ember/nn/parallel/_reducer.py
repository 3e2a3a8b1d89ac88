"""DDP's reducer: gradients averaged across ranks in buckets, each all-reduced as soon as it is full.

Note [DDP buckets and overlap]: as torch's C++ Reducer. The trainable parameters are grouped (per dtype)
into buckets of at most bucket_cap_mb; each bucket owns one flat buffer and each of its parameters a view
of it. A post-accumulate-grad hook on every parameter copies its gradient, divided by the world size, into
its view; when a bucket's last gradient has arrived its all-reduce (SUM) is started with async_op=True,
while backward goes on computing the gradients of earlier layers. Buckets are launched strictly in bucket
order (a full bucket waits for the ones before it) so every rank starts the same collectives in the same
order, which MPI requires; every later gradient tests the oldest unfinished all-reduce, which is when MPI
advances it. When the last bucket is launched, a callback queued on the autograd engine waits
for all of them at the end of backward and writes the averages back into .grad (or leaves .grad as the
bucket view, gradient_as_bucket_view=True). With a communication hook (register_comm_hook) a bucket holds the
gradients as they are (not divided), the hook gets it as a GradBucket when it is full and returns a Future of
the bucket's new contents; the end of backward waits for those futures instead of the all-reduces.

Bucket order follows torch: buckets are filled in parameter order and reversed, since gradients arrive
roughly in reverse order of registration; with find_unused_parameters=False (or static_graph=True) the
first iteration uses one bucket holding everything, and the buckets are rebuilt once, in the order the
gradients became ready then (rank 0's order, broadcast), with a small first bucket (1 MiB) so that
communication starts early.
"""
import weakref

from ... import _dtype as D
from ...autograd.engine import queue_callback
from ...autograd.grad_mode import no_grad
from ...distributed._grad_bucket import GradBucket

DEFAULT_BUCKET_CAP_MB = 25
DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
MB = 1024 * 1024

UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates "
    "that your module has parameters that were not used in producing loss. You can enable unused parameter "
    "detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs participate "
    "in calculating loss. \nIf you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` function. Please include "
    "the loss function and the structure of the return value of `forward` of your module when reporting this "
    "issue (e.g. list, dict, iterable).\nParameter indices which did not receive grad for rank {rank}: {missing}\n In "
    "addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out "
    "information about which particular parameters did not receive gradient on this rank as part of this error")
MARKED_TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use of "
    "a module parameter outside the `forward` function. Please make sure model parameters are not shared across "
    "multiple concurrent forward-backward passes. or try to use _set_static_graph() as a workaround if this module "
    "graph does not change during training loop.2) Reused parameters in multiple reentrant backward passes. For "
    "example, if you use multiple `checkpoint` functions to wrap the same part of your model, it would result in "
    "the same set of parameters been used by different reentrant backward passes multiple times, and hence marking "
    "a variable ready multiple times. DDP does not support such use cases in default. You can try to use "
    "_set_static_graph() as a workaround if your module graph does not change over iterations.\nParameter at "
    "index {index} with name {name} has been marked as ready twice. This means that multiple autograd engine  "
    "hooks have fired for this particular parameter during this iteration.")


def compute_bucket_assignment_by_size(params, limits, order=None):
    """Greedy buckets of parameter indices, one open bucket per dtype; the i-th bucket closed for a dtype may
    hold limits[i] bytes (the last limit repeats). Without `order` (parameter order) the buckets are sorted
    by their smallest index; with it (gradient-ready order) they stay in the order they were closed."""
    indices = list(range(len(params))) if order is None else list(order)
    open_buckets = {}  # dtype -> [indices, bytes, how many buckets of this dtype were closed]
    result = []
    for i in indices:
        p = params[i]
        entry = open_buckets.setdefault(p.dtype, [[], 0, 0])
        entry[0].append(i)
        entry[1] += p.numel() * p.element_size()
        limit = limits[min(entry[2], len(limits) - 1)]
        if entry[1] >= limit:
            result.append((entry[0], limit))
            open_buckets[p.dtype] = [[], 0, entry[2] + 1]
    for members, _, closed in open_buckets.values():
        if members:
            result.append((members, limits[min(closed, len(limits) - 1)]))
    if order is None:
        result.sort(key=lambda bucket: min(bucket[0]))
    return [members for members, _ in result]


class _Bucket:
    __slots__ = ("indices", "flat", "views", "pending", "work", "own")

    def __init__(self, indices, params):
        from ... import empty
        self.indices = indices
        numel = sum(params[i].numel() for i in indices)
        self.flat = empty(numel, dtype=params[indices[0]].dtype)
        self.views = []
        offset = 0
        for i in indices:
            n = params[i].numel()
            self.views.append(self.flat[offset:offset + n].view(params[i].shape))
            offset += n
        self.own = self.flat  # the bucket's own buffer (GradBucket.set_buffer may point flat elsewhere)
        self.pending = len(indices)
        self.work = None  # the all-reduce's Work, or the communication hook's Future


class Reducer:
    """The gradient side of one DistributedDataParallel: buckets, hooks, launches and the final wait."""

    def __init__(self, params, names, group, bucket_limits, initial_limits, find_unused, rebuild,
                 gradient_as_bucket_view, record_iteration=0):
        self.params = params
        self.names = names
        self.group = group
        self.bucket_limits = bucket_limits  # byte limits of the 1st, 2nd, ... bucket (the last one repeats)
        self.find_unused = find_unused
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.world_size = _dist().get_world_size(group)
        self.divisor = self.world_size  # what gradients are divided by (inside join(): maybe the training ranks)
        self.expect_hooks = False  # a synchronized backward is under way (set by prepare_for_backward)
        self.require_finalize = False  # a hook fired: the final wait must run before the next iteration
        self.ready_order = []  # gradient-ready order of one iteration, to rebuild the buckets from
        self.record_iteration = record_iteration  # which synchronized iteration records it
        self.iteration = -1
        self.rebuilt = not rebuild  # torch rebuilds once unless it finds unused parameters (and no static graph)
        self.unused = ()
        self.used = None  # the last used-parameter map (all-reduced), with find_unused
        self.used_work = None
        self.marked = set()  # parameters whose gradient is in its bucket this iteration
        self.next_bucket = 0  # the first bucket not launched yet
        self.unfinished = 0  # the first launched bucket not known to be complete
        self.comm_hook = None  # (state, hook) once register_comm_hook ran
        if initial_limits is None:
            self.set_buckets([list(range(len(params)))])  # one bucket until the ready order is known
        else:
            self.set_buckets(list(reversed(compute_bucket_assignment_by_size(params, initial_limits))))
        me = weakref.ref(self)
        self.handles = [p.register_post_accumulate_grad_hook(_hook(me, i)) for i, p in enumerate(params)]
        weakref.finalize(self, _remove_hooks, self.handles)

    def set_buckets(self, assignment):
        self.buckets = [_Bucket(indices, self.params) for indices in assignment]
        self.where = {}
        for b in self.buckets:
            for pos, i in enumerate(b.indices):
                self.where[i] = (b, pos)

    # ---- once per iteration -------------------------------------------------------------------------
    def prepare_for_forward(self, rebuild=True):
        """Before a synchronized forward: the last backward must have finished; rebuild buckets once (now,
        or inside join() later in the forward: rebuild_if_due)."""
        if self.require_finalize:
            missing = " ".join(str(i) for i in range(len(self.params)) if i not in self.marked)
            raise RuntimeError(UNFINISHED_REDUCTION.format(rank=_dist().get_rank(self.group), missing=missing))
        if rebuild:
            self.rebuild_if_due()

    def rebuild_if_due(self):
        if not self.rebuilt and len(self.ready_order) == len(self.params):
            self.rebuild()

    def prepare_for_backward(self, outputs):
        """After a synchronized forward: expect one hook per parameter (find the unused ones if asked)."""
        self.expect_hooks = True
        self.require_finalize = False
        self.iteration += 1
        self.next_bucket = 0
        self.unfinished = 0
        self.marked = set()
        for b in self.buckets:
            b.pending = len(b.indices)
            b.work = None
        if self.find_unused:
            self.unused = _unused(self.params, outputs)
            self.unused_marked = False

    def rebuild(self):
        """Buckets in the order gradients became ready in the first iteration (rank 0's, so ranks agree)."""
        from ... import tensor
        order = tensor(self.ready_order, dtype=D.int64)
        _dist().broadcast(order, group=self.group, group_src=0)
        self.set_buckets(compute_bucket_assignment_by_size(self.params, self.bucket_limits, order=order.tolist()))
        self.rebuilt = True

    def shadow_backward(self):
        """A joined rank's part in one synchronized iteration of the training ranks (Note [Joining ranks]):
        the bucket rebuild when it is due, then the same collectives as their backward, on zeros."""
        from ... import zeros
        if not self.rebuilt and self.iteration >= self.record_iteration:
            if len(self.ready_order) != len(self.params):  # joined before recording: parameter order, as torch
                self.ready_order = list(range(len(self.params)))
            self.rebuild()
        self.iteration += 1
        dist = _dist()
        with no_grad():
            pending = []
            if self.find_unused:  # this rank's last used-parameter map, as torch's joined ranks send theirs
                used = zeros(len(self.params), dtype=D.int32) if self.used is None else self.used.clone()
                pending.append(dist.all_reduce(used, group=self.group, async_op=True))
            for index, bucket in enumerate(self.buckets):
                zero = _Bucket(bucket.indices, self.params)
                zero.flat.zero_()
                if self.comm_hook is not None:
                    state, hook = self.comm_hook
                    pending.append(hook(state, GradBucket(index, zero, self.params, index == len(self.buckets) - 1)))
                else:
                    pending.append(dist.all_reduce(zero.flat, group=self.group, async_op=True))
            for work in pending:
                work.wait()

    # ---- during backward ----------------------------------------------------------------------------
    def on_grad_ready(self, i):
        """Hook of parameter i: its gradient is accumulated in .grad."""
        if not self.expect_hooks:
            return  # not a synchronized backward (no_sync, or another backward of a finished iteration)
        if i in self.marked:
            raise RuntimeError(MARKED_TWICE.format(index=i, name=self.names[i]))
        with no_grad():
            self._on_grad_ready(i)

    def _on_grad_ready(self, i):
        if not self.require_finalize:
            self.require_finalize = True
            if self.find_unused and not self.unused_marked:
                self.unused_marked = True
                self._share_used_map()
                for j in self.unused:
                    self.mark_ready(j)
        self.mark_ready(i)

    def _share_used_map(self):
        """Start the all-reduce that tells which parameters were used on some rank."""
        from ... import ones
        used = ones(len(self.params), dtype=D.int32)
        for j in self.unused:
            used[j] = 0
        self.used = used
        self.used_work = _dist().all_reduce(used, group=self.group, async_op=True)

    def mark_ready(self, i):
        """Put parameter i's gradient / world_size into its bucket view; launch what is complete."""
        self.marked.add(i)
        if not self.rebuilt and self.iteration == self.record_iteration:
            self.ready_order.append(i)
        b, pos = self.where[i]
        view = b.views[pos]
        p = self.params[i]
        g = p.grad
        hooked = self.comm_hook is not None  # a hook gets the gradients as they are and averages them itself
        if g is None:
            view.zero_()
        elif self.gradient_as_bucket_view:
            if g is not view:
                view.copy_(g)
                p.grad = view
            if not hooked:
                view.div_(self.divisor)
        elif hooked:
            view.copy_(g)
        else:
            _mul_into(g, 1.0 / self.divisor, view)
        b.pending -= 1
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            if hooked:
                state, hook = self.comm_hook
                bucket.flat = bucket.own
                bucket.work = hook(state, GradBucket(self.next_bucket, bucket, self.params,
                                                     self.next_bucket == len(self.buckets) - 1))
            else:
                bucket.work = _dist().all_reduce(bucket.flat, group=self.group, async_op=True)
            self.next_bucket += 1
        # MPI moves a started operation's data only inside MPI calls: testing the oldest unfinished bucket at
        # every gradient lets the all-reduces advance while backward computes
        while self.unfinished < self.next_bucket and _finished(self.buckets[self.unfinished].work):
            self.unfinished += 1
        if self.next_bucket == len(self.buckets):
            queue_callback(self.finalize)

    def finalize(self):
        """End of backward: wait for every bucket and write the averages into .grad."""
        with no_grad():
            self._finalize()

    def _finalize(self):
        for b in self.buckets:
            result = b.work.wait()
            b.flat = b.own
            if self.comm_hook is not None:
                if isinstance(result, (list, tuple)) and len(result) == 1:
                    result = result[0]
                if result is not b.own:
                    b.own.copy_(result.reshape(b.own.shape))
        unused_everywhere = set()
        if self.used_work is not None:
            self.used_work.wait()
            self.used_work = None
            unused_everywhere = {j for j in self.unused if self.used[j].item() == 0}
        for b in self.buckets:
            for i, view in zip(b.indices, b.views):
                if i in unused_everywhere:
                    continue  # torch leaves the .grad of a parameter no rank used untouched
                p = self.params[i]
                if self.gradient_as_bucket_view:
                    if p.grad is not view:
                        p.grad = view
                elif p.grad is None:
                    p.grad = view.clone()
                else:
                    p.grad.copy_(view)
        self.expect_hooks = False
        self.require_finalize = False


def _dist():
    from ... import distributed
    return distributed


def _finished(work):
    """Whether a bucket's all-reduce Work, or its hook's Future, has completed (polling advances it)."""
    return work.is_completed() if hasattr(work, "is_completed") else work.done()


def _hook(reducer_ref, i):
    def hook(param):
        reducer = reducer_ref()
        if reducer is not None:
            reducer.on_grad_ready(i)
    return hook


def _remove_hooks(handles):
    for h in handles:
        h.remove()


def _mul_into(g, scale, out):
    """out = g * scale (torch multiplies by the reciprocal of the world size while copying)."""
    from ... import mul
    mul(g, scale, out=out)


def _unused(params, outputs):
    """Indices of the parameters the autograd graph of `outputs` does not reach."""
    from ...autograd.graph import reached_leaves
    reached = {id(t) for t in reached_leaves(outputs)}
    return [i for i, p in enumerate(params) if id(p) not in reached]
