"""Activations: torch's top-level ops (relu, selu, celu, rrelu, prelu, threshold, hardshrink,
softmax, log_softmax) and the torch.nn.functional forms, listed in FUNCTIONAL for
ember/nn/functional.py to re-export with exactly F's signatures.

Piecewise-linear activations share one backward op, _MaskGrad (grad where a mask holds,
else grad * slope): it is linear in grad, so it is its own derivative and double backward
works without building a comparison graph. Smooth ones write their backward with ember
ops on the saved input, or have a fused backward op (gelu, silu, softplus) with torch's
double-backward formula. The softmax family is in softmax.py.
"""
import math

import numpy as np

from .. import _dtype as D
from .._backend import clamp_between, clamp_min, gelu_numpy as G, maximum, minimum, opmath as _opmath, where
from .._backend import jit
from .._tensor import Tensor, _wrap_dim
from .pointwise import _sigmoid_kernel
from ..autograd import grad_mode
from ._argcheck import _is_real, wrong_type
from ._registry import Op, assign_result, check_inplace, check_overlap, install, namespace
from .softmax import _log_softmax, _softmax, log_softmax, softmax, softmin  # noqa: F401  (FUNCTIONAL, loss.py)

_state = grad_mode._state
_make = Tensor._make
_NAMES = D.SCALAR_NAMES
_SQRT1_2 = math.sqrt(0.5)
_SQRT_2_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946

FUNCTIONAL = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu",
              "celu_", "gelu", "silu", "mish", "hardtanh", "hardtanh_", "hardswish", "hardsigmoid", "softplus",
              "softsign", "softshrink", "hardshrink", "tanhshrink", "threshold", "threshold_", "logsigmoid", "glu",
              "softmax", "log_softmax", "softmin", "prelu", "rrelu", "rrelu_", "sigmoid", "tanh"]


# ---- shared pieces ------------------------------------------------------------------------

def _float_only(input, kernel):
    """torch's NotImplementedError for activations that have float kernels only."""
    if input._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_NAMES[input._dtype]}'")


def _no_grad_needed(t):
    return not (_state.enabled and t._requires_grad)


class _MaskGrad(Op):
    """grad where keep, else grad * slope (0 by default): the backward of every piecewise-linear
    activation. keep is a constant mask computed from src (the saved input or output); src is
    an input only so that the result requires grad exactly when torch's does (its derivative
    is zero). slope is a number, a constant array, or a Tensor (prelu's weight, differentiable)."""
    _name = "ThresholdBackwardBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, grad, src, slope_t, keep, slope):
        ctx.keep = keep
        ctx.slope = slope
        if slope_t is not None:
            ctx.save_for_backward(grad, slope_t)
            slope = slope_t
        if type(slope) is not np.ndarray and slope == 0:
            return _masked(grad, keep)
        return where(keep, grad, (grad * slope).astype(grad.dtype, copy=False))

    def backward(ctx, gg):
        need = ctx.needs_input_grad
        gsrc = gg.new_zeros(gg.shape) if need[1] else None  # torch's derivative for self: zeros_like(grad)
        if not ctx._saved:
            return _MaskGrad.apply(gg, None, None, keep=ctx.keep, slope=ctx.slope), gsrc, None
        grad, slope_t = ctx.saved_tensors
        ggrad = _MaskGrad.apply(gg, None, slope_t, keep=ctx.keep, slope=None) if need[0] else None
        gslope = _MaskGrad.apply(gg * grad, None, None, keep=~ctx.keep, slope=0) if need[2] else None
        return ggrad, gsrc, gslope


def _masked(grad, keep):
    """grad where keep, else 0, on arrays."""
    kernels = _compiled(grad, keep)
    if kernels is not None:
        return kernels.masked(grad, keep)
    r = grad * keep  # ~10x faster than where(); but a masked NaN/inf grad would give NaN
    # where torch gives 0, so those rare cases are redone exactly; the check is a max, which propagates
    # NaN (a third of a sum's time: 0.06 vs 0.20 ms on 786,432 float32)
    if r.size and np.isnan(np.maximum.reduce(r, axis=None)):
        r = where(keep, grad, np.zeros((), grad.dtype))
    return r


