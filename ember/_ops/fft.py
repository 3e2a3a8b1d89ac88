"""torch.fft: every transform is one of three primitives (c2c, r2c, c2r, as torch's _fft_* ops) after
promotion and resizing (zero-padding or trimming the signal to n / s), both ordinary ember ops.

Gradients (torch's conjugate convention): a transform's adjoint is the opposite transform with the
same scaling (see _backend/fft_numpy.py). The onesided r2c drops the upper half of the spectrum, so its
adjoint zero-fills it back before the inverse c2c and keeps the real part; the c2r reads the half
spectrum as a Hermitian full one, so its adjoint is a onesided r2c whose bins 1..n - n//2 - 1 (those
whose mirror images lie outside the half) count twice.
"""
import warnings
from collections.abc import Sequence

import numpy as np

from .. import _dtype as D
from .._backend import fft_numpy as K
from .._tensor import Tensor, _wrap_dim
from ._registry import Op, write_out
from .complex import conj, real
from .creation import finish, into_out
from .joining import roll
from .sampling import ConstantPad

_make = Tensor._make
_NAMES = D.SCALAR_NAMES
_TO_COMPLEX = {D.float32: D.complex64, D.float64: D.complex128}


# ---- the three primitives, forward and backward side by side ----------------------------------

class FftC2C(Op):
    """Complex to complex over dims: exp(-i..) when forward, scaled by `scaling` (K.NONE/SQRT_N/N)."""
    _name = "FftC2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, scaling, forward):
        ctx.args = (dims, scaling, forward)
        return K.c2c(x, dims, scaling, forward)

    def backward(ctx, grad):
        dims, scaling, forward = ctx.args
        return FftC2C.apply(grad, dims=dims, scaling=scaling, forward=not forward)


class FftR2C(Op):
    """Real to complex over dims (forward), the last dim's half spectrum only when onesided."""
    _name = "FftR2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, scaling, onesided):
        ctx.args = (dims, scaling, onesided, x.shape[dims[-1]])
        return K.r2c(x, dims, scaling, onesided)

    def backward(ctx, grad):
        dims, scaling, onesided, last_size = ctx.args
        if onesided:
            grad = _resize(grad, dims[-1:], (last_size,))  # the dropped bins had no effect: zeros
        return real(FftC2C.apply(grad, dims=dims, scaling=scaling, forward=False))


class FftC2R(Op):
    """A Hermitian half spectrum to `last_size` real points along the last dim (backward, +i)."""
    _name = "FftC2RBackward0"

    @staticmethod
    def forward(ctx, x, dims, scaling, last_size):
        ctx.args = (dims, scaling, last_size)
        return K.c2r(x, dims, scaling, last_size)

    def backward(ctx, grad):
        dims, scaling, last_size = ctx.args
        g = FftR2C.apply(grad, dims=dims, scaling=scaling, onesided=True)
        half = g.shape[dims[-1]]
        doubled = last_size - half  # bins 1..doubled stand for themselves and their mirror images
        if doubled <= 0:
            return g
        weight = np.ones(half, g._data.real.dtype)
        weight[1:1 + doubled] = 2
        shape = [1] * g.dim()
        shape[dims[-1]] = half
        return g * _make(weight.reshape(shape))


# ---- argument handling ------------------------------------------------------------------------

def _scaling(norm, forward, fname):
    """torch's norm string as a primitive's scaling: "backward" (None) scales the backward transform
    by 1/n, "forward" the forward one, "ortho" both by 1/sqrt(n)."""
    if norm is not None and not isinstance(norm, str):
        raise TypeError(f"fft_{fname}(): argument 'norm' must be str, not {type(norm).__name__}")
    if norm is None or norm == "backward":
        return K.NONE if forward else K.N
    if norm == "forward":
        return K.N if forward else K.NONE
    if norm == "ortho":
        return K.SQRT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _check_tensor(input, fname):
    if not isinstance(input, Tensor):
        raise TypeError(f"fft_{fname}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _int_arg(v, fname, name, optional=True):
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"fft_{fname}(): argument '{name}' must be int, not {type(v).__name__}")
    return int(v)


