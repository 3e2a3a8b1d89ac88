"""Elementwise ops. Most are one row: name, kernel, promotion kind, derivative(s).

A derivative lambda's parameter names say what it needs: g (incoming gradient),
x / y (inputs), out (result); the registry saves exactly those. Formulas use ember
ops, so they are differentiable again (create_graph=True). Formulas are torch's
(derivatives.yaml), so the same values are saved and the same in-place errors fire.
Complex gradients follow torch's convention, grad * conj(f'(z)): `cj` conjugates complex
values and returns real ones unchanged (see complex.py). Ops with parameters or three
operands are in pointwise_params.py, complex views in complex.py.
"""
import cmath
import math

import numpy as np

from .. import _dtype as D
from .._backend import empty_like, jit, negative, parallel, scalar_array, special as S, where as _select
from .._tensor import Tensor
from ._registry import (COMPARE, INTEGRAL, LOGICAL, TO_FLOAT, Op, _iter_layout, binary, binary_call, fits, install,
                        into, into_recorded, keeps_dtype, make_inplace, namespace, row_out, unary, write_out)
from .complex import cj
from .creation import ones_like, zeros_like

_NAMES = D.SCALAR_NAMES


# ---- dtype support: torch's errors for kernels a dtype lacks ---------------------------

def _is_bool(d):
    return d is D.bool


def _is_complex(d):
    return d.category == D.COMPLEX


def _is_integral(d):
    return d.category <= D.INT


def _not_float(d):
    return d.category != D.FLOAT


def _bool_or_complex(d):
    return d is D.bool or d.category == D.COMPLEX


def _not_int(d):
    return d.category != D.INT


def _rejects(pred, exc, msg):
    """A row check raising exc(msg) for dtypes with pred(d); {} in msg is torch's dtype name."""
    def check(d):
        if pred(d):
            raise exc(msg.format(_NAMES[d]))
    return check


def _nyi(kernel, pred):
    """torch's NotImplementedError: "<kernel>" not implemented for '<dtype>'."""
    return _rejects(pred, NotImplementedError, '"' + kernel + "\" not implemented for '{}'")


def _no_complex(name, exc=RuntimeError, msg="{name} is not supported for complex tensors."):
    return _rejects(_is_complex, exc, msg.format(name=name))


def _zeros(g):
    """Gradient of a piecewise-constant op: zeros (not g * 0, which keeps NaN)."""
    return zeros_like(g)


def _not_differentiable(name):
    """dx of an op torch declares not differentiable: outputs still require grad, backward raises."""
    def dx(g):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")
    return dx


def _float_kernel(kernel):
    """Run a composite kernel for float16/bfloat16 in float32 and round once at the end, as
    torch's opmath does (rounding every intermediate to half loses most of the result)."""
    def k(x):
        if x.dtype.itemsize == 2 and x.dtype.kind != "i" and x.dtype.kind != "u":
            return kernel(x.astype(np.float32)).astype(x.dtype)
        return kernel(x)
    return k


def _int_div(kernel):
    """Integer division by zero raises in torch; NumPy returns 0."""
    def k(x, y):
        if x.dtype.kind in "iub" and not np.all(y):
            raise RuntimeError("ZeroDivisionError")
        return kernel(x, y)
    return k


# ---- arithmetic ---------------------------------------------------------------------

_SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
             "mask, use the `~` or `logical_not()` operator instead.")
_SUB_BOOLS = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.")

_add = binary("_add", np.add, dx=lambda g: g, dy=lambda g: g, method=False, inplace=False,
              node_name="AddBackward0")
_sub = binary("_sub", np.subtract, dx=lambda g: g, dy=lambda g: -g, method=False, inplace=False,
              node_name="SubBackward0")
mul = binary("mul", np.multiply, dx=lambda g, y: g * cj(y), dy=lambda g, x: g * cj(x), dunder="mul", rdunder=True,
             aliases=("multiply",))
_true_div = binary("true_divide", np.true_divide, TO_FLOAT, dx=lambda g, y: g / cj(y),
                   dy=lambda g, x, y: -g * cj(x) / cj(y * y), node_name="DivBackward0", inplace=False)


def _trunc_div_kernel(x, y):
    if x.dtype.kind in "iu":
        q = np.floor_divide(x, y)
        fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
        return q + fix.astype(q.dtype)
    return np.trunc(np.true_divide(x, y))


_div_trunc = binary("_div_trunc", _int_div(_trunc_div_kernel), dx=_zeros, dy=_zeros, method=False,
                    inplace=False, node_name="DivBackward2", check=_nyi("div_trunc_cpu", _bool_or_complex))
_div_floor = binary("_div_floor", _int_div(np.floor_divide), dx=_zeros, dy=_zeros, method=False,
                    inplace=False, node_name="DivBackward2", check=_nyi("div_floor_cpu", _bool_or_complex))
