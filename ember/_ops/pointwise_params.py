"""Elementwise ops with parameters or three operands: clamp, where, lerp, addcmul/addcdiv,
logit, nan_to_num, round(decimals), polygamma, mvlgamma, isclose/allclose/equal, frexp."""
import math

import numpy as np

from .. import _dtype as D
from .. import return_types
from .._backend import maximum, minimum, where as _select
from .._backend.numpy_cpu import layout_of, relayout
from .._tensor import Tensor
from ._argcheck import _is_number, invalid_combination, wrong_type
from ._registry import Op, fits, install, make_inplace, write_out
from .complex import cj
from .creation import zeros_like
from .geometry import iter_strides

_make = Tensor._make
_NAMES = D.SCALAR_NAMES


def _as_tensor(v, d):
    """A bound or operand as a Tensor of dtype d (Python scalars become 0-dim tensors)."""
    if isinstance(v, Tensor):
        return v if v._dtype is d else v.to(d)
    return _make(np.array(v).astype(d.np), d)


# ---- clamp ----------------------------------------------------------------------------

class Clamp(Op):
    """clamp with optional lower/upper bounds (arrays broadcasting against x)."""
    _name = "ClampBackward1"

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x, lo, hi)
        out = x
        if lo is not None:
            out = maximum(out, lo)  # NaN in x or in the bound propagates, as torch
        if hi is not None:
            out = minimum(out, hi)  # applied last: min > max gives max, as torch
        return out.copy() if out is x else out

    def backward(ctx, grad):
        x, lo, hi = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = 0.0
        if lo is not None and hi is not None:
            gx = grad.where((x >= lo) & (x <= hi), zero) if need[0] else None
            glo = grad.where((x < lo) & (lo < hi), zero) if need[1] else None
            ghi = grad.where((x > hi) | (hi < lo), zero) if need[2] else None
            return gx, glo, ghi
        if lo is not None:
            return grad.where(x >= lo, zero) if need[0] else None, grad.where(x < lo, zero) if need[1] else None, None
        return grad.where(x <= hi, zero) if need[0] else None, None, grad.where(x > hi, zero) if need[2] else None


