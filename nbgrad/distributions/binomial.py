"""Binomial(total_count, probs= or logits=): the number of successes in total_count independent
trials of probability p each, P(k) = C(n, k) p^k (1 - p)^(n - k) for k = 0..n."""

import nbgrad

from . import constraints
from .categorical import ProbsOrLogits
from .distribution import Distribution

__all__ = ["Binomial"]


def _positive_part(x):
    """max(x, 0), as the mean of (x clamped at 0 from below) and (x minus x clamped from above):
    at x = 0 its gradient is 1/2 from each side."""
    above, below = x.clamp(min=0), x.clamp(max=0)
    return (above + x - below) / 2


class Binomial(ProbsOrLogits, Distribution):
    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True
    _binary = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        given, value = self._take_probs_or_logits(probs, logits)
        batch_shape = self._take_parameters(total_count=total_count, **{given: value})
        self._param = self.__dict__[given]
        self.total_count = self.total_count.to(self._param.dtype)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._param = new.__dict__["probs" if "probs" in new.__dict__ else "logits"]
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        most = self.total_count
        return constraints.integer_interval(0, most)

    @property
    def mean(self):
        n, p = self.total_count, self.probs
        return n * p

    @property
    def mode(self):
        n, p = self.total_count, self.probs
        return ((n + 1) * p).floor().clamp(max=n)

    @property
    def variance(self):
        n, p = self.total_count, self.probs
        return n * p * (1 - p)

    def _common_count(self, needed_by):
        """The one total_count of every distribution in the batch (enumerating needs one)."""
        most = int(self.total_count.max().item()) if self.total_count.numel() else 0
        if not bool((self.total_count == most).all()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{needed_by}`.")
        return most

    def sample(self, sample_shape=()):
        draw_shape = self._extended_shape(sample_shape)
        with nbgrad.no_grad():
            # as the sum of Bernoulli trials: as many as the largest count, each trial counted
            # only where its index is below that distribution's own count
            most = int(self.total_count.max().item()) if self.total_count.numel() else 0
            trials = nbgrad.bernoulli(self.probs.expand((most,) + tuple(draw_shape)))
            index = nbgrad.arange(most, dtype=trials.dtype).reshape(
                (most,) + (1,) * len(draw_shape)
            )
            counted = trials * (index < self.total_count.expand(draw_shape))
            return counted.sum(0)

    def log_prob(self, value):
        self._checked(value)
        n, logits = self.total_count, self.logits
        # log p^k (1-p)^(n-k) = k logit + n log(1 - p), and -log(1 - p) = softplus(logit) is
        # written max(logit, 0) + log(1 + exp(-|logit|)) so that it stays finite
        log_n_factorial = nbgrad.lgamma(n + 1)
        with_k = value * logits - nbgrad.lgamma(value + 1) - nbgrad.lgamma(n - value + 1)
        softplus_total = n * _positive_part(logits) + n * nbgrad.log1p(nbgrad.exp(-logits.abs()))
        return with_k - (softplus_total - log_n_factorial)

    def entropy(self):
        self._common_count("entropy")
        outcomes = self.enumerate_support(False)
        log_pmf = self.log_prob(outcomes)
        return -(log_pmf.exp() * log_pmf).sum(0)

    def enumerate_support(self, expand=True):
        most = self._common_count("enumerate_support")
        counts = nbgrad.arange(1 + most, dtype=self._param.dtype)
        batch = tuple(self._batch_shape)
        counts = counts.view((-1,) + (1,) * len(batch))
        return counts.expand((-1,) + batch) if expand else counts
