"""The three FFT kernels torch builds every transform on (c2c, r2c, c2r), on numpy.fft (pocketfft).

A kernel takes a scaling (NONE, SQRT_N or N: the result is multiplied by 1, 1/sqrt(n) or 1/n, n the
product of the signal sizes) instead of a direction-dependent norm string, as torch's primitives do:
the adjoint of a transform is then the opposite transform with the same scaling. NumPy 2 computes
float32/complex64 in single precision (complex64 results), as torch does; NumPy 1.x computes them in
double precision, and _single() casts its results back.
"""
import numpy as np

NONE, SQRT_N, N = 0, 1, 2

# numpy's norm= string that gives each scaling, for a forward (-i) and a backward (+i) transform
_FORWARD_NORM = {NONE: "backward", SQRT_N: "ortho", N: "forward"}
_BACKWARD_NORM = {NONE: "forward", SQRT_N: "ortho", N: "backward"}


def c2c(x, axes, scaling, forward):
    """The complex DFT over axes (exp(-i..) when forward, exp(+i..) otherwise), scaled."""
    if not axes:
        return x.copy()
    norm = _FORWARD_NORM[scaling] if forward else _BACKWARD_NORM[scaling]
    if x.size == 0:
        return np.zeros(x.shape, x.dtype)
    fn = np.fft.fftn if forward else np.fft.ifftn
    return _single(fn(x, axes=axes, norm=norm), x)


def r2c(x, axes, scaling, onesided):
    """The forward DFT of a real array over axes; onesided keeps bins 0..n//2 of the last axis."""
    norm = _FORWARD_NORM[scaling]
    if x.size == 0:
        shape = list(x.shape)
        if onesided:
            shape[axes[-1]] = shape[axes[-1]] // 2 + 1
        return np.zeros(shape, np.result_type(x.dtype, np.complex64))
    if onesided:
        return _single(np.fft.rfftn(x, axes=axes, norm=norm), x)
    return _single(np.fft.fftn(x, axes=axes, norm=norm), x)


def c2r(x, axes, scaling, last_size):
    """The backward (+i) DFT of a Hermitian half-spectrum over axes, `last_size` real points along
    the last axis (pocketfft ignores the imaginary parts the symmetry says are zero, as torch)."""
    norm = _BACKWARD_NORM[scaling]
    shape = [x.shape[a] for a in axes]
    shape[-1] = last_size
    real = np.float32 if x.dtype == np.complex64 else np.float64
    if x.size == 0:
        out = list(x.shape)
        out[axes[-1]] = last_size
        return np.zeros(out, real)
    return _single(np.fft.irfftn(x, s=shape, axes=axes, norm=norm), x)


def _single(out, x):
    """A single-precision input's result in single precision (already so on NumPy 2: no copy)."""
    if x.dtype.itemsize * (2 if x.dtype.kind == "f" else 1) == 8:
        return out.astype(np.complex64 if out.dtype.kind == "c" else np.float32, copy=False)
    return out