floor_divide = binary("floor_divide", _int_div(np.floor_divide), dx=_not_differentiable("floor_divide"),
                      dy=_not_differentiable("floor_divide"), dunder="floordiv", rdunder=True,
                      node_name="NotImplemented", check=_nyi("div_floor_cpu", _bool_or_complex))


def _remainder_kernel(x, y):
    """Python's modulo (sign of the divisor), computed as torch does: fmod, then shift by y."""
    if x.dtype.kind in "iu":
        return np.remainder(x, y)
    mod = np.fmod(x, y)
    shift = (mod != 0) & ((y < 0) != (mod < 0))
    return _select(shift, (mod + y).astype(mod.dtype, copy=False), mod)


remainder = binary("remainder", _int_div(_remainder_kernel), dx=lambda g: g,
                   dy=lambda g, x, y: -g * _div_floor(x, y), dunder="mod", rdunder=True,
                   check=_nyi("remainder_cpu", _bool_or_complex))
fmod = binary("fmod", _int_div(np.fmod), dx=lambda g: g, dy=lambda g, x, y: -g * _div_trunc(x, y),
              check=_nyi("fmod_cpu", _bool_or_complex), tensors=("input",))


def _alpha_check(result_dtype, alpha):
    """torch's checks on add/sub's alpha against the result dtype."""
    if isinstance(alpha, bool):
        if result_dtype is not D.bool:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, complex):
        if result_dtype.category != D.COMPLEX:
            raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
    elif isinstance(alpha, float) and result_dtype.category < D.FLOAT:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def _scaled(input, other, alpha):
    """alpha * other, computed in the dtype of the final result (as torch's fused kernel)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor) and input._dtype is other._dtype:
        d = input._dtype
    else:
        d = D.result_type_of((input, other))
    _alpha_check(d, alpha)
    if isinstance(other, Tensor):
        return mul(other if other._dtype is d else other.to(d), alpha)
    return other * alpha


def add(input, other, *, alpha=1, out=None):
    if type(alpha) is not int or alpha != 1:
        other = _scaled(input, other, alpha)
    return _add(input, other) if out is None else row_out(_add.row, out, "add", input, other)


def _add_dunder(self, other, *, alpha=1, out=None):
    """x + y: add with one call less on its common path (the most frequent op of all)."""
    if out is not None or type(alpha) is not int or alpha != 1:
        return add(self, other, alpha=alpha, out=out)
    return binary_call(_add.row, self, other)


def _scaled_into(kernel, self, other, alpha):
    """self <- kernel(self, alpha * other) in self's array, when other has self's dtype and alpha keeps it
    (the optimizer's case; alpha * other, the one temporary, computed as mul(other, alpha) would)."""
    d = self._dtype
    if not (isinstance(other, Tensor) and other._dtype is d and keeps_dtype(d, alpha)):
        return False
    x = self._data
    y = other._data
    if not fits(y.shape, x.shape):
        return False
    t = np.multiply(y, scalar_array(alpha, d.np))
    kernel(x, t, out=x)
    return True


def _add_(self, other, *, alpha=1):
    """add_ straight into self's array (Note [Straight into the array]); alpha * other is the one temporary."""
    if type(alpha) is not int or alpha != 1:
        if _scaled_into(np.add, self, other, alpha):
            return True
        other = _scaled(self, other, alpha)
    return into(_add.row, self, self, other)


def _add_recorded(self, other, *, alpha=1):
    """add_ with a graph, alpha 1 (x += y): straight into self's array (AddBackward0 saves nothing)."""
    return into_recorded(_add.row, self, other) if type(alpha) is int and alpha == 1 else None


def _sub_recorded(self, other, *, alpha=1):
    """sub_ with a graph, alpha 1, as _add_recorded (bool operands are left to sub's error)."""
    if _has_bool(self) or _has_bool(other) or type(alpha) is not int or alpha != 1:
        return None
    return into_recorded(_sub.row, self, other)


def _has_bool(v):
    return isinstance(v, bool) or (isinstance(v, Tensor) and v._dtype is D.bool)


def sub(input, other, *, alpha=1, out=None):
    if _has_bool(input) or _has_bool(other):
        raise RuntimeError(_SUB_BOOLS if _has_bool(input) and _has_bool(other) else _SUB_BOOL)
    if type(alpha) is not int or alpha != 1:
        other = _scaled(input, other, alpha)
    return _sub(input, other) if out is None else row_out(_sub.row, out, "sub", input, other)


def _sub_(self, other, *, alpha=1):
    """sub_ straight into self's array, as _add_ (bool operands are left to sub's error)."""
    if _has_bool(self) or _has_bool(other):
        return False
    if type(alpha) is not int or alpha != 1:
        if _scaled_into(np.subtract, self, other, alpha):
            return True
        other = _scaled(self, other, alpha)
    return into(_sub.row, self, self, other)


def rsub(input, other, *, alpha=1):
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return sub(other, input, alpha=alpha)


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None:
        return _true_div(input, other) if out is None else row_out(_true_div.row, out, "div", input, other)
    if rounding_mode == "trunc":
        r = _div_trunc(input, other)
    elif rounding_mode == "floor":
        r = _div_floor(input, other)
    else:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    return r if out is None else write_out(out, r, "div")


def _div_(self, other, *, rounding_mode=None):
    """div_ (true division) straight into self's array."""
    return rounding_mode is None and into(_true_div.row, self, self, other)


# ---- powers -------------------------------------------------------------------------

def _int_pow(x, y):
    """Integer powers; a negative exponent gives 1 for base 1, +-1 for base -1, else 0 (torch)."""
    neg = y < 0
    if not np.any(neg):
        return np.power(x, y)
    r = np.power(x, np.where(neg, 0, y))
    odd = (y % 2) != 0
    inv = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0)).astype(r.dtype)
    return np.where(neg, inv, r)


