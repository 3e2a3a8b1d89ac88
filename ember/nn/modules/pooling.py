"""Pooling layers. See https://pytorch.org/docs/stable/nn.html#pooling-layers"""
from .. import functional as F
from .conv import _pair, _single, _triple
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AdaptiveMaxPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"]
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return getattr(F, self._fn)(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                    ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L) or (C, L) input."""
    _fn = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W) or (C, H, W) input."""
    _fn = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of (N, C, D, H, W) or (C, D, H, W) input."""
    _fn = "max_pool3d"


class _MaxUnpoolNd(Module):
    _fn = None
    _tuple = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        t = type(self)._tuple
        self.kernel_size = t(kernel_size)
        self.stride = t(stride if stride is not None else kernel_size)
        self.padding = t(padding)

    def forward(self, input, indices, output_size=None):
        return getattr(F, self._fn)(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of MaxPool1d: values placed at their indices, zeros elsewhere."""
    _fn = "max_unpool1d"
    _tuple = staticmethod(_single)


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of MaxPool2d: values placed at their indices, zeros elsewhere."""
    _fn = "max_unpool2d"
    _tuple = staticmethod(_pair)


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of MaxPool3d: values placed at their indices, zeros elsewhere."""
    _fn = "max_unpool3d"
    _tuple = staticmethod(_triple)


class AvgPool1d(Module):
    """Average over sliding windows of (N, C, L) or (C, L) input."""
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return getattr(F, self._fn)(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                    self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Average over sliding windows of (N, C, H, W) or (C, H, W) input."""
    _fn = "avg_pool2d"


class AvgPool3d(_AvgPoolNd):
    """Average over sliding windows of (N, C, D, H, W) or (C, D, H, W) input."""
    _fn = "avg_pool3d"


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return getattr(F, self._fn)(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling: (sum over the window of x^p)^(1/p)."""
    _fn = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    """Power-average pooling: (sum over the window of x^p)^(1/p)."""
    _fn = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    """Power-average pooling: (sum over the window of x^p)^(1/p)."""
    _fn = "lp_pool3d"


class _AdaptiveMaxPoolNd(Module):
    __constants__ = ["output_size", "return_indices"]
    _fn = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input):
        return getattr(F, self._fn)(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output length."""
    _fn = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output size (None keeps that input size)."""
    _fn = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output size (None keeps that input size)."""
    _fn = "adaptive_max_pool3d"


class _AdaptiveAvgPoolNd(Module):
    __constants__ = ["output_size"]
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return getattr(F, self._fn)(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length."""
    _fn = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output size (None keeps that input size)."""
    _fn = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output size (None keeps that input size)."""
    _fn = "adaptive_avg_pool3d"


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling (F.fractional_max_pool2d/3d); _random_samples is a buffer as in torch."""
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        t = _pair if self._nd == 2 else _triple
        name = type(self).__name__
        if self._nd == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or (
                isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))):  # torch's 3-d only
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = t(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = t(output_size) if output_size is not None else None
        self.output_ratio = t(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < self.output_ratio[i] < 1 for i in range(self._nd)):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """See https://pytorch.org/docs/stable/generated/torch.nn.FractionalMaxPool2d.html"""
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """See https://pytorch.org/docs/stable/generated/torch.nn.FractionalMaxPool3d.html"""
    _nd = 3
