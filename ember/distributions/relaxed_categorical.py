"""RelaxedOneHotCategorical (Concrete / Gumbel-softmax) and its log-space base
(torch.distributions.RelaxedOneHotCategorical, ExpRelaxedCategorical)."""
import ember

from . import constraints
from .categorical import _CategoricalParams, _vector_arg_constraints
from .distribution import Distribution
from .relaxed_bernoulli import _RelaxedParams
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


def _standard_gumbel(shape, dtype):
    """Gumbel(0, 1) noise -log(-log u), from one uniform u per element kept away from 0 and 1."""
    u = clamp_probs(ember.rand(shape, dtype=dtype))
    return -(-u.log()).log()


def _log_normalize(x):
    """x shifted so that its exp sums to 1 over the last dim."""
    return x - x.logsumexp(dim=-1, keepdim=True)


class ExpRelaxedCategorical(_CategoricalParams, Distribution):
    """log_softmax((logits + Gumbel noise) / temperature): the log of a Concrete draw."""
    arg_constraints = _vector_arg_constraints()
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        batch_shape, event_shape = self._wrap_categorical(probs, logits)
        self.temperature = temperature
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(ExpRelaxedCategorical, batch_shape, _instance, "_categorical")
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=ember.Size()):
        noise = _standard_gumbel(self._extended_shape(sample_shape), self.logits.dtype)
        return _log_normalize((self.logits + noise) / self.temperature)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        k = self._categorical._num_events
        t = self.temperature
        # the density of a log-Concrete point: (K-1)! t^(K-1) prod_i softmax(logits - t * value)_i
        log_front = ember.full_like(t, float(k)).lgamma() - t.log().mul(-(k - 1))
        log_softmaxed = _log_normalize(logits - value * t)
        return log_softmaxed.sum(-1) + log_front


class RelaxedOneHotCategorical(_RelaxedParams, TransformedDistribution):
    """Points of the simplex that approach one-hot vectors as the temperature goes to 0."""
    arg_constraints = _vector_arg_constraints()
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        log_space = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(log_space, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(RelaxedOneHotCategorical, _instance))
