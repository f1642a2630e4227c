"""Everyday calls that scripts/everyday_agreement.py found missing, each built from ops nbgrad
has, the way PyTorch builds it (so the graph shows PyTorch's nodes):

* ``x.where(condition, y)``: the method form of ``torch.where(condition, x, y)``;
* ``torch.true_divide``: PyTorch's alias of ``div``;
* ``torch.broadcast_to``: an ``expand`` (ExpandBackward0, even to the same shape);
  ``torch.broadcast_tensors``: an ``expand`` of each tensor not of the broadcast shape already;
* ``torch.inner``: ``tensordot`` over the last dims (a product for a 0-d operand);
* ``torch.linalg.vecdot``: ``(x * y).sum(dim)``;
* ``torch.linalg.matrix_power``: products by binary decomposition of the exponent;
* ``torch.linalg.multi_dot``: the chain of ``mm`` in the cheapest order, viewed to the result's
  shape;
* ``torch.nansum`` (NansumBackward0) and ``torch.nanmean`` (the nansum divided by the count of
  numbers, DivBackward0);
* ``torch.count_nonzero``, ``torch.nonzero``, ``torch.argwhere``, ``torch.searchsorted``,
  ``torch.bucketize``: integer results, no graph.
"""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.functions import arithmetic
from nbgrad.ops.functions._common import _make
from nbgrad.ops.public import declare, public


def _where_method(input, condition, y):  # noqa: A002
    return arithmetic.where(condition, input, y)


declare(_where_method, "where", as_method=True)
declare(arithmetic.div, "true_divide", as_function=True, as_method=True)


@public(function=True, method=True)
def broadcast_to(input, size):  # noqa: A002
    return input.expand(tuple(size))


@public(function=True)
def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    # (a tensor of the broadcast shape already is returned itself)
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in tensors)


@public(function=True, method=True)
def inner(input, other):  # noqa: A002
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    from nbgrad.ops.functions import tensordot

    return tensordot(input, other, dims=([input.dim() - 1], [other.dim() - 1]))


@public(function=True, method=True)
def count_nonzero(input, dim=None):  # noqa: A002
    if dim is None:
        return _make(np.asarray(np.count_nonzero(input._data), dtype=np.int64))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    axis = tuple(wrap_dim(d, input.dim()) for d in dims)
    return _make(np.asarray(np.count_nonzero(input._data, axis=axis), dtype=np.int64))


@public(function=True, method=True)
def nonzero(input, *, as_tuple=False):  # noqa: A002
    found = np.nonzero(input._data) if input.dim() else np.nonzero(input._data.reshape(1))
    if as_tuple:
        return tuple(_make(np.asarray(i, dtype=np.int64)) for i in found)
    columns = [np.asarray(i, dtype=np.int64) for i in found]
    if input.dim() == 0:
        return _make(np.zeros((len(columns[0]), 0), dtype=np.int64))
    return _make(np.stack(columns, axis=1).reshape(-1, input.dim()))


@public(function=True, method=True)
def argwhere(input):  # noqa: A002
    return nonzero(input)


@public(function=True)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):  # noqa: A002
    side = side or ("right" if right else "left")
    values = input._data if isinstance(input, Tensor) else np.asarray(input)
    boundaries = sorted_sequence._data
    if sorter is not None:
        boundaries = _sorted_by(boundaries, sorter)
    if boundaries.ndim == 1:
        found = np.searchsorted(boundaries, values, side=side)
    else:
        rows = boundaries.reshape(-1, boundaries.shape[-1])
        wanted = values.reshape(rows.shape[0], -1)
        found = np.stack([np.searchsorted(r, w, side=side) for r, w in zip(rows, wanted)])
        found = found.reshape(values.shape)
    dtype = np.int32 if out_int32 else np.int64
    return _make(np.asarray(found, dtype=dtype))


def _sorted_by(boundaries, sorter):
    """The boundaries in the order ``sorter`` (indices along the last dim) gives, after
    PyTorch's checks."""
    if sorter._dtype is not dtypes.int64:
        raise RuntimeError(
            "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
            f"{dtypes.SCALAR_TYPE_NAMES[sorter._dtype]}"
        )
    if sorter._data.shape != boundaries.shape:
        raise RuntimeError(  # PyTorch's message has no space before "and"
            "torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
            f"tensor {list(boundaries.shape)}and got sorter tensor {list(sorter._data.shape)}"
        )
    order = sorter._data
    if order.size and (order.min() < 0 or order.max() >= boundaries.shape[-1]):
        raise RuntimeError("torch.searchsorted(): sorter index out of range")
    return np.take_along_axis(boundaries, order, axis=-1)


@public(function=True)
def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    # bucketize's right=False is searchsorted's side="left" (both: boundaries[i-1] < x <= b[i])
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@public(function=True, method=True, out=True)
def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """PyTorch's decomposition: the nansum divided by the count of numbers (an int64 tensor)."""
    from nbgrad.ops.functions.reductions_special import nansum

    if not input._dtype.is_floating_point:
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{dtypes.LEGACY_TYPE_NAMES[input._dtype][:-6]}"
        )
    count = count_nonzero(_make(~np.isnan(input._data)), dim)
    if keepdim and dim is not None:
        count = count.reshape(nansum(input, dim, True).shape)
    return nansum(input, dim, keepdim, dtype=dtype) / count
