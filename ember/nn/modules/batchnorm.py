"""BatchNorm1d/2d/3d, their lazy forms and SyncBatchNorm.
See https://pytorch.org/docs/stable/nn.html#normalization-layers

_NormBase (shared with InstanceNorm) owns the affine parameters and the running buffers:
running_mean, running_var and num_batches_tracked (int64; state_dict version 2 added it,
so loading an older state_dict fills it in, as torch does).
"""
from ... import _dtype as D
from ..._ops.creation import ones, tensor, zeros
from .. import functional as F
from ...autograd import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module
from .normalization import _register_affine, _reset_affine

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm"]

_RUNNING_STATS = ("running_mean", "running_var", "num_batches_tracked")


class _NormBase(Module):
    """What batch and instance norm share: the settings, weight and bias (when affine), the running statistics
    (buffers when tracked, None otherwise), and the input rank check against `_accepted_dims`."""
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]
    _accepted_dims = ()  # input.dim() values forward accepts

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _register_affine(self, {"weight": affine, "bias": affine and bias}, num_features, device, dtype)
        if track_running_stats:
            initial = (zeros(num_features, device=device, dtype=dtype), ones(num_features, device=device, dtype=dtype),
                       tensor(0, dtype=D.int64, device=device))
        else:
            initial = (None,) * len(_RUNNING_STATS)
        for name, value in zip(_RUNNING_STATS, initial):
            self.register_buffer(name, value)
        self.reset_parameters()

    def reset_running_stats(self):
        """Mean 0, variance 1, no batches seen (when the statistics are tracked)."""
        if not self.track_running_stats:
            return
        self.running_mean.zero_()
        self.running_var.fill_(1)
        self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Running stats to (0, 1, 0); weight to ones, bias to zeros."""
        self.reset_running_stats()
        _reset_affine(self, self.affine)

    def _check_input_dim(self, input):
        if not self._accepted_dims:
            raise NotImplementedError
        if input.dim() not in self._accepted_dims:
            wanted = " or ".join(f"{n}D" for n in self._accepted_dims)
            raise ValueError(f"expected {wanted} input (got {input.dim()}D input)")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        saved = local_metadata.get("version")
        counter = prefix + "num_batches_tracked"
        # state_dicts older than version 2 have no batch counter: keep ours (or start one at 0)
        if self.track_running_stats and (saved is None or saved < 2) and counter not in state_dict:
            ours = self.num_batches_tracked
            state_dict[counter] = tensor(0, dtype=D.int64) if ours is None else ours
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    """Normalization by the statistics of the batch (training) or the running ones (eval)."""

    def _momentum_for_this_batch(self):
        """Count the batch when training with tracked statistics, and return the weight the running statistics
        give it: momentum, or 1 / batches counted when momentum is None (a cumulative average)."""
        counting = self.training and self.track_running_stats and self.num_batches_tracked is not None
        if counting:
            self.num_batches_tracked.add_(1)
        if self.momentum is not None:
            return self.momentum
        return 1.0 / float(self.num_batches_tracked) if counting else 0.0

    def _uses_batch_statistics(self):
        """In training; in eval only when there are no running statistics to normalize with."""
        return self.training or (self.running_mean is None and self.running_var is None)

    def _running_buffers(self):
        """The running (mean, var) batch_norm receives: read in eval, updated in training only when tracked."""
        if self.training and not self.track_running_stats:
            return None, None
        return self.running_mean, self.running_var

    def _forward_arguments(self, input):
        """Check the input and count the batch; (momentum, running mean, running var, whether the batch's own
        statistics normalize it) for batch_norm."""
        self._check_input_dim(input)
        momentum = self._momentum_for_this_batch()
        mean, var = self._running_buffers()
        return momentum, mean, var, self._uses_batch_statistics()

    def forward(self, input):
        momentum, mean, var, batch_stats = self._forward_arguments(input)
        return F.batch_norm(input, mean, var, self.weight, self.bias, batch_stats, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs."""
    _accepted_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs."""
    _accepted_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) inputs."""
    _accepted_dims = (5,)


