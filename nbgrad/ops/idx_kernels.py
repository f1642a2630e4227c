"""Kernels and backward helpers of PyTorch's private indexing ops and of the scatters and views
written with storage geometry: ``torch._unsafe_index``, ``_unsafe_index_put``,
``_unsafe_masked_index``, ``_unsafe_masked_index_put_accumulate``, ``as_strided_scatter``.

Each helper a formula calls has two forms: on NumPy arrays (``ARRAY_FUNCTIONS``, a plain
backward) and on differentiable Tensors (``tensor_namespace()``, backward with
``create_graph=True``), where it runs the op PyTorch's formula runs, so that a gradient of a
gradient records PyTorch's node (``_unsafe_index``'s backward is ``_unsafe_index_put`` with
accumulate, hence UnsafeIndexPutBackward0).

An ``indices`` argument is a tuple of integer index arrays, one per leading dim (NumPy's key).
"""

import numpy as np

from nbgrad.ops import storage_geometry

# --- the "masked" variants: out-of-range indices where the mask is False ----------------------
# ATen clamps every index into [-size, size - 1] before indexing, so that the places the mask
# hides may hold any index; where the mask is True the index was in range anyway.


def clamped(indices, sizes):
    return tuple(np.clip(index, -size, size - 1) for index, size in zip(indices, sizes))


def unsafe_masked_index(self, mask, indices, fill):
    picked = self[clamped(indices, self.shape)]
    # masked_fill out of place: the mask broadcasts to the picked values, never beyond them
    filled = np.where(np.broadcast_to(mask, picked.shape), picked, fill)
    return filled.astype(self.dtype, copy=False)


def unsafe_masked_index_put_accumulate(self, values, mask, indices):
    kept = np.where(np.broadcast_to(mask, values.shape), values, 0).astype(values.dtype)
    out = self.copy()
    key = clamped(indices, self.shape)
    np.add.at(out, key, np.broadcast_to(kept, out[key].shape))
    return out


# --- as_strided_scatter: a copy of self with one as_strided view of it replaced by src --------
# PyTorch copies self as clone_preserve_strides does: the whole storage self lies in, with self
# at the same place there (same strides, same offset), so the view's positions, and its default
# offset (self's own), count in that storage. A self whose elements overlap (expanded) is cloned
# densely instead, from offset 0.


def _overlapping(array):
    return any(step == 0 and n > 1 for n, step in zip(array.shape, array.strides))


def scatter_target(self, self_geometry, storage_size):
    """The copy as_strided_scatter writes into, and its geometry in its own storage."""
    if _overlapping(self):
        out = np.array(self, order="C")  # (order "K" would put a 0 stride's dim innermost)
        return out, storage_geometry.geometry_in(out, storage_geometry.address(out))
    storage = storage_geometry.as_strided_view(self, self_geometry, (storage_size,), (1,), 0)
    copied = storage.copy()
    origin = storage_geometry.geometry_in(copied, storage_geometry.address(copied))
    out = storage_geometry.as_strided_view(copied, origin, *self_geometry)
    return out, self_geometry


def as_strided_scatter(self, src, size, stride, storage_offset, self_geometry, storage_size):
    out, geometry = scatter_target(self, self_geometry, storage_size)
    view = storage_geometry.as_strided_view(out, geometry, size, stride, storage_offset)
    view[...] = src
    return out


def _positions(size, stride, storage_offset):
    return storage_geometry.strided_positions(size, stride, storage_offset or 0)


def as_strided_scatter_backward_array(grad, size, stride, storage_offset):
    """self's gradient: the gradient, but zero at the places src replaced (read in the gradient
    laid out contiguously). PyTorch 2.13 gives the reverse (the gradient only at those places),
    which its own gradcheck rejects; nbgrad gives the derivative (README)."""
    out = np.array(grad, order="C").reshape(-1)
    out[_positions(size, stride, storage_offset)] = 0
    return out.reshape(grad.shape)


