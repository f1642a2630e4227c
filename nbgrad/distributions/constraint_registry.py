"""biject_to(constraint) and transform_to(constraint): a transform from the unconstrained reals
onto the set a constraint describes, for optimizing a parameter without leaving its set.
biject_to's are one-to-one (so a density can be moved through them: the simplex by stick
breaking); transform_to's need only reach the set (the simplex by a softmax).

A constraint is looked up by its kind (the name PyTorch shows, up to the first parenthesis) and
the factory registered for that kind builds the transform from the constraint's bounds."""

from numbers import Number

from . import constraints
from .transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SigmoidTransform,
    SoftmaxTransform,
    StickBreakingTransform,
)

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


def _kind(constraint):
    return repr(constraint).split("(", 1)[0]


class ConstraintRegistry:
    def __init__(self):
        self._factories = {}

    def register(self, constraint, factory=None):
        """Registers factory(constraint) -> Transform for constraints of this one's kind; without
        factory, a decorator."""
        if factory is not None:
            kind = constraint if isinstance(constraint, str) else _kind(constraint)
            self._factories[kind] = factory
            return factory

        def decorator(function):
            return self.register(constraint, function)

        return decorator

    def __call__(self, constraint):
        kind = _kind(constraint)
        if kind not in self._factories:
            raise NotImplementedError(f"Cannot transform _{kind} constraints")
        return self._factories[kind](constraint)


biject_to, transform_to = ConstraintRegistry(), ConstraintRegistry()


def _to_real(constraint):
    return ComposeTransform([])  # nothing to do: the identity


def _to_independent(constraint, registry):
    entrywise = registry(constraint.base_constraint)
    return IndependentTransform(entrywise, constraint.reinterpreted_batch_ndims)


def _above(constraint):
    # lower + exp(x)
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


def _below(constraint):
    # upper - exp(x)
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


def _is(bound, number):
    return isinstance(bound, Number) and bound == number


def _between(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if _is(lower, 0) and _is(upper, 1):
        return SigmoidTransform()
    # lower + (upper - lower) sigmoid(x)
    return ComposeTransform([SigmoidTransform(), AffineTransform(lower, upper - lower)])


for _registry in (biject_to, transform_to):
    _registry.register("Real", _to_real)
    _registry.register(
        "IndependentConstraint", lambda c, registry=_registry: _to_independent(c, registry)
    )
    for _kind_name in ("GreaterThan", "GreaterThanEq"):
        _registry.register(_kind_name, _above)
    _registry.register("LessThan", _below)
    for _kind_name in ("Interval", "HalfOpenInterval"):
        _registry.register(_kind_name, _between)

biject_to.register(constraints.simplex, lambda c: StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda c: LowerCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda c: PositiveDefiniteTransform())
