"""RelaxedBernoulli (binary Concrete / Gumbel-sigmoid) and its logit-space base
(torch.distributions.RelaxedBernoulli, LogitRelaxedBernoulli)."""
import ember

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import _ProbsOrLogits, _read_through, _softplus, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


def _logit(p):
    """log(p / (1 - p)), written as log p - log1p(-p)."""
    return p.log() - (-p).log1p()


def _standard_logistic(shape, dtype):
    """Logistic(0, 1) noise logit(u), from one uniform u per element kept away from 0 and 1."""
    u = clamp_probs(ember.rand(shape, dtype=dtype))
    return _logit(u)


class _RelaxedParams:
    """Mixin of the relaxed distributions, transforms of a base that holds their parameters."""
    temperature = _read_through("base_dist", "temperature")
    probs = _read_through("base_dist", "probs")
    logits = _read_through("base_dist", "logits")


class LogitRelaxedBernoulli(_ProbsOrLogits, Distribution):
    """(logit(u) + logits) / temperature for uniform u: the logit of a relaxed Bernoulli draw."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._set_probs_or_logits(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        new.temperature = self.temperature
        batch_shape = ember.Size(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        return self._expanded(new, batch_shape)

    def rsample(self, sample_shape=ember.Size()):
        p = clamp_probs(self.probs.expand(self._extended_shape(sample_shape)))
        noise = _standard_logistic(p.shape, p.dtype)
        # summed left to right, not as noise + _logit(p): the rounding then matches torch's
        return (noise + p.log() - (-p).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        z = logits - value * t
        return t.log() + z - 2 * _softplus(z)


class RelaxedBernoulli(_RelaxedParams, TransformedDistribution):
    """sigmoid of a LogitRelaxedBernoulli: values in (0, 1) that approach {0, 1} as the
    temperature goes to 0, differentiable in probs/logits."""
    arg_constraints = dict(LogitRelaxedBernoulli.arg_constraints)
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        # the base is built with the default validation, whatever validate_args says (as torch does)
        logit_space = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(logit_space, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(RelaxedBernoulli, _instance))
