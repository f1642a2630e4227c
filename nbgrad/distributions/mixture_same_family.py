"""MixtureSameFamily(mixture_distribution, component_distribution): a batch of mixtures of K
components of one family. The Categorical picks a component (its K outcomes), the component
distribution holds the K components in its rightmost batch dimension:
    p(x) = sum_k pi_k p_k(x),   log p(x) = logsumexp_k(log pi_k + log p_k(x)).
Values carry no component axis; one is inserted (size 1, left of the event dimensions) to read
them against all K components at once."""

import nbgrad

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(
                " The Mixture distribution needs to be an  instance of "
                "nbgrad.distributions.Categorical"
            )
        if not isinstance(component_distribution, Distribution):
            raise ValueError(
                "The Component distribution needs to be an instance of "
                "nbgrad.distributions.Distribution"
            )
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mixture_batch = mixture_distribution.batch_shape
        batch_shape = nbgrad.Size(component_distribution.batch_shape[:-1])
        for mine, theirs in zip(reversed(mixture_batch), reversed(batch_shape)):
            if mine != 1 and theirs != 1 and mine != theirs:
                raise ValueError(
                    f"`mixture_distribution.batch_shape` ({mixture_batch}) is not compatible "
                    f"with `component_distribution.batch_shape`({batch_shape})"
                )
        from_mixture = mixture_distribution.logits.shape[-1]
        from_components = component_distribution.batch_shape[-1]
        if from_mixture != from_components:
            raise ValueError(
                f"`mixture_distribution component` ({from_mixture}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({from_components})"
            )
        self._num_component = from_mixture
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_shell(batch_shape, _instance)
        components_batch = tuple(batch_shape) + (self._num_component,)
        new._component_distribution = self._component_distribution.expand(components_batch)
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        return new

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @constraints.dependent_property
    def support(self):
        return constraints.mixture_same_family(self._component_distribution.support)

    def _component_axis(self):
        """Where the K components sit in a component's per-value results."""
        return -1 - self._event_ndims

    def _weights(self):
        """The mixture probabilities, with size-1 dimensions for the event on their right."""
        probs = self._mixture_distribution.probs
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        return (self._weights() * self._component_distribution.mean).sum(self._component_axis())

    @property
    def variance(self):
        # the law of total variance: E[Var(X | k)] + Var(E[X | k])
        weights, axis = self._weights(), self._component_axis()
        components = self._component_distribution
        mean_of_variances = (weights * components.variance).sum(axis)
        spread = (components.mean - self.mean.unsqueeze(axis)).pow(2)
        return mean_of_variances + (weights * spread).sum(axis)

    def cdf(self, value):
        per_component = self._component_distribution.cdf(value.unsqueeze(self._component_axis()))
        return (per_component * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, value):
        self._checked(value)
        per_component = self._component_distribution.log_prob(
            value.unsqueeze(self._component_axis())
        )
        log_weights = nbgrad.log_softmax(self._mixture_distribution.logits, dim=-1)
        return nbgrad.logsumexp(per_component + log_weights, dim=-1)

    def sample(self, sample_shape=()):
        with nbgrad.no_grad():
            sample_shape = tuple(sample_shape)
            outer = sample_shape + tuple(self._batch_shape)
            event = tuple(self._event_shape)
            chosen = self._mixture_distribution.sample(sample_shape)
            # a mixture batch shorter than the components': its missing dimensions are size 1
            missing = len(self._batch_shape) - len(self._mixture_distribution.batch_shape)
            mixture_batch = tuple(chosen.shape[len(sample_shape) :])
            chosen = chosen.reshape(sample_shape + (1,) * missing + mixture_batch).expand(outer)
            drawn = self._component_distribution.sample(sample_shape)
            # every component drawn, then the chosen one picked along the component axis
            index = chosen.reshape(outer + (1,) * (1 + len(event))).expand(outer + (1,) + event)
            return drawn.gather(len(outer), index).squeeze(len(outer))

    def __repr__(self):
        return (
            f"{type(self).__name__}(\n  {self._mixture_distribution},\n"
            f"  {self._component_distribution})"
        )
