"""The location-scale family, written once: a distribution of loc + scale * Z for a fixed standard
variable Z (a standard normal for Normal, a standard Cauchy for Cauchy, ...). Parameters, their
constraints, shapes, expand and the reparameterized draw live here; a member says how to draw Z
and writes its densities."""

from . import constraints
from .exp_family import ExponentialFamily


class LocationScale(ExponentialFamily):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        batch_shape = self._take_parameters(loc=loc, scale=scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def _standard_draw(self, shape):
        """Draws of Z, of the given shape, in the parameters' dtype, without a graph."""
        raise NotImplementedError

    def rsample(self, sample_shape=()):
        z = self._standard_draw(self._extended_shape(sample_shape))
        return self.loc + z * self.scale

    def _standardized(self, value):
        """(value - loc) / scale: where value lies in units of the scale."""
        return (value - self.loc) / self.scale

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc
