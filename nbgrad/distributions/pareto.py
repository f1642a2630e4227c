"""Pareto(scale, alpha): density alpha scale^alpha / x^(alpha + 1) for x >= scale (a power-law
tail). Written as a TransformedDistribution: for e drawn from Exponential(alpha), scale exp(e) is
a Pareto draw (P(scale e^E > x) = (scale / x)^alpha)."""

from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        exponential = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(exponential, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.alpha = self.alpha.expand(batch_shape)
        new.base_dist = self.base_dist.expand(batch_shape)
        new.transforms = self.transforms  # they broadcast against the larger batch
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        # alpha scale / (alpha - 1); infinite for alpha <= 1 (alpha read as at least 1)
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        # scale^2 alpha / ((alpha - 1)^2 (alpha - 2)); infinite for alpha <= 2
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
