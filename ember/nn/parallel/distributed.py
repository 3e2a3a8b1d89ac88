"""DistributedDataParallel: one model replica per process, gradients averaged across processes.

https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html. At construction
rank 0's parameters and buffers are broadcast to every rank, and its buffers again before each forward
(broadcast_buffers, the default); during backward the gradients are all-reduced in buckets that overlap the
rest of backward (Note [DDP buckets and overlap] in _reducer.py). Runs on ember.distributed (MPI).
Where ember differs: modules live on the CPU, so device_ids/output_device must be None as torch requires
for CPU modules; static_graph=True is run as unused-parameter detection in every iteration (the same
gradients as torch, and the buckets rebuilt from the third iteration's gradient order as torch does);
mixed_precision and delayed all-reduce are not implemented and raise NotImplementedError
when asked for. join() (uneven inputs) follows Note [Joining ranks] in distributed/algorithms/join.py.
"""
import warnings
from contextlib import contextmanager
from dataclasses import fields, is_dataclass

from ..._tensor import Tensor
from ...distributed.algorithms.join import Join, JoinHook, Joinable, _JoinConfig
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ..modules.module import Module
from ._reducer import DEFAULT_BUCKET_CAP_MB, DEFAULT_FIRST_BUCKET_BYTES, MB, Reducer

__all__ = ["DistributedDataParallel"]

BROADCAST_BUFFERS_DEPRECATED = (
    "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: unlike "
    "`broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at init. If you rely on buffers "
    "NOT being synced at init (e.g. rank-local buffers), keep using `broadcast_buffers=False` until "
    "`init_sync_buffers` is available.")


