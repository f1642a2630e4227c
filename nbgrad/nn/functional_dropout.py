"""Dropout that zeroes whole channels (``dropout1d``, ``dropout2d``, ``dropout3d``) and alpha
dropout (``alpha_dropout``, ``feature_alpha_dropout``), as PyTorch composes them: the input times
a random mask (MulBackward0), plus, for alpha dropout, a random shift (AddBackward0). Outside
training each returns its input itself, as PyTorch does."""

import math
import warnings

import numpy as np

from nbgrad.autograd.tensor import Tensor
from nbgrad.ops import functions as ops
from nbgrad.random import rng_of

# SELU's negative saturation, -scale * alpha: where alpha dropout sends a dropped element
_ALPHA = 1.7580993408473766


def _check(p, name="dropout"):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"{name} probability has to be between 0 and 1, but got {p}")


def _keep(input, p, feature):  # noqa: A002
    """A 0/1 mask: per element, or per channel (the first two dims kept, the others 1)."""
    shape = tuple(input.shape)
    if feature:
        shape = shape[:2] + (1,) * (len(shape) - 2)
    if p == 1:
        return np.zeros(shape, input._dtype.numpy)
    return (rng_of(None).random(shape) >= p).astype(input._dtype.numpy)


def _feature_dropout(input, p, training, inplace, spatial):  # noqa: A002
    """Channel-wise dropout for inputs with ``spatial`` spatial dims, a channel dim and an
    optional batch dim. As in PyTorch, an input without the batch dim is given one for the
    dropout (unsqueeze, then squeeze: their nodes appear even outside training), except by
    dropout2d, which reads a 3-d input as a batch of 1-d ones; other ranks are deprecated."""
    name = f"dropout{spatial}d"
    _check(p)
    dims = input.dim()
    if spatial == 1 and dims not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {dims}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
            "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    if spatial == 2 and dims == 3:
        warnings.warn(_DROPOUT2D_OF_3D, UserWarning, stacklevel=3)
    elif dims not in (spatial + 1, spatial + 2):
        warnings.warn(
            f"{name}: Received a {dims}-D input to {name}, which is deprecated and will result "
            "in an error in a future release. To retain the behavior and silence this warning, "
            f"please use dropout instead. Note that {name} exists to provide channel-wise "
            f"dropout on inputs with {spatial} spatial dimensions, a channel dimension, and an "
            f"optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
            UserWarning,
            stacklevel=3,
        )
    if spatial == 2 or dims == spatial + 2:
        return _channel_dropout(input, p, training, inplace)
    if inplace:
        input.unsqueeze_(0)
        _channel_dropout(input, p, training, inplace)
        return input.squeeze_(0)
    return _channel_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)


_DROPOUT2D_OF_3D = (
    "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
    "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
    "This behavior will change in a future release to interpret the input as one without a "
    "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
    "please switch to using dropout1d instead."
)


def _channel_dropout(input, p, training, inplace):  # noqa: A002
    """Zero whole channels (dim 1) with probability ``p``, the rest scaled by 1 / (1 - p)."""
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0 or input.numel() == 0:
        return input
    mask = Tensor._make(_keep(input, p, True) / (1 - p) if p < 1 else _keep(input, p, True))
    return input.mul_(mask) if inplace else ops.mul(input, mask)


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout(input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout(input, p, training, inplace, 3)


def _alpha_dropout(input, p, training, inplace, feature):  # noqa: A002
    _check(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    keep = _keep(input, p, feature)
    # scale a and shift b keep the mean 0 and variance 1 of SELU's outputs
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    scale = Tensor._make(keep * a)
    shift = Tensor._make(((keep - 1) * (_ALPHA * a) + _ALPHA * a * p).astype(keep.dtype))
    if inplace:
        return input.mul_(scale).add_(shift)
    return ops.add(ops.mul(input, scale), shift)


def alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    return _alpha_dropout(input, p, training, inplace, feature=True)
