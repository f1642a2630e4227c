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
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor, _wrap_dim
from nbgrad.ops.derivatives import OPS
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


def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


def matrix_power(A, n):
    """PyTorch's order: a clone for 1, then squares of A times the result, bit by bit."""
    from nbgrad.ops.functions.linalg_decompositions import inv

    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            "linalg.matrix_power: A must be batches of square matrices, but they are "
            f"{A.shape[-2] if A.dim() >= 2 else A.shape[-1]} by {A.shape[-1]} matrices"
        )
    if n == 0:
        eye = np.broadcast_to(np.eye(A.shape[-1], dtype=A._data.dtype), tuple(A.shape))
        return A.clone().copy_(_make(np.array(eye)))
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return A.clone()
    if n == 2:
        return A @ A
    if n == 3:
        return (A @ A) @ A
    square = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        square = A if square is None else square @ square
        if bit:
            result = square if result is None else result @ square
    return result


def multi_dot(tensors):
    """``mm`` along the chain in the order that costs fewest multiplications (on ties, the
    latest split: ``(A @ B) @ C`` for three equal squares, as PyTorch), then viewed to the shape
    the 1-d ends ask for."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_is_vector, last_is_vector = tensors[0].dim() == 1, tensors[-1].dim() == 1
    if first_is_vector:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_is_vector:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    sizes = [t.shape[0] for t in tensors] + [tensors[-1].shape[1]]
    count = len(tensors)
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1]
                if cost[i][j] is None or c <= cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return tensors[i]
        k = split[i][j]
        return product(i, k).mm(product(k + 1, j))

    result = product(0, count - 1)
    shape = [sizes[0], sizes[-1]]
    if last_is_vector:
        shape.pop()
    if first_is_vector:
        shape.pop(0)
    return result.view(shape)


@public(function=True, method=True)
def count_nonzero(input, dim=None):  # noqa: A002
    if dim is None:
        return _make(np.asarray(np.count_nonzero(input._data), dtype=np.int64))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    axis = tuple(_wrap_dim(d, input.dim()) for d in dims)
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
    if sorter is not None:
        raise NotImplementedError("nbgrad.searchsorted does not take sorter")
    side = side or ("right" if right else "left")
    values = input._data if isinstance(input, Tensor) else np.asarray(input)
    boundaries = sorted_sequence._data
    if boundaries.ndim == 1:
        found = np.searchsorted(boundaries, values, side=side)
    else:
        rows = boundaries.reshape(-1, boundaries.shape[-1])
        wanted = values.reshape(rows.shape[0], -1)
        found = np.stack([np.searchsorted(r, w, side=side) for r, w in zip(rows, wanted)])
        found = found.reshape(values.shape)
    dtype = np.int32 if out_int32 else np.int64
    return _make(np.asarray(found, dtype=dtype))


@public(function=True)
def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    # bucketize's right=False is searchsorted's side="left" (both: boundaries[i-1] < x <= b[i])
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@public(function=True, method=True, out=True)
def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    from nbgrad.ops.functions.reductions import _dims

    if dtype is not None and dtype is not input._dtype:
        # (PyTorch converts inside its one node; a .to() here would add ToCopyBackward0)
        raise NotImplementedError("nbgrad.nansum takes no dtype other than the input's")
    if not input._dtype.is_floating_point:  # no NaN among integers: an ordinary sum
        from nbgrad.ops.functions.reductions import sum as integer_sum

        return integer_sum(input, dim, keepdim)
    dims = None if dim is None else _dims(dim, input.dim())
    return run_op(OPS["nansum"], (input,), (dims, keepdim))


@public(function=True, method=True, out=True)
def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """PyTorch's decomposition: the nansum divided by the count of numbers (an int64 tensor)."""
    if not input._dtype.is_floating_point:
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{dtypes.LEGACY_TYPE_NAMES[input._dtype][:-6]}"
        )
    count = count_nonzero(_make(~np.isnan(input._data)), dim)
    if keepdim and dim is not None:
        count = count.reshape(nansum(input, dim, True).shape)
    return nansum(input, dim, keepdim, dtype=dtype) / count
