"""Poisson(rate) (torch.distributions.Poisson)."""
import ember

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Counts with P(k) = rate^k e^(-rate) / k!; as an exponential family, t = log(rate) and F(t) = e^t."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        self.rate = broadcast_all(rate)[0]
        super().__init__(self.rate.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, "rate")

    @property
    def mean(self):
        return self.rate

    @property
    def variance(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    def sample(self, sample_shape=ember.Size()):
        """Counts from ember.poisson, outside autograd (Poisson has no reparameterized sample)."""
        out_shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.poisson(self.rate.expand(out_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lam, k = broadcast_all(self.rate, value)
        # xlogy makes the k = 0 term 0 even where rate is 0
        return ember.xlogy(k, lam) - lam - ember.lgamma(k + 1)

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, log_rate):
        return log_rate.exp()
