"""Dropout that zeroes whole channels (``dropout1d``, ``dropout2d``, ``dropout3d``) and alpha
dropout (``alpha_dropout``, ``feature_alpha_dropout``), as PyTorch composes them: the input times
a random mask (MulBackward0), plus, for alpha dropout, a random shift (AddBackward0). Outside
training each returns its input itself, as PyTorch does."""

import math

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
    name = f"dropout{spatial}d"
    _check(p)
    if input.dim() != spatial + 2:
        raise NotImplementedError(
            f"nbgrad.nn.functional.{name} takes {spatial + 2}-d (batched) input only"
        )
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


def _alpha_dropout(input, p, training, feature):  # noqa: A002
    _check(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    keep = _keep(input, p, feature)
    # scale a and shift b keep the mean 0 and variance 1 of SELU's outputs
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    shift = ((keep - 1) * (_ALPHA * a) + _ALPHA * a * p).astype(keep.dtype)
    return ops.add(ops.mul(input, Tensor._make(keep * a)), Tensor._make(shift))


def alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    if inplace:
        raise NotImplementedError("nbgrad.nn.functional.alpha_dropout does not take inplace=True")
    return _alpha_dropout(input, p, training, feature=False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    if inplace:
        raise NotImplementedError(
            "nbgrad.nn.functional.feature_alpha_dropout does not take inplace=True"
        )
    return _alpha_dropout(input, p, training, feature=True)
