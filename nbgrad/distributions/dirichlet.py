"""Dirichlet(concentration): a distribution over probability vectors (the simplex), density
prod x_i^(a_i - 1) / B(a). A draw is a vector of Gamma(a_i) draws divided by their sum."""

import nbgrad

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class _Dirichlet(nbgrad.autograd.Function):
    """A draw with its reparameterized gradient (node _DirichletBackward, as PyTorch's).

    x_j = g_j / sum(g) for Gamma draws g. _dirichlet_grad(x, a, total)_j is the derivative of x_j
    in a_j at a fixed quantile of its Beta(a_j, total - a_j) marginal, scaled by 1 / (1 - x_j);
    since the coordinates sum to one, a change in a_j moves x_j by that amount and the others in
    proportion to themselves: d x_i / d a_j = grad_j * ((i == j) - x_i).
    """

    @staticmethod
    def forward(ctx, concentration):
        x = nbgrad._sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, keepdim=True).expand_as(concentration)
        per_coordinate = nbgrad._dirichlet_grad(x, concentration, total)
        return per_coordinate * (grad_output - (x * grad_output).sum(-1, keepdim=True))


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def _total(self):
        return self.concentration.sum(-1, keepdim=True)

    @property
    def mean(self):
        return self.concentration / self._total

    @property
    def mode(self):
        # the peak (a_i - 1) / (sum(a) - K) where every a_i >= 1; with all a_i < 1 the density
        # grows toward the corners, and the corner of the largest a_i is taken
        above_one = (self.concentration - 1).clamp(min=0.0)
        mode = above_one / above_one.sum(-1, keepdim=True)
        all_below = (self.concentration < 1).all(-1)
        corners = nbgrad.nn.functional.one_hot(
            mode[all_below].argmax(-1), num_classes=self.concentration.shape[-1]
        )
        mode[all_below] = corners.to(mode)
        return mode

    @property
    def variance(self):
        a, total = self.concentration, self._total
        return a * (total - a) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _Dirichlet.apply(self.concentration.expand(shape))

    def log_prob(self, value):
        self._checked(value)
        a = self.concentration
        weighted_logs = nbgrad.xlogy(a - 1.0, value).sum(-1)
        return weighted_logs + nbgrad.lgamma(a.sum(-1)) - nbgrad.lgamma(a).sum(-1)

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        total = a.sum(-1)
        log_beta = nbgrad.lgamma(a).sum(-1) - nbgrad.lgamma(total)
        return (
            log_beta - (k - total) * nbgrad.digamma(total) - ((a - 1.0) * nbgrad.digamma(a)).sum(-1)
        )
