"""How PyTorch lays out a new result in memory, so that an op's result has PyTorch's strides.

A result's strides are visible (``stride()``, ``is_contiguous()``) and decide what happens next:
whether ``view`` works, whether ``reshape`` copies (``CloneBackward0``), whether ``contiguous()``
adds a node. NumPy lays results out by rules of its own, so each op table entry says which of
PyTorch's rules its result follows (``OpSpec.layout``), and ``lay_out`` applies it:

``"elementwise"``  PyTorch's TensorIterator, which runs every element-wise kernel: the result is
                   dense, its dims ordered in memory as its operands' dims are (``iterator_order``:
                   the first operand decides, the next ones break its ties; a broadcast dim has
                   no say). A transposed input gives a transposed result.
``"like_self"``    ``empty_like(self)`` (``clone``, ``flip``, ``sort``, ``index_put``): ``self``'s
                   own strides when it is dense, otherwise a dense layout in ``self``'s dim order.
``"self_strides"`` ``self``'s strides exactly, even when they skip memory (``slice_scatter``:
                   PyTorch clones with ``clone_preserve_strides``; an expanded ``self``, whose
                   elements overlap, is cloned as by "like_self").
``"contiguous"``   a fresh C-contiguous tensor, whatever the inputs (reductions over a dim,
                   ``softmax``, ``cumsum``, ``roll``, ``triu``, the normalization layers).
``"advanced_index"``  ``self[indices]`` with index tensors: TensorIterator again, over ``self``
                   restrided to the result's shape (a step of 0 along the index's dims) and
                   each index tensor (a step of 0 along every other dim); see
                   ``advanced_index_order``.
``None``           the forward's array as it is: views, and ops whose NumPy result already has
                   PyTorch's layout.

Only the order of dims in memory matters for a dense result: its strides follow from it. NumPy
only (below the engine, like ``storage_geometry``).
"""

import numpy as np

RULES = ("elementwise", "like_self", "self_strides", "contiguous", "advanced_index", None)


def lay_out(rule, out, operands):
    """``out`` (a NumPy array) with the layout ``rule`` gives it, for an op whose array operands
    are ``operands`` in PyTorch's order (``self`` first); Python numbers among them are ignored."""
    if rule is None or out.ndim == 0 or out.size == 0:
        return out
    if rule == "contiguous":
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    arrays = [a for a in operands if type(a) is np.ndarray]
    if out.flags.c_contiguous and all(a.flags.c_contiguous for a in arrays):
        return out  # contiguous operands give a contiguous result under every rule
    if rule == "advanced_index":
        order = advanced_index_order(arrays[0], operands[1], out.shape)
        return out if order is None else _dense_in_order(out, order)
    if rule == "elementwise":
        order = iterator_order(out.shape, arrays)
    else:  # the rules that copy self's layout
        self = arrays[0] if arrays else None
        if self is None or self.shape != out.shape:
            return out
        overlapping = any(step == 0 and n > 1 for n, step in zip(self.shape, self.strides))
        if rule == "self_strides" and not overlapping:  # (an expanded self is cloned densely)
            return _with_strides(out, self.strides)
        order = iterator_order(out.shape, [self])
    return _dense_in_order(out, order)


def iterator_order(shape, operands):
    """The dims of a result of ``shape``, innermost in memory first, as PyTorch's TensorIterator
    orders them (``reorder_dimensions``) for these operands broadcast to ``shape``.

    An insertion sort of the dims, starting from C order (the last dim innermost), in which two
    dims swap when the first operand that tells them apart steps further along the earlier one;
    an operand broadcast along either dim has no say, and equal steps leave the smaller dim
    innermost."""
    ndim = len(shape)
    steps = [_broadcast_steps(a, shape) for a in operands if a.ndim <= ndim]

    def should_swap(dim0, dim1):
        for strides in steps:
            stride0, stride1 = strides[dim0], strides[dim1]
            if stride0 == 0 or stride1 == 0:
                continue
            if stride0 != stride1:
                return 1 if stride0 > stride1 else -1
            if shape[dim0] > shape[dim1]:
                return 1
        return 0

    order = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        moving = i
        for earlier in range(i - 1, -1, -1):
            comparison = should_swap(order[earlier], order[moving])
            if comparison > 0:
                order[earlier], order[moving] = order[moving], order[earlier]
                moving = earlier
            elif comparison < 0:
                break
    return order


def _broadcast_steps(array, shape):
    """The array's step (in bytes, as TensorIterator compares them) along each dim of ``shape``
    it is broadcast to: 0 along a dim it does not have or has as 1 where ``shape`` does not."""
    offset = len(shape) - array.ndim
    steps = [0] * offset
    for size, target, stride in zip(array.shape, shape[offset:], array.strides):
        steps.append(0 if size == 1 and target != 1 else abs(stride))
    return steps


