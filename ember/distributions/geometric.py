"""Geometric(probs | logits): failures before the first success, on {0, 1, 2, ...}
(torch.distributions.Geometric)."""
import ember

from . import constraints
from .bernoulli import bce_with_logits
from .distribution import Distribution
from .utils import _check_probs_or_logits, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """P(k) = (1 - p)^k p. Only the given one of probs and logits is stored; the other is lazy."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        _check_probs_or_logits(probs, logits)
        name, given = ("probs", probs) if probs is not None else ("logits", logits)
        param = broadcast_all(given)[0]
        setattr(self, name, param)
        super().__init__(param.size(), validate_args=validate_args)
        if name == "probs" and self._validate_args:
            self._check_probs_positive()

    def _check_probs_positive(self):
        """torch's extra check beyond unit_interval: p = 0 would never succeed."""
        positive = self.probs > 0
        if not bool(positive.all()):
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found "
                             f"invalid values:\n{self.probs.detach()[~positive]}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Geometric, batch_shape, _instance, "probs", "logits")

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return self.mean / self.probs

    def sample(self, sample_shape=ember.Size()):
        """floor(log u / log(1 - p)) for u uniform on (0, 1]."""
        p = self.probs
        with ember.no_grad():
            u = ember.empty(self._extended_shape(sample_shape), dtype=p.dtype)
            u.uniform_(ember.finfo(p.dtype).tiny, 1)
            failures = u.log() / (-p).log1p()
            return failures.floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, p = broadcast_all(value, self.probs)
        # p = 1 and k = 0 has probability 1: p is zeroed there (not after the log1p) so that the term k log(1 - p)
        # is 0 * 0, with a zero gradient, rather than 0 * -inf
        certain = (p == 1) & (value == 0)
        p = ember.where(certain, ember.zeros_like(p), p)
        return value * (-p).log1p() + self.probs.log()

    def entropy(self):
        return bce_with_logits(self.logits, self.probs) / self.probs
