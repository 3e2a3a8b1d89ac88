"""Invertible maps y = T(x) that also report log|dy/dx|: the pieces TransformedDistribution chains
and constraint_registry hands out (torch.distributions.transforms).

Note [Transform caching]: a transform built with cache_size=1 remembers its last (x, y) pair and
answers T(x) or T.inv(y) from it when handed the very same object again (identity, not value), so
T.inv(T(x)) is x itself. The inverse of T shares T's memory: it is T run backwards.
"""
import math
import numbers
import weakref

import ember

from . import constraints
from .utils import _softplus, _sum_rightmost, broadcast_all

__all__ = ["AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "IndependentTransform",
           "LowerCholeskyTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StickBreakingTransform", "Transform", "identity_transform"]

# Domains and codomains that depend on a transform's parameters; read on the class they are
# placeholders that say "continuous".
_parametrized = constraints.dependent_property(is_discrete=False)


def _need_dims(ndim, wanted):
    """torch's error for a tensor or shape with fewer dims than a transform's event needs."""
    if ndim < wanted:
        raise ValueError("Too few dimensions on input")


def _real_block(ndims):
    """Unconstrained reals over the `ndims` rightmost dims."""
    return constraints.independent(constraints.real, ndims)


def _shape_with_params(shape, *params):
    """`shape` broadcast with the shapes of tensor parameters (plain numbers count as scalars)."""
    param_shapes = [getattr(p, "shape", ()) for p in params]
    return ember.broadcast_shapes(shape, *param_shapes)


def _equal_by_class(cls):
    """Class decorator for transforms without parameters: an instance equals any instance of cls,
    subclasses included."""
    def __eq__(self, other):
        return isinstance(other, cls)
    cls.__eq__ = __eq__
    cls.__hash__ = object.__hash__
    return cls


class Transform:
    """Base class: subclasses define _call and/or _inverse, plus log_abs_det_jacobian when
    bijective (torch.distributions.transforms.Transform). See Note [Transform caching]."""
    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        if cache_size:
            self._cached_x_y = None, None
        self._cache_size = cache_size
        self._inv = None
        super().__init__()

    def __getstate__(self):
        # the inverse is held by a weak reference, which cannot be pickled; it is rebuilt on use
        return {**self.__dict__, "_inv": None}

    @property
    def event_dim(self):
        ndims = self.domain.event_dim
        if ndims != self.codomain.event_dim:
            raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")
        return ndims

    @property
    def inv(self):
        """The inverse transform, built on first use."""
        return self._remembered_inverse(lambda: _InverseTransform(self))

    def _remembered_inverse(self, build):
        """The live inverse if one exists, else build() remembered by a weak reference, so a
        transform and its inverse never keep each other alive."""
        inverse = None if self._inv is None else self._inv()
        if inverse is None:
            inverse = build()
            self._inv = weakref.ref(inverse)
        return inverse

    @property
    def sign(self):
        """+1 or -1 for a monotone increasing or decreasing bijection."""
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return self._rebuilt(cache_size)

    def _rebuilt(self, cache_size):
        """A copy with another cache size; transforms with parameters override this."""
        if type(self).__init__ is not Transform.__init__:
            raise NotImplementedError(f"{type(self)}.with_cache is not implemented")
        return type(self)(cache_size)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._through_cache(x, self._call, forward=True)

    def _run_inverse(self, y):
        """T.inv(y), through the same cache as T(x)."""
        return self._through_cache(y, self._inverse, forward=False)

    def _through_cache(self, value, compute, forward):
        """compute(value), or the remembered other half of the pair when value is the remembered
        input (Note [Transform caching])."""
        if not self._cache_size:
            return compute(value)
        x, y = self._cached_x_y
        known, answer = (x, y) if forward else (y, x)
        if value is known:
            return answer
        result = compute(value)
        self._cached_x_y = (value, result) if forward else (result, value)
        return result

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape


