"""PyTorch's private indexing functions (``torch._unsafe_index``, ``torch._unsafe_index_put``,
``torch._unsafe_masked_index``, ``torch._unsafe_masked_index_put_accumulate``,
``torch._index_put_impl_``), ``as_strided_scatter``, ``slice_inverse``, ``torch._lazy_clone``
and ``torch._neg_view``: PyTorch's argument checks and messages, then one table entry each.

The "unsafe" functions are what a compiler emits where it has checked the indices itself; run
eagerly, PyTorch still checks most of them (an index out of range raises), and so do we.
"""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops import idx_kernels, storage_geometry
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.folding import _checked_key, _index_key
from nbgrad.ops.functions.indexing import _check_advanced
from nbgrad.ops.functions.shapes import as_strided_arguments
from nbgrad.ops.public import public


def _tensor_list(name, indices, position):
    """The indices as a tuple of Tensors: PyTorch's Python binding takes no None in these."""
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError(
            f"{name}(): argument 'indices' (position {position + 1}) must be tuple of Tensors, "
            f"not {type(indices).__name__}"
        )
    for k, index in enumerate(indices):
        if not isinstance(index, Tensor):
            raise TypeError(
                f"expected Tensor as element {k} in argument {position}, but got "
                f"{type(index).__name__}"
            )
    return tuple(indices)


# What PyTorch's CPU kernel of index_put says when given no index at all.
NO_INDEX_TO_PUT = (
    'ntensor >= 3 INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/aten/src/ATen/native/cpu/'
    'IndexKernelUtils.h":8, please report a bug to PyTorch. '
)


def _integer_key(name, input, indices, position, putting=False):  # noqa: A002
    """The NumPy key of int64 / int32 index tensors (a mask would give a shape that depends on
    the data, which these functions exist to avoid)."""
    indices = _tensor_list(name, indices, position)
    if not indices:
        if putting:
            raise RuntimeError(NO_INDEX_TO_PUT)
        raise IndexError("at least one index must be provided")
    for index in indices:
        if index._dtype not in (dtypes.int64, dtypes.int32):
            raise RuntimeError(
                f"{name} found unexpected index type {dtypes.SCALAR_TYPE_NAMES[index._dtype]}"
            )
    if len(indices) > input.dim():
        raise IndexError(
            f"too many indices for tensor of dimension {input.dim()} (got {len(indices)})"
        )
    return tuple(index._data.astype(np.int64) for index in indices)


@public(function=True)
def _unsafe_index(input, indices):  # noqa: A002
    key = _integer_key("_unsafe_index", input, indices, 1)
    _check_advanced(input, list(key))
    return run_op(OPS["unsafe_index"], (input,), (key,))


def _checked_put_key(name, input, indices, values):  # noqa: A002
    """index_put's checks, in PyTorch's order: the indices in range, then dtypes and shapes."""
    indices = _tensor_list(name, indices, 1)
    if not indices:
        raise RuntimeError(NO_INDEX_TO_PUT)
    _check_advanced(input, list(_index_key(input, indices)))
    return _checked_key(input, indices, values)


@public(function=True)
def _unsafe_index_put(input, indices, values, accumulate=False):  # noqa: A002
    key = _checked_put_key("_unsafe_index_put", input, indices, values)
    attrs = (key, bool(accumulate), tuple(values.shape))
    return run_op(OPS["unsafe_index_put"], (input, values), attrs)


@public(function=True)
def _index_put_impl_(input, indices, values, accumulate=False, unsafe=False):  # noqa: A002
    key = _checked_put_key("_index_put_impl_", input, indices, values)
    attrs = (key, bool(accumulate), tuple(values.shape))
    return run_inplace(OPS["index_put_impl"], input, (values,), attrs)


def _masked_key(name, input, mask, indices, putting=False):  # noqa: A002
    key = _integer_key(name, input, indices, 2, putting)
    mask_array = mask._data if mask._dtype is dtypes.bool else mask._data != 0
    return key, np.array(mask_array, dtype=bool)


def _check_mask_fits(mask, shape):
    """The mask broadcasts to the shape it masks, as masked_fill's does, or PyTorch's error."""
    for position in range(1, min(len(mask.shape), len(shape)) + 1):
        have, want = mask.shape[-position], shape[-position]
        if have not in (1, want):
            raise RuntimeError(
                f"The size of tensor a ({have}) must match the size of tensor b ({want}) at "
                f"non-singleton dimension {len(shape) - position}"
            )