_JIT_MIN = 1 << 12  # elements from which the masks take the compiled kernels (ember/_backend/activation_jit.py)


def _compiled(*arrays):
    """The compiled mask kernels (Note [JIT kernels]) when they take these arrays, else None."""
    if arrays[0].size < _JIT_MIN:
        return None
    kernels = jit.load("activation_jit")
    return kernels if kernels is not None and kernels.applies(*arrays) else None


def _mask_grad(grad, src, keep, slope=0):
    return _MaskGrad.apply(grad, src, None, keep=keep, slope=slope)


def _finish(input, r, inplace, name):
    """F's inplace=True: write r into input (torch's `name_`) and return input."""
    if not inplace:
        return r
    check_inplace(input)
    check_overlap(input, ())  # Note [Expanded self]
    return assign_result(input, r, name + "_")


def _apply_in_place(cls, input, name, **params):
    """An op class whose forward writes into its input (the *InPlace classes), as torch's `name`: the checks
    come before the write (_finish checks after its out-of-place result exists)."""
    check_inplace(input)
    check_overlap(input, ())  # Note [Expanded self]
    return assign_result(input, cls.apply(input, **params), name)


def _inplace(fn, name, expanded_ok=False):
    """`name_` variant: writes fn's result into input. expanded_ok: torch's kernel takes an expanded input
    (Note [Expanded self])."""
    def inplace(input, *args, **kwargs):
        check_inplace(input)
        if not expanded_ok:
            check_overlap(input, ())
        return assign_result(input, fn(input, *args, **kwargs), name + "_")
    inplace.__name__ = inplace.__qualname__ = name + "_"
    return inplace


# ---- relu, threshold, hardtanh, leaky_relu -------------------------------------------------

class Relu(Op):
    _name = "ReluBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, into=False):
        if into:  # relu_: into x's own memory, returned (and saved: torch saves relu_'s result) as a new array
            # object over it, so that the saved array is the output's, not the input's; assign_result then
            # finds the result already in place and copies nothing
            out = _relu_kernel(x, out=x)[...]
        else:
            out = _relu_kernel(x)
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        if not _state.enabled:
            kernels = _compiled(grad._data, out._data)
            if kernels is not None:
                return _make(kernels.relu_grad(grad._data, out._data))
        keep = np.empty(out._data.shape, dtype=bool)  # an array also when 0-d (Note [0-d kernels])
        np.less_equal(out._data, 0, out=keep)
        np.logical_not(keep, out=keep)  # as torch: the gradient passes where result > 0 or NaN
        if not _state.enabled:  # first order: the kernel on arrays, no node (Note [Fused norm backward])
            return _make(_masked(grad._data, keep))
        return _mask_grad(grad, out, keep)


def _relu_kernel(x, out=None):
    """max(x, 0) on arrays, NaN and -0.0 kept (ties give x): activation_jit's compiled pass where it takes x, else
    one clip pass (clamp_min)."""
    kernels = _compiled(x)
    if kernels is not None:
        return kernels.relu(x, out=out)
    return clamp_min(x, np.zeros((), x.dtype), out=out)


def _check_relu(input, name="relu"):
    d = input._dtype
    if d is D.bool:
        raise RuntimeError(f"Boolean inputs not supported for {name}")
    if d.category == D.COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")


def _relu(input):
    _check_relu(input)
    return Relu.apply(input)


def _relu_(input):
    _check_relu(input)
    check_inplace(input)
    check_overlap(input, ())  # Note [Expanded self]
    if _no_grad_needed(input):
        _relu_kernel(input._data, out=input._data)
        input._version_counter.value += 1
        return input
    return assign_result(input, Relu.apply(input, into=True), "relu_")


