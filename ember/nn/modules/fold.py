"""Fold and Unfold (col2im / im2col). See https://pytorch.org/docs/stable/generated/torch.nn.Unfold.html

Both store the sliding-window geometry as given (ints or tuples) and pass it, with Fold's output_size
first, to the F function of the same name."""
from ._options import FunctionalModule

__all__ = ["Fold", "Unfold"]

_WINDOW = ("kernel_size", "dilation", "padding", "stride")


class Fold(FunctionalModule):
    """Sums sliding-block columns (N, C*prod(kernel), L) back into an (N, C, *output_size) tensor."""
    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]
    _functional = "fold"
    _passes = _shown = ("output_size",) + _WINDOW

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride


class Unfold(FunctionalModule):
    """Extracts sliding blocks of (N, C, H, W) input as columns (N, C*prod(kernel), L)."""
    __constants__ = ["kernel_size", "dilation", "padding", "stride"]
    _functional = "unfold"
    _passes = _shown = _WINDOW

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride
