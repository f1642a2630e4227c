"""RelaxedOneHotCategorical(temperature, probs= or logits=): the Gumbel-softmax (Concrete)
distribution, points of the simplex that approach one-hot vectors as the temperature goes to 0,
with draws differentiable in the probabilities: softmax((logits + G) / temperature) for G
independent standard Gumbel draws.

ExpRelaxedCategorical is the law of the log of such a point (a log-softmax; computing there keeps
small coordinates accurate); RelaxedOneHotCategorical pushes it through an ExpTransform."""

import nbgrad

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical, self.temperature = Categorical(probs, logits), temperature
        categories = self._categorical.param_shape[-1:]
        super().__init__(self._categorical.batch_shape, categories, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        new.temperature = self.temperature  # one for the whole batch, or broadcast as given
        return new

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        draw_shape = self._extended_shape(sample_shape)
        u = clamp_probs(nbgrad.rand(draw_shape, dtype=self.logits.dtype))
        gumbel_noise = -((-(u.log())).log())
        scores = (self.logits + gumbel_noise) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)  # a log-softmax

    def log_prob(self, value):
        self._checked(value)
        k = self._event_shape[0]
        # log Gamma(K) + (K - 1) log temperature, then sum_k (s_k - logsumexp(s)) with
        # s = logits - temperature x
        log_scale = nbgrad.full_like(
            self.temperature, float(k)
        ).lgamma() - self.temperature.log().mul(-(k - 1))
        log_p, x = broadcast_all(self.logits, value)
        scores = log_p - x.mul(self.temperature)
        return (scores - scores.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        inner = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(inner, ExpTransform(), validate_args=validate_args)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
