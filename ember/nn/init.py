"""nn.init: in-place initialisers for parameters, all run under no_grad.

See https://pytorch.org/docs/stable/nn.init.html. Random ones take `generator=` like torch and
draw exactly what torch draws (same sampling calls, same order), so seeded models agree.
"""
import math
import warnings

from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]

# (names, gain) for every nonlinearity whose gain is a constant; leaky_relu depends on its slope
_CONSTANT_GAINS = (
    (("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
      "sigmoid"), 1),
    (("tanh",), 5.0 / 3),
    (("relu",), math.sqrt(2.0)),
    (("selu",), 3.0 / 4),  # torch's empirical value
)

_FAN_MODES = ["fan_in", "fan_out"]  # a list: error messages print it as torch does


def _untracked(method, *args, **kwargs):
    """method(*args, **kwargs) outside autograd: initialisers overwrite leaves that require grad."""
    with no_grad():
        return method(*args, **kwargs)


# ---- gains and fans -------------------------------------------------------------------------

def _leaky_relu_slope(param):
    if param is None:
        return 0.01
    if isinstance(param, float) or (isinstance(param, int) and not isinstance(param, bool)):
        return param
    raise ValueError(f"negative_slope {param} not a valid number")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (e.g. sqrt(2) for relu, 5/3 for tanh)."""
    if nonlinearity == "leaky_relu":
        return math.sqrt(2.0 / (1 + _leaky_relu_slope(param) ** 2))
    for names, gain in _CONSTANT_GAINS:
        if nonlinearity in names:
            return gain
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out): input and output channels (dims 1 and 0), each times the receptive
    field, the product of the remaining dims."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    field = math.prod(tensor.shape[2:])
    return tensor.size(1) * field, tensor.size(0) * field


def _calculate_correct_fan(tensor, mode):
    """fan_in or fan_out, as mode (either case) names."""
    mode = mode.lower()
    if mode not in _FAN_MODES:
        raise ValueError(f"Mode {mode} not supported, please use one of {_FAN_MODES}")
    return _calculate_fan_in_and_fan_out(tensor)[_FAN_MODES.index(mode)]


# ---- plain fills ----------------------------------------------------------------------------

def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    return _untracked(tensor.uniform_, a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    return _untracked(tensor.normal_, mean, std, generator=generator)


def constant_(tensor, val):
    """Fill with val."""
    return _untracked(tensor.fill_, val)


def ones_(tensor):
    return _untracked(tensor.fill_, 1.0)


def zeros_(tensor):
    return _untracked(tensor.zero_)


def eye_(tensor):
    """Fill a 2-D tensor with the identity (ones on the diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .._ops.creation import eye
    _untracked(tensor.copy_, eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor, groups=1):
    """Fill a 3/4/5-D conv weight so the convolution is the identity (per group): each group's
    output channel d copies input channel d at the kernel's centre."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_channels, in_channels = tensor.shape[0], tensor.shape[1]
    if out_channels % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = out_channels // groups
    centre = tuple(k // 2 for k in tensor.shape[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(per_group, in_channels)):
                tensor[(g * per_group + d, d) + centre] = 1
    return tensor


# ---- truncated normal -----------------------------------------------------------------------

def _std_normal_cdf(z):
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) restricted to [a, b], by rejection sampling."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    with no_grad():
        mass_inside = _std_normal_cdf((b - mean) / std) - _std_normal_cdf((a - mean) / std)
        # with enough mass inside, redrawing normals is cheap; otherwise most of them would miss
        sample = _redraw_outside if mass_inside > 0.3 else _uniform_proposals
        sample(tensor, mean, std, a, b, generator)
    return tensor


def _redraw_outside(tensor, mean, std, a, b, generator):
    """Draw normals, then redraw (all at once) those that fell outside [a, b] until none do."""
    from .._ops.creation import empty_like
    tensor.normal_(mean, std, generator=generator)
    while True:
        outside = (tensor < a) | (tensor > b)
        if not outside.any():
            return
        redrawn = empty_like(tensor).normal_(mean, std, generator=generator)
        tensor.copy_(redrawn.where(outside, tensor))


def _uniform_proposals(tensor, mean, std, a, b, generator):
    """Propose x ~ U(a, b) and accept it when log(u) <= log(density(x) / peak density),
    u ~ U(0, 1); rejected places get fresh proposals."""
    from .._ops.creation import empty_like

    def log_density(x):  # of N(mean, std^2), up to a constant
        return ((x - mean) / std) ** 2 * -0.5

    top = log_density(max(a, min(mean, b)))  # the density peaks at the point of [a, b] nearest mean

    def rejected(x):
        return empty_like(tensor).uniform_(generator=generator).log() > log_density(x) - top

    tensor.uniform_(a, b, generator=generator)
    pending = rejected(tensor)
    while pending.any():
        proposal = empty_like(tensor).uniform_(a, b, generator=generator)
        tensor.copy_(proposal.where(pending, tensor))
        pending = pending & rejected(proposal)


# ---- scaled by fan (Glorot & Bengio 2010, He et al. 2015) -----------------------------------

def _xavier_std(tensor, gain):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return gain * math.sqrt(2.0 / (fan_in + fan_out))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    bound = math.sqrt(3.0) * _xavier_std(tensor, gain)
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    return normal_(tensor, 0.0, _xavier_std(tensor, gain), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def _nothing_to_fill(tensor):
    """Kaiming init of a zero-element tensor is a no-op that warns, as in torch."""
    if 0 not in tensor.shape:
        return False
    warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
    return True


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015)."""
    if _nothing_to_fill(tensor):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2) with std = gain / sqrt(fan)."""
    if _nothing_to_fill(tensor):
        return tensor
    return normal_(tensor, 0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


# ---- structured -----------------------------------------------------------------------------

def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian one (Saxe et al., 2013);
    dims after the first are flattened."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    from .. import linalg
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    wide = rows < cols  # QR of the transpose, so that q has orthonormal columns
    with no_grad():
        gaussian = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        q, r = linalg.qr(gaussian.t() if wide else gaussian)
        q = q * r.diagonal().sign()  # makes the decomposition unique, so q is uniformly distributed
        if wide:
            q = q.t()
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std^2) with a fraction `sparsity` of each column set to zero."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .. import randperm
    rows, cols = tensor.shape
    zeros_per_column = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            # torch draws the zeroed rows from the global generator, not from `generator`
            tensor[randperm(rows)[:zeros_per_column], col] = 0
    return tensor


# ---- names from before the trailing underscore ----------------------------------------------

def _deprecated_alias(current):
    """The old name of an initialiser: warns FutureWarning, then calls it."""
    new_name = current.__name__
    old_name = new_name.removesuffix("_")

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return current(*args, **kwargs)
    alias.__name__ = old_name
    alias.__doc__ = f"Deprecated alias of {new_name}."
    return alias


(uniform, normal, constant, eye, dirac, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal, orthogonal,
 sparse) = map(_deprecated_alias, (uniform_, normal_, constant_, eye_, dirac_, xavier_uniform_, xavier_normal_,
                                   kaiming_uniform_, kaiming_normal_, orthogonal_, sparse_))
