"""``torch.distributions.exp_family``'s path: ExponentialFamily lives in distribution.py."""

from nbgrad.distributions.distribution import ExponentialFamily

__all__ = ["ExponentialFamily"]
