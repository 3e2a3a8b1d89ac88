"""kl_divergence(p, q) and register_kl: closed forms looked up by the pair of types, the most
specific registered pair winning (torch.distributions.kl)."""
import math
import warnings
from functools import total_ordering

import ember

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _softplus, _sum_rightmost, euler_constant

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}  # (type_p, type_q) -> function, as registered
_KL_MEMOIZE = {}  # (type_p, type_q) -> function, as dispatched


def register_kl(type_p, type_q):
    """Decorator: @register_kl(Normal, Normal) def kl(p, q): ..."""
    # torch's check refuses what is not a class and lets any class through (its issubclass test never fails)
    if not isinstance(type_p, type):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


@total_ordering
class _Match:
    """A candidate pair, ordered by how specific it is (position in each type's MRO)."""
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    """The registered function for the most specific (p, q) pair, warning on ties."""
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl("
                      f"{left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=2)
    return left_fun


def _infinite_like(tensor):
    return ember.full_like(tensor, math.inf)


def _x_log_x(tensor):
    return tensor * tensor.log()


def _batch_trace_XXT(bmat):
    """trace(X X^T) over batches: the sum of squares of each matrix."""
    n = bmat.size(-1)
    m = bmat.size(-2)
    flat = bmat.reshape(bmat.shape[:-2] + (m * n,))
    return flat.pow(2).sum(-1)


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the broadcast batch shape."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


# ---- same family ------------------------------------------------------------------------------

@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    t1 = ember.where(q.probs == 0, ember.full_like(t1, math.inf), t1)
    t1 = ember.where(p.probs == 0, ember.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    t2 = ember.where(q.probs == 1, ember.full_like(t2, math.inf), t2)
    t2 = ember.where(p.probs == 1, ember.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * ember.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * ember.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * ember.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return ember.where(p.total_count > q.total_count, ember.full_like(kl, math.inf), kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = ember.where((q.probs == 0).expand_as(t), ember.full_like(t, math.inf), t)
    t = ember.where((p.probs == 0).expand_as(t), ember.zeros_like(t), t)
    return t.sum(-1)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer between the natural parameters."""
    if type(p) is not type(q):
        # (torch's message has this run of spaces, from a line continuation inside its string)
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot"
                                  "                             be computed using Bregman divergences")
    p_nparams = [n.detach().requires_grad_() for n in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = ember.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * ember.log(p.rate / q.rate)
    t2 = ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ember.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * ember.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    Lp = p._unbroadcasted_scale_tril
    Lq = q._unbroadcasted_scale_tril
    half_term1 = Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    batch = ember.broadcast_shapes(Lq.shape[:-2], Lp.shape[:-2])
    n = p.event_shape[0]
    q_tril = Lq.expand(tuple(batch) + (n, n))
    p_tril = Lp.expand(tuple(batch) + (n, n))
    term2 = _batch_trace_XXT(ember.linalg.solve_triangular(q_tril, p_tril, upper=False))
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return ember.where(outside, ember.full_like(result, math.inf), result)


# ---- across families: -H(p) - E_p[log q] in closed form -------------------------------------------

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _neg_expected_normal_log(q, mean, second_moment):
    """-E[log q(x)] for q Normal, from E[x] and E[x^2] under p."""
    spread = second_moment - 2 * q.loc * mean + q.loc.pow(2)
    return q.scale.log() + _HALF_LOG_2PI + spread / (2 * q.scale.pow(2))


def _neg_expected_gamma_log(q, mean, mean_log):
    """-E[log q(x)] for q Gamma, from E[x] and E[log x] under p."""
    return -(q.concentration * q.rate.log() + (q.concentration - 1) * mean_log - q.rate * mean
             - q.concentration.lgamma())


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    total = p.concentration1 + p.concentration0
    mean_log = p.concentration1.digamma() - total.digamma()
    return -p.entropy() + _neg_expected_gamma_log(q, p.concentration1 / total, mean_log)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    mean = p.mean
    return -p.entropy() + _neg_expected_normal_log(q, mean, p.variance + mean.pow(2))


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    outside = (q.low > 0) | (q.high < 1)
    return ember.where(outside, ember.full_like(result, math.inf), result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    mean_log = -euler_constant - p.rate.log()
    return -p.entropy() + _neg_expected_gamma_log(q, p.rate.reciprocal(), mean_log)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    mean = p.rate.reciprocal()
    return -p.entropy() + _neg_expected_normal_log(q, mean, 2 * mean.pow(2))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    mean = p.concentration / p.rate
    second = p.concentration * (p.concentration + 1) / p.rate.pow(2)
    return -p.entropy() + _neg_expected_normal_log(q, mean, second)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return -p.entropy() + _neg_expected_normal_log(q, p.loc, 2 * p.scale.pow(2) + p.loc.pow(2))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    """E|x - m| for x ~ N(mu, s): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt 2)), d = mu - m."""
    d = p.loc - q.loc
    ratio = d / p.scale
    mean_abs = p.scale * math.sqrt(2 / math.pi) * ember.exp(-0.5 * ratio.pow(2)) + d * ember.erf(ratio / math.sqrt(2))
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


def _uniform_mean_log(low, high):
    """E[log x] for x ~ U(low, high), 0 <= low < high."""
    return (ember.xlogy(high, high) - ember.xlogy(low, low)) / (high - low) - 1


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    mean_log = _uniform_mean_log(p.low, p.high)
    mean_log1m = _uniform_mean_log(1 - p.high, 1 - p.low)
    log_beta = q.concentration1.lgamma() + q.concentration0.lgamma() - (q.concentration1 + q.concentration0).lgamma()
    expected = (q.concentration1 - 1) * mean_log + (q.concentration0 - 1) * mean_log1m - log_beta
    result = -p.entropy() - expected
    outside = (p.low < 0) | (p.high > 1)
    return ember.where(outside, ember.full_like(result, math.inf), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = -p.entropy() - q.rate.log() + q.rate * (p.high + p.low) / 2
    return ember.where(p.low < 0, ember.full_like(result, math.inf), result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    mean_log = _uniform_mean_log(p.low, p.high)
    result = -p.entropy() + _neg_expected_gamma_log(q, (p.high + p.low) / 2, mean_log)
    return ember.where(p.low < 0, ember.full_like(result, math.inf), result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    mean = (p.high + p.low) / 2
    second = (p.high.pow(3) - p.low.pow(3)) / (3 * (p.high - p.low))
    return -p.entropy() + _neg_expected_normal_log(q, mean, second)


# ---- pairs where q puts no mass on part of p's support --------------------------------------------

def _infinite_kl(param):
    def fun(p, q):
        return _infinite_like(getattr(p, param))
    return fun


for _p, _qs, _param in ((Exponential, (Beta, Uniform), "rate"), (Gamma, (Beta, Uniform), "concentration"),
                        (Laplace, (Beta, Exponential, Gamma, Uniform), "loc"),
                        (Normal, (Beta, Exponential, Gamma, Uniform), "loc"),
                        (Poisson, (Bernoulli, Binomial), "rate")):
    for _q in _qs:
        register_kl(_p, _q)(_infinite_kl(_param))
