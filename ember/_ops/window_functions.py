"""torch's top-level window factories: hann_window, hamming_window, blackman_window, bartlett_window,
kaiser_window (leaf tensors, as torch's). torch.signal.windows (composites of ember ops) is in
ember/signal/windows/.

Values are computed as torch's CPU kernels compute them: an arange in the dtype's opmath precision
(float32 for float32 and the half types, float64 for double) times the step, through cos or i0; a
periodic window is the symmetric window of length + 1 without its last point.
"""
import math

import numpy as np

from .. import _dtype as D
from .._backend import special as S
from .._layout import strided
from .creation import finish
from ._registry import install

_NAMES = D.SCALAR_NAMES


def _length(name, window_length):
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    n = int(window_length)
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    return n


def _dtype_of(name, dtype, layout):
    d = dtype if dtype is not None else D.get_default_dtype()
    if layout is not None and layout is not strided:
        raise RuntimeError(f"{name} is not implemented for sparse types, got: {layout}")
    if d.category == D.COMPLEX:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_NAMES[d]}'")
    if d.category != D.FLOAT:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {_NAMES[d]}")
    return d


def _window(name, window_length, periodic, dtype, layout, device, requires_grad, values):
    """The shared frame: checks, the 0- and 1-point windows, the periodic extension."""
    n = _length(name, window_length)
    d = _dtype_of(name, dtype, layout)
    if n <= 1:
        arr = np.ones(n, d.np)
    else:
        ct = np.float64 if d is D.float64 else np.float32
        m = n + 1 if periodic else n
        arr = values(m, ct)[:n].astype(d.np)
    return finish(arr, d, requires_grad, device)


def _cosine_sum(m, ct, coeffs, scale):
    """sum_k coeffs[k] cos(k scale i) over i = 0..m-1, from the angle i * scale in ct."""
    w = np.arange(m, dtype=ct) * ct(scale)
    out = np.full(m, ct(coeffs[0]), ct)
    for k, c in enumerate(coeffs[1:], start=1):
        out = out + ct(c) * np.cos(ct(k) * w if k > 1 else w)
    return out


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    """torch.hann_window: hamming_window with alpha = beta = 1/2."""
    return _hamming("hann_window", window_length, periodic, 0.5, 0.5, dtype, layout, device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """alpha - beta cos(2 pi i / (N - 1))."""
    return _hamming("hamming_window", window_length, periodic, alpha, beta, dtype, layout, device, requires_grad)


def _hamming(name, window_length, periodic, alpha, beta, dtype, layout, device, requires_grad):
    def values(m, ct):
        c = np.cos(np.arange(m, dtype=ct) * ct(2 * math.pi / (m - 1)))
        return c * ct(-beta) + ct(alpha)
    return _window(name, window_length, periodic, dtype, layout, device, requires_grad, values)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """0.42 - 0.5 cos(2 pi i / (N - 1)) + 0.08 cos(4 pi i / (N - 1))."""
    def values(m, ct):
        w = np.arange(m, dtype=ct) * ct(math.pi / (m - 1))
        return ct(0.08) * np.cos(ct(4) * w) - ct(0.5) * np.cos(ct(2) * w) + ct(0.42)
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, values)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """The triangle 2i / (N - 1) rising to 1 and falling back: 2 - 2i / (N - 1) in the second half."""
    def values(m, ct):
        w = np.arange(m, dtype=ct) * ct(2.0 / (m - 1))
        first_half = ((m - 1) >> 1) + 1
        w[first_half:] = ct(2) - w[first_half:]
        return w
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, values)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """I0(beta sqrt(1 - ((i - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""
    def values(m, ct):
        a = ct((m - 1) / 2.0)
        r = (np.arange(m, dtype=ct) - a) / a
        arg = ct(beta) * np.sqrt(np.maximum(ct(1) - r * r, ct(0)))
        return (S.i0(arg.astype(np.float64)) / S.i0(np.array(float(beta)))).astype(ct)
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, values)


for _fn in (hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window):
    install(_fn, _fn.__name__, method=False)
