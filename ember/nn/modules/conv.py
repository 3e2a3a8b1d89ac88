"""Conv1d/2d/3d and ConvTranspose1d/2d/3d. See https://pytorch.org/docs/stable/nn.html#convolution-layers

Construction allocates the parameters; reset_parameters() draws their initial values
(kaiming_uniform_ with a=sqrt(5), bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as torch).
"""
import math

from ..._ops.creation import empty
from ..._ops.pool import _ntuple as as_ntuple
from .. import functional as F
from .. import init
from ...autograd import no_grad
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}  # a set, as torch: an unhashable mode is a TypeError


def _ntuple(n):
    """torch.nn.modules.utils' _single/_pair/...: any iterable becomes the tuple of its items (a dict: its keys)."""
    return lambda x: as_ntuple(x, n)


_single = _ntuple(1)
_pair = _ntuple(2)
_triple = _ntuple(3)


def _reverse_repeat_tuple(t, n):
    """(a, b) -> (b, b, a, a) for n=2: module padding in F.pad's last-dim-first order."""
    return tuple(x for x in reversed(t) for _ in range(n))


class _ConvNd(Module):
    """Shared state of the convolution layers (torch's _ConvNd)."""
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'same', 'valid'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError("padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._padding_for_pad(kernel_size, dilation, padding)
        if transposed:
            shape = (in_channels, out_channels // groups) + tuple(kernel_size)
        else:
            shape = (out_channels, in_channels // groups) + tuple(kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    @staticmethod
    def _padding_for_pad(kernel_size, dilation, padding):
        """The module's padding as F.pad's list (last dim first, lo then hi); 'same' splits the
        total d*(k-1) with the extra element on the right."""
        if not isinstance(padding, str):
            return _reverse_repeat_tuple(padding, 2)
        pads = [0, 0] * len(kernel_size)
        if padding == "same":
            for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                total = d * (k - 1)
                pads[2 * i] = total // 2
                pads[2 * i + 1] = total - total // 2
        return pads

    def reset_parameters(self):
        """weight ~ kaiming_uniform_(a=sqrt(5)); bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if not isinstance(self.padding, str) and self.padding != (0,) * len(self.padding) or \
                isinstance(self.padding, str):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _nd = 2
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        t = _ntuple(self._nd)
        padding = padding if isinstance(padding, str) else t(padding)
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), padding, t(dilation), False,
                         t(0), groups, bias, padding_mode, device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        fn = getattr(F, self._fn)
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(padded, weight, bias, self.stride, (0,) * self._nd, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) or (C, L) input."""
    _nd = 1
    _fn = "conv1d"


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) or (C, H, W) input."""
    _nd = 2
    _fn = "conv2d"


class Conv3d(_Conv):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W) input."""
    _nd = 3
    _fn = "conv3d"


class _ConvTransposeNd(_ConvNd):
    _nd = 2
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        t = _ntuple(self._nd)
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), t(padding), t(dilation), True,
                         t(output_padding), groups, bias, padding_mode, device=device, dtype=dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        """The output_padding that makes the output spatial size equal output_size."""
        if output_size is None:
            return _single(self.output_padding)
        non_spatial = 2 if input.dim() == num_spatial_dims + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + num_spatial_dims:
            output_size = output_size[non_spatial:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {non_spatial + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        lows, highs = [], []
        for d in range(num_spatial_dims):
            dil = 1 if dilation is None else dilation[d]
            low = ((input.size(d + non_spatial) - 1) * stride[d] - 2 * padding[d] + dil * (kernel_size[d] - 1) + 1)
            lows.append(low)
            highs.append(low + stride[d] - 1)
        for size, low, high in zip(output_size, lows, highs):
            if not (low <= size <= high):
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {lows} to "
                                 f"{highs} (for an input of {input.size()[2:]})")
        return [size - low for size, low in zip(output_size, lows)]

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size,
                                              self._nd, self.dilation)
        return getattr(F, self._fn)(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                    self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution (the gradient of Conv1d with respect to its input)."""
    _nd = 1
    _fn = "conv_transpose1d"


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution (the gradient of Conv2d with respect to its input)."""
    _nd = 2
    _fn = "conv_transpose2d"


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution (the gradient of Conv3d with respect to its input)."""
    _nd = 3
    _fn = "conv_transpose3d"


# ---- lazy convolutions: in_channels inferred from the first input ----------------------------

class _LazyConvXdMixin(LazyModuleMixin):
    """Shared by the Lazy(Transpose)Conv classes: infer in_channels, materialize, reset."""

    def _lazy_setup(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        unbatched = self._nd + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == unbatched + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups) + tuple(self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups) + tuple(self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(cls, doc):
    class LazyConv(_LazyConvXdMixin, cls):
        __doc__ = doc
        cls_to_become = cls

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
            self._lazy_setup(out_channels, bias, device, dtype)
    LazyConv.__name__ = LazyConv.__qualname__ = "Lazy" + cls.__name__
    return LazyConv


def _lazy_conv_transpose(cls, doc):
    class LazyConvTranspose(_LazyConvXdMixin, cls):
        __doc__ = doc
        cls_to_become = cls

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                     dilation=1, padding_mode="zeros", device=None, dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                             padding_mode)
            self._lazy_setup(out_channels, bias, device, dtype)
    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = "Lazy" + cls.__name__
    return LazyConvTranspose


_LAZY_DOC = "{} whose in_channels is inferred from the first input (then it becomes a {}). See torch.nn.Lazy{}."
LazyConv1d = _lazy_conv(Conv1d, _LAZY_DOC.format("Conv1d", "Conv1d", "Conv1d"))
LazyConv2d = _lazy_conv(Conv2d, _LAZY_DOC.format("Conv2d", "Conv2d", "Conv2d"))
LazyConv3d = _lazy_conv(Conv3d, _LAZY_DOC.format("Conv3d", "Conv3d", "Conv3d"))
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d, _LAZY_DOC.format(*["ConvTranspose1d"] * 3))
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d, _LAZY_DOC.format(*["ConvTranspose2d"] * 3))
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d, _LAZY_DOC.format(*["ConvTranspose3d"] * 3))
