"""Cauchy(loc, scale): density 1 / (pi scale (1 + z^2)) with z = (x - loc) / scale; no mean."""

import math

import nbgrad

from .location_scale import LocationScale

__all__ = ["Cauchy"]


class Cauchy(LocationScale):
    def _standard_draw(self, shape):
        # the tangent of a uniform angle in (-pi/2, pi/2) is a standard Cauchy draw
        return nbgrad.empty(shape, dtype=self.loc.dtype).cauchy_()

    @property
    def mean(self):
        return nbgrad.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def variance(self):
        return nbgrad.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def log_prob(self, value):
        self._checked(value)
        return -math.log(math.pi) - self.scale.log() - nbgrad.log1p(self._standardized(value) ** 2)

    def cdf(self, value):
        self._checked(value)
        return nbgrad.atan(self._standardized(value)) / math.pi + 0.5

    def icdf(self, value):
        return nbgrad.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
