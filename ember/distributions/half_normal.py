"""HalfNormal(scale): |X| for X ~ Normal(0, scale) (torch.distributions.HalfNormal)."""
import math

import ember

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal"]

_LOG_2 = math.log(2)
_MEAN_AT_UNIT_SCALE = math.sqrt(2 / math.pi)
_VARIANCE_AT_UNIT_SCALE = 1 - 2 / math.pi


class HalfNormal(TransformedDistribution):
    """Folding Normal(0, scale) at 0 doubles its density on x >= 0: every method below is the
    Normal's, rescaled for that fold."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        # scale is validated once, by this distribution's own arg_constraints
        centred = Normal(0, scale, validate_args=False)
        super().__init__(centred, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        # the blank comes from HalfNormal, so a subclass with its own __init__ still has to write expand()
        blank = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, blank)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return self.scale * _MEAN_AT_UNIT_SCALE

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    @property
    def variance(self):
        return self.scale.pow(2) * _VARIANCE_AT_UNIT_SCALE

    def _check_support(self, value):
        if self._validate_args:
            self._validate_sample(value)

    def log_prob(self, value):
        self._check_support(value)
        folded = self.base_dist.log_prob(value) + _LOG_2
        outside = ember.full_like(folded, -math.inf)
        return ember.where(value >= 0, folded, outside)

    def cdf(self, value):
        self._check_support(value)
        return self.base_dist.cdf(value) * 2 - 1

    def icdf(self, prob):
        # P(|X| <= x) = p  <=>  P(X <= x) = (1 + p) / 2
        return self.base_dist.icdf((1 + prob) / 2)

    def entropy(self):
        return self.base_dist.entropy() - _LOG_2
