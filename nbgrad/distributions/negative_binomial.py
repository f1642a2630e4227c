"""NegativeBinomial(total_count, probs= or logits=): the number of successes, each of probability
p, before total_count failures, P(k) = Gamma(k + r) / (k! Gamma(r)) p^k (1 - p)^r with r the
total_count (any r >= 0, not only whole numbers). Equivalently a Poisson whose rate is drawn
from Gamma(r, (1 - p) / p), which is how it is sampled."""

import nbgrad
import nbgrad.nn.functional as F

from . import constraints
from .categorical import ProbsOrLogits
from .distribution import Distribution
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(ProbsOrLogits, Distribution):
    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer
    _binary = True

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        given, value = self._take_probs_or_logits(probs, logits)
        batch_shape = self._take_parameters(total_count=total_count, **{given: value})
        self._param = self.__dict__[given]
        self.total_count = self.total_count.to(self._param.dtype)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._param = new.__dict__["probs" if "probs" in new.__dict__ else "logits"]
        return new

    @property
    def mean(self):
        # r p / (1 - p), the odds p / (1 - p) being exp(logit)
        return self.total_count * nbgrad.exp(self.logits)

    @property
    def mode(self):
        r, odds = self.total_count, self.logits.exp()
        return ((r - 1) * odds).floor().clamp(min=0.0)

    @property
    def variance(self):
        # r p / (1 - p)^2: the mean divided by 1 - p = sigmoid(-logit)
        return self.mean / nbgrad.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        # the rate of the Poisson: Gamma(r) scaled by the odds p / (1 - p)
        inverse_odds = nbgrad.exp(-self.logits)
        return Gamma(self.total_count, inverse_odds, validate_args=False)

    def sample(self, sample_shape=()):
        with nbgrad.no_grad():
            return nbgrad.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        self._checked(value)
        r = self.total_count
        # log(p^k (1 - p)^r) with log p = logsigmoid(logit), log(1 - p) = logsigmoid(-logit)
        log_powers = r * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        # log(k! Gamma(r) / Gamma(k + r)); 0 when r = k = 0 (the one outcome, certain)
        log_normalizer = -nbgrad.lgamma(r + value) + nbgrad.lgamma(1.0 + value) + nbgrad.lgamma(r)
        log_normalizer = log_normalizer.masked_fill(r + value == 0.0, 0.0)
        return log_powers - log_normalizer
