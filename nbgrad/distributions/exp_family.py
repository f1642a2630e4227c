"""ExponentialFamily: the distributions whose density is h(x) exp(<theta, T(x)> - A(theta)), with
natural parameters theta and log-normalizer A.

Everything about the family's entropy and KL divergence follows from A alone, because the mean of
T(x) is the gradient of A: entropy = A(theta) - <theta, grad A(theta)> - E[log h(x)], and
KL(p || q) = A(theta_q) - A(theta_p) - <theta_q - theta_p, grad A(theta_p)> (a Bregman
divergence). The gradient is taken by autograd on p's parameters detached, with create_graph so
that the result keeps the graph of the distribution's own parameters where they appear. A member
gives _natural_params, _log_normalizer and _mean_carrier_measure (E[log h(x)]); most also write
their closed forms, which PyTorch's users call by default."""

import nbgrad

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def _log_normalizer_and_means(self):
        """A at p's natural parameters (detached, as new leaves) and grad A there: E[T(x)]."""
        leaves = [theta.detach().requires_grad_() for theta in self._natural_params]
        log_normalizer = self._log_normalizer(*leaves)
        means = nbgrad.autograd.grad(log_normalizer.sum(), leaves, create_graph=True)
        return leaves, log_normalizer, means

    def entropy(self):
        result = -self._mean_carrier_measure
        leaves, log_normalizer, means = self._log_normalizer_and_means()
        result = result + log_normalizer
        event_dims = len(self.event_shape)
        for theta, mean in zip(leaves, means):
            product = theta * mean
            per_element = product.reshape(
                tuple(product.shape[: product.dim() - event_dims]) + (-1,)
            )
            result = result - per_element.sum(-1)
        return result
