"""Gumbel(loc, scale): the law of the largest of many draws, density exp(-(z + exp(-z))) / scale
with z = (x - loc) / scale.

Written as a TransformedDistribution: for u uniform in (0, 1), -log(-log u) is a standard Gumbel
draw, so x = loc - scale log(-log u). The transforms are log, negation, log, then x = loc - scale t;
the uniform stays a machine epsilon inside (0, 1) so that both logs stay finite."""

import math

import numpy as np

import nbgrad

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Gumbel"]

_EULER_GAMMA = 0.57721566490153286061


class Gumbel(TransformedDistribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale) = broadcast_all(loc, scale)
        info = np.finfo(self.loc.dtype.numpy)
        just_above_0 = nbgrad.full_like(self.loc, float(info.tiny))
        just_below_1 = nbgrad.full_like(self.loc, 1 - float(info.eps))
        uniform = Uniform(just_above_0, just_below_1, validate_args=validate_args)
        log_then_flip = [ExpTransform().inv, AffineTransform(0, -nbgrad.ones_like(self.scale))]
        # the loc given (a number stays a number), the scale at the batch's shape
        to_x = [ExpTransform().inv, AffineTransform(loc, -self.scale)]
        super().__init__(uniform, log_then_flip + to_x, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new.loc, new.scale = (t.expand(batch_shape) for t in (self.loc, self.scale))
        return new

    def log_prob(self, value):
        self._checked(value)
        # with minus_z = (loc - x) / scale: log density = minus_z - exp(minus_z) - log scale
        minus_z = (self.loc - value) / self.scale
        return (minus_z - minus_z.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        spread = math.pi / math.sqrt(6)
        return spread * self.scale

    @property
    def variance(self):
        std = self.stddev
        return std.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + _EULER_GAMMA)
