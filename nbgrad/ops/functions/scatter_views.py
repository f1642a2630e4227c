"""``slice_scatter``, ``select_scatter``, ``diagonal_scatter`` (a tensor with one view's place
replaced), ``narrow_copy``, ``unsafe_split_with_sizes`` and ``torch._safe_softmax``."""

from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _check_tensor
from nbgrad.ops.public import public
from nbgrad.ops.special_kernels import select_key, slice_key


def _check_src(src, expected_shape):
    if tuple(src.shape) != tuple(expected_shape):
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"[{', '.join(map(str, src.shape))}], slice size = "
            f"[{', '.join(map(str, expected_shape))}]"
        )


@public(function=True, method=True)
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    _check_tensor(input)
    wrapped = wrap_dim(dim, input.dim())
    _check_src(src, input._data[slice_key(input.dim(), wrapped, start, end, step)].shape)
    return run_op(OPS["slice_scatter"], (input, src), (dim, start, end, step))


@public(function=True, method=True)
def select_scatter(input, src, dim, index):  # noqa: A002
    _check_tensor(input)
    wrapped = wrap_dim(dim, input.dim())
    size = input._data.shape[wrapped]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size "
            f"[{', '.join(map(str, input.shape))}] at dimension {wrapped}"
        )
    _check_src(src, input._data[select_key(input.dim(), wrapped, index)].shape)
    return run_op(OPS["select_scatter"], (input, src), (dim, index))


@public(function=True, method=True)
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    _check_tensor(input)
    _check_src(src, input._data.diagonal(offset, dim1, dim2).shape)
    return run_op(OPS["diagonal_scatter"], (input, src), (offset, dim1, dim2))


@public(function=True, method=True)
def narrow_copy(input, dim, start, length):  # noqa: A002
    from nbgrad.ops.functions.shapes import narrow

    narrow(input.detach(), dim, start, length)  # PyTorch's checks and messages
    return run_op(OPS["narrow_copy"], (input,), (dim, start, length))  # saved as given


@public(function=True, method=True)
def unsafe_split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    wrapped = wrap_dim(dim, input.dim())
    size = input._data.shape[wrapped]
    if sum(split_sizes) != size:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size "
            f"at dimension {dim}), but got split_sizes=[{', '.join(map(str, split_sizes))}]"
        )
    return tuple(run_op(OPS["unsafe_split_with_sizes"], (input,), (tuple(split_sizes), dim)))


@public(function=True)
def _safe_softmax(input, dim, dtype=None):  # noqa: A002
    if dtype is not None:
        input = input.to(dtype)
    return run_op(OPS["safe_softmax"], (input,), (dim,))


def _put_args(input, index, source, name="put_"):  # noqa: A002
    from nbgrad.autograd.tensor import Tensor

    if not isinstance(index, Tensor) or index.dtype.is_floating_point:
        raise IndexError(
            "put_(): Expected a long tensor for index, but got "
            f"{getattr(index, 'dtype', type(index).__name__)}"
        )
    if index.numel() != source.numel():
        raise IndexError(
            "put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    numel = input.numel()
    flat = index._data.reshape(-1)
    bad = flat[(flat >= numel) | (flat < -numel)]
    if bad.size:
        raise IndexError(
            f"out of range: tried to access index {int(bad[0])} on a tensor of {numel} elements."
        )
    return index._data  # saved as given: NumPy counts negative ones from the end too


@public(function=True, method=True)
def put(input, index, source, accumulate=False):  # noqa: A002
    positions = _put_args(input, index, source)
    return run_op(OPS["put"], (input, source), (positions, accumulate))


@public(method=True)
def put_(input, index, source, accumulate=False):  # noqa: A002
    from nbgrad.autograd.dispatch import run_inplace

    positions = _put_args(input, index, source)
    return run_inplace(OPS["put"], input, (source,), (positions, accumulate))
