"""Kernels of derivatives.py's "packed sequences, 3-d convolution, unpooling, channel shuffle,
more upsampling" section, and the functions its formulas call, for NumPy arrays
(``ARRAY_FUNCTIONS``) and for differentiable Tensors (``tensor_namespace()``)."""

import numpy as np

import nbgrad as nb  # half-loaded while this module loads: used only inside functions


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


# --- 3-d convolution --------------------------------------------------------------------------
# Written for any number of spatial dims, and once for NumPy arrays and nbgrad Tensors alike: the
# forward and both gradients are sums over the kernel's offsets, each a strided slice of the
# (padded) input times that offset's weights (an einsum over channels within a group).

_SPATIAL_LETTERS = "defhijklm"


def _offsets(kernel_size):
    return list(np.ndindex(*kernel_size))


def _window(offset, stride, dilation, out_size):
    """The slices of the padded input that kernel offset ``offset`` multiplies, over the output."""
    return tuple(
        slice(k * d, k * d + s * (o - 1) + 1, s)
        for k, s, d, o in zip(offset, stride, dilation, out_size)
    )


def _grouped(x, groups):
    """(N, C, *) as (N, groups, C / groups, *)."""
    return x.reshape(x.shape[0], groups, x.shape[1] // groups, *x.shape[2:])


def _spatial(n):
    return _SPATIAL_LETTERS[:n]


def _pads(padding):
    return [(0, 0), (0, 0)] + [(p, p) for p in padding]


def _per_dim(values, dims):
    """PyTorch may give one value for every dim (``padding="valid"`` saves ``(0,)``)."""
    values = tuple(values)
    return values * dims if len(values) == 1 else values


def conv_nd(x, weight, bias, stride, padding, dilation, groups, backend):
    """out[n, o, *y] = sum over c, k of weight[o, c, *k] * padded[n, c, *(y * s + k * d)]."""
    dims = x.ndim - 2
    stride, padding, dilation = (_per_dim(v, dims) for v in (stride, padding, dilation))
    out_size = [
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, p, d in zip(x.shape[2:], weight.shape[2:], stride, padding, dilation)
    ]
    padded = backend.pad(x, padding)
    grouped_weight = _grouped_weight(weight, groups)
    letters = _spatial(dims)
    out = None
    for offset in _offsets(weight.shape[2:]):
        window = padded[(slice(None), slice(None), *_window(offset, stride, dilation, out_size))]
        term = backend.einsum(
            f"ngc{letters},goc->ngo{letters}",
            _grouped(window, groups),
            grouped_weight[(Ellipsis, *offset)],
        )
        out = term if out is None else out + term
    out = out.reshape(x.shape[0], weight.shape[0], *out_size)
    if bias is not None:
        out = out + bias.reshape(weight.shape[0], *([1] * dims))
    return out


def _grouped_weight(weight, groups):
    """(OC, C / groups, *k) as (groups, OC / groups, C / groups, *k)."""
    return weight.reshape(groups, weight.shape[0] // groups, *weight.shape[1:])


def conv_nd_input_grad(grad, input_shape, weight, stride, padding, dilation, groups, backend):
    """Each offset's share of the output gradient, times its weights, added back onto the
    slice of the padded input it came from; the padding cut off."""
    dims = len(input_shape) - 2
    stride, padding, dilation = (_per_dim(v, dims) for v in (stride, padding, dilation))
    out_size = grad.shape[2:]
    padded_shape = [s + 2 * p for s, p in zip(input_shape[2:], padding)]
    grouped_weight = _grouped_weight(weight, groups)
    grouped_grad = _grouped(grad, groups)
    letters = _spatial(dims)
    padded = backend.zeros(grad, (input_shape[0], input_shape[1], *padded_shape))
    for offset in _offsets(weight.shape[2:]):
        term = backend.einsum(
            f"ngo{letters},goc->ngc{letters}", grouped_grad, grouped_weight[(Ellipsis, *offset)]
        )
        window = (slice(None), slice(None), *_window(offset, stride, dilation, out_size))
        padded = backend.add_at(padded, window, term.reshape(input_shape[0], input_shape[1],
                                                             *out_size))  # fmt: skip
    return padded[
        (slice(None), slice(None), *(slice(p, p + s) for p, s in zip(padding, input_shape[2:])))
    ]


def conv_nd_weight_grad(grad, x, weight_shape, stride, padding, dilation, groups, backend):
    """Each offset's weights: the output gradient times the slice of the padded input it saw,
    summed over the batch and the output positions."""
    dims = x.ndim - 2
    stride, padding, dilation = (_per_dim(v, dims) for v in (stride, padding, dilation))
    out_size = grad.shape[2:]
    padded = backend.pad(x, padding)
    grouped_grad = _grouped(grad, groups)
    letters = _spatial(dims)
    pieces = []
    for offset in _offsets(weight_shape[2:]):
        window = padded[(slice(None), slice(None), *_window(offset, stride, dilation, out_size))]
        pieces.append(
            backend.einsum(
                f"ngo{letters},ngc{letters}->goc", grouped_grad, _grouped(window, groups)
            )  # fmt: skip
        )
    stacked = backend.stack(pieces, -1)  # (groups, OC / groups, C / groups, prod(k))
    return stacked.reshape(*weight_shape)


class _ArrayBackend:
    einsum = staticmethod(lambda spec, a, b: np.einsum(spec, a, b, optimize=True))
    stack = staticmethod(np.stack)

    @staticmethod
    def pad(x, padding):
        return np.pad(x, _pads(padding)) if any(padding) else x

    @staticmethod
    def zeros(like, shape):
        return np.zeros(shape, dtype=like.dtype)

    @staticmethod
    def add_at(target, window, values):
        target[window] += values
        return target


def convolution3d(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
                  bias_sym_sizes_opt):  # fmt: skip
    out = conv_nd(x, weight, bias, stride, padding, dilation, groups, _ArrayBackend)
    return out.astype(x.dtype, copy=False)


def transposed_output_size(in_sizes, kernel_size, stride, padding, dilation, output_padding):
    return [
        (i - 1) * s - 2 * p + d * (k - 1) + op + 1
        for i, k, s, p, d, op in zip(
            in_sizes, kernel_size, stride, padding, dilation, output_padding
        )
    ]


def convolution_transposed3d(x, weight, bias, stride, padding, dilation, transposed,
                             output_padding, groups, bias_sym_sizes_opt):  # fmt: skip
    """A transposed convolution is the input gradient of the convolution it transposes: each
    input element spreads, times the kernel, over a window of the output."""
    dims = x.ndim - 2
    stride, padding, dilation, output_padding = (
        _per_dim(v, dims) for v in (stride, padding, dilation, output_padding)
    )
    out_channels = weight.shape[1] * groups
    sizes = transposed_output_size(
        x.shape[2:], weight.shape[2:], stride, padding, dilation, output_padding
    )
    out = conv_nd_input_grad(
        x, (x.shape[0], out_channels, *sizes), weight, stride, padding, dilation, groups,
        _ArrayBackend,
    )  # fmt: skip
    if bias is not None:
        out = out + bias.reshape(out_channels, *([1] * dims))
    return np.ascontiguousarray(out).astype(x.dtype, copy=False)


ARRAY_FUNCTIONS = {
    "conv_nd": lambda x, weight, stride, padding, dilation, groups: conv_nd(
        x, weight, None, stride, padding, dilation, groups, _ArrayBackend
    ),
    "conv_nd_input_grad": lambda grad, shape, weight, stride, padding, dilation, groups: (
        conv_nd_input_grad(grad, shape, weight, stride, padding, dilation, groups, _ArrayBackend)
    ),
    "conv_nd_weight_grad": lambda grad, x, shape, stride, padding, dilation, groups: (
        conv_nd_weight_grad(grad, x, shape, stride, padding, dilation, groups, _ArrayBackend)
    ),
    "pack_padded_sequence_backward": pack_padded_sequence_backward,
    "channel_shuffle": channel_shuffle,
    "max_pool_double_backward": max_pool_double_backward,
}


# --- Tensor versions (backward with create_graph=True) -----------------------------------------
# The same helpers over nbgrad Tensors, built from differentiable operations: NAME_tensor is the
# Tensor version of the formula function NAME. ``nb`` is complete by the time they run; run_op and
# the op table, which load after this module, they import inside their bodies.


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


def max_pool_double_backward_tensor(grad, indices, dims):
    from nbgrad.ops import creation

    # ATen's: the gradient viewed flat per plane, gathered at the indices, viewed back.
    indices = _array(indices)
    lead = indices.shape[: indices.ndim - dims]
    flat_indices = creation.tensor(indices.reshape(*lead, -1))
    picked = grad.contiguous().view(*lead, -1).gather(-1, flat_indices)
    return picked.view(*indices.shape)


class _TensorBackend:
    """conv_nd's backend over Tensors (``_ArrayBackend``'s twin)."""

    @staticmethod
    def einsum(spec, a, b):
        return nb.einsum(spec, a, b)

    @staticmethod
    def stack(pieces, dim):
        return nb.stack(pieces, dim)

    @staticmethod
    def pad(x, padding):
        if not any(padding):
            return x
        flat = [p for size in reversed(padding) for p in (size, size)]
        return nb.nn.functional.pad(x, flat)

    @staticmethod
    def zeros(like, shape):
        return like.new_zeros(shape)

    @staticmethod
    def add_at(target, window, values):
        target[window] = target[window] + values
        return target


def conv_nd_tensor(x, weight, stride, padding, dilation, groups):
    return conv_nd(x, weight, None, stride, padding, dilation, groups, _TensorBackend)


def conv_nd_input_grad_tensor(grad, shape, weight, stride, padding, dilation, groups):
    return conv_nd_input_grad(
        grad, shape, weight, stride, padding, dilation, groups, _TensorBackend
    )


def conv_nd_weight_grad_tensor(grad, x, shape, stride, padding, dilation, groups):
    return conv_nd_weight_grad(grad, x, shape, stride, padding, dilation, groups, _TensorBackend)


def tensor_namespace():
    """The Tensor versions, from differentiable operations."""
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return {
        "conv_nd": conv_nd_tensor,
        "conv_nd_input_grad": conv_nd_input_grad_tensor,
        "conv_nd_weight_grad": conv_nd_weight_grad_tensor,
        "pack_padded_sequence_backward": pack_padded_sequence_backward_tensor,
        "channel_shuffle": lambda g, groups: run_op(OPS["channel_shuffle"], (g,), (groups,)),
        "max_pool_double_backward": max_pool_double_backward_tensor,
    }
