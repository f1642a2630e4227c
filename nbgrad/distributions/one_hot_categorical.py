"""OneHotCategorical(probs= or logits=): a Categorical whose outcome k is written as the k-th unit
vector. It holds a Categorical and reads everything through it."""

import nbgrad

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        categories = self._categorical.param_shape[-1:]
        super().__init__(self._categorical.batch_shape, categories, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        return new

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
        return self.probs

    def _as_one_hot(self, outcomes):
        """Outcome indices as unit vectors, in the probabilities' dtype."""
        k = self.event_shape[0]
        return nbgrad.nn.functional.one_hot(outcomes, num_classes=k).to(self.probs)

    @property
    def mode(self):
        return self._as_one_hot(self.probs.argmax(dim=-1))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        return self._as_one_hot(self._categorical.sample(sample_shape))

    def log_prob(self, value):
        self._checked(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        k = self.event_shape[0]
        unit_vectors = nbgrad.eye(k, dtype=self._param.dtype)
        batch = tuple(self.batch_shape) if expand else (1,) * len(self.batch_shape)
        return unit_vectors.reshape((k,) + (1,) * len(batch) + (k,)).expand((k,) + batch + (k,))


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A one-hot draw whose gradient is that of the probabilities (the straight-through estimator):
    the draw plus (probs - probs), the second term carrying the graph and adding zero."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        drawn = self.sample(sample_shape)
        return drawn + (self.probs - self.probs.detach())
