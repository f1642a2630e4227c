"""ExponentialFamily: the distributions whose density is h(x) exp(<theta, T(x)> - A(theta)).

The family's entropy and its KL divergence follow from the log-normalizer A alone (a Bregman
divergence); nbgrad writes each member's closed forms instead, and this class marks membership."""

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    def entropy(self):
        raise NotImplementedError