def as_strided_scatter_source_array(grad, size, stride, storage_offset):
    """src's gradient: the as_strided view of the gradient laid out contiguously (a view, with
    the view's strides, as PyTorch's is)."""
    contiguous = np.array(grad, order="C")
    geometry = storage_geometry.geometry_in(contiguous, storage_geometry.address(contiguous))
    return storage_geometry.as_strided_view(contiguous, geometry, size, stride, storage_offset or 0)


# --- the helpers the formulas call, on arrays ---------------------------------------------------


def _index_into_zeros(grad, sizes, indices):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    np.add.at(out, tuple(indices), grad)
    return out


def _zero_places(grad, indices):
    out = np.array(grad)
    out[tuple(indices)] = 0
    return out


def _masked_into_zeros(grad, mask, indices, sizes):
    return unsafe_masked_index_put_accumulate(
        np.zeros(tuple(sizes), dtype=grad.dtype), grad, mask, indices
    )


ARRAY_FUNCTIONS = {
    "unsafe_index_backward": _index_into_zeros,
    "unsafe_index_at": lambda grad, indices: grad[tuple(indices)],
    "unsafe_index_put_zeros": lambda grad, indices, values_sizes: _zero_places(grad, indices),
    "index_put_zeros": lambda grad, indices, values_sizes: _zero_places(grad, indices),
    "unsafe_masked_index_backward": _masked_into_zeros,
    "unsafe_masked_index_at": lambda grad, mask, indices: unsafe_masked_index(
        grad, mask, indices, 0
    ),
    "as_strided_scatter_backward": as_strided_scatter_backward_array,
    "as_strided_scatter_source": as_strided_scatter_source_array,
}


# --- and on Tensors: the ops PyTorch's formulas run ---------------------------------------------


def _run(name, inputs, attrs):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS[name], inputs, attrs)


def _zeros(sizes, like):
    import nbgrad

    return nbgrad.zeros(tuple(sizes), dtype=like.dtype)


def unsafe_index_backward_tensor(grad, sizes, indices):
    put = (tuple(indices), True, tuple(grad.shape))
    return _run("unsafe_index_put", (_zeros(sizes, grad), grad), put)


def unsafe_index_at_tensor(grad, indices):
    return _run("unsafe_index", (grad,), (tuple(indices),))


def unsafe_index_put_zeros_tensor(grad, indices, values_sizes):
    put = (tuple(indices), False, tuple(values_sizes))
    return _run("unsafe_index_put", (grad, _zeros(values_sizes, grad)), put)


def index_put_zeros_tensor(grad, indices, values_sizes):
    put = (tuple(indices), False, tuple(values_sizes))
    return _run("index_put_values", (grad, _zeros(values_sizes, grad)), put)


def unsafe_masked_index_backward_tensor(grad, mask, indices, sizes):
    put = (mask, tuple(indices), tuple(grad.shape))
    return _run("unsafe_masked_index_put_accumulate", (_zeros(sizes, grad), grad), put)


def unsafe_masked_index_at_tensor(grad, mask, indices):
    return _run("unsafe_masked_index", (grad,), (mask, tuple(indices), 0))


def as_strided_scatter_backward_tensor(grad, size, stride, storage_offset):
    # the gradient with zeros scattered over the places src replaced
    blank = _zeros(tuple(size), grad)
    return grad.contiguous().as_strided_scatter(blank, tuple(size), tuple(stride), storage_offset)


def as_strided_scatter_source_tensor(grad, size, stride, storage_offset):
    return grad.contiguous().as_strided(tuple(size), tuple(stride), storage_offset)


def tensor_namespace():
    return {
        "unsafe_index_backward": unsafe_index_backward_tensor,
        "unsafe_index_at": unsafe_index_at_tensor,
        "unsafe_index_put_zeros": unsafe_index_put_zeros_tensor,
        "index_put_zeros": index_put_zeros_tensor,
        "unsafe_masked_index_backward": unsafe_masked_index_backward_tensor,
        "unsafe_masked_index_at": unsafe_masked_index_at_tensor,
        "as_strided_scatter_backward": as_strided_scatter_backward_tensor,
        "as_strided_scatter_source": as_strided_scatter_source_tensor,
    }
