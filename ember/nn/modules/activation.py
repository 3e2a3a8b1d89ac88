"""Activation modules: options held by the module, the math in ember.nn.functional
(declared in ember/_ops/activation.py). See https://pytorch.org/docs/stable/nn.html#non-linear-activations-weighted-sum-nonlinearity

Almost every class here is a declaration: which F function its forward calls (`_functional`), which of
its attributes follow the input in that call (`_passes` positionally, `_keywords` by name, as torch
writes the call), and which its repr shows (`_shown`, and whether `inplace` is mentioned, the rule in
_options.with_inplace). MultiheadAttention, which torch lists among the activations, is defined in
attention.py and re-exported here."""
import warnings

from ..._ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._options import FunctionalModule
from .attention import MultiheadAttention  # torch lists it among the activations

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU", "Mish",
           "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus",
           "Softshrink", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax",
           "MultiheadAttention"]


# ---- no options -------------------------------------------------------------------------------------------

class Sigmoid(FunctionalModule):
    _functional = "sigmoid"


class Tanh(FunctionalModule):
    _functional = "tanh"


class LogSigmoid(FunctionalModule):
    _functional = "logsigmoid"


class Softsign(FunctionalModule):
    _functional = "softsign"


class Tanhshrink(FunctionalModule):
    _functional = "tanhshrink"


# ---- only `inplace` ---------------------------------------------------------------------------------------

class _InplaceActivation(FunctionalModule):
    """The activations whose one option is `inplace`; the repr says inplace=True when it is set."""
    __constants__ = ["inplace"]
    _passes = ("inplace",)
    _shows_inplace = True

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class ReLU(_InplaceActivation):
    _functional = "relu"
    _passes = ()
    _keywords = ("inplace",)  # torch passes it by name to these three


class SiLU(_InplaceActivation):
    _functional = "silu"
    _passes = ()
    _keywords = ("inplace",)


class Mish(_InplaceActivation):
    _functional = "mish"
    _passes = ()
    _keywords = ("inplace",)


class SELU(_InplaceActivation):
    _functional = "selu"


class Hardsigmoid(_InplaceActivation):
    _functional = "hardsigmoid"
    _shows_inplace = False  # torch's Hardsigmoid and Hardswish have no extra_repr


class Hardswish(_InplaceActivation):
    _functional = "hardswish"
    _shows_inplace = False


# ---- options, then `inplace` ------------------------------------------------------------------------------

class Threshold(FunctionalModule):
    __constants__ = ["threshold", "value", "inplace"]
    _functional = "threshold"
    _passes = ("threshold", "value", "inplace")
    _shown = ("threshold", "value")
    _shows_inplace = True

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace


class RReLU(FunctionalModule):
    __constants__ = ["lower", "upper", "inplace"]
    _functional = "rrelu"
    _passes = ("lower", "upper", "training", "inplace")
    _shown = ("lower", "upper")
    _shows_inplace = True

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace


def _renamed_keyword(old, new, value, fallback):
    """Hardtanh's deprecated min_value/max_value: `value` wins (with a FutureWarning) when given."""
    if value is None:
        return fallback
    warnings.warn(f"keyword argument `{old}` is deprecated and renamed to `{new}`", FutureWarning, stacklevel=3)
    return value


class Hardtanh(FunctionalModule):
    __constants__ = ["min_val", "max_val", "inplace"]
    _functional = "hardtanh"
    _passes = ("min_val", "max_val", "inplace")
    _shown = ("min_val", "max_val")
    _shows_inplace = True

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        self.min_val = _renamed_keyword("min_value", "min_val", min_value, min_val)
        self.max_val = _renamed_keyword("max_value", "max_val", max_value, max_val)
        self.inplace = inplace
        if self.max_val <= self.min_val:  # (so a NaN bound passes, as in torch)
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})")


class ReLU6(Hardtanh):
    """Hardtanh(0, 6); its repr shows only the inplace rule."""
    _shown = ()

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)


class _ScaledNegative(FunctionalModule):
    """ELU and CELU: `alpha` scales the negative part."""
    __constants__ = ["alpha", "inplace"]
    _passes = ("alpha", "inplace")
    _shown = ("alpha",)
    _shows_inplace = True

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace


class ELU(_ScaledNegative):
    _functional = "elu"


class CELU(_ScaledNegative):
    _functional = "celu"


class LeakyReLU(FunctionalModule):
    __constants__ = ["inplace", "negative_slope"]
    _functional = "leaky_relu"
    _passes = ("negative_slope", "inplace")
    _shown = ("negative_slope",)
    _shows_inplace = True

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace


# ---- other options ----------------------------------------------------------------------------------------

class GLU(FunctionalModule):
    __constants__ = ["dim"]
    _functional = "glu"
    _passes = _shown = ("dim",)

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim


class GELU(FunctionalModule):
    __constants__ = ["approximate"]
    _functional = "gelu"
    _keywords = ("approximate",)

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(FunctionalModule):
    __constants__ = ["beta", "threshold"]
    _functional = "softplus"
    _passes = _shown = ("beta", "threshold")

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold


class _Shrink(FunctionalModule):
    """Hardshrink and Softshrink: zero inside [-lambd, lambd]. The repr is the bare lambd."""
    __constants__ = ["lambd"]
    _passes = ("lambd",)

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd


class Hardshrink(_Shrink):
    _functional = "hardshrink"

    def extra_repr(self):
        return format(self.lambd)  # torch formats lambd here and str()s it in Softshrink: a 0-d tensor differs


class Softshrink(_Shrink):
    _functional = "softshrink"

    def extra_repr(self):
        return str(self.lambd)


class PReLU(FunctionalModule):
    """max(0, x) + weight * min(0, x) with a learnable weight (one, or one per channel)."""
    __constants__ = ["num_parameters"]
    _functional = "prelu"
    _passes = ("weight",)
    _shown = ("num_parameters",)

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters  # set before Module.__init__, as torch does
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """weight to the constant `init`."""
        init.constant_(self.weight, self.init)


# ---- softmax family ---------------------------------------------------------------------------------------

class _AlongDim(FunctionalModule):
    """Softmax, Softmin, LogSoftmax: normalize along `dim` (None picks torch's legacy implicit dim, with a
    warning pointed at the caller of the module)."""
    __constants__ = ["dim"]
    _shown = ("dim",)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):  # pickled before `dim` existed
            self.dim = None

    def forward(self, input):
        return getattr(F, self._functional)(input, self.dim, _stacklevel=5)


class Softmin(_AlongDim):
    _functional = "softmin"


class Softmax(_AlongDim):
    _functional = "softmax"


class LogSoftmax(_AlongDim):
    _functional = "log_softmax"


class Softmax2d(FunctionalModule):
    """Softmax over the channel dim of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)
