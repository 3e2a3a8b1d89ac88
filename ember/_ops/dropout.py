"""Dropout: dropout, dropout1d/2d/3d (channel-wise), alpha_dropout, feature_alpha_dropout with
torch.nn.functional's signatures, and torch.dropout/feature_dropout/alpha_dropout/
feature_alpha_dropout (+ in-place forms).

Semantics as torch's CPU path: p == 0, eval mode or an empty input return the input itself;
p == 1 multiplies by zero; otherwise each element (or channel) is kept with probability
1 - p and scaled by 1 / (1 - p) (alpha dropout: an affine map that keeps SELU's mean and
variance). The mask is one float32 uniform draw from ember's default generator and a
compare; the node keeps the boolean mask, not a float copy.
"""
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op, assign_result, check_inplace, check_overlap, install
from .random import dropout_keep

_state = grad_mode._state
_make = Tensor._make
_SELU_NEG = 1.7580993408473766  # -SELU(-inf) = scale * alpha


class _Dropout(Op):
    """out = x * keep * scale (+ shift where dropped/kept for alpha dropout); keep is a boolean
    mask that broadcasts against x (per element, or per channel for feature dropout)."""
    _name = "MulBackward0"

    @staticmethod
    def forward(ctx, x, keep, scale, shift):
        ctx.keep = keep
        ctx.scale = scale
        out = np.multiply(x, keep, dtype=x.dtype)
        out *= np.asarray(scale, dtype=x.dtype)
        if shift is not None:
            out += shift.astype(x.dtype, copy=False)
        return out

    def backward(ctx, grad):
        noise = ctx.keep * np.asarray(ctx.scale, dtype=grad._data.dtype)
        return grad * _make(noise.astype(grad._data.dtype, copy=False))


class _DropoutAdd(_Dropout):
    _name = "AddBackward0"


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise_shape(input, feature, batched):
    shape = input._data.shape
    if not feature:
        return shape
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    lead = 2 if batched else 1
    return shape[:lead] + (1,) * (len(shape) - lead)


def _dropout_impl(input, p, train, inplace, feature=False, alpha=False, batched=True):
    """torch's _dropout_impl: the one routine behind every dropout variant."""
    if not isinstance(input, Tensor):
        raise TypeError(f"dropout(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    _check_p(p)
    if p == 0 or not train or input._data.size == 0:
        return input
    if p == 1:
        zero = _make(np.zeros((), dtype=input._data.dtype), input._dtype)
        return input.mul_(zero) if inplace else input * zero
    shape = _noise_shape(input, feature, batched)
    if input._dtype.category != D.FLOAT:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{D.SCALAR_NAMES[input._dtype]}")
    keep = dropout_keep(input, shape if feature else None)(p)
    if alpha:
        # torch: b = (noise - 1) * (alpha * a) + alpha * a * p, then input * (noise * a) + b, each
        # step rounded to the input's dtype
        a = 1.0 / math.sqrt((_SELU_NEG * _SELU_NEG * p + 1) * (1 - p))
        dt = input._data.dtype
        shift = (keep.astype(dt) - dt.type(1)) * dt.type(_SELU_NEG * a) + dt.type(_SELU_NEG * a * p)
        r = _DropoutAdd.apply(input, keep=keep, scale=a, shift=shift)
    else:
        dt = input._data.dtype
        r = _Dropout.apply(input, keep=keep, scale=dt.type(1) / dt.type(1 - p), shift=None)  # noise.div_(1 - p)
    if inplace:
        check_inplace(input)
        check_overlap(input, ())  # after the draw, as torch (Note [Expanded self])
        return assign_result(input, r, "dropout_")
    return r


# ---- torch.nn.functional ---------------------------------------------------------------------

def dropout(input, p=0.5, training=True, inplace=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.dropout.html"""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.alpha_dropout.html"""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.feature_alpha_dropout.html"""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or unbatched (C, L) inputs."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout_impl(input, p, training, inplace, feature=True, batched=inp_dim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) inputs (3-D inputs are read as (N, C, L), as torch)."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated and will result in "
                      "an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if inp_dim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, feature=True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {inp_dim}-D input to dropout3d, which is deprecated and will result in "
                      "an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, feature=True, batched=inp_dim == 5)


FUNCTIONAL = ["dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d"]


# ---- torch.* names: torch.dropout(input, p, train) and friends -------------------------------

def _torch_variant(name, feature, alpha, inplace):
    def fn(input, p, train):
        return _dropout_impl(input, p, train, inplace, feature=feature, alpha=alpha)
    fn.__name__ = fn.__qualname__ = name + ("_" if inplace else "")
    return fn


for _name, _feature, _alpha in (("dropout", False, False), ("feature_dropout", True, False),
                                ("alpha_dropout", False, True), ("feature_alpha_dropout", True, True)):
    install(_torch_variant(_name, _feature, _alpha, False), _name, method=False)
    install(_torch_variant(_name, _feature, _alpha, True), _name + "_", method=False)
del _name, _feature, _alpha
