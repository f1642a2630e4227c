"""NumPy kernels of adaptive pooling and transposed convolution, and the functions their
derivative formulas call (NumPy versions, and Tensor versions named ``NAME_tensor`` gathered by
``tensor_namespace()``).

Adaptive pooling cuts each spatial dim of size ``n`` into ``m`` windows, window ``i`` covering
``floor(i * n / m)`` to ``ceil((i + 1) * n / m)`` (windows may overlap). Average pooling is
then separable and linear: ``out = A_h @ x @ A_w.T`` with ``A`` the averaging matrices, and its
backward is ``A_h.T @ grad @ A_w``.

A transposed convolution is the input-gradient of the convolution with the same weight: it
spreads each input element, times the kernel, over its window of the output. Its own gradients
are a convolution (for the input) and a convolution's weight gradient with the roles of input
and output swapped (for the weight).
"""

import numpy as np

import nbgrad as nb  # half-loaded while this module loads: used only inside functions
from nbgrad.ops import nn_kernels


def adaptive_bounds(in_size, out_size):
    """Start and end of each of ``out_size`` windows over ``in_size`` elements."""
    index = np.arange(out_size)
    start = (index * in_size) // out_size
    end = -((-(index + 1) * in_size) // out_size)
    return start, end


def _averaging_matrix(in_size, out_size, dtype):
    matrix = np.zeros((out_size, in_size), dtype)
    for i, (start, end) in enumerate(zip(*adaptive_bounds(in_size, out_size))):
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def adaptive_avg_pool2d(x, output_size):
    rows = _averaging_matrix(x.shape[-2], output_size[0], x.dtype)
    cols = _averaging_matrix(x.shape[-1], output_size[1], x.dtype)
    return np.matmul(np.matmul(rows, x), cols.T)


def adaptive_avg_pool2d_backward(grad, input_shape):
    rows = _averaging_matrix(input_shape[-2], grad.shape[-2], grad.dtype)
    cols = _averaging_matrix(input_shape[-1], grad.shape[-1], grad.dtype)
    return np.ascontiguousarray(np.matmul(np.matmul(rows.T, grad), cols))


def adaptive_max_pool2d(x, output_size):
    """(values, indices): each window's max and where it was (``row * W + col``), the first
    one on ties, as PyTorch scans."""
    height, width = x.shape[-2:]
    values = np.empty(x.shape[:-2] + tuple(output_size), x.dtype)
    indices = np.empty(values.shape, np.int64)
    row_bounds = list(zip(*adaptive_bounds(height, output_size[0])))
    col_bounds = list(zip(*adaptive_bounds(width, output_size[1])))
    for i, (top, bottom) in enumerate(row_bounds):
        for j, (left, right) in enumerate(col_bounds):
            window = x[..., top:bottom, left:right].reshape(x.shape[:-2] + (-1,))
            tap = window.argmax(axis=-1)
            values[..., i, j] = np.take_along_axis(window, tap[..., None], axis=-1)[..., 0]
            span = right - left
            indices[..., i, j] = (top + tap // span) * width + left + tap % span
    return values, indices


# --- transposed convolution ---------------------------------------------------------------------


def _spatial(values, spatial_dims):
    values = tuple(values)
    return values * spatial_dims if len(values) == 1 else values


def transposed_size(in_size, kernel_size, stride, padding, dilation, output_padding):
    """One output dim of a transposed convolution."""
    return (in_size - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + 1 + output_padding


def _geometry(spatial_dims, stride, padding, dilation, output_padding):
    return (
        _spatial(stride, spatial_dims),
        _spatial(padding, spatial_dims),
        _spatial(dilation, spatial_dims),
        _spatial(output_padding, spatial_dims),
    )


def _full_shape(x_shape, weight_shape, stride, dilation, groups):
    """The output shape before padding crops it: every window whole."""
    sizes = [
        transposed_size(s, k, st, 0, d, 0)
        for s, k, st, d in zip(x_shape[2:], weight_shape[2:], stride, dilation)
    ]
    return (x_shape[0], weight_shape[1] * groups, *sizes)


def full_pad(padding, output_padding):
    """``constant_pad_nd``'s pad (last dim first) taking an output back to the full shape:
    ``padding`` before, ``padding - output_padding`` after (negative: cut off)."""
    pad = []
    for p, op in zip(reversed(padding), reversed(output_padding)):
        pad += [p, p - op]
    return tuple(pad)


def conv_transpose(x, weight, bias, stride, padding, dilation, output_padding, groups):
    """(N, C_in, *spatial) to (N, C_out, *spatial') with ``weight`` (C_in, C_out/groups, *k):
    the full output (no padding), then ``padding`` cut off each side but the end keeps
    ``output_padding`` more."""
    spatial_dims = x.ndim - 2
    stride, padding, dilation, output_padding = _geometry(
        spatial_dims, stride, padding, dilation, output_padding
    )
    shape = _full_shape(x.shape, weight.shape, stride, dilation, groups)
    zeros = (0,) * spatial_dims
    full = nn_kernels.convolution_input_grad(x, shape, weight, stride, zeros, dilation, groups)
    out = nn_kernels.constant_pad_nd(full, tuple(-p for p in full_pad(padding, output_padding)), 0)
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * spatial_dims)
    return np.ascontiguousarray(out, dtype=x.dtype)


def _full_grad(grad, stride, padding, dilation, output_padding):
    spatial_dims = grad.ndim - 2
    stride, padding, dilation, output_padding = _geometry(
        spatial_dims, stride, padding, dilation, output_padding
    )
    full = nn_kernels.constant_pad_nd(grad, full_pad(padding, output_padding), 0)
    return full, stride, (0,) * spatial_dims, dilation


def conv_transpose_input_grad(grad, weight, stride, padding, dilation, output_padding, groups):
    full, stride, zeros, dilation = _full_grad(grad, stride, padding, dilation, output_padding)
    return nn_kernels.convolution(full, weight, None, stride, zeros, dilation, groups)


def conv_transpose_weight_grad(
    grad, input, weight_shape, stride, padding, dilation, output_padding, groups
):
    full, stride, zeros, dilation = _full_grad(grad, stride, padding, dilation, output_padding)
    return nn_kernels.convolution_weight_grad(
        input, full, weight_shape, stride, zeros, dilation, groups
    )


ARRAY_FUNCTIONS = {
    "adaptive_avg_pool2d": adaptive_avg_pool2d,
    "adaptive_avg_pool2d_backward": lambda grad, x: adaptive_avg_pool2d_backward(grad, x.shape),
    "conv_transpose_input_grad": conv_transpose_input_grad,
    "conv_transpose_weight_grad": conv_transpose_weight_grad,
}


# --- Tensor versions (backward with create_graph=True) -----------------------------------------
# The same helpers over nbgrad Tensors, built from differentiable operations: NAME_tensor is the
# Tensor version of the formula function NAME. ``nb`` is complete by the time they run; run_op and
# the op table, which load after this module, they import inside their bodies.


def adaptive_avg_pool2d_tensor(x, output_size):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS["adaptive_avg_pool2d"], (x,), (tuple(output_size),))


def adaptive_avg_pool2d_backward_tensor(grad, x):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS["adaptive_avg_pool2d_backward"], (grad, x), tuple(grad.shape[-2:]))


