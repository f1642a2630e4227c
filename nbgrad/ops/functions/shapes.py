"""Shapes and views: ``view``, ``reshape``, ``transpose``, ``expand``, ``cat``, ``stack``, ..."""

import builtins

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops import storage_geometry
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _listed
from nbgrad.ops.functions.reductions import sum
from nbgrad.ops.public import public


def _shape_args(shape):
    """``x.view(2, 3)`` and ``x.view((2, 3))`` mean the same."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _infer_shape(shape, numel):
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(
                f"invalid shape dimension {s} at index {i} of shape [{', '.join(map(str, shape))}]"
            )
        if s != -1:
            known *= s
    if unknown and numel == 0 and known == 0:
        raise RuntimeError(
            f"cannot reshape tensor of 0 elements into shape [{', '.join(map(str, shape))}] "
            "because the unspecified dimension size -1 can be any value and is ambiguous"
        )
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(
                f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}"
            )
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(
            f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}"
        )
    return shape


# NumPy 2.1 added reshape(copy=False), which refuses to copy; before it, setting ``.shape`` did
# the same (NumPy 2.5 deprecates that).
_RESHAPE_REFUSES_COPIES = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


def _viewable(array, shape):
    """Whether ``array``'s memory can be read in ``shape`` without a copy, as a view needs."""
    try:
        if _RESHAPE_REFUSES_COPIES:
            np.reshape(array, shape, copy=False)
        else:
            array.view().shape = shape
    except (ValueError, AttributeError):
        return False
    return True


def view_size_error():
    """PyTorch's error for a view its input's memory cannot give (view, and kernels that view)."""
    return RuntimeError(
        "view size is not compatible with input tensor's size and stride (at least one "
        "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
    )


@public(method=True)
def view(input, *shape):  # noqa: A002
    shape = _infer_shape(_shape_args(shape), input._data.size)
    if not _viewable(input._data, shape):
        raise view_size_error()
    return run_op(OPS["view"], (input,), (shape,))


@public(function=True, method=True)
def reshape(input, *shape):  # noqa: A002
    shape = _infer_shape(_shape_args(shape), input._data.size)
    if input._data.flags.c_contiguous:
        return run_op(OPS["view"], (input,), (shape,))
    if _viewable(input._data, shape):  # strided, but the new shape still fits its memory
        return run_op(OPS["reshape_alias"], (input,), (shape,))
    # PyTorch copies first, then views the copy: CloneBackward0 then UnsafeViewBackward0.
    return run_op(OPS["unsafe_view"], (run_op(OPS["clone"], (input,)),), (shape,))


@public(function=True, method=True)
def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    if input.dim() == 0:
        wrap_dim(start_dim, 0)  # a 0-d tensor takes dims 0 and -1, as in PyTorch
        wrap_dim(end_dim, 0)
        return reshape(input, (1,))
    start, end = wrap_dim(start_dim, input.dim()), wrap_dim(end_dim, input.dim())
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input._data.shape
    merged = int(np.prod(shape[start : end + 1]))  # not -1: that is ambiguous with 0 elements
    return reshape(input, (*shape[:start], merged, *shape[end + 1 :]))


@public(function=True, method=True)
def t(input):  # noqa: A002
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.dim()}D")
    return run_op(OPS["t"], (input,))


@public(function=True, method=("transpose", "swapaxes"))
def transpose(input, dim0, dim1):  # noqa: A002
    n = input.dim()
    wrap_dim(dim0, n), wrap_dim(dim1, n)  # checked, but saved as given, as PyTorch does
    return run_op(OPS["transpose"], (input,), (dim0, dim1))


@public(function=True, method=True)
def permute(input, *dims):  # noqa: A002
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _shape_args(dims)
    n = input.dim()
    if len(dims) != n:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
            f"len(dims) = {len(dims)}"
        )
    if len({wrap_dim(d, n) for d in dims}) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return run_op(OPS["permute"], (input,), (dims,))  # saved as given, as PyTorch saves them


@public(function=True, method=True)
def unsqueeze(input, dim):  # noqa: A002
    wrap_dim(dim, input.dim() + 1)  # checked, saved as given, as PyTorch does
    return run_op(OPS["unsqueeze"], (input,), (dim,))


def _check_dims_once(dims, ndim):
    seen = set()
    for d in dims:
        wrapped = wrap_dim(d, ndim)
        if wrapped in seen:
            raise RuntimeError(f"dim {wrapped} appears multiple times in the list of dims")
        seen.add(wrapped)


@public(function=True, method=True)
def squeeze(input, dim=None):  # noqa: A002
    if dim is None:
        return run_op(OPS["squeeze"], (input,))
    if isinstance(dim, (tuple, list)):
        _check_dims_once(dim, input.dim())  # then saved as given (PyTorch's SqueezeBackward2)
        return run_op(OPS["squeeze_dims_tuple"], (input,), (tuple(dim),))
    wrap_dim(dim, input.dim())  # checked, saved as given, as PyTorch does
    return run_op(OPS["squeeze_dim"], (input,), (dim,))


@public(function=True, method=True)
def expand(input, *sizes):  # noqa: A002
    if not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = _shape_args(sizes)
    target = expanded_shape(input._data.shape, input._dtype, sizes)
    return run_op(OPS["expand"], (input,), (target,))