def _pow_kernel(x, y):
    if x.dtype.kind in "iu":
        return _int_pow(x, y)
    return np.power(x, y)


def _pow_dx(g, x, y):
    if not isinstance(y, Tensor):
        if y == 0:
            return zeros_like(g)
        return g * cj(y * x.pow(y - 1))
    return g * cj((y * x.pow(y - 1)).where(y != 0, 0.0))


def _nonnegative_real(y):
    """y >= 0, for a complex y: real part >= 0 and imaginary part 0 (torch's pow_backward_exponent)."""
    if isinstance(y, Tensor) and y._dtype.category == D.COMPLEX:
        return (y.imag == 0) & (y.real >= 0)
    return y >= 0


def _pow_dy(g, x, y, out):
    """d x**y / dy = out * log(x), defined as 0 where x == 0 and y >= 0 (as torch); a real base of a
    complex power takes the complex log (log(-2) = log 2 + i pi)."""
    cplx = out._dtype.category == D.COMPLEX
    if not isinstance(x, Tensor):
        if x == 0:
            return (g * 0).where(_nonnegative_real(y), g * cj(out) * float("-inf"))  # g * 0 keeps torch's NaNs
        if cplx:
            return g * cj(out) * cmath.log(x).conjugate()
        return g * out * math.log(x) if x > 0 else g * out * float("nan")
    if cplx and x._dtype.category != D.COMPLEX:
        x = x.to(out._dtype)
    if y._dtype.category == D.COMPLEX:
        keep = (x != 0) | (y.imag != 0) | (y.real < 0)
    else:
        keep = (x != 0) | (y < 0)
    return (g * cj(out) * cj(x.log())).where(keep, 0.0)


_pow = binary("pow", _pow_kernel, dx=_pow_dx, dy=_pow_dy, dunder="pow", rdunder=True, check=_nyi("pow", _is_bool))


def _negative_int_exponent(input, exponent):
    if isinstance(exponent, int) and exponent < 0 and not isinstance(exponent, bool) \
            and isinstance(input, Tensor) and input._dtype.category <= D.INT:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def _bool_pow(input, exponent):
    """bool ** True is a copy and bool ** False is all True (torch short-cuts these exponents)."""
    return input.clone() if exponent else ones_like(input)


def pow(input, exponent, *, out=None):
    _negative_int_exponent(input, exponent)
    if isinstance(exponent, bool) and isinstance(input, Tensor) and input._dtype is D.bool:
        r = _bool_pow(input, exponent)
    else:
        r = _pow(input, exponent)
    return r if out is None else write_out(out, r, "pow")


def _pow_(self, exponent):
    """pow_ of a floating self straight into its array (the kernel is np.power there)."""
    return self._dtype.category >= D.FLOAT and into(_pow.row, self, self, exponent, kernel=np.power)


def _pow_method(self, exponent):
    return pow(self, exponent)


def _rpow(self, other):
    return _pow(other, self)


def _to_wide(v, d):
    return v.to(d) if isinstance(v, Tensor) else v


def float_power(input, exponent, *, out=None):
    """pow in float64 (complex128 if either operand is complex)."""
    cplx = any(isinstance(v, complex) or (isinstance(v, Tensor) and v.is_complex()) for v in (input, exponent))
    d = D.complex128 if cplx else D.float64
    if out is not None and out._dtype is not d:
        raise RuntimeError(f"the output given to float_power has dtype {_NAMES[out._dtype]} but the operation's "
                           f"result requires dtype {_NAMES[d]}")
    r = _pow(_to_wide(input, d), _to_wide(exponent, d))
    return r if out is None else write_out(out, r, "float_power")


