"""Padding layers. See https://pytorch.org/docs/stable/nn.html#padding-layers"""
from .. import functional as F
from .conv import _ntuple
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]

_pair = _ntuple(2)
_quadruple = _ntuple(4)
_sextuple = _ntuple(6)


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _tuple = None

    def __init__(self, padding, value):
        super().__init__()
        self.value = value
        self.padding = type(self)._tuple(padding)

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with a constant: padding int or (left, right)."""
    _tuple = staticmethod(_pair)


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with a constant: padding int or (left, right, top, bottom)."""
    _tuple = staticmethod(_quadruple)


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with a constant: padding int or a 6-tuple (last dim first)."""
    _tuple = staticmethod(_sextuple)


class _ZeroPadNd:
    """ZeroPad1d/2d/3d: their ConstantPad with value 0, shown without the value."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """Pads the last dim with zeros."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """Pads the last 2 dims with zeros."""


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """Pads the last 3 dims with zeros."""


class _ModePadNd(Module):
    __constants__ = ["padding"]
    _mode = None
    _tuple = None

    def __init__(self, padding):
        super().__init__()
        self.padding = type(self)._tuple(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pads the last dim with its reflection (the edge not repeated)."""
    _mode = "reflect"
    _tuple = staticmethod(_pair)


class ReflectionPad2d(_ModePadNd):
    """Pads the last 2 dims with their reflection."""
    _mode = "reflect"
    _tuple = staticmethod(_quadruple)


class ReflectionPad3d(_ModePadNd):
    """Pads the last 3 dims with their reflection."""
    _mode = "reflect"
    _tuple = staticmethod(_sextuple)


class ReplicationPad1d(_ModePadNd):
    """Pads the last dim by repeating its edge values."""
    _mode = "replicate"
    _tuple = staticmethod(_pair)


class ReplicationPad2d(_ModePadNd):
    """Pads the last 2 dims by repeating their edge values."""
    _mode = "replicate"
    _tuple = staticmethod(_quadruple)


class ReplicationPad3d(_ModePadNd):
    """Pads the last 3 dims by repeating their edge values."""
    _mode = "replicate"
    _tuple = staticmethod(_sextuple)


class _CircularPadNd(_ModePadNd):
    _mode = "circular"
    _dims = 1

    def forward(self, input):
        d = self._dims
        if input.dim() not in (d + 1, d + 2):
            raise ValueError(f"expected {d + 1}D or {d + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pads the last dim circularly (wrapping around)."""
    _tuple = staticmethod(_pair)
    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Pads the last 2 dims circularly (wrapping around)."""
    _tuple = staticmethod(_quadruple)
    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last 3 dims circularly (wrapping around)."""
    _tuple = staticmethod(_sextuple)
    _dims = 3
