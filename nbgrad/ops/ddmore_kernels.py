"""Kernels of derivatives.py's section "double backwards of pooling, embedding_bag and
masked_scatter; segment_reduce": torch.segment_reduce's forward and backward, and the formula
helpers whose gradients PyTorch does not implement.

segment_reduce reduces ``data`` along ``axis`` over consecutive segments. The segments are given
by ``lengths`` (shape ``data.shape[:axis] + (S,)``) or by ``offsets`` (one more along the last
dim: segment ``s`` is ``offsets[..., s]:offsets[..., s + 1]``). Each segment starts from an
initial value (``initial``, or the reduction's identity: -inf for max, inf for min, 0 for sum
and mean, 1 for prod) and takes in its elements one after the other, as ATen's CPU kernel does,
so float16 and float32 round as PyTorch rounds:

- max and min keep a nan once one is met;
- mean divides the sum (initial included) by the segment's length; an empty segment without
  ``initial`` is nan, with ``initial`` it is ``initial``.

Its backward (PyTorch's ``_segment_reduce_backward``) sends each output's gradient back to the
segment's elements: all of it for sum, divided by the length for mean, times the product of
the other elements for prod; for max and min to the elements equal to the result (or nan),
where ATen's kernel, when several tie, divides only the positive gradients among them by their
count (a negative one reaches each tied element whole). PyTorch has no derivative for that
backward: differentiated again (create_graph=True) its result gets a NotImplemented grad_fn, and
so does embedding_bag's gradient for its per-sample weights.
"""

import numpy as np

# The reduction names torch.segment_reduce accepts, and the kernel each one runs.
REDUCTIONS = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "amax": "max",
              "min": "min", "amin": "min"}  # fmt: skip


def segment_bounds(offsets, axis):
    """(outer index, segment, start, stop) for every segment: ``offsets`` has one row of S + 1
    bounds per index of the dims before ``axis``."""
    rows = np.asarray(offsets).reshape(-1, offsets.shape[-1])
    outer_shape = offsets.shape[:-1]
    for flat, row in enumerate(rows):
        outer = np.unravel_index(flat, outer_shape) if outer_shape else ()
        for s in range(len(row) - 1):
            yield tuple(int(i) for i in outer), s, int(row[s]), int(row[s + 1])


def _initial_value(kind, initial, dtype):
    if initial is not None:
        return dtype.type(initial)
    return dtype.type({"max": -np.inf, "min": np.inf, "sum": 0, "mean": 0, "prod": 1}[kind])


def segment_reduce(data, reduce, offsets, axis, initial):
    """The forward: ``data`` reduced over each segment along ``axis`` (``offsets`` as above,
    made from lengths by the caller)."""
    kind = REDUCTIONS[reduce]
    segments = offsets.shape[-1] - 1
    out = np.empty((*data.shape[:axis], segments, *data.shape[axis + 1 :]), data.dtype)
    start_value = _initial_value(kind, initial, data.dtype)
    for outer, s, start, stop in segment_bounds(offsets, axis):
        block = data[outer][start:stop]  # (length, *inner)
        acc = np.full(data.shape[axis + 1 :], start_value, data.dtype)
        for element in block:
            if kind == "max":
                acc = np.where(np.isnan(element), element, np.where(acc < element, element, acc))
            elif kind == "min":
                acc = np.where(np.isnan(element), element, np.where(element < acc, element, acc))
            elif kind == "prod":
                acc = acc * element
            else:
                acc = acc + element
        length = stop - start
        if kind == "mean":
            if length == 0 and initial is None:
                acc = np.full_like(acc, np.nan)
            elif length > 0:
                acc = np.where(np.isnan(acc), acc, acc / data.dtype.type(length))
        out[(*outer, s)] = acc
    return out


