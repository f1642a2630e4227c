"""``Tensor.unfold``, ``pixel_shuffle`` / ``pixel_unshuffle`` and ``masked_scatter``: argument
checks with PyTorch's messages, then one table entry each."""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import _wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.public import public


@public(method=True)
def unfold(input, dimension, size, step):  # noqa: A002
    ndim = input.dim()
    dim = _wrap_dim(dimension, max(ndim, 1))
    length = input.shape[dim] if ndim else 1
    if size > length:
        raise RuntimeError(
            f"maximum size for tensor at dimension {dim} is {length} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return run_op(OPS["unfold"], (input,), (dimension, size, step))


def _check_pixel(input, factor, name, factor_name):
    if input.dim() < 3:
        raise RuntimeError(
            f"{name} expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {factor_name}, but got {factor}")


@public(function=True)
def pixel_shuffle(input, upscale_factor):  # noqa: A002
    _check_pixel(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    c = input.shape[-3]
    if c % (upscale_factor * upscale_factor):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by "
            f"{upscale_factor * upscale_factor}"
        )
    return run_op(OPS["pixel_shuffle"], (input,), (int(upscale_factor),))


@public(function=True)
def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    _check_pixel(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    for offset, name in ((-2, "height"), (-1, "width")):
        size = input.shape[offset]
        if size % downscale_factor:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({offset})={size} is not divisible by {downscale_factor}"
            )
    return run_op(OPS["pixel_unshuffle"], (input,), (int(downscale_factor),))


@public(function=True, method=True)
def masked_scatter(input, mask, source):  # noqa: A002
    if mask._dtype is not dtypes.bool:
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            f"{dtypes.SCALAR_TYPE_NAMES[mask._dtype]}"
        )
    if input._dtype is not source._dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{dtypes.SCALAR_TYPE_NAMES[input._dtype]} and "
            f"{dtypes.SCALAR_TYPE_NAMES[source._dtype]}"
        )
    mask_array = np.broadcast_to(mask._data, np.broadcast_shapes(input.shape, mask.shape))
    if int(mask_array.sum()) > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return run_op(OPS["masked_scatter"], (input, source), (mask._data.copy(),))
