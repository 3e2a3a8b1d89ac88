"""InstanceNorm1d/2d/3d and their lazy forms. See https://pytorch.org/docs/stable/nn.html#normalization-layers

Unlike BatchNorm, affine and track_running_stats default to False; unbatched inputs (one
dimension fewer) are accepted.
"""
import warnings

from .. import functional as F
from .batchnorm import _LazyNormBase, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]

_UNTRACKED_STATS = ("running_mean", "running_var")


class _InstanceNorm(_NormBase):
    """Each sample's channels normalized by their own statistics (or by the running ones in eval when tracked).
    `_accepted_dims` is (unbatched rank, batched rank)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)

    def _check_channels(self, input):
        """The channel count should be num_features: an error when there are per-channel weights to apply,
        a warning otherwise (num_features is then unused)."""
        channel_dim = input.dim() - self._accepted_dims[0]
        channels = input.size(channel_dim)
        if channels == self.num_features:
            return
        if self.affine:
            raise ValueError(f"expected input's size at dim={channel_dim} to match num_features "
                             f"({self.num_features}), but got: {channels}.")
        warnings.warn(f"input's size at dim={channel_dim} does not match num_features. You can silence this "
                      "warning by not passing in num_features, which is not used because affine=False",
                      stacklevel=3)

    def _instance_norm(self, batch):
        use_input_stats = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum
        return F.instance_norm(batch, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                               momentum, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        self._check_channels(input)
        if input.dim() == self._accepted_dims[0]:  # unbatched: normalize it as a batch of one
            return self._instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._instance_norm(input)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        if local_metadata.get("version") is None and not self.track_running_stats:
            self._reject_untracked_stats(state_dict, prefix, error_msgs)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _reject_untracked_stats(self, state_dict, prefix, error_msgs):
        """A checkpoint from before 0.4.0 (no version) may carry running stats this layer does not track: report
        them and drop them from state_dict."""
        found = [prefix + name for name in _UNTRACKED_STATS if prefix + name in state_dict]
        if not found:
            return
        layer = type(self).__name__
        listed = " and ".join(f'"{key}"' for key in found)
        error_msgs.append(f"Unexpected running stats buffer(s) {listed} for {layer} with "
                          f"track_running_stats=False. If state_dict is a checkpoint saved before 0.4.0, this "
                          f"may be expected because {layer} does not track running stats by default since "
                          f"0.4.0. Please remove these keys from state_dict. If the running stats are actually "
                          f"needed, instead set track_running_stats=True in {layer} to enable them. See the "
                          f"documentation of {layer} for details.")
        for key in found:
            del state_dict[key]


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or unbatched (C, L) inputs."""
    _accepted_dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or unbatched (C, H, W) inputs."""
    _accepted_dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""
    _accepted_dims = (4, 5)


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm1d with num_features inferred from the first input's dim 1 (torch's defaults: affine and
    tracked). See torch.nn.LazyInstanceNorm1d."""
    cls_to_become = InstanceNorm1d
    _accepted_dims = InstanceNorm1d._accepted_dims


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm2d with num_features inferred from the first input's dim 1. See torch.nn.LazyInstanceNorm2d."""
    cls_to_become = InstanceNorm2d
    _accepted_dims = InstanceNorm2d._accepted_dims


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm3d with num_features inferred from the first input's dim 1. See torch.nn.LazyInstanceNorm3d."""
    cls_to_become = InstanceNorm3d
    _accepted_dims = InstanceNorm3d._accepted_dims
