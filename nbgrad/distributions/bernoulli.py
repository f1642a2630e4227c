"""Bernoulli(probs= or logits=): 1 with probability p, 0 otherwise."""

import nbgrad
import nbgrad.nn.functional as F

from . import constraints
from .categorical import ProbsOrLogits
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Bernoulli"]


class Bernoulli(ProbsOrLogits, ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _binary = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        given, value = self._take_probs_or_logits(probs, logits)
        batch_shape = self._take_parameters(**{given: value})
        self._param = self.__dict__[given]
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._param = new.__dict__["probs" if "probs" in new.__dict__ else "logits"]
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs)
        mode[self.probs == 0.5] = float("nan")
        return mode

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with nbgrad.no_grad():
            return nbgrad.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        self._checked(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    # as an exponential family: theta = log(p / (1 - p)), T(x) = x
    @property
    def _natural_params(self):
        return (nbgrad.log(self.probs / (1 - self.probs)),)

    def _log_normalizer(self, x):
        return nbgrad.log1p(nbgrad.exp(x))

    _mean_carrier_measure = 0

    def enumerate_support(self, expand=True):
        values = nbgrad.arange(2, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
