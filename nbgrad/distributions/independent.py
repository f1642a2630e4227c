"""Independent(base, n): the rightmost n batch dimensions of `base` read as one event, so that
log_prob and entropy sum over them (a diagonal Normal as one multivariate distribution)."""

from . import constraints
from .distribution import Distribution
from .utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = reinterpreted_batch_ndims
        batch = tuple(base_distribution.batch_shape)
        if n > len(batch):
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {n} vs {len(batch)}"
            )
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        split = len(batch) - n
        event = batch[split:] + tuple(base_distribution.event_shape)
        super().__init__(batch[:split], event, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        kept_as_event = tuple(self.event_shape[: self.reinterpreted_batch_ndims])
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + kept_as_event)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        support = self.base_dist.support
        if self.reinterpreted_batch_ndims == 0:
            return support
        return constraints.independent(support, self.reinterpreted_batch_ndims)

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
