"""Numerical integration along a dim: trapezoid (alias trapz) and cumulative_trapezoid. Composites of
narrow, arithmetic and sum/cumsum, so dtypes promote as those ops do (integers give the default float)."""
from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ._registry import install


def _pieces(name, y, x, dx, dim):
    """(sums of neighbouring samples, the spacing to multiply them by, the wrapped dim), with torch's checks."""
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, dx={type(dx).__name__}, "
                        "x=Tensor), but expected one of:\n * (Tensor y, Tensor x, *, int dim = -1)\n * (Tensor y, *, "
                        "Number dx = 1, int dim = -1)\n")
    if y._dtype is D.bool or (isinstance(x, Tensor) and x._dtype is D.bool):
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not supported")
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    pairs = y.narrow(d, 0, max(n - 1, 0)) + y.narrow(d, min(1, n), max(n - 1, 0))
    if x is None:
        return pairs, (1 if dx is None else dx), d
    if x.dim() == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        step = x[1:] - x[:-1]
        shape = [1] * y.dim()
        shape[d] = max(n - 1, 0)
        return pairs, step.reshape(shape), d
    step = x.narrow(d, 1, max(n - 1, 0)) - x.narrow(d, 0, max(n - 1, 0))
    return pairs, step, d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """torch.trapezoid: the trapezoidal rule along dim, with sample points x or constant spacing dx (default 1)."""
    pairs, step, d = _pieces("trapezoid", y, x, dx, dim)
    if y.shape[d] == 0:  # torch returns plain zeros of y's dtype (no graph) for no samples
        return y.detach().sum(d).to(y._dtype)
    if isinstance(step, Tensor):
        return (pairs * step).sum(d) / 2
    return pairs.sum(d) * step / 2


def trapz(y, x=None, *, dx=None, dim=-1):
    """torch.trapz: the older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """torch.cumulative_trapezoid: the running trapezoidal integral along dim (one value fewer than y)."""
    pairs, step, d = _pieces("cumulative_trapezoid", y, x, dx, dim)
    if isinstance(step, Tensor):
        return (pairs * step).cumsum(d) / 2
    return pairs.cumsum(d) * step / 2


install(trapezoid, "trapezoid", method=False)
install(trapz, "trapz", method=False)
install(cumulative_trapezoid, "cumulative_trapezoid", method=False)
