"""``Laplace(loc, scale)``: density exp(-|x - loc| / scale) / (2 scale)."""

import nbgrad
from nbgrad.distributions import constraints
from nbgrad.distributions.distribution import Distribution
from nbgrad.distributions.utils import _eps, _Number, broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, _Number) and isinstance(scale, _Number):
            batch_shape = nbgrad.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Laplace, _instance)
        batch_shape = nbgrad.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Laplace, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return 2**0.5 * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        # u uniform on (eps - 1, 1): -1 is excluded so that log1p(-|u|) stays finite.
        u = nbgrad.empty(shape, dtype=self.loc.dtype).uniform_(_eps(self.loc.dtype) - 1, 1)
        return self.loc - self.scale * u.sign() * nbgrad.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -nbgrad.log(2 * self.scale) - nbgrad.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        offset_sign = (value - self.loc).sign()
        return 0.5 - 0.5 * offset_sign * nbgrad.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * nbgrad.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + nbgrad.log(2 * self.scale)