class DistributedDataParallel(Module, Joinable):
    """Data parallelism across processes: wrap the model, train as usual, gradients come out averaged."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        super().__init__()
        dist = _dist()
        if (delay_all_reduce_named_params is not None) != (param_to_hook_all_reduce is not None):
            raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce need to be set at the "
                             "same time.")
        if process_group is not None and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        _not_implemented(delay_all_reduce_named_params=delay_all_reduce_named_params,
                         mixed_precision=mixed_precision,
                         skip_all_reduce_unused_params=skip_all_reduce_unused_params or None)
        self.device_mesh = device_mesh
        if device_mesh is not None:
            if device_mesh.ndim != 1:
                raise RuntimeError(f"Only 1D device mesh is supported, but got {device_mesh}.")
            process_group = device_mesh.get_group(mesh_dim=0)
        if process_group is None:
            dist.get_world_size()  # torch's ValueError when init_process_group has not run
            process_group = dist.group.WORLD
        self.process_group = process_group
        self._distributed_rank = dist.get_rank(process_group)
        self._join_config = _JoinConfig.construct_disabled_join_config()
        self._divide_by_initial_world_size = True
        self.parameters_to_ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self._module_parameters = [p for n, p in module.named_parameters() if n not in self.parameters_to_ignore]
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        if device_ids or output_device:
            devices = {p.device for p in self._module_parameters}
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.module = module
        self.device = self._module_parameters[0].device
        self.device_type = self.device.type
        self.static_graph = static_graph
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.batched_grad_copy = batched_grad_copy  # how torch copies gradients; the values are the same
        self.mixed_precision = None
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        init_sync_buffers = self._buffer_policy(broadcast_buffers, forward_sync_buffers)
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module is deprecated. "
                          "Please avoid using it.", FutureWarning, stacklevel=2)
        self._set_bucket_caps(bucket_cap_mb, bucket_cap_mb_list)
        params, names = self._params_for_reducer()
        if init_sync:
            _verify_same_parameters(params, process_group)
            self._broadcast_states(init_sync_buffers)
        rebuild = static_graph or not find_unused_parameters
        limits = self._bucket_limits()
        # torch's first buckets: the user's per-bucket limits if given, else one bucket when it will rebuild
        initial = limits if self.bucket_bytes_cap_list or not rebuild else None
        self.reducer = Reducer(params, names, process_group, limits, initial, find_unused_parameters or static_graph,
                               rebuild, gradient_as_bucket_view, record_iteration=2 if static_graph else 0)

    def _buffer_policy(self, broadcast_buffers, forward_sync_buffers):
        """torch 2.13's rules for the deprecated broadcast_buffers and forward_sync_buffers; returns
        whether buffers are broadcast at construction."""
        if broadcast_buffers is not None:
            if forward_sync_buffers is not None:
                warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                              "`broadcast_buffers` is deprecated and its value is ignored when "
                              "`forward_sync_buffers` is provided.", FutureWarning, stacklevel=3)
            else:
                warnings.warn(BROADCAST_BUFFERS_DEPRECATED, FutureWarning, stacklevel=3)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            return True
        self.forward_sync_buffers = True if broadcast_buffers is None else broadcast_buffers
        return self.forward_sync_buffers

    def _set_bucket_caps(self, bucket_cap_mb, bucket_cap_mb_list):
        """bucket_bytes_cap and the small first bucket, as torch's _BucketCapacityConfig."""
        default = bucket_cap_mb is None
        cap_mb = DEFAULT_BUCKET_CAP_MB if default else bucket_cap_mb
        self.bucket_bytes_cap_list = []
        if bucket_cap_mb_list:
            self.bucket_bytes_cap_list = [int(c * MB) for c in bucket_cap_mb_list]
            cap_mb = max(bucket_cap_mb_list)
            default = False
        self.bucket_bytes_cap = int(cap_mb * MB)
        self.first_bucket_bytes_cap = DEFAULT_FIRST_BUCKET_BYTES if default else self.bucket_bytes_cap
        self.bucket_bytes_cap_default = self.first_bucket_bytes_cap < self.bucket_bytes_cap

    def _bucket_limits(self):
        if self.bucket_bytes_cap_list:
            return list(self.bucket_bytes_cap_list)
        if self.first_bucket_bytes_cap < self.bucket_bytes_cap:
            return [self.first_bucket_bytes_cap, self.bucket_bytes_cap]
        return [self.bucket_bytes_cap]

    def _params_for_reducer(self):
        """The trainable parameters, each once, in named_modules order (torch's reducer order), and names."""
        seen = set()
        params = []
        names = []
        for module_name, m in self.module.named_modules():
            for name, p in m.named_parameters(recurse=False):
                full = f"{module_name}.{name}" if module_name else name
                if p.requires_grad and full not in self.parameters_to_ignore and id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
                    names.append(full)
        self.modules_buffers = [b for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore]
        return params, names

    def _broadcast_states(self, buffers, src=0):
        """Group rank src's parameters (and buffers) to every rank."""
        tensors = [p for n, p in self.module.named_parameters() if n not in self.parameters_to_ignore]
        if buffers:
            tensors += self.modules_buffers
        _broadcast_coalesced(tensors, self.process_group, src=src)

    @property
    def broadcast_buffers(self):
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value):
        self.forward_sync_buffers = value

    @contextmanager
    def no_sync(self):
        """Within it, backward only accumulates local gradients; the first synchronized backward after it
        averages the accumulated sums. Run the forward inside the context too."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def will_sync_module_buffers(self):
        return self.require_forward_param_sync and self.forward_sync_buffers and len(self.modules_buffers) > 0

    def forward(self, *inputs, **kwargs):
        sync = is_grad_enabled() and self.require_backward_grad_sync
        joining = self._join_config.enable
        if sync:
            self.reducer.prepare_for_forward(rebuild=not joining)
        work = Join.notify_join_context(self)  # inside join(): this rank still trains (Note [Joining ranks])
        if work is not None:
            work.wait()
            training = int(work.result()[0].item())
            self.reducer.divisor = self.reducer.world_size if self._divide_by_initial_world_size else training
        if self.will_sync_module_buffers():  # from rank 0; inside join() from the highest training rank
            self._sync_buffers(self._find_common_rank(self._distributed_rank, True) if joining else 0)
        if joining:
            self._check_global_requires_backward_grad_sync(is_joined_rank=False)
            if sync:
                self.reducer.rebuild_if_due()
        output = self.module(*inputs, **kwargs)
        if sync:
            self.require_forward_param_sync = True
            self.reducer.prepare_for_backward(list(_find_tensors(output)) if self.reducer.find_unused else [])
        else:
            self.require_forward_param_sync = False
        return output

    def train(self, mode=True):
        super().train(mode)
        return self

    def register_comm_hook(self, state, hook):
        """hook(state, bucket) -> Future of the bucket's new contents replaces the all-reduce of each bucket of
        gradients (a GradBucket: not divided by the world size; ember.distributed.algorithms.ddp_comm_hooks
        has torch's default hooks). Once."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self.reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self.reducer.comm_hook = (state, hook)

    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """Context manager for ranks with different numbers of inputs: a rank whose loop has ended keeps
        taking part in the others' collectives (zeros for its gradients) until all have ended, then every
        rank gets the model of the last rank to finish. divide_by_initial_world_size=False averages over
        the ranks still training instead of the world size."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def _sync_buffers(self, src):
        self.modules_buffers = [b for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore]
        _broadcast_coalesced(self.modules_buffers, self.process_group, keep_versions=True, src=src)

    def _find_common_rank(self, rank, candidate):
        """The highest group rank among the ranks passing candidate=True (every rank calls it)."""
        from ... import tensor
        from ... import _dtype as D
        best = tensor([rank if candidate else -1], dtype=D.int64)
        _dist().all_reduce(best, op=_dist().ReduceOp.MAX, group=self.process_group)
        if best.item() == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process. This indicates a bug "
                             "in PyTorch, please report an issue.")
        return best.item()

    def _check_global_requires_backward_grad_sync(self, is_joined_rank):
        """Training ranks tell joined ones whether this iteration's backward synchronizes (any rank says so)."""
        from ... import ones, zeros
        flag = ones(1) if not is_joined_rank and self.require_backward_grad_sync else zeros(1)
        _dist().all_reduce(flag, group=self.process_group)
        return flag.item() != 0 if is_joined_rank else None

    def _sync_final_model(self, is_last_joiner):
        src = self._find_common_rank(self._distributed_rank, is_last_joiner)
        self._broadcast_states(self.forward_sync_buffers, src)

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module, params_and_buffers_to_ignore):
        """Names (as in state_dict) of parameters and buffers DDP leaves alone on `module`."""
        module._ddp_params_and_buffers_to_ignore = params_and_buffers_to_ignore


