"""RelaxedBernoulli(temperature, probs= or logits=): a Bernoulli made continuous (the binary
Concrete distribution), values in (0, 1) that approach {0, 1} as the temperature goes to 0 and
whose draws are differentiable in the probabilities.

A draw is sigmoid((logit p + L) / temperature) for L a standard logistic draw (log u - log(1 - u)
for u uniform). LogitRelaxedBernoulli is the law of the value inside the sigmoid; RelaxedBernoulli
is that pushed through a SigmoidTransform. The temperature is a tensor."""

import nbgrad

from . import constraints
from .categorical import ProbsOrLogits
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


def _log_odds(p):
    return p.log() - nbgrad.log1p(-p)


class LogitRelaxedBernoulli(ProbsOrLogits, Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    _binary = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        given, value = self._take_probs_or_logits(probs, logits)
        self.temperature = temperature  # a tensor (its log is read)
        batch_shape = self._take_parameters(**{given: value})
        self._param = self.__dict__[given]
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new.temperature, new._param = (
            self.temperature,
            new.__dict__["probs" if "probs" in new.__dict__ else "logits"],
        )
        return new

    def rsample(self, sample_shape=()):
        draw_shape = self._extended_shape(sample_shape)
        p = clamp_probs(self.probs.expand(draw_shape))
        u = clamp_probs(nbgrad.rand(draw_shape, dtype=p.dtype))
        # the logistic noise first, then the log-odds of p, both divided by the temperature
        return (_log_odds(u) + p.log() - nbgrad.log1p(-p)) / self.temperature

    def log_prob(self, value):
        self._checked(value)
        log_odds, x = broadcast_all(self.logits, value)
        # with d = logit - temperature x: log temperature + d - 2 log(1 + exp(d))
        shifted = log_odds - x.mul(self.temperature)
        return self.temperature.log() + shifted - 2 * shifted.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        inner = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(inner, SigmoidTransform(), validate_args=validate_args)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