def full_grad_tensor(grad, stride, padding, dilation, output_padding):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    spatial_dims = grad.ndim - 2
    stride, padding, dilation, output_padding = _geometry(
        spatial_dims, stride, padding, dilation, output_padding
    )
    pad = full_pad(padding, output_padding)
    full = run_op(OPS["constant_pad_nd"], (grad,), (pad, 0)) if any(pad) else grad
    return full, stride, (0,) * spatial_dims, dilation


def conv_transpose_input_grad_tensor(
    grad, weight, stride, padding, dilation, output_padding, groups
):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    full, stride, zeros, dilation = full_grad_tensor(
        grad, stride, padding, dilation, output_padding
    )
    attrs = (stride, zeros, dilation, False, zeros, groups, (0,))
    return run_op(OPS["convolution"], (full, weight, None), attrs)


def conv_transpose_weight_grad_tensor(
    grad, input, weight_shape, stride, padding, dilation, output_padding, groups
):
    from nbgrad.ops import formula_tensor

    full, stride, zeros, dilation = full_grad_tensor(
        grad, stride, padding, dilation, output_padding
    )
    return formula_tensor.convolution_weight_grad(
        input, full, weight_shape, stride, zeros, dilation, groups
    )


def tensor_namespace():
    """The Tensor versions, through table ops, so that gradients can be differentiated again."""
    return {
        **pool3d_tensor_namespace(),
        "upsample_backward": upsample_backward_tensor,
        "adaptive_avg_pool2d": adaptive_avg_pool2d_tensor,
        "adaptive_avg_pool2d_backward": adaptive_avg_pool2d_backward_tensor,
        "conv_transpose_input_grad": conv_transpose_input_grad_tensor,
        "conv_transpose_weight_grad": conv_transpose_weight_grad_tensor,
    }


