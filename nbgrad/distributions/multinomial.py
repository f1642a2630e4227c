"""Multinomial(total_count, probs= or logits=): how many of total_count independent draws of a
Categorical fall on each of its K outcomes, P(x) = n! / prod(x_k!) prod(p_k^x_k) for counts x
adding up to n. One total_count for the whole batch; it holds the Categorical it counts draws of
(and, for the entropy, the Binomial count of one outcome)."""

import math

import nbgrad
import nbgrad.nn.functional as F

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):  # one count for the whole batch
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = n = total_count
        self._categorical = Categorical(probs, logits)
        self._binomial = Binomial(n, probs=self.probs)
        categories = self._categorical.param_shape[-1:]
        super().__init__(self._categorical.batch_shape, categories, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        new.total_count = n = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(n, probs=new.probs, validate_args=False)
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        n = self.total_count
        return constraints.multinomial(n)

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        p, n = self.probs, self.total_count
        return p * n

    @property
    def variance(self):
        n, p = self.total_count, self.probs
        return n * p * (1 - p)

    def sample(self, sample_shape=()):
        # total_count categorical draws per sample, counted per outcome
        draws = self._categorical.sample(nbgrad.Size((self.total_count,) + tuple(sample_shape)))
        k = self._event_shape[0]
        return F.one_hot(draws, num_classes=k).sum(0).to(self._param.dtype)

    def log_prob(self, value):
        self._checked(value)
        log_p, counts = broadcast_all(self.logits, value)
        log_p = log_p.clone()
        log_n_factorial = nbgrad.lgamma(counts.sum(-1) + 1)
        log_coefficient = log_n_factorial - nbgrad.lgamma(counts + 1).sum(-1)
        # an outcome of probability 0 drawn 0 times contributes 0 * log 0 = 0
        log_p[(counts == 0) & (log_p == -math.inf)] = 0
        return log_coefficient + (log_p * counts).sum(-1)

    def entropy(self):
        # H = n H(categorical) - log n! + sum_k E[log x_k!], each count x_k a Binomial(n, p_k)
        n = nbgrad.tensor(self.total_count)
        first = n * self._categorical.entropy() - nbgrad.lgamma(n + 1)
        counts = self._binomial.enumerate_support(expand=False)[1:]
        count_probs = nbgrad.exp(self._binomial.log_prob(counts))
        return first + (count_probs * nbgrad.lgamma(counts + 1)).sum([0, -1])
