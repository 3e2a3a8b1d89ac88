"""PixelShuffle, PixelUnshuffle and ChannelShuffle: rearrangements with one integer option, which
is shown in the repr and passed to the F function of the same name.
See https://pytorch.org/docs/stable/generated/torch.nn.PixelShuffle.html"""
from ._options import FunctionalModule

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(FunctionalModule):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    __constants__ = ["upscale_factor"]
    _functional = "pixel_shuffle"
    _passes = _shown = ("upscale_factor",)

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor


class PixelUnshuffle(FunctionalModule):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    __constants__ = ["downscale_factor"]
    _functional = "pixel_unshuffle"
    _passes = _shown = ("downscale_factor",)

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor


class ChannelShuffle(FunctionalModule):
    """Interleaves the channels of `groups` groups. torch keeps it in nn/modules/channelshuffle.py;
    it sits here beside its pixel cousins."""
    __constants__ = ["groups"]
    _functional = "channel_shuffle"
    _passes = _shown = ("groups",)

    def __init__(self, groups):
        super().__init__()
        self.groups = groups