def relu(input, inplace=False):
    return _relu_(input) if inplace else _relu(input)


def relu_(input):
    return _relu_(input)


class Threshold(Op):
    _name = "ThresholdBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, threshold, value):
        ctx.save_for_backward(x)
        ctx.threshold = threshold
        return where(x <= threshold, np.array(value).astype(x.dtype), x)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _mask_grad(grad, x, ~(x._data <= ctx.threshold))


def _check_threshold(input):
    d = input._dtype
    if d is D.bool or d.category == D.COMPLEX:
        raise NotImplementedError(f"\"threshold_cpu\" not implemented for '{_NAMES[d]}'")


def _threshold(input, threshold, value):
    _check_threshold(input)
    return Threshold.apply(input, threshold=threshold, value=value)


class ThresholdInPlace(Threshold):
    """threshold_: torch names its node ThresholdBackward1 (it saves a copy of the input, as the snapshot
    assign_result keeps here: the mask is the input's, and later writes into the result do not matter)."""
    _name = "ThresholdBackward1"


def _threshold_inplace(input, threshold, value):
    _check_threshold(input)
    return ThresholdInPlace.apply(input, threshold=threshold, value=value)


_threshold_ = _inplace(_threshold_inplace, "threshold", expanded_ok=True)


def threshold(input, threshold, value, inplace=False):
    return _threshold_(input, threshold, value) if inplace else _threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _threshold_(input, threshold, value)


# Note [Hardtanh in place]: torch's hardtanh_ (relu6 with inplace=True) saves a clone of its input for
# the backward, so later writes to the result do not invalidate it. The backward reads that clone
# only for the mask lo < x < hi, so in place the forward computes the mask before the input is
# overwritten and saves it (a bool per element instead of a copy: one pass and 3/4 of the memory
# less) with a stand-in for the old input that has its history and no data (_prior), which keeps
# the double backward's graph exactly as the clone would.

class Hardtanh(Op):
    _name = "HardtanhBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, lo, hi, prior=None):
        ctx.bounds = (lo, hi)
        # bound first, so ties return x itself (-0.0 stays -0.0, as torch)
        bounds = np.array(lo).astype(x.dtype), np.array(hi).astype(x.dtype)
        if prior is None:
            ctx.save_for_backward(x)
            return clamp_between(x, *bounds)
        # in place (Note [Hardtanh in place]): the result goes straight into the input's array (assign_result
        # then has nothing to copy) and the mask is read from it
        kernels = _compiled(x)
        if kernels is not None:
            keep = kernels.clamp_keep(x, *bounds)
            ctx.save_for_backward(keep, prior)
            return x
        y = clamp_between(x, *bounds, out=x)
        ctx.save_for_backward(_hardtanh_kept(y, *bounds), prior)
        return y

    def backward(ctx, grad):
        saved = ctx.saved_tensors
        if len(saved) == 2:  # in place: the mask and the old input's stand-in
            keep, prior = saved
            return _mask_grad(grad, prior, keep._data)
        (x,) = saved
        lo, hi = ctx.bounds
        return _mask_grad(grad, x, _hardtanh_keep(x._data, lo, hi))


def _hardtanh_kept(y, lo, hi):
    """_hardtanh_keep from hardtanh's result y: lo < y < hi exactly where lo < x < hi (x at or beyond a bound
    left y at it; NaN stays NaN)."""
    keep = np.greater(y, lo)
    keep &= np.less(y, hi)
    return keep


def _hardtanh_keep(a, lo, hi):
    """Where hardtanh passes the gradient: lo < a < hi, as a bool array (NaN does not pass: torch 2.13's
    kernel tests the open interval)."""
    keep = np.empty(a.shape, dtype=bool)  # an array also when 0-d (Note [0-d kernels])
    np.greater(a, lo, out=keep)
    keep &= np.less(a, hi)
    return keep


