"""Pooling layers. See https://pytorch.org/docs/stable/nn.html#pooling-layers

Each layer stores its settings as attributes and hands them by name to its function in ember.nn.functional: for
the layers built on _Pooling, `__constants__` lists exactly those settings (the functional's keyword names) and
`_shown` the ones extra_repr prints.
"""
from ..._ops.pool import _ntuple as as_ntuple
from .. import functional as F
from ._options import OptionsModule

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AdaptiveMaxPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _Pooling(OptionsModule):
    """Common base: settings stored in one call (_keep), the functional called with them, extra_repr listing
    `_shown`."""
    _functional = None  # the name of the function in ember.nn.functional
    _shown = ("kernel_size", "stride", "padding")

    def _settings(self):
        return {name: getattr(self, name) for name in self.__constants__}

    def forward(self, input):
        return getattr(F, self._functional)(input, **self._settings())


# ---- windows of the input: max, average, power-average -------------------------------------------

class _MaxPoolNd(_Pooling):
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"]
    _shown = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self._keep(kernel_size=kernel_size, stride=kernel_size if stride is None else stride, padding=padding,
                     dilation=dilation, return_indices=return_indices, ceil_mode=ceil_mode)


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L) or (C, L) input."""
    _functional = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W) or (C, H, W) input."""
    _functional = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of (N, C, D, H, W) or (C, D, H, W) input."""
    _functional = "max_pool3d"


class _AvgPoolNd(_Pooling):
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]


class AvgPool1d(_AvgPoolNd):
    """Average over sliding windows of (N, C, L) or (C, L) input; sizes kept as 1-tuples."""
    _functional = "avg_pool1d"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self._keep(kernel_size=as_ntuple(kernel_size, 1),
                     stride=as_ntuple(kernel_size if stride is None else stride, 1), padding=as_ntuple(padding, 1),
                     ceil_mode=ceil_mode, count_include_pad=count_include_pad)


class _OverridableAvgPool(_AvgPoolNd):
    """AvgPool2d/3d: sizes kept as given, and an optional divisor in place of the window's element count."""
    __constants__ = _AvgPoolNd.__constants__ + ["divisor_override"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self._keep(kernel_size=kernel_size, stride=kernel_size if stride is None else stride, padding=padding,
                     ceil_mode=ceil_mode, count_include_pad=count_include_pad, divisor_override=divisor_override)


class AvgPool2d(_OverridableAvgPool):
    """Average over sliding windows of (N, C, H, W) or (C, H, W) input."""
    _functional = "avg_pool2d"


class AvgPool3d(_OverridableAvgPool):
    """Average over sliding windows of (N, C, D, H, W) or (C, D, H, W) input."""
    _functional = "avg_pool3d"


class _LPPoolNd(_Pooling):
    """Power-average pooling: (sum over the window of x^p)^(1/p), p = norm_type."""
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]
    _shown = ("norm_type", "kernel_size", "stride", "ceil_mode")

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self._keep(norm_type=norm_type, kernel_size=kernel_size, stride=stride, ceil_mode=ceil_mode)

    def _settings(self):
        settings = super()._settings()
        settings["norm_type"] = float(self.norm_type)
        return settings


class LPPool1d(_LPPoolNd):
    _functional = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    _functional = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    _functional = "lp_pool3d"


# ---- to a fixed output size ------------------------------------------------------------------------

class _AdaptiveMaxPoolNd(_Pooling):
    __constants__ = ["output_size", "return_indices"]
    _shown = ("output_size",)

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self._keep(output_size=output_size, return_indices=return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output length."""
    _functional = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output size (None keeps that input size)."""
    _functional = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output size (None keeps that input size)."""
    _functional = "adaptive_max_pool3d"


class _AdaptiveAvgPoolNd(_Pooling):
    __constants__ = ["output_size"]
    _shown = ("output_size",)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length."""
    _functional = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output size (None keeps that input size)."""
    _functional = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output size (None keeps that input size)."""
    _functional = "adaptive_avg_pool3d"


class _FractionalMaxPoolNd(_Pooling):
    """Max over pseudo-random windows sized to reach output_size (or input size times output_ratio);
    _random_samples, when given, fixes the windows and is kept as a buffer, as in torch."""
    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]
    _shown = ()
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        if self._nd == 3:  # only torch's 3-d layer checks the kernel here
            self._check_kernel(kernel_size)
        self._keep(kernel_size=as_ntuple(kernel_size, self._nd), return_indices=return_indices)
        self.register_buffer("_random_samples", _random_samples)
        self._keep(output_size=self._optional_tuple(output_size), output_ratio=self._optional_tuple(output_ratio))
        self._check_target(output_size, output_ratio)

    def _optional_tuple(self, value):
        return None if value is None else as_ntuple(value, self._nd)

    @staticmethod
    def _check_kernel(kernel_size):
        if isinstance(kernel_size, int):
            positive = kernel_size > 0
        else:
            positive = not isinstance(kernel_size, (tuple, list)) or all(k > 0 for k in kernel_size)
        if not positive:
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")

    def _check_target(self, output_size, output_ratio):
        """Exactly one of output_size and output_ratio, a ratio strictly inside (0, 1)."""
        if (output_size is None) == (output_ratio is None):
            if output_size is None:
                raise ValueError(f"{type(self).__name__} requires specifying either an output size, or a pooling "
                                 "ratio")
            raise ValueError("only one of output_size and output_ratio may be specified")
        ratio = self.output_ratio
        if ratio is not None and not all(0 < ratio[d] < 1 for d in range(self._nd)):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return getattr(F, self._functional)(input, **self._settings(), _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """See https://pytorch.org/docs/stable/generated/torch.nn.FractionalMaxPool2d.html"""
    _functional = "fractional_max_pool2d"
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """See https://pytorch.org/docs/stable/generated/torch.nn.FractionalMaxPool3d.html"""
    _functional = "fractional_max_pool3d"
    _nd = 3


# ---- the partial inverse of max pooling -------------------------------------------------------------

class _MaxUnpoolNd(_Pooling):
    """Values placed at the indices a MaxPool returned, zeros elsewhere; sizes kept as _nd-tuples."""
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        nd = self._nd
        self._keep(kernel_size=as_ntuple(kernel_size, nd),
                     stride=as_ntuple(kernel_size if stride is None else stride, nd), padding=as_ntuple(padding, nd))

    def forward(self, input, indices, output_size=None):
        return getattr(F, self._functional)(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    _functional = "max_unpool1d"
    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    _functional = "max_unpool2d"
    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    _functional = "max_unpool3d"
    _nd = 3
