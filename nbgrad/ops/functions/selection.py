"""Values with the indices they came from (``sort``, ``topk``, ``kthvalue``, ``median``, ``mode``),
diagonals (``diagonal``, ``diag``, ``diag_embed``, ``Tensor.trace``) and ``take`` /
``take_along_dim``."""

import collections

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.reductions import _check_not_empty
from nbgrad.ops.functions.shapes import expand, gather, reshape
from nbgrad.ops.public import public

SortResult = collections.namedtuple("sort", ["values", "indices"])
TopkResult = collections.namedtuple("topk", ["values", "indices"])
KthvalueResult = collections.namedtuple("kthvalue", ["values", "indices"])
MedianResult = collections.namedtuple("median", ["values", "indices"])
ModeResult = collections.namedtuple("mode", ["values", "indices"])


@public(function=True, method=True)
def sort(input, dim=-1, descending=False, *, stable=None):  # noqa: A002
    if isinstance(dim, bool):  # torch.sort(x, stable=..., dim=..., descending=...) only
        raise TypeError("sort(): argument 'dim' must be int, not bool")
    wrap_dim(dim, input.dim())
    entry = "sort" if stable is None else "sort_stable"
    return SortResult(*run_op(OPS[entry], (input,), (dim, descending)))


@public(function=True, method=True)
def msort(input):  # noqa: A002
    return sort(input, 0).values


@public(function=True, method=True)
def argsort(input, dim=-1, descending=False, *, stable=False):  # noqa: A002
    from nbgrad.autograd.grad_mode import no_grad

    with no_grad():
        return sort(input, dim, descending).indices


@public(function=True, method=True)
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    wrap_dim(dim, input.dim())
    size = input._data.shape[dim] if input.dim() else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    return TopkResult(*run_op(OPS["topk"], (input,), (k, dim, largest, sorted)))


@public(function=True, method=True)
def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    wrapped = wrap_dim(dim, input.dim())
    size = input._data.shape[wrapped] if input.dim() else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {wrapped}")
    return KthvalueResult(*run_op(OPS["kthvalue"], (input,), (k, dim, keepdim)))


@public(function=True, method=True)
def median(input, dim=None, keepdim=False):  # noqa: A002
    if dim is None:
        return run_op(OPS["median"], (input,))
    wrapped = wrap_dim(dim, input.dim())
    if input.dim() and input._data.shape[wrapped] == 0:
        raise IndexError(f"median(): Expected reduction dim {wrapped} to have non-zero size.")
    return MedianResult(*run_op(OPS["median_dim"], (input,), (dim, keepdim)))


@public(function=True, method=True)
def mode(input, dim=-1, keepdim=False):  # noqa: A002
    wrap_dim(dim, input.dim())
    if input._data.size == 0:
        _check_not_empty(input, "mode")
    return ModeResult(*run_op(OPS["mode"], (input,), (dim, keepdim)))


def _diagonal_dims(ndim, dim1, dim2):
    wrapped1, wrapped2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if wrapped1 == wrapped2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return wrapped1, wrapped2


@public(function=True, method=True)
def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    _diagonal_dims(input.dim(), dim1, dim2)
    return run_op(OPS["diagonal"], (input,), (offset, dim1, dim2))


@public(function=True, method=True)
def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    _diagonal_dims(input.dim() + 1, dim1, dim2)
    return run_op(OPS["diag_embed"], (input,), (offset, dim1, dim2))


@public(function=True, method=True, out=True)
def diag(input, diagonal=0):  # noqa: A002
    if input.dim() == 1:
        return diag_embed(input, diagonal)
    if input.dim() != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    return run_op(OPS["diagonal_copy"], (input,), (diagonal, 0, 1))


# nbgrad.trace is also the package that records graphs: once imported, it takes this function's
# place in nbgrad, and calling it calls this (nbgrad/trace/__init__.py).
@public(function=True, method=True)
def trace(input):  # noqa: A002
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return run_op(OPS["trace"], (input,))


@public(function=True, method=True, out=True)
def take(input, index):  # noqa: A002
    if index._dtype is not dtypes.int64:
        raise RuntimeError(
            "take(): Expected a long tensor for index, but got "
            f"{dtypes.LEGACY_TYPE_NAMES[index._dtype][:-6]}"
        )
    flat = index._data
    numel = input._data.size
    bad = flat[(flat < -numel) | (flat >= numel)]
    if bad.size:
        raise IndexError(
            f"out of range: tried to access index {bad.flat[0]} on a tensor of {numel} elements."
        )
    return run_op(OPS["take"], (input,), (flat.copy(),))


@public(function=True, method=True, out=True)
def take_along_dim(input, indices, dim=None):  # noqa: A002
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    if input.dim() != indices.dim():
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {input.dim()} dimensions for input, and {indices.dim()} "
            "dimensions for indices"
        )
    dim = wrap_dim(dim, input.dim())
    input_sizes = list(input._data.shape)
    index_sizes = list(indices._data.shape)
    input_sizes[dim] = index_sizes[dim] = 1
    try:
        broadcast = list(np.broadcast_shapes(tuple(index_sizes), tuple(input_sizes)))
    except ValueError:
        from nbgrad.ops.functions._common import _shapes_error

        raise _shapes_error(tuple(input_sizes), tuple(index_sizes)) from None
    broadcast[dim] = indices._data.shape[dim]
    index = expand(indices, tuple(broadcast))
    broadcast[dim] = input._data.shape[dim]
    return gather(expand(input, tuple(broadcast)), dim, index)