def clamp(input, min=None, max=None, *, out=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    d = D.result_type_of([input] + [v for v in (min, max) if v is not None])
    if d.category == D.COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")
    if d is D.bool and not isinstance(min, Tensor) and not isinstance(max, Tensor):
        kernel = "clamp_scalar_cpu" if min is not None and max is not None else \
            "clamp_min_scalar_cpu" if min is not None else "clamp_max_scalar_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    x = input if input._dtype is d else input.to(d)
    lo = None if min is None else _as_tensor(min, d)
    hi = None if max is None else _as_tensor(max, d)
    try:
        r = Clamp.apply(x, lo, hi)
    except ValueError:
        b = lo if lo is not None else hi
        raise RuntimeError(f"clamp: shapes {list(input.shape)} and {list(b.shape)} are not broadcastable") from None
    if r._grad_fn is not None and (isinstance(min, Tensor) or isinstance(max, Tensor)):
        r._grad_fn._name = "ClampBackward0"
    return r if out is None else write_out(out, r, "clamp")


def _clamp_(self, min=None, max=None):
    """clamp_ straight into self's array (Note [Straight into the array]) when the bounds keep
    self's dtype and broadcast into its shape; the same maximum-then-minimum as Clamp."""
    d = self._dtype
    if d.category == D.COMPLEX or d is D.bool or (min is None and max is None):
        return False
    bounds = [v for v in (min, max) if v is not None]
    if D.result_type_of([self] + bounds) is not d:
        return False
    for v in bounds:
        if isinstance(v, Tensor) and not fits(v._data.shape, self._data.shape):
            return False
    x = self._data
    if min is not None:
        maximum(x, _as_tensor(min, d)._data, out=x)
    if max is not None:
        minimum(x, _as_tensor(max, d)._data, out=x)
    return True


def _clamp_min_(self, min):
    return _clamp_(self, min=min)


def _clamp_max_(self, max):
    return _clamp_(self, max=max)


def _check_input(input, name):
    """torch's TypeError for a non-Tensor input (ember would fail reading its dtype)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def clamp_min(input, min, *, out=None):
    _check_input(input, "clamp_min")
    r = clamp(input, min=min)
    if r._grad_fn is not None:
        r._grad_fn._name = "ClampMinBackward1" if isinstance(min, Tensor) else "ClampMinBackward0"
    return r if out is None else write_out(out, r, "clamp_min")


def clamp_max(input, max, *, out=None):
    _check_input(input, "clamp_max")
    r = clamp(input, max=max)
    if r._grad_fn is not None:
        r._grad_fn._name = "ClampMaxBackward1" if isinstance(max, Tensor) else "ClampMaxBackward0"
    return r if out is None else write_out(out, r, "clamp_max")


# ---- where ----------------------------------------------------------------------------

class Where(Op):
    _name = "WhereBackward0"

    @staticmethod
    def forward(ctx, cond, x, y):
        ctx.save_for_backward(cond)
        r = _select(cond, x, y)
        if r.ndim > 1 and not (cond.flags.c_contiguous and x.flags.c_contiguous and y.flags.c_contiguous):
            r = relayout(r, iter_strides(r.shape, [layout_of(a) for a in (cond, x, y) if a.ndim]))
        return r

    def backward(ctx, grad):
        (cond,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = zeros_like(grad)
        gx = Where.apply(cond, grad, zero) if need[1] else None
        gy = Where.apply(cond, zero, grad) if need[2] else None
        return None, gx, gy


_WHERE_OVERLOADS = ("Tensor condition", "Tensor condition, Tensor input, Tensor other, *, Tensor out = None",
                    "Tensor condition, Number self, Tensor other", "Tensor condition, Tensor input, Number other",
                    "Tensor condition, Number self, Number other")


def where(condition, input=None, other=None, *, out=None):
    if input is None or other is None:  # torch's where(condition) overload, which has no out=
        if input is not None or other is not None or out is not None:
            raise invalid_combination("where", (condition, input, other), {} if out is None else {"out": out},
                                      _WHERE_OVERLOADS)
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' (position 1) must be Tensor, not {type(condition).__name__}")
    if condition._dtype is not D.bool and condition._dtype is not D.uint8:
        for v in (input, other):  # torch's parser refuses a non-number first
            if not isinstance(v, (Tensor, int, float, complex, bool)):
                raise invalid_combination("where", (condition, input, other), {}, _WHERE_OVERLOADS)
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_NAMES[condition._dtype]}")
    try:
        d = D.result_type_of((input, other))
    except TypeError:  # one of them None (no overload takes one of the two) or not a number
        raise invalid_combination("where", (condition, input, other), {}, _WHERE_OVERLOADS) from None
    a = _as_tensor(input, d)
    b = _as_tensor(other, d)
    try:
        r = Where.apply(condition, a, b)
    except ValueError:
        raise RuntimeError(f"where(): shapes {list(condition.shape)}, {list(a.shape)} and {list(b.shape)} are "
                           "not broadcastable") from None
    return r if out is None else write_out(out, r, "where")


def _where_method(self, condition, other):
    return where(condition, self, other)


# ---- lerp, addcmul, addcdiv -------------------------------------------------------------

class Lerp(Op):
    """input + weight * (end - input), evaluated from the nearer end as torch does."""
    _name = "LerpBackward1"

    @staticmethod
    def forward(ctx, x, end, weight):
        ctx.save_for_backward(x, end, weight)
        diff = end - x
        near_start = np.abs(weight) < 0.5
        return _select(near_start, x + weight * diff, end - diff * (1 - weight)).astype(x.dtype, copy=False)

    def backward(ctx, grad):
        x, end, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = grad * cj(1 - weight) if need[0] else None
        gend = grad * cj(weight) if need[1] else None
        gw = grad * cj(end - x) if need[2] else None
        return gx, gend, gw


def lerp(input, end, weight, *, out=None):
    d = input._dtype
    if end._dtype is not d:
        raise RuntimeError(f"expected dtype {D.C_TYPE_NAMES[d]} for `end` but got dtype {D.C_TYPE_NAMES[end._dtype]}")
    tensor_weight = isinstance(weight, Tensor)
    if tensor_weight and weight._dtype is not d:
        raise RuntimeError(f"expected dtype {D.C_TYPE_NAMES[d]} for `weight` but got dtype {D.C_TYPE_NAMES[weight._dtype]}")
    if d.category < D.FLOAT:
        kernel = "lerp_kernel_tensor" if tensor_weight else "lerp_kernel_scalar"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_NAMES[d]}'")
    if not tensor_weight and weight.__class__ is not float and not _is_number(weight):  # np.array(None) is nan
        raise wrong_type("lerp", "weight", weight, "Tensor", 3)
    w = weight if tensor_weight else _make(np.array(weight, dtype=d.np), d)
    try:
        r = Lerp.apply(input, end, w)
    except ValueError:
        raise RuntimeError(f"lerp: shapes {list(input.shape)}, {list(end.shape)} and {list(w.shape)} are not "
                           "broadcastable") from None
    if r._grad_fn is not None and not tensor_weight:
        r._grad_fn._name = "LerpBackward0"
    return r if out is None else write_out(out, r, "lerp")


def _lerp_(self, end, weight):
    """lerp_ with a number weight straight into self's array, the branch Lerp takes for that weight;
    end - self is the one temporary."""
    d = self._dtype
    if d.category != D.FLOAT or isinstance(weight, Tensor) or not isinstance(end, Tensor) or end._dtype is not d \
            or not fits(end._data.shape, self._data.shape):
        return False
    x = self._data
    e = end._data
    w = np.array(weight, dtype=d.np)
    diff = np.subtract(e, x)
    if np.abs(w) < 0.5:
        diff *= w
        x += diff
    else:
        diff *= 1 - w
        np.subtract(e, diff, out=x)
    return True


def _value_in(value, tensors):
    """addcmul/addcdiv's value, converted to the result's kind as torch does (0.5 -> 0 for ints)."""
    d = D.result_type_of(tensors)
    if d.category <= D.INT and isinstance(value, float):
        return int(value)
    return value


def _addc_args(name, tensor1, tensor2):
    """addcmul/addcdiv take two Tensors (the composite would broadcast a number)."""
    for pos, arg, v in ((2, "tensor1", tensor1), (3, "tensor2", tensor2)):
        if not isinstance(v, Tensor):
            raise wrong_type(name, arg, v, "Tensor", pos)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    if tensor2.__class__ is not Tensor or tensor1.__class__ is not Tensor:
        _addc_args("addcmul", tensor1, tensor2)
    v = _value_in(value, (input, tensor1, tensor2))
    r = input + (v * tensor1) * tensor2 if v != 1 else input + tensor1 * tensor2
    if r._dtype is D.bool:  # torch has no bool kernel (the composite would compute one)
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    return r if out is None else write_out(out, r, "addcmul")


def _addc_(self, tensor1, tensor2, value, divide):
    """addcmul_/addcdiv_ straight into self's array when all three tensors have self's floating dtype:
    self += (value * tensor1) (*|/) tensor2, in the generic path's order, one temporary."""
    d = self._dtype
    if d.category != D.FLOAT or type(value) not in (int, float) or not isinstance(tensor1, Tensor) \
            or not isinstance(tensor2, Tensor) or tensor1._dtype is not d or tensor2._dtype is not d:
        return False
    x = self._data
    a = tensor1._data
    b = tensor2._data
    if not fits(a.shape, x.shape) or not fits(b.shape, x.shape):
        return False
    op = np.true_divide if divide else np.multiply
    if value != 1:
        t = np.asarray(np.multiply(a, np.array(value, dtype=d.np)))  # 0-d operands give a NumPy scalar
        t = op(t, b, out=t) if t.ndim and fits(b.shape, t.shape) else op(t, b)
    else:
        t = op(a, b)
    x += t
    return True


def _addcmul_(self, tensor1, tensor2, *, value=1):
    return _addc_(self, tensor1, tensor2, value, False)


def _addcdiv_(self, tensor1, tensor2, *, value=1):
    return _addc_(self, tensor1, tensor2, value, True)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    if tensor2.__class__ is not Tensor or tensor1.__class__ is not Tensor:
        _addc_args("addcdiv", tensor1, tensor2)
    if tensor1._dtype.category < D.FLOAT and tensor2._dtype.category < D.FLOAT:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
                           "tensor2), for all dtypes.")
    r = input + (value * tensor1) / tensor2 if value != 1 else input + tensor1 / tensor2
    return r if out is None else write_out(out, r, "addcdiv")


