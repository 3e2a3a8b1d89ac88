"""Dirichlet(concentration) on the simplex (torch.distributions.Dirichlet).

rsample normalizes independent Gamma(concentration_i, 1) draws as torch's _sample_dirichlet does
(the same values); the gradient is the implicit-reparameterization one through those draws.
This is a valid pathwise gradient (unbiased for every objective) but not torch's own estimator
(torch's _dirichlet_grad differentiates each coordinate's Beta marginal), so single-sample
gradients differ from torch's while their expectations agree.
"""
import ember

from . import constraints
from ._special import sample_dirichlet
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Points of the simplex with density proportional to prod_i x_i^(c_i - 1), c = concentration."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() == 0:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        k = concentration.shape[-1]
        super().__init__(concentration.shape[:-1], (k,), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = ember.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self._event_shape))
        return self._expanded(new, batch_shape)

    def rsample(self, sample_shape=()):
        c = self.concentration.expand(self._extended_shape(sample_shape))
        return sample_dirichlet(c)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return ember.xlogy(c - 1.0, value).sum(-1) + ember.lgamma(c.sum(-1)) - ember.lgamma(c).sum(-1)

    @property
    def mean(self):
        c = self.concentration
        return c / c.sum(-1, True)

    @property
    def mode(self):
        """(c - 1)+ normalized; where every c < 1 the mass piles at a vertex (one-hot at argmax)."""
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, True)
        corner = (self.concentration < 1).all(dim=-1, keepdim=True)
        k = cm1.shape[-1]
        vertex = ember.eye(k, dtype=mode.dtype)[mode.argmax(-1)]
        return ember.where(corner, vertex, mode)

    @property
    def variance(self):
        c = self.concentration
        total = c.sum(-1, True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        return (ember.lgamma(c).sum(-1) - ember.lgamma(total) - (k - total) * ember.digamma(total)
                - ((c - 1.0) * ember.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, eta):
        return eta.lgamma().sum(-1) - ember.lgamma(eta.sum(-1))