# --- interpolation (upsampling) -----------------------------------------------------------------
# Nearest and (bi)linear interpolation are linear maps, separable over the spatial dims: each dim
# gets a matrix (out x in) with PyTorch's source indices and weights, and the output is the input
# multiplied by them (its backward by their transposes).


def _opmath(dtype):
    return np.float32 if dtype == np.float32 or dtype == np.float16 else np.float64


def _scale(in_size, out_size, scale, align_corners, dtype):
    """PyTorch's area_pixel_compute_scale (in the kernel's arithmetic type)."""
    dtype = _opmath(dtype)
    if align_corners:
        return dtype((in_size - 1) / (out_size - 1)) if out_size > 1 else dtype(0)
    if scale is not None and scale > 0:
        return dtype(1.0) / dtype(scale)
    return dtype(in_size) / dtype(out_size)


def interpolation_matrix(in_size, out_size, scale, mode, align_corners, dtype):
    matrix = np.zeros((out_size, in_size), dtype)
    out_index = np.arange(out_size)
    if mode == "bicubic":
        return _bicubic_matrix(matrix, in_size, out_size, scale, align_corners, dtype)
    if mode in ("bilinear-aa", "bicubic-aa", "lanczos-aa"):
        return _antialias_matrix(matrix, in_size, out_size, scale, mode, align_corners, dtype)
    if mode in ("nearest", "nearest-exact"):
        ratio = _scale(in_size, out_size, scale, False, dtype)
        offset = ratio.dtype.type(0.5) if mode == "nearest-exact" else ratio.dtype.type(0)
        source = np.floor((out_index.astype(ratio.dtype) + offset) * ratio).astype(np.int64)
        matrix[out_index, np.minimum(source, in_size - 1)] = 1
        return matrix
    ratio = _scale(in_size, out_size, scale, align_corners, dtype)
    real = ratio.dtype.type
    if align_corners:
        source = ratio * out_index.astype(ratio.dtype)
    else:
        source = np.maximum(ratio * (out_index.astype(ratio.dtype) + real(0.5)) - real(0.5), 0)
    low = np.minimum(source.astype(np.int64), in_size - 1)
    high = low + (low < in_size - 1)
    weight_high = source - low
    weight_low = real(1) - weight_high
    np.add.at(matrix, (out_index, low), weight_low.astype(dtype))
    np.add.at(matrix, (out_index, high), weight_high.astype(dtype))
    return matrix


CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution constant


def _cubic_near(x):
    """Keys' cubic kernel for |x| <= 1."""
    return ((CUBIC_A + 2) * x - (CUBIC_A + 3)) * x * x + 1


def _cubic_far(x):
    """Keys' cubic kernel for 1 < |x| < 2."""
    return ((CUBIC_A * x - 5 * CUBIC_A) * x + 8 * CUBIC_A) * x - 4 * CUBIC_A


