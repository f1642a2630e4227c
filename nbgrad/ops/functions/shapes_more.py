"""More reorderings and products: ``roll``, ``flip``, ``repeat``/``tile``, ``tril``/``triu``,
``index_select``, ``masked_select``, ``movedim``, ``swapdims``, ``unflatten``, ``outer``, and
``addmv``/``addr``/``baddbmm``."""

import builtins

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _shapes_error, contiguous_result
from nbgrad.ops.functions.arithmetic import mul
from nbgrad.ops.functions.shapes import (
    _infer_shape,
    _shape_args,
    _viewable,
    cat,
    expand,
    permute,
    reshape,
    stack,
    transpose,
    unsqueeze,
    view_size_error,
)
from nbgrad.ops.public import public
from nbgrad.warn_once import warn_once


def _int_tuple(value):
    return (value,) if isinstance(value, int) else tuple(value)


@public(function=True, method=True)
def roll(input, shifts, dims=None):  # noqa: A002
    shifts = _int_tuple(shifts)
    dims = () if dims is None else _int_tuple(dims)
    if len(shifts) != len(dims) and not (not dims and len(shifts) == 1):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    for d in dims:
        if input.dim() == 0:
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        wrap_dim(d, input.dim())
    return run_op(OPS["roll"], (input,), (shifts, dims))


def _flip_dims(input, dims):  # noqa: A002
    seen = set()
    for d in dims:
        wrapped = wrap_dim(d, input.dim())
        if wrapped in seen:
            raise RuntimeError(f"dim {wrapped} appears multiple times in the list of dims")
        seen.add(wrapped)
    return dims


@public(function=True, method=True)
def flip(input, *dims, **by_name):  # noqa: A002
    if by_name:  # flip(x, dims=[0]), as PyTorch's signature names it
        for name in by_name:
            if name != "dims" or dims:
                raise TypeError(f"flip() got an unexpected keyword argument '{name}'")
        dims = (by_name["dims"],)
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = tuple(dims[0])
    return run_op(OPS["flip"], (input,), (_flip_dims(input, dims),))


@public(function=True, method=True)
def fliplr(input):  # noqa: A002
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return run_op(OPS["flip"], (input,), ((1,),))


@public(function=True, method=True)
def flipud(input):  # noqa: A002
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return run_op(OPS["flip"], (input,), ((0,),))


@public(method=True)
def repeat(input, *repeats):  # noqa: A002
    if not repeats:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    repeats = _shape_args(repeats)
    if len(repeats) < input.dim():
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            "tensor"
        )
    sizes = [r * s for r, s in zip(repeats, _padded(input, repeats))]
    if builtins.any(r < 0 for r in repeats):
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {builtins.min(sizes)}: "
            f"[{', '.join(map(str, sizes))}]"
        )
    return run_op(OPS["repeat"], (input,), (repeats,))


def _padded(input, repeats):  # noqa: A002
    return (1,) * (len(repeats) - input.dim()) + tuple(input._data.shape)


@public(function=True, method=True)
def tile(input, *dims):  # noqa: A002
    dims = _shape_args(dims)
    return repeat(input, (1,) * (input.dim() - len(dims)) + dims)


def _triangle(name, input, diagonal):  # noqa: A002
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return run_op(OPS[name], (input,), (diagonal,))


@public(function=True, method=True, out=True)
def tril(input, diagonal=0):  # noqa: A002
    return _triangle("tril", input, diagonal)


@public(function=True, method=True, out=True)
def triu(input, diagonal=0):  # noqa: A002
    return _triangle("triu", input, diagonal)


@public(function=True, method=True, out=True)
def index_select(input, dim, index):  # noqa: A002
    wrap_dim(dim, input.dim())
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    indices = index._data.astype(np.int64, copy=False)
    if input.dim() == 0 and indices.size != 1:
        raise RuntimeError(
            f"index_select(): Index to scalar can have only 1 value, got {indices.size} value(s)"
        )
    size = input._data.shape[dim] if input.dim() else 1
    bad = indices[(indices < 0) | (indices >= size)]
    if bad.size:
        raise RuntimeError(
            f"INDICES element is out of DATA bounds, id={bad.flat[0]} axis_dim={size}"
        )
    return run_op(OPS["index_select"], (input,), (dim, indices.copy()))