class _InverseTransform(Transform):
    """T.inv for a transform T: the constraints swap, calls run T backwards through T's cache,
    and the log-Jacobian is T's, negated. `_inv` holds T itself here."""

    def __init__(self, transform):
        super().__init__(transform._cache_size)
        self._inv = transform

    @_parametrized
    def domain(self):
        return self._inv.codomain

    @_parametrized
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        forward = self._inv.with_cache(cache_size)
        return forward.inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._inv._run_inverse(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


def _chain_end(steps, entry_side, exit_side):
    """The constraint at the far end of `steps`, walked in order, each step taking its entry_side
    ("domain" or "codomain") to its exit_side: the last step's exit constraint, made independent
    over any event dims that earlier steps carry through as whole blocks."""
    ndims = getattr(steps[0], entry_side).event_dim
    for step in steps:
        ndims_in = getattr(step, entry_side).event_dim
        ndims_out = getattr(step, exit_side).event_dim
        ndims = max(ndims + ndims_out - ndims_in, ndims_out)
    end = getattr(steps[-1], exit_side)
    if ndims > end.event_dim:
        end = constraints.independent(end, ndims - end.event_dim)
    return end


class ComposeTransform(Transform):
    """parts[0] applied first, parts[-1] last. The log-Jacobian adds the parts' terms, each summed
    over the dims that are event dims of the chain but batch dims of that part."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @_parametrized
    def domain(self):
        if not self.parts:
            return constraints.real
        return _chain_end(self.parts[::-1], "codomain", "domain")

    @_parametrized
    def codomain(self):
        if not self.parts:
            return constraints.real
        return _chain_end(self.parts, "domain", "codomain")

    @property
    def bijective(self):
        return all(part.bijective for part in self.parts)

    @property
    def sign(self):
        return math.prod(p.sign for p in self.parts)

    @property
    def inv(self):
        def build():
            inverse = ComposeTransform([p.inv for p in reversed(self.parts)])
            inverse._inv = weakref.ref(self)
            return inverse
        return self._remembered_inverse(build)

    def _rebuilt(self, cache_size):
        return ComposeTransform(self.parts, cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        # the values between parts: x, parts[0](x), ..., y
        points = [x]
        for part in self.parts[:-1]:
            points.append(part(points[-1]))
        points.append(y)
        ndims = self.domain.event_dim
        total = None
        for part, before, after in zip(self.parts, points, points[1:]):
            per_part = part.log_abs_det_jacobian(before, after)
            term = _sum_rightmost(per_part, ndims - part.domain.event_dim)
            total = term if total is None else total + term
            ndims += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        for step in self.parts:
            shape = step.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for step in self.parts[::-1]:
            shape = step.inverse_shape(shape)
        return shape

    def __repr__(self):
        body = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {body}\n)"


identity_transform = ComposeTransform(parts=[])


class IndependentTransform(Transform):
    """base_transform, with its `reinterpreted_batch_ndims` rightmost batch dims treated as event
    dims: the same values, a log-Jacobian summed over those dims."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def _rebuilt(self, cache_size):
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size)

    def _widened(self, constraint):
        return constraints.independent(constraint, self.reinterpreted_batch_ndims)

    @_parametrized
    def domain(self):
        return self._widened(self.base_transform.domain)

    @_parametrized
    def codomain(self):
        return self._widened(self.base_transform.codomain)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def log_abs_det_jacobian(self, x, y):
        per_element = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(per_element, self.reinterpreted_batch_ndims)

    def _call(self, x):
        _need_dims(x.dim(), self.domain.event_dim)
        return self.base_transform(x)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def _inverse(self, y):
        _need_dims(y.dim(), self.codomain.event_dim)
        return self.base_transform.inv(y)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


def _reshape_event(value, ndims, event_shape):
    """value with its `ndims` rightmost dims reshaped to event_shape."""
    batch = value.shape[:value.dim() - ndims]
    return value.reshape(tuple(batch) + tuple(event_shape))