# ---- lazy norms: num_features inferred from the first input's dim 1 -----------------------------

class _LazyNormBase(LazyModuleMixin, _NormBase):
    """Weight/bias and running stats uninitialized until the first forward (torch's _LazyNormBase)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__(0, eps, momentum, False, False, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        for name in self._lazy_names(bias=bias):
            kind = UninitializedBuffer if name.startswith("running") else UninitializedParameter
            setattr(self, name, kind(device=device, dtype=dtype))
        if track_running_stats:
            self.num_batches_tracked = tensor(0, dtype=D.int64, device=device)

    def _lazy_names(self, bias):
        """The parameters and buffers sized by num_features: weight (and bias) when affine, the running mean
        and variance when tracked."""
        names = []
        if self.affine:
            names += ["weight", "bias"] if bias else ["weight"]
        if self.track_running_stats:
            names += ["running_mean", "running_var"]
        return names

    def reset_parameters(self):
        if self.num_features and not self.has_uninitialized_params():
            super().reset_parameters()

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            for name in self._lazy_names(bias=self.bias is not None):
                getattr(self, name).materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """BatchNorm1d with num_features inferred from the first input. See torch.nn.LazyBatchNorm1d."""
    cls_to_become = BatchNorm1d
    _accepted_dims = BatchNorm1d._accepted_dims


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """BatchNorm2d with num_features inferred from the first input. See torch.nn.LazyBatchNorm2d."""
    cls_to_become = BatchNorm2d
    _accepted_dims = BatchNorm2d._accepted_dims


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """BatchNorm3d with num_features inferred from the first input. See torch.nn.LazyBatchNorm3d."""
    cls_to_become = BatchNorm3d
    _accepted_dims = BatchNorm3d._accepted_dims


# ---- SyncBatchNorm: the batch statistics of every process of a group ------------------------------

class SyncBatchNorm(_BatchNorm):
    """Batch normalization over (N, C, *) whose training statistics are those of the whole batch across the
    processes of process_group (ember.distributed, default the world): forward all-reduces each channel's count,
    sum and sum of squares, backward the gradient's two sums (Note [Synchronized batch norm]). In eval, or with no
    initialized process group or a group of one, it is BatchNorm. (torch runs this only on GPUs: on CPU tensors
    its training forward raises ValueError whenever a process group is initialized.)"""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        """At least (N, C), and at least one channel."""
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def _peers(self):
        """The process group to reduce the batch statistics over; None when there is nobody to share with."""
        from ... import distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            return None
        group = dist.group.WORLD if self.process_group is None else self.process_group
        return group if dist.get_world_size(group) > 1 else None

    def forward(self, input):
        momentum, mean, var, batch_stats = self._forward_arguments(input)
        group = self._peers() if batch_stats and self.training else None
        if group is None:
            return F.batch_norm(input, mean, var, self.weight, self.bias, batch_stats, momentum, self.eps)
        from ..._ops.sync_batch_norm import sync_batch_norm
        return sync_batch_norm(input, self.weight, self.bias, mean, var, self.eps, momentum, group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm*d in it replaced by a SyncBatchNorm holding the same parameters and
        running statistics (the module itself when it is one)."""
        converted = cls._from_batch_norm(module, process_group) if isinstance(module, _BatchNorm) else module
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted

    @classmethod
    def _from_batch_norm(cls, bn, process_group):
        """A SyncBatchNorm sharing bn's settings, parameters, running statistics and mode (and qconfig)."""
        sync = cls(bn.num_features, bn.eps, bn.momentum, bn.affine, bn.track_running_stats, process_group)
        if bn.affine:
            with no_grad():
                sync.weight, sync.bias = bn.weight, bn.bias
        for name in _RUNNING_STATS:
            setattr(sync, name, getattr(bn, name))
        sync.training = bn.training
        if hasattr(bn, "qconfig"):
            sync.qconfig = bn.qconfig
        return sync
