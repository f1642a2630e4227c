"""Writes at indices: ``scatter``, ``scatter_add``, ``index_add``, ``index_fill``, ``index_copy``,
and their in-place methods (``x.scatter_(...)``), as PyTorch records them."""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op, write_without_derivative
from nbgrad.autograd.node import not_implemented_history
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _listed, _number
from nbgrad.ops.public import public
from nbgrad.warn_once import warn_once


def _scatter_args(input, dim, index, src):  # noqa: A002
    """The index as an int64 array, after PyTorch's checks (whose messages say "scatter()" for
    every op of the family, in place or not)."""
    dim_ = wrap_dim(dim, input.dim())
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if index.dim() != input.dim() and index.numel():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and src._dtype is not input._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    for d, (i, s) in enumerate(zip(index._data.shape, input._data.shape)):
        if d != dim_ and i > s:
            raise RuntimeError(
                f"Expected index {list(index.shape)} to be no larger than self "
                f"{list(input.shape)} apart from dimension {dim_}"
                + (
                    f" and to be no larger size than src {list(src.shape)}"
                    if isinstance(src, Tensor)
                    else ""
                )
            )
    size = input._data.shape[dim_] if input.dim() else 1
    bad = index._data[(index._data < -size) | (index._data >= size)]
    if bad.size:
        raise RuntimeError(
            f"index {bad.flat[0]} is out of bounds for dimension {dim_} with size {size}"
        )
    return index._data.astype("int64")


def _scatter(input, dim, index, src, reduce, inplace):  # noqa: A002
    if reduce is not None:
        return _scatter_reducing(input, dim, index, src, reduce, inplace)
    run = (
        (lambda spec, others, attrs: run_inplace(spec, input, others, attrs))
        if inplace
        else (lambda spec, others, attrs: run_op(spec, (input, *others), attrs))
    )
    if isinstance(src, Tensor):
        array = _scatter_args(input, dim, index, src)
        return run(OPS["scatter"], (src,), (dim, array))
    array = _scatter_args(input, dim, index, None)
    return run(OPS["scatter_value"], (), (dim, array, _number(src)))


def _scatter_reducing(input, dim, index, src, reduce, inplace):  # noqa: A002
    """``scatter(..., reduce="add" | "multiply")``, an older form of ``scatter_reduce``: each
    source value is added to (multiplied into) the element it is sent to. PyTorch has no
    derivative for it: its result's grad_fn is NotImplemented."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    name = "scatter_" if inplace else "scatter"
    if isinstance(src, Tensor):
        warn_once(
            "The reduce argument of torch.scatter with Tensor src is deprecated and will be "
            "removed in a future PyTorch release. Use torch.scatter_reduce instead for more "
            "reduction options.",
            stacklevel=4,
        )
        positions = _scatter_args(input, dim, index, src)
        values = src._data[tuple(slice(0, n) for n in positions.shape)]
    else:
        positions = _scatter_args(input, dim, index, None)
        values = np.asarray(_number(src)).astype(input._data.dtype)
    result = input._data.copy()
    if input.dim() == 0:  # one element, along a dim of size 1
        result, positions, values = result.reshape(1), positions.reshape(-1), np.ravel(values)
    # Where each source element goes: its own position, with the index along ``dim``
    destination = list(np.indices(positions.shape))
    destination[wrap_dim(dim, max(input.dim(), 1))] = positions
    (np.add if reduce == "add" else np.multiply).at(result, tuple(destination), values)
    result = result.reshape(input._data.shape)
    if inplace:
        return write_without_derivative(input, result, name, (src,))
    return not_implemented_history(Tensor._make(result), name, (input, src))


@public(function=True, method=True, out=True)
def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    return _scatter(input, dim, index, value if src is None else src, reduce, False)


@public(method=True)
def scatter_(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    return _scatter(input, dim, index, value if src is None else src, reduce, True)


def _scatter_add(input, dim, index, src, inplace):  # noqa: A002
    array = _scatter_args(input, dim, index, src)
    if inplace:
        return run_inplace(OPS["scatter_add"], input, (src,), (dim, array))
    return run_op(OPS["scatter_add"], (input, src), (dim, array))


@public(function=True, method=True, out=True)
def scatter_add(input, dim, index, src):  # noqa: A002
    return _scatter_add(input, dim, index, src, False)


@public(method=True)
def scatter_add_(input, dim, index, src):  # noqa: A002
    return _scatter_add(input, dim, index, src, True)


def _index_args(name, input, dim, index, source=None):  # noqa: A002
    """PyTorch's checks of index_add / index_fill / index_copy, each with its own messages."""
    wrapped = wrap_dim(dim, input.dim())
    if index.dim() > 1:
        if name == "index_add":
            raise IndexError(
                f"index_add_(): Index is supposed to be a vector, but got dim: {index.dim()} with "
                f"type: {dtypes.LEGACY_TYPE_NAMES[index._dtype][:-6]} and size: "
                f"{list(index.shape)}"
            )
        if name == "index_copy":
            raise IndexError(
                f"index_copy_(): Index should have dimension 1 or 0 (got {index.dim()})"
            )
        raise RuntimeError("Index has to be a vector/scalar")
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"{name}_(): Expected dtype int32/int64 for index")
    size = input._data.shape[wrapped] if input.dim() else 1
    if source is not None and input.dim():
        rest = [s for d, s in enumerate(input._data.shape) if d != wrapped]
        source_rest = [s for d, s in enumerate(source._data.shape) if d != wrapped]
        if source.dim() and rest != source_rest:
            if name == "index_add":
                raise RuntimeError(
                    "source tensor shape must match self tensor shape, excluding the specified "
                    f"dimension. Got self.shape = {list(input.shape)} source.shape = "
                    f"{list(source.shape)}"
                )
            raise RuntimeError(
                "index_copy_(): Source/destination tensor must have same slice shapes. "
                f"Destination slice shape: {_listed(rest)} at dimension {wrapped} and source "
                f"slice shape: {_listed(source_rest)} at dimension {wrapped}."
            )
    bad = index._data[(index._data < -size) | (index._data >= size)]
    if bad.size:
        message = f"index {bad.flat[0]} is out of bounds for dimension {wrapped} with size {size}"
        if name == "index_add":
            raise RuntimeError(message)
        raise IndexError(("index_copy_(): " if name == "index_copy" else "") + message)
    return index._data.reshape(-1).astype("int64")