def _swap_event_shape(shape, expected, replacement):
    """shape with its trailing `expected` dims replaced by `replacement` (torch's errors when the
    trailing dims are missing or different)."""
    _need_dims(len(shape), len(expected))
    split = len(shape) - len(expected)
    if tuple(shape[split:]) != tuple(expected):
        raise ValueError(f"Shape mismatch: expected {shape[split:]} but got {expected}")
    return ember.Size(tuple(shape[:split]) + tuple(replacement))


class ReshapeTransform(Transform):
    """The rightmost dims reshaped from in_shape to out_shape (same number of elements)."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = ember.Size(in_shape)
        self.out_shape = ember.Size(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size)

    @constraints.dependent_property
    def domain(self):
        return _real_block(len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return _real_block(len(self.out_shape))

    def _rebuilt(self, cache_size):
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size)

    def _call(self, x):
        return _reshape_event(x, len(self.in_shape), self.out_shape)

    def _inverse(self, y):
        return _reshape_event(y, len(self.out_shape), self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        # a reshape moves values without scaling them: zero per batch element
        return x.new_zeros(x.shape[:x.dim() - len(self.in_shape)])

    def forward_shape(self, shape):
        return _swap_event_shape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return _swap_event_shape(shape, self.out_shape, self.in_shape)


# ---- elementwise maps --------------------------------------------------------------------------


class _Increasing(Transform):
    """Strictly increasing elementwise bijections of the real line."""
    bijective = True
    sign = +1


@_equal_by_class
class ExpTransform(_Increasing):
    """y = exp(x)."""
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""
    domain = codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size)
        self.exponent = broadcast_all(exponent)[0]

    def _rebuilt(self, cache_size):
        return PowerTransform(self.exponent, cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        root = 1 / self.exponent
        return y.pow(root)

    def log_abs_det_jacobian(self, x, y):
        slope = self.exponent * y / x  # p * x**(p - 1), written with y = x**p
        return slope.abs().log()

    def forward_shape(self, shape):
        return _shape_with_params(shape, self.exponent)

    inverse_shape = forward_shape


def _inside_unit(p):
    """p clamped to [tiny, 1 - eps] of its dtype: a sigmoid's output kept off 0 and 1 (torch's bounds),
    so that logs and the inverse stay finite."""
    limits = ember.finfo(p.dtype)
    return p.clamp(min=limits.tiny, max=1.0 - limits.eps)


@_equal_by_class
class SigmoidTransform(_Increasing):
    """y = 1 / (1 + exp(-x)), kept strictly inside (0, 1) so that the inverse stays finite."""
    domain, codomain = constraints.real, constraints.unit_interval

    def _call(self, x):
        return _inside_unit(ember.sigmoid(x))

    def _inverse(self, y):
        p = _inside_unit(y)
        return p.log() - (-p).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x) - _softplus(x)


@_equal_by_class
class SoftplusTransform(_Increasing):
    """y = log(1 + exp(x))."""
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x):
        return _softplus(x)

    def _inverse(self, y):
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x)


@_equal_by_class
class TanhTransform(_Increasing):
    """y = tanh(x); log|dy/dx| = 2 (log 2 - x - softplus(-2x)), finite for large |x|."""
    domain, codomain = constraints.real, constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


@_equal_by_class
class AbsTransform(Transform):
    """y = |x|; not injective, so the inverse returns the non-negative preimage."""
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


def _same_param(a, b):
    """Parameter equality: a plain comparison for two numbers, elementwise for tensors."""
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return not a != b
    return bool((ember.as_tensor(a) == ember.as_tensor(b)).all())


class AffineTransform(Transform):
    """y = loc + scale * x, with `event_dim` rightmost dims forming one event."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @_parametrized
    def domain(self):
        return _real_block(self.event_dim) if self.event_dim else constraints.real

    @_parametrized
    def codomain(self):
        return _real_block(self.event_dim) if self.event_dim else constraints.real

    def _rebuilt(self, cache_size):
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size)

    def __eq__(self, other):
        return (isinstance(other, AffineTransform) and _same_param(self.loc, other.loc)
                and _same_param(self.scale, other.scale))

    __hash__ = object.__hash__

    @property
    def sign(self):
        if not isinstance(self.scale, numbers.Real):
            return self.scale.sign()
        value = float(self.scale)
        return int(value > 0) - int(value < 0)

    def _call(self, x):
        scaled = self.scale * x
        return self.loc + scaled

    def _inverse(self, y):
        shifted = y - self.loc
        return shifted / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, numbers.Real):
            log_scale = ember.full_like(x, math.log(abs(self.scale)))
        else:
            log_scale = self.scale.abs().log()
        batch_shape = x.shape[:x.dim() - self.event_dim]
        return _sum_rightmost(log_scale, self.event_dim).expand(batch_shape)

    def forward_shape(self, shape):
        return _shape_with_params(shape, self.loc, self.scale)

    inverse_shape = forward_shape


