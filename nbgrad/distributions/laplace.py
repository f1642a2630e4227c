"""Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale), a two-sided exponential."""

import math

import numpy as np

import nbgrad

from .location_scale import LocationScale

__all__ = ["Laplace"]


class Laplace(LocationScale):
    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    def rsample(self, sample_shape=()):
        # inverse cdf: u uniform in the open (-1, 1), x = loc - scale sgn(u) log(1 - |u|)
        shape = self._extended_shape(sample_shape)
        lowest = float(np.nextafter(np.array(-1.0, dtype=self.loc.dtype.numpy), 0))
        u = nbgrad.empty(shape, dtype=self.loc.dtype).uniform_(lowest, 1.0)
        return self.loc - self.scale * u.sign() * nbgrad.log1p(-u.abs())

    def log_prob(self, value):
        self._checked(value)
        return -nbgrad.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        self._checked(value)
        offset = value - self.loc
        return 0.5 - 0.5 * offset.sign() * nbgrad.expm1(-offset.abs() / self.scale)

    def icdf(self, value):
        centered = value - 0.5
        return self.loc - self.scale * centered.sign() * nbgrad.log1p(-2 * centered.abs())

    def entropy(self):
        return 1 + nbgrad.log(2 * self.scale)