def _dense_in_order(out, order):
    """``out``'s values in a dense array whose dims lie in memory in ``order`` (innermost first)."""
    if _in_order(out, order):
        return out
    outermost_first = order[::-1]
    fresh = np.empty([out.shape[d] for d in outermost_first], out.dtype)
    fresh = fresh.transpose(np.argsort(outermost_first))
    fresh[...] = out
    return fresh


def _in_order(array, order):
    """Whether ``array`` is dense and its dims lie in memory in ``order`` (dims of size 1, where
    no step is ever taken, are not compared, as PyTorch does not compare them)."""
    expected = array.itemsize
    for dim in order:
        if array.shape[dim] == 1:
            continue
        if array.strides[dim] != expected:
            return False
        expected *= array.shape[dim]
    return True


def _with_strides(out, strides):
    """``out``'s values in new memory laid out with exactly these strides (in bytes, all
    non-negative or made so), which may skip memory as a sliced tensor's do."""
    strides = tuple(abs(s) for s in strides)
    if out.strides == strides:
        return out
    span = sum((n - 1) * s for n, s in zip(out.shape, strides)) // out.itemsize + 1
    memory = np.empty(span, out.dtype)
    fresh = np.lib.stride_tricks.as_strided(memory, out.shape, strides)
    fresh[...] = out
    return fresh


def is_dense(array):
    """Whether the array's elements fill a block of memory with no gaps and no repeats (PyTorch's
    ``is_non_overlapping_and_dense``)."""
    expected = array.itemsize
    for dim in sorted(range(array.ndim), key=lambda d: abs(array.strides[d])):
        size = array.shape[dim]
        if size == 1:
            continue
        if abs(array.strides[dim]) != expected:
            return False
        expected *= size
    return True


def gradient_layout(grad, variable):
    """A leaf's ``.grad`` in the layout PyTorch's AccumulateGrad gives it (its "gradient layout
    contract"): the leaf's own strides when the leaf is dense, C-contiguous otherwise. The same
    array when it already has that layout."""
    if grad.ndim == 0 or grad.size == 0 or grad.shape != variable.shape:
        return grad
    if is_dense(variable):
        return _dense_in_order(grad, iterator_order(grad.shape, [variable]))
    return grad if grad.flags.c_contiguous else np.ascontiguousarray(grad)


def advanced_index_order(self, key, shape):
    """The dim order (innermost first) of ``self[key]``, of ``shape``, as PyTorch's index kernel
    lays it out; ``key`` holds, for ``self``'s leading dims, ``slice(None)`` or an integer or
    boolean array (nbgrad's ``index`` entry). None if the key is not of that form.

    As ATen's ``AdvancedIndex``: masks become the columns of their ``nonzero()``; the index
    arrays broadcast together; when they are not next to each other their dims move to the
    front (the result's index dims come first); then TensorIterator orders the result's dims
    from ``self`` seen in the result's shape (``restride_src``) and the index arrays seen there
    (``reshape_indexer``)."""
    indices = []
    for k in key:
        if isinstance(k, slice):
            indices.append(None)
        elif isinstance(k, np.ndarray) and k.dtype == bool:
            if k.ndim == 0:
                return None
            columns = np.stack(np.nonzero(k), axis=1)  # nonzero(): one row per True
            indices.extend(columns[:, j] for j in range(k.ndim))
        elif isinstance(k, np.ndarray):
            indices.append(k)
        else:
            return None
    indices += [None] * (self.ndim - len(indices))
    if len(indices) != self.ndim:
        return None
    positions = [d for d, k in enumerate(indices) if k is not None]
    if not positions:
        return None
    if positions != list(range(positions[0], positions[-1] + 1)):  # not adjacent: to the front
        front = positions + [d for d in range(self.ndim) if d not in positions]
        self = self.transpose(front)
        indices = [indices[d] for d in front]
        positions = list(range(len(positions)))
    arrays = np.broadcast_arrays(*(indices[d] for d in positions))
    start, stop = positions[0], positions[-1] + 1
    before, after = start, self.ndim - stop
    index_shape = arrays[0].shape
    if tuple(shape) != self.shape[:start] + index_shape + self.shape[stop:]:
        return None
    as_strided = np.lib.stride_tricks.as_strided
    restrided = as_strided(
        self, shape, self.strides[:start] + (0,) * len(index_shape) + self.strides[stop:]
    )
    reshaped = [
        as_strided(a, (1,) * before + index_shape + (1,) * after,
                   (0,) * before + a.strides + (0,) * after)
        for a in arrays
    ]  # fmt: skip
    return iterator_order(shape, [restrided, *reshaped])