def _prior(t):
    """A stand-in for t's value before an in-place op overwrites it, for a backward that reads only
    where t sits in the graph: t's history, a zero-stride array of t's shape and dtype (no memory)."""
    h = _make(np.broadcast_to(np.zeros((), t._data.dtype), t._data.shape), t._dtype)
    h._requires_grad = t._requires_grad
    h._grad_fn = t._grad_fn
    h._output_nr = t._output_nr
    return h


def _check_hardtanh(input, min_val):
    d = input._dtype
    if d is D.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if d is D.uint8 and math.trunc(min_val) < 0:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative lower bound.")
    if d.category == D.COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:  # F.hardtanh's own check (torch's hardtanh_ kernel has none)
        raise ValueError("min_val cannot be greater than max_val")
    return _hardtanh(input, min_val, max_val, inplace)


def _hardtanh(input, min_val, max_val, inplace):
    if min_val.__class__ is not float or max_val.__class__ is not float:  # np.array(None) would clamp to nan
        for pos, arg, v in ((2, "min_val", min_val), (3, "max_val", max_val)):
            if not _is_real(v):
                raise wrong_type("hardtanh_" if inplace else "hardtanh", arg, v, "Number", pos)
    _check_hardtanh(input, min_val)
    if inplace:
        check_inplace(input)
        check_overlap(input, ())  # Note [Expanded self]
        if _no_grad_needed(input):
            a = input._data
            clamp_between(a, np.array(min_val).astype(a.dtype), np.array(max_val).astype(a.dtype), out=a)
            input._version_counter.value += 1
            return input
    prior = _prior(input) if inplace else None  # Note [Hardtanh in place]
    return _finish(input, Hardtanh.apply(input, lo=min_val, hi=max_val, prior=prior), inplace, "hardtanh")


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


class LeakyRelu(Op):
    _name = "LeakyReluBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x)
        ctx.slope = slope
        return where(x > 0, x, x * np.array(slope).astype(x.dtype))

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _mask_grad(grad, x, x._data > 0, ctx.slope)


class LeakyReluInPlace(LeakyRelu):
    """leaky_relu_: written into x, its result saved instead of x (torch's LeakyReluBackward1: the mask
    result > 0 is x > 0 for a slope >= 0; a negative slope is refused at backward, as torch)."""
    _name = "LeakyReluBackward1"

    @staticmethod
    def forward(ctx, x, slope):
        ctx.slope = slope
        np.multiply(x, np.array(slope).astype(x.dtype), out=x, where=~(x > 0))  # (NaN takes the slope branch)
        out = x[...]  # a new array object over x: saved as the output (as Relu's into path)
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors  # first: torch's version check comes before its slope check
        if ctx.slope < 0:
            raise RuntimeError(
                "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
                "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
                "version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting "
                "in-place leakRelu backward calculation with negative slope")
        return _mask_grad(grad, out, out._data > 0, ctx.slope)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if negative_slope.__class__ is not float and not _is_real(negative_slope):  # np.array(None) is nan
        raise wrong_type("leaky_relu_" if inplace else "leaky_relu", "negative_slope", negative_slope, "Number", 2)
    _float_only(input, "leaky_relu_cpu")
    if not inplace:
        return LeakyRelu.apply(input, slope=negative_slope)
    return _apply_in_place(LeakyReluInPlace, input, "leaky_relu_", slope=negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


# ---- shrinkage ------------------------------------------------------------------------------

class Hardshrink(Op):
    _name = "HardshrinkBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, lambd):
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        inner = (x >= -lambd) & (x <= lambd)
        return where(inner, np.zeros((), x.dtype), x)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        a = x._data
        return _mask_grad(grad, x, ~((a >= -ctx.lambd) & (a <= ctx.lambd)))


class Softshrink(Hardshrink):
    _name = "SoftshrinkBackward0"

    @staticmethod
    def forward(ctx, x, lambd):
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        lam = np.array(lambd).astype(x.dtype)
        return where(x > lam, x - lam, where(x < -lam, x + lam, x * 0))  # NaN stays NaN


def hardshrink(input, lambd=0.5):
    _float_only(input, "hardshrink_cpu")
    return Hardshrink.apply(input, lambd=lambd)


def softshrink(input, lambd=0.5):
    _float_only(input, "softshrink_check")
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, {D.finfo(input._dtype).max:g}] for input dtype "
                           f"{_NAMES[input._dtype]}, but found {lambd}")
    return Softshrink.apply(input, lambd=lambd)


