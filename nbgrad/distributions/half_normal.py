"""HalfNormal(scale): |x| for x drawn from Normal(0, scale), density 2 N(x; 0, scale) on x >= 0."""

import math

import nbgrad

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal"]


class HalfNormal(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        folded = Normal(0, scale, validate_args=False)
        super().__init__(folded, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        s = self.scale
        return s * math.sqrt(2 / math.pi)

    @property
    def mode(self):
        return nbgrad.zeros_like(self.scale)

    @property
    def variance(self):
        s = self.scale
        return s.pow(2) * (1 - 2 / math.pi)

    def log_prob(self, value):
        self._checked(value)
        # both x and -x fold onto |x|: twice the normal's density, none below 0
        doubled = self.base_dist.log_prob(value) + math.log(2)
        return nbgrad.where(value >= 0, doubled, -math.inf)

    def cdf(self, value):
        self._checked(value)
        # P(|X| <= v) = P(-v <= X <= v) = 2 Phi(v) - 1
        inside_plus_minus = self.base_dist.cdf(value)
        return 2 * inside_plus_minus - 1

    def icdf(self, prob):
        upper_half = (prob + 1) / 2
        return self.base_dist.icdf(upper_half)

    def entropy(self):
        unfolded = self.base_dist.entropy()
        return unfolded - math.log(2)
