"""``Gamma(concentration, rate)``: density rate^a x^(a-1) e^(-rate x) / Gamma(a) on x > 0,
reparameterized through ``nbgrad._standard_gamma`` (StandardGammaBackward0)."""

import nbgrad
from nbgrad.distributions import constraints
from nbgrad.distributions.distribution import ExponentialFamily
from nbgrad.distributions.utils import _Number, _tiny, broadcast_all

__all__ = ["Gamma"]


def _standard_gamma(concentration):
    return nbgrad._standard_gamma(concentration)


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, _Number) and isinstance(rate, _Number):
            batch_shape = nbgrad.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = nbgrad.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

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
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # A draw that underflowed to 0 would give log_prob -inf: kept at the smallest normal
        # number, in place on the values only (the graph is untouched).
        value.detach().clamp_(min=_tiny(value.dtype))
        return value

    def log_prob(self, value):
        value = nbgrad.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (
            nbgrad.xlogy(self.concentration, self.rate)
            + nbgrad.xlogy(self.concentration - 1, value)
            - self.rate * value
            - nbgrad.lgamma(self.concentration)
        )

    def entropy(self):
        return (
            self.concentration
            - nbgrad.log(self.rate)
            + nbgrad.lgamma(self.concentration)
            + (1.0 - self.concentration) * nbgrad.digamma(self.concentration)
        )

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return nbgrad.lgamma(x + 1) + (x + 1) * nbgrad.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return nbgrad.special.gammainc(self.concentration, self.rate * value)