def tanhshrink(input):
    return input - input.tanh()


def softsign(input):
    return input / (input.abs() + 1)


# ---- exponential-linear family --------------------------------------------------------------

class Elu(Op):
    """scale * x for x > 0, else scale * alpha * (exp(x * input_scale) - 1) (elu, selu, celu)."""
    _name = "EluBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, alpha, scale, input_scale):
        ctx.save_for_backward(x)
        ctx.coef = (alpha, scale, input_scale)
        w = _opmath(x)
        neg = (alpha * scale) * np.expm1(w * input_scale)
        return where(w > 0, w * scale, neg).astype(x.dtype, copy=False)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        alpha, scale, input_scale = ctx.coef
        # torch's elu_backward takes the exp branch for x <= 0, but its double backward masks
        # with x < 0: at exactly 0 the gradient is a constant multiple of grad
        slope0 = grad * (alpha * scale * input_scale)
        neg = slope0 * (x * input_scale).exp()
        return neg.where(x < 0, slope0.where(x == 0, grad * scale))


class Celu(Elu):
    """celu: elu with input_scale 1 / alpha (torch's CeluBackward0 computes the same elu_backward)."""
    _name = "CeluBackward0"


class EluInPlace(Elu):
    """elu_/selu_ (and celu_ below): the result written into x and saved instead of x, as torch's EluBackward1,
    whose gradient is read from the result r: grad * input_scale * (r + alpha * scale) where r <= 0, grad * scale
    elsewhere; its derivative through r counts where r < 0 (torch's elu_double_backward). A negative alpha is
    refused at backward, after the version check, as torch."""
    _name = "EluBackward1"

    @staticmethod
    def forward(ctx, x, alpha, scale, input_scale):
        ctx.coef = (alpha, scale, input_scale)
        np.copyto(x, Elu.forward(ctx, x, alpha, scale, input_scale))  # (Elu saves x: replaced below)
        out = x[...]  # a new array object over x: saved as the output (as Relu's into path)
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (r,) = ctx.saved_tensors  # first: torch's version check comes before its alpha check
        alpha, scale, input_scale = ctx.coef
        if alpha < 0:
            raise RuntimeError("In-place elu backward calculation is triggered with a negative slope which is not "
                               "supported. This is caused by calling in-place forward function with a negative slope, "
                               "please call out-of-place version instead.")
        # r where r < 0: at r == 0 the value is the same and the derivative 0 (torch's mask there is r < 0). A NaN
        # result takes the linear branch, as torch's float32 kernel (its float64 vector loop takes the other)
        below = r.where(r < 0, 0.0)
        return ((grad * input_scale) * (below + alpha * scale)).where(r <= 0, grad * scale)


class CeluInPlace(EluInPlace):
    _name = "CeluBackward1"


def elu(input, alpha=1.0, inplace=False):
    _float_only(input, "elu_cpu")
    if inplace:
        return _apply_in_place(EluInPlace, input, "elu_", alpha=alpha, scale=1.0, input_scale=1.0)
    return Elu.apply(input, alpha=alpha, scale=1.0, input_scale=1.0)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def _selu(input):
    _float_only(input, "elu_cpu")
    return Elu.apply(input, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)


def _selu_(input):
    _float_only(input, "elu_cpu")
    return _apply_in_place(EluInPlace, input, "selu_", alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)


