"""Identity, Linear, Bilinear, LazyLinear. See https://pytorch.org/docs/stable/nn.html#linear-layers

Construction allocates the parameters; reset_parameters() draws their initial values
(torch's split, so re-initialising is one call). The draws, and their order, are torch's."""
import math

from ..._ops.creation import empty
from .. import functional as F
from .. import init
from ...autograd import no_grad
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]

# kaiming_uniform_ with a = sqrt(5) gives weights in U(-1/sqrt(fan_in), 1/sqrt(fan_in))
_KAIMING_A = math.sqrt(5)


def _add_weight_and_bias(module, weight_shape, bias, factory):
    """Registers an uninitialized-valued `weight` of weight_shape and, if `bias`, a (weight_shape[0],) bias
    (else bias is registered as None). Values come later, from reset_parameters()."""
    module.weight = Parameter(empty(weight_shape, **factory))
    if not bias:
        module.register_parameter("bias", None)
        return
    module.bias = Parameter(empty(weight_shape[0], **factory))


def _inverse_sqrt_fan_in(weight):
    """1 / sqrt(fan_in) of a weight, or 0 when it has no inputs."""
    fan_in = init._calculate_fan_in_and_fan_out(weight)[0]
    if fan_in <= 0:
        return 0
    return 1 / math.sqrt(fan_in)


class Identity(Module):
    """Returns its input; accepts (and ignores) any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x A^T + b with weight A of shape (out_features, in_features)."""
    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _add_weight_and_bias(self, (out_features, in_features), bias, dict(device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """weight ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) through kaiming_uniform_; the bias the same range."""
        init.kaiming_uniform_(self.weight, a=_KAIMING_A)
        if self.bias is None:
            return
        bound = _inverse_sqrt_fan_in(self.weight)
        init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        has_bias = self.bias is not None
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={has_bias}"


class NonDynamicallyQuantizableLinear(Linear):
    """torch's Linear subclass used inside MultiheadAttention (identical here)."""


class Bilinear(Module):
    """y = x1^T A x2 + b with weight A of shape (out_features, in1_features, in2_features)."""
    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        shape = (out_features, in1_features, in2_features)
        _add_weight_and_bias(self, shape, bias, dict(device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """weight, then bias ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.size(1))
        for param in (self.weight, self.bias):
            if param is not None:
                init.uniform_(param, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        sizes = f"in1_features={self.in1_features}, in2_features={self.in2_features}"
        return f"{sizes}, out_features={self.out_features}, bias={self.bias is not None}"


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is inferred from the first input (then it becomes a Linear).
    See https://pytorch.org/docs/stable/generated/torch.nn.LazyLinear.html"""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)  # a bias-less 0x0 Linear; both parameters are replaced below
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        """Linear's draws, once the parameters have shapes (a no-op while they are lazy)."""
        if self.in_features == 0 or self.has_uninitialized_params():
            return
        super().reset_parameters()

    def initialize_parameters(self, input):
        """in_features = input.shape[-1]: give weight (and bias) their shapes, then draw their values."""
        if not self.has_uninitialized_params():
            return
        with no_grad():
            self.in_features = input.shape[-1]
            weight_shape = (self.out_features, self.in_features)
            self.weight.materialize(weight_shape)
            if self.bias is not None:
                self.bias.materialize(weight_shape[:1])
            self.reset_parameters()
