"""``torch.add(a, b, out=c)``: the ``out=`` form of the module functions, writing the result
into an existing tensor (resized if its shape differs, as PyTorch does)."""

import functools

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd import errors, grad_mode
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.storage_geometry import partially_overlaps


def with_out(function):
    """``function`` that also accepts ``out=``; PyTorch records no graph through it."""

    @functools.wraps(function)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return function(*args, **kwargs)
        if grad_mode._enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args):
            raise RuntimeError(
                f"{function.__name__}(): functions with out=... arguments don't support "
                "automatic differentiation, but one of the arguments requires grad."
            )
        for arg in args:
            if isinstance(arg, Tensor) and partially_overlaps(out._data, arg._data):
                raise RuntimeError(errors.PARTIAL_OVERLAP)
        result = function(*args, **kwargs)
        if not np.can_cast(result._data.dtype, out._data.dtype, casting="same_kind"):
            raise RuntimeError(
                f"result type {dtypes.name_of(result._data.dtype)} can't be cast to the desired "
                f"output type {dtypes.name_of(out._data.dtype)}"
            )
        if out._data.shape == result._data.shape:
            np.copyto(out._data, result._data, casting="unsafe")
        else:
            out._data = result._data.astype(out._data.dtype)
        out._version_counter.value += 1
        return out

    return wrapper
