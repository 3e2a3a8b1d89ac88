"""cov and corrcoef (rows are variables, columns observations): composites of ember ops with
torch's weighting, correction and clamping rules."""
import warnings

from .. import _dtype as D
from ._registry import install


def _check_weights(name, w, kind, n):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.dim()} "
                           "dimensions")
    if kind == "integral" and w._dtype.category > D.INT:
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} with "
                           f"{D.SCALAR_NAMES[w._dtype]} dtype")
    if kind == "floating point" and w._dtype.category != D.FLOAT:
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got {name} with "
                           f"{D.SCALAR_NAMES[w._dtype]} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {n}")
    if w.numel() and bool((w < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance matrix of the variables in input's rows (a 1-d input is one variable).
    See https://pytorch.org/docs/stable/generated/torch.cov.html"""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    obs = input.reshape(1, -1) if input.dim() < 2 else input
    if obs._dtype.category < D.FLOAT:
        obs = obs.to(D.get_default_dtype())
    n = obs.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, "integral", n)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, "floating point", n)
        w = aweights if w is None else w * aweights
    if w is None:
        avg = obs.mean(1)
        norm = n - correction
    else:
        w_sum = w.sum()
        avg = (obs * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    if float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0 if w is not None else 0
    centered = obs - avg.unsqueeze(1)
    weighted = centered if w is None else centered * w
    c = centered.mm(weighted.t().conj())
    return (c / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of input's rows, clamped to [-1, 1].
    See https://pytorch.org/docs/stable/generated/torch.corrcoef.html"""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.is_complex() else d).sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    if c.is_complex():
        from .complex import complex as make_complex
        return make_complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


install(cov, "cov")
install(corrcoef, "corrcoef")