def selu(input, inplace=False):
    return _selu_(input) if inplace else _selu(input)


def selu_(input):
    return _selu_(input)


def _check_celu(input, alpha):
    _float_only(input, "elu_cpu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")


def _celu(input, alpha=1.0):
    _check_celu(input, alpha)
    return Celu.apply(input, alpha=alpha, scale=1.0, input_scale=1.0 / alpha)


def _celu_(input, alpha=1.0):
    _check_celu(input, alpha)
    return _apply_in_place(CeluInPlace, input, "celu_", alpha=alpha, scale=1.0, input_scale=1.0 / alpha)


def celu(input, alpha=1.0, inplace=False):
    return _celu_(input, alpha) if inplace else _celu(input, alpha)


def celu_(input, alpha=1.0):
    return _celu_(input, alpha)


# ---- smooth gates -----------------------------------------------------------------------------

class Gelu(Op):
    """gelu, both forms as one NumPy kernel each (_backend/gelu_numpy.py: the tanh form without np.tanh)."""
    _name = "GeluBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.save_for_backward(x)
        ctx.tanh = approximate == "tanh"
        return G.gelu(x, ctx.tanh)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _GeluBackward.apply(grad, x, tanh=ctx.tanh)


class _GeluBackward(Op):
    """gelu's backward grad * gelu'(x) as one NumPy kernel (torch's gelu_backward; the erf form's Phi and
    phi from one exp); its own backward (double backward) in ember ops, as torch's."""
    _name = "GeluBackwardBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, grad, x, tanh):
        ctx.save_for_backward(grad, x)
        ctx.tanh = tanh
        return G.gelu_backward(grad, x, tanh)

    def backward(ctx, v):
        grad, x = ctx.saved_tensors
        need = ctx.needs_input_grad
        ggrad = _GeluBackward.apply(v, x, tanh=ctx.tanh) if need[0] else None
        gx = None
        if need[1]:
            gx = v * grad * (_gelu_tanh_second(x) if ctx.tanh else _gelu_erf_second(x))
        return ggrad, gx


def _gelu_erf_second(x):
    """d2/dx2 x Phi(x) = phi(x) (2 - x^2)."""
    x2 = x * x
    return (-0.5 * x2).exp() * _INV_SQRT_2PI * (2 - x2)


def _gelu_tanh_second(x):
    """d2/dx2 x s(x) with s = sigmoid(2u), u = c (x + a x^3): s q (4u' + x (2u'' + 4u'^2 (q - s))), where
    q = 1 - s = sigmoid(-2u) (computed as such: 1 - s cancels for large x)."""
    x2 = x * x
    u2 = x * (2 * _SQRT_2_PI + (2 * _SQRT_2_PI * 0.044715) * x2)
    s = u2.sigmoid()
    q = (-u2).sigmoid()
    du = _SQRT_2_PI * (1 + 3 * 0.044715 * x2)
    ddu = (6 * _SQRT_2_PI * 0.044715) * x
    return s * q * (4 * du + x * (2 * ddu + 4 * du * du * (q - s)))


