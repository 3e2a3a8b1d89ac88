"""InstanceNorm1d/2d/3d. See https://pytorch.org/docs/stable/nn.html#normalization-layers

Unlike BatchNorm, affine and track_running_stats default to False; unbatched inputs (one
dimension fewer) are accepted.
"""
import warnings

from .. import functional as F
from .batchnorm import _LazyNormBase, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)

    def _get_no_batch_dim(self):
        raise NotImplementedError

    def _check_input_dim(self, input):
        n = self._get_no_batch_dim()
        if input.dim() not in (n, n + 1):
            raise ValueError(f"expected {n}D or {n + 1}D input (got {input.dim()}D input)")

    def _handle_no_batch_input(self, input):
        return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version", None)
        # version 1 removed running_mean/running_var when track_running_stats=False
        if version is None and not self.track_running_stats:
            keys = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if keys:
                klass = self.__class__.__name__
                names = " and ".join(f'"{k}"' for k in keys)
                error_msgs.append(f"Unexpected running stats buffer(s) {names} for {klass} with "
                                  f"track_running_stats=False. If state_dict is a checkpoint saved before 0.4.0, this "
                                  f"may be expected because {klass} does not track running stats by default since "
                                  f"0.4.0. Please remove these keys from state_dict. If the running stats are actually "
                                  f"needed, instead set track_running_stats=True in {klass} to enable them. See the "
                                  f"documentation of {klass} for details.")
                for key in keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._get_no_batch_dim()
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == self._get_no_batch_dim():
            return self._handle_no_batch_input(input)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or unbatched (C, L) inputs."""

    def _get_no_batch_dim(self):
        return 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or unbatched (C, H, W) inputs."""

    def _get_no_batch_dim(self):
        return 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""

    def _get_no_batch_dim(self):
        return 4


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm1d with num_features inferred from the first input's dim 1 (torch's defaults: affine and
    tracked). See torch.nn.LazyInstanceNorm1d."""
    cls_to_become = InstanceNorm1d
    _get_no_batch_dim = InstanceNorm1d._get_no_batch_dim


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm2d with num_features inferred from the first input's dim 1. See torch.nn.LazyInstanceNorm2d."""
    cls_to_become = InstanceNorm2d
    _get_no_batch_dim = InstanceNorm2d._get_no_batch_dim


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm3d with num_features inferred from the first input's dim 1. See torch.nn.LazyInstanceNorm3d."""
    cls_to_become = InstanceNorm3d
    _get_no_batch_dim = InstanceNorm3d._get_no_batch_dim
