"""Transforms: invertible maps y = f(x) between constrained sets, with log |det df/dx|, so that
the density of y follows from the density of x (TransformedDistribution).

A transform here is described by three functions, `_forward(x)`, `_backward(y)` and
`log_abs_det_jacobian(x, y)`, and by the sets it maps between (`domain`, `codomain`; their
event_dim says how many rightmost dimensions form one element). `t.inv` reads the same map
backwards. With cache_size=1 a transform remembers its last (x, y) pair, so that inverting a value
it produced gives back the very tensor it came from (no round-off through atanh(tanh(x)))."""

import functools
import math
import operator
from numbers import Number

import numpy as np

import nbgrad
import nbgrad.nn.functional as F

from . import constraints
from .utils import broadcast_all, sum_rightmost

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "ComposeTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
]


class Transform:
    bijective = False
    _remade_from_class = True  # no parameters: with_cache builds a new one from the class alone

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._pair = None  # the last (x, y), kept when cache_size is 1

    def _through_cache(self, given, side, compute):
        """compute(given), or its partner from the last pair when `given` is that pair's x
        (side 0) or y (side 1) itself."""
        if not self._cache_size:
            return compute(given)
        if self._pair is not None and self._pair[side] is given:
            return self._pair[1 - side]
        found = compute(given)
        self._pair = (given, found) if side == 0 else (found, given)
        return found

    def __call__(self, x):
        return self._through_cache(x, 0, self._forward)

    def _invert(self, y):
        return self._through_cache(y, 1, self._backward)

    def _forward(self, x):
        raise NotImplementedError

    def _backward(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    @property
    def event_dim(self):
        dims = {self.domain.event_dim, self.codomain.event_dim}
        if len(dims) > 1:
            raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")
        return dims.pop()

    @property
    def sign(self):
        raise NotImplementedError

    @property
    def inv(self):
        return _Inverse(self)

    def with_cache(self, cache_size=1):
        if cache_size == self._cache_size:
            return self
        if self._remade_from_class:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return f"{type(self).__name__}()"


class _Inverse(Transform):
    """t.inv: t's backward map as its forward one; log|det J| is minus t's at the swapped pair."""

    _remade_from_class = False

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)
    inv = property(lambda self: self._inv)

    def __call__(self, y):
        return self._inv._invert(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def with_cache(self, cache_size=1):
        return self._inv.with_cache(cache_size).inv

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __eq__(self, other):
        return isinstance(other, _Inverse) and self._inv == other._inv

    __hash__ = Transform.__hash__

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"


# --- increasing bijections of the reals, entry by entry -------------------------------------------


class _Pointwise(Transform):
    domain = constraints.real
    bijective = True
    sign = 1

    def __eq__(self, other):
        return type(other) is type(self)

    __hash__ = Transform.__hash__


class ExpTransform(_Pointwise):
    """y = exp(x); log|dy/dx| = x."""

    codomain = constraints.positive

    def _forward(self, x):
        return nbgrad.exp(x)

    def _backward(self, y):
        return nbgrad.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


def _eps(t):
    return float(np.finfo(t.dtype.numpy).eps)


class SigmoidTransform(_Pointwise):
    """y = 1 / (1 + exp(-x)), kept an epsilon inside (0, 1); log|dy/dx| = log y + log(1 - y),
    written -softplus(-x) - softplus(x) so that it stays finite for large |x|."""

    codomain = constraints.unit_interval

    def _forward(self, x):
        return nbgrad.sigmoid(x).clamp(min=_eps(x), max=1 - _eps(x))

    def _backward(self, y):
        inside = y.clamp(min=_eps(y), max=1 - _eps(y))
        return nbgrad.log(inside) - nbgrad.log1p(-inside)  # the log-odds

    def log_abs_det_jacobian(self, x, y):
        return -(F.softplus(-x)) - F.softplus(x)


class TanhTransform(_Pointwise):
    """y = tanh(x); log|dy/dx| = log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), a form that
    stays finite where tanh(x) rounds to 1."""

    codomain = constraints.interval(-1.0, 1.0)

    def _forward(self, x):
        return nbgrad.tanh(x)

    def _backward(self, y):
        return nbgrad.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


def _same_type(transform, other):
    """Equality of transforms without parameters: being of the same class."""
    return isinstance(other, type(transform))


class AbsTransform(Transform):
    """y = |x|: not one-to-one, so its "inverse" returns y itself (the non-negative preimage),
    which is what a density folded onto [0, inf) needs (HalfNormal, HalfCauchy)."""

    domain, codomain = constraints.real, constraints.positive

    def _forward(self, x):
        return nbgrad.abs(x)

    def _backward(self, y):
        return y

    def __eq__(self, other):
        return _same_type(self, other)

    __hash__ = Transform.__hash__


# --- affine maps -----------------------------------------------------------------------------


def _shape_of(v):
    return tuple(v.shape) if isinstance(v, nbgrad.Tensor) else ()


def _equal(a, b):
    if isinstance(a, Number) and isinstance(b, Number):
        return a == b
    return bool((nbgrad.as_tensor(a) == nbgrad.as_tensor(b)).all())


class AffineTransform(Transform):
    """y = loc + scale * x, entry by entry; with event_dim > 0 the rightmost dimensions are one
    element (its log|det J| the sum over them)."""

    bijective = True
    _remade_from_class = False

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        if not self._event_dim:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        if cache_size == self._cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    @property
    def sign(self):
        if isinstance(self.scale, Number):
            return (self.scale > 0) - (self.scale < 0)
        return nbgrad.sign(self.scale)

    def _forward(self, x):
        return self.loc + self.scale * x

    def _backward(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, Number):
            log_stretch = nbgrad.full_like(x, math.log(abs(self.scale)))
        else:
            log_stretch = nbgrad.log(nbgrad.abs(self.scale))
        element_shape = tuple(x.shape)[: x.dim() - self._event_dim]
        return sum_rightmost(log_stretch, self._event_dim).expand(element_shape)

    def forward_shape(self, shape):
        shapes = (tuple(shape), _shape_of(self.loc), _shape_of(self.scale))
        return nbgrad.Size(np.broadcast_shapes(*shapes))

    inverse_shape = forward_shape

    def __eq__(self, other):
        return (
            isinstance(other, AffineTransform)
            and _equal(self.loc, other.loc)
            and _equal(self.scale, other.scale)
        )

    __hash__ = Transform.__hash__


class PowerTransform(Transform):
    """y = x^exponent on the positive reals; log|dy/dx| = log|exponent x^(exponent-1)|, written
    log|exponent y / x| from the pair."""

    domain, codomain = constraints.positive, constraints.positive
    bijective = True
    _remade_from_class = False

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.exponent = broadcast_all(exponent)[0]

    def with_cache(self, cache_size=1):
        if cache_size == self._cache_size:
            return self
        return type(self)(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def _forward(self, x):
        return x**self.exponent

    def _backward(self, y):
        return y ** (1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        slope = self.exponent * y / x
        return slope.abs().log()

    def forward_shape(self, shape):
        return nbgrad.Size(np.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    inverse_shape = forward_shape

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and _equal(self.exponent, other.exponent)

    __hash__ = Transform.__hash__


# --- a chain of transforms -------------------------------------------------------------------


def _widened(constraint, event_dim):
    """constraint, with its element made of event_dim rightmost dimensions."""
    if event_dim > constraint.event_dim:
        return constraints.independent(constraint, event_dim - constraint.event_dim)
    return constraint


def _element_dims(parts):
    """The event_dim of the value before each part and after the last: the smallest start that
    gives every part at least the event_dim its domain needs."""
    changes = [part.codomain.event_dim - part.domain.event_dim for part in parts]
    offsets = [0]
    for change in changes:
        offsets.append(offsets[-1] + change)
    start = max([0] + [part.domain.event_dim - offsets[i] for i, part in enumerate(parts)])
    return [start + offset for offset in offsets]


class ComposeTransform(Transform):
    """parts applied in order: y = parts[-1](...parts[0](x))."""

    _remade_from_class = False

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.parts = [part.with_cache(cache_size) for part in parts] if cache_size else parts

    def with_cache(self, cache_size=1):
        if cache_size == self._cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        return _widened(self.parts[0].domain, _element_dims(self.parts)[0])

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        return _widened(self.parts[-1].codomain, _element_dims(self.parts)[-1])

    @property
    def bijective(self):
        return all(part.bijective for part in self.parts)

    @property
    def sign(self):
        return functools.reduce(operator.mul, (part.sign for part in self.parts), 1)

    @property
    def inv(self):
        return ComposeTransform([part.inv for part in self.parts[::-1]])

    def _forward(self, x):
        return functools.reduce(lambda value, part: part(value), self.parts, x)

    def _backward(self, y):
        return functools.reduce(lambda value, part: part.inv(value), self.parts[::-1], y)

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return nbgrad.zeros_like(x)
        # the values between the parts, then each part's term summed to the chain's element
        values = [x]
        for part in self.parts[:-1]:
            values.append(part(values[-1]))
        values.append(y)
        dims = _element_dims(self.parts)
        terms = [
            sum_rightmost(
                part.log_abs_det_jacobian(values[i], values[i + 1]), dims[i] - part.domain.event_dim
            )
            for i, part in enumerate(self.parts)
        ]
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape):
        return functools.reduce(lambda s, part: part.forward_shape(s), self.parts, shape)

    def inverse_shape(self, shape):
        return functools.reduce(lambda s, part: part.inverse_shape(s), self.parts[::-1], shape)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = Transform.__hash__

    def __repr__(self):
        lines = "".join(f"    {part!r},\n" for part in self.parts).rstrip(",\n")
        # PyTorch prints an empty chain as one indented empty line
        return f"ComposeTransform(\n{lines}\n)" if self.parts else "ComposeTransform(\n    \n)"


# --- transforms of whole vectors and matrices ------------------------------------------------


class IndependentTransform(Transform):
    """base, with the rightmost n more dimensions read as one element: its log|det J| summed
    over them."""

    _remade_from_class = False

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform, self.reinterpreted_batch_ndims = (
            base_transform.with_cache(cache_size),
            reinterpreted_batch_ndims,
        )

    def with_cache(self, cache_size=1):
        if cache_size == self._cache_size:
            return self
        base, n = self.base_transform, self.reinterpreted_batch_ndims
        return type(self)(base, n, cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _forward(self, x):
        entrywise = self.base_transform
        return entrywise(x)

    def _backward(self, y):
        entrywise_back = self.base_transform.inv
        return entrywise_back(y)

    def log_abs_det_jacobian(self, x, y):
        per_entry = self.base_transform.log_abs_det_jacobian(x, y)
        return sum_rightmost(per_entry, self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        entrywise = self.base_transform
        return entrywise.forward_shape(shape)

    def inverse_shape(self, shape):
        entrywise = self.base_transform
        return entrywise.inverse_shape(shape)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


def _tiny(t):
    return float(np.finfo(t.dtype.numpy).tiny)


def _stick_offsets(k, like):
    """log(k), log(k - 1), ..., log(1): the shift that makes x = 0 break the stick evenly."""
    return (k + 1 - nbgrad.ones(k, dtype=like.dtype).cumsum(-1)).log()


def _last_dimension_changed(shape, by):
    if not len(shape):
        raise ValueError("Too few dimensions on input")
    return tuple(shape[:-1]) + (shape[-1] + by,)


class StickBreakingTransform(Transform):
    """K - 1 reals to a point of the K-simplex, one bijection: the k-th coordinate breaks off
    the fraction z_k = sigmoid(x_k - log(K - k)) of the stick still left, the last takes the
    rest. x = 0 gives the centre of the simplex."""

    domain, codomain = constraints.real_vector, constraints.simplex
    bijective = True

    def _forward(self, x):
        shifted = x - _stick_offsets(x.shape[-1], x)
        fractions = nbgrad.sigmoid(shifted).clamp(min=_tiny(x), max=1 - _eps(x))
        left_after = (1 - fractions).cumprod(-1)
        # y_k = z_k * (what was left before k): z padded with a last 1, left padded with a first 1
        return F.pad(fractions, [0, 1], value=1) * F.pad(left_after, [1, 0], value=1)

    def _backward(self, y):
        broken_off = y[..., :-1]
        k = broken_off.shape[-1]
        left_before = (1 - broken_off.cumsum(-1)).clamp(min=_tiny(y))
        offsets = (y.shape[-1] - nbgrad.ones(k, dtype=y.dtype).cumsum(-1)).log()
        return broken_off.log() - left_before.log() + offsets

    def log_abs_det_jacobian(self, x, y):
        # a triangular Jacobian: the product of z_k (1 - z_k) (what was left before k)
        shifted = x - _stick_offsets(x.shape[-1], x)
        return (-shifted + F.logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        return _last_dimension_changed(shape, 1)

    def inverse_shape(self, shape):
        return _last_dimension_changed(shape, -1)

    def __eq__(self, other):
        return _same_type(self, other)

    __hash__ = Transform.__hash__


class SoftmaxTransform(Transform):
    """Reals to the simplex by exp and normalization: not one-to-one (adding a constant to x
    changes nothing), so it has no log|det J|; its inverse gives the log-probabilities."""

    domain, codomain = constraints.real_vector, constraints.simplex

    def _forward(self, x):
        unnormalized = (x - x.max(-1, True)[0]).exp()
        return unnormalized / unnormalized.sum(-1, True)

    def _backward(self, y):
        return nbgrad.log(y)

    def __eq__(self, other):
        return _same_type(self, other)

    __hash__ = Transform.__hash__


_square_matrices = constraints.independent(constraints.real, 2)


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal: the part below the
    diagonal kept, the diagonal exponentiated."""

    domain, codomain = _square_matrices, constraints.lower_cholesky

    def _forward(self, x):
        below, diagonal = x.tril(-1), x.diagonal(dim1=-2, dim2=-1)
        return below + diagonal.exp().diag_embed()

    def _backward(self, y):
        below, diagonal = y.tril(-1), y.diagonal(dim1=-2, dim2=-1)
        return below + diagonal.log().diag_embed()

    def __eq__(self, other):
        return _same_type(self, other)

    __hash__ = Transform.__hash__


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones: L L' for L the LowerCholeskyTransform's
    image; backwards through the Cholesky factor."""

    domain, codomain = _square_matrices, constraints.positive_definite

    def _forward(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _backward(self, y):
        return LowerCholeskyTransform().inv(nbgrad.linalg.cholesky(y))

    def __eq__(self, other):
        return _same_type(self, other)

    __hash__ = Transform.__hash__
