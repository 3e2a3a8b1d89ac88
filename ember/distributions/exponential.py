"""Exponential(rate) (torch.distributions.Exponential)."""
import ember

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Density rate e^(-rate x) on x >= 0; as an exponential family, t = -rate and F(t) = -log(-t)."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        self.rate = broadcast_all(rate)[0]
        super().__init__(self.rate.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, "rate")

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    @property
    def mode(self):
        return ember.zeros_like(self.rate)

    def rsample(self, sample_shape=ember.Size()):
        """Unit-rate draws (Tensor.exponential_, torch's stream) divided by rate."""
        unit = ember.empty(self._extended_shape(sample_shape), dtype=self.rate.dtype)
        return unit.exponential_() / self.rate

    def _check_support(self, value):
        if self._validate_args:
            self._validate_sample(value)

    def log_prob(self, value):
        self._check_support(value)
        return ember.log(self.rate) - self.rate * value

    def cdf(self, value):
        self._check_support(value)
        survival = ember.exp(-self.rate * value)
        return 1 - survival

    def icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, neg_rate):
        return -(-neg_rate).log()
