"""BatchNorm1d/2d/3d. See https://pytorch.org/docs/stable/nn.html#normalization-layers

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
from .normalization import _affine_parameters, _reset_affine

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm"]


class _NormBase(Module):
    """Common base of _InstanceNorm and _BatchNorm."""
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, affine, bias, num_features, device, dtype)
        if self.track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=D.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Running stats to (0, 1, 0); weight to ones, bias to zeros."""
        self.reset_running_stats()
        _reset_affine(self, self.affine)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # version 2 added num_batches_tracked; older state_dicts start it at 0
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else tensor(0, dtype=D.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    def _step(self):
        """(momentum factor, whether batch statistics are used, running_mean, running_var as passed to batch_norm)
        for one forward, counting the batch when the running statistics are tracked in training."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        # batch statistics in training, and in eval when there are no buffers to use
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        # buffers are passed when they are updated (training and tracked) or used (eval)
        use_buffers = not self.training or self.track_running_stats
        return (factor, bn_training, self.running_mean if use_buffers else None,
                self.running_var if use_buffers else None)

    def forward(self, input):
        self._check_input_dim(input)
        factor, bn_training, running_mean, running_var = self._step()
        return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


# ---- lazy norms: num_features inferred from the first input's dim 1 -----------------------------

class _LazyNormBase(LazyModuleMixin, _NormBase):
    """Weight/bias and running stats uninitialized until the first forward (torch's _LazyNormBase)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__(0, eps, momentum, False, False, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=D.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """BatchNorm1d with num_features inferred from the first input. See torch.nn.LazyBatchNorm1d."""
    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """BatchNorm2d with num_features inferred from the first input. See torch.nn.LazyBatchNorm2d."""
    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """BatchNorm3d with num_features inferred from the first input. See torch.nn.LazyBatchNorm3d."""
    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


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
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        factor, bn_training, running_mean, running_var = self._step()
        group = None
        if bn_training and self.training:
            from ... import distributed as dist
            if dist.is_available() and dist.is_initialized():
                group = self.process_group if self.process_group is not None else dist.group.WORLD
                if dist.get_world_size(group) <= 1:
                    group = None
        if group is None:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, factor,
                                self.eps)
        from ..._ops.sync_batch_norm import sync_batch_norm
        return sync_batch_norm(input, self.weight, self.bias, running_mean, running_var, self.eps, factor, group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm*d in it replaced by a SyncBatchNorm holding the same parameters and
        running statistics (the module itself when it is one)."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
