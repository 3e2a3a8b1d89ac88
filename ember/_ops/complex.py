"""Complex numbers: real/imag and view_as_real/view_as_complex as views, complex, polar,
conj, angle.

Complex autograd follows torch's convention (conjugate Wirtinger calculus): for a holomorphic
f the gradient is grad * conj(f'(z)), which every derivative formula writes as `cj(...)` on the
values it multiplies by (`cj` below: the conjugate of a complex tensor or number, anything real
returned itself, so real-valued training pays one type check). abs, sgn, angle, real, imag and
conj have formulas of their own.

Where ember differs from torch: conj() of a complex tensor is a copy (torch returns a lazy
view with the conjugate bit set; is_conj() is always False here), and there is no complex32.
"""
import math

import numpy as np

from .. import _dtype as D
from .._backend.numpy_cpu import strided_view
from .._tensor import Tensor
from ._registry import TO_FLOAT, Op, install, make_inplace, unary, write_out
from .creation import zeros_like

_make = Tensor._make
_NAMES = D.SCALAR_NAMES
_COMPLEX = D.COMPLEX
_COMPLEX_NUMBERS = (complex, np.complexfloating)  # (the name complex is the op below)


class Real(Op):
    """The real part of a complex tensor, as a view (torch: view_as_real + select)."""
    _name = "SelectBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        return x.real

    def backward(ctx, grad):
        return complex(grad, zeros_like(grad))


class Imag(Op):
    _name = "SelectBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        return x.imag

    def backward(ctx, grad):
        return complex(zeros_like(grad), grad)


def real(input):
    """The real part; a real tensor is returned itself (as torch)."""
    if input._dtype.category != D.COMPLEX:
        return input
    return Real.apply(input)


def imag(input):
    if input._dtype.category != D.COMPLEX:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input)


def _set_real(self, value):
    real(self).copy_(value)


def _set_imag(self, value):
    imag(self).copy_(value)


class ViewAsReal(Op):
    _name = "ViewAsRealBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        re = x.real  # same strides as x, in units of half an element
        strides = tuple(s // re.itemsize for s in re.strides)
        return strided_view(re, x.shape + (2,), strides + (1,))

    def backward(ctx, grad):
        return view_as_complex(grad.contiguous())


class ViewAsComplex(Op):
    _name = "ViewAsComplexBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        cd = np.complex64 if x.dtype == np.float32 else np.complex128
        return x.view(cd)[..., 0]

    def backward(ctx, grad):
        return view_as_real(grad)


def view_as_real(input):
    if input._dtype.category != D.COMPLEX:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(input)


def view_as_complex(input):
    d = input._dtype
    if d is not D.float32 and d is not D.float64:
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor "
                           f"of scalar type: {_NAMES[d]}")
    if input.dim() == 0 or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return ViewAsComplex.apply(input)


def _float_pair(a, b, name="complex", names=("real", "imag")):
    for pos, (v, arg) in enumerate(zip((a, b), names), 1):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")
    da, db = a._dtype, b._dtype
    if da.category != D.FLOAT or db.category != D.FLOAT or da is D.bfloat16 or db is D.bfloat16:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {_NAMES[da]} and "
                           f"{_NAMES[db]}")
    if da is not db:
        raise RuntimeError(f"Expected object of scalar type {_NAMES[da]} but got scalar type {_NAMES[db]} for "
                           "second argument")
    if da is D.float16:
        raise RuntimeError("ember has no complex32 (ComplexHalf) dtype")


class Complex(Op):
    _name = "ComplexBackward0"

    @staticmethod
    def forward(ctx, re, im):
        cd = np.complex64 if re.dtype == np.float32 else np.complex128
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), cd)
        out.real = re
        out.imag = im
        return out

    def backward(ctx, grad):
        need = ctx.needs_input_grad
        return (real(grad) if need[0] else None), (imag(grad) if need[1] else None)