def _float_power_(self, exponent):
    cplx = self.is_complex() or isinstance(exponent, complex) or \
        (isinstance(exponent, Tensor) and exponent.is_complex())
    d = D.complex128 if cplx else D.float64
    if self._dtype is not d:
        raise RuntimeError(f"the base given to float_power_ has dtype {_NAMES[self._dtype]} but the operation's "
                           f"result requires dtype {_NAMES[d]}")
    return self.pow_(_to_wide(exponent, d))


def square(input, *, out=None):
    r = _pow(input.to(D.int64) if input._dtype is D.bool else input, 2)
    return r if out is None else write_out(out, r, "square")


# ---- binary math ----------------------------------------------------------------------

def _xlogy_kernel(x, y):
    r = _select(x == 0, np.zeros((), x.dtype), x * np.log(y))
    return _select(np.isnan(y), y, r)


def _logaddexp_kernel(x, y):
    if x.dtype.kind == "c":
        m = np.where(x.real >= y.real, x, y)
        return m + np.log(np.exp(x - m) + np.exp(y - m))
    return np.logaddexp(x, y)


def _heaviside_kernel(x, y):
    return np.where(x == 0, y, (x > 0).astype(x.dtype))


def _shift_left(x, y):
    """torch: shifting by a negative amount or by the bit width or more gives 0."""
    bits = x.dtype.itemsize * 8
    bad = (y < 0) | (y >= bits)
    r = np.left_shift(x, np.where(bad, 0, y).astype(x.dtype))
    return np.where(bad, np.zeros((), x.dtype), r)


def _shift_right(x, y):
    """torch: out-of-range shifts fill with the sign bit (0 or -1)."""
    bits = x.dtype.itemsize * 8
    bad = (y < 0) | (y >= bits)
    r = np.right_shift(x, np.where(bad, 0, y).astype(x.dtype))
    fill = np.right_shift(x, bits - 1) if x.dtype.kind == "i" else np.zeros((), x.dtype)
    return np.where(bad, fill, r)


def _nextafter_kernel(x, y):
    """C's nextafter returns y when x == y (NumPy's half-precision loop returns x)."""
    return np.where(x == y, y, np.nextafter(x, y))


def _max_grad(g, x, y, lose):
    """torch's maximum/minimum rule: full grad, halved on ties, zero where this operand lost."""
    return (g / 2).where(x == y, g).where(~lose, 0.0)


def _heaviside_check(d):
    if d.category == D.COMPLEX:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")


_T2 = ("input", "other")
atan2 = binary("atan2", np.arctan2, TO_FLOAT, dx=lambda g, x, y: g * y / (x * x + y * y),
               dy=lambda g, x, y: -g * x / (x * x + y * y), aliases=("arctan2",), tensors=_T2,
               check=_nyi("atan2_cpu", _is_complex))
hypot = binary("hypot", np.hypot, dx=lambda g, x, out: g * x / out, dy=lambda g, y, out: g * y / out,
               tensors=_T2, check=_nyi("hypot_cpu", _not_float))
copysign = binary("copysign", np.copysign, TO_FLOAT, dx=lambda g, x, out: g * (out / x).where(x != 0, 0.0),
                  dy=_zeros, tensors=("input",), check=_nyi("copysign_cpu", _is_complex))
maximum = binary("maximum", np.maximum, dx=lambda g, x, y: _max_grad(g, x, y, x < y),
                 dy=lambda g, x, y: _max_grad(g, x, y, x > y), inplace=False, tensors=_T2,
                 check=_no_complex("maximum", msg="maximum not implemented for complex tensors."))
minimum = binary("minimum", np.minimum, dx=lambda g, x, y: _max_grad(g, x, y, x > y),
                 dy=lambda g, x, y: _max_grad(g, x, y, x < y), inplace=False, tensors=_T2,
                 check=_no_complex("minimum", msg="minimum not implemented for complex tensors."))
fmax = binary("fmax", np.fmax, dx=lambda g, x, y: g.where((x >= y) | y.isnan(), 0.0),
              dy=lambda g, x, y: g.where(~((x >= y) | y.isnan()), 0.0), inplace=False, tensors=_T2,
              check=_no_complex("fmax", msg="fmax not implemented for complex tensors."))
fmin = binary("fmin", np.fmin, dx=lambda g, x, y: g.where((x <= y) | y.isnan(), 0.0),
              dy=lambda g, x, y: g.where(~((x <= y) | y.isnan()), 0.0), inplace=False, tensors=_T2,
              check=_no_complex("fmin", msg="fmin not implemented for complex tensors."))
xlogy = binary("xlogy", _xlogy_kernel, TO_FLOAT, dx=lambda g, x, y: xlogy(g, y).masked_fill((x == 0) & (y <= 0), 0),
               dy=lambda g, x, y: g * x / y, check=_nyi("xlogy_cpu", _is_complex))
logaddexp = binary("logaddexp", _logaddexp_kernel, dx=lambda g, x, y: g / cj(1 + (y - x).exp()),
                   dy=lambda g, x, y: g / cj(1 + (x - y).exp()), inplace=False, tensors=_T2,
                   check=_nyi("logaddexp_cpu", _is_integral))
