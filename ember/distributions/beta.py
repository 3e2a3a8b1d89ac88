"""Beta(concentration1, concentration0), a two-component Dirichlet (torch.distributions.Beta)."""
from numbers import Real

import ember

from . import constraints
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


def _as_pair(concentration1, concentration0):
    """The two concentrations stacked on a last dim of size 2 (two Python numbers: a default-dtype pair)."""
    if isinstance(concentration1, Real) and isinstance(concentration0, Real):
        return ember.tensor([float(concentration1), float(concentration0)])
    return ember.stack(broadcast_all(concentration1, concentration0), -1)


def _component(i):
    """A read-only property: component i of the Dirichlet's concentration pair."""
    return property(lambda self: self._dirichlet.concentration[..., i])


class Beta(ExponentialFamily):
    """A Dirichlet over (x, 1 - x): sampling, density and entropy all come from self._dirichlet."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    concentration1 = _component(0)
    concentration0 = _component(1)

    def __init__(self, concentration1, concentration0, validate_args=None):
        self._dirichlet = Dirichlet(_as_pair(concentration1, concentration0), validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Beta, batch_shape, _instance, "_dirichlet")

    @property
    def mean(self):
        a, b = self._natural_params
        return a / (a + b)

    @property
    def mode(self):
        return self._dirichlet.mode.select(-1, 0)

    @property
    def variance(self):
        a, b = self._natural_params
        total = a + b
        return a * b / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        pair = self._dirichlet.rsample(sample_shape)
        return pair.select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(ember.stack((value, 1.0 - value), dim=-1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, a, b):
        return ember.lgamma(a) + ember.lgamma(b) - ember.lgamma(a + b)
