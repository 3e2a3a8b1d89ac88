"""Normal(loc, scale) (torch.distributions.Normal)."""
import math
from numbers import Real

import ember

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _standard_normal, broadcast_all

__all__ = ["Normal"]

_SQRT2 = math.sqrt(2)
_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
_ENTROPY_AT_UNIT_SCALE = 0.5 + 0.5 * math.log(2 * math.pi)


class Normal(ExponentialFamily):
    """The Gaussian with mean `loc` and standard deviation `scale`."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Normal, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def sample(self, sample_shape=ember.Size()):
        """Drawn by ember.normal (torch's sampler and stream), not as loc + scale * randn."""
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape=ember.Size()):
        noise = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + noise * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        scale = self.scale
        squared_error = (value - self.loc) ** 2
        log_scale = math.log(scale) if isinstance(scale, Real) else scale.log()
        return -squared_error / (2 * scale ** 2) - log_scale - _LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) * self.scale.reciprocal() / _SQRT2
        return 0.5 * (1 + ember.erf(z))

    def icdf(self, value):
        return self.loc + self.scale * ember.erfinv(2 * value - 1) * _SQRT2

    def entropy(self):
        return _ENTROPY_AT_UNIT_SCALE + ember.log(self.scale)

    @property
    def _natural_params(self):
        eta1 = self.loc / self.scale.pow(2)
        eta2 = -0.5 * self.scale.pow(2).reciprocal()
        return eta1, eta2

    def _log_normalizer(self, eta1, eta2):
        return -0.25 * eta1.pow(2) / eta2 + 0.5 * ember.log(-math.pi / eta2)