logaddexp2 = binary("logaddexp2", np.logaddexp2, dx=lambda g, x, y: g / (1 + (y - x).exp2()),
                    dy=lambda g, x, y: g / (1 + (x - y).exp2()), inplace=False, tensors=_T2,
                    check=_nyi("logaddexp2_cpu", _not_float))
nextafter = binary("nextafter", _nextafter_kernel, dx=lambda g: g, dy=_zeros, tensors=_T2,  # torch's formula
                   check=_nyi("nextafter_cpu", _not_float))
_heaviside = binary("_heaviside", _heaviside_kernel, dx=_not_differentiable("heaviside"),
                    dy=_not_differentiable("heaviside"), node_name="NotImplemented", tensors=_T2,
                    check=_heaviside_check, method=False, inplace=False)


def heaviside(input, values, *, out=None):
    if isinstance(input, Tensor) and isinstance(values, Tensor) and input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    r = _heaviside(input, values)
    return r if out is None else write_out(out, r, "heaviside")
gcd = binary("gcd", np.gcd, tensors=_T2, check=_nyi("gcd_cpu", _not_int))
lcm = binary("lcm", np.lcm, tensors=_T2, check=_nyi("lcm_cpu", _not_int))


class Ldexp(Op):
    """input * scale with scale = 2**other precomputed (see ldexp)."""
    _name = "LdexpBackward0"

    @staticmethod
    def forward(ctx, x, other, scale, d):
        ctx.save_for_backward(x, other, scale)
        return x.astype(d.np, copy=False) * scale.astype(d.np, copy=False)  # torch's promotion, not NumPy's

    def backward(ctx, grad):
        x, other, scale = ctx.saved_tensors
        need = ctx.needs_input_grad
        # torch's formula grad * pow(2, other) stays integral for an integral other, so negative
        # exponents give 0 there; reproduced as is
        gx = grad * cj(_pow(2, other)) if need[0] else None
        gother = grad * cj(x) * cj(scale) * math.log(2) if need[1] else None
        return gx, gother, None


def ldexp(input, other, *, out=None):
    """input * 2**other, with 2**other computed in other's dtype when it is floating (else in the
    result's dtype), which is where torch rounds it."""
    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"ldexp(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if other._dtype is D.bool and input._dtype.category == D.FLOAT:
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    if other._dtype.category == D.COMPLEX:
        scale = (other.detach() * math.log(2)).exp()
    elif other._dtype.category == D.FLOAT:
        scale = other.detach().exp2()
    else:
        d = D.result_type_of((input, other))
        scale = other.to(D.get_default_dtype() if d.category < D.FLOAT else d).exp2()
    r = Ldexp.apply(input, other, scale, d=D.result_type_of((input, scale)))
    return r if out is None else write_out(out, r, "ldexp")


# ---- comparison and logic -----------------------------------------------------------

def _ordered(name):
    return _nyi(name + "_cpu", _is_complex)


eq = binary("eq", np.equal, COMPARE, dunder="eq", tensors=("input",))
ne = binary("ne", np.not_equal, COMPARE, dunder="ne", aliases=("not_equal",), tensors=("input",))
lt = binary("lt", np.less, COMPARE, dunder="lt", aliases=("less",), tensors=("input",), check=_ordered("lt"))
le = binary("le", np.less_equal, COMPARE, dunder="le", aliases=("less_equal",), tensors=("input",),
            check=_ordered("le"))
gt = binary("gt", np.greater, COMPARE, dunder="gt", aliases=("greater",), tensors=("input",),
            check=_ordered("gt"))
ge = binary("ge", np.greater_equal, COMPARE, dunder="ge", aliases=("greater_equal",), tensors=("input",),
            check=_ordered("ge"))
logical_and = binary("logical_and", np.logical_and, LOGICAL, tensors=_T2)
logical_or = binary("logical_or", np.logical_or, LOGICAL, tensors=_T2)
logical_xor = binary("logical_xor", np.logical_xor, LOGICAL, tensors=_T2)
bitwise_and = binary("bitwise_and", np.bitwise_and, INTEGRAL, dunder="and", rdunder=True)
bitwise_or = binary("bitwise_or", np.bitwise_or, INTEGRAL, dunder="or", rdunder=True)
bitwise_xor = binary("bitwise_xor", np.bitwise_xor, INTEGRAL, dunder="xor", rdunder=True)
bitwise_left_shift = binary("bitwise_left_shift", _shift_left, INTEGRAL, dunder="lshift", rdunder=True,
                            check=_nyi("lshift_cpu", _is_bool))
bitwise_right_shift = binary("bitwise_right_shift", _shift_right, INTEGRAL, dunder="rshift", rdunder=True,
                             check=_nyi("rshift_cpu", _is_bool))
