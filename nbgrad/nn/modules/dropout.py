"""Dropout layers: each zeroes random elements (or whole channels) while training through its
functional, and does nothing in eval mode."""

from nbgrad.nn import functional as F
from nbgrad.nn.modules.module import Module


class _DropoutNd(Module):
    """What the dropout layers share: ``p``, ``inplace``, and the functional they call."""

    functional = None  # each layer's own, as a staticmethod

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return self.functional(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    functional = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    functional = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    functional = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    functional = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    functional = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    functional = staticmethod(F.feature_alpha_dropout)
