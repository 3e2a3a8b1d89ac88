"""Multinomial(total_count, probs | logits): category counts of total_count draws
(torch.distributions.Multinomial)."""
import math

import ember

from . import constraints
from .binomial import Binomial
from .categorical import _CategoricalParams, _vector_arg_constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(_CategoricalParams, Distribution):
    """Counts per category of total_count independent Categorical draws (one fixed total_count for the batch)."""
    arg_constraints = _vector_arg_constraints()

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        batch_shape, event_shape = self._wrap_categorical(probs, logits)
        # each category's count on its own is Binomial(total_count, p_k): entropy() sums over its values
        self._binomial = Binomial(total_count, self.probs)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        # as torch's, the expanded copy has no _binomial (so no entropy())
        new = self._expand_params(Multinomial, batch_shape, _instance, "_categorical")
        new.total_count = self.total_count
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs.mul(self.total_count)

    @property
    def variance(self):
        p = self.probs
        return self.total_count * p * (1 - p)

    def sample(self, sample_shape=ember.Size()):
        """total_count categorical draws per event, counted per category."""
        sample_shape = ember.Size(sample_shape)
        picks = self._categorical.sample(ember.Size((self.total_count,)) + sample_shape)
        last_first = picks.permute(*range(1, picks.dim()), 0)  # the total_count draws go last
        counts = ember.zeros(self._extended_shape(sample_shape), dtype=picks.dtype)
        counts.scatter_add_(-1, last_first, ember.ones_like(last_first))
        return counts.to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # a category with probability 0 and count 0 contributes 0 * log 0 = 0
        never = (value == 0) & (logits == -math.inf)
        logits = ember.where(never, ember.zeros_like(logits), logits)
        log_coefficient = ember.lgamma(value.sum(-1) + 1) - ember.lgamma(value + 1).sum(-1)
        return log_coefficient + (logits * value).sum(-1)

    def entropy(self):
        # H = n H(Categorical) - log n! + sum_k E[log x_k!], each count x_k ~ Binomial(n, p_k); log 0! = 0
        n = ember.tensor(self.total_count)
        counts = self._binomial.enumerate_support(expand=False)[1:]
        pmf = self._binomial.log_prob(counts).exp()
        expected_log_factorials = (pmf * ember.lgamma(counts + 1)).sum([0, -1])
        return n * self._categorical.entropy() - ember.lgamma(n + 1) + expected_log_factorials
