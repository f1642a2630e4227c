"""``tensor[key]`` as PyTorch records it (select, slice, index), and ``tensor[key] = value``."""

import builtins
import numbers
import warnings

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import check_no_internal_overlap, run_inplace, run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import INT64_MAX, _array, _listed, _operand
from nbgrad.ops.functions.shapes import expand, expanded_shape, unsqueeze


def _index_array(value):
    if isinstance(value, Tensor):
        if value._dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return value._data
    array = np.asarray(value)
    if array.dtype.kind == "f":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return array


def _is_integer(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return isinstance(value, Tensor) and value._data.ndim == 0 and value._dtype._category == 1


def _check_zero_dim_key(tensor, key):
    if tensor.dim() == 0:
        for k in key:
            if _is_integer(k):
                raise IndexError(
                    "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                    "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
                )
            if isinstance(k, slice):
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")


def _consumed(key):
    """How many of the tensor's dims the key indexes (a k-dim bool mask indexes k)."""
    return builtins.sum(
        (_array(k).ndim if _is_bool_mask(k) else 1)
        for k in key
        if k is not None and k is not Ellipsis
    )


def _is_full_slice(k, size):
    """``:``, ``0:``, ``:n`` with n >= size: PyTorch skips these inside a tuple of indices."""
    return k.start in (None, 0) and (k.stop is None or k.stop >= size) and k.step in (None, 1)


def getitem(tensor, key):
    """``tensor[key]``: ints select, slices slice, None unsqueezes, arrays index, as in PyTorch."""
    # A lone slice is always recorded (``x[:]`` is SliceBackward0); inside a tuple, a slice
    # that keeps everything is skipped, as PyTorch's indexing does.
    lone_slice = isinstance(key, slice)
    if not isinstance(key, tuple):
        key = (key,)
    _check_zero_dim_key(tensor, key)
    consumed = _consumed(key)
    if consumed > tensor.dim():
        raise IndexError(f"too many indices for tensor of dimension {tensor.dim()}")
    result, dim, advanced, has_advanced = tensor, 0, [], False
    for position, k in enumerate(key):
        if k is Ellipsis:
            skip = tensor.dim() - consumed
            advanced.extend([slice(None)] * skip)
            dim += skip
            consumed = tensor.dim()
        elif k is None:
            result = unsqueeze(result, dim)
            advanced.append(slice(None))
            dim += 1
        elif _is_integer(k):
            index, size = int(k), result._data.shape[dim]
            if not -size <= index < size:
                raise IndexError(
                    f"index {index} is out of bounds for dimension {position} with size {size}"
                )
            result = run_op(OPS["select"], (result,), (dim, index))
        elif isinstance(k, slice):
            start, stop, step = k.start, k.stop, k.step
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero")
            if lone_slice or not _is_full_slice(k, result._data.shape[dim]):
                result = run_op(
                    OPS["slice"],
                    (result,),
                    (
                        dim,
                        0 if start is None else start,
                        INT64_MAX if stop is None else stop,
                        1 if step is None else step,
                    ),
                )
            advanced.append(slice(None))
            dim += 1
        elif isinstance(k, float):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                f"are valid indices (got {type(k).__name__})"
            )
        else:
            array = _index_array(k)
            advanced.append(array)
            has_advanced = True
            dim += array.ndim if array.dtype == bool else 1
    if has_advanced:
        _check_advanced(result, advanced)
        result = run_op(OPS["index"], (result,), (tuple(advanced),))
    if result is tensor:
        # ``x[...]`` gives a new view of the same memory (PyTorch: AliasBackward0).
        result = run_op(OPS["alias"], (tensor,))
    return result


def _check_advanced(result, advanced):
    """PyTorch's messages for a mask of the wrong shape and an index out of range."""
    dim, ordinal = 0, 0
    shape = result._data.shape
    for index in advanced:
        if isinstance(index, slice):
            dim += 1
            continue
        if index.dtype == bool:
            for j, size in enumerate(index.shape):
                if dim + j >= len(shape) or shape[dim + j] != size:
                    raise IndexError(
                        f"The shape of the mask [{_listed(index.shape)}] at index {j} does not "
                        f"match the shape of the indexed tensor [{_listed(shape)}] at index "
                        f"{dim + j}"
                    )
            dim, ordinal = dim + index.ndim, ordinal + index.ndim
            continue
        size = shape[dim]
        bad = index[(index < -size) | (index >= size)]
        if bad.size:
            raise IndexError(
                f"index {bad.flat[0]} is out of bounds for dimension {ordinal} with size {size}"
            )
        dim, ordinal = dim + 1, ordinal + 1
    # Integer index tensors must broadcast together (masks are left to NumPy's check).
    arrays = [index for index in advanced if not isinstance(index, slice)]
    if all(index.dtype != bool for index in arrays):
        try:
            np.broadcast_shapes(*(index.shape for index in arrays))
        except ValueError:
            shapes = ", ".join(f"[{_listed(index.shape)}]" for index in arrays)
            raise IndexError(
                "shape mismatch: indexing tensors could not be broadcast together with shapes "
                + shapes
            ) from None


def _writes_through_view(tensor, key):
    """Whether PyTorch writes ``tensor[key] = value`` into a view of ``tensor`` (an int, None or
    a partial slice in the key) rather than into ``tensor`` itself."""
    if not isinstance(key, tuple):
        key = (key,)
    dim, consumed = 0, _consumed(key)
    for k in key:
        if k is None or _is_integer(k):
            return True
        if k is Ellipsis:
            dim += tensor.dim() - consumed
        elif isinstance(k, slice):
            if dim < tensor.dim() and not _is_full_slice(k, tensor._data.shape[dim]):
                return True
            dim += 1
        else:
            dim += _array(k).ndim if _is_bool_mask(k) else 1
    return False


