"""Gamma(concentration, rate) (torch.distributions.Gamma); rsample by implicit
reparameterization (see Note [Implicit gamma gradient] in _special.py)."""
import ember

from . import constraints
from ._special import gammainc, standard_gamma
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Density rate^a x^(a-1) e^(-rate x) / Gamma(a) on x >= 0, with a = concentration."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, "concentration", "rate")

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        peak = (self.concentration - 1) / self.rate
        return peak.clamp(min=0)  # below concentration 1 the density is highest at 0

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=ember.Size()):
        unit_rate = standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        draws = unit_rate / self.rate.expand(unit_rate.shape)
        # draws that underflowed to 0 are raised to the smallest normal number, in place and outside the graph
        draws.detach().clamp_(min=ember.finfo(draws.dtype).tiny)
        return draws

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        a, rate = self.concentration, self.rate
        return ember.xlogy(a, rate) + ember.xlogy(a - 1, value) - rate * value - ember.lgamma(a)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self):
        a = self.concentration
        return a - ember.log(self.rate) + ember.lgamma(a) + (1.0 - a) * ember.digamma(a)

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, eta1, eta2):
        shape = eta1 + 1
        return ember.lgamma(shape) + shape * ember.log(-eta2.reciprocal())