def gelu(input, *, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_only(input, "GeluKernelImpl")
    return Gelu.apply(input, approximate=approximate)


class Silu(Op):
    _name = "SiluBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        w = _opmath(x)
        t = np.negative(w)
        np.exp(t, out=t)
        t += 1
        return np.divide(w, t, out=t).astype(x.dtype, copy=False)  # x / (1 + exp(-x)), as torch

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _SiluBackward.apply(grad, x)


class _SiluBackward(Op):
    """silu's backward, grad sigmoid(x) (1 + x (1 - sigmoid(x))), in NumPy in torch's order (silu_backward);
    its own backward in ember ops, as torch's silu_double_backward."""
    _name = "SiluBackwardBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, grad, x):
        ctx.save_for_backward(grad, x)
        w = _opmath(x)
        s = _sigmoid_kernel(w)
        t = np.subtract(1, s)
        t *= w
        t += 1
        s *= _opmath(grad)
        s *= t
        return s.astype(grad.dtype, copy=False)

    def backward(ctx, v):
        grad, x = ctx.saved_tensors
        need = ctx.needs_input_grad
        ggrad = _SiluBackward.apply(v, x) if need[0] else None
        gx = None
        if need[1]:
            s = x.sigmoid()
            tmp = s * (1 - s)
            gx = v * grad * (2 * tmp + (1 - 2 * s) * x * tmp)
        return ggrad, gx


def silu(input, inplace=False):
    if input._dtype.category == D.COMPLEX:
        r = input * input.sigmoid()  # torch's silu takes complex inputs (forward only here)
    else:
        _float_only(input, "silu_cpu")
        r = Silu.apply(input)
    return _finish(input, r, inplace, "silu")


class Mish(Op):
    _name = "MishBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        w = _opmath(x)
        return (w * np.tanh(np.logaddexp(0, w))).astype(x.dtype, copy=False)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        t = softplus(x).tanh()
        return grad * (t + x * x.sigmoid() * (1 - t * t))


def mish(input, inplace=False):
    _float_only(input, "mish_cpu")
    return _finish(input, Mish.apply(input), inplace, "mish")


class Hardswish(Op):
    _name = "HardswishBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        w = _opmath(x)
        t = w + 3
        maximum(t, np.zeros((), t.dtype), out=t)
        minimum(t, np.array(6, t.dtype), out=t)
        t *= w
        t /= 6
        return t.astype(x.dtype, copy=False)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        mid = (grad * (x / 3 + 0.5)).where(x < 3, grad)
        return mid.where(~(x <= -3), 0.0)


def hardswish(input, inplace=False):
    _float_only(input, "hardswish_cpu")
    return _finish(input, Hardswish.apply(input), inplace, "hardswish")


class Hardsigmoid(Op):
    _name = "HardsigmoidBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        w = _opmath(x)
        t = w + 3
        maximum(t, np.zeros((), t.dtype), out=t)
        minimum(t, np.array(6, t.dtype), out=t)
        t /= 6
        return t.astype(x.dtype, copy=False)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        a = x._data
        return _mask_grad(grad / 6, x, (a > -3) & (a < 3))


def hardsigmoid(input, inplace=False):
    _float_only(input, "hardsigmoid_cpu")
    return _finish(input, Hardsigmoid.apply(input), inplace, "hardsigmoid")


class Softplus(Op):
    _name = "SoftplusBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, beta, threshold):
        ctx.save_for_backward(x)
        ctx.args = (beta, threshold)
        w = _opmath(x)
        xb = w * beta
        t = np.exp(xb)
        np.log1p(t, out=t)
        t /= beta
        return where(xb > threshold, w, t).astype(x.dtype, copy=False)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        beta, threshold = ctx.args
        return _SoftplusBackward.apply(grad, x, beta=beta, threshold=threshold)


class _SoftplusBackward(Op):
    """softplus's backward, grad sigmoid(beta x) (grad itself past the threshold), in NumPy (torch's
    softplus_backward); its own backward in ember ops, as torch's softplus_double_backward."""
    _name = "SoftplusBackwardBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, grad, x, beta, threshold):
        ctx.save_for_backward(grad, x)
        ctx.args = (beta, threshold)
        g = _opmath(grad)
        xb = _opmath(x) * beta
        s = _sigmoid_kernel(xb)
        s *= g
        return where(xb > threshold, g, s).astype(grad.dtype, copy=False)

    def backward(ctx, v):
        grad, x = ctx.saved_tensors
        beta, threshold = ctx.args
        need = ctx.needs_input_grad
        ggrad = _SoftplusBackward.apply(v, x, beta=beta, threshold=threshold) if need[0] else None
        gx = None
        if need[1]:
            xb = x * beta
            s = xb.sigmoid()
            gx = v * grad * s * (1 - s) * (xb < threshold) * beta
        return ggrad, gx


def softplus(input, beta=1.0, threshold=20.0):
    _float_only(input, "softplus_cpu")
    return Softplus.apply(input, beta=beta, threshold=threshold)


class LogSigmoid(Op):
    _name = "LogSigmoidBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        w = _opmath(x)
        t = np.abs(w)  # min(x, 0) - log1p(exp(-|x|)), one temporary
        np.negative(t, out=t)
        np.exp(t, out=t)
        np.log1p(t, out=t)
        np.subtract(minimum(w, np.zeros((), w.dtype)), t, out=t)
        return t.astype(x.dtype, copy=False)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-x).sigmoid()


