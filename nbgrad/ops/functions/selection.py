"""Values with the indices they came from (``sort``, ``topk``, ``kthvalue``, ``median``, ``mode``),
diagonals (``diagonal``, ``diag``, ``diag_embed``, ``Tensor.trace``) and ``take`` /
``take_along_dim``."""

import collections

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd import errors, grad_mode
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.overloads import Overload, Param
from nbgrad.ops.functions.overloads import parse as parse_arguments
from nbgrad.ops.functions.reductions import _check_not_empty
from nbgrad.ops.functions.shapes import expand, gather, reshape
from nbgrad.ops.public import declare, public
from nbgrad.ops.storage_geometry import partially_overlaps

SortResult = collections.namedtuple("sort", ["values", "indices"])
SortOutResult = collections.namedtuple("sort_out", ["values", "indices"])
TopkResult = collections.namedtuple("topk", ["values", "indices"])
KthvalueResult = collections.namedtuple("kthvalue", ["values", "indices"])
MedianResult = collections.namedtuple("median", ["values", "indices"])
ModeResult = collections.namedtuple("mode", ["values", "indices"])


def _sort_overloads(name, tensor_param, out_param):
    """PyTorch's two overloads of sort/argsort (``stable`` keyword-only makes the first), as
    functions (with ``input`` and ``out``) or as methods (``tensor_param`` None)."""
    first = [tensor_param] if tensor_param else []
    dim = Param("int", "dim", "-1", numpy_name="axis")
    # sort's stable is ``bool?`` (None allowed), argsort's a plain bool
    stable = Param("bool", "stable", allow_none=name == "sort")
    stable_form = [*first, "*", stable, dim, Param("bool", "descending", "False")]
    plain_form = [*first, Param("int", "dim", "-1", numpy_name="axis")]
    plain_form.append(Param("bool", "descending", "False"))
    if out_param is not None:
        stable_form.append(out_param)
        if name == "sort":  # argsort's plain overload has no out=
            plain_form += ["*", Param(out_param.type_name, "out", "None")]
    return [Overload(name, *stable_form), Overload(name, *plain_form)]


_SORT = _sort_overloads("sort", Param("Tensor", "input"), Param("tuple of Tensors", "out", "None"))
_SORT_METHOD = _sort_overloads("sort", None, None)
_ARGSORT = _sort_overloads("argsort", Param("Tensor", "input"), Param("Tensor", "out", "None"))
_ARGSORT_METHOD = _sort_overloads("argsort", None, None)


@public(function=True)
def sort(*args, **kwargs):
    """``torch.sort``: its overloads parsed as PyTorch parses them (see overloads.py)."""
    overload, given = parse_arguments(_SORT, args, kwargs)
    return _sorted(given["input"], given, overload == 0)


def sort_method(self, *args, **kwargs):
    """``Tensor.sort``."""
    overload, given = parse_arguments(_SORT_METHOD, args, kwargs)
    return _sorted(self, given, overload == 0)


declare(sort_method, "sort", as_method=True)


def _sorted(input, given, stable_form):  # noqa: A002
    dim = -1 if given["dim"] is None else int(given["dim"])
    descending = bool(given["descending"])
    wrap_dim(dim, input.dim())
    # The stable overload records SortBackward1, whatever ``stable`` says (None too).
    entry = "sort_stable" if stable_form else "sort"
    out = given.get("out")
    if out is None:
        return SortResult(*run_op(OPS[entry], (input,), (dim, descending)))
    if len(out) != 2:
        raise TypeError(f"expected tuple of 2 elements but got {len(out)}")
    _check_out_allowed("sort", input, out)
    values, indices = run_op(OPS[entry], (input,), (dim, descending))
    return SortOutResult(_written(values, out[0]), _written(indices, out[1]))


def _check_out_allowed(name, input, outs):  # noqa: A002
    if grad_mode._enabled and input._requires_grad:
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    for out in outs:
        if partially_overlaps(out._data, input._data):
            raise RuntimeError(errors.PARTIAL_OVERLAP)


def _written(result, out):
    """``result`` written into ``out`` (resized when its shape differs), as PyTorch's sort does:
    it wants ``out`` of the result's own dtype."""
    if out._dtype is not result._dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {dtypes.CPP_TYPE_NAMES[result._dtype]}, but got "
            f"{dtypes.CPP_TYPE_NAMES[out._dtype]} instead"
        )
    if out._data.shape == result._data.shape:
        np.copyto(out._data, result._data)
    else:
        out._data = result._data.copy()
    out._version_counter.value += 1
    return out


@public(function=True, method=True)
def msort(input):  # noqa: A002
    return sort(input, 0).values


@public(function=True)
def argsort(*args, **kwargs):
    """``torch.argsort``: the indices of ``torch.sort``, without a graph."""
    overload, given = parse_arguments(_ARGSORT, args, kwargs)
    return _argsorted(given["input"], given, overload == 0)


def argsort_method(self, *args, **kwargs):
    """``Tensor.argsort``."""
    overload, given = parse_arguments(_ARGSORT_METHOD, args, kwargs)
    return _argsorted(self, given, overload == 0)


declare(argsort_method, "argsort", as_method=True)


def _argsorted(input, given, stable_form):  # noqa: A002
    from nbgrad.autograd.grad_mode import no_grad

    out = given.get("out")
    if out is not None:
        _check_out_allowed("sort", input, [out])  # (PyTorch's argsort runs sort: its name)
        given = {**given, "out": None}
        with no_grad():
            indices = _sorted(input, given, stable_form).indices
        return _written(indices, out)
    with no_grad():
        return _sorted(input, given, stable_form).indices


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