# ---- logit, nan_to_num, round(decimals) -------------------------------------------------

def _float_input(input, name):
    if input._dtype.category == D.COMPLEX:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_NAMES[input._dtype]}'")
    return input if input._dtype.category == D.FLOAT else input.to(D.get_default_dtype())


class Logit(Op):
    _name = "LogitBackward0"

    @staticmethod
    def forward(ctx, x, eps):
        ctx.save_for_backward(x)
        ctx.eps = eps
        z = x if eps is None else np.clip(x, eps, 1 - eps)
        return np.log(z / (1 - z)).astype(x.dtype, copy=False)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        g = grad / (x * (1 - x))
        eps = ctx.eps
        if eps is None:
            return g
        return g.where((x >= eps) & (x <= 1 - eps), 0.0)


def logit(input, eps=None, *, out=None):
    r = Logit.apply(_float_input(input, "logit"), eps=eps)
    return r if out is None else write_out(out, r, "logit")


def _nan_to_num_real(x, nan, posinf, neginf, d):
    info = D.finfo(d)
    hi = np.array(info.max if posinf is None else posinf).astype(x.dtype)
    lo = np.array(info.min if neginf is None else neginf).astype(x.dtype)
    r = _select(np.isnan(x), np.array(nan).astype(x.dtype), x)
    return _select(r == np.inf, hi, _select(r == -np.inf, lo, r))