@public(function=True, method=True, out=True)
def masked_select(input, mask):  # noqa: A002
    if mask._dtype is not dtypes.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    try:
        np.broadcast_shapes(input._data.shape, mask._data.shape)
    except ValueError:
        raise _shapes_error(mask._data.shape, input._data.shape) from None
    return run_op(OPS["masked_select"], (input,), (mask._data.copy(),))


@public(function=("movedim", "moveaxis"), method=("movedim", "moveaxis"))
def movedim(input, source, destination):  # noqa: A002
    n = input.dim()
    source, destination = _int_tuple(source), _int_tuple(destination)
    if len(source) != len(destination):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
            f"contain the same number of dims as destination ({list(destination)} dims)"
        )
    source = [wrap_dim(d, n) for d in source]
    destination = [wrap_dim(d, n) for d in destination]
    if n == 0:  # a 0-d tensor: dims 0 and -1 name itself, and PyTorch gives an alias
        return run_op(OPS["alias"], (input,))
    order = [None] * n
    for s, d in zip(source, destination):
        order[d] = s
    rest = iter(d for d in range(n) if d not in source)
    order = [next(rest) if o is None else o for o in order]
    return permute(input, *order) if n else permute(input, ())


@public(function=("swapdims", "swapaxes"), method="swapdims")
def swapdims(input, dim0, dim1):  # noqa: A002
    return transpose(input, dim0, dim1)


@public(function=True, method=True)
def unflatten(input, dim, sizes):  # noqa: A002
    if input.dim() == 0:  # PyTorch's message goes on with its C++ stack trace
        raise RuntimeError(
            "unflatten got an unexpected error:\nDimension specified as "
            f"{wrap_dim(dim, 0)} but tensor has no dimensions"
        )
    dim = wrap_dim(dim, input.dim())
    shape = input._data.shape
    sizes = tuple(sizes)
    if -1 not in sizes and int(np.prod(sizes)) != shape[dim]:
        raise RuntimeError(
            f"unflatten: Provided sizes [{', '.join(map(str, sizes))}] don't multiply up to the "
            f"size of dim {dim} ({shape[dim]}) in the input tensor"
        )
    sizes = _infer_shape(sizes, shape[dim])
    return reshape(input, (*shape[:dim], *sizes, *shape[dim + 1 :]))


@public(function=("outer", "ger"), method=("outer", "ger"), out=True)
def outer(input, vec2):  # noqa: A002
    for name, t in (("self", input), ("vec2", vec2)):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
    return mul(reshape(input, (input._data.shape[0], 1)), vec2)


def _scaled_product(name, input, first, second, beta, alpha, shape):  # noqa: A002
    expand(input.detach(), shape)  # PyTorch's error for an added tensor that does not expand
    return run_op(OPS[name], (input, first, second), (beta, alpha))


@public(function=True, method=True, out=True)
def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    if mat.dim() != 2 or vec.dim() != 1 or input.dim() > 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, {vec.dim()}"
        )
    a, v = mat._data.shape, vec._data.shape
    if a[1] != v[0] or (input.dim() and input._data.shape[0] not in (1, a[0])):
        raise RuntimeError(
            f"size mismatch, got input ({input._data.shape[0] if input.dim() else 1}), "
            f"mat ({a[0]}x{a[1]}), vec ({v[0]})"
        )
    return _scaled_product("addmv", input, mat, vec, beta, alpha, (a[0],))


@public(function=True, method=True, out=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(
            f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D"
            if vec1.dim() != 1
            else f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D"
        )
    shape = (vec1._data.shape[0], vec2._data.shape[0])
    return _scaled_product("addr", input, vec1, vec2, beta, alpha, shape)


@public(function=True, method=True, out=True)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    a, b = batch1._data.shape, batch2._data.shape
    if a[0] != b[0] or a[2] != b[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a[0]}, {a[2]}] "
            f"but got: [{b[0]}, {b[1]}]."
        )
    return _scaled_product("baddbmm", input, batch1, batch2, beta, alpha, (a[0], a[1], b[2]))


def _check_splittable(input, dim, name="split"):  # noqa: A002
    if input.dim() == 0:
        raise RuntimeError(f"{name} expects at least a 1-dimensional tensor")
    return wrap_dim(dim, input.dim())