def _bicubic_matrix(matrix, in_size, out_size, scale, align_corners, dtype):
    """Four taps per output, at floor(source) - 1 .. + 2 clamped into the input (PyTorch's
    upsample_bicubic2d: its source index is not clamped at 0, unlike linear's)."""
    ratio = _scale(in_size, out_size, scale, align_corners, dtype)
    real = ratio.dtype.type
    out_index = np.arange(out_size).astype(ratio.dtype)
    source = ratio * out_index if align_corners else ratio * (out_index + real(0.5)) - real(0.5)
    start = np.floor(source).astype(np.int64)
    t = (source - start).astype(ratio.dtype)
    weights = (_cubic_far(t + 1), _cubic_near(t), _cubic_near(1 - t), _cubic_far(2 - t))
    rows = np.arange(out_size)
    for k, weight in enumerate(weights):
        np.add.at(matrix, (rows, np.clip(start - 1 + k, 0, in_size - 1)), weight.astype(dtype))
    return matrix


def _triangle(x):
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0)


def _cubic_aa(x):
    """The cubic filter of PyTorch's antialiased bicubic (a = -0.5, as PIL's)."""
    a = -0.5
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0))


def _lanczos3(x):
    """The Lanczos-3 windowed sinc of PyTorch's antialiased lanczos (as PIL's LANCZOS)."""
    x = np.abs(x)
    return np.where(x < 3, np.sinc(x) * np.sinc(x / 3), 0)


def _antialias_matrix(matrix, in_size, out_size, scale, mode, align_corners, dtype):
    """PyTorch's antialiased interpolation (as PIL's resize): when shrinking, each output
    averages the inputs under its filter stretched by the scale, weights normalised to 1."""
    ratio = _scale(in_size, out_size, scale, align_corners, dtype)
    real = ratio.dtype.type
    taps, kernel = {"bilinear-aa": (2, _triangle), "bicubic-aa": (4, _cubic_aa)}.get(
        mode, (6, _lanczos3)
    )
    support = real(taps * 0.5) * ratio if ratio >= 1 else real(taps * 0.5)
    inverse = real(1) / ratio if ratio >= 1 else real(1)
    for i in range(out_size):
        center = ratio * (real(i) + real(0.5))
        low = max(int(center - support + real(0.5)), 0)
        high = min(int(center + support + real(0.5)), in_size)
        columns = np.arange(low, high)
        weights = kernel((columns - center + real(0.5)).astype(ratio.dtype) * inverse)
        total = weights.sum()
        matrix[i, low:high] = weights / total if total != 0 else weights
    return matrix


def _matrices(in_sizes, output_size, scales, mode, align_corners, dtype):
    return [
        interpolation_matrix(i, o, s, mode, align_corners, dtype)
        for i, o, s in zip(in_sizes, output_size, scales)
    ]


def _apply(x, matrices, transpose=False):
    """Multiply each of the last len(matrices) dims of x by its matrix."""
    out = x
    dims = len(matrices)
    for k, matrix in enumerate(matrices):
        axis = x.ndim - dims + k
        m = matrix.T if transpose else matrix
        out = np.moveaxis(np.tensordot(out, m, axes=([axis], [1])), -1, axis)
    return np.ascontiguousarray(out)


def upsample(x, output_size, scales, mode, align_corners):
    sizes = x.shape[-len(output_size) :]
    matrices = _matrices(sizes, output_size, scales, mode, align_corners, x.dtype)
    return _apply(x, matrices).astype(x.dtype, copy=False)


def upsample_backward(grad, input_sizes, output_size, scales, mode, align_corners):
    sizes = tuple(input_sizes)[-len(output_size) :]
    matrices = _matrices(sizes, output_size, scales, mode, align_corners, grad.dtype)
    return _apply(grad, matrices, transpose=True).astype(grad.dtype, copy=False)


ARRAY_FUNCTIONS["upsample_backward"] = upsample_backward


