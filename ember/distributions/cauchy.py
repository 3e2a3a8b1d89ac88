"""Cauchy(loc, scale) (torch.distributions.Cauchy)."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Cauchy"]

_LOG_PI = math.log(math.pi)
_LOG_4PI = math.log(4 * math.pi)


class Cauchy(Distribution):
    """Density 1 / (pi scale (1 + z^2)) with z = (x - loc) / scale; no mean or variance exist,
    so those report NaN and inf."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, "loc", "scale")

    def _constant(self, fill):
        """A batch-shaped tensor of one value, in loc's dtype."""
        return ember.full(self._extended_shape(), fill, dtype=self.loc.dtype)

    @property
    def mean(self):
        return self._constant(math.nan)

    @property
    def variance(self):
        return self._constant(math.inf)

    @property
    def mode(self):
        return self.loc

    def rsample(self, sample_shape=ember.Size()):
        """Standard Cauchy draws (Tensor.cauchy_, torch's stream), scaled and shifted."""
        standard = ember.empty(self._extended_shape(sample_shape), dtype=self.loc.dtype).cauchy_()
        return self.loc + standard * self.scale

    def _z(self, value):
        """value, standardized: checked against the support first when validation is on."""
        if self._validate_args:
            self._validate_sample(value)
        return (value - self.loc) / self.scale

    def log_prob(self, value):
        z = self._z(value)
        return -_LOG_PI - ember.log(self.scale) - ember.log1p(z ** 2)

    def cdf(self, value):
        angle = ember.atan(self._z(value))
        return angle / math.pi + 0.5

    def icdf(self, value):
        angle = math.pi * (value - 0.5)
        return ember.tan(angle) * self.scale + self.loc

    def entropy(self):
        return _LOG_4PI + ember.log(self.scale)
