"""TransformedDistribution(base, transforms): y = T_n(... T_1(x)) with x ~ base, scored by the
change of variables (torch.distributions.TransformedDistribution)."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .independent import Independent
from .transforms import ComposeTransform, Transform
from .utils import _sum_rightmost

__all__ = ["TransformedDistribution"]


def _transform_list(transforms):
    """A single Transform as a one-item list; a list of Transforms as it is (the same object)."""
    if isinstance(transforms, Transform):
        return [transforms]
    if not isinstance(transforms, list):
        raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
    if not all(isinstance(t, Transform) for t in transforms):
        raise ValueError("transforms must be a Transform or a list of Transforms")
    return transforms


def _fit_base(base, chain, shape):
    """base, expanded to the batch shape that the chain's parameters broadcast it to (shape is the
    chain's output shape), and made Independent over the dims the chain reads as event dims but
    base does not."""
    event_ndims = len(base.event_shape)
    needed = ember.Size(chain.inverse_shape(shape))
    if needed != base.batch_shape + base.event_shape:
        base = base.expand(needed[:len(needed) - event_ndims])
    missing = chain.domain.event_dim - event_ndims
    if missing > 0:
        base = Independent(base, missing)
    return base


class TransformedDistribution(Distribution):
    """log p(y) = log p_base(x) - sum_i log|det dT_i/dx_i|, with x recovered through the inverses."""
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        self.transforms = _transform_list(transforms)
        chain = ComposeTransform(self.transforms)
        in_shape = base_distribution.batch_shape + base_distribution.event_shape
        if len(in_shape) < chain.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least {chain.domain.event_dim}, "
                             f"but got {in_shape}.")
        shape = ember.Size(chain.forward_shape(in_shape))
        self.base_dist = _fit_base(base_distribution, chain, shape)
        # the event grows by what the chain adds, and covers at least the chain's own output event
        grown = len(base_distribution.event_shape) + chain.codomain.event_dim - chain.domain.event_dim
        event_ndims = max(chain.codomain.event_dim, grown)
        split = len(shape) - event_ndims
        super().__init__(shape[:split], shape[split:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = ember.Size(batch_shape)
        base_shape = ember.Size(ComposeTransform(self.transforms).inverse_shape(batch_shape + self.event_shape))
        base_batch_ndims = len(base_shape) - len(self.base_dist.event_shape)
        new.base_dist = self.base_dist.expand(base_shape[:base_batch_ndims])
        new.transforms = self.transforms
        return self._expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        last = self.transforms[-1].codomain
        extra = len(self.event_shape) - last.event_dim
        return constraints.independent(last, extra) if extra > 0 else last

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def _push_forward(self, x):
        """x (a base value) through every transform, first to last."""
        for step in self.transforms:
            x = step(x)
        return x

    def _pull_back(self, y):
        """y through every inverse, last transform first: the base value it came from."""
        for step in self.transforms[::-1]:
            y = step.inv(y)
        return y

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return self._push_forward(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=ember.Size()):
        return self._push_forward(self.base_dist.rsample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # walk back from y to x; ndims tracks how many rightmost dims form one event at each stage
        ndims = len(self.event_shape)
        total = 0.0
        y = value
        for step in self.transforms[::-1]:
            x = step.inv(y)
            ndims += step.domain.event_dim - step.codomain.event_dim
            jacobian = step.log_abs_det_jacobian(x, y)
            total = total - _sum_rightmost(jacobian, ndims - step.domain.event_dim)
            y = x
        base_term = _sum_rightmost(self.base_dist.log_prob(y), ndims - len(self.base_dist.event_shape))
        return total + base_term

    def _oriented(self, probability):
        """A base cdf value made the transformed one: unchanged for an increasing chain, 1 - p
        (written as sign * (p - 1/2) + 1/2) otherwise."""
        sign = math.prod(step.sign for step in self.transforms)
        if isinstance(sign, int) and sign == 1:
            return probability
        return sign * (probability - 0.5) + 0.5

    def cdf(self, value):
        x = self._pull_back(value)
        if self._validate_args:
            self.base_dist._validate_sample(x)
        return self._oriented(self.base_dist.cdf(x))

    def icdf(self, value):
        x = self.base_dist.icdf(self._oriented(value))
        return self._push_forward(x)
