"""Constraints: the sets distribution parameters and values must lie in
(torch.distributions.constraints). `check(value)` returns a bool tensor over the batch shape:
one entry per event, where an event spans the constraint's `event_dim` rightmost dims.

Class names are torch's: a constraint's repr is its class name minus the leading underscore."""
import itertools
import operator

import ember

__all__ = ["Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval", "is_dependent",
           "less_than", "lower_cholesky", "lower_triangular", "multinomial", "nonnegative", "nonnegative_integer",
           "one_hot", "positive", "positive_semidefinite", "positive_definite", "positive_integer", "real",
           "real_vector", "simplex", "square", "stack", "symmetric", "unit_interval"]


def _label(constraint):
    """The repr's name: the class name without its first character (torch strips it from any class)."""
    return type(constraint).__name__[1:]


def _all_rightmost(mask, ndims):
    """Reduce a bool mask with `all` over its `ndims` rightmost dims."""
    if ndims == 0:
        return mask
    kept = mask.shape[:mask.dim() - ndims]
    return mask.reshape(kept + (-1,)).all(-1)


def _require_constraints(items, message):
    """items as a list, each a Constraint, else torch's AssertionError with message."""
    items = list(items)
    if not all(isinstance(c, Constraint) for c in items):
        raise AssertionError(message)
    return items


class Constraint:
    """A region of valid values. `is_discrete` marks countable sets; `event_dim` is the number
    of rightmost dims that together form one checked event."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return _label(self) + "()"


# ---- dependent supports -------------------------------------------------------------------------

def _known(setting, name):
    """A dependent constraint's setting, or torch's error when it was never given."""
    if setting is NotImplemented:
        raise NotImplementedError(f".{name} cannot be determined statically")
    return setting


def _given_or(setting, fallback):
    return fallback if setting is NotImplemented else setting


class _Dependent(Constraint):
    """Placeholder for a support that depends on other parameters; cannot be checked.
    `is_discrete` and `event_dim` are known only where they were passed in."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        return _known(self._is_discrete, "is_discrete")

    @property
    def event_dim(self):
        return _known(self._event_dim, "event_dim")

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """dependent(is_discrete=..., event_dim=...): a copy with those attributes known."""
        return _Dependent(is_discrete=_given_or(is_discrete, self._is_discrete),
                          event_dim=_given_or(event_dim, self._event_dim))

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """True for dependent constraints (which validation skips)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that, read on the class, is a dependent constraint (e.g. Uniform.support),
    and on an instance computes the real constraint from the parameters.
    Used bare (`@dependent_property`) or with settings (`@dependent_property(event_dim=1)`)."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


dependent = _Dependent()
dependent_property = _DependentProperty


# ---- reinterpreting batch dims as event dims ------------------------------------------------------

class _OnBase(Constraint):
    """A constraint defined through another one, `base_constraint` (discrete when it is)."""

    def __init__(self, base_constraint):
        _require_constraints([base_constraint], f"base_constraint must be a Constraint, got "
                                                f"{type(base_constraint).__name__}")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete


class _IndependentConstraint(_OnBase):
    """base, with its `reinterpreted_batch_ndims` rightmost batch dims read as event dims:
    an event is valid when every entry in it is."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        _require_constraints([base_constraint], f"base_constraint must be a Constraint, got "
                                                f"{type(base_constraint).__name__}")
        ndims = reinterpreted_batch_ndims
        if not isinstance(ndims, int):
            raise AssertionError(f"reinterpreted_batch_ndims must be an int, got {type(ndims).__name__}")
        if ndims < 0:
            raise AssertionError(f"reinterpreted_batch_ndims must be >= 0, got {ndims}")
        super().__init__(base_constraint)
        self.reinterpreted_batch_ndims = ndims

    @property
    def event_dim(self):
        return self.reinterpreted_batch_ndims + self.base_constraint.event_dim

    def check(self, value):
        per_entry = self.base_constraint.check(value)
        ndims = self.reinterpreted_batch_ndims
        if per_entry.dim() < ndims:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return _all_rightmost(per_entry, ndims)

    def __repr__(self):
        return f"{_label(self)}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


independent = _IndependentConstraint


