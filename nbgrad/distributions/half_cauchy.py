"""HalfCauchy(scale): |x| for x drawn from Cauchy(0, scale), density
2 / (pi scale (1 + (x / scale)^2)) on x >= 0; its mean and variance are infinite."""

import math

import nbgrad

from . import constraints
from .cauchy import Cauchy
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        folded = Cauchy(0, scale, validate_args=False)
        super().__init__(folded, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    def _everywhere(self, number):
        return nbgrad.full(self._extended_shape(), number, dtype=self.scale.dtype)

    @property
    def mean(self):
        return self._everywhere(math.inf)

    @property
    def variance(self):
        return self._everywhere(math.inf)

    @property
    def mode(self):
        return nbgrad.zeros_like(self.scale)

    def log_prob(self, value):
        self._checked(value)
        doubled = self.base_dist.log_prob(value) + math.log(2)
        return nbgrad.where(value >= 0, doubled, -math.inf)

    def cdf(self, value):
        self._checked(value)
        inside_plus_minus = self.base_dist.cdf(value)
        return 2 * inside_plus_minus - 1

    def icdf(self, prob):
        upper_half = (prob + 1) / 2
        return self.base_dist.icdf(upper_half)

    def entropy(self):
        unfolded = self.base_dist.entropy()
        return unfolded - math.log(2)
