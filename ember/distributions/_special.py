"""The regularized incomplete gamma function and Gamma sampling with implicit reparameterization.

Note [Implicit gamma gradient]: a draw x ~ Gamma(a, 1) is x = F^-1(u; a) for a uniform u, so with
u held fixed dx/da = -(dF/da)(x; a) / f(x; a), where F = P(a, x) is the regularized lower
incomplete gamma function and f the density (Figurnov et al., 2018). Both terms are computed
to float64 accuracy here: for x < a + 1 from the power series of P, differentiated term by term;
otherwise from the continued fraction of Q = 1 - P (modified Lentz), carried as dual numbers
(value, d/da). Dividing by f analytically leaves no overflow. torch approximates the same
quantity (its _standard_gamma_grad) to about 1e-3 relative.
"""
import numpy as np

from .._backend import special as S
from .._tensor import Tensor
from .._ops._registry import Op
from .._ops.random import _gen  # the generator to draw from (checks vmap's randomness mode)

_TINY = 1e-300
_EPS = 1e-16


def _max_iterations(a, x):
    """Series and continued fraction both need O(sqrt(max(a, x))) terms near the mode."""
    top = float(np.max(np.maximum(a, x))) if a.size else 1.0
    return int(60 + 12 * np.sqrt(top))


def _series(a, x):
    """For x < a + 1: (P / f, d(P)/da / f) with f the Gamma(a) density at x."""
    term = np.ones_like(x)
    dterm = np.zeros_like(x)
    total = np.ones_like(x)
    dtotal = np.zeros_like(x)
    harmonic = np.zeros_like(x)
    for n in range(1, _max_iterations(a, x)):
        term = term * x / (a + n)
        harmonic = harmonic + 1.0 / (a + n)
        dterm = -term * harmonic
        total = total + term
        dtotal = dtotal + dterm
        if np.all(term <= _EPS * total):
            break
    ratio = x / a  # P / f = x S / a
    logx = np.log(x)
    return ratio * total, ratio * (total * (logx - S.digamma(a + 1)) + dtotal)


def _continued_fraction(a, x):
    """For x >= a + 1: (Q / f, dQ/da / f) from Q = e^-x x^a h / Gamma(a), h a continued fraction."""
    b = x + 1 - a
    db = -np.ones_like(x)
    c = np.full_like(x, 1 / _TINY)
    dc = np.zeros_like(x)
    d = 1 / b
    dd = -db / (b * b)
    h = d.copy()
    dh = dd.copy()
    for i in range(1, _max_iterations(a, x)):
        an = -i * (i - a)
        dan = float(i)
        b = b + 2
        draw = an * d + b
        ddraw = dan * d + an * dd + db
        draw = np.where(np.abs(draw) < _TINY, _TINY, draw)
        cnew = b + an / c
        dc = db + (dan * c - an * dc) / (c * c)
        c = np.where(np.abs(cnew) < _TINY, _TINY, cnew)
        d = 1 / draw
        dd = -ddraw / (draw * draw)
        delta = d * c
        ddelta = dd * c + d * dc
        dh = dh * delta + h * ddelta
        h = h * delta
        if np.all(np.abs(delta - 1) < _EPS):
            break
    logx = np.log(x)
    return x * h, x * (h * (logx - S.digamma(a)) + dh)


def gammainc_array(a, x):
    """Regularized lower incomplete gamma P(a, x) on float64 arrays (a > 0, x >= 0)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.zeros(a.shape)
    pos = x > 0
    low = pos & (x < a + 1)
    high = pos & ~low
    log_f = (a - 1) * np.log(np.where(pos, x, 1.0)) - x - S.lgamma(a)  # log density
    if low.any():
        p_over_f, _ = _series(a[low], x[low])
        out[low] = p_over_f * np.exp(log_f[low])
    if high.any():
        q_over_f, _ = _continued_fraction(a[high], x[high])
        out[high] = 1 - q_over_f * np.exp(log_f[high])
    out[np.isinf(x) & (x > 0)] = 1.0
    out[np.isnan(a) | np.isnan(x)] = np.nan
    return out


def gammainc_da_array(a, x):
    """dP(a, x)/da on float64 arrays."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.zeros(a.shape)
    pos = (x > 0) & np.isfinite(x)
    log_f = (a - 1) * np.log(np.where(pos, x, 1.0)) - x - S.lgamma(a)
    low = pos & (x < a + 1)
    high = pos & ~low
    if low.any():
        out[low] = _series(a[low], x[low])[1] * np.exp(log_f[low])
    if high.any():
        out[high] = -_continued_fraction(a[high], x[high])[1] * np.exp(log_f[high])
    return out


