"""Conv1d/2d/3d and ConvTranspose1d/2d/3d, and their lazy forms.
See https://pytorch.org/docs/stable/nn.html#convolution-layers

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


def _check_conv_arguments(in_channels, out_channels, stride, padding, groups, padding_mode):
    """torch's constructor checks, in its order: groups, channel divisibility, padding string, padding mode."""
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    for side, channels in (("in", in_channels), ("out", out_channels)):
        if channels % groups:
            raise ValueError(f"{side}_channels must be divisible by groups")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'same', 'valid'}}")
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
    if padding_mode not in _PADDING_MODES:
        raise ValueError("padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got "
                         f"padding_mode='{padding_mode}'")


def _pad_amounts(kernel_size, dilation, padding):
    """The module's padding as F.pad wants it: (lo, hi) per spatial dim, last dim first. A tuple for numeric
    padding; a list for 'valid' (zeros) and 'same' (d*(k-1) in all, the odd element on the high side)."""
    if not isinstance(padding, str):
        return tuple(p for p in reversed(padding) for _ in range(2))
    if padding == "valid":
        return [0] * (2 * len(kernel_size))
    amounts = []
    for d, k in reversed(list(zip(dilation, kernel_size))):
        total = d * (k - 1)
        amounts += [total // 2, total - total // 2]
    return [0] * (2 * len(kernel_size) - len(amounts)) + amounts  # torch leaves dims with no dilation at 0


class _ConvNd(Module):
    """Shared state of the convolution layers (torch's _ConvNd): settings, the weight of shape
    (out, in/groups, *kernel) or, transposed, (in, out/groups, *kernel), and an optional bias."""
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        _check_conv_arguments(in_channels, out_channels, stride, padding, groups, padding_mode)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.transposed, self.output_padding = transposed, output_padding
        self.groups, self.padding_mode = groups, padding_mode
        self._reversed_padding_repeated_twice = _pad_amounts(kernel_size, dilation, padding)
        self.weight = Parameter(empty(self._weight_shape(), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _weight_shape(self):
        leading, grouped = self.out_channels, self.in_channels
        if self.transposed:
            leading, grouped = grouped, leading
        return (leading, grouped // self.groups, *self.kernel_size)

    def reset_parameters(self):
        """weight ~ kaiming_uniform_(a=sqrt(5)); bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (U(0, 0), still drawn,
        when the weight is empty)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is None:
            return
        fan_in = init._calculate_fan_in_and_fan_out(self.weight)[0]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        shown = [f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"]
        for name, default in (("padding", 0), ("dilation", 1), ("output_padding", 0)):
            value = getattr(self, name)
            if value != (default,) * len(value):  # a padding string always differs
                shown.append(f"{name}={value}")
        if self.groups != 1:
            shown.append(f"groups={self.groups}")
        if self.bias is None:
            shown.append("bias=False")
        if self.padding_mode != "zeros":
            shown.append(f"padding_mode={self.padding_mode}")
        return ", ".join(shown)

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("padding_mode", "zeros")  # pickles from before padding modes existed


class _Conv(_ConvNd):
    """Conv1d/2d/3d: sizes given as ints or _nd-tuples; non-zero padding modes pad the input with F.pad first."""
    _nd = 2
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        nd = self._nd
        if not isinstance(padding, str):
            padding = as_ntuple(padding, nd)
        super().__init__(in_channels, out_channels, as_ntuple(kernel_size, nd), as_ntuple(stride, nd), padding,
                         as_ntuple(dilation, nd), False, as_ntuple(0, nd), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        conv = getattr(F, self._fn)
        if self.padding_mode == "zeros":
            return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
        padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        return conv(padded, weight, bias, self.stride, (0,) * self._nd, self.dilation, self.groups)

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
    """ConvTranspose1d/2d/3d: zeros padding only; forward may ask for an output_size, which picks the
    output_padding."""
    _nd = 2
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        self._require_zeros_padding(padding_mode)
        nd = self._nd
        super().__init__(in_channels, out_channels, as_ntuple(kernel_size, nd), as_ntuple(stride, nd),
                         as_ntuple(padding, nd), as_ntuple(dilation, nd), True, as_ntuple(output_padding, nd),
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def _require_zeros_padding(self, padding_mode):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        """The output_padding that makes the output's spatial size output_size (the layer's own when None).
        output_size may also carry the batch and channel sizes in front."""
        if output_size is None:
            return _single(self.output_padding)
        leading = 2 if input.dim() == num_spatial_dims + 2 else 1
        if len(output_size) == leading + num_spatial_dims:
            output_size = output_size[leading:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {leading + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        smallest = []
        for d in range(num_spatial_dims):
            spread = (1 if dilation is None else dilation[d]) * (kernel_size[d] - 1)
            smallest.append((input.size(leading + d) - 1) * stride[d] - 2 * padding[d] + spread + 1)
        largest = [low + s - 1 for low, s in zip(smallest, stride)]
        if any(not low <= size <= high for size, low, high in zip(output_size, smallest, largest)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} to "
                             f"{largest} (for an input of {input.size()[2:]})")
        return [size - low for size, low in zip(output_size, smallest)]

    def forward(self, input, output_size=None):
        self._require_zeros_padding(self.padding_mode)
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
        if self.in_channels and not self.has_uninitialized_params():
            super().reset_parameters()

    def _channels_of(self, input):
        """in_channels read from a batched (dim 1) or unbatched (dim 0) input of the right rank."""
        unbatched = self._nd + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[input.dim() - unbatched]

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._channels_of(input)
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            self.weight.materialize(self._weight_shape())
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


_LAZY_DOC = "{0} whose in_channels is inferred from the first input (then it becomes a {0}). See torch.nn.Lazy{0}."
LazyConv1d = _lazy_conv(Conv1d, _LAZY_DOC.format("Conv1d"))
LazyConv2d = _lazy_conv(Conv2d, _LAZY_DOC.format("Conv2d"))
LazyConv3d = _lazy_conv(Conv3d, _LAZY_DOC.format("Conv3d"))
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d, _LAZY_DOC.format("ConvTranspose1d"))
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d, _LAZY_DOC.format("ConvTranspose2d"))
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d, _LAZY_DOC.format("ConvTranspose3d"))
