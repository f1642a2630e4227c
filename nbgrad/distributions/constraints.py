"""Constraints: the sets a parameter or a value must lie in.

Every constraint here is ONE object of ONE class, `Constraint`, made from a predicate (a function
from a tensor to a boolean tensor, True where the entry is inside the set), the name PyTorch shows
for it, and two facts about the set: how many rightmost dimensions form one element (event_dim)
and whether it holds integers only (is_discrete). `check(value)` applies the predicate and then
asks "all true?" over the event dimensions, so a batch of values gets one answer per element.
"""

import numpy as np

import nbgrad

__all__ = [
    "Constraint",
    "boolean",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "mixture_same_family",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "real",
    "real_vector",
    "simplex",
    "unit_interval",
]


def _shown(bound):
    """A bound as PyTorch prints it in a constraint's name: a one-number tensor as the number."""
    if isinstance(bound, nbgrad.Tensor) and bound.dim() == 0:
        return str(bound.item())
    return str(bound)


class Constraint:
    """A set: `predicate(value) -> bool tensor` (entry by entry), shown as `name`."""

    def __init__(self, name, predicate, event_dim=0, is_discrete=False):
        self._name = name
        self._predicate = predicate
        self.event_dim = event_dim
        self.is_discrete = is_discrete

    def check(self, value):
        inside = self._predicate(value)
        # one answer per element: an element spans the rightmost event_dim dimensions
        for _ in range(self.event_dim - _predicate_event_dims(self)):
            inside = inside.all(-1)
        return inside

    def __repr__(self):
        return self._name


def _predicate_event_dims(constraint):
    """How many event dimensions the predicate has already folded (a simplex's sums, a matrix's)."""
    return getattr(constraint, "_folded", 0)


def _with_folded(constraint, folded):
    constraint._folded = folded
    return constraint


# --- real numbers and intervals -------------------------------------------------------------------


def _is_real(x):
    return x == x  # NaN is the one value not equal to itself


real = Constraint("Real()", _is_real)
real_vector = _with_folded(Constraint("IndependentConstraint(Real(), 1)", _is_real, 1), 0)
real_vector.base_constraint, real_vector.reinterpreted_batch_ndims = real, 1


def _bounded(constraint, lower_bound=None, upper_bound=None):
    """constraint, keeping its bounds as attributes (biject_to builds its transform from them)."""
    constraint.lower_bound, constraint.upper_bound = lower_bound, upper_bound
    return constraint


def greater_than(lower_bound):
    shown = f"GreaterThan(lower_bound={_shown(lower_bound)})"
    return _bounded(Constraint(shown, lambda x: x > lower_bound), lower_bound)


def greater_than_eq(lower_bound):
    shown = f"GreaterThanEq(lower_bound={_shown(lower_bound)})"
    return _bounded(Constraint(shown, lambda x: x >= lower_bound), lower_bound)


def less_than(upper_bound):
    shown = f"LessThan(upper_bound={_shown(upper_bound)})"
    return _bounded(Constraint(shown, lambda x: x < upper_bound), upper_bound=upper_bound)


def interval(lower_bound, upper_bound):
    shown = f"Interval(lower_bound={_shown(lower_bound)}, upper_bound={_shown(upper_bound)})"
    inside = Constraint(shown, lambda x: (x >= lower_bound) & (x <= upper_bound))
    return _bounded(inside, lower_bound, upper_bound)


def half_open_interval(lower_bound, upper_bound):
    shown = (
        f"HalfOpenInterval(lower_bound={_shown(lower_bound)}, upper_bound={_shown(upper_bound)})"
    )
    inside = Constraint(shown, lambda x: (x >= lower_bound) & (x < upper_bound))
    return _bounded(inside, lower_bound, upper_bound)


positive = greater_than(0.0)
nonnegative = greater_than_eq(0.0)
unit_interval = interval(0.0, 1.0)

# --- integers -------------------------------------------------------------------------------------


