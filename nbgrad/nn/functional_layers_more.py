"""Max unpooling and channel shuffle, as ``torch.nn.functional`` has them.

``max_unpool2d`` and ``max_unpool3d`` are table ops (MaxUnpool2DBackward0,
MaxUnpool3DBackward0); ``max_unpool1d`` is, as in PyTorch, ``max_unpool2d`` on the input with a
trailing dim of 1 (UnsqueezeBackward0, then SqueezeBackward1).
"""

import numbers

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops import functions as ops
from nbgrad.ops.derivatives import OPS

channel_shuffle = ops.channel_shuffle


def _ntuple(value, n):
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    return value * n if len(value) == 1 else value


def _shape_text(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def _unpool_output_size(input, kernel_size, stride, padding, output_size):  # noqa: A002
    """PyTorch's: the size pooling would have come from, or ``output_size`` if it is one of the
    sizes that pool to the input's."""
    dims = len(kernel_size)
    default = [
        (input.shape[-dims + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
        for d in range(dims)
    ]
    if output_size is None:
        sizes = default
    else:
        if isinstance(output_size, numbers.Integral):
            output_size = (output_size,)
        if len(output_size) == dims + 2:
            output_size = output_size[2:]
        if len(output_size) != dims:
            raise ValueError(
                f"output_size should be a sequence containing {dims} or {dims + 2} elements, but "
                f"it has a length of '{len(output_size)}'"
            )
        for d in range(dims):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(
                    f'invalid output_size "{output_size}" (dim {d} must be between {low} and '
                    f"{high})"
                )
        sizes = output_size
    for d in range(dims):
        if sizes[d] < 0:
            raise ValueError(
                "max_unpooling: output_size must contain non-negative spatial dimensions, but "
                f"got output_size[{d}]={sizes[d]}"
            )
    return [int(s) for s in sizes]


def _check_unpool(input, indices, output_size, dims):  # noqa: A002
    """ATen's checks, in its order."""
    if indices._dtype is not dtypes.int64:
        suffix = f" but got: {dtypes.SCALAR_TYPE_NAMES[indices._dtype]}" if dims == 2 else ""
        raise RuntimeError(f"elements in indices should be type int64{suffix}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            "Expected shape of indices to be same as that of the input tensor "
            f"({_shape_text(input.shape)}) but got indices tensor with shape: "
            f"{_shape_text(indices.shape)}"
        )
    if input.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Input to max_unpooling{dims}d should be a {dims + 1}d or {dims + 2}d Tensor, but "
            f"got a tensor with {input.dim()} dimensions."
        )
    for d in range(1, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(
                f"max_unpooling{dims}d_forward_out_cpu(): Expected input to have non-zero size "
                f"for non-batch dimensions, but got {_shape_text(input.shape)} with dimension "
                f"{d} being empty."
            )
    volume = int(np.prod(output_size, dtype=np.int64))
    values = indices._data
    bad = (values < 0) | (values >= volume)
    if bad.any():
        # PyTorch's threads race to name one of several invalid indices; here, the last one.
        last = int(values.reshape(-1)[np.flatnonzero(bad.reshape(-1))[-1]])
        raise RuntimeError(
            f"Found an invalid max index: {last} "
            f"(output volumes are of size {'x'.join(str(s) for s in output_size)})"
        )


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, dims):  # noqa: A002
    kernel_size = _ntuple(kernel_size, dims)
    stride = kernel_size if stride is None else _ntuple(stride, dims)
    padding = _ntuple(padding, dims)
    sizes = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return kernel_size, stride, padding, sizes


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of ``max_pool1d``: each value put back where its index says, zeros elsewhere."""
    _, _, _, sizes = _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)
    input, indices = ops.unsqueeze(input, -1), ops.unsqueeze(indices, -1)
    sizes = (*sizes, 1)
    _check_unpool(input, indices, sizes, 2)
    out = run_op(OPS["max_unpool2d"], (input,), (indices._data.copy(), sizes))
    return ops.squeeze(out, -1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of ``max_pool2d``: each value put back where its index says, zeros elsewhere."""
    _, _, _, sizes = _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)
    _check_unpool(input, indices, sizes, 2)
    return run_op(OPS["max_unpool2d"], (input,), (indices._data.copy(), tuple(sizes)))


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of ``max_pool3d``: each value put back where its index says, zeros elsewhere."""
    _, stride, padding, sizes = _max_unpool(
        input, indices, kernel_size, stride, padding, output_size, 3
    )
    _check_unpool(input, indices, sizes, 3)
    attrs = (indices._data.copy(), tuple(sizes), tuple(stride), tuple(padding))
    return run_op(OPS["max_unpool3d"], (input,), attrs)
