"""Independent(base, n): the base's n rightmost batch dims become event dims
(torch.distributions.Independent)."""
import ember

from . import constraints
from .distribution import Distribution
from .utils import _read_through, _sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """Only the shapes change: moments and samples are the base's, while log_prob and entropy
    add up over the reinterpreted dims."""
    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        batch_ndims = len(base_distribution.batch_shape)
        if reinterpreted_batch_ndims > batch_ndims:
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {batch_ndims}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        dims = base_distribution.batch_shape + base_distribution.event_shape
        split = batch_ndims - reinterpreted_batch_ndims
        super().__init__(dims[:split], dims[split:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = ember.Size(batch_shape)
        ndims = self.reinterpreted_batch_ndims
        moved_dims = self.event_shape[:ndims]  # the base's batch dims that this reads as event dims
        new.base_dist = self.base_dist.expand(batch_shape + moved_dims)
        new.reinterpreted_batch_ndims = ndims
        return self._expanded(new, batch_shape)

    has_rsample = _read_through("base_dist", "has_rsample")
    mean = _read_through("base_dist", "mean")
    mode = _read_through("base_dist", "mode")
    variance = _read_through("base_dist", "variance")

    def _sum_over_moved_dims(self, values):
        return _sum_rightmost(values, self.reinterpreted_batch_ndims)

    @property
    def _events_span_batch_dims(self):
        """Whether an event joins several of the base's events (whose product support is not enumerated)."""
        return self.reinterpreted_batch_ndims > 0

    @property
    def has_enumerate_support(self):
        return not self._events_span_batch_dims and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        per_entry = self.base_dist.support
        if not self.reinterpreted_batch_ndims:
            return per_entry
        return constraints.independent(per_entry, self.reinterpreted_batch_ndims)

    def sample(self, sample_shape=ember.Size()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=ember.Size()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return self._sum_over_moved_dims(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum_over_moved_dims(self.base_dist.entropy())

    def enumerate_support(self, expand=True):
        if self._events_span_batch_dims:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
