"""Kernels of derivatives.py's "packed sequences, 3-d convolution, unpooling, channel shuffle,
more upsampling" section, and the functions its formulas call, for NumPy arrays
(``ARRAY_FUNCTIONS``) and for differentiable Tensors (``tensor_namespace()``)."""

import numpy as np


def _array(value):
    """A saved value as a NumPy array, whether the formula got an array or a Tensor."""
    return np.asarray(getattr(value, "_data", value))


# --- packed sequences -------------------------------------------------------------------------
# A padded batch (T, B, *) whose sequences are sorted longest first is packed time step by time
# step: step t keeps the first batch_sizes[t] sequences (those still running), and the steps are
# stacked into data (sum(batch_sizes), *).


def packed_batch_sizes(lengths):
    """How many sequences are still running at each time step (lengths sorted longest first)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    steps = np.arange(int(lengths[0]))
    return (lengths[None, :] > steps[:, None]).sum(axis=1).astype(np.int64)


def pack_padded_sequence(x, lengths, batch_first):
    """(data, batch_sizes) of ATen's _pack_padded_sequence."""
    if batch_first:
        x = np.swapaxes(x, 0, 1)
    batch_sizes = packed_batch_sizes(lengths)
    # As ATen's slices, the steps stop at the padded length even if a length claims more.
    steps = [x[t, :size] for t, size in enumerate(batch_sizes[: x.shape[0]])]
    return np.concatenate(steps, axis=0), batch_sizes


def pack_padded_sequence_backward(grad, input_sizes, batch_sizes, batch_first):
    """Each step's gradient back into its place in the padded (T, B, *) layout; zero padding."""
    sizes = list(input_sizes)
    if batch_first:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = np.zeros(sizes, dtype=grad.dtype)
    offset = 0
    for t, size in enumerate(_array(batch_sizes)[: sizes[0]]):
        out[t, :size] = grad[offset : offset + size]
        offset += size
    return np.swapaxes(out, 0, 1) if batch_first else out


# --- channel shuffle, max unpooling -----------------------------------------------------------


def channel_shuffle(x, groups):
    """(N, C, *): the channels, read as a (groups, C / groups) grid, transposed."""
    n, c = x.shape[:2]
    grid = x.reshape(n, groups, c // groups, *x.shape[2:])
    return np.ascontiguousarray(np.swapaxes(grid, 1, 2)).reshape(x.shape)


def max_unpool(x, indices, output_size):
    """Each value of (N, C, *in) written at its flat index into a zero (N, C, *output_size):
    the inverse placement of a max pooling's indices (a later duplicate index overwrites an
    earlier one, as PyTorch's CPU kernel does)."""
    lead = x.shape[: -len(output_size)] if x.ndim > len(output_size) else ()
    volume = int(np.prod(output_size, dtype=np.int64))
    planes = int(np.prod(lead, dtype=np.int64))
    out = np.zeros((planes, volume), dtype=x.dtype)
    rows = np.repeat(np.arange(planes), indices.size // max(planes, 1))
    out[rows, indices.reshape(-1)] = x.reshape(-1)
    return out.reshape(*lead, *output_size)


def max_pool_double_backward(grad, indices, dims):
    """The gradient of max unpooling: each input position reads the gradient at its index."""
    lead = indices.shape[: indices.ndim - dims]
    flat = np.ascontiguousarray(grad).reshape(*lead, -1)
    picked = np.take_along_axis(flat, _array(indices).reshape(*lead, -1), axis=-1)
    return picked.reshape(indices.shape)


ARRAY_FUNCTIONS = {
    "pack_padded_sequence_backward": pack_padded_sequence_backward,
    "channel_shuffle": channel_shuffle,
    "max_pool_double_backward": max_pool_double_backward,
}


def tensor_namespace():
    """The Tensor versions, from differentiable operations."""

    def pack_padded_sequence_backward_tensor(grad, input_sizes, batch_sizes, batch_first):
        # ATen's _pack_padded_sequence_backward: zeros, each step copied into a slice of them
        # (a chain of CopySlices nodes), transposed back if batch_first.
        sizes = list(input_sizes)
        if batch_first:
            sizes[0], sizes[1] = sizes[1], sizes[0]
        out = grad.new_zeros(sizes)
        offset = 0
        for t, size in enumerate(_array(batch_sizes)[: sizes[0]]):
            size = int(size)
            out[t, :size] = grad[offset : offset + size]
            offset += size
        return out.transpose(0, 1) if batch_first else out

    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops import creation
    from nbgrad.ops.derivatives import OPS

    def max_pool_double_backward_tensor(grad, indices, dims):
        # ATen's: the gradient viewed flat per plane, gathered at the indices, viewed back.
        indices = _array(indices)
        lead = indices.shape[: indices.ndim - dims]
        flat_indices = creation.tensor(indices.reshape(*lead, -1))
        picked = grad.contiguous().view(*lead, -1).gather(-1, flat_indices)
        return picked.view(*indices.shape)

    return {
        "pack_padded_sequence_backward": pack_padded_sequence_backward_tensor,
        "channel_shuffle": lambda g, groups: run_op(OPS["channel_shuffle"], (g,), (groups,)),
        "max_pool_double_backward": max_pool_double_backward_tensor,
    }
