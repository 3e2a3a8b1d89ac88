"""Elementwise ops. Most are one row: name, kernel, promotion kind, derivative(s).

A derivative lambda's parameter names say what it needs: g (incoming gradient),
x / y (inputs), out (result); the registry saves exactly those. Formulas use ember
ops, so they are differentiable again (create_graph=True).
"""
import math

import numpy as np

from .. import _dtype as D
from .._backend import special as S
from .._tensor import Tensor
from ._registry import (COMPARE, INTEGRAL, LOGICAL, NO_COMPLEX, SAME, TO_FLOAT, Op, binary, install,
                        make_inplace, register, unary, write_out, binary_operands, shapes_error)

_make = Tensor._make


def _no_bool(msg):
    def check(d):
        if d is D.bool:
            raise RuntimeError(msg)
    return check


def _zeros_grad(g):
    return g * 0


# ---- arithmetic ---------------------------------------------------------------------

_add = binary("add", np.add, dx=lambda g: g, dy=lambda g: g, inplace=False)
_sub = binary("sub", np.subtract, dx=lambda g: g, dy=lambda g: -g, inplace=False,
              check=_no_bool("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                             "`^` or `logical_xor()` operator instead."))
mul = binary("mul", np.multiply, dx=lambda g, y: g * y, dy=lambda g, x: g * x, dunder="mul", rdunder=True,
             aliases=("multiply",))
_true_div = binary("true_divide", np.true_divide, TO_FLOAT, dx=lambda g, y: g / y,
                   dy=lambda g, y, out: -g * out / y, node_name="DivBackward0", inplace=False)


def _scaled(other, alpha):
    if alpha == 1:
        return other
    if isinstance(other, Tensor) and other._dtype.category < D.FLOAT and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    return other * alpha


def add(input, other, *, alpha=1, out=None):
    r = _add(input, _scaled(other, alpha))
    return r if out is None else write_out(out, r, "add")


def sub(input, other, *, alpha=1, out=None):
    r = _sub(input, _scaled(other, alpha))
    return r if out is None else write_out(out, r, "sub")


def rsub(input, other, *, alpha=1):
    return sub(other, input, alpha=alpha)


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None:
        r = _true_div(input, other)
    elif rounding_mode == "trunc":
        r = _div_trunc(input, other)
    elif rounding_mode == "floor":
        r = floor_divide(input, other)
    else:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    return r if out is None else write_out(out, r, "div")


def _int_div(kernel):
    """Integer division by zero raises in torch; NumPy returns 0."""
    def k(x, y):
        if x.dtype.kind in "iub" and y.dtype.kind in "iub" and not np.all(y):
            raise RuntimeError("ZeroDivisionError")
        return kernel(x, y)
    return k


def _trunc_div_kernel(x, y):
    if x.dtype.kind in "iu":
        q = np.floor_divide(x, y)
        fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
        return q + fix.astype(q.dtype)
    return np.trunc(np.true_divide(x, y))


_div_trunc = binary("_div_trunc", _int_div(_trunc_div_kernel), dx=lambda g: g * 0, dy=lambda g: g * 0,
                    method=False, inplace=False, node_name="DivBackward1")
floor_divide = binary("floor_divide", _int_div(np.floor_divide), NO_COMPLEX, dx=lambda g: g * 0,
                      dy=lambda g: g * 0, dunder="floordiv", rdunder=True)
remainder = binary("remainder", _int_div(np.remainder), NO_COMPLEX, dx=lambda g: g,
                   dy=lambda g, x, y: -g * floor_divide(x, y), dunder="mod", rdunder=True)
fmod = binary("fmod", _int_div(np.fmod), NO_COMPLEX, dx=lambda g: g,
              dy=lambda g, x, y: -g * _div_trunc(x, y))


def _pow_kernel(x, y):
    if x.dtype.kind in "iu" and y.dtype.kind in "iu" and np.any(y < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return np.power(x, y)


def _pow_dx(g, x, y):
    if not isinstance(y, Tensor):
        if y == 0:
            return g * 0
        return g * (y * x.pow(y - 1))
    return g * (y * x.pow(y - 1)).masked_fill(y == 0, 0)


def _pow_dy(g, x, y, out):
    """d x**y / dy = out * log(x), defined as 0 where x == 0 and y >= 0 (as torch)."""
    if not isinstance(x, Tensor):
        return g * 0 if x == 0 else g * out * math.log(x) if x > 0 else g * out * float("nan")
    return (g * out * x.log()).masked_fill((x == 0) & (y >= 0), 0)


pow = binary("pow", _pow_kernel, dx=_pow_dx, dy=_pow_dy, dunder="pow", rdunder=True)


def float_power(input, exponent, *, out=None):
    d = D.complex128 if (isinstance(input, Tensor) and input.is_complex()) or \
        (isinstance(exponent, Tensor) and exponent.is_complex()) else D.float64
    a = input.to(d) if isinstance(input, Tensor) else input
    b = exponent.to(d) if isinstance(exponent, Tensor) else exponent
    r = pow(a, b)
    return r if out is None else write_out(out, r, "float_power")


atan2 = binary("atan2", np.arctan2, TO_FLOAT, dx=lambda g, x, y: g * y / (x * x + y * y),
               dy=lambda g, x, y: -g * x / (x * x + y * y), aliases=("arctan2",))
hypot = binary("hypot", np.hypot, NO_COMPLEX, dx=lambda g, x, out: g * x / out,
               dy=lambda g, y, out: g * y / out)
copysign = binary("copysign", np.copysign, TO_FLOAT,
                  dx=lambda g, x, out: g * _sign_ratio(x, out), dy=lambda g: g * 0)


def _sign_ratio(x, out):
    return (out / x).masked_fill(x == 0, 0)


maximum = binary("maximum", np.maximum, NO_COMPLEX,
                 dx=lambda g, x, y: g * _tie_weight(x, y), dy=lambda g, x, y: g * _tie_weight(y, x),
                 inplace=False)
minimum = binary("minimum", np.minimum, NO_COMPLEX,
                 dx=lambda g, x, y: g * _tie_weight(y, x), dy=lambda g, x, y: g * _tie_weight(x, y),
                 inplace=False)
fmax = binary("fmax", np.fmax, NO_COMPLEX, dx=lambda g, x, y: g * ((x >= y) | y.isnan()).to(g.dtype),
              dy=lambda g, x, y: g * ((y > x) | x.isnan()).to(g.dtype), inplace=False)
fmin = binary("fmin", np.fmin, NO_COMPLEX, dx=lambda g, x, y: g * ((x <= y) | y.isnan()).to(g.dtype),
              dy=lambda g, x, y: g * ((y < x) | x.isnan()).to(g.dtype), inplace=False)


def _tie_weight(a, b):
    """d max(a,b)/da: 1 where a > b, 0.5 on ties (torch splits the gradient evenly)."""
    return (a > b).to(_float_of(a, b)) + (a == b).to(_float_of(a, b)) * 0.5


def _float_of(a, b):
    for v in (a, b):
        if isinstance(v, Tensor) and v._dtype.category >= D.FLOAT:
            return v._dtype
    return D.get_default_dtype()


xlogy = binary("xlogy", lambda x, y: np.where(x == 0, np.zeros((), x.dtype), x * np.log(y)), TO_FLOAT,
               dx=lambda g, x, y: (g * y.log()).masked_fill((x == 0) & ~y.isnan(), 0),
               dy=lambda g, x, y: g * x / y)
logaddexp = binary("logaddexp", np.logaddexp, TO_FLOAT, dx=lambda g, x, out: g * (x - out).exp(),
                   dy=lambda g, y, out: g * (y - out).exp(), inplace=False)
logaddexp2 = binary("logaddexp2", np.logaddexp2, TO_FLOAT, dx=lambda g, x, out: g * (x - out).exp2(),
                    dy=lambda g, y, out: g * (y - out).exp2(), inplace=False)
nextafter = binary("nextafter", np.nextafter, SAME)
heaviside = binary("heaviside", lambda x, y: np.where(x == 0, y, (x > 0).astype(x.dtype)), SAME)
gcd = binary("gcd", np.gcd, INTEGRAL)
lcm = binary("lcm", np.lcm, INTEGRAL)

def ldexp(input, other, *, out=None):
    r = input * pow(2.0, other)
    return r if out is None else write_out(out, r, "ldexp")


# ---- comparison and logic -----------------------------------------------------------

eq = binary("eq", np.equal, COMPARE, dunder="eq")
ne = binary("ne", np.not_equal, COMPARE, dunder="ne", aliases=("not_equal",))
lt = binary("lt", np.less, COMPARE, dunder="lt", aliases=("less",))
le = binary("le", np.less_equal, COMPARE, dunder="le", aliases=("less_equal",))
gt = binary("gt", np.greater, COMPARE, dunder="gt", aliases=("greater",))
ge = binary("ge", np.greater_equal, COMPARE, dunder="ge", aliases=("greater_equal",))
logical_and = binary("logical_and", np.logical_and, LOGICAL)
logical_or = binary("logical_or", np.logical_or, LOGICAL)
logical_xor = binary("logical_xor", np.logical_xor, LOGICAL)
bitwise_and = binary("bitwise_and", np.bitwise_and, INTEGRAL, dunder="and", rdunder=True)
bitwise_or = binary("bitwise_or", np.bitwise_or, INTEGRAL, dunder="or", rdunder=True)
bitwise_xor = binary("bitwise_xor", np.bitwise_xor, INTEGRAL, dunder="xor", rdunder=True)
bitwise_left_shift = binary("bitwise_left_shift", np.left_shift, INTEGRAL, dunder="lshift", rdunder=True)
bitwise_right_shift = binary("bitwise_right_shift", np.right_shift, INTEGRAL, dunder="rshift", rdunder=True)
logical_not = unary("logical_not", np.logical_not, LOGICAL)
bitwise_not = unary("bitwise_not", lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
                    INTEGRAL, dunder="invert")

# ---- unary math ---------------------------------------------------------------------

neg = unary("neg", np.negative, dx=lambda g: -g, aliases=("negative",), dunder="neg",
            check=_no_bool("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead."))
positive = unary("positive", lambda x: x, dx=lambda g: g, inplace=False, dunder="pos")
abs = unary("abs", np.abs, dx=lambda g, x: g * x.sgn(), aliases=("absolute",), dunder="abs")
sign = unary("sign", np.sign, NO_COMPLEX, dx=lambda g: g * 0)
sgn = unary("sgn", lambda x: np.sign(x) if x.dtype.kind != "c" else
            np.where(x == 0, 0, x / np.where(x == 0, 1, np.abs(x))).astype(x.dtype), dx=lambda g: g * 0)
signbit = unary("signbit", np.signbit, NO_COMPLEX, inplace=False)
exp = unary("exp", np.exp, TO_FLOAT, dx=lambda g, out: g * out)
exp2 = unary("exp2", np.exp2, TO_FLOAT, dx=lambda g, out: g * out * math.log(2))
expm1 = unary("expm1", np.expm1, TO_FLOAT, dx=lambda g, out: g * (out + 1))
log = unary("log", np.log, TO_FLOAT, dx=lambda g, x: g / x)
log2 = unary("log2", np.log2, TO_FLOAT, dx=lambda g, x: g / (x * math.log(2)))
log10 = unary("log10", np.log10, TO_FLOAT, dx=lambda g, x: g / (x * math.log(10)))
log1p = unary("log1p", np.log1p, TO_FLOAT, dx=lambda g, x: g / (x + 1))
sqrt = unary("sqrt", np.sqrt, TO_FLOAT, dx=lambda g, out: g / (2 * out))
rsqrt = unary("rsqrt", lambda x: 1 / np.sqrt(x), TO_FLOAT, dx=lambda g, out: -0.5 * g * out.pow(3))
square = unary("square", np.square, dx=lambda g, x: 2 * g * x)
reciprocal = unary("reciprocal", np.reciprocal, TO_FLOAT, dx=lambda g, out: -g * out * out)
sin = unary("sin", np.sin, TO_FLOAT, dx=lambda g, x: g * x.cos())
cos = unary("cos", np.cos, TO_FLOAT, dx=lambda g, x: -g * x.sin())
tan = unary("tan", np.tan, TO_FLOAT, dx=lambda g, out: g * (1 + out * out))
asin = unary("asin", np.arcsin, TO_FLOAT, dx=lambda g, x: g * (1 - x * x).rsqrt(), aliases=("arcsin",))
acos = unary("acos", np.arccos, TO_FLOAT, dx=lambda g, x: -g * (1 - x * x).rsqrt(), aliases=("arccos",))
atan = unary("atan", np.arctan, TO_FLOAT, dx=lambda g, x: g / (1 + x * x), aliases=("arctan",))
sinh = unary("sinh", np.sinh, TO_FLOAT, dx=lambda g, x: g * x.cosh())
cosh = unary("cosh", np.cosh, TO_FLOAT, dx=lambda g, x: g * x.sinh())
tanh = unary("tanh", np.tanh, TO_FLOAT, dx=lambda g, out: g * (1 - out * out))
asinh = unary("asinh", np.arcsinh, TO_FLOAT, dx=lambda g, x: g * (x * x + 1).rsqrt(), aliases=("arcsinh",))
acosh = unary("acosh", np.arccosh, TO_FLOAT, dx=lambda g, x: g * (x * x - 1).rsqrt(), aliases=("arccosh",))
atanh = unary("atanh", np.arctanh, TO_FLOAT, dx=lambda g, x: g / (1 - x * x), aliases=("arctanh",))
deg2rad = unary("deg2rad", np.deg2rad, TO_FLOAT, dx=lambda g: g * (math.pi / 180))
rad2deg = unary("rad2deg", np.rad2deg, TO_FLOAT, dx=lambda g: g * (180 / math.pi))


def _sigmoid_kernel(x):
    # exp(-|x|) never overflows; the two branches agree at 0
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


sigmoid = unary("sigmoid", _sigmoid_kernel, TO_FLOAT, dx=lambda g, out: g * out * (1 - out))

def logit(input, eps=None, *, out=None):
    x = input if eps is None else input.clamp(eps, 1 - eps)
    r = (x / (1 - x)).log()
    return r if out is None else write_out(out, r, "logit")


erf = unary("erf", S.erf, TO_FLOAT, dx=lambda g, x: g * (2 / math.sqrt(math.pi)) * (-x * x).exp())
erfc = unary("erfc", S.erfc, TO_FLOAT, dx=lambda g, x: -g * (2 / math.sqrt(math.pi)) * (-x * x).exp())
erfinv = unary("erfinv", S.erfinv, TO_FLOAT, dx=lambda g, out: g * (math.sqrt(math.pi) / 2) * (out * out).exp())
lgamma = unary("lgamma", S.lgamma, TO_FLOAT, dx=lambda g, x: g * x.digamma())
digamma = unary("digamma", S.digamma, TO_FLOAT, dx=lambda g, x: g * polygamma(1, x))
i0 = unary("i0", S.i0, TO_FLOAT, dx=lambda g, x: g * _i1(x))
_i1 = unary("_i1", S.i1, TO_FLOAT, method=False, inplace=False)
sinc = unary("sinc", np.sinc, TO_FLOAT,
             dx=lambda g, x: g * ((math.pi * x * (math.pi * x).cos() - (math.pi * x).sin())
                                  / (math.pi * x * x)).masked_fill(x == 0, 0))


class Polygamma(Op):
    _name = "PolygammaBackward0"

    @staticmethod
    def forward(ctx, x, n):
        ctx.n = n
        ctx.save_for_backward(x)
        return S.polygamma(n, x)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * polygamma(ctx.n + 1, x)


def polygamma(n, input, *, out=None):
    x = input if input._dtype.category >= D.FLOAT else input.to(D.get_default_dtype())
    r = Polygamma.apply(x, n=n)
    return r if out is None else write_out(out, r, "polygamma")


def mvlgamma(input, p):
    j = np.arange(1, p + 1)
    r = sum_over_last((input.unsqueeze(-1) + Tensor._make(((1 - j) / 2).astype(input._dtype.np))).lgamma())
    return r + p * (p - 1) / 4 * math.log(math.pi)


def sum_over_last(t):
    return t.sum(-1)


# ---- rounding -------------------------------------------------------------------------

def _int_passthrough(kernel):
    """floor/ceil/trunc/round are identities on integer tensors."""
    def k(x):
        return x.copy() if x.dtype.kind in "iub" else kernel(x)
    return k


floor = unary("floor", _int_passthrough(np.floor), NO_COMPLEX, dx=lambda g: g * 0)
ceil = unary("ceil", _int_passthrough(np.ceil), NO_COMPLEX, dx=lambda g: g * 0)
trunc = unary("trunc", _int_passthrough(np.trunc), NO_COMPLEX, dx=lambda g: g * 0, aliases=("fix",))
frac = unary("frac", lambda x: x - np.trunc(x), NO_COMPLEX, dx=lambda g: g)
_round0 = unary("_round0", _int_passthrough(np.rint), NO_COMPLEX, dx=lambda g: g * 0, method=False,
                inplace=False, node_name="RoundBackward0")


class RoundDecimals(Op):
    _name = "RoundBackward1"

    @staticmethod
    def forward(ctx, x, decimals):
        return np.round(x, decimals)

    def backward(ctx, grad):
        return grad * 0


def round(input, *, decimals=0, out=None):
    r = _round0(input) if decimals == 0 else RoundDecimals.apply(input, decimals=decimals)
    return r if out is None else write_out(out, r, "round")


# ---- classification --------------------------------------------------------------------

isnan = unary("isnan", np.isnan, SAME, inplace=False)
isinf = unary("isinf", np.isinf, NO_COMPLEX, inplace=False)
isfinite = unary("isfinite", np.isfinite, SAME, inplace=False)
isposinf = unary("isposinf", np.isposinf, NO_COMPLEX, inplace=False)
isneginf = unary("isneginf", np.isneginf, NO_COMPLEX, inplace=False)
isreal = unary("isreal", np.isreal, SAME, inplace=False)


# ---- ops with parameters ----------------------------------------------------------------

class Clamp(Op):
    _name = "ClampBackward1"

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x, lo, hi)
        out = x
        if lo is not None:
            out = np.maximum(out, lo)
        if hi is not None:
            out = np.minimum(out, hi)
        if out is x:
            out = x.copy()
        # NaN in x propagates (np.maximum does); NaN bounds propagate too
        return out.astype(x.dtype, copy=False)

    def backward(ctx, grad):
        x, lo, hi = ctx.saved_tensors
        need = ctx.needs_input_grad
        mask = None
        if lo is not None:
            mask = x >= lo
        if hi is not None:
            m = x <= hi
            mask = m if mask is None else mask & m
        gx = grad * mask.to(grad.dtype) if need[0] else None
        glo = ghi = None
        if len(need) > 1 and need[1] and lo is not None:
            glo = grad * (x < lo).to(grad.dtype)
        if len(need) > 2 and need[2] and hi is not None:
            ghi = grad * (x > hi).to(grad.dtype)
        return gx, glo, ghi


def _bound(v, cd):
    if v is None:
        return None
    if isinstance(v, Tensor):
        return v if v._dtype is cd else v.to(cd)
    return _make(np.array(v, dtype=cd.np), cd)


def clamp(input, min=None, max=None, *, out=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    operands = [input] + [v for v in (min, max) if v is not None]
    cd = D.result_type_of(operands)
    if cd.category == D.COMPLEX:
        raise RuntimeError("clamp is not supported for complex types")
    x = input if input._dtype is cd else input.to(cd)
    lo = _bound(min, cd)
    hi = _bound(max, cd)
    try:
        r = Clamp.apply(x, lo, hi)
    except ValueError:
        raise shapes_error("clamp", input._data, (lo if lo is not None else hi)._data) from None
    if not isinstance(min, Tensor) and not isinstance(max, Tensor) and r._grad_fn is not None:
        r._grad_fn._name = "ClampBackward1"
    return r if out is None else write_out(out, r, "clamp")


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


class NanToNum(Op):
    _name = "NanToNumBackward0"

    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        ctx.save_for_backward(x)
        if x.dtype.kind not in "fc":
            return x.copy()
        info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.finfo(x.real.dtype)
        return np.nan_to_num(x, nan=nan, posinf=info.max if posinf is None else posinf,
                             neginf=info.min if neginf is None else neginf)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.isfinite().to(grad.dtype)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    r = NanToNum.apply(input, nan=nan, posinf=posinf, neginf=neginf)
    return r if out is None else write_out(out, r, "nan_to_num")


class Where(Op):
    _name = "WhereBackward0"

    @staticmethod
    def forward(ctx, cond, x, y):
        ctx.save_for_backward(cond)
        return np.where(cond, x, y)

    def backward(ctx, grad):
        (cond,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = grad.new_zeros(())
        gx = grad.where(cond, zero) if need[1] else None
        gy = zero.where(cond, grad) if need[2] else None
        return None, gx, gy


def where(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition._dtype is not D.bool and condition._dtype is not D.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{D.SCALAR_NAMES[condition._dtype]}")
    cd = D.result_type_of([v for v in (input, other)])
    a = input.to(cd) if isinstance(input, Tensor) else _make(np.array(input, dtype=cd.np), cd)
    b = other.to(cd) if isinstance(other, Tensor) else _make(np.array(other, dtype=cd.np), cd)
    try:
        r = Where.apply(condition, a, b)
    except ValueError:
        raise RuntimeError(f"where(): shapes {list(condition.shape)}, {list(a.shape)} and {list(b.shape)} are "
                           "not broadcastable") from None
    return r if out is None else write_out(out, r, "where")


def _where_method(self, condition, y):
    return where(condition, self, y)


def lerp(input, end, weight, *, out=None):
    r = input + weight * (end - input)
    return r if out is None else write_out(out, r, "lerp")


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    r = input + value * (tensor1 * tensor2) if value != 1 else input + tensor1 * tensor2
    return r if out is None else write_out(out, r, "addcmul")


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    if tensor1._dtype.category < D.FLOAT and tensor2._dtype.category < D.FLOAT:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
                           "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
                           "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter implementation: "
                           "(input + value * tensor1 / tensor2), for all dtypes.")
    r = input + value * (tensor1 / tensor2) if value != 1 else input + tensor1 / tensor2
    return r if out is None else write_out(out, r, "addcdiv")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if input._dtype is not other._dtype:
        raise RuntimeError(f"{input._dtype} did not match {other._dtype}")
    a = input._data
    b = other._data
    return _make(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


# ---- dtype conversion -------------------------------------------------------------------

class ToCopy(Op):
    _name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.in_dtype = x.dtype
        if x.dtype.kind == "c" and dtype.kind != "c":
            x = x.real  # torch discards the imaginary part (with a warning)
        return x.astype(dtype)

    def backward(ctx, grad):
        d = D.from_numpy_dtype(ctx.in_dtype)
        return grad.to(d) if d.category == D.COMPLEX or grad._dtype.category != D.COMPLEX else grad.real.to(d)


def _to_dtype(t, dtype):
    return ToCopy.apply(t, dtype=dtype.np)


# ---- installation of the composites ----------------------------------------------------

def _rsub_dunder(self, other):
    return sub(other, self)


def _rdiv_dunder(self, other):
    return div(other, self)


for _fn, _name in [(add, "add"), (sub, "sub"), (div, "div")]:
    install(_fn, _name, inplace=make_inplace(_fn, _name), dunder=None)
Tensor.__add__ = Tensor.__radd__ = add
Tensor.__iadd__ = Tensor.add_
Tensor.__sub__ = sub
Tensor.__rsub__ = _rsub_dunder
Tensor.__isub__ = Tensor.sub_
Tensor.__truediv__ = div
Tensor.__rtruediv__ = _rdiv_dunder
Tensor.__itruediv__ = Tensor.div_
install(rsub, "rsub", method=False)
install(div, "divide", inplace=make_inplace(div, "divide"))
install(_true_div, "true_divide", inplace=make_inplace(_true_div, "true_divide"))
install(clamp, "clamp", inplace=make_inplace(clamp, "clamp"), aliases=("clip",))
install(clamp_min, "clamp_min", inplace=make_inplace(clamp_min, "clamp_min"))
install(clamp_max, "clamp_max", inplace=make_inplace(clamp_max, "clamp_max"))
install(maximum, "maximum")
install(minimum, "minimum")
install(float_power, "float_power", inplace=make_inplace(float_power, "float_power"))
install(ldexp, "ldexp", inplace=make_inplace(ldexp, "ldexp"))
install(logit, "logit", inplace=make_inplace(logit, "logit"))
install(round, "round", inplace=make_inplace(round, "round"))
install(polygamma, "polygamma", method=False)
install(mvlgamma, "mvlgamma", inplace=make_inplace(mvlgamma, "mvlgamma"))
Tensor.polygamma = lambda self, n: polygamma(n, self)
Tensor.polygamma_ = make_inplace(lambda self, n: polygamma(n, self), "polygamma")
install(nan_to_num, "nan_to_num", inplace=make_inplace(nan_to_num, "nan_to_num"))
install(where, "where", method=False)
Tensor.where = _where_method
install(lerp, "lerp", inplace=make_inplace(lerp, "lerp"))
install(addcmul, "addcmul", inplace=make_inplace(addcmul, "addcmul"))
install(addcdiv, "addcdiv", inplace=make_inplace(addcdiv, "addcdiv"))
install(isclose, "isclose")
install(allclose, "allclose")
install(equal, "equal")
