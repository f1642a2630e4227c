"""Small helpers every distribution uses: parameters as tensors of one shape, probabilities and
log-odds (logits) into each other, sums over the rightmost dimensions, lazily computed values."""

from numbers import Number

import numpy as np

import nbgrad

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "sum_rightmost",
]


def broadcast_all(*values):
    """The arguments as tensors of one shape. Python numbers take the dtype of the tensors given
    (the default dtype when there are none); a tensor is expanded only when its shape differs."""
    if not all(isinstance(v, (Number, nbgrad.Tensor)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of Number, torch.Tensor or objects "
            "implementing __torch_function__."
        )
    tensors = [v for v in values if isinstance(v, nbgrad.Tensor)]
    dtype = tensors[0].dtype if tensors else nbgrad.get_default_dtype()
    as_tensors = [
        v if isinstance(v, nbgrad.Tensor) else nbgrad.tensor(v, dtype=dtype) for v in values
    ]
    shape = nbgrad.Size(np.broadcast_shapes(*(tuple(t.shape) for t in as_tensors)))
    return tuple(t if t.shape == shape else t.expand(shape) for t in as_tensors)


def tiny_and_eps(dtype):
    """The smallest positive normal number and the machine epsilon of a floating dtype."""
    info = np.finfo(dtype.numpy)
    return float(info.tiny), float(info.eps)


def clamp_probs(probs):
    """Probabilities kept a machine epsilon away from 0 and 1 (so their logs stay finite)."""
    _, eps = tiny_and_eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    """Log-odds to probabilities: the sigmoid of one log-odds, or the softmax of a vector."""
    return nbgrad.sigmoid(logits) if is_binary else nbgrad.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    """Probabilities to log-odds: log p - log(1 - p) for one event, log p for a vector."""
    p = clamp_probs(probs)
    return nbgrad.log(p) - nbgrad.log1p(-p) if is_binary else nbgrad.log(p)


def sum_rightmost(x, dims):
    """x summed over its last `dims` dimensions (flattened into one, then summed)."""
    if dims == 0:
        return x
    return x.reshape(tuple(x.shape[: x.dim() - dims]) + (-1,)).sum(-1)


class lazy_property:
    """A value computed on first reading and then kept on the instance. It is computed with
    gradients on, so that a value first read under no_grad still carries its graph."""

    def __init__(self, compute):
        self.compute = compute
        self.__doc__ = compute.__doc__
        self.__name__ = compute.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with nbgrad.enable_grad():
            value = self.compute(instance)
        instance.__dict__[self.__name__] = value
        return value