@public(function=True, method=True)
def split(tensor, split_size_or_sections, dim=0):
    """Pieces of ``split_size`` along ``dim`` (the last one smaller), or of the sizes listed: views
    of ``tensor``, all outputs of one SplitBackward0 (SplitWithSizesBackward0)."""
    wrapped = _check_splittable(tensor, dim)
    size = tensor._data.shape[wrapped]
    if isinstance(split_size_or_sections, int):
        split_size = split_size_or_sections
        if split_size < 0:
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={split_size}"
            )
        if split_size == 0 and size != 0:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
            )
        return run_op(OPS["split"], (tensor,), (split_size, dim))
    sizes = tuple(int(s) for s in split_size_or_sections)
    if builtins.sum(sizes) != size or builtins.any(s < 0 for s in sizes):
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size "
            f"at dimension {wrapped}), but got split_sizes=[{', '.join(map(str, sizes))}]"
        )
    return run_op(OPS["split_with_sizes"], (tensor,), (sizes, dim))


@public(function=True, method=True)
def chunk(input, chunks, dim=0):  # noqa: A002
    wrapped = _check_splittable(input, dim, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = input._data.shape[wrapped]
    if size == 0:  # PyTorch cuts an empty dim into `chunks` empty pieces, by their sizes
        return run_op(OPS["split_with_sizes"], (input,), ((0,) * chunks, dim))
    return run_op(OPS["split"], (input,), (-(-size // chunks), dim))


@public(function=True, method=True)
def unbind(input, dim=0):  # noqa: A002
    if input.dim() == 0:  # dims 0 and -1 pass the range check, then name dim 0
        raise IndexError(f"Dimension specified as {wrap_dim(dim, 0)} but tensor has no dimensions")
    wrap_dim(dim, input.dim())
    return run_op(OPS["unbind"], (input,), (dim,))


# --- at least n dims, and the stacks PyTorch builds from them ------------------------------------


def _at_least(n, tensors):
    """atleast_Nd's argument forms: one tensor, several, or one list of them."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_at_least_one(n, t) for t in tensors[0])
    if len(tensors) == 1:
        return _at_least_one(n, tensors[0])
    return tuple(_at_least_one(n, t) for t in tensors)


def _at_least_one(n, t):
    if t.dim() >= n:
        return t
    if t.dim() == 0:
        return reshape(t, (1,) * n)
    if n == 2 or t.dim() == 2:  # (n,) -> (1, n); (m, n) -> (m, n, 1)
        return unsqueeze(t, 0) if t.dim() == 1 else unsqueeze(t, -1)
    return unsqueeze(unsqueeze(t, 0), -1)  # (n,) -> (1, n, 1)


@public(function=True)
def atleast_1d(*tensors):
    return _at_least(1, tensors)


@public(function=True)
def atleast_2d(*tensors):
    return _at_least(2, tensors)


@public(function=True)
def atleast_3d(*tensors):
    return _at_least(3, tensors)


def _stack_inputs(name, tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


@public(function=True, out=True)
def hstack(tensors):
    pieces = [_at_least_one(1, t) for t in _stack_inputs("hstack", tensors)]
    return cat(pieces, 0 if pieces[0].dim() == 1 else 1)


@public(function=("vstack", "row_stack"), out=True)
def vstack(tensors):
    return cat([_at_least_one(2, t) for t in _stack_inputs("vstack", tensors)], 0)


@public(function=True, out=True)
def dstack(tensors):
    return cat([_at_least_one(3, t) for t in _stack_inputs("dstack", tensors)], 2)


@public(function=True, out=True)
def column_stack(tensors):
    pieces = [
        reshape(t, (t.numel(), 1)) if t.dim() <= 1 else t
        for t in _stack_inputs("column_stack", tensors)
    ]
    return cat(pieces, 1)


# --- vdot, rot90, repeat_interleave, kron --------------------------------------------------------


@public(function=True, method=True, out=True)
def vdot(input, other):  # noqa: A002
    a, b = input._data.shape, other._data.shape
    if len(a) != 1 or len(b) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(a)}D and {len(b)}D tensors")
    if input._dtype is not other._dtype:
        raise RuntimeError(
            "vdot : expected both vectors to have same dtype, but found "
            f"{dtypes.SCALAR_TYPE_NAMES[input._dtype]} and "
            f"{dtypes.SCALAR_TYPE_NAMES[other._dtype]}"
        )
    if a[0] != b[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the "
            f"same number of elements, but got {a[0]} and {b[0]} elements respectively"
        )
    return run_op(OPS["vdot"], (input, other))


@public(function=True, method=True)
def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (wrap_dim(d, input.dim()) for d in dims)
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}"
        )
    return run_op(OPS["rot90"], (input,), (k, (d0, d1)))


@public(function=True, method=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Integer repeats: unsqueeze, expand, copy and view, as PyTorch decomposes it; a tensor of
    repeats: index_select of the repeated positions."""
    from nbgrad.ops.creation import tensor as _tensor
    from nbgrad.ops.functions.shape_helpers import index_select_positions

    if repeats is None:  # torch.repeat_interleave(repeats): the positions, each repeated
        return _tensor(index_select_positions(input._data, input._data.size))
    if dim is None:
        input, dim = (input if input.dim() == 1 else reshape(input, (-1,))), 0
    wrapped = wrap_dim(dim, input.dim())
    if isinstance(repeats, Tensor):
        size = input._data.shape[wrapped] if input.dim() else 1
        if repeats.numel() not in (1, size):
            raise RuntimeError(
                "repeats must have the same size as input along dim, but got repeats.size(0) = "
                f"{repeats.numel()} and input.size({wrapped}) = {size}"
            )
        positions = index_select_positions(repeats._data, size)
        return index_select(input, dim, _tensor(positions))
    count = int(repeats)
    if count < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = input._data.shape
    expanded_shape = (*shape[: wrapped + 1], count, *shape[wrapped + 1 :])
    expanded = expand(unsqueeze(input, wrapped + 1), expanded_shape)
    copied = contiguous_result(
        run_op(OPS["clone"], (expanded,))
    )  # a C-contiguous copy, as PyTorch's
    merged = (*shape[:wrapped], shape[wrapped] * count, *shape[wrapped + 1 :])
    return reshape(copied, merged)


@public(function=True, out=True)
def kron(input, other):  # noqa: A002
    """Both operands viewed with interleaved size-1 dims, multiplied, and merged back."""
    n = builtins.max(input.dim(), other.dim())
    a = (1,) * (n - input.dim()) + tuple(input._data.shape)
    b = (1,) * (n - other.dim()) + tuple(other._data.shape)
    left = run_op(OPS["unsafe_view"], (input,), (tuple(s for d in a for s in (d, 1)),))
    right = run_op(OPS["unsafe_view"], (other,), (tuple(s for d in b for s in (1, d)),))
    product = mul(left, right)
    merged = tuple(x * y for x, y in zip(a, b))
    if not _viewable(product._data, merged):  # operands laid out unlike each other: PyTorch's
        raise view_size_error()  # _unsafe_view of the product fails
    return run_op(OPS["unsafe_view"], (product,), (merged,))


# --- meshgrid, cartesian_prod, block_diag, addbmm ------------------------------------------------


@public(function=True)
def meshgrid(*tensors, indexing=None):
    """Each tensor viewed along its own dim and expanded to the grid: views, as in PyTorch."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warn_once(
            "torch.meshgrid: in an upcoming release, it will be required to pass the "
            "indexing argument."
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
    swap = indexing == "xy" and len(tensors) >= 2
    ordered = [tensors[1], tensors[0], *tensors[2:]] if swap else list(tensors)
    shape = tuple(t.numel() for t in ordered)
    grids = []
    for i, t in enumerate(ordered):
        view_shape = tuple(s if d == i else 1 for d, s in enumerate(shape))
        grids.append(expand(t.view(view_shape), shape))  # view, not reshape: ViewBackward0
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


@public(function=True)
def cartesian_prod(*tensors):
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


@public(function=True)
def block_diag(*tensors):
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                f"{t.dim()} dimensions"
            )
    if not tensors:  # PyTorch gives an empty 1 x 0 matrix
        from nbgrad.ops.creation import zeros

        return zeros(1, 0)
    return run_op(OPS["block_diag"], (list(tensors),))


@public(function=True, method=True, out=True)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    if batch1.dim() >= 2 and batch2.dim() >= 3:  # PyTorch expands the bias first
        expand(input.detach(), (batch1._data.shape[1], batch2._data.shape[2]))
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    a, b = batch1._data.shape, batch2._data.shape
    if a[0] != b[0]:
        raise RuntimeError(
            f"batch1 and batch2 must have same number of batches, got {a[0]} and {b[0]}"
        )
    if a[2] != b[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({a[1]}x{a[2]} and {b[1]}x{b[2]})")
    expand(input.detach(), (a[1], b[2]))  # PyTorch's error for a bias that does not expand
    return run_op(OPS["addbmm"], (input, batch1, batch2), (beta, alpha, a[0], a[1], b[2]))
