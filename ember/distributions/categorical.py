"""Categorical(probs | logits) over {0, ..., K-1} (torch.distributions.Categorical)."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import _check_probs_or_logits, _ProbsOrLogits, _read_through

__all__ = ["Categorical"]


def _at_least_1d(param, name):
    """param itself; torch's ValueError when it has no category dimension."""
    if param.dim() == 0:
        raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
    return param


def _vector_arg_constraints():
    """arg_constraints of the distributions whose values are vectors over the K categories (a fresh dict)."""
    return {"probs": constraints.simplex, "logits": constraints.real_vector}


def _stack_over_batch(values, batch_shape, expand):
    """enumerate_support's result: the n candidate values (n, *event) set on a leading dim, with a size-1
    (or, when expand, a full) dim for each batch dim between."""
    n, event = values.shape[0], tuple(values.shape[1:])
    batch = tuple(batch_shape)
    values = values.view((n,) + (1,) * len(batch) + event)
    return values.expand((n,) + batch + event) if expand else values


class Categorical(_ProbsOrLogits, Distribution):
    """probs are normalized over the last dim; logits are shifted to log-probabilities."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs=None, logits=None, validate_args=None):
        _check_probs_or_logits(probs, logits)
        if probs is not None:
            probs = _at_least_1d(probs, "probs")
            self.probs = self._param = probs / probs.sum(-1, keepdim=True)
        else:
            logits = _at_least_1d(logits, "logits")
            self.logits = self._param = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        new._num_events = self._num_events
        batch_shape = ember.Size(batch_shape)
        self._expand_probs_or_logits(new, batch_shape + (self._num_events,))
        return self._expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        largest = self._num_events - 1
        return constraints.integer_interval(0, largest)

    def _undefined(self):
        """mean and variance: NaN, as a category index has neither."""
        return ember.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    mean = property(_undefined)
    variance = property(_undefined)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    def sample(self, sample_shape=ember.Size()):
        sample_shape = ember.Size(sample_shape)
        rows = self.probs.reshape(-1, self._num_events)  # one row per batch element
        with ember.no_grad():
            picks = ember.multinomial(rows, sample_shape.numel(), True)
        # picks is (batch, draws): move the draws to the front
        return picks.T.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        index, log_pmf = ember.broadcast_tensors(value.long().unsqueeze(-1), self.logits)
        return log_pmf.gather(-1, index[..., :1]).squeeze(-1)

    def entropy(self):
        # -inf logits (zero probabilities) are raised to the lowest finite value so that 0 * logit is 0, not nan
        lowest = ember.finfo(self.logits.dtype).min
        log_p = self.logits.clamp(min=lowest)
        return -(self.probs * log_p).sum(-1)

    def enumerate_support(self, expand=True):
        return _stack_over_batch(ember.arange(self._num_events, dtype=ember.long), self._batch_shape, expand)


class _CategoricalParams:
    """Mixin of the distributions built on a Categorical (self._categorical): its parameters are theirs."""
    probs = _read_through("_categorical", "probs")
    logits = _read_through("_categorical", "logits")
    param_shape = _read_through("_categorical", "param_shape")

    def _wrap_categorical(self, probs, logits):
        """Store Categorical(probs, logits) as self._categorical; return the batch shape and the event
        shape (K,) of a distribution whose values are vectors over the K categories."""
        self._categorical = Categorical(probs, logits)
        return self._categorical.batch_shape, self._categorical.param_shape[-1:]

    def _new(self, *args, **kwargs):
        return self._categorical._param.new(*args, **kwargs)
