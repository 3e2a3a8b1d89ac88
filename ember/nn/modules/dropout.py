"""Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout: random zeroing in training
mode, the identity in eval mode. See https://pytorch.org/docs/stable/nn.html#dropout-layers

Each class names the F function it calls; they share the constructor, its probability check and the repr."""
from ._options import FunctionalModule

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


def _check_probability(p):
    """Refuse p outside [0, 1] (NaN is let through, as in torch)."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


class _Dropout(FunctionalModule):
    """The common part: p and inplace, both always shown in the repr."""
    __constants__ = ["p", "inplace"]
    _shown = ("p", "inplace")
    _passes = ("p", "training", "inplace")

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        _check_probability(p)
        self.p = p
        self.inplace = inplace


class Dropout(_Dropout):
    """Zeroes elements with probability p and scales the rest by 1 / (1 - p)."""
    _functional = "dropout"


class Dropout1d(_Dropout):
    """Zeroes whole channels of (N, C, L) or (C, L) inputs."""
    _functional = "dropout1d"


class Dropout2d(_Dropout):
    """Zeroes whole channels of (N, C, H, W) inputs."""
    _functional = "dropout2d"


class Dropout3d(_Dropout):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _functional = "dropout3d"


class AlphaDropout(_Dropout):
    """Dropout that keeps SELU's self-normalizing mean and variance. Never in place: torch accepts
    `inplace` here but does not pass it on."""
    _functional = "alpha_dropout"
    _passes = ("p", "training")


class FeatureAlphaDropout(_Dropout):
    """Alpha dropout of whole channels (like AlphaDropout, `inplace` is stored only)."""
    _functional = "feature_alpha_dropout"
    _passes = ("p", "training")
