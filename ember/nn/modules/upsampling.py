"""Upsample, UpsamplingNearest2d, UpsamplingBilinear2d: F.interpolate as a layer.
See https://pytorch.org/docs/stable/generated/torch.nn.Upsample.html"""
from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


def _stored_factor(scale_factor):
    """Scale factors are kept as floats, one per dim for a tuple; a falsy factor (None, 0) is kept as None."""
    if isinstance(scale_factor, tuple):
        return tuple(map(float, scale_factor))
    if not scale_factor:
        return None
    return float(scale_factor)


class Upsample(Module):
    """Resizes to `size` or by `scale_factor` with the interpolation `mode`."""
    __constants__ = ["size", "scale_factor", "mode", "align_corners", "name", "recompute_scale_factor"]

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = _stored_factor(scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        # the split of positional and keyword arguments is torch's (fx records it)
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def __setstate__(self, state):
        state.setdefault("recompute_scale_factor", True)  # pickled before the option existed
        super().__setstate__(state)

    def extra_repr(self):
        if self.scale_factor is None:
            target = f"size={self.size!r}"
        else:
            target = f"scale_factor={self.scale_factor!r}"
        return f"{target}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling (deprecated in torch in favour of Upsample)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size=size, scale_factor=scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with align_corners=True (deprecated in torch in favour of Upsample)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size=size, scale_factor=scale_factor, mode="bilinear", align_corners=True)
