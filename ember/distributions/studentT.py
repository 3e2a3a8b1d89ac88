"""StudentT(df, loc, scale) (torch.distributions.StudentT); rsample through a Normal over the
square root of a Chi2 draw (so gradients reach df by implicit reparameterization)."""
import math

import ember

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return ember.where(self.df <= 1, ember.full_like(self.loc, math.nan), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """scale^2 df / (df - 2) for df > 2, inf for 1 < df <= 2, nan for df <= 1."""
        df = self.df
        finite = self.scale.pow(2) * df / ember.where(df > 2, df - 2, ember.ones_like(df))
        out = ember.where(df > 2, finite, ember.full_like(df, math.inf))
        return ember.where(df <= 1, ember.full_like(df, math.nan), out)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(StudentT, batch_shape, _instance, "df", "loc", "scale", "_chi2")

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * ember.rsqrt(z / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        log_norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + ember.lgamma(0.5 * self.df)
                    - ember.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ember.log1p(y ** 2.0 / self.df) - log_norm

    def entropy(self):
        lbeta = ember.lgamma(0.5 * self.df) + math.lgamma(0.5) - ember.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (ember.digamma(0.5 * (self.df + 1))
                                                          - ember.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
