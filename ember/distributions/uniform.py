"""Uniform(low, high) on the half-open interval [low, high) (torch.distributions.Uniform)."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Everything follows from the two ends and the width high - low."""
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Uniform, batch_shape, _instance, "low", "high")

    def _width(self):
        return self.high - self.low

    @property
    def arg_constraints(self):
        # each end is checked against the other: low < high
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.low + self.high) / 2

    @property
    def mode(self):
        return math.nan * self.high  # every point is a mode: none is reported

    @property
    def stddev(self):
        return self._width() / 12 ** 0.5

    @property
    def variance(self):
        return self._width().pow(2) / 12

    def rsample(self, sample_shape=ember.Size()):
        u = ember.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * self._width()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = self.low.le(value) & self.high.gt(value)
        return ember.log(inside.type_as(self.low)) - ember.log(self._width())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        fraction = (value - self.low) / self._width()
        return fraction.clamp(0, 1)

    def icdf(self, value):
        return value * self._width() + self.low

    def entropy(self):
        return self._width().log()
