"""Gamma(concentration, rate): density rate^a x^(a-1) exp(-rate x) / Gamma(a) for x >= 0, a the
concentration. Draws come from nbgrad's _standard_gamma, whose gradient is reparameterized."""

import numpy as np

import nbgrad

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Gamma"]


def _in_dtype(value, dtype):
    return value if value.dtype == dtype else value.to(dtype)


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        batch_shape = self._take_parameters(concentration=concentration, rate=rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def _parameter_names(self):
        return ["concentration", "rate"]

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        draw = nbgrad._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # a draw that underflowed to 0 moves to the smallest positive number (finite log_prob)
        tiny = float(np.finfo(draw.dtype.numpy).tiny)
        draw.detach().clamp_(min=tiny)
        return draw

    def log_prob(self, value):
        value = _in_dtype(value, self.rate.dtype)
        self._checked(value)
        a, b = self.concentration, self.rate
        return nbgrad.xlogy(a, b) + nbgrad.xlogy(a - 1, value) - b * value - nbgrad.lgamma(a)

    def cdf(self, value):
        value = _in_dtype(value, self.rate.dtype)
        self._checked(value)
        return nbgrad.special.gammainc(self.concentration, self.rate * value)

    # as an exponential family: theta = (concentration - 1, -rate), T(x) = (log x, x)
    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return nbgrad.lgamma(x + 1) + (x + 1) * nbgrad.log(-y.reciprocal())

    _mean_carrier_measure = 0

    def entropy(self):
        a, b = self.concentration, self.rate
        return a - nbgrad.log(b) + nbgrad.lgamma(a) + (1.0 - a) * nbgrad.digamma(a)