class NanToNum(Op):
    _name = "NanToNumBackward0"

    @staticmethod
    def forward(ctx, x, nan, posinf, neginf, d):
        ctx.save_for_backward(x)
        if d.category < D.FLOAT:
            return x.copy()
        if d.category == D.COMPLEX:
            re = _nan_to_num_real(x.real, nan, posinf, neginf, d.to_real())
            im = _nan_to_num_real(x.imag, nan, posinf, neginf, d.to_real())
            return (re + 1j * im).astype(x.dtype)
        return _nan_to_num_real(x, nan, posinf, neginf, d)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.where(x.isfinite(), 0.0)


def nan_to_num(input, nan=None, posinf=None, neginf=None, *, out=None):
    r = NanToNum.apply(input, nan=0.0 if nan is None else nan, posinf=posinf, neginf=neginf, d=input._dtype)
    return r if out is None else write_out(out, r, "nan_to_num")


class RoundDecimals(Op):
    _name = "RoundBackward1"

    @staticmethod
    def forward(ctx, x, decimals):
        return np.round(x, decimals)

    def backward(ctx, grad):
        return zeros_like(grad)


def round(input, *, decimals=0, out=None):
    from .pointwise import _round0
    if decimals == 0:
        r = _round0(input)
    else:
        if input._dtype.category != D.FLOAT:
            raise NotImplementedError(f"\"round_cpu\" not implemented for '{_NAMES[input._dtype]}'")
        r = RoundDecimals.apply(input, decimals=decimals)
    return r if out is None else write_out(out, r, "round")


# ---- polygamma family ---------------------------------------------------------------------

class Polygamma(Op):
    _name = "PolygammaBackward0"

    @staticmethod
    def forward(ctx, x, n):
        from .._backend import special
        ctx.n = n
        ctx.save_for_backward(x)
        return special.polygamma(n, x)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * polygamma(ctx.n + 1, x)