def _is_bool_mask(k):
    if isinstance(k, Tensor):
        return k._dtype is dtypes.bool
    return isinstance(k, np.ndarray) and k.dtype == bool


def _numpy_key(key):
    if not isinstance(key, tuple):
        key = (key,)
    converted = []
    for k in key:
        if isinstance(k, Tensor):
            converted.append(k._data if k._data.ndim else k.item())
        elif isinstance(k, list):
            converted.append(np.asarray(k))
        else:
            converted.append(k)
    return tuple(converted)


def _check_basic_key(tensor, key):
    """PyTorch's errors for ints, slices, None and ... that do not fit the tensor: getitem's,
    checked here without making the views."""
    _check_zero_dim_key(tensor, key)
    consumed = _consumed(key)
    if consumed > tensor.dim():
        raise IndexError(f"too many indices for tensor of dimension {tensor.dim()}")
    dim = 0
    for position, k in enumerate(key):
        if k is Ellipsis:
            dim += tensor.dim() - consumed
        elif _is_integer(k):
            index, size = int(k), tensor._data.shape[dim]
            if not -size <= index < size:
                raise IndexError(
                    f"index {index} is out of bounds for dimension {position} with size {size}"
                )
            dim += 1
        elif k is not None:  # a slice
            dim += 1


def _check_value_shape(value, shape, key):
    """PyTorch's error for a value that does not fit the part of the tensor ``key`` selects."""
    if builtins.any(isinstance(k, np.ndarray) for k in key):  # index_put_
        try:
            fits = np.broadcast_shapes(value._data.shape, shape) == shape
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError(
                f"shape mismatch: value tensor of shape [{_listed(value._data.shape)}] cannot be "
                f"broadcast to indexing result of shape [{_listed(shape)}]"
            )
        return
    # copy_ of the value, expanded after its leading 1s are dropped, as PyTorch does.
    sizes = value._data.shape
    while sizes and sizes[0] == 1:
        sizes = sizes[1:]
    expanded_shape(sizes, value._dtype, shape)


# PyTorch writes through index arrays into an expanded tensor, with this notice.
EXPANDED_INDEX_PUT = (
    "Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
    "performing this operation. This also applies to advanced indexing e.g. tensor[indices] = "
    "tensor"
)

EXPANDED_MASKED_FILL = (
    "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before "
    "performing this operation. This also applies to advanced indexing e.g. tensor[mask] = "
    "scalar"
)


def setitem(tensor, key, value):
    """``tensor[key] = value``: an in-place write, recorded as PyTorch's CopySlices."""
    try:
        value = _operand(value)
    except TypeError:
        raise TypeError(
            f"can't assign a {type(value).__name__} to a "
            f"torch.{dtypes.LEGACY_TYPE_NAMES[tensor._dtype]}"
        ) from None
    # The key is checked, and the value's shape against the part it selects, as indexing does:
    # PyTorch's errors, not NumPy's. Index arrays and masks go through indexing itself.
    keys = key if isinstance(key, tuple) else (key,)
    if builtins.all(k is None or k is Ellipsis or type(k) is slice or _is_integer(k) for k in keys):
        _check_basic_key(tensor, keys)
        key = _numpy_key(key)
        if isinstance(value, Tensor):
            _check_value_shape(value, tensor._data[key].shape, key)
    else:
        with grad_mode.no_grad():
            region = getitem(tensor, key)
        key = _numpy_key(key)
        if isinstance(value, Tensor):
            _check_value_shape(value, region._data.shape, key)
    recording = grad_mode._enabled and (
        tensor._requires_grad or (isinstance(value, Tensor) and value._requires_grad)
    )
    leaf = tensor._grad_fn is None and tensor._requires_grad
    if recording and leaf and _writes_through_view(tensor, key):
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
    # index arrays or masks in the key (PyTorch's index_put_), else slices and integers
    advanced = builtins.any(isinstance(k, np.ndarray) for k in key)
    if not recording:
        if 0 in tensor._data.strides:  # an expanded tensor
            if advanced:
                warnings.warn(EXPANDED_INDEX_PUT, UserWarning, stacklevel=2)
                one_mask = len(key) == 1 and key[0].dtype == np.bool_
                if one_mask and (not isinstance(value, Tensor) or value._data.ndim == 0):
                    warnings.warn(EXPANDED_MASKED_FILL, UserWarning, stacklevel=2)
            else:  # PyTorch's copy_ into the part written refuses repeated elements
                check_no_internal_overlap(tensor._data[key])
        tensor._data[key] = value._data if isinstance(value, Tensor) else value
        tensor._version_counter.value += 1
        return
    # PyTorch records different nodes by the kind of key, and so do we.
    if advanced:
        run_inplace(OPS["index_put"], tensor, (value,), (key, False))
    elif builtins.all(k is Ellipsis or k == slice(None) for k in key):
        if isinstance(value, Tensor):  # the whole tensor: copy_ of the expanded value
            run_inplace(OPS["copy"], tensor, (expand(value, tensor._data.shape),))
        else:
            run_inplace(OPS["fill_whole"], tensor, (value,))
    else:
        run_inplace(OPS["copy_slices"], tensor, (value,), (key,))
