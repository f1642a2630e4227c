"""Geometric(probs= or logits=): the number of failures before the first success in trials of
probability p, P(k) = (1 - p)^k p for k = 0, 1, 2, ..."""

import numpy as np

import nbgrad
import nbgrad.nn.functional as F

from . import constraints
from .categorical import ProbsOrLogits
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Geometric"]


class Geometric(ProbsOrLogits, Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _binary = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        given, value = self._take_probs_or_logits(probs, logits)
        batch_shape = self._take_parameters(**{given: value})
        self._param = self.__dict__[given]
        super().__init__(batch_shape, validate_args=validate_args)
        # p = 0 is inside [0, 1] but gives no success ever: refused after the interval check
        if self._validate_args and given == "probs":
            never = self.probs.detach() <= 0
            if bool(never.any()):
                raise ValueError(
                    f"Expected parameter probs (Tensor of shape {tuple(self.probs.shape)}) of "
                    f"distribution {self!r} to be positive but found invalid values:\n"
                    f"{self.probs.detach()[never]}"
                )

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._param = new.__dict__["probs" if "probs" in new.__dict__ else "logits"]
        return new

    @property
    def mean(self):
        p = self.probs
        return 1.0 / p - 1.0

    @property
    def mode(self):
        return nbgrad.zeros_like(self.probs)

    @property
    def variance(self):
        p = self.probs
        return (1.0 / p - 1.0) / p

    def sample(self, sample_shape=()):
        draw_shape = self._extended_shape(sample_shape)
        tiny = float(np.finfo(self._param.dtype.numpy).tiny)
        with nbgrad.no_grad():
            # inversion: P(K >= k) = (1 - p)^k, so floor(log u / log(1 - p)) for u uniform
            u = nbgrad.rand(draw_shape, dtype=self._param.dtype).clamp(min=tiny)
            return (u.log() / nbgrad.log1p(-self.probs)).floor()

    def log_prob(self, value):
        self._checked(value)
        # k log(1 - p) + log p; at p = 1 and k = 0 the first term is 0 * log 0, counted as 0
        k, p = broadcast_all(value, self.probs)
        failures = p.clone()
        failures[(p == 1) & (k == 0)] = 0
        return k * nbgrad.log1p(-failures) + self.probs.log()

    def entropy(self):
        # (-(1 - p) log(1 - p) - p log p) / p, the numerator the binary cross-entropy of p
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / (
            self.probs
        )
