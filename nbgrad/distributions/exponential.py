"""Exponential(rate): density rate exp(-rate x) for x >= 0 (waiting times of a Poisson process)."""

import nbgrad

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        super().__init__(self._take_parameters(rate=rate), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return nbgrad.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return nbgrad.empty(shape, dtype=self.rate.dtype).exponential_() / self.rate

    def log_prob(self, value):
        self._checked(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        self._checked(value)
        return 1 - nbgrad.exp(-self.rate * value)

    def icdf(self, value):
        return -nbgrad.log1p(-value) / self.rate

    # as an exponential family: theta = -rate, T(x) = x
    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -nbgrad.log(-x)

    _mean_carrier_measure = 0

    def entropy(self):
        return 1.0 - nbgrad.log(self.rate)
