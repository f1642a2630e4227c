"""Normal(loc, scale): the Gaussian, density exp(-(x - loc)^2 / (2 scale^2)) / (scale sqrt(2pi))."""

import math

import nbgrad

from .location_scale import LocationScale

__all__ = ["Normal"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _standard_normal(shape, dtype, device=None):
    """Draws of N(0, 1) from nbgrad's generator (one place, so a test can fix the noise)."""
    with nbgrad.no_grad():
        return nbgrad.randn(shape, dtype=dtype)


class Normal(LocationScale):
    def _standard_draw(self, shape):
        return _standard_normal(shape, dtype=self.loc.dtype)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with nbgrad.no_grad():
            return nbgrad.normal(self.loc.expand(shape), self.scale.expand(shape))

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def log_prob(self, value):
        self._checked(value)
        variance = self.scale**2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * variance) - log_scale - _LOG_SQRT_2PI

    # as an exponential family: theta = (loc / scale^2, -1 / (2 scale^2)), T(x) = (x, x^2)
    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * nbgrad.log(-math.pi / y)

    _mean_carrier_measure = 0

    def cdf(self, value):
        self._checked(value)
        z = (value - self.loc) * self.scale.reciprocal() / math.sqrt(2)
        return 0.5 * (1 + nbgrad.erf(z))

    def icdf(self, value):
        return self.loc + self.scale * nbgrad.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + nbgrad.log(self.scale)
