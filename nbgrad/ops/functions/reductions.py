"""Reductions: ``sum``, ``mean``, ``max``/``min`` (with indices), ``amax``/``amin``."""

import collections

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.arithmetic import maximum, minimum
from nbgrad.ops.public import public


def _dims(dim, ndim):
    """PyTorch accepts an int, a tuple or a list of dims; the node saves them as a tuple."""
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    seen = set()
    for d in dims:
        wrapped = wrap_dim(d, ndim)
        if wrapped in seen:
            raise RuntimeError(f"dim {wrapped} appears multiple times in the list of dims")
        seen.add(wrapped)
    return dims


@public(function=True, method=True, out=True)
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001, A002
    accumulated = accumulation_dtype(input, dtype)
    if dim is None:
        return run_op(OPS["sum"], (input,), (accumulated,))
    return run_op(OPS["sum_dim"], (input,), (_dims(dim, input.dim()), keepdim, accumulated))


def accumulation_dtype(input, dtype):  # noqa: A002
    """The NumPy dtype sum and prod accumulate in: the one asked for, else int64 for bool and
    integer tensors (as PyTorch), else None (the input's own)."""
    if dtype is not None:
        return dtypes.to_dtype(dtype).numpy
    return None if input._dtype.is_floating_point else np.int64


@public(function=True, method=True, out=True)
def mean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    output = input._dtype if dtype is None else dtypes.to_dtype(dtype)
    if not output.is_floating_point:
        raise RuntimeError(
            f"mean(): could not infer output dtype. {'Input' if dtype is None else 'Optional'} "
            "dtype must be either a floating point or complex dtype. Got: "
            f"{dtypes.SCALAR_TYPE_NAMES[output]}"
        )
    accumulated = None if dtype is None else output.numpy
    if dim is None:
        return run_op(OPS["mean"], (input,), (accumulated,))
    return run_op(OPS["mean_dim"], (input,), (_dims(dim, input.dim()), keepdim, accumulated))


MaxResult = collections.namedtuple("max", ["values", "indices"])


MinResult = collections.namedtuple("min", ["values", "indices"])


@public(function=True, method=True)
def max(input, dim=None, keepdim=False):  # noqa: A001, A002
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        _check_not_empty(input, "max")
        return run_op(OPS["max"], (input,))
    _check_reduced_sizes(input, "max", (dim,))
    values, indices = run_op(OPS["max_dim"], (input,), (wrap_dim(dim, input.dim()), keepdim))
    return MaxResult(values, indices)


@public(function=True, method=True)
def min(input, dim=None, keepdim=False):  # noqa: A001, A002
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        _check_not_empty(input, "min")
        return run_op(OPS["min"], (input,))
    _check_reduced_sizes(input, "min", (dim,))
    values, indices = run_op(OPS["min_dim"], (input,), (wrap_dim(dim, input.dim()), keepdim))
    return MinResult(values, indices)


def _check_not_empty(input, name):  # noqa: A002
    if input._data.size == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
            "the reduction dim with the 'dim' argument."
        )


def _check_reduced_sizes(input, name, dims, wrapped=True):  # noqa: A002
    """Max-like reductions of an empty tensor: PyTorch refuses to reduce a dim of size 0, naming
    it wrapped (max, argmax) or as given (amax, amin)."""
    if input._data.size:
        return
    if not dims:
        _check_not_empty(input, name)
    for d in dims:
        wrapped_dim = wrap_dim(d, input.dim())
        if input._data.shape[wrapped_dim] == 0:
            shown = wrapped_dim if wrapped else d
            raise IndexError(f"{name}(): Expected reduction dim {shown} to have non-zero size.")


@public(function=True, method=True)
def amax(input, dim=(), keepdim=False):  # noqa: A002
    dims = _dims(dim, input.dim())
    _check_reduced_sizes(input, "amax", dims, wrapped=False)
    return run_op(OPS["amax"], (input,), (dims, keepdim))


@public(function=True, method=True)
def amin(input, dim=(), keepdim=False):  # noqa: A002
    dims = _dims(dim, input.dim())
    _check_reduced_sizes(input, "amin", dims, wrapped=False)
    return run_op(OPS["amin"], (input,), (dims, keepdim))


@public(function=True, method=True)
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    """``x.norm()``: a vector norm of any order (Frobenius: 2) over ``dim`` or all elements."""
    if dtype is not None:
        input = input.to(dtype)
    if p == "nuc":
        raise NotImplementedError("nbgrad has no nuclear norm (it needs a differentiable SVD)")
    if isinstance(p, str) and p != "fro":
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return vector_norm(input, 2 if p == "fro" or p is None else p, dim, keepdim)


def vector_norm(input, ord=2, dim=None, keepdim=False):  # noqa: A002
    if not isinstance(ord, (int, float)) or isinstance(ord, bool):
        raise TypeError(
            "linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
            + type(ord).__name__
        )
    if not input._dtype.is_floating_point:
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{dtypes.LEGACY_TYPE_NAMES[input._dtype][:-6]}"
        )
    dims = None if dim is None else _dims(dim, input.dim())
    if (ord < 0 or ord == float("inf")) and input._data.size == 0:
        if dims is None:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because "
                "the operation does not have an identity"
            )
        for d in dims:
            if input.dim() and input._data.shape[d] == 0:
                raise RuntimeError(  # PyTorch's message lacks the space before "because"
                    f"linalg.vector_norm cannot compute the {ord} norm on the dimension {d}"
                    "because this dimension is empty and the operation does not have an identity"
                )
    entry = "linalg_vector_norm" if ord in (1, 2) else "linalg_vector_norm_ord"
    return run_op(OPS[entry], (input,), (ord, dims, keepdim))