def expanded_shape(shape, dtype, sizes):
    """The shape ``expand(sizes)`` gives a tensor of ``shape`` (-1 keeps a size), or PyTorch's
    error."""
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand(torch.{dtypes.LEGACY_TYPE_NAMES[dtype]}{{[{_listed(shape)}]}}, "
            f"size=[{_listed(sizes)}]): the number of sizes provided ({len(sizes)}) must be "
            f"greater or equal to the number of dimensions in the tensor ({len(shape)})"
        )
    lead = len(sizes) - len(shape)
    target = list(sizes)
    for i in range(lead):
        if sizes[i] == -1:
            raise RuntimeError(
                f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                f"dimension {i}"
            )
    # PyTorch checks from the last dim backwards, so it reports the last mismatch.
    for i, s in reversed(list(enumerate(shape))):
        want = sizes[lead + i]
        if want == -1:
            target[lead + i] = s
        elif s != want and s != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({want}) must match the existing size ({s}) at "
                f"non-singleton dimension {lead + i}.  Target sizes: [{_listed(sizes)}].  "
                f"Tensor sizes: [{_listed(shape)}]"
            )
    return tuple(target)


@public(method=True)
def sum_to_size(input, *size):  # noqa: A002
    size = _shape_args(size)
    shape = input._data.shape
    if shape == size:
        return input
    lead = len(shape) - len(size)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1
    )
    summed = sum(input, dims, keepdim=True)
    return view(summed, size) if lead else summed


@public(function=("cat", "concat"), out=True)
def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    first = tensors[0]
    dim = wrap_dim(dim, first.dim())
    for i, t in enumerate(tensors[1:], 1):
        if t.dim() != first.dim():
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {first.dim()} and {t.dim()}"
            )
        for d, (a, b) in enumerate(zip(first._data.shape, t._data.shape)):
            if d != dim and a != b:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size {a} "
                    f"but got size {b} for tensor number {i} in the list."
                )
    return run_op(OPS["cat"], (tensors,), (dim,))


@public(function=True, out=True)
def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != tensors[0]._data.shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got "
                f"[{', '.join(map(str, tensors[0]._data.shape))}] at entry 0 and "
                f"[{', '.join(map(str, t._data.shape))}] at entry {i}"
            )
    return run_op(OPS["stack"], (tensors,), (wrap_dim(dim, tensors[0].dim() + 1),))


@public(function=True, method=True)
def narrow(input, dim, start, length):  # noqa: A002
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, input.dim())
    size = input._data.shape[dim]
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if start < 0:  # (start == size is a place too: where an empty narrow starts)
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return run_op(OPS["slice"], (input,), (dim, start, start + length, 1))


@public(function=True, method=True)
def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    """A view of ``input``'s storage (the memory of the tensor it is a view of, or its own)
    with the given geometry, in elements; by default from where ``input`` itself starts."""
    return run_op(
        OPS["as_strided"], (input,), as_strided_arguments(input, size, stride, storage_offset)
    )


def as_strided_arguments(input, size, stride, storage_offset):  # noqa: A002
    """as_strided's checks; its attrs (size, stride, storage_offset, the input's geometry)."""
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"[{_listed(stride)}]"
        )
    memory = input._memory()
    geometry = storage_geometry.geometry_in(input._data, storage_geometry.lowest_address(memory))
    # Not given, the offset is where the input starts (and is saved as None, as PyTorch does).
    offset = geometry[2] if storage_offset is None else storage_offset
    itemsize = input._data.itemsize
    needed = 0 if 0 in size else storage_geometry.storage_size_of((size, stride, offset))
    available = storage_geometry.storage_size(memory)
    if needed > available:
        raise RuntimeError(
            f"setStorage: sizes [{_listed(size)}], strides [{_listed(stride)}], storage offset "
            f"{offset}, and itemsize {itemsize} requiring a storage size of "
            f"{needed * itemsize} are out of bounds for storage of size {available * itemsize}"
        )
    return size, stride, storage_offset, geometry


@public(function=True, method=True)
def select(input, dim, index):  # noqa: A002
    if input.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, input.dim())
    size = input._data.shape[dim]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size "
            f"[{_listed(input._data.shape)}] at dimension {dim}"
        )
    return run_op(OPS["select"], (input,), (dim, index))


@public(function=True, method=True)
def gather(input, dim, index, *, sparse_grad=False):  # noqa: A002
    given = dim  # GatherBackward0 saves the dim as given (-1 stays -1), as PyTorch does
    dim = wrap_dim(dim, input.dim())
    if index._dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if index.dim() != input.dim():
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d, (i, s) in enumerate(zip(index._data.shape, input._data.shape)):
        if d != dim and i > s:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index [{_listed(index.shape)}] to "
                f"be no larger than self [{_listed(input.shape)}] apart from dimension {dim}"
            )
    size = input._data.shape[dim] if input.dim() else 1
    bad = index._data[(index._data < -size) | (index._data >= size)]
    if bad.size:
        raise RuntimeError(
            f"index {bad.flat[0]} is out of bounds for dimension {dim} with size {size}"
        )
    saved_dim = given if input.dim() else dim
    return run_op(OPS["gather"], (input,), (saved_dim, index._data, sparse_grad))


@public(function=True, method=True)
def clone(input):  # noqa: A002
    return run_op(OPS["clone"], (input,))


@public(method=True)
def contiguous(input):  # noqa: A002
    if input._data.flags.c_contiguous:
        return input
    # PyTorch's clone keeps a transposed layout (as ``np.array`` does); contiguous() does not.
    result = clone(input)
    result._data = np.ascontiguousarray(result._data)
    return result


@public(function=True)
def detach(input):  # noqa: A002
    return input.detach()


def select_backward(grad, sizes, dim, index):
    return run_op(OPS["select_backward"], (grad,), (sizes, dim, index))


def slice_backward(grad, sizes, dim, start, end, step):
    return run_op(OPS["slice_backward"], (grad,), (sizes, dim, start, end, step))


def index_put_into_zeros(values, sizes, indices):
    return run_op(OPS["index_put_into_zeros"], (values,), (sizes, indices))
