"""Binomial(total_count, probs | logits) (torch.distributions.Binomial)."""
import ember

from . import constraints
from .categorical import _stack_over_batch
from .distribution import Distribution
from .utils import _check_probs_or_logits, _ProbsOrLogits, broadcast_all

__all__ = ["Binomial"]


def _positive_part(x):
    """max(x, 0), with gradient 1/2 at x = 0 (torch's choice here)."""
    above = x.clamp(min=0)
    below = x.clamp(max=0)
    return (above + x - below) / 2


class Binomial(_ProbsOrLogits, Distribution):
    """Successes in total_count trials; total_count is a tensor of probs' (or logits') dtype and shape."""
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _check_probs_or_logits(probs, logits)
        name, given = ("probs", probs) if probs is not None else ("logits", logits)
        count, param = broadcast_all(total_count, given)
        self.total_count = count.type_as(param)
        setattr(self, name, param)
        self._param = param
        super().__init__(param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Binomial, batch_shape, _instance, "total_count")
        self._expand_probs_or_logits(new, new.batch_shape)
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        n = self.total_count
        return ((n + 1) * self.probs).floor().clamp(max=n)

    @property
    def variance(self):
        return self.mean * (1 - self.probs)

    def sample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logit = self.total_count, self.logits
        log_n_factorial = ember.lgamma(n + 1)
        log_k_factorial = ember.lgamma(value + 1)
        log_rest_factorial = ember.lgamma(n - value + 1)
        # n log(1 + e^logit) - log n!, with n log(1 + e^logit) as n max(logit, 0) + n log1p(e^-|logit|):
        # finite for any logit
        log_normalizer = n * _positive_part(logit) + n * ember.log1p(ember.exp(-ember.abs(logit))) - log_n_factorial
        return value * logit - log_k_factorial - log_rest_factorial - log_normalizer

    def _common_total_count(self, method):
        """The total_count shared by the whole batch, as an int; torch's error when the counts differ."""
        n = int(self.total_count.max())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{method}`.")
        return n

    def entropy(self):
        self._common_total_count("entropy")
        log_pmf = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_pmf) * log_pmf).sum(0)

    def enumerate_support(self, expand=True):
        n = self._common_total_count("enumerate_support")
        return _stack_over_batch(ember.arange(n + 1, dtype=self._param.dtype), self._batch_shape, expand)
