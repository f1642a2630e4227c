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
        (self.scale, self.alpha) = broadcast_all(scale, alpha)
        log_ratio = Exponential(self.alpha, validate_args=validate_args)  # log(x / scale)
        times_scale = AffineTransform(0, self.scale)
        super().__init__(log_ratio, [ExpTransform(), times_scale], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        new.scale, new.alpha = (t.expand(batch_shape) for t in (self.scale, self.alpha))
        new.base_dist = self.base_dist.expand(batch_shape)
        new.transforms = self.transforms  # they broadcast against the larger batch
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        smallest = self.scale
        return constraints.greater_than_eq(smallest)

    @property
    def mean(self):
        # alpha scale / (alpha - 1); infinite for alpha <= 1 (alpha read as at least 1)
        alpha = self.alpha.clamp(min=1)
        return alpha * self.scale / (alpha - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        # scale^2 alpha / ((alpha - 1)^2 (alpha - 2)); infinite for alpha <= 2
        alpha, s = self.alpha.clamp(min=2), self.scale
        return s.pow(2) * alpha / ((alpha - 1).pow(2) * (alpha - 2))

    def entropy(self):
        alpha = self.alpha
        return (self.scale / alpha).log() + (1 + alpha.reciprocal())
