"""Bernoulli(probs | logits) on {0, 1} (torch.distributions.Bernoulli)."""
import ember

from . import constraints
from .categorical import _stack_over_batch
from .exp_family import ExponentialFamily
from .utils import _ProbsOrLogits, _softplus, broadcast_all

__all__ = ["Bernoulli"]


def bce_with_logits(logits, target):
    """Elementwise binary cross entropy from logits: softplus(l) - target * l, stable for any l."""
    return _softplus(logits) - target * logits


class Bernoulli(_ProbsOrLogits, ExponentialFamily):
    """1 with probability p; log_prob and entropy are binary cross entropies computed from the logits."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_probs_or_logits(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Bernoulli, batch_shape, _instance)
        self._expand_probs_or_logits(new, new.batch_shape)
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        """1 where p > 1/2, 0 where p < 1/2, NaN at exactly 1/2."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return ember.where(self.probs == 0.5, ember.full_like(mode, float("nan")), mode)

    @property
    def variance(self):
        p = self.probs
        return p * (1 - p)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            p = self.probs.expand(self._extended_shape(sample_shape))
            return ember.bernoulli(p)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -bce_with_logits(*broadcast_all(self.logits, value))

    def entropy(self):
        return bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        return _stack_over_batch(ember.arange(2, dtype=self._param.dtype), self._batch_shape, expand)

    @property
    def _natural_params(self):
        return (ember.logit(self.probs),)

    def _log_normalizer(self, eta):
        return ember.log1p(ember.exp(eta))