def standard_gamma_grad_array(a, x):
    """dx/da of a standard Gamma(a) draw x (see Note [Implicit gamma gradient])."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.zeros(a.shape)
    low = x < a + 1
    high = ~low
    if low.any():
        out[low] = -_series(a[low], x[low])[1]
    if high.any():
        out[high] = _continued_fraction(a[high], x[high])[1]
    return out


# ---- ops ------------------------------------------------------------------------------------

class StandardGammaGrad(Op):
    """dx/da of standard Gamma draws, as a tensor; like torch's, it has no derivative itself."""
    _name = "StandardGammaGradBackward0"

    @staticmethod
    def forward(ctx, alpha, x):
        return standard_gamma_grad_array(alpha, x).astype(x.dtype)

    def backward(ctx, grad):
        raise RuntimeError("the derivative for '_standard_gamma_grad' is not implemented.")


class StandardGamma(Op):
    """Draws from Gamma(alpha, 1) as torch's CPU _standard_gamma; gradient by implicit reparameterization."""
    _name = "StandardGammaBackward0"

    @staticmethod
    def forward(ctx, alpha, generator):
        from .._ops.random_draws import standard_gamma as draw_gamma
        single = alpha.dtype == np.float32
        draw = draw_gamma(generator, alpha.astype(np.float64).ravel(), single)  # C order
        out = np.maximum(draw.astype(alpha.dtype).reshape(alpha.shape), np.finfo(alpha.dtype).tiny)
        ctx.save_for_backward(alpha, out)
        return out

    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * StandardGammaGrad.apply(alpha, x)


def standard_gamma(alpha, generator=None):
    """torch._standard_gamma: one Gamma(alpha_i, 1) draw per element of alpha."""
    return StandardGamma.apply(alpha, generator=_gen(generator))


def standard_gamma_grad(alpha, x):
    """torch._standard_gamma_grad."""
    return StandardGammaGrad.apply(alpha, x)


class Gammainc(Op):
    """P(a, x): dP/dx is the Gamma(a) density; dP/da by the series / continued fraction above."""
    _name = "IgammaBackward0"

    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        dtype = np.result_type(a.dtype, x.dtype)
        return gammainc_array(a, x).astype(dtype)

    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = gx = None
        if need[0]:
            ga = grad * Tensor._make(gammainc_da_array(a._data, x._data).astype(grad._data.dtype))
        if need[1]:
            gx = grad * ((a - 1) * x.log() - x - a.lgamma()).exp()
        return ga, gx


def gammainc(a, x):
    """torch.special.gammainc (regularized lower incomplete gamma)."""
    return Gammainc.apply(a, x)


class SampleDirichlet(Op):
    """torch._sample_dirichlet: Gamma draws in double, normalized in double, then cast and kept
    inside (0, 1) as torch's CPU kernel does. The gradient is the implicit-reparameterization one
    through the draws: d x_i / d a_j = dg_j/da_j (delta_ij - x_i) / S."""
    _name = "DirichletBackward0"

    @staticmethod
    def forward(ctx, alpha, generator):
        from .._ops.random_draws import standard_gamma as draw_gamma
        gamma = draw_gamma(generator, alpha.astype(np.float64).ravel(), False).reshape(alpha.shape)  # C order
        gamma = np.maximum(gamma, np.finfo(np.float64).tiny)
        total = gamma.sum(-1, keepdims=True)
        out = (gamma / total).astype(alpha.dtype)
        np.clip(out, np.finfo(alpha.dtype).tiny, np.nextafter(alpha.dtype.type(1), alpha.dtype.type(0)), out=out)
        ctx.dx = standard_gamma_grad_array(alpha, gamma) / total  # dg_j/da_j / S
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        dx = Tensor._make(ctx.dx.astype(x._data.dtype))
        return dx * (grad - (grad * x).sum(-1, keepdim=True))


def sample_dirichlet(alpha, generator=None):
    """torch._sample_dirichlet: one Dirichlet draw per row of alpha (last dim)."""
    return SampleDirichlet.apply(alpha, generator=_gen(generator))