logical_not = unary("logical_not", np.logical_not, LOGICAL)
bitwise_not = unary("bitwise_not", lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
                    INTEGRAL, dunder="invert")


def _eq_dunder(fn):
    """== and != with a non-number give NotImplemented, so Python falls back to identity (x == None)."""
    def dunder(self, other):
        try:
            return fn(self, other)
        except TypeError:
            return NotImplemented
    dunder.__name__ = fn.__name__
    return dunder


def _invert(self):
    if self._dtype.category > D.INT:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(self)


Tensor.__invert__ = _invert
Tensor.__eq__ = _eq_dunder(eq)
Tensor.__ne__ = _eq_dunder(ne)

# ---- unary math ---------------------------------------------------------------------

_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
             "use the `~` or `logical_not()` operator instead.")
_SIGN_COMPLEX = ("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn "
                 "instead.")


def _sign_kernel(x):
    """(0 < x) - (x < 0): 0 for NaN, as torch (np.sign gives NaN)."""
    if x.dtype == np.bool_:
        return x.copy()
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _sgn_kernel(x):
    if x.dtype.kind != "c":
        return _sign_kernel(x)
    a = np.abs(x)
    return np.where(a == 0, 0, x / np.where(a == 0, 1, a)).astype(x.dtype)


_COMPILED_SIGMOID_SIZE = 1 << 14  # elements from which float32 sigmoid runs compiled (numba's call costs ~2 us)


def _sigmoid_kernel(x, out=None):
    """1 / (1 + exp(-x)) as torch computes it: exp overflowing to inf gives exactly 0, and the
    result keeps its relative accuracy for negative x. One buffer (out, which may be x), updated in place.
    Large float32 arrays run ember/_backend/unary_jit.py's one pass (ember[jit]), split across the threads."""
    if x.dtype == np.float32 and x.size >= _COMPILED_SIGMOID_SIZE and x.flags.c_contiguous and \
            (out is None or out.flags.c_contiguous):
        kernels = jit.load("unary_jit")
        if kernels is not None:
            out = empty_like(x) if out is None else out
            parallel.run_flat(kernels.sigmoid, (x, out), x.nbytes * 4)
            return out
    t = negative(x, out=out)
    np.exp(t, out=t)
    t += 1
    return np.reciprocal(t, out=t)


def _sinc_dx(g, x):
    """pi * f(pi x), f(t) = (t cos t - sin t) / t^2; its Taylor series for |t| <= 0.5, where the quotient
    cancels (float32 lost every digit near 0). The quotient sees a safe t there, so neither branch makes NaN."""
    px = math.pi * x
    t2 = px * px
    series = px * (-1 / 3 + t2 * (1 / 30 + t2 * (-1 / 840 + t2 * (1 / 45360 + t2 * (-1 / 3991680 + t2 * (
        1 / 518918400 - t2 / 93405312000))))))  # truncation below 1e-17 relative at |t| = 0.5
    big = px.abs() > 0.5
    t = px.where(big, 1.0)
    quotient = (t * t.cos() - t.sin()) / (t * t)
    return g * cj(math.pi * quotient.where(big, series))


def _sgn_dx(g, x, out):
    """0 for real input (torch's ZeroTensor); for complex z with s = z/|z|, the Wirtinger gradient
    (g - s^2 conj(g)) / (2|z|), 0 at z = 0."""
    if x._dtype.category != D.COMPLEX:
        return zeros_like(g)
    a = x.abs()
    return ((g - out * out * g.conj()) / (2 * a)).where(a != 0, 0.0)


def _acosh_dx(g, x):
    """g / sqrt(x^2 - 1); complex x needs sqrt(x + 1) sqrt(x - 1) (the two differ off the real line)."""
    if x._dtype.category != D.COMPLEX:
        return g * (x * x - 1).rsqrt()
    return g * ((x + 1).rsqrt() * (x - 1).rsqrt()).conj()


def _i1_dx(g, x):
    return g * (i0(x) - _i1(x) / x).where(x != 0, 0.5)


neg = unary("neg", negative, dx=lambda g: -g, aliases=("negative",), dunder="neg",
            check=_rejects(_is_bool, RuntimeError, _NEG_BOOL))
abs = unary("abs", np.abs, dx=lambda g, x: g * x.sgn(), aliases=("absolute",), dunder="abs",
            check=_nyi("abs_cpu", _is_bool))
sign = unary("sign", _sign_kernel, dx=_zeros, check=_rejects(_is_complex, NotImplementedError, _SIGN_COMPLEX))
sgn = unary("sgn", _sgn_kernel, dx=_sgn_dx)
signbit = unary("signbit", np.signbit, inplace=False, out="bool",
                check=_rejects(_is_complex, NotImplementedError, "signbit is not implemented for complex tensors."))
