"""torch.signal.windows as composites of ember ops, in torch's order of operations: a linspace of
angles or positions (which takes requires_grad, so a window asked to require grad is a non-leaf with
a graph back to that linspace, as torch's) through exp, cos or i0. sym=False gives the periodic window
(the symmetric window of length M + 1 without its last point)."""
import math
from collections.abc import Iterable

import ember
from ... import _dtype as D
from ..._layout import strided


def _checks(name, M, dtype, layout):
    """torch's common checks; the default dtype when none is given."""
    d = dtype if dtype is not None else D.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if d is not D.float32 and d is not D.float64:
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {d}")
    return d


def _empty(dtype, device, requires_grad):
    return ember.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)


def _span(M, sym):
    """The number of steps the window's formula spans: M - 1 (symmetric) or M (periodic)."""
    return M if not sym and M > 1 else M - 1


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    """exp(-|n - center| / tau)."""
    d = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _empty(d, device, requires_grad)
    if center is None:
        center = _span(M, sym) / 2.0
    k = ember.linspace(-center / tau, (-center + (M - 1)) / tau, M, dtype=d, device=device,
                       requires_grad=requires_grad)
    return ember.exp(-ember.abs(k))


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """sin(pi (n + 1/2) / M)."""
    d = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _empty(d, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    k = ember.linspace(0.5 * step, (0.5 + (M - 1)) * step, M, dtype=d, device=device, requires_grad=requires_grad)
    return ember.sin(k)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """exp(-(n - (M - 1) / 2)^2 / (2 std^2))."""
    d = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _empty(d, device, requires_grad)
    start = -_span(M, sym) / 2.0
    scale = 1 / (std * math.sqrt(2))
    k = ember.linspace(start * scale, (start + (M - 1)) * scale, M, dtype=d, device=device,
                       requires_grad=requires_grad)
    return ember.exp(-(k ** 2))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta), the positions taken in units of beta."""
    d = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 0:
        return _empty(d, device, requires_grad)
    if M == 1:
        return ember.ones((1,), dtype=d, device=device, requires_grad=requires_grad)
    b = ember.tensor(beta, dtype=d, device=device)  # beta in the window's dtype: no NaN at the ends
    start = -b
    step = 2.0 * b / (M if not sym else M - 1)
    end = ember.minimum(b, start + (M - 1) * step)
    k = ember.linspace(start, end, M, dtype=d, device=device, requires_grad=requires_grad)
    return ember.i0(ember.sqrt(b * b - ember.pow(k, 2))) / ember.i0(b)


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    d = _checks("general_cosine", M, dtype, layout)
    if M == 0:
        return _empty(d, device, requires_grad)
    if M == 1:
        return ember.ones((1,), dtype=d, device=device, requires_grad=requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = ember.linspace(0, (M - 1) * step, M, dtype=d, device=device, requires_grad=requires_grad)
    a_i = ember.tensor([(-1) ** i * w for i, w in enumerate(a)], device=device, dtype=d,
                       requires_grad=requires_grad)
    i = ember.arange(a_i.shape[0], dtype=a_i.dtype, device=device, requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * ember.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))."""
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """1 - |2n / (M - 1) - 1|."""
    d = _checks("bartlett", M, dtype, layout)
    if M == 0:
        return _empty(d, device, requires_grad)
    if M == 1:
        return ember.ones((1,), dtype=d, device=device, requires_grad=requires_grad)
    step = 2 / (M if not sym else M - 1)
    k = ember.linspace(-1, -1 + (M - 1) * step, M, dtype=d, device=device, requires_grad=requires_grad)
    return 1 - ember.abs(k)


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The four-term Blackman-Nuttall window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