def _promote(x, fname, require_complex):
    """Integers and bool compute in the default float dtype; half precision is refused on the cpu
    (as torch); complex inputs stay; require_complex turns a float input complex."""
    d = x._dtype
    if d.category == D.COMPLEX:
        return x
    if d.category < D.FLOAT:
        d = D.get_default_dtype()
    if d not in _TO_COMPLEX:
        raise RuntimeError(f"Unsupported dtype {_NAMES[d]}")
    if require_complex:
        d = _TO_COMPLEX[d]
    return x if d is x._dtype else x.to(d)


def _resize(x, dims, sizes):
    """x with size sizes[i] along dims[i]: trimmed from the end or zero-padded at the end."""
    shape = x.shape
    pad = {}
    for d, n in zip(dims, sizes):
        if shape[d] > n:
            x = x.narrow(d, 0, n)
        elif shape[d] < n:
            pad[d] = n - shape[d]
    if not pad:
        return x
    first = min(pad)
    pads = []
    for d in range(x.dim() - 1, first - 1, -1):  # (lo, hi) pairs, last dim first (torch's order)
        pads += [0, pad.get(d, 0)]
    return ConstantPad.apply(x, pads=tuple(pads), value=0)


def _one_dim(x, dim, fname):
    dim = _int_arg(dim, fname, "dim", optional=False)
    if x.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, x.dim())


def _check_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _int_list(v, fname, name):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, Tensor) or not isinstance(v, Sequence):
        raise TypeError(f"fft_{fname}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")
    for i, e in enumerate(v):
        if isinstance(e, bool) or not isinstance(e, (int, np.integer)):
            raise TypeError(f"fft_{fname}(): argument '{name}' must be tuple of ints, but found element of type "
                            f"{type(e).__name__} at pos {i}")
    return tuple(int(e) for e in v)