exp = unary("exp", np.exp, TO_FLOAT, dx=lambda g, out: g * cj(out))
exp2 = unary("exp2", np.exp2, TO_FLOAT, dx=lambda g, out: g * cj(out) * math.log(2))
expm1 = unary("expm1", np.expm1, TO_FLOAT, dx=lambda g, out: g * cj(out + 1))
log = unary("log", np.log, TO_FLOAT, dx=lambda g, x: g / cj(x))
log2 = unary("log2", np.log2, TO_FLOAT, dx=lambda g, x: g / cj(x * math.log(2)))
log10 = unary("log10", np.log10, TO_FLOAT, dx=lambda g, x: g / cj(x * math.log(10)))
log1p = unary("log1p", np.log1p, TO_FLOAT, dx=lambda g, x: g / cj(x + 1))
sqrt = unary("sqrt", np.sqrt, TO_FLOAT, dx=lambda g, out: g / cj(2 * out))
rsqrt = unary("rsqrt", _float_kernel(lambda x: 1 / np.sqrt(x)), TO_FLOAT,
              dx=lambda g, out: -0.5 * g * cj(out.pow(3)))
reciprocal = unary("reciprocal", np.reciprocal, TO_FLOAT, dx=lambda g, out: -g * cj(out) * cj(out))
sin = unary("sin", np.sin, TO_FLOAT, dx=lambda g, x: g * cj(x.cos()))
cos = unary("cos", np.cos, TO_FLOAT, dx=lambda g, x: -g * cj(x.sin()))
tan = unary("tan", np.tan, TO_FLOAT, dx=lambda g, out: g * cj(1 + out * out))
asin = unary("asin", np.arcsin, TO_FLOAT, dx=lambda g, x: g * cj((1 - x * x).rsqrt()), aliases=("arcsin",))
acos = unary("acos", np.arccos, TO_FLOAT, dx=lambda g, x: -g * cj((1 - x * x).rsqrt()), aliases=("arccos",))
atan = unary("atan", np.arctan, TO_FLOAT, dx=lambda g, x: g / cj(1 + x * x), aliases=("arctan",))
sinh = unary("sinh", np.sinh, TO_FLOAT, dx=lambda g, x: g * cj(x.cosh()))
cosh = unary("cosh", np.cosh, TO_FLOAT, dx=lambda g, x: g * cj(x.sinh()))
tanh = unary("tanh", np.tanh, TO_FLOAT, dx=lambda g, out: g * cj(1 - out * out))
asinh = unary("asinh", np.arcsinh, TO_FLOAT, dx=lambda g, x: g * cj((x * x + 1).rsqrt()), aliases=("arcsinh",))
acosh = unary("acosh", np.arccosh, TO_FLOAT, dx=_acosh_dx, aliases=("arccosh",))
atanh = unary("atanh", np.arctanh, TO_FLOAT, dx=lambda g, x: g / cj(1 - x * x), aliases=("arctanh",))
deg2rad = unary("deg2rad", np.deg2rad, TO_FLOAT, dx=lambda g: g * (math.pi / 180), check=_no_complex("deg2rad"))
rad2deg = unary("rad2deg", np.rad2deg, TO_FLOAT, dx=lambda g: g * (180 / math.pi), check=_no_complex("rad2deg"))
sigmoid = unary("sigmoid", _float_kernel(_sigmoid_kernel), TO_FLOAT, dx=lambda g, out: g * cj(out) * cj(1 - out))
erf = unary("erf", S.erf, TO_FLOAT, dx=lambda g, x: g * (2 / math.sqrt(math.pi)) * (-x * x).exp(),
            check=_nyi("erf_vml_cpu", _is_complex))
erfc = unary("erfc", S.erfc, TO_FLOAT, dx=lambda g, x: -g * (2 / math.sqrt(math.pi)) * (-x * x).exp(),
             check=_nyi("erfc_vml_cpu", _is_complex))
erfinv = unary("erfinv", S.erfinv, TO_FLOAT, dx=lambda g, x: g * (math.sqrt(math.pi) / 2) * x.erfinv().square().exp(),
               check=_nyi("erfinv_vml_cpu", _is_complex))
lgamma = unary("lgamma", S.lgamma, TO_FLOAT, dx=lambda g, x: g * x.digamma(), check=_nyi("lgamma_vml_cpu", _is_complex))
digamma = unary("digamma", S.digamma, TO_FLOAT, dx=lambda g, x: g * x.polygamma(1),
                check=_nyi("digamma", _is_complex))
i0 = unary("i0", S.i0, TO_FLOAT, dx=lambda g, x: g * _i1(x), check=_nyi("i0_vml_cpu", _is_complex))
_i1 = unary("_i1", S.i1, TO_FLOAT, dx=_i1_dx, method=False, inplace=False, node_name="SpecialI1Backward0")
sinc = unary("sinc", _float_kernel(np.sinc), TO_FLOAT, dx=_sinc_dx)