@public(function=True)
def _unsafe_masked_index(input, mask, indices, fill):  # noqa: A002
    key, mask_array = _masked_key("_unsafe_masked_index", input, mask, indices)
    if input.numel():
        _check_mask_fits(mask_array, input._data[idx_kernels.clamped(key, input.shape)].shape)
    return run_op(OPS["unsafe_masked_index"], (input,), (mask_array, key, fill))


@public(function=True)
def _unsafe_masked_index_put_accumulate(input, mask, indices, values):  # noqa: A002
    key, mask_array = _masked_key(
        "_unsafe_masked_index_put_accumulate", input, mask, indices, putting=True
    )
    if input._dtype is not values._dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{dtypes.SCALAR_TYPE_NAMES[input._dtype]} for the destination and "
            f"{dtypes.SCALAR_TYPE_NAMES[values._dtype]} for the source."
        )
    _check_mask_fits(mask_array, tuple(values.shape))
    attrs = (mask_array, key, tuple(values.shape))
    return run_op(OPS["unsafe_masked_index_put_accumulate"], (input, values), attrs)


def _scatter_geometry(input, size, stride, storage_offset):  # noqa: A002
    """Where ``input`` lies in its storage and how long that storage is, which the copy
    as_strided_scatter writes into keeps (idx_kernels); with as_strided's checks and messages for
    the view written through."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"[{', '.join(map(str, stride))}]"
        )
    memory = input._memory()
    geometry = storage_geometry.geometry_in(input._data, storage_geometry.lowest_address(memory))
    available = storage_geometry.storage_size(memory)
    if idx_kernels._overlapping(input._data):  # copied densely, from offset 0
        geometry, available = (None, None, 0), input.numel()
    offset = geometry[2] if storage_offset is None else storage_offset
    needed = 0 if 0 in size else storage_geometry.storage_size_of((size, stride, offset))
    if needed > available:
        itemsize = input._data.itemsize
        raise RuntimeError(
            f"setStorage: sizes [{', '.join(map(str, size))}], strides "
            f"[{', '.join(map(str, stride))}], storage offset {offset}, and itemsize {itemsize} "
            f"requiring a storage size of {needed * itemsize} are out of bounds for storage of "
            f"size {available * itemsize}"
        )
    return geometry, available


@public(function=True, method=True)
def as_strided_scatter(input, src, size, stride, storage_offset=None):  # noqa: A002
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if input.requires_grad and not input.is_contiguous():
        raise RuntimeError(
            "!self.requires_grad() || self.is_contiguous() INTERNAL ASSERT FAILED at "
            '"/__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp":4754, please report a '
            "bug to PyTorch. as_strided_scatter is currently only supported for contiguous "
            "inputs"
        )
    geometry, storage_size = _scatter_geometry(input, size, stride, storage_offset)
    if tuple(src.shape) != size:
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"[{', '.join(map(str, src.shape))}], slice size = [{', '.join(map(str, size))}]"
        )
    if src._dtype is not input._dtype:  # copy_ casts it
        src = src.to(input.dtype)
    attrs = (size, stride, storage_offset, geometry, storage_size)
    return run_op(OPS["as_strided_scatter"], (input, src), attrs)


@public(function=True, method=True)
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """A view of ``input``'s memory with ``src``'s geometry there: the inverse of
    ``input = src[start:end:step]`` along ``dim`` (the slice itself is not looked at)."""
    src_geometry = (tuple(src.shape), tuple(src.stride()), src.storage_offset())
    *_, input_geometry = as_strided_arguments(input, *src_geometry)
    attrs = (dim, start, end, step, input_geometry, src_geometry)
    return run_op(OPS["slice_inverse"], (input, src), attrs)


@public(function=True, method=True)
def _lazy_clone(input):  # noqa: A002
    return run_op(OPS["lazy_clone"], (input,))


@public(function=True, method=True)
def _neg_view(input):  # noqa: A002
    if input._dtype is dtypes.bool:
        raise NotImplementedError("\"neg_cpu\" not implemented for 'Bool'")
    return run_op(OPS["neg_view"], (input,))