# ---- maps onto structured sets -----------------------------------------------------------------


@_equal_by_class
class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by softmax; many-to-one, so no log-Jacobian."""
    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x):
        unnormalized = (x - x.max(-1, keepdim=True)[0]).exp()
        return unnormalized / unnormalized.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        _need_dims(len(shape), 1)
        return shape

    inverse_shape = forward_shape


def _log_stick_counts(x):
    """log(K), log(K - 1), ..., log(1) for K = x.shape[-1]: the logit shift that makes x = 0 break
    the stick into equal pieces."""
    k = x.shape[-1]
    counts = k + 1 - x.new_ones(k).cumsum(-1)
    return counts.log()


@_equal_by_class
class StickBreakingTransform(Transform):
    """R^(K-1) onto the K-simplex: piece k takes the fraction sigmoid(x_k - log(K - k)) of the
    stick that pieces before it left."""
    domain, codomain = constraints.real_vector, constraints.simplex
    bijective = True

    def _call(self, x):
        fractions = _inside_unit(ember.sigmoid(x - _log_stick_counts(x)))
        left = (1 - fractions).cumprod(-1)
        ones = x.new_ones(x.shape[:-1] + (1,))
        return ember.cat([fractions, ones], -1) * ember.cat([ones, left], -1)

    def _inverse(self, y):
        pieces = y[..., :-1]
        left = (1 - pieces.cumsum(-1)).clamp(min=ember.finfo(y.dtype).tiny)
        return pieces.log() - left.log() + _log_stick_counts(pieces)

    def log_abs_det_jacobian(self, x, y):
        logits = x - _log_stick_counts(x)
        per_piece = -logits + ember.nn.functional.logsigmoid(logits) + y[..., :-1].log()
        return per_piece.sum(-1)

    def forward_shape(self, shape):
        _need_dims(len(shape), 1)
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        _need_dims(len(shape), 1)
        return tuple(shape[:-1]) + (shape[-1] - 1,)


def _map_diagonal(m, fn):
    """The strict lower triangle of m plus fn of its diagonal (the upper triangle is dropped)."""
    strict_lower = m.tril(-1)
    diagonal = m.diagonal(dim1=-2, dim2=-1)
    return strict_lower + fn(diagonal).diag_embed()


@_equal_by_class
class LowerCholeskyTransform(Transform):
    """Square matrices to lower Cholesky factors: the strict lower triangle kept, the diagonal
    exponentiated (many-to-one, as in torch)."""
    domain, codomain = _real_block(2), constraints.lower_cholesky

    def _call(self, x):
        return _map_diagonal(x, ember.exp)

    def _inverse(self, y):
        return _map_diagonal(y, ember.log)
