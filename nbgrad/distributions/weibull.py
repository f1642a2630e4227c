"""Weibull(scale, concentration): density (k / s) (x / s)^(k-1) exp(-(x / s)^k) for x > 0, with s
the scale and k the concentration (lifetimes whose failure rate grows like x^(k-1)).

Written as a TransformedDistribution: if e is a standard exponential draw, s e^(1/k) is a Weibull
draw; the transforms are e -> e^(1/k), then multiplication by s."""

import nbgrad

from . import constraints
from .exponential import Exponential
from .gumbel import _EULER_GAMMA
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        (self.scale, self.concentration) = broadcast_all(scale, concentration)
        k = self.concentration
        self.concentration_reciprocal = k.reciprocal()
        standard = Exponential(nbgrad.ones_like(self.scale), validate_args=validate_args)
        super().__init__(standard, self._transforms(), validate_args=validate_args)

    def _transforms(self):
        return [
            PowerTransform(self.concentration_reciprocal),  # e -> e^(1/k)
            AffineTransform(0, self.scale),  # then times s
        ]

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        new.scale, new.concentration = (
            t.expand(batch_shape) for t in (self.scale, self.concentration)
        )
        k = new.concentration
        new.concentration_reciprocal = k.reciprocal()
        new.base_dist = self.base_dist.expand(batch_shape)
        new.transforms = new._transforms()
        return new

    @property
    def mean(self):
        # s Gamma(1 + 1/k)
        return self.scale * nbgrad.exp(nbgrad.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** self.concentration_reciprocal

    @property
    def variance(self):
        # s^2 (Gamma(1 + 2/k) - Gamma(1 + 1/k)^2)
        inverse_k = self.concentration_reciprocal
        second_moment = nbgrad.exp(nbgrad.lgamma(1 + 2 * inverse_k))
        squared_mean = nbgrad.exp(2 * nbgrad.lgamma(1 + inverse_k))
        return self.scale.pow(2) * (second_moment - squared_mean)

    def entropy(self):
        inverse_k = self.concentration_reciprocal
        return _EULER_GAMMA * (1 - inverse_k) + nbgrad.log(self.scale * inverse_k) + 1
