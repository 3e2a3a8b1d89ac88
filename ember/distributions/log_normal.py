"""LogNormal(loc, scale): exp of a Normal (torch.distributions.LogNormal)."""
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """X = exp(Y) with Y ~ Normal(loc, scale); the moments follow from E[X^k] = exp(k loc + k^2 scale^2 / 2)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        gaussian = Normal(loc, scale, validate_args=validate_args)
        super().__init__(gaussian, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        # the blank comes from LogNormal, so a subclass with its own __init__ still has to write expand()
        blank = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, blank)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    def _log_var(self):
        """scale^2, the variance of log X."""
        return self.scale.pow(2)

    @property
    def mean(self):
        exponent = self.loc + self._log_var() / 2
        return exponent.exp()

    @property
    def mode(self):
        exponent = self.loc - self.scale.square()
        return exponent.exp()

    @property
    def variance(self):
        log_var = self._log_var()
        second_moment = (self.loc * 2 + log_var).exp()
        return log_var.expm1() * second_moment

    def entropy(self):
        # exp shifts the differential entropy by E[log|d exp(y)/dy|] = E[Y] = loc
        return self.loc + self.base_dist.entropy()
