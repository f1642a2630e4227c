"""``scatter_reduce`` and ``index_reduce`` (functions, methods and in-place methods): PyTorch's
checks and messages, then one table entry each (``nbgrad/ops/scatter_reduce_kernels.py``)."""

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.scatter import _scatter_args
from nbgrad.ops.public import public
from nbgrad.ops.scatter_reduce_kernels import REDUCTIONS
from nbgrad.warn_once import warn_once

# ATen still takes the names scatter's reduce= had before amax and amin.
_LEGACY_NAMES = {"max": "amax", "min": "amin"}


def _scatter_reduce(input, dim, index, src, reduce, include_self, inplace):  # noqa: A002
    reduce = _LEGACY_NAMES.get(reduce, reduce)
    if reduce not in REDUCTIONS:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    wrapped = wrap_dim(dim, input.dim())
    array = _scatter_args(input, wrapped, index, src)
    attrs = (wrapped, array, reduce, bool(include_self))
    if inplace:
        return run_inplace(OPS["scatter_reduce"], input, (src,), attrs)
    return run_op(OPS["scatter_reduce"], (input, src), attrs)


@public(function=True, method=True)
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    return _scatter_reduce(input, dim, index, src, reduce, include_self, False)


@public(method=True)
def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    return _scatter_reduce(input, dim, index, src, reduce, include_self, True)


def _index_reduce(input, dim, index, source, reduce, include_self, inplace):  # noqa: A002
    warn_once("index_reduce() is in beta and the API may change at any time.", stacklevel=3)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    wrapped = wrap_dim(dim, input.dim())
    if index.dim() > 1:
        raise IndexError(
            f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} "
            f"with type: {dtypes.SCALAR_TYPE_NAMES[index._dtype]} and size: "
            f"{list(index.shape)}"
        )
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(
            "index_reduce_(): Expected dtype int32/int64 for index but got: "
            f"{dtypes.SCALAR_TYPE_NAMES[index._dtype]}"
        )
    if source._dtype is not input._dtype:
        raise RuntimeError(
            f"index_reduce_(): self ({dtypes.SCALAR_TYPE_NAMES[input._dtype]}) and source "
            f"({dtypes.SCALAR_TYPE_NAMES[source._dtype]}) must have the same scalar type"
        )
    count = source.shape[wrapped] if source.dim() else 1
    if index.numel() != count:
        raise RuntimeError(
            f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim): ({count}), for dim: {wrapped}"
        )
    size = input.shape[wrapped] if input.dim() else 1
    array = index._data.reshape(-1).astype("int64")
    if ((array < -size) | (array >= size)).any():
        raise IndexError("index out of range in self")
    attrs = (wrapped, array % size if size else array, reduce, bool(include_self))
    if inplace:
        return run_inplace(OPS["index_reduce"], input, (source,), attrs)
    return run_op(OPS["index_reduce"], (input, source), attrs)


@public(function=True, method=True)
def index_reduce(input, dim, index, source, reduce, *, include_self=True):  # noqa: A002
    return _index_reduce(input, dim, index, source, reduce, include_self, False)


@public(method=True)
def index_reduce_(input, dim, index, source, reduce, *, include_self=True):  # noqa: A002
    return _index_reduce(input, dim, index, source, reduce, include_self, True)
