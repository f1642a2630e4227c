"""Poisson(rate): the number of events, P(k) = rate^k exp(-rate) / k! for k = 0, 1, 2, ..."""

import nbgrad

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        super().__init__(self._take_parameters(rate=rate), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with nbgrad.no_grad():
            return nbgrad.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        self._checked(value)
        rate, value = broadcast_all(self.rate, value)
        return nbgrad.xlogy(value, rate) - rate - nbgrad.lgamma(value + 1)
