"""Numerical calculus on samples: gradient, trapezoid (trapz), cumulative_trapezoid. Composites of
ember ops with torch's formulas, so gradients (and second derivatives) come from the parts."""
import numbers

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ._limited import refuse
from ._registry import install


def _to_float(t):
    """Integer samples integrate/differentiate in the default float dtype, as torch."""
    return t if t._dtype.category >= D.FLOAT else t.to(D.get_default_dtype())


def _zeros_reduced(y, dim):
    """No samples: torch returns plain zeros of y's own dtype (integers stay integers, no graph)."""
    from .creation import zeros
    shape = list(y.shape)
    del shape[dim]
    return zeros(shape, dtype=y._dtype)


def _no_bool(name, y, x):
    if y._dtype is D.bool or (isinstance(x, Tensor) and x._dtype is D.bool):
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not supported")
    refuse(y, "add_stub", empty_ok=True)  # torch sums with add: no kernel for uint16/32/64


def _trapezoid_dx(name, y, dx, dim):
    if y.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    d = _wrap_dim(dim, y.dim())
    if y.shape[d] == 0:
        return _zeros_reduced(y, d)
    y = _to_float(y)
    return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * dx


def _sample_steps(name, y, x, d, dim):
    """x's spacings aligned with y's dim d (a 1-d x lies along d; otherwise x broadcasts with y)."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        view = [1] * y.dim()
        view[d] = x.shape[0] - 1 if x.shape[0] else 0
        return x.diff().reshape(view) if x.shape[0] else x.reshape([1] * y.dim())
    return x.diff(dim=dim)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Trapezoidal rule along dim, with sample points x or a constant spacing dx.
    See https://pytorch.org/docs/stable/generated/torch.trapezoid.html"""
    _no_bool("trapezoid", y, x)
    if isinstance(x, Tensor):
        if dx is not None:
            raise TypeError("trapezoid() received an invalid combination of arguments - got (Tensor, Tensor, dx=...)")
        if y.dim() == 0:
            raise IndexError("Dimension specified as -1 but tensor has no dimensions")
        d = _wrap_dim(dim, y.dim())
        if y.shape[d] == 0:
            return _zeros_reduced(y, d)
        steps = _sample_steps("trapezoid", y, x, d, dim)
        yf = _to_float(y)
        return (steps * (yf.narrow(d, 1, y.shape[d] - 1) + yf.narrow(d, 0, y.shape[d] - 1))).sum(d) / 2.0
    if x is not None:
        raise TypeError(f"trapezoid() received an invalid combination of arguments - got (Tensor, "
                        f"{type(x).__name__}), but expected one of:\n * (Tensor y, Tensor x, *, int dim = -1)\n"
                        " * (Tensor y, *, Number dx = 1, int dim = -1)\n")
    return _trapezoid_dx("trapezoid", y, 1 if dx is None else dx, dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """The older name of trapezoid (a float dx). See https://pytorch.org/docs/stable/generated/torch.trapz.html"""
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"trapz() received an invalid combination of arguments - got (Tensor, {type(x).__name__}), "
                        "but expected one of:\n * (Tensor y, *, float dx = 1, int dim = -1)\n"
                        " * (Tensor y, Tensor x, *, int dim = -1)\n")
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Running trapezoidal integral along dim (one element shorter than y there).
    See https://pytorch.org/docs/stable/generated/torch.cumulative_trapezoid.html"""
    _no_bool("cumulative_trapezoid", y, x)
    if y.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    if isinstance(x, Tensor):
        if n == 0:
            return _to_float(y).clone()
        steps = _sample_steps("cumulative_trapezoid", y, x, d, dim)
        yf = _to_float(y)
        return (steps * (yf.narrow(d, 1, n - 1) + yf.narrow(d, 0, n - 1))).cumsum(d) / 2.0
    if x is not None:
        raise TypeError(f"cumulative_trapezoid() received an invalid combination of arguments - got (Tensor, "
                        f"{type(x).__name__})")
    yf = _to_float(y)
    if n == 0:
        return yf.clone()
    h = 1 if dx is None else dx
    return ((yf.narrow(d, 1, n - 1) + yf.narrow(d, 0, n - 1)) * (h / 2.0)).cumsum(d)