def complex(real, imag, *, out=None):
    _float_pair(real, imag)
    r = Complex.apply(real, imag)
    if out is not None and isinstance(out, Tensor) and out._dtype is not r._dtype:
        raise RuntimeError(f"Expected object of scalar type {D.SCALAR_NAMES[r._dtype]} but got scalar type "
                           f"{D.SCALAR_NAMES[out._dtype]} for argument 'out'")
    return r if out is None else write_out(out, r, "complex")


def polar(abs, angle, *, out=None):
    """abs * (cos(angle) + i sin(angle)), composed from differentiable real ops."""
    _float_pair(abs, angle, "polar", ("abs", "angle"))
    r = complex(abs * angle.cos(), abs * angle.sin())
    return r if out is None else write_out(out, r, "polar")


class ConjPhysical(Op):
    _name = "ConjBackward0"

    @staticmethod
    def forward(ctx, x):
        return np.conjugate(x)

    def backward(ctx, grad):
        return conj(grad)


def cj(v):
    """The conjugate of a value in a derivative formula: complex tensors and numbers conjugated,
    real ones (and None) returned themselves, at no cost to real-valued autograd."""
    if isinstance(v, Tensor):
        return v if v._dtype.category != _COMPLEX else ConjPhysical.apply(v)
    return v.conjugate() if isinstance(v, _COMPLEX_NUMBERS) else v


def conj(input):
    """A real tensor is returned itself; a complex one is conjugated into a copy (not a view)."""
    if input._dtype.category != D.COMPLEX:
        return input
    return ConjPhysical.apply(input)


def conj_physical(input, *, out=None):
    r = conj(input)
    return r if out is None else write_out(out, r, "conj_physical")


def chalf(self, *, memory_format=None):
    """Tensor.chalf() converts to complex32 (ComplexHalf), a dtype ember does not have (NumPy has no
    half-precision complex type): it raises rather than silently widening to complex64."""
    raise NotImplementedError("Tensor.chalf(): ember has no complex32 (torch.chalf, ComplexHalf) dtype because NumPy "
                              "has no half-precision complex type; use Tensor.cfloat() (complex64) instead")


def _identity(input):
    """resolve_conj/resolve_neg: input itself (no lazy conj/neg bits); the guard words a non-Tensor's error."""
    if not isinstance(input, Tensor):
        raise TypeError(f"expected Tensor, not {type(input).__name__}")
    return input


def _false(input):
    """is_conj/is_neg: never set (no lazy conj/neg bits); the guard words a non-Tensor's error."""
    if not isinstance(input, Tensor):
        raise TypeError(f"expected Tensor, not {type(input).__name__}")
    return False


def _angle_kernel(x):
    if x.dtype.kind == "c":
        return np.angle(x)
    # real: pi for negative numbers, 0 otherwise (also for -0.0), NaN stays NaN
    return np.where(np.isnan(x), x, np.where(x < 0, np.array(math.pi, x.dtype), np.zeros((), x.dtype)))


def _angle_dx(g, x):
    """0 for real input; grad * i z / |z|^2 for complex z (0 at z = 0), as torch's angle_backward."""
    if x._dtype.category != D.COMPLEX:
        return zeros_like(g)
    return (g * x / x.abs().pow(2) * 1j).where(x != 0, 0.0)


angle = unary("angle", _angle_kernel, TO_FLOAT, dx=_angle_dx, inplace=False)

install(real, "real", method=False)
install(imag, "imag", method=False)
Tensor.real = property(real, _set_real)
Tensor.imag = property(imag, _set_imag)
install(view_as_real, "view_as_real", method=False)
install(view_as_complex, "view_as_complex", method=False)
install(complex, "complex", method=False)
install(polar, "polar", method=False)
install(conj, "conj")
install(conj_physical, "conj_physical", inplace=make_inplace(conj_physical, "conj_physical"))
install(chalf, "chalf", function=False)
install(_identity, "resolve_conj")
install(_identity, "resolve_neg")
install(_false, "is_conj")
install(_false, "is_neg")