def _is_whole(x):
    return x % 1 == 0


def integer_interval(lower_bound, upper_bound):
    shown = f"IntegerInterval(lower_bound={lower_bound}, upper_bound={upper_bound})"
    return Constraint(
        shown,
        lambda x: _is_whole(x) & (x >= lower_bound) & (x <= upper_bound),
        is_discrete=True,
    )


nonnegative_integer = Constraint(
    "IntegerGreaterThan(lower_bound=0)", lambda x: _is_whole(x) & (x >= 0), is_discrete=True
)
boolean = Constraint("Boolean()", lambda x: (x == 0) | (x == 1), is_discrete=True)

# --- vectors and matrices (their predicates answer per vector or matrix themselves) -------------


def _on_simplex(x):
    return (x >= 0).all(-1) & ((x.sum(-1) - 1).abs() < 1e-6)


def _is_one_hot(x):
    return ((x == 0) | (x == 1)).all(-1) & (x.sum(-1) == 1)


def _is_lower_cholesky(x):
    lower = (x.tril() == x).all(-1).all(-1)
    return lower & (x.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


def _is_positive_definite(x):
    # symmetric, with all eigenvalues positive (read off the values: a check, not a graph)
    a = x.detach().numpy()
    symmetric = np.isclose(a, np.swapaxes(a, -1, -2), atol=1e-6).all((-2, -1))
    positive = np.linalg.eigvalsh(a).min(-1) > 0
    return nbgrad.tensor(symmetric & positive)


simplex = _with_folded(Constraint("Simplex()", _on_simplex, 1), 1)
one_hot = _with_folded(Constraint("OneHot()", _is_one_hot, 1, is_discrete=True), 1)
lower_cholesky = _with_folded(Constraint("LowerCholesky()", _is_lower_cholesky, 2), 2)
positive_definite = _with_folded(Constraint("PositiveDefinite()", _is_positive_definite, 2), 2)


def multinomial(upper_bound):
    """Vectors of non-negative counts adding up to at most upper_bound (a Multinomial's draws)."""

    def counts_within(x):
        return (x >= 0).all(-1) & (x.sum(-1) <= upper_bound)

    return _with_folded(Constraint("Multinomial()", counts_within, 1, is_discrete=True), 1)


def mixture_same_family(base):
    """The support of a mixture: a value is inside when it is inside the components' support
    (checked against one component axis, size 1, inserted left of the event dimensions)."""

    def inside_components(x):
        checked = base.check(x.unsqueeze(-1 - base.event_dim))
        return checked.all(-1) if checked.dim() > x.dim() - base.event_dim else checked

    made = Constraint(
        f"MixtureSameFamilyConstraint({base!r})",
        inside_components,
        base.event_dim,
        base.is_discrete,
    )
    return _with_folded(made, base.event_dim)


def independent(base, reinterpreted_batch_ndims):
    """`base` applied to each entry, and an element made of the rightmost n more dimensions."""
    shown = f"IndependentConstraint({base!r}, {reinterpreted_batch_ndims})"
    made = Constraint(
        shown, base.check, base.event_dim + reinterpreted_batch_ndims, base.is_discrete
    )
    made.base_constraint, made.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims
    return _with_folded(made, base.event_dim)


# --- constraints that depend on other parameters ------------------------------------------------


class _Dependent(Constraint):
    """A placeholder for a set known only from the distribution's other parameters."""

    def __init__(self, event_dim=None, is_discrete=False):
        super().__init__("_Dependent()", None, event_dim, is_discrete)

    @property
    def event_dim(self):
        if self._event_dim is None:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    @event_dim.setter
    def event_dim(self, value):
        self._event_dim = value

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


dependent = _Dependent()


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


def dependent_property(fget=None, *, is_discrete=False, event_dim=0):
    """A property whose value is a constraint built from the instance (Uniform's support)."""
    if fget is None:
        return property
    return property(fget)