def _shape_and_dims(x, s, dim, fname):
    """torch's canonical (shape, dims) of an n-dimensional transform: dims default to the last
    len(s) dims (all dims without s); -1 in s keeps that dim's size."""
    ndim = x.dim()
    dims = None
    if dim is not None:
        dim = _int_list(dim, fname, "dim")
        dims = tuple(_wrap_dim(d, ndim) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = _int_list(s, fname, "s")
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dims is None:
            dims = tuple(range(ndim - len(s), ndim))
        shape = tuple(n if n != -1 else x.shape[d] for n, d in zip(s, dims))
    else:
        if dims is None:
            dims = tuple(range(ndim))
        shape = tuple(x.shape[d] for d in dims)
    for n in shape:
        _check_points(n)
    return shape, dims


def _c2r_shape_and_dims(x, s, dim, fname):
    """(half-spectrum shape, dims, last_size) of an n-dimensional c2r transform (irfftn, hfftn)."""
    shape, dims = _shape_and_dims(x, s, dim, fname)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if s is None or _int_list(s, fname, "s")[-1] == -1:
        last_size = 2 * (x.shape[dims[-1]] - 1)
    else:
        last_size = shape[-1]
    _check_points(last_size)
    return shape[:-1] + (last_size // 2 + 1,), dims, last_size


def _out(r, out, fname):
    """out=: torch wants a complex out for a complex result and a real one for a real result."""
    if out is None:
        return r
    if isinstance(out, Tensor):
        want_complex = r._dtype.category == D.COMPLEX
        if want_complex and out._dtype.category != D.COMPLEX:
            raise RuntimeError(f"{fname} expects a complex output tensor, but got {_NAMES[out._dtype]}")
        if not want_complex and out._dtype.category != D.FLOAT:
            raise RuntimeError(f"{fname} expects a floating point output tensor, but got {_NAMES[out._dtype]}")
    return write_out(out, r, fname)


def _real_input(x, fname):
    if x._dtype.category == D.COMPLEX:
        raise RuntimeError(f"{fname} expects a real input tensor, but got {_NAMES[x._dtype]}")


# ---- one-dimensional transforms ---------------------------------------------------------------

def _c2c_or_r2c(fname, input, n, dim, norm, out, forward):
    """fft / ifft: complex input through c2c, real input through a two-sided r2c (conjugated when
    backward: the +i transform of a real signal is the conjugate of its -i transform)."""
    _check_tensor(input, fname)
    n = _int_arg(n, fname, "n")
    dim = _one_dim(input, dim, fname)
    size = n if n is not None else input.shape[dim]
    _check_points(size)
    scaling = _scaling(norm, forward, fname)
    x = _promote(input, fname, require_complex=False)
    if n is not None:
        x = _resize(x, (dim,), (n,))
    if x._dtype.category == D.COMPLEX:
        r = FftC2C.apply(x, dims=(dim,), scaling=scaling, forward=forward)
    else:
        r = FftR2C.apply(x, dims=(dim,), scaling=scaling, onesided=False)
        if not forward:
            r = conj(r)
    return _out(r, out, fname)


def _r2c(fname, input, n, dim, norm, out, forward):
    """rfft / ihfft: the onesided r2c (conjugated for the backward-direction ihfft)."""
    _check_tensor(input, fname)
    _real_input(input, fname)
    n = _int_arg(n, fname, "n")
    dim = _one_dim(input, dim, fname)
    size = n if n is not None else input.shape[dim]
    _check_points(size)
    scaling = _scaling(norm, forward, fname)
    x = _promote(input, fname, require_complex=False)
    if n is not None:
        x = _resize(x, (dim,), (n,))
    r = FftR2C.apply(x, dims=(dim,), scaling=scaling, onesided=True)
    return _out(r if forward else conj(r), out, fname)


def _c2r(fname, input, n, dim, norm, out, forward):
    """irfft / hfft: the c2r of a half spectrum (of its conjugate for the forward-direction hfft)."""
    _check_tensor(input, fname)
    n = _int_arg(n, fname, "n")
    dim = _one_dim(input, dim, fname)
    last_size = n if n is not None else 2 * (input.shape[dim] - 1)
    _check_points(last_size)
    scaling = _scaling(norm, forward, fname)
    x = _promote(input, fname, require_complex=True)
    if n is not None:
        x = _resize(x, (dim,), (last_size // 2 + 1,))
    if forward:
        x = conj(x)
    r = FftC2R.apply(x, dims=(dim,), scaling=scaling, last_size=last_size)
    return _out(r, out, fname)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.fft: https://pytorch.org/docs/stable/generated/torch.fft.fft.html"""
    return _c2c_or_r2c("fft", input, n, dim, norm, out, forward=True)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    return _c2c_or_r2c("ifft", input, n, dim, norm, out, forward=False)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    return _r2c("rfft", input, n, dim, norm, out, forward=True)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    return _r2c("ihfft", input, n, dim, norm, out, forward=False)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    return _c2r("irfft", input, n, dim, norm, out, forward=False)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    return _c2r("hfft", input, n, dim, norm, out, forward=True)


# ---- n-dimensional transforms -----------------------------------------------------------------

def _fftn_c2c(fname, input, s, dim, norm, out, forward):
    _check_tensor(input, fname)
    shape, dims = _shape_and_dims(input, s, dim, fname)
    scaling = _scaling(norm, forward, fname)
    x = _resize(_promote(input, fname, require_complex=True), dims, shape)
    return _out(FftC2C.apply(x, dims=dims, scaling=scaling, forward=forward), out, fname)


def _nd_real_input(input, s, dim, fname):
    """(resized real input, shape, dims) of rfftn / ihfftn."""
    _check_tensor(input, fname)
    complex_input = input._dtype.category == D.COMPLEX
    if complex_input and fname == "rfftn":
        raise RuntimeError(f"{fname} expects a real-valued input tensor, but got {_NAMES[input._dtype]}")
    shape, dims = _shape_and_dims(input, s, dim, fname)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if complex_input:  # ihfftn checks its dims first (torch's order and message)
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {_NAMES[input._dtype]}")
    x = _resize(_promote(input, fname, require_complex=False), dims, shape)
    return x, dims


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    return _fftn_c2c("fftn", input, s, dim, norm, out, forward=True)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return _fftn_c2c("ifftn", input, s, dim, norm, out, forward=False)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    x, dims = _nd_real_input(input, s, dim, "rfftn")
    r = FftR2C.apply(x, dims=dims, scaling=_scaling(norm, True, "rfftn"), onesided=True)
    return _out(r, out, "rfftn")


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The onesided r2c over the last dim, conjugated, then the backward c2c over the others."""
    x, dims = _nd_real_input(input, s, dim, "ihfftn")
    scaling = _scaling(norm, False, "ihfftn")
    r = conj(FftR2C.apply(x, dims=dims[-1:], scaling=scaling, onesided=True))
    if len(dims) > 1:
        r = FftC2C.apply(r, dims=dims[:-1], scaling=scaling, forward=False)
    return _out(r, out, "ihfftn")


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    _check_tensor(input, "irfftn")
    shape, dims, last_size = _c2r_shape_and_dims(input, s, dim, "irfftn")
    x = _resize(_promote(input, "irfftn", require_complex=True), dims, shape)
    r = FftC2R.apply(x, dims=dims, scaling=_scaling(norm, False, "irfftn"), last_size=last_size)
    return _out(r, out, "irfftn")


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The forward c2c over all dims but the last, then the c2r of the conjugate over the last."""
    _check_tensor(input, "hfftn")
    shape, dims, last_size = _c2r_shape_and_dims(input, s, dim, "hfftn")
    scaling = _scaling(norm, True, "hfftn")
    x = _resize(_promote(input, "hfftn", require_complex=True), dims, shape)
    if len(dims) > 1:
        x = FftC2C.apply(x, dims=dims[:-1], scaling=scaling, forward=True)
    r = FftC2R.apply(conj(x), dims=dims[-1:], scaling=scaling, last_size=last_size)
    return _out(r, out, "hfftn")


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _fftn_c2c("fft2", input, s, dim, norm, out, forward=True)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _fftn_c2c("ifft2", input, s, dim, norm, out, forward=False)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


# ---- helpers: sample frequencies and shifts -----------------------------------------------------

def _freq(fname, n, d, out, dtype, device, requires_grad, onesided):
    """[0, 1, ..., n//2 (onesided) or -(n//2), ..., -1] / (n d), multiplied in the dtype's opmath
    precision as torch's arange(...).mul_(1 / (n d))."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"fft_{fname}(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = dtype if dtype is not None else (out._dtype if out is not None else D.get_default_dtype())
    if dt.category == D.COMPLEX:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_NAMES[dt]}'")
    if dt.category != D.FLOAT:
        raise RuntimeError(f"{fname} requires a floating point or complex dtype")
    idx = np.arange(n // 2 + 1 if onesided else n, dtype=np.int64)
    if not onesided:
        idx[(n + 1) // 2:] -= n
    compute = np.float64 if dt is D.float64 else np.float32
    scale = np.float64(1.0) / (np.float64(n) * np.float64(d))
    arr = (idx.astype(compute) * compute(scale)).astype(dt.np)
    if out is not None:
        if out._data.size != arr.size and out._data.size:  # torch's arange_out warning
            warnings.warn(f"The number of elements in the out tensor of shape {list(out._data.shape)} is "
                          f"{out._data.size} which does not match the computed number of elements {arr.size}. Note "
                          "that this may occur as a result of rounding error. The out tensor will be resized to a "
                          f"tensor of shape ({arr.size},).", UserWarning, stacklevel=3)
        return into_out(out, arr, dt)
    return finish(arr, dt, requires_grad, device)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=None):
    return _freq("fftfreq", n, d, out, dtype, device, requires_grad, onesided=False)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=None):
    return _freq("rfftfreq", n, d, out, dtype, device, requires_grad, onesided=True)


def _shift(input, dim, fname, inverse):
    _check_tensor(input, fname)
    if dim is None:
        dims = tuple(range(input.dim()))
    else:
        dims = tuple(_wrap_dim(d, input.dim()) for d in _int_list(dim, fname, "dim"))
    if not dims:
        raise RuntimeError("`shifts` required")
    shifts = [(input.shape[d] + inverse) // 2 for d in dims]
    return roll(input, shifts, dims)


def fftshift(input, dim=None):
    """Rolls the zero frequency to the middle: by size // 2 along each dim (all by default)."""
    return _shift(input, dim, "fftshift", 0)


def ifftshift(input, dim=None):
    """The inverse of fftshift: rolls by (size + 1) // 2."""
    return _shift(input, dim, "ifftshift", 1)


__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
