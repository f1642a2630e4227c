"""Views described by their place in memory: the storage geometry of ``as_strided``.

PyTorch describes a view by its geometry in its base's storage: size, stride and storage offset,
in elements. nbgrad's storage is the memory of the tensor that owns it (a view's base), counted
in elements from its lowest address; a tensor's own geometry there is ``(shape, strides,
offset)``, which for a tensor laid out as PyTorch lays it out gives PyTorch's very numbers.

The engine (autograd/views.py) reads it to rebuild a view whose base was written to, the op table
(``as_strided``'s forward) and both formula namespaces (its backward) to find the input elements a
view reads. NumPy only.
"""

import numpy as np


def address(array):
    return array.__array_interface__["data"][0]


def lowest_address(array):
    """Where an array's memory starts (below its first element if a stride is negative)."""
    if array.size == 0:
        return address(array)
    return address(array) + sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s < 0)


def storage_size(array):
    """How many elements the memory from an array's lowest to its highest element spans."""
    if array.size == 0:
        return 0
    span = sum((n - 1) * abs(s) for n, s in zip(array.shape, array.strides))
    return span // array.itemsize + 1


def storage_size_of(geometry):
    """How many elements of storage a ``(size, stride, offset)`` geometry reaches into."""
    size, stride, offset = geometry
    if 0 in size:
        return offset
    return offset + 1 + sum((n - 1) * step for n, step in zip(size, stride) if step > 0)


def geometry_in(array, storage_start):
    """``(size, stride, storage_offset)`` of an array in memory starting at ``storage_start``."""
    itemsize = array.itemsize
    offset = (address(array) - storage_start) // itemsize
    return array.shape, tuple(s // itemsize for s in array.strides), offset


def strided_positions(size, stride, storage_offset):
    """The storage position of each element of a ``(size, stride, storage_offset)`` geometry:
    an integer array of shape ``size``."""
    positions = np.full(tuple(size), storage_offset, dtype=np.int64)
    for dim, (n, step) in enumerate(zip(size, stride)):
        along = np.arange(n, dtype=np.int64) * step
        positions += along.reshape((n,) + (1,) * (len(size) - dim - 1))
    return positions


def as_strided_view(array, array_geometry, size, stride, storage_offset):
    """The as_strided view of the storage ``array`` lies in (``array_geometry`` there), sharing
    its memory."""
    as_strided = np.lib.stride_tricks.as_strided
    itemsize = array.itemsize
    if storage_offset is None:  # not given: where the array itself starts
        storage_offset = array_geometry[2]
    shift = (storage_offset - array_geometry[2]) * itemsize
    # A 0-d view of the element ``shift`` bytes from the array's first one, as the origin.
    origin = as_strided(array, shape=(2,), strides=(shift,))[1, ...]
    return as_strided(origin, tuple(size), tuple(step * itemsize for step in stride))


def as_strided_source(input_geometry, size, stride, storage_offset):
    """For each element of an as_strided view, the row-major index of the input element at the
    same storage position, or -1 where the view reads storage outside the input."""
    if storage_offset is None:  # not given: where the input itself starts
        storage_offset = input_geometry[2]
    input_positions = strided_positions(*input_geometry)
    view_positions = strided_positions(size, stride, storage_offset)
    if view_positions.size == 0:
        return view_positions
    length = max(int(view_positions.max()), int(input_positions.max(initial=0))) + 1
    input_at = np.full(length, -1, dtype=np.int64)
    input_at[input_positions.reshape(-1)] = np.arange(input_positions.size)
    return input_at[view_positions]


def as_strided_key(input_geometry, size, stride, storage_offset):
    """The index into the input (row-major, of shape ``input_geometry[0]``) that picks an
    as_strided view's elements; None if the view reads storage outside the input."""
    source = as_strided_source(input_geometry, size, stride, storage_offset)
    if (source < 0).any():
        return None
    if not input_geometry[0]:  # a 0-d input: its one element, seen as the view's shape
        return (None,) * source.ndim if source.size == 1 else None
    return np.unravel_index(source, tuple(input_geometry[0]))


def _non_overlapping_and_dense(array):
    """Whether the elements fill their memory exactly, each once (any order of dims)."""
    step = array.itemsize
    for size, stride in sorted(
        ((n, s) for n, s in zip(array.shape, array.strides) if n != 1), key=lambda p: p[1]
    ):
        if stride != step:
            return False
        step *= size
    return True


def _same_layout(a, b):
    """The same elements in the same order: equal shapes and strides, where the stride of a
    dimension of size 1 does not count (it never steps). PyTorch compares the strides of the
    region written, which for ``x.view(-1, 1)[:, ::2] += 1`` are the slice's on both sides."""
    return a.shape == b.shape and all(
        sa == sb for n, sa, sb in zip(a.shape, a.strides, b.strides) if n > 1
    )


def partially_overlaps(written, read):
    """PyTorch's test before writing into ``written`` from ``read`` (``get_overlap_status``
    reporting Partial): their memory overlaps, but not as the very same elements laid out the
    same way (``x.add_(x)`` is fine, ``x[1:].add_(x[:-1])`` and ``x.add_(x.t())`` are not).
    Arrays that skip or repeat elements are "too hard" for PyTorch, which then lets the write be."""
    if written is read or written.size == 0 or read.size == 0:
        return False
    if not np.may_share_memory(written, read):  # bounds only: cheap, and enough to rule out
        return False
    if not (_non_overlapping_and_dense(written) and _non_overlapping_and_dense(read)):
        return False
    written_start, read_start = lowest_address(written), lowest_address(read)
    written_end = written_start + written.size * written.itemsize
    read_end = read_start + read.size * read.itemsize
    if written_start == read_start and written_end == read_end:
        return not _same_layout(written, read)
    return written_start < read_end and read_start < written_end


def shifted(array, shift):
    """A view of ``array``'s memory ``shift`` bytes further on, of the same shape and strides
    (no element is read: for an empty array that starts where PyTorch's would)."""
    as_strided = np.lib.stride_tricks.as_strided
    origin = as_strided(array, shape=(2,), strides=(shift,))[1, ...]
    return as_strided(origin, array.shape, array.strides)


def sliced(array, dim, start, end, step):
    """``array[start:end:step]`` along ``dim``, a view. NumPy leaves an empty slice where the
    array starts along ``dim``; PyTorch puts it at the (clamped) start, which its
    ``storage_offset()`` shows (``torch.zeros(5)[5:]`` starts at 5): so does this."""
    view = array[(slice(None),) * dim + (slice(start, end, step),)]
    if view.shape[dim] == 0 and array.shape[dim] > 0:
        first = slice(start, end, step).indices(array.shape[dim])[0]
        if first:
            return shifted(view, first * array.strides[dim])
    return view
