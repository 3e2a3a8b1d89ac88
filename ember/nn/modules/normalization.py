"""LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm, CrossMapLRN2d.
See https://pytorch.org/docs/stable/nn.html#normalization-layers

The learned elementwise weight (ones) and bias (zeros) of these layers and of batch/instance norm are built
by _register_affine and reset by _reset_affine.
"""
import numbers

from ..._ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LocalResponseNorm", "CrossMapLRN2d", "LayerNorm", "GroupNorm", "RMSNorm"]


def _register_affine(module, wanted, shape, device, dtype):
    """Register the parameters named in `wanted` ({'weight': bool, 'bias': bool}, in that order): an
    uninitialized Parameter of `shape` when wanted, None otherwise."""
    for name, present in wanted.items():
        if present:
            setattr(module, name, Parameter(empty(shape, device=device, dtype=dtype)))
        else:
            module.register_parameter(name, None)


def _reset_affine(module, affine):
    """weight to ones, bias to zeros (when the layer is affine and has them)."""
    if not affine:
        return
    init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


def _as_shape(normalized_shape):
    """An int n as (n,), any other sequence as a tuple."""
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


# ---- across neighbouring channels -------------------------------------------------------------------

class _ChannelWindowNorm(Module):
    """LocalResponseNorm and CrossMapLRN2d: x scaled by (k + alpha/size * sum of squares over `size`
    neighbouring channels) ** -beta."""

    def _set_window(self, size, alpha, beta, k):
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(_ChannelWindowNorm):
    """Normalization over a window of neighbouring channels (any input of rank 3 or more)."""
    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self._set_window(size, alpha, beta, k)

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(_ChannelWindowNorm):
    """Local response normalization across the channels of (N, C, H, W) inputs with torch's legacy kernel:
    out = x * (k + alpha / size * S)^-beta, S a running sum of squares over nearby channels (Note [Cross-map
    LRN windows] in ember/_ops/cross_map_lrn.py, backward included)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self._set_window(size, alpha, beta, k)

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        from ..._ops.cross_map_lrn import cross_map_lrn2d
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)


# ---- over the trailing dimensions, or over groups of channels -----------------------------------------

class _TrailingNorm(Module):
    """LayerNorm and RMSNorm: normalization over the trailing dims given by normalized_shape, with an elementwise
    weight (and for LayerNorm a bias) of that shape when elementwise_affine."""
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def _build(self, normalized_shape, eps, elementwise_affine, wanted, device, dtype):
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _register_affine(self, wanted, self.normalized_shape, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """weight to ones (bias, when there is one, to zeros)."""
        _reset_affine(self, self.elementwise_affine)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LayerNorm(_TrailingNorm):
    """Normalization by the mean and variance over the last len(normalized_shape) dims."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        wanted = {"weight": elementwise_affine, "bias": elementwise_affine and bias}
        self._build(normalized_shape, eps, elementwise_affine, wanted, device, dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{super().extra_repr()}, bias={self.bias is not None}"


class RMSNorm(_TrailingNorm):
    """Normalization by the root mean square over the last len(normalized_shape) dims (no centering, no bias)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self._build(normalized_shape, eps, elementwise_affine, {"weight": elementwise_affine}, device, dtype)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class GroupNorm(Module):
    """Normalization over groups of channels, with per-channel weight and bias."""
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _register_affine(self, {"weight": affine, "bias": affine and bias}, num_channels, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """weight to ones, bias to zeros."""
        _reset_affine(self, self.affine)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
