"""OneHotCategorical(probs | logits): categorical draws as one-hot vectors
(torch.distributions.OneHotCategorical, and its straight-through variant)."""
import ember

from . import constraints
from .categorical import _CategoricalParams, _stack_over_batch, _vector_arg_constraints
from .distribution import Distribution
from .utils import _read_through

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


def _one_hot_like(indices, probs):
    """Rows of the K x K identity picked by indices, in probs' dtype (K = probs' last dim)."""
    identity = ember.eye(probs.shape[-1], dtype=probs.dtype)
    return identity[indices]


class OneHotCategorical(_CategoricalParams, Distribution):
    """A Categorical whose values are written as one-hot vectors of length K."""
    arg_constraints = _vector_arg_constraints()
    support = constraints.one_hot
    has_enumerate_support = True
    _param = _read_through("_categorical", "_param")

    def __init__(self, probs=None, logits=None, validate_args=None):
        batch_shape, event_shape = self._wrap_categorical(probs, logits)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(OneHotCategorical, batch_shape, _instance, "_categorical")

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return _one_hot_like(self.probs.argmax(-1), self.probs)

    @property
    def variance(self):
        p = self.probs
        return p * (1 - p)

    def sample(self, sample_shape=ember.Size()):
        return _one_hot_like(self._categorical.sample(sample_shape), self.probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        hot = value.max(dim=-1).indices
        return self._categorical.log_prob(hot)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        rows = ember.eye(self.event_shape[0], dtype=self._param.dtype)
        return _stack_over_batch(rows, self.batch_shape, expand)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """One-hot samples whose gradient is that of the probabilities (straight-through estimator)."""
    has_rsample = True

    def rsample(self, sample_shape=ember.Size()):
        hard = self.sample(sample_shape)
        soft = self.probs
        return hard + (soft - soft.detach())