class MixtureSameFamilyConstraint(_OnBase):
    """MixtureSameFamily's support: the components' support, checked on the value with the component
    axis put back left of the event dims. A value passes where every component's support holds it."""

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        ndims = self.event_dim
        per_component = self.base_constraint.check(value.unsqueeze(-1 - ndims))
        if value.dim() < ndims:
            raise ValueError(f"Expected value.dim() >= {ndims} but got {value.dim()}")
        return _all_rightmost(per_component, per_component.dim() - (value.dim() - ndims))

    def __repr__(self):
        return f"{type(self).__name__}({self.base_constraint!r})"


# ---- scalars, by value ----------------------------------------------------------------------------

def _is_zero_or_one(value):
    return (value == 0) | (value == 1)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return _is_zero_or_one(value)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        entries_binary = _is_zero_or_one(value).all(-1)
        return entries_binary & (value.sum(-1) == 1)


class _Real(Constraint):
    def check(self, value):
        return value == value  # False only for NaN


class _Bounded(Constraint):
    """Numbers within bounds, as one table per class: `_bounds` lists (attribute, test) pairs,
    the test being how `value` must compare to that bound. Discrete subclasses take whole
    numbers only. The repr shows the bounds by name."""
    _bounds = ()

    def __init__(self, *limits):
        for (name, _), limit in zip(self._bounds, limits):
            setattr(self, name, limit)
        super().__init__()

    def check(self, value):
        inside = value % 1 == 0 if self.is_discrete else None
        for name, test in self._bounds:
            passes = test(value, getattr(self, name))
            inside = passes if inside is None else inside & passes
        return inside

    def __repr__(self):
        limits = ", ".join(f"{name}={getattr(self, name)}" for name, _ in self._bounds)
        return f"{_label(self)}({limits})"


# Each test keeps torch's operand order, which shows in the error when shapes do not broadcast.
_ABOVE = ("lower_bound", lambda value, bound: bound < value)
_AT_LEAST = ("lower_bound", lambda value, bound: bound <= value)
_BELOW = ("upper_bound", operator.lt)
_AT_MOST = ("upper_bound", operator.le)
_INTEGER_AT_LEAST = ("lower_bound", operator.ge)


# The public signatures, one class per shape of arguments.

class _LowerBounded(_Bounded):
    def __init__(self, lower_bound):
        super().__init__(lower_bound)


class _UpperBounded(_Bounded):
    def __init__(self, upper_bound):
        super().__init__(upper_bound)


class _TwoSided(_Bounded):
    def __init__(self, lower_bound, upper_bound):
        super().__init__(lower_bound, upper_bound)


class _GreaterThan(_LowerBounded):
    _bounds = (_ABOVE,)


class _GreaterThanEq(_GreaterThan):
    _bounds = (_AT_LEAST,)


class _LessThan(_UpperBounded):
    _bounds = (_BELOW,)


class _Interval(_TwoSided):
    _bounds = (_AT_LEAST, _AT_MOST)


class _HalfOpenInterval(_Interval):
    _bounds = (_AT_LEAST, _BELOW)


# The integer bounds are all inclusive, whatever torch's class names say.

class _IntegerGreaterThan(_LowerBounded):
    is_discrete = True
    _bounds = (_INTEGER_AT_LEAST,)


class _IntegerLessThan(_UpperBounded):
    is_discrete = True
    _bounds = (_AT_MOST,)


class _IntegerInterval(_TwoSided):
    is_discrete = True
    _bounds = (_AT_LEAST, _AT_MOST)


greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval

boolean = _Boolean()
one_hot = _OneHot()
real = _Real()
real_vector = independent(real, reinterpreted_batch_ndims=1)
positive = greater_than(lower_bound=0.0)
nonnegative = greater_than_eq(lower_bound=0.0)
unit_interval = interval(lower_bound=0.0, upper_bound=1.0)
nonnegative_integer = _IntegerGreaterThan(lower_bound=0)
positive_integer = _IntegerGreaterThan(lower_bound=1)


# ---- vectors ---------------------------------------------------------------------------------------

