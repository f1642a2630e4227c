"""``Dirichlet(concentration)``: distributions over the probability simplex (the last dim)."""

import nbgrad
import nbgrad.nn.functional as F
from nbgrad.autograd import Function
from nbgrad.autograd.function import once_differentiable
from nbgrad.distributions import constraints
from nbgrad.distributions.distribution import ExponentialFamily

__all__ = ["Dirichlet"]


def _Dirichlet_backward(x, concentration, grad_output):  # noqa: N802 - PyTorch's name
    """Each x_j = G_j / sum(G) moves with alpha_i by (delta_ij - x_j) times the factor
    _dirichlet_grad gives for coordinate i."""
    total = concentration.sum(-1, True).expand_as(concentration)
    grad = nbgrad._dirichlet_grad(x, concentration, total)
    return grad * (grad_output - (x * grad_output).sum(-1, True))


class _Dirichlet(Function):
    """The reparameterized draw, PyTorch's Function of the same name (node _DirichletBackward)."""

    @staticmethod
    def forward(ctx, concentration):
        x = nbgrad._sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        return _Dirichlet_backward(x, concentration, grad_output)


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = nbgrad.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        concentration = self.concentration.expand(shape)
        return _Dirichlet.apply(concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            nbgrad.xlogy(self.concentration - 1.0, value).sum(-1)
            + nbgrad.lgamma(self.concentration.sum(-1))
            - nbgrad.lgamma(self.concentration).sum(-1)
        )

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # every concentration below 1: the density peaks at a vertex, the largest one's
        mask = (self.concentration < 1).all(dim=-1)
        vertex = F.one_hot(mode[mask].argmax(dim=-1), concentrationm1.shape[-1])
        mode[mask] = vertex.to(mode)
        return mode

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (
            nbgrad.lgamma(self.concentration).sum(-1)
            - nbgrad.lgamma(a0)
            - (k - a0) * nbgrad.digamma(a0)
            - ((self.concentration - 1.0) * nbgrad.digamma(self.concentration)).sum(-1)
        )

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - nbgrad.lgamma(x.sum(-1))