def upsample_backward_tensor(grad, input_sizes, output_size, scales, mode, align_corners):
    sizes = tuple(input_sizes)[-len(output_size) :]
    matrices = _matrices(sizes, output_size, scales, mode, align_corners, grad.dtype.numpy)
    out = grad
    for k, matrix in enumerate(matrices):
        axis = grad.ndim - len(matrices) + k
        moved = out.transpose(axis, -1) if axis != grad.ndim - 1 else out
        moved = nb.matmul(moved, nb.as_tensor(matrix))
        out = moved.transpose(axis, -1) if axis != grad.ndim - 1 else moved
    return out


# --- 3-d pooling ----------------------------------------------------------------------------------
# Average pooling (plain and adaptive) is separable: along each dim a matrix (out x in) says which
# inputs each output's window covers, divided by that dim's share of the divisor (PyTorch's
# divisor is the product of the window's lengths along the dims, with or without the padding).
# Max pooling takes strided windows of the padded input; its indices count in the (D, H, W) volume.


def _window_matrix(in_size, out_size, kernel, stride, padding, count_include_pad, divisor_override):
    matrix = np.zeros((out_size, in_size))
    for o in range(out_size):
        start = o * stride - padding
        end = min(start + kernel, in_size + padding)
        covered = slice(max(start, 0), min(end, in_size))
        if divisor_override:
            share = 1.0
        elif count_include_pad:
            share = end - start
        else:
            share = covered.stop - covered.start
        matrix[o, covered] = 1.0 / share
    return matrix


def avg_pool_matrices(in_sizes, kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override):  # fmt: skip
    stride = stride or kernel_size
    matrices = []
    for size, k, s, p in zip(in_sizes, kernel_size, stride, padding):
        out = nn_kernels.pool_output_size(size, k, s, p, 1, ceil_mode)
        matrices.append(_window_matrix(size, out, k, s, p, count_include_pad, divisor_override))
    return matrices


def avg_pool3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    matrices = avg_pool_matrices(x.shape[-3:], kernel_size, stride, padding, ceil_mode,
                                 count_include_pad, divisor_override)  # fmt: skip
    out = _apply(x, [m.astype(x.dtype) for m in matrices])
    if divisor_override:
        out = out / divisor_override
    return out.astype(x.dtype, copy=False)


def avg_pool3d_backward(grad, input_shape, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):  # fmt: skip
    matrices = avg_pool_matrices(tuple(input_shape)[-3:], kernel_size, stride, padding, ceil_mode,
                                 count_include_pad, divisor_override)  # fmt: skip
    out = _apply(grad, [m.astype(grad.dtype) for m in matrices], transpose=True)
    if divisor_override:
        out = out / divisor_override
    return out.astype(grad.dtype, copy=False)


def adaptive_avg_pool3d(x, output_size):
    matrices = [_averaging_matrix(s, o, x.dtype) for s, o in zip(x.shape[-3:], output_size)]
    return _apply(x, matrices)


def adaptive_avg_pool3d_backward(grad, input_shape):
    sizes = tuple(input_shape)[-3:]
    matrices = [_averaging_matrix(s, o, grad.dtype) for s, o in zip(sizes, grad.shape[-3:])]
    return _apply(grad, matrices, transpose=True)