def logsigmoid(input):
    _float_only(input, "log_sigmoid_cpu")
    return LogSigmoid.apply(input)


def glu(input, dim=-1):
    _float_only(input, "glu_cpu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, input.dim())
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    h = n // 2
    return input.narrow(d, 0, h) * input.narrow(d, h, h).sigmoid()


# ---- parametric and randomized ------------------------------------------------------------------

class Prelu(Op):
    _name = "PreluKernelBackward0"

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return where(x > 0, x, (w * x).astype(x.dtype, copy=False))

    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        keep = x._data > 0
        gx = _MaskGrad.apply(grad, x, w, keep=keep, slope=None) if need[0] else None
        gw = _MaskGrad.apply(grad * x, x, None, keep=~keep, slope=0) if need[1] else None
        return gx, gw


def prelu(input, weight):
    """x where x > 0, else weight * x, with weight's entries along the channel dim (dim 1)."""
    _float_only(input, "prelu_cpu")
    if weight._dtype is not input._dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_NAMES[input._dtype]} and "
                           f"{_NAMES[weight._dtype]}")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    n = weight.numel()
    channels = input.shape[1] if input.dim() >= 2 else 1
    if n != 1 and n != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                           f"and channel size = {channels}.")
    if n == 1 or input.dim() < 2:
        w = weight.reshape(())
    else:
        w = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    return Prelu.apply(input, w)


class _Rrelu(Op):
    _name = "RreluWithNoiseBackward0"
    elementwise = True

    @staticmethod
    def forward(ctx, x, noise):
        ctx.noise = noise
        ctx.save_for_backward(x)
        return where(x > 0, x, (x * noise).astype(x.dtype, copy=False))

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _mask_grad(grad, x, x._data > 0, ctx.noise)


def _rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    _float_only(input, "leaky_relu_cpu")
    if not training:
        return LeakyRelu.apply(input, slope=(lower + upper) / 2)
    from .random import rrelu_noise
    return _Rrelu.apply(input, noise=rrelu_noise(input, lower, upper, generator))


def _rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    check_inplace(input)
    r = _rrelu(input, lower, upper, training, generator)
    check_overlap(input, ())  # after the noise is drawn, as torch (Note [Expanded self])
    return assign_result(input, r, "rrelu_")


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return _rrelu_(input, lower, upper, training) if inplace else _rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _rrelu_(input, lower, upper, training, generator)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


# ---- installation: torch.* names and Tensor methods ---------------------------------------------

def _named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    return fn


install(_named(_relu, "relu"), "relu", inplace=_named(_relu_, "relu_"))
install(_named(_selu, "selu"), "selu", method=False, inplace=_named(_selu_, "selu_"))
install(_named(_celu, "celu"), "celu", method=False, inplace=_named(_celu_, "celu_"))
install(_named(_threshold, "threshold"), "threshold", method=False, inplace=_named(_threshold_, "threshold_"),
        out=True)
install(_named(_rrelu, "rrelu"), "rrelu", method=False, inplace=_named(_rrelu_, "rrelu_"))
install(prelu, "prelu")
install(hardshrink, "hardshrink", out=True)
hardshrink = namespace["hardshrink"]  # F.hardshrink is torch's C-level function too: it takes out=
