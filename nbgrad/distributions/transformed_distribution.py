"""TransformedDistribution(base, transforms): the distribution of y = f(x) for x drawn from base
and f the transforms applied in order. By the change of variables,
    log p_y(y) = log p_x(f^-1(y)) - log |det d f / d x| at (f^-1(y), y),
taken transform by transform from the last back to the first."""

import functools
import operator

import nbgrad

from . import constraints
from .distribution import Distribution
from .independent import Independent
from .transforms import ComposeTransform, Transform
from .utils import sum_rightmost

__all__ = ["TransformedDistribution"]


def _as_list(transforms):
    if isinstance(transforms, Transform):
        return [transforms]
    if isinstance(transforms, list):
        if not all(isinstance(t, Transform) for t in transforms):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        return transforms
    raise ValueError(f"transforms must be a Transform or list, but was {transforms}")


class TransformedDistribution(Distribution):
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        self.transforms = _as_list(transforms)
        whole = ComposeTransform(self.transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        needed = whole.domain.event_dim
        if len(base_shape) < needed:
            raise ValueError(
                f"base_distribution needs to have shape with size at least {needed}, "
                f"but got {nbgrad.Size(base_shape)}."
            )
        # the transforms may broadcast against their parameters: the base grows to fit
        shape = tuple(whole.forward_shape(base_shape))
        expanded_base = tuple(whole.inverse_shape(shape))
        if expanded_base != base_shape:
            base_event = len(base_distribution.event_shape)
            batch = expanded_base[: len(expanded_base) - base_event]
            base_distribution = base_distribution.expand(batch)
        # dimensions the transforms read as one element become event dimensions of the base
        extra = needed - len(base_distribution.event_shape)
        if extra > 0:
            base_distribution = Independent(base_distribution, extra)
        self.base_dist = base_distribution
        event_dim = whole.codomain.event_dim + max(len(base_distribution.event_shape) - needed, 0)
        split = len(shape) - event_dim
        super().__init__(shape[:split], shape[split:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        shape = tuple(batch_shape) + tuple(self.event_shape)
        base_shape = tuple(ComposeTransform(self.transforms).inverse_shape(shape))
        base_batch = base_shape[: len(base_shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch)
        new.transforms = self.transforms
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @constraints.dependent_property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        codomain = self.transforms[-1].codomain
        missing = len(self.event_shape) - codomain.event_dim
        return constraints.independent(codomain, missing) if missing > 0 else codomain

    def _pushed_forward(self, x):
        return functools.reduce(lambda value, t: t(value), self.transforms, x)

    def sample(self, sample_shape=()):
        with nbgrad.no_grad():
            return self._pushed_forward(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=()):
        return self._pushed_forward(self.base_dist.rsample(sample_shape))

    def log_prob(self, value):
        self._checked(value)
        # from y back to the base's x, one transform at a time, each subtracting its
        # log|det J| summed over the element it sees (dims: the element's event_dim there)
        dims = len(self.event_shape)
        log_density = 0.0
        for t in self.transforms[::-1]:
            x = t.inv(value)
            dims = dims - t.codomain.event_dim + t.domain.event_dim
            stretch = sum_rightmost(t.log_abs_det_jacobian(x, value), dims - t.domain.event_dim)
            log_density = log_density - stretch
            value = x
        base_dims = dims - len(self.base_dist.event_shape)
        return log_density + sum_rightmost(self.base_dist.log_prob(value), base_dims)

    def _through_signs(self, probability):
        """A probability read through the transforms' monotony: where the composition
        decreases, P(Y <= y) = 1 - P(X <= x), written sign * (p - 1/2) + 1/2."""
        sign = functools.reduce(operator.mul, (t.sign for t in self.transforms), 1)
        if isinstance(sign, int) and sign == 1:
            return probability
        return sign * (probability - 0.5) + 0.5

    def cdf(self, value):
        x = functools.reduce(lambda v, t: t.inv(v), self.transforms[::-1], value)
        if self._validate_args:
            self.base_dist._validate_sample(x)
        return self._through_signs(self.base_dist.cdf(x))

    def icdf(self, value):
        return self._pushed_forward(self.base_dist.icdf(self._through_signs(value)))
