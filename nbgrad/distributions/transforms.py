"""Transforms: invertible maps y = f(x) between constrained sets, with log |det df/dx|, so that
the density of y follows from the density of x (TransformedDistribution).

A Transform says what f does (_call), what its inverse does (_inverse), log|det J| at (x, y), the
sets it maps between (domain, codomain: their event_dim says how many rightmost dimensions form
one element) and the sign of its derivative (for cdfs). `t.inv` is the same map read backwards.
With cache_size=1 a transform remembers its last (x, y) pair, so that inverting a value it
produced gives back the very tensor it came from (no round-off through atanh(tanh(x)))."""

import math
from numbers import Number

import numpy as np

import nbgrad
import nbgrad.nn.functional as F

from . import constraints
from .utils import sum_rightmost

__all__ = [
    "AffineTransform",
    "ComposeTransform",
    "ExpTransform",
    "SigmoidTransform",
    "TanhTransform",
    "Transform",
]


class Transform:
    bijective = False

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._last = None  # (x, y) of the last call, with cache_size 1

    # --- what a transform is --------------------------------------------------------------------

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def sign(self):
        raise NotImplementedError

    @property
    def inv(self):
        return _Inverse(self)

    def with_cache(self, cache_size=1):
        if cache_size == self._cache_size:
            return self
        return self._remade(cache_size)

    def _remade(self, cache_size):
        """The same transform with another cache size."""
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __repr__(self):
        return type(self).__name__ + "()"

    # --- applying it ----------------------------------------------------------------------------

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        if self._last is not None and self._last[0] is x:
            return self._last[1]
        y = self._call(x)
        self._last = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        if self._last is not None and self._last[1] is y:
            return self._last[0]
        x = self._inverse(y)
        self._last = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape


class _Inverse(Transform):
    """t.inv: calls t's inverse, and its log|det J| is minus t's at the swapped pair."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _Inverse) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"

    def __call__(self, y):
        return self._inv._inv_call(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class _Elementwise(Transform):
    """A transform applied entry by entry, increasing, from the reals onto `codomain`."""

    domain = constraints.real
    bijective = True
    sign = 1

    def __eq__(self, other):
        return type(other) is type(self)

    __hash__ = Transform.__hash__


class ExpTransform(_Elementwise):
    """y = exp(x); log|dy/dx| = x."""

    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(_Elementwise):
    """y = 1 / (1 + exp(-x)); log|dy/dx| = log y + log(1 - y) = -softplus(-x) - softplus(x)."""

    codomain = constraints.unit_interval

    def _call(self, x):
        eps = float(np.finfo(x.dtype.numpy).eps)
        return nbgrad.sigmoid(x).clamp(min=eps, max=1 - eps)

    def _inverse(self, y):
        eps = float(np.finfo(y.dtype.numpy).eps)
        y = y.clamp(min=eps, max=1 - eps)
        return y.log() - nbgrad.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(_Elementwise):
    """y = tanh(x); log|dy/dx| = log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), a form that
    stays finite where tanh(x) rounds to 1."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


def _shape_of(v):
    return tuple(v.shape) if isinstance(v, nbgrad.Tensor) else ()


class AffineTransform(Transform):
    """y = loc + scale * x, entry by entry; event_dim > 0 reads the rightmost dimensions as one
    element (log|det J| summed over them)."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    def _remade(self, cache_size):
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        return _same(self.loc, other.loc) and _same(self.scale, other.scale)

    __hash__ = Transform.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, Number):
            return 1 if self.scale > 0 else -1 if self.scale < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = x.shape
        if isinstance(self.scale, Number):
            per_entry = nbgrad.full_like(x, math.log(abs(self.scale)))
        else:
            per_entry = self.scale.abs().log()
        if self._event_dim:
            per_entry = sum_rightmost(per_entry, self._event_dim)
            shape = shape[: len(shape) - self._event_dim]
        return per_entry.expand(shape)

    def forward_shape(self, shape):
        return nbgrad.Size(
            np.broadcast_shapes(tuple(shape), _shape_of(self.loc), _shape_of(self.scale))
        )

    inverse_shape = forward_shape


def _same(a, b):
    if isinstance(a, Number) and isinstance(b, Number):
        return a == b
    return bool((nbgrad.as_tensor(a) == nbgrad.as_tensor(b)).all())


class ComposeTransform(Transform):
    """parts applied in order: y = parts[-1](...parts[0](x))."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = Transform.__hash__

    def _event_dims_through(self):
        """The event_dim an element has before each part, walking the parts forward from the
        largest event_dim any part needs."""
        dims = []
        event_dim = self.domain.event_dim
        for part in self.parts:
            dims.append(event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return dims

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        # the event_dim x must have so that every part gets at least its own
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim = max(
                event_dim - part.codomain.event_dim + part.domain.event_dim, part.domain.event_dim
            )
        return _widened(self.parts[0].domain, event_dim)

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(
                event_dim - part.domain.event_dim + part.codomain.event_dim, part.codomain.event_dim
            )
        return _widened(self.parts[-1].codomain, event_dim)

    @property
    def bijective(self):
        return all(part.bijective for part in self.parts)

    @property
    def sign(self):
        sign = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self):
        return ComposeTransform([part.inv for part in reversed(self.parts)])

    def _remade(self, cache_size):
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return nbgrad.zeros_like(x)
        # the intermediate values, each part's log|det J| summed to the compose's event_dim
        values = [x]
        for part in self.parts[:-1]:
            values.append(part(values[-1]))
        values.append(y)
        total = None
        for part, event_dim, before, after in zip(
            self.parts, self._event_dims_through(), values[:-1], values[1:]
        ):
            term = sum_rightmost(
                part.log_abs_det_jacobian(before, after), event_dim - part.domain.event_dim
            )
            total = term if total is None else total + term
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        if not self.parts:
            return "ComposeTransform(\n)"
        inner = ",\n".join("    " + repr(part) for part in self.parts)
        return f"ComposeTransform(\n{inner}\n)"


def _widened(constraint, event_dim):
    """constraint, with its element made of event_dim rightmost dimensions."""
    if event_dim > constraint.event_dim:
        return constraints.independent(constraint, event_dim - constraint.event_dim)
    return constraint
