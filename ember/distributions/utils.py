"""Helpers shared by the distributions (torch.distributions.utils): broadcasting parameters,
probabilities <-> logits, lazily computed parameters."""
from functools import update_wrapper
from numbers import Number

import ember

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "euler_constant"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values):
    """Tensors broadcast to one shape; Python numbers become tensors of the first tensor's
    dtype (the default dtype when there is none)."""
    for v in values:
        if not isinstance(v, (ember.Tensor, Number)):
            raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects "
                             "implementing __torch_function__.")
    tensors = [v for v in values if isinstance(v, ember.Tensor)]
    if not tensors:
        d = ember.get_default_dtype()
        return tuple(ember.tensor(float(v), dtype=d) for v in values)
    d = tensors[0].dtype
    converted = [v if isinstance(v, ember.Tensor) else ember.tensor(v, dtype=d) for v in values]
    return ember.broadcast_tensors(*converted)


def _standard_normal(shape, dtype, device=None):
    return ember.randn(shape, dtype=dtype)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions of value."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Sigmoid of binary logits, softmax over the last dim of categorical ones."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp into [eps, 1 - eps] so that logs and logits stay finite."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """log(p) (categorical) or log(p) - log(1 - p) (binary), of clamped probabilities."""
    clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(clamped) - ember.log1p(-clamped)
    return ember.log(clamped)


def _read_through(holder, name):
    """A read-only property answering with attribute `name` of the object in the instance's attribute `holder`
    (a wrapped distribution whose parameters or moments are the wrapper's)."""
    return property(lambda self: getattr(getattr(self, holder), name), doc=f"{holder}'s {name}.")


def _softplus(x):
    """log(1 + exp(x)) for any x, with gradient sigmoid(x) everywhere."""
    return ember.logaddexp(x.new_zeros(()), x)


def _check_probs_or_logits(probs, logits):
    """torch's ValueError unless exactly one of probs and logits is given."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class lazy_property:
    """A parameter computed on first access (with grad enabled) and then stored on the
    instance; on the class it reads as a property (so validation can skip it)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _LazyAsProperty(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _LazyAsProperty(lazy_property, property):
    """What a lazy_property looks like on the class: both kinds at once."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)


class _ProbsOrLogits:
    """Mixin of the distributions given probs or logits: the one given is stored and is `_param`, the other is
    computed on first use (sigmoid/logit when `_binary`, else softmax/log over the last dim)."""
    _binary = True

    def _set_probs_or_logits(self, probs, logits):
        """Store the one given of probs and logits (a Python number becomes a 0-d tensor) as `_param`."""
        _check_probs_or_logits(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits

    def _expand_probs_or_logits(self, new, param_shape):
        """For expand(): whichever of probs and logits self holds, expanded into new (logits is `_param` if both)."""
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)
