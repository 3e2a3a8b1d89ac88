"""Chi2(df) = Gamma(df / 2, 1 / 2) (torch.distributions.Chi2)."""
from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """A Gamma whose rate is fixed at 1/2: df is stored only as the concentration, df / 2."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        half_df = 0.5 * df
        super().__init__(half_df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        # the blank comes from Chi2, so a subclass with its own __init__ still has to write expand()
        return super().expand(batch_shape, self._get_checked_instance(Chi2, _instance))

    @property
    def df(self):
        return self.concentration * 2
