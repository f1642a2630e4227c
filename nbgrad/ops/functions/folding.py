"""``Tensor.unfold``, ``pixel_shuffle`` / ``pixel_unshuffle`` and ``masked_scatter``: argument
checks with PyTorch's messages, then one table entry each."""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.public import public


@public(method=True)
def unfold(input, dimension, size, step):  # noqa: A002
    ndim = input.dim()
    dim = wrap_dim(dimension, max(ndim, 1))
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


def _index_key(tensor, indices):
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
    if len(indices) > tensor.dim():
        raise IndexError(
            f"too many indices for tensor of dimension {tensor.dim()} (got {len(indices)})"
        )
    key = []
    for index in indices:
        if index is None:
            key.append(slice(None))
        elif index._dtype in (dtypes.bool, dtypes.uint8):
            key.append(index._data.astype(bool))
        elif index._dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        else:
            key.append(index._data.astype(np.int64))
    return tuple(key)


def _checked_key(input, indices, values):
    if input._dtype is not values._dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{dtypes.SCALAR_TYPE_NAMES[input._dtype]} for the destination and "
            f"{dtypes.SCALAR_TYPE_NAMES[values._dtype]} for the source."
        )
    key = _index_key(input, indices)
    region_shape = input._data[key].shape
    try:
        fits = np.broadcast_shapes(values.shape, region_shape) == region_shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape [{', '.join(map(str, values.shape))}] "
            f"cannot be broadcast to indexing result of shape "
            f"[{', '.join(map(str, region_shape))}]"
        )
    return key


@public(function=True, method=True)
def index_put(input, indices, values, accumulate=False):  # noqa: A002
    key = _checked_key(input, indices, values)
    return run_op(
        OPS["index_put_values"], (input, values), (key, bool(accumulate), tuple(values.shape))
    )


@public(function=True, method=True)
def index_put_(input, indices, values, accumulate=False):  # noqa: A002
    from nbgrad.autograd.dispatch import run_inplace
    from nbgrad.ops.functions.indexing import setitem

    key = _checked_key(input, indices, values)
    if not accumulate:
        setitem(input, tuple(indices), values)
        return input
    return run_inplace(OPS["index_put_values"], input, (values,), (key, True, tuple(values.shape)))