class _Simplex(Constraint):
    """Non-negative vectors summing to one (to within 1e-6)."""
    event_dim = 1

    def check(self, value):
        nonnegative_entries = (value >= 0).all(-1)
        return nonnegative_entries & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Non-negative integer count vectors summing to at most upper_bound.
    (Only the sign and the sum are checked, as torch does.)"""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        nonnegative_counts = (x >= 0).all(-1)
        return nonnegative_counts & (x.sum(-1) <= self.upper_bound)


simplex = _Simplex()
multinomial = _Multinomial


# ---- matrices ---------------------------------------------------------------------------------------

class _MatrixConstraint(Constraint):
    """Base for constraints whose events are matrices (the two rightmost dims)."""
    event_dim = 2


def _is_lower_triangular(value):
    return _all_rightmost(value.tril() == value, 2)


def _is_lower_cholesky(value):
    triangular = _is_lower_triangular(value)
    return triangular & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _LowerTriangular(_MatrixConstraint):
    def check(self, value):
        return _is_lower_triangular(value)


lower_triangular = _LowerTriangular()


class _LowerCholesky(_MatrixConstraint):
    """Lower triangular with a positive diagonal."""

    def check(self, value):
        return _is_lower_cholesky(value)


lower_cholesky = _LowerCholesky()


class _CorrCholesky(_MatrixConstraint):
    """Lower Cholesky factors of correlation matrices: rows of unit Euclidean norm."""

    def check(self, value):
        tol = ember.finfo(value.dtype).eps * value.shape[-1] * 10  # torch's slack: 10 eps per column
        row_norm = value.detach().pow(2).sum(-1).sqrt()
        unit_rows = ((row_norm - 1).abs() <= tol).all(-1)
        return _is_lower_cholesky(value) & unit_rows


corr_cholesky = _CorrCholesky()


def _is_square(value):
    is_square = value.shape[-2] == value.shape[-1]
    return ember.full(value.shape[:-2], is_square, dtype=ember.bool)


def _is_symmetric(value):
    return ember.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


def _has_nonnegative_spectrum(value):
    return (ember.linalg.eigvalsh(value) >= 0).all(-1)


def _has_cholesky(value):
    return ember.linalg.cholesky_ex(value).info == 0


class _Square(_MatrixConstraint):
    """Square matrices. Subclasses append tests to `_tests`; each later test runs only when every
    matrix passed the earlier ones (eigvalsh and cholesky_ex need symmetric input), else the
    first failing test's mask is the result."""
    _tests = (_is_square,)

    def check(self, value):
        for test in self._tests:
            passed = test(value)
            if not bool(passed.all()):
                break
        return passed


class _Symmetric(_Square):
    _tests = _Square._tests + (_is_symmetric,)


class _PositiveSemidefinite(_Symmetric):
    _tests = _Symmetric._tests + (_has_nonnegative_spectrum,)


class _PositiveDefinite(_Symmetric):
    _tests = _Symmetric._tests + (_has_cholesky,)


square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()


# ---- one constraint per slice ------------------------------------------------------------------------

class _Pieces(Constraint):
    """Base for constraints made of one constraint per slice of a dim (cat, stack)."""

    @property
    def is_discrete(self):
        return any(part.is_discrete for part in self.cseq)

    def _widest_event_dim(self):
        return max(part.event_dim for part in self.cseq)

    def _pieces_of(self, value):
        """value's dim `self.dim`, checked to exist (torch's AssertionError)."""
        if not -value.dim() <= self.dim < value.dim():
            raise AssertionError(f"dim {self.dim} out of range for value with {value.dim()} dimensions")
        return value.size(self.dim)


class _Cat(_Pieces):
    """A sequence of constraints, each over its slice (of `lengths`) along dim `dim`."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = _require_constraints(cseq, "All elements of cseq must be Constraint instances")
        if lengths is None:
            self.lengths = [1 for _ in self.cseq]
        else:
            self.lengths = list(lengths)
        if len(self.cseq) != len(self.lengths):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")
        self.dim = dim
        super().__init__()

    @property
    def event_dim(self):
        return self._widest_event_dim()

    def check(self, value):
        self._pieces_of(value)
        starts = itertools.accumulate(self.lengths, initial=0)
        masks = [part.check(value.narrow(self.dim, start, size))
                 for part, start, size in zip(self.cseq, starts, self.lengths)]
        return ember.cat(masks, self.dim)


class _Stack(_Pieces):
    """A sequence of constraints, one per index of dim `dim`."""

    def __init__(self, cseq, dim=0):
        self.cseq = _require_constraints(cseq, "All elements of cseq must be Constraint instances")
        self.dim = dim
        super().__init__()

    @property
    def event_dim(self):
        widest = self._widest_event_dim()
        # a negative dim that lands inside the parts' event dims makes the stacked dim an event dim too
        return widest + 1 if self.dim + widest < 0 else widest

    def check(self, value):
        count = self._pieces_of(value)
        masks = [part.check(value.select(self.dim, i)) for i, part in zip(range(count), self.cseq)]
        return ember.stack(masks, self.dim)


cat = _Cat
stack = _Stack