def polygamma(n, input, *, out=None):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    r = Polygamma.apply(_float_input(input, "polygamma"), n=n)
    return r if out is None else write_out(out, r, "polygamma")


def _polygamma_method(self, n):
    return polygamma(n, self)


def mvlgamma(input, p):
    """Multivariate log-gamma: sum_j lgamma(x - j/2), j < p, plus p(p-1)/4 log(pi)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    r = input.lgamma()
    for j in range(1, p):
        r = r + (input - j / 2).lgamma()
    return r + p * (p - 1) / 4 * math.log(math.pi)


# ---- comparison of whole tensors --------------------------------------------------------

def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _check_input(input, "isclose")
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if input._dtype is not other._dtype:
        raise RuntimeError(f"{_NAMES[input._dtype]} did not match {_NAMES[other._dtype]}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a = input._data
    b = other._data
    close = a == b
    if equal_nan and input._dtype.category >= D.FLOAT:
        close = close | (np.isnan(a) & np.isnan(b))
    if rtol or atol:
        if input._dtype.category < D.FLOAT:
            a = a.astype(D.get_default_dtype().np)
            b = b.astype(D.get_default_dtype().np)
        err = np.abs(a - b)
        close = close | (np.isfinite(err) & (err <= atol + np.abs(rtol * b)))
    return _make(np.asarray(close))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input, other):
    if input._data.shape != other._data.shape:
        return False
    if input._dtype is not other._dtype:
        D.promote_types(input._dtype, other._dtype)  # torch's promotion errors (uint16/32/64)
    return bool(np.array_equal(input._data, other._data))


# ---- frexp -------------------------------------------------------------------------------

class Frexp(Op):
    _name = "FrexpBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x):
        mantissa, exponent = np.frexp(x)
        exponent = np.asarray(exponent, dtype=np.int32)  # 0-d input: frexp gives NumPy scalars
        ctx.save_for_backward(exponent)
        return mantissa.astype(x.dtype, copy=False), exponent

    def backward(ctx, grad, grad_exponent=None):
        (exponent,) = ctx.saved_tensors
        return grad / exponent.to(grad.dtype).exp2()  # x = mantissa * 2**exponent


def frexp(input, *, out=None):
    if input._dtype.category != D.FLOAT:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    r = return_types.frexp(Frexp.apply(input))
    if out is not None:
        if not isinstance(out, (tuple, list)):
            raise TypeError(f"frexp(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
        write_out(out[0], r[0], "frexp")
        write_out(out[1], r[1], "frexp")
        return return_types.frexp(tuple(out))
    return r


# ---- installation ----------------------------------------------------------------------

install(clamp, "clamp", inplace=make_inplace(clamp, "clamp", fast=_clamp_), aliases=("clip",))
install(clamp_min, "clamp_min", inplace=make_inplace(clamp_min, "clamp_min", fast=_clamp_min_))
install(clamp_max, "clamp_max", inplace=make_inplace(clamp_max, "clamp_max", fast=_clamp_max_))
install(where, "where", method=False)
Tensor.where = _where_method
install(lerp, "lerp", inplace=make_inplace(lerp, "lerp", fast=_lerp_))
install(addcmul, "addcmul", inplace=make_inplace(addcmul, "addcmul", fast=_addcmul_))
install(addcdiv, "addcdiv", inplace=make_inplace(addcdiv, "addcdiv", fast=_addcdiv_))
install(logit, "logit", inplace=make_inplace(logit, "logit"))
install(nan_to_num, "nan_to_num", inplace=make_inplace(nan_to_num, "nan_to_num"))
install(round, "round", inplace=make_inplace(round, "round"))
install(polygamma, "polygamma", method=False)
Tensor.polygamma = _polygamma_method
Tensor.polygamma_ = make_inplace(_polygamma_method, "polygamma")
install(mvlgamma, "mvlgamma", inplace=make_inplace(mvlgamma, "mvlgamma"), out=True)
install(isclose, "isclose")
install(allclose, "allclose")
install(equal, "equal")
install(frexp, "frexp")
