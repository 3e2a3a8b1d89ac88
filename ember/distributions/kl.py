"""kl_divergence(p, q) and register_kl (torch.distributions.kl).

Closed forms are looked up by the pair of types. Of the registered pairs that match, the most
specific wins: compared on p's type first, q's second. When comparing on q's type first would pick
a different function, the pair is ambiguous and a RuntimeWarning names the pair to register.
The built-in closed forms sit in three tables at the end of this file and go through the public
register_kl like any user's."""
import math
import warnings

import ember

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal, _squared_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _softplus, _sum_rightmost, euler_constant

__all__ = ["register_kl", "kl_divergence"]

_registered = {}  # (type of p, type of q) -> function, in registration order (the order breaks ties)
_resolved = {}  # (type(p), type(q)) -> the function dispatch chose, or NotImplemented


def register_kl(type_p, type_q):
    """Decorator: @register_kl(Normal, Normal) def kl(p, q): ..."""
    # torch's check refuses what is not a class and lets any class through (its issubclass test never fails)
    for role, given in (("type_p", type_p), ("type_q", type_q)):
        if not isinstance(given, type):
            raise TypeError(f"Expected {role} to be a Distribution subclass but got {given}")

    def decorator(fun):
        _registered[type_p, type_q] = fun
        _resolved.clear()  # a new pair can change earlier choices
        return fun
    return decorator


# ---- dispatch ---------------------------------------------------------------------------------------

def _narrower(pair, other):
    """Whether `pair` is strictly more specific than `other`, read left to right: the first position
    where the types differ decides, by subclassing."""
    for mine, theirs in zip(pair, other):
        if mine is not theirs:
            return issubclass(mine, theirs)
    return False


def _most_specific(pairs):
    """The first pair that no later pair is narrower than, scanning in order (as `min` would)."""
    best = pairs[0]
    for pair in pairs[1:]:
        if _narrower(pair, best):
            best = pair
    return best


def _dispatch(type_p, type_q):
    """The function for the most specific registered (p, q) pair, warning on a tie."""
    candidates = [pair for pair in _registered if issubclass(type_p, pair[0]) and issubclass(type_q, pair[1])]
    if not candidates:
        return NotImplemented
    by_p = _most_specific(candidates)
    by_q = _most_specific([(q, p) for p, q in candidates])[::-1]
    chosen = _registered[by_p]
    if chosen is not _registered[by_q]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl("
                      f"{by_p[0].__name__}, {by_q[1].__name__})", RuntimeWarning, stacklevel=3)
    return chosen


