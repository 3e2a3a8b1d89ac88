"""biject_to(constraint) and transform_to(constraint): transforms from unconstrained reals onto a
constraint's set, for optimizing constrained parameters (torch.distributions.constraint_registry).

biject_to hands out bijections (so log-densities can be corrected by the log-Jacobian);
transform_to may hand out cheaper maps that are only onto the set (softmax for the simplex).
Both are filled from the tables at the bottom of this file.
"""
import numbers

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint type -> factory(constraint) -> Transform, looked up by the exact type of the
    constraint asked for."""

    def __init__(self):
        self._factories = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Register factory for a Constraint subclass, or for the class of a Constraint instance.
        Without factory, return a decorator that registers the function it decorates."""
        if factory is None:
            def decorator(factory):
                return self.register(constraint, factory)
            return decorator
        kind = type(constraint) if isinstance(constraint, constraints.Constraint) else constraint
        if not (isinstance(kind, type) and issubclass(kind, constraints.Constraint)):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got "
                            f"{constraint}")
        self._factories[kind] = factory
        return factory

    def __call__(self, constraint):
        factory = self._factories.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


# ---- factories ---------------------------------------------------------------------------------


def _is_number(value, target):
    return isinstance(value, numbers.Number) and value == target


def _exp_then_affine(loc, scale):
    """exp into (0, inf), then loc + scale * y: onto (loc, inf) or, with scale -1, (-inf, loc)."""
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(loc, scale)])


def _unbounded(constraint):
    return transforms.identity_transform


def _above(constraint):
    return _exp_then_affine(constraint.lower_bound, 1)


def _below(constraint):
    return _exp_then_affine(constraint.upper_bound, -1)


def _between(constraint):
    """sigmoid into (0, 1), rescaled onto (lower, upper) unless those are the literal numbers 0, 1."""
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if _is_number(lower, 0) and _is_number(upper, 1):
        return transforms.SigmoidTransform()
    rescale = transforms.AffineTransform(lower, upper - lower)
    return transforms.ComposeTransform([transforms.SigmoidTransform(), rescale])


def _blockwise(registry):
    """Factory for independent(c, n): the registry's transform for c, with n batch dims read as
    event dims."""
    def factory(constraint):
        inner = registry(constraint.base_constraint)
        return transforms.IndependentTransform(inner, constraint.reinterpreted_batch_ndims)
    return factory


def _simplex_by_stick_breaking(constraint):
    return transforms.StickBreakingTransform()


def _simplex_by_softmax(constraint):
    return transforms.SoftmaxTransform()


def _lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


# ---- tables: constraint (class or instance) -> factory ------------------------------------------
# positive and nonnegative are greater_than(0) / greater_than_eq(0), so they take the _above row.

_BOTH = [
    (constraints.real, _unbounded),
    (constraints.greater_than, _above),
    (constraints.greater_than_eq, _above),
    (constraints.less_than, _below),
    (constraints.interval, _between),
    (constraints.half_open_interval, _between),
]


def _fill(registry, rows):
    for constraint, factory in rows:
        registry.register(constraint, factory)


_fill(biject_to, _BOTH + [
    (constraints.independent, _blockwise(biject_to)),
    (constraints.simplex, _simplex_by_stick_breaking),
])
_fill(transform_to, _BOTH + [
    (constraints.independent, _blockwise(transform_to)),
    (constraints.simplex, _simplex_by_softmax),
    (constraints.lower_cholesky, _lower_cholesky),
])