# ---- gradient ---------------------------------------------------------------------------

def _gradient_dims(input, spacing, dim):
    if dim is None:
        dims = list(range(input.dim()))
    elif isinstance(dim, numbers.Integral):
        dims = [_wrap_dim(dim, input.dim())]
    else:
        dims = [_wrap_dim(d, input.dim()) for d in dim]
        seen = set()
        for d in dims:
            if d in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            seen.add(d)
    if isinstance(spacing, (list, tuple)) and len(spacing) != len(dims):
        if dim is None:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to 'self.dim() = {input.dim()}', since dim argument was not given, but got a "
                               f"list of length {len(spacing)}")
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {len(spacing)} "
                           f"and a dim argument of length {len(dims)}.")
    return dims


def _uniform_gradient(f, d, h, edge_order):
    n = f.shape[d]
    center = (f.narrow(d, 2, n - 2) - f.narrow(d, 0, n - 2)) / (2 * h) if n > 2 else f.narrow(d, 0, 0)
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / h
        last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / h
    else:
        first = (f.narrow(d, 0, 1) * -1.5 + f.narrow(d, 1, 1) * 2 - f.narrow(d, 2, 1) * 0.5) / h
        last = (f.narrow(d, n - 3, 1) * 0.5 - f.narrow(d, n - 2, 1) * 2 + f.narrow(d, n - 1, 1) * 1.5) / h
    return first, center, last


def _coordinate_gradient(f, d, coords, edge_order):
    n = f.shape[d]
    view = [1] * f.dim()
    view[d] = -1
    h = coords.diff()
    h1 = h[:-1].reshape(view)
    h2 = h[1:].reshape(view)
    a = -h2 / (h1 * (h1 + h2))
    b = (h2 - h1) / (h1 * h2)
    c = h1 / (h2 * (h1 + h2))
    center = a * f.narrow(d, 0, n - 2) + b * f.narrow(d, 1, n - 2) + c * f.narrow(d, 2, n - 2)
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / h[0]
        last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / h[-1]
        return first, center, last
    h0, h1e = h[0], h[1]
    a0 = -(2.0 * h0 + h1e) / (h0 * (h0 + h1e))
    b0 = (h0 + h1e) / (h0 * h1e)
    c0 = -h0 / (h1e * (h0 + h1e))
    first = a0 * f.narrow(d, 0, 1) + b0 * f.narrow(d, 1, 1) + c0 * f.narrow(d, 2, 1)
    hm2, hm1 = h[-2], h[-1]
    a1 = hm1 / (hm2 * (hm2 + hm1))
    b1 = -(hm1 + hm2) / (hm2 * hm1)
    c1 = (2.0 * hm1 + hm2) / (hm1 * (hm2 + hm1))
    last = a1 * f.narrow(d, n - 3, 1) + b1 * f.narrow(d, n - 2, 1) + c1 * f.narrow(d, n - 1, 1)
    return first, center, last


def gradient(input, *, spacing=None, dim=None, edge_order=1):
    """Second-order accurate central differences inside, one-sided differences of edge_order at the ends;
    one tensor per dim. See https://pytorch.org/docs/stable/generated/torch.gradient.html"""
    from .joining import cat
    spacing = 1 if spacing is None else spacing  # torch's default: unit spacing
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _gradient_dims(input, spacing, dim)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    refuse(input, "add_stub")
    f = _to_float(input)
    spacings = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    outs = []
    for d, h in zip(dims, spacings):
        if isinstance(h, Tensor) and h.dim() == 1:
            parts = _coordinate_gradient(f, d, h, edge_order)
        else:
            parts = _uniform_gradient(f, d, h.item() if isinstance(h, Tensor) else h, edge_order)
        outs.append(cat(parts, d))
    return tuple(outs)


install(trapezoid, "trapezoid", method=False)
install(trapz, "trapz", method=False)
install(cumulative_trapezoid, "cumulative_trapezoid", method=False)
install(gradient, "gradient", method=False)