def max_pool3d(x, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, indices): the max of each window and where it was (``(d * H + h) * W + w``)."""
    stride = stride or kernel_size
    sizes = x.shape[-3:]
    outs = [
        nn_kernels.pool_output_size(s, k, st, p, d, ceil_mode)
        for s, k, st, p, d in zip(sizes, kernel_size, stride, padding, dilation)
    ]
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    widths = [(0, 0)] * (x.ndim - 3)
    for s, o, k, st, p, d in zip(sizes, outs, kernel_size, stride, padding, dilation):
        extra = max(0, (o - 1) * st + d * (k - 1) + 1 - (s + 2 * p))
        widths.append((p, p + extra))
    padded = np.pad(x, widths, constant_values=lowest)
    lead = padded.shape[:-3]
    strides = padded.strides
    view = np.lib.stride_tricks.as_strided(
        padded,
        lead + tuple(outs) + tuple(kernel_size),
        strides[:-3]
        + tuple(st * s for st, s in zip(stride, strides[-3:]))
        + tuple(d * s for d, s in zip(dilation, strides[-3:])),
        writeable=False,
    )
    taps = view.reshape(lead + tuple(outs) + (-1,))
    tap = taps.argmax(axis=-1)
    values = np.take_along_axis(taps, tap[..., None], axis=-1)[..., 0]
    _, kh, kw = kernel_size
    index = []
    offsets = (tap // (kh * kw), (tap // kw) % kh, tap % kw)
    for axis, offset in enumerate(offsets):
        position = np.arange(outs[axis]).reshape([-1 if a == axis else 1 for a in range(3)])
        index.append(position * stride[axis] - padding[axis] + offset * dilation[axis])
    depth, height, width = sizes
    indices = (index[0] * height + index[1]) * width + index[2]
    return np.ascontiguousarray(values), indices.astype(np.int64)


def max_pool3d_backward(grad, input_shape, indices):
    volumes = int(np.prod(input_shape[:-3], dtype=np.int64))
    volume = int(np.prod(input_shape[-3:], dtype=np.int64))
    offsets = (np.arange(volumes) * volume).reshape(indices.shape[:-3] + (1, 1, 1))
    summed = np.bincount(
        (indices + offsets).ravel(), weights=grad.ravel(), minlength=volumes * volume
    )
    return summed.astype(grad.dtype, copy=False).reshape(input_shape)


def adaptive_max_pool3d(x, output_size):
    sizes = x.shape[-3:]
    values = np.empty(x.shape[:-3] + tuple(output_size), x.dtype)
    indices = np.empty(values.shape, np.int64)
    bounds = [list(zip(*adaptive_bounds(s, o))) for s, o in zip(sizes, output_size)]
    for i, (d0, d1) in enumerate(bounds[0]):
        for j, (h0, h1) in enumerate(bounds[1]):
            for k, (w0, w1) in enumerate(bounds[2]):
                window = x[..., d0:d1, h0:h1, w0:w1].reshape(x.shape[:-3] + (-1,))
                tap = window.argmax(axis=-1)
                values[..., i, j, k] = np.take_along_axis(window, tap[..., None], -1)[..., 0]
                hh, ww = h1 - h0, w1 - w0
                d, h, w = d0 + tap // (hh * ww), h0 + (tap // ww) % hh, w0 + tap % ww
                indices[..., i, j, k] = (d * sizes[1] + h) * sizes[2] + w
    return values, indices


ARRAY_FUNCTIONS.update(
    {
        "max_pool3d_backward": max_pool3d_backward,
    }
)


def _matrix_apply_tensor(x, matrices, transpose=False):
    out = x
    last = x.ndim - 1
    for k, matrix in enumerate(matrices):
        axis = x.ndim - len(matrices) + k
        m = nb.as_tensor(np.ascontiguousarray(matrix if transpose else matrix.T))
        moved = out.transpose(axis, last) if axis != last else out
        moved = nb.matmul(moved, m)
        out = moved.transpose(axis, last) if axis != last else moved
    return out


# --- Tensor versions of the 3-d pooling backwards (see tensor_namespace()) ----------------------


def max_pool3d_backward_tensor(grad, input_shape, indices):
    from nbgrad.ops.functions import index_put_into_zeros

    volumes = int(np.prod(input_shape[:-3], dtype=np.int64))
    volume = int(np.prod(input_shape[-3:], dtype=np.int64))
    offsets = (np.arange(volumes) * volume).reshape(indices.shape[:-3] + (1, 1, 1))
    flat = index_put_into_zeros(
        grad.reshape(-1), (volumes * volume,), ((indices + offsets).reshape(-1),)
    )
    return flat.reshape(tuple(input_shape))


def pool3d_tensor_namespace():
    """The formula names mapped to the Tensor versions above."""
    return {
        "max_pool3d_backward": max_pool3d_backward_tensor,
    }