def segment_reduce_backward(grad, output, data, reduce, offsets, axis, initial):
    """The gradient of ``data`` (zero outside every segment and in empty ones)."""
    kind = REDUCTIONS[reduce]
    grad_input = np.zeros(data.shape, grad.dtype)
    for outer, s, start, stop in segment_bounds(offsets, axis):
        length = stop - start
        if length <= 0:
            continue
        block = data[outer][start:stop]
        g = grad[(*outer, s)]
        target = grad_input[outer][start:stop]  # a view: written in place
        if kind in ("max", "min"):
            hit = np.isnan(block) | (block == output[(*outer, s)])
            target[...] = np.where(hit, g, target)
            count = hit.sum(axis=0)
            shared = (count >= 2) & (target > 0)
            target[...] = np.where(shared, target / np.maximum(count, 1).astype(target.dtype),
                                   target)  # fmt: skip
        elif kind == "mean":
            target[...] = g / grad.dtype.type(length)
        elif kind == "sum":
            target[...] = g
        else:
            scaled = g * output[(*outer, s)]
            start_value = _initial_value("prod", initial, data.dtype)
            for j in range(length):
                value = block[j]
                others = np.full(value.shape, start_value, data.dtype)
                for k in range(length):
                    if k != j:
                        others = others * block[k]
                direct = np.isnan(value) | (value == 0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    target[j] = np.where(direct, g * others, scaled / value)
    return grad_input


# --- the formula helpers -------------------------------------------------------------------------


def _segment_reduce_backward_array(grad, result, data, reduce, lengths, offsets, axis, initial):
    bounds = offsets if offsets is not None else offsets_of(lengths)
    return segment_reduce_backward(grad, result, data, reduce, bounds, _wrap(axis, data), initial)


def _segment_reduce_backward_tensor(grad, result, data, reduce, lengths, offsets, axis, initial):
    from nbgrad.autograd import reading
    from nbgrad.autograd.node import not_implemented_history
    from nbgrad.ops import creation

    values = _segment_reduce_backward_array(
        reading.values(grad),
        reading.values(result),
        reading.values(data),
        reduce,
        _array_or_none(lengths),
        _array_or_none(offsets),
        axis,
        initial,
    )
    return not_implemented_history(
        creation.tensor(values), "_segment_reduce_backward", (grad, result, data)
    )


def _per_sample_weights_backward_tensor(grad, weight, *rest):
    """embedding_bag's gradient for its per-sample weights, computed, with PyTorch's
    NotImplemented grad_fn (its _embedding_bag_per_sample_weights_backward has no derivative)."""
    from nbgrad.autograd import reading
    from nbgrad.autograd.node import not_implemented_history
    from nbgrad.ops import creation, nn_extra_kernels

    values = nn_extra_kernels.ARRAY_FUNCTIONS["embedding_bag_per_sample_weights_backward"](
        reading.values(grad), reading.values(weight), *rest
    )
    return not_implemented_history(
        creation.tensor(values), "_embedding_bag_per_sample_weights_backward", (grad, weight)
    )


def offsets_of(lengths):
    """Segment bounds from lengths: a leading 0, then the running sums, along the last dim."""
    lengths = np.asarray(lengths, np.int64)
    zero = np.zeros((*lengths.shape[:-1], 1), np.int64)
    return np.concatenate([zero, np.cumsum(lengths, axis=-1)], axis=-1)


def _wrap(axis, data):
    return axis + data.ndim if axis < 0 else axis


def _array_or_none(value):
    from nbgrad.autograd import reading
    from nbgrad.autograd.tensor import Tensor

    return reading.values(value) if isinstance(value, Tensor) else value


def _masked_scatter_tensor(self, source, mask):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS["masked_scatter"], (self, source), (_array_or_none(mask),))


def _zeros_shaped_array(shape, like):
    return np.zeros(tuple(shape), like.dtype)


def _zeros_shaped_tensor(shape, like):
    return like.new_zeros(tuple(shape))


ARRAY_FUNCTIONS = {
    "_segment_reduce_backward": _segment_reduce_backward_array,
    "masked_scatter": lambda self, source, mask: _masked_scatter_array(self, source, mask),
    "zeros_shaped": _zeros_shaped_array,
}


def _masked_scatter_array(self, source, mask):
    from nbgrad.ops import misc_kernels

    return misc_kernels.masked_scatter(self, source, np.asarray(mask))


def tensor_namespace():
    return {
        "_segment_reduce_backward": _segment_reduce_backward_tensor,
        "embedding_bag_per_sample_weights_backward": _per_sample_weights_backward_tensor,
        "masked_scatter": _masked_scatter_tensor,
        "zeros_shaped": _zeros_shaped_tensor,
    }