def _lookup(type_p, type_q):
    key = type_p, type_q
    if key not in _resolved:
        _resolved[key] = _dispatch(type_p, type_q)
    return _resolved[key]


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the broadcast batch shape."""
    fun = _lookup(type(p), type(q))
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return fun(p, q)


# ---- helpers ----------------------------------------------------------------------------------------

def _inf_where(mask, value):
    return ember.where(mask, ember.full_like(value, math.inf), value)


def _zero_where(mask, value):
    return ember.where(mask, ember.zeros_like(value), value)


def _weighted_log_ratio(weight, log_ratio, weight_is_zero, q_is_zero):
    """weight * log(p/q) for one outcome, with 0 log(0/q) = 0 and w log(w/0) = inf."""
    term = _inf_where(q_is_zero, weight * log_ratio)
    return _zero_where(weight_is_zero, term)


def _half_log_det(scale_tril):
    """log det(L) = half the log determinant of L L^T."""
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _squared_frobenius(matrices):
    """||X||_F^2 = trace(X X^T) for each matrix in a batch."""
    rows, cols = matrices.shape[-2:]
    return matrices.reshape(matrices.shape[:-2] + (rows * cols,)).pow(2).sum(-1)


# ---- same family ------------------------------------------------------------------------------------

def _between_bernoullis(p, q):
    ones = _weighted_log_ratio(p.probs, _softplus(-q.logits) - _softplus(-p.logits), p.probs == 0, q.probs == 0)
    zeros = _weighted_log_ratio(1 - p.probs, _softplus(q.logits) - _softplus(p.logits), p.probs == 1, q.probs == 1)
    return ones + zeros


def _between_betas(p, q):
    p_total = p.concentration1 + p.concentration0
    q_total = q.concentration1 + q.concentration0
    lgammas_q = q.concentration1.lgamma() + q.concentration0.lgamma() + p_total.lgamma()
    lgammas_p = p.concentration1.lgamma() + p.concentration0.lgamma() + q_total.lgamma()
    shift1 = (p.concentration1 - q.concentration1) * ember.digamma(p.concentration1)
    shift0 = (p.concentration0 - q.concentration0) * ember.digamma(p.concentration0)
    shift_total = (q_total - p_total) * ember.digamma(p_total)
    return lgammas_q - lgammas_p + shift1 + shift0 + shift_total


def _between_binomials(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    per_trial = p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p()
    return _inf_where(p.total_count > q.total_count, p.total_count * per_trial)


def _between_categoricals(p, q):
    terms = _weighted_log_ratio(p.probs, p.logits - q.logits, p.probs == 0, q.probs == 0)
    return terms.sum(-1)


def _between_cauchys(p, q):
    width = p.scale + q.scale
    shift = p.loc - q.loc
    return (width.pow(2) + shift.pow(2)).log() - (4 * p.scale * q.scale).log()


def _between_dirichlets(p, q):
    alpha_p = p.concentration
    alpha_q = q.concentration
    p_total = alpha_p.sum(-1)
    q_total = alpha_q.sum(-1)
    log_norm_gap = p_total.lgamma() - q_total.lgamma()
    lgamma_gap = (alpha_p.lgamma() - alpha_q.lgamma()).sum(-1)
    expected_log = alpha_p.digamma() - p_total.digamma().unsqueeze(-1)
    return log_norm_gap - lgamma_gap + ((alpha_p - alpha_q) * expected_log).sum(-1)


def _between_exponentials(p, q):
    ratio = q.rate / p.rate
    return -ratio.log() + ratio - 1


def _bregman_kl(p, q):
    """KL within one exponential family: the Bregman divergence of its log normalizer A,
    A(eta_q) - A(eta_p) - <eta_q - eta_p, grad A(eta_p)>, with the gradient from autograd."""
    if type(p) is not type(q):
        # (torch's message has this run of spaces, from a line continuation inside its string)
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot"
                                  "                             be computed using Bregman divergences")
    eta_p = [param.detach().requires_grad_() for param in p._natural_params]
    eta_q = q._natural_params
    log_norm_p = p._log_normalizer(*eta_p)
    grad_log_norm_p = ember.autograd.grad(log_norm_p.sum(), eta_p, create_graph=True)
    divergence = q._log_normalizer(*eta_q) - log_norm_p
    for at_p, at_q, slope in zip(eta_p, eta_q, grad_log_norm_p):
        divergence = divergence - _sum_rightmost((at_q - at_p) * slope, len(q.event_shape))
    return divergence


# torch's name for the fallback; tests call it directly on both libraries
_kl_expfamily_expfamily = _bregman_kl


def _between_gammas(p, q):
    shape_p, rate_p = p.concentration, p.rate
    shape_q, rate_q = q.concentration, q.rate
    result = shape_q * ember.log(rate_p / rate_q)
    result = result + (ember.lgamma(shape_q) - ember.lgamma(shape_p))
    result = result + (shape_p - shape_q) * ember.digamma(shape_p)
    return result + (rate_q - rate_p) * (shape_p / rate_p)


def _between_geometrics(p, q):
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


def _between_half_normals(p, q):
    return _between_normals(p.base_dist, q.base_dist)


def _between_independents(p, q):
    ndims = p.reinterpreted_batch_ndims
    if ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), ndims)


def _between_laplaces(p, q):
    ratio = p.scale / q.scale
    distance = (p.loc - q.loc).abs()
    return -ratio.log() + distance / q.scale + ratio * ember.exp(-distance / p.scale) - 1


def _between_mvns(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    tril_p = p._unbroadcasted_scale_tril
    tril_q = q._unbroadcasted_scale_tril
    log_det_gap = _half_log_det(tril_q) - _half_log_det(tril_p)
    dim = p.event_shape[0]
    full_shape = tuple(ember.broadcast_shapes(tril_q.shape[:-2], tril_p.shape[:-2])) + (dim, dim)
    whitened = ember.linalg.solve_triangular(tril_q.expand(full_shape), tril_p.expand(full_shape), upper=False)
    trace_term = _squared_frobenius(whitened)
    mahalanobis = _squared_mahalanobis(tril_q, q.loc - p.loc)
    return log_det_gap + 0.5 * (trace_term + mahalanobis - dim)


def _between_normals(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    shift = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + shift - 1 - var_ratio.log())


def _between_one_hot_categoricals(p, q):
    return _between_categoricals(p._categorical, q._categorical)


def _between_poissons(p, q):
    rate_p, rate_q = p.rate, q.rate
    return rate_p * (rate_p.log() - rate_q.log()) - (rate_p - rate_q)


def _between_transformed(p, q):
    same_maps = p.transforms == q.transforms
    if not same_maps or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


def _between_uniforms(p, q):
    log_width_ratio = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), log_width_ratio)


# ---- across families: -H(p) - E_p[log q], from moments of p ---------------------------------------

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _normal_cross_entropy(q, mean, second_moment):
    """-E[log q(x)] for q Normal, from E[x] and E[x^2] under p."""
    spread = second_moment - 2 * q.loc * mean + q.loc.pow(2)
    return q.scale.log() + _HALF_LOG_2PI + spread / (2 * q.scale.pow(2))


def _gamma_cross_entropy(q, mean, mean_log):
    """-E[log q(x)] for q Gamma, from E[x] and E[log x] under p."""
    return -(q.concentration * q.rate.log() + (q.concentration - 1) * mean_log - q.rate * mean
             - q.concentration.lgamma())


def _uniform_mean_log(low, high):
    """E[log x] for x ~ U(low, high), 0 <= low < high."""
    return (ember.xlogy(high, high) - ember.xlogy(low, low)) / (high - low) - 1


def _bernoulli_vs_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


def _beta_vs_exponential(p, q):
    mean = p.concentration1 / (p.concentration1 + p.concentration0)
    return -p.entropy() - q.rate.log() + q.rate * mean


def _beta_vs_gamma(p, q):
    total = p.concentration1 + p.concentration0
    mean_log = p.concentration1.digamma() - total.digamma()
    return -p.entropy() + _gamma_cross_entropy(q, p.concentration1 / total, mean_log)


def _beta_vs_normal(p, q):
    mean = p.mean
    return -p.entropy() + _normal_cross_entropy(q, mean, p.variance + mean.pow(2))


def _beta_vs_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > 0) | (q.high < 1), result)


def _exponential_vs_gamma(p, q):
    mean_log = -euler_constant - p.rate.log()
    return -p.entropy() + _gamma_cross_entropy(q, p.rate.reciprocal(), mean_log)


def _exponential_vs_normal(p, q):
    mean = p.rate.reciprocal()
    return -p.entropy() + _normal_cross_entropy(q, mean, 2 * mean.pow(2))


def _gamma_vs_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


def _gamma_vs_normal(p, q):
    mean = p.concentration / p.rate
    second_moment = p.concentration * (p.concentration + 1) / p.rate.pow(2)
    return -p.entropy() + _normal_cross_entropy(q, mean, second_moment)


def _laplace_vs_normal(p, q):
    second_moment = 2 * p.scale.pow(2) + p.loc.pow(2)
    return -p.entropy() + _normal_cross_entropy(q, p.loc, second_moment)


def _normal_vs_laplace(p, q):
    """E|x - m| for x ~ N(mu, s): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt 2)), d = mu - m."""
    d = p.loc - q.loc
    ratio = d / p.scale
    mean_abs = p.scale * math.sqrt(2 / math.pi) * ember.exp(-0.5 * ratio.pow(2)) + d * ember.erf(ratio / math.sqrt(2))
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


def _uniform_vs_beta(p, q):
    mean_log = _uniform_mean_log(p.low, p.high)
    mean_log1m = _uniform_mean_log(1 - p.high, 1 - p.low)
    log_beta = q.concentration1.lgamma() + q.concentration0.lgamma() - (q.concentration1 + q.concentration0).lgamma()
    expected = (q.concentration1 - 1) * mean_log + (q.concentration0 - 1) * mean_log1m - log_beta
    return _inf_where((p.low < 0) | (p.high > 1), -p.entropy() - expected)


def _uniform_vs_exponential(p, q):
    result = -p.entropy() - q.rate.log() + q.rate * (p.high + p.low) / 2
    return _inf_where(p.low < 0, result)


def _uniform_vs_gamma(p, q):
    mean_log = _uniform_mean_log(p.low, p.high)
    result = -p.entropy() + _gamma_cross_entropy(q, (p.high + p.low) / 2, mean_log)
    return _inf_where(p.low < 0, result)


def _uniform_vs_normal(p, q):
    mean = (p.high + p.low) / 2
    second_moment = (p.high.pow(3) - p.low.pow(3)) / (3 * (p.high - p.low))
    return -p.entropy() + _normal_cross_entropy(q, mean, second_moment)


def _infinite(param):
    """KL that is +inf everywhere: q has no mass on part of p's support. Shaped like p's `param`."""
    def kl(p, q):
        return ember.full_like(getattr(p, param), math.inf)
    return kl


# ---- the tables (registration order is kept: it breaks dispatch ties) -------------------------------

_SAME_FAMILY = {
    Bernoulli: _between_bernoullis, Beta: _between_betas, Binomial: _between_binomials,
    Categorical: _between_categoricals, Cauchy: _between_cauchys, Dirichlet: _between_dirichlets,
    Exponential: _between_exponentials, ExponentialFamily: _bregman_kl, Gamma: _between_gammas,
    Geometric: _between_geometrics, HalfNormal: _between_half_normals, Independent: _between_independents,
    Laplace: _between_laplaces, MultivariateNormal: _between_mvns, Normal: _between_normals,
    OneHotCategorical: _between_one_hot_categoricals, Poisson: _between_poissons,
    TransformedDistribution: _between_transformed, Uniform: _between_uniforms,
}

_ACROSS_FAMILIES = {
    (Bernoulli, Poisson): _bernoulli_vs_poisson,
    (Beta, Exponential): _beta_vs_exponential,
    (Beta, Gamma): _beta_vs_gamma,
    (Beta, Normal): _beta_vs_normal,
    (Beta, Uniform): _beta_vs_uniform,
    (Exponential, Gamma): _exponential_vs_gamma,
    (Exponential, Normal): _exponential_vs_normal,
    (Gamma, Exponential): _gamma_vs_exponential,
    (Gamma, Normal): _gamma_vs_normal,
    (Laplace, Normal): _laplace_vs_normal,
    (Normal, Laplace): _normal_vs_laplace,
    (Uniform, Beta): _uniform_vs_beta,
    (Uniform, Exponential): _uniform_vs_exponential,
    (Uniform, Gamma): _uniform_vs_gamma,
    (Uniform, Normal): _uniform_vs_normal,
}

# p's type, the q types whose support misses part of p's, and the parameter the result is shaped like
_DISJOINT_SUPPORTS = (
    (Exponential, (Beta, Uniform), "rate"),
    (Gamma, (Beta, Uniform), "concentration"),
    (Laplace, (Beta, Exponential, Gamma, Uniform), "loc"),
    (Normal, (Beta, Exponential, Gamma, Uniform), "loc"),
    (Poisson, (Bernoulli, Binomial), "rate"),
)

for _family, _fun in _SAME_FAMILY.items():
    register_kl(_family, _family)(_fun)
for (_type_p, _type_q), _fun in _ACROSS_FAMILIES.items():
    register_kl(_type_p, _type_q)(_fun)
for _type_p, _types_q, _param in _DISJOINT_SUPPORTS:
    for _type_q in _types_q:
        register_kl(_type_p, _type_q)(_infinite(_param))