def positive(input):
    """torch.positive returns its input itself (not a copy); bool tensors are an error."""
    if input._dtype is D.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# ---- rounding -------------------------------------------------------------------------

def _int_passthrough(kernel):
    """floor/ceil/trunc/round are identities on integer tensors."""
    def k(x):
        return x.copy() if x.dtype.kind in "iu" else kernel(x)
    return k


def _rounding_check(vml):
    def check(d):
        if d is D.bool:
            raise NotImplementedError(f"\"{vml}\" not implemented for 'Bool'")
        if d.category == D.COMPLEX:
            raise NotImplementedError(f"{vml.split('_')[0]} is not supported for complex inputs")
    return check


floor = unary("floor", _int_passthrough(np.floor), dx=_zeros, check=_rounding_check("floor_vml_cpu"))
ceil = unary("ceil", _int_passthrough(np.ceil), dx=_zeros, check=_rounding_check("ceil_vml_cpu"))
trunc = unary("trunc", _int_passthrough(np.trunc), dx=_zeros, aliases=("fix",),
              check=_rounding_check("trunc_vml_cpu"))
frac = unary("frac", lambda x: x - np.trunc(x), dx=lambda g: g, check=_nyi("frac_cpu", _not_float))
_round0 = unary("_round0", _int_passthrough(np.rint), dx=_zeros, method=False, inplace=False,
                node_name="RoundBackward0", check=_nyi("round_vml_cpu", _bool_or_complex))

# ---- classification --------------------------------------------------------------------

isnan = unary("isnan", np.isnan, inplace=False, out=False)
isinf = unary("isinf", np.isinf, inplace=False, out=False)
isfinite = unary("isfinite", np.isfinite, inplace=False, out=False)
isposinf = unary("isposinf", np.isposinf, inplace=False, out="bool",
                 check=_rejects(_is_complex, RuntimeError, "isposinf does not support complex inputs."))
isneginf = unary("isneginf", np.isneginf, inplace=False, out="bool",
                 check=_rejects(_is_complex, RuntimeError, "isneginf does not support complex inputs."))
isreal = unary("isreal", np.isreal, inplace=False, out=False)


# ---- dtype conversion -------------------------------------------------------------------

class ToCopy(Op):
    _name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.in_dtype = x.dtype
        if x.dtype.kind == "c" and dtype.kind != "c":
            x = x.real  # torch discards the imaginary part (with a warning)
        r = x.astype(dtype)
        return _iter_layout(r, x) if r.ndim > 1 and not x.flags.c_contiguous else r  # (empty_like's strides)

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


install(add, "add", inplace=make_inplace(add, "add", fast=_add_, recorded=_add_recorded))
install(sub, "sub", inplace=make_inplace(sub, "sub", fast=_sub_, recorded=_sub_recorded), aliases=("subtract",))
install(div, "div", inplace=make_inplace(div, "div", fast=_div_), aliases=("divide",))
install(_true_div, "true_divide", inplace=make_inplace(_true_div, "true_divide", _true_div.row))
install(rsub, "rsub", method=False)
install(pow, "pow", method=False, inplace=make_inplace(pow, "pow", fast=_pow_))
Tensor.pow = Tensor.__pow__ = _pow_method
Tensor.pow_ = Tensor.__ipow__ = namespace["pow_"]  # method=False installs no Tensor.pow_: the checked one (negative int powers)
Tensor.__rpow__ = _rpow
install(float_power, "float_power", inplace=_float_power_)
install(square, "square", inplace=make_inplace(square, "square"))
install(ldexp, "ldexp", inplace=make_inplace(ldexp, "ldexp"))
install(positive, "positive")
install(heaviside, "heaviside", inplace=make_inplace(heaviside, "heaviside"))
Tensor.__add__ = Tensor.__radd__ = _add_dunder
Tensor.__iadd__ = Tensor.add_
Tensor.__sub__ = sub
Tensor.__rsub__ = _rsub_dunder
Tensor.__isub__ = Tensor.sub_
Tensor.__truediv__ = div
Tensor.__rtruediv__ = Tensor.__rdiv__ = _rdiv_dunder  # torch keeps __rdiv__ as the same function
Tensor.__itruediv__ = Tensor.div_
Tensor.__pos__ = positive
_abs_real = Tensor.abs_


def _abs_(input):
    """abs_: torch refuses complex tensors (the real result cannot be written back into them)."""
    if input._dtype.category == D.COMPLEX:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _abs_real(input)


Tensor.abs_ = Tensor.absolute_ = _abs_
from ._argcheck import guard  # noqa: E402
namespace["abs_"] = namespace["absolute_"] = guard(_abs_, "abs_")  # Note [Checked at the boundary]

from . import pointwise_params as _params, complex as _complex  # noqa: E402,F401  (the rest of the family)
from .pointwise_params import where, clamp, polygamma  # noqa: E402,F401  (imported by other families)