def _index_add(input, dim, index, source, alpha, inplace):  # noqa: A002
    array = _index_args("index_add", input, dim, index, source)
    attrs = (dim, array, alpha, source.dim())
    if inplace:
        return run_inplace(OPS["index_add"], input, (source,), attrs)
    return run_op(OPS["index_add"], (input, source), attrs)


@public(function=True, method=True, out=True)
def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    return _index_add(input, dim, index, source, alpha, False)


@public(method=True)
def index_add_(input, dim, index, source, *, alpha=1):  # noqa: A002
    return _index_add(input, dim, index, source, alpha, True)


def _index_fill(input, dim, index, value, inplace):  # noqa: A002
    if isinstance(value, Tensor):
        if value.dim():
            raise RuntimeError(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.dim()} dimension(s)."
            )
        # a tensor value is its own input (IndexFillBackward1), whether or not it needs grad
        array = _index_args("index_fill", input, dim, index)
        if inplace:
            return run_inplace(OPS["index_fill_tensor"], input, (value,), (dim, array))
        return run_op(OPS["index_fill_tensor"], (input, value), (dim, array))
    array = _index_args("index_fill", input, dim, index)
    if inplace:
        return run_inplace(OPS["index_fill"], input, (), (dim, array, value))
    return run_op(OPS["index_fill"], (input,), (dim, array, value))


@public(function=True, method=True)
def index_fill(input, dim, index, value):  # noqa: A002
    return _index_fill(input, dim, index, value, False)


@public(method=True)
def index_fill_(input, dim, index, value):  # noqa: A002
    return _index_fill(input, dim, index, value, True)


def _index_copy(input, dim, index, source, inplace):  # noqa: A002
    array = _index_args("index_copy", input, dim, index, source)
    attrs = (dim, array, source.dim())
    if inplace:
        return run_inplace(OPS["index_copy"], input, (source,), attrs)
    return run_op(OPS["index_copy"], (input, source), attrs)


@public(function=True, method=True, out=True)
def index_copy(input, dim, index, source):  # noqa: A002
    return _index_copy(input, dim, index, source, False)


@public(method=True)
def index_copy_(input, dim, index, source):  # noqa: A002
    return _index_copy(input, dim, index, source, True)