class _DDPJoinHook(JoinHook):
    """A joined rank's side of DDP's iterations (Note [Joining ranks])."""

    def __init__(self, ddp, divide_by_initial_world_size):
        if not isinstance(ddp, DistributedDataParallel):
            raise AssertionError("DDP join hook requires passing in a DistributedDataParallel instance as the state, "
                                 f"got {type(ddp).__name__}")
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self):
        """The collectives of one training iteration, in the order DDP.forward and backward issue them."""
        ddp = self.ddp
        if ddp.will_sync_module_buffers():
            ddp._sync_buffers(ddp._find_common_rank(ddp._distributed_rank, False))
        sync = ddp._check_global_requires_backward_grad_sync(is_joined_rank=True)
        ddp.require_forward_param_sync = sync
        if sync:
            ddp.reducer.shadow_backward()

    def post_hook(self, is_last_joiner):
        self.ddp._sync_final_model(is_last_joiner)


def _dist():
    from ... import distributed
    return distributed


def _not_implemented(**options):
    for name, value in options.items():
        if value is not None:
            raise NotImplementedError(f"ember's DistributedDataParallel does not implement {name}")


def _broadcast_coalesced(tensors, group, keep_versions=False, src=0):
    """Group rank src's values of `tensors` to every rank: one broadcast per dtype of all of them flattened
    together (as torch coalesces them), not one per tensor. keep_versions: leave the tensors' version
    counters as they were (torch's _unsafe_preserve_version_counter for buffers a pending backward saved)."""
    from ... import cat
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    with no_grad():
        for group_tensors in by_dtype.values():
            flat = cat([t.reshape(-1) for t in group_tensors])
            _dist().broadcast(flat, group=group, group_src=src)
            offset = 0
            for t in group_tensors:
                n = t.numel()
                version = t._version_counter.value
                t.copy_(flat[offset:offset + n].view(t.shape))
                if keep_versions:
                    t._version_counter.value = version
                offset += n


def _verify_same_parameters(params, group):
    """Every rank must hold the same number of parameters with the same shapes (torch checks it too)."""
    dist = _dist()
    mine = [(tuple(p.shape), str(p.dtype)) for p in params]
    every = [None] * dist.get_world_size(group)
    dist.all_gather_object(every, mine, group=group)
    rank = dist.get_rank(group)
    for other, theirs in enumerate(every):
        if len(theirs) != len(mine):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has {len(mine)} params, "
                               f"while rank {other} has inconsistent {len(theirs)} params.")
        for i, (a, b) in enumerate(zip(mine, theirs)):
            if a != b:
                raise RuntimeError(f"[{rank}]: params[{i}] in this process with sizes {list(a[0])} ({a[1]}) "
                                   f"appears not to match sizes of the same param in process {other} "
                                   f"({list(b[0])}, {b[1]}).")


def _find_tensors(obj):
    """Every tensor inside a (nested) output: tensors, lists, tuples, dicts, dataclasses."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _find_tensors(x)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in _find_tensors(x)]
    if is_dataclass(obj) and not isinstance(obj, type):
        return [t for f in fields(obj) for t in _find_tensors(getattr(obj, f.name))]
    return []
