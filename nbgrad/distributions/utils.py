"""Helpers the distributions share (``torch.distributions.utils``), with PyTorch's op order so that
the graphs they build carry PyTorch's node names."""

import numbers

import numpy as np

import nbgrad
import nbgrad.nn.functional as F

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

# PyTorch counts Python numbers (bool included) and 0-d NumPy numbers as numbers.
_Number = (numbers.Number, np.number)


def _eps(dtype):
    """``torch.finfo(dtype).eps``: the gap between 1 and the next representable number."""
    return float(np.finfo(dtype.numpy).eps)


def _tiny(dtype):
    return float(np.finfo(dtype.numpy).tiny)


def _min_real(dtype):
    return float(np.finfo(dtype.numpy).min)


def broadcast_all(*values):
    """The parameters as tensors of one broadcast shape. Python numbers become tensors of the
    first tensor's dtype (or the default dtype); tensors of the right shape come back unchanged."""
    if not all(isinstance(v, (nbgrad.Tensor, *_Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of Number, torch.Tensor or objects "
            "implementing __torch_function__."
        )
    first_tensor = next((v for v in values if isinstance(v, nbgrad.Tensor)), None)
    dtype = nbgrad.get_default_dtype() if first_tensor is None else first_tensor.dtype
    tensors = [v if isinstance(v, nbgrad.Tensor) else nbgrad.tensor(v, dtype=dtype) for v in values]
    return nbgrad.broadcast_tensors(*tensors)


def _standard_normal(shape, dtype):
    return nbgrad.empty(shape, dtype=dtype).normal_()


def _sum_rightmost(value, dim):
    """Sum over the ``dim`` rightmost dimensions (PyTorch: a reshape then one sum)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return nbgrad.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Probabilities kept one machine epsilon away from 0 and 1, so that their logs are finite."""
    eps = _eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    clamped = clamp_probs(probs)
    if is_binary:
        return nbgrad.log(clamped) - nbgrad.log1p(-clamped)
    return nbgrad.log(clamped)


class lazy_property:  # noqa: N801 - PyTorch's name
    """A value computed on first read, then stored on the instance (``Categorical.probs`` from
    its logits). Computed with grad enabled, as PyTorch does, so that the stored tensor stays
    differentiable even when first read under ``no_grad`` (inside ``sample``)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__name__ = wrapped.__name__
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, owner=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with nbgrad.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):  # noqa: N801
    """What a lazy_property is when read on the class: also a ``property``, so that
    documentation tools and ``arg_constraints`` checks recognise it."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)
