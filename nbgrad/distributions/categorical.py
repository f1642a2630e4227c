"""Categorical(probs= or logits=): one of K outcomes 0..K-1, given by a vector of probabilities or
of unnormalized log-probabilities (logits). Both are kept normalized; the one not given is
computed on first use."""

import numpy as np

import nbgrad

from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


def _lowest(dtype):
    """The most negative finite number of a dtype: logits of probability 0 are clamped to it."""
    return float(np.finfo(dtype.numpy).min)


class ProbsOrLogits:
    """The shared constructor of the distributions given by probs= or logits= (exactly one)."""

    _binary = False  # one probability per event (Bernoulli) or a vector over outcomes

    def _take_probs_or_logits(self, probs, logits):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = "probs" if probs is not None else "logits"
        return given, probs if probs is not None else logits

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def param_shape(self):
        return self._param.shape


class Categorical(ProbsOrLogits, Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        given, value = self._take_probs_or_logits(probs, logits)
        if value.dim() < 1:
            raise ValueError(f"`{given}` parameter must be at least one-dimensional.")
        if given == "probs":
            self.probs = value / value.sum(-1, keepdim=True)
        else:
            self.logits = value - value.logsumexp(dim=-1, keepdim=True)
        self._param = self.__dict__[given]
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._param = new.__dict__["probs" if "probs" in new.__dict__ else "logits"]
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return nbgrad.full(self._extended_shape(), float("nan"), dtype=self._param.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return nbgrad.full(self._extended_shape(), float("nan"), dtype=self._param.dtype)

    def sample(self, sample_shape=()):
        sample_shape = nbgrad.Size(sample_shape)
        with nbgrad.no_grad():
            rows = self.probs.reshape(-1, self._num_events)
            draws = nbgrad.multinomial(rows, sample_shape.numel(), replacement=True)
            return draws.T.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        self._checked(value)
        log_pmf = self.logits
        batch = np.broadcast_shapes(tuple(value.shape), tuple(log_pmf.shape[:-1]))
        if tuple(log_pmf.shape[:-1]) != batch:
            log_pmf = log_pmf.expand(batch + (self._num_events,))
        index = value.long().expand(batch).unsqueeze(-1)
        return log_pmf.gather(-1, index).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=_lowest(self.logits.dtype))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = nbgrad.arange(self._num_events, dtype=nbgrad.long)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
