"""Uniform(low, high): every value in [low, high) equally likely."""

import math

import nbgrad

from . import constraints
from .distribution import Distribution

__all__ = ["Uniform"]


class Uniform(Distribution):
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        super().__init__(self._take_parameters(low=low, high=high), validate_args=validate_args)

    @property
    def arg_constraints(self):
        return {
            "low": constraints.less_than(self.high),
            "high": constraints.greater_than(self.low),
        }

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def width(self):
        return self.high - self.low

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return self.width / 12**0.5

    @property
    def variance(self):
        return self.width.pow(2) / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = nbgrad.rand(shape, dtype=self.low.dtype)
        return self.low + u * self.width

    def log_prob(self, value):
        self._checked(value)
        inside = self.low.le(value).type_as(self.low) * self.high.gt(value).type_as(self.low)
        return inside.log() - self.width.log()

    def cdf(self, value):
        self._checked(value)
        return ((value - self.low) / self.width).clamp(min=0, max=1)

    def icdf(self, value):
        return value * self.width + self.low

    def entropy(self):
        return self.width.log()
