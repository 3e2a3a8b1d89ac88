"""ZeroRedundancyOptimizer: each rank keeps the optimizer state of its own shard of the parameters.

Note [ZeRO shards]: the parameters of each group, largest first, go one by one to the rank holding the
fewest elements so far (ties: the lowest rank; the counts run on across groups). Each rank builds the
wrapped optimizer over its shard only (a local optimizer: its state exists there alone) and, in step(),
updates that shard, then every rank broadcasts its shard to all (ranks in order, parameters in shard
order; with parameters_as_bucket_view, one flat buffer per rank whose views the parameters become). The
global param_groups mirror the local ones' options both ways around each step, so an LR scheduler on this
optimizer drives the local one. state_dict() needs consolidate_state_dict(to=rank) first, which gathers
every rank's local state on that rank. It is Joinable: a rank that has joined keeps stepping (its shard
unchanged when it has no gradients) so the others receive its broadcasts. overlap_with_ddp is not built.
"""
from ...autograd.grad_mode import no_grad
from ...optim.optimizer import Optimizer, _typename
from ..algorithms.join import Join, JoinHook, Joinable, _JoinConfig

__all__ = ["ZeroRedundancyOptimizer"]


def _dist():
    from ... import distributed
    return distributed


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """torch.distributed.optim.ZeroRedundancyOptimizer on ember.distributed (Note [ZeRO shards])."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        from ..._tensor import Tensor
        if isinstance(params, Tensor):
            raise TypeError(f"`params` argument should be an iterable of Tensors, but got {_typename(params)}")
        try:
            params = list(params)
        except TypeError as e:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts, but got "
                            f"{_typename(params)}") from e
        if not params:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if all(isinstance(p, Tensor) for p in params):
            self._all_params = list(params)
        elif all(isinstance(p, dict) for p in params):
            for group in params:
                if "params" not in group:
                    raise ValueError("Each parameter group passed-in via `params` must have a 'params' key mapping "
                                     "to the parameters in the group")
            self._all_params = [p for group in params for p in group["params"]]
        else:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        first = _typename(self._all_params[0])
        if self._all_params[0].is_sparse:
            raise ValueError(f"ZeroRedundancyOptimizer only supports using the same dense type for all parameters but "
                             f"got {first}")
        for p in self._all_params[1:]:
            if _typename(p) != first:
                raise ValueError("ZeroRedundancyOptimizer only supports using the same dense type for all parameters "
                                 f"but got both {first} and {_typename(p)}")
        if overlap_with_ddp:
            raise NotImplementedError("ember's ZeroRedundancyOptimizer does not implement overlap_with_ddp")
        self.initialized = False
        Optimizer.__init__(self, params, defaults)
        self._join_config = _JoinConfig.construct_disabled_join_config()
        dist = _dist()
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_global_rank(self.process_group, self.rank)
        self._default_device = self._all_params[0].device
        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._partition = None
        self.optim = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        _copy_options(self.optim.param_groups, self.param_groups)
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._buckets = []
        self._build_param_buckets()
        self._all_state_dicts = []
        self.initialized = True

    # ---- shards -----------------------------------------------------------------------------------
    def _partition_parameters(self):
        """Per rank, its param groups: each global group's options with that rank's share of its parameters."""
        if self._partition is None:
            self._partition = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for group in self.param_groups:
                shares = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):  # stable for equal sizes
                    rank = sizes.index(min(sizes))
                    shares[rank].append(p)
                    sizes[rank] += p.numel()
                for rank, share in enumerate(shares):
                    local = dict(group)
                    local["params"] = share
                    self._partition[rank].append(local)
        return self._partition

    def _owner(self):
        """Parameter (by id) -> owning rank."""
        return {id(p): rank for rank, groups in enumerate(self._partition_parameters())
                for group in groups for p in group["params"]}

    def _build_param_buckets(self):
        """parameters_as_bucket_view: each rank's trainable parameters become views of one flat buffer."""
        self._buckets = []
        if not self.parameters_as_bucket_view:
            return
        from ... import empty
        for groups in self._partition_parameters():
            params = [p for group in groups for p in group["params"] if p.requires_grad]
            if not params:
                self._buckets.append(empty(0, dtype=self._all_params[0].dtype))
                continue
            flat = empty(sum(p.numel() for p in params), dtype=params[0].dtype)
            offset = 0
            with no_grad():
                for p in params:
                    n = p.numel()
                    view = flat[offset:offset + n].view(p.shape)
                    view.copy_(p)
                    p.data = view
                    offset += n
            self._buckets.append(flat)

    def _sync_params(self):
        """Every rank's shard from it to all: rank by rank, async, then waited."""
        dist = _dist()
        works = []
        with no_grad():
            for rank, groups in enumerate(self._partition_parameters()):
                if self.parameters_as_bucket_view:
                    shards = [self._buckets[rank]] if self._buckets[rank].numel() else []
                else:
                    shards = [p.detach() for group in groups for p in group["params"]]
                for tensor in shards:
                    works.append(dist.broadcast(tensor, group=self.process_group, group_src=rank, async_op=True))
            for work in works:
                work.wait()

    # ---- steps ------------------------------------------------------------------------------------
    def step(self, closure=None, **kwargs):
        """The local optimizer's step on this rank's shard, then every shard broadcast from its owner."""
        Join.notify_join_context(self)
        _copy_options(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None else self.optim.step(closure=closure, **kwargs)
        _copy_options(self.optim.param_groups, self.param_groups)
        self._sync_params()
        return loss

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if self.initialized:
            self._partition = None
            groups = self._partition_parameters()[self.rank]
            if len(groups) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(groups[-1])
            if self.parameters_as_bucket_view:
                self._build_param_buckets()

    # ---- state dicts ------------------------------------------------------------------------------
    def consolidate_state_dict(self, to=0):
        """Gather every rank's local optimizer state on group rank `to` (every rank calls it)."""
        dist = _dist()
        _copy_options(self.param_groups, self.optim.param_groups)
        self._all_state_dicts = []
        for rank in range(self.world_size):
            message = [self.optim.state_dict() if rank == self.rank else None]
            dist.broadcast_object_list(message, group=self.process_group, group_src=rank)
            if self.rank == to:
                self._all_state_dicts.append(message[0])
        if self.rank != to:
            self._all_state_dicts = []

    def state_dict(self):
        """The whole optimizer's state, as the unsharded optimizer's state_dict (after consolidate_state_dict)."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you meant to "
                               "save the global state.")
        result = super().state_dict()
        index = {}
        for group in self.param_groups:
            for p in group["params"]:
                index.setdefault(id(p), len(index))
        for rank, local in enumerate(self._all_state_dicts):
            shares = self._partition_parameters()[rank]
            for local_group, share in zip(local["param_groups"], shares):
                for i, p in zip(local_group["params"], share["params"]):
                    if i in local["state"]:
                        result["state"][index[id(p)]] = local["state"][i]
        result["state"] = dict(sorted(result["state"].items()))
        return result

    def load_state_dict(self, state_dict):
        """Load a whole-optimizer state dict: each rank keeps the state of its own shard."""
        params = [p for group in self.param_groups for p in group["params"]]
        owner = self._owner()
        for i, value in state_dict["state"].items():
            p = params[i]
            if owner[id(p)] != self.rank:
                state_dict["state"][i] = None
            else:
                self.optim.state[p] = value  # ember's tensors all live on the CPU
        super().load_state_dict(state_dict)
        _copy_options(state_dict["param_groups"], self.param_groups)
        _copy_options(self.param_groups, self.optim.param_groups)

    # ---- join -------------------------------------------------------------------------------------
    def join_hook(self, **kwargs):
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        return self._default_device

    @property
    def join_process_group(self):
        return self.process_group


class _ZeROJoinHook(JoinHook):
    def __init__(self, zero):
        if not isinstance(zero, ZeroRedundancyOptimizer):
            raise AssertionError("ZeRO join hook requires passing in a ZeroRedundancyOptimizer instance as the state")
        self.zero = zero

    def main_hook(self):
        """A joined rank steps too: its shard (unchanged without gradients) reaches the others."""
        self.zero.step()


def _copy_options(src_groups, dst_groups):
    """Every option but 'params' from each source group to its destination group."""
    if len(src_groups) != len(dst_groups):
        raise AssertionError("Mismatch between number of source and destination parameter groups")
    for src, dst in zip(src_groups, dst_groups):
        for key, value in src.items():
            if key != "params":
                dst[key] = value

