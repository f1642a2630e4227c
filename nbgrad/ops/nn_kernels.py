"""NumPy kernels of the neural-network layers: convolution, pooling, padding, normalisation,
activations, norms and losses.

The op table (``derivatives.py``) calls these for the forward of a layer and formula_math calls
them for its backward. They work on plain arrays and know nothing of autograd.

Convolution is "unfold, then one matrix multiply", as a learner would write it by hand: a
strided *view* shows every kernel-sized window of the input without copying it, one reshape
turns the windows into the columns of a matrix (im2col), and ``np.matmul`` does the rest. The
backward runs the same steps in reverse: a matrix multiply, then col2im adds each column back
onto the window it came from.

Every spatial kernel here is written for two spatial dims (N, C, H, W). One-dimensional layers
and unbatched inputs are lifted to that layout first (``as_batched_2d``), as PyTorch itself does.
"""

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from nbgrad.ops import result_layout

# --- shapes ---------------------------------------------------------------------------------


def conv_output_size(size, kernel, stride, padding, dilation):
    """Positions a window of ``kernel`` (spread by ``dilation``) takes along one padded dim."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def pool_output_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling output size: with ``ceil_mode`` a last, partial window counts, unless
    it would start entirely in the right padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if ceil_mode:
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + padding:
            out -= 1
        return out
    return span // stride + 1


def as_batched_2d(array, spatial_dims):
    """View an input with ``spatial_dims`` (1 or 2) spatial dims, batched or not, as N, C, H, W."""
    if spatial_dims == 1:
        array = array[..., None, :]
    if array.ndim == 3:
        array = array[None]
    return array


def pair_1d(values, fill):
    """A 1-d layer's (k,) parameter as the (fill, k) pair the 2-d kernels expect."""
    return (fill, values[0])


# --- windows, im2col, col2im ----------------------------------------------------------------


def _pad_spatial(x, top, bottom, left, right, value=0):
    if not (top or bottom or left or right):
        return x
    padded = np.full(
        (*x.shape[:2], x.shape[2] + top + bottom, x.shape[3] + left + right), value, x.dtype
    )
    padded[:, :, top : top + x.shape[2], left : left + x.shape[3]] = x
    return padded


def windows(x, kernel_size, stride, dilation, out_size):
    """A read-only view of ``x`` (N, C, H, W) with shape (N, C, kh, kw, OH, OW): element
    ``[n, c, i, j, oh, ow]`` is the input under kernel tap (i, j) at output position (oh, ow)."""
    n, c = x.shape[:2]
    sn, sc, sh, sw = x.strides
    (kh, kw), (dh, dw), (th, tw) = kernel_size, dilation, stride
    return as_strided(
        x,
        shape=(n, c, kh, kw, *out_size),
        strides=(sn, sc, sh * dh, sw * dw, sh * th, sw * tw),
        writeable=False,
    )


def im2col(x, kernel_size, dilation, padding, stride):
    """The unfolded input: (N, C*kh*kw, L), one column per output position (PyTorch's unfold)."""
    n, c, h, w = x.shape
    out_size = tuple(
        conv_output_size(s, k, st, p, d)
        for s, k, st, p, d in zip((h, w), kernel_size, stride, padding, dilation)
    )
    (ph, pw) = padding
    padded = _pad_spatial(x, ph, ph, pw, pw)
    view = windows(padded, kernel_size, stride, dilation, out_size)
    return view.reshape(n, c * kernel_size[0] * kernel_size[1], out_size[0] * out_size[1])


def col2im(columns, output_size, kernel_size, dilation, padding, stride):
    """Add each column back onto the window it was cut from (PyTorch's fold): im2col's adjoint."""
    (h, w), (kh, kw), (dh, dw), (ph, pw), (th, tw) = (
        output_size,
        kernel_size,
        dilation,
        padding,
        stride,
    )
    oh = conv_output_size(h, kh, th, ph, dh)
    ow = conv_output_size(w, kw, tw, pw, dw)
    n = columns.shape[0]
    c = columns.shape[1] // (kh * kw)
    taps = columns.reshape(n, c, kh, kw, oh, ow)
    padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw), columns.dtype)
    for i in range(kh):
        for j in range(kw):
            top, left = i * dh, j * dw
            padded[
                :, :, top : top + th * (oh - 1) + 1 : th, left : left + tw * (ow - 1) + 1 : tw
            ] += taps[:, :, i, j]
    if ph or pw:
        padded = np.ascontiguousarray(padded[:, :, ph : ph + h, pw : pw + w])
    return padded


def unbatched_im2col(x, kernel_size, dilation, padding, stride):
    """im2col for an input of PyTorch's unfold: (N, C, H, W) or unbatched (C, H, W)."""
    columns = im2col(as_batched_2d(x, 2), kernel_size, dilation, padding, stride)
    return columns if x.ndim == 4 else columns[0]


def unbatched_col2im(columns, output_size, kernel_size, dilation, padding, stride):
    """col2im for an input of PyTorch's fold: (N, C*kh*kw, L) or unbatched (C*kh*kw, L)."""
    batched = columns if columns.ndim == 3 else columns[None]
    image = col2im(batched, output_size, kernel_size, dilation, padding, stride)
    return image if columns.ndim == 3 else image[0]


# --- convolution ----------------------------------------------------------------------------


class ConvGeometry:
    """A convolution's parameters in the 2-d layout, for 1-d and 2-d layers alike."""

    def __init__(self, spatial_dims, stride, padding, dilation, groups):
        # PyTorch may give one value for every dim (its ``padding="valid"`` saves ``(0,)``).
        stride, padding, dilation = (
            tuple(v) * spatial_dims if len(v) == 1 else tuple(v)
            for v in (stride, padding, dilation)
        )
        if spatial_dims == 1:
            stride, padding, dilation = (
                pair_1d(stride, 1),
                pair_1d(padding, 0),
                pair_1d(dilation, 1),
            )
        self.spatial_dims = spatial_dims
        self.stride = tuple(stride)
        self.padding = tuple(padding)
        self.dilation = tuple(dilation)
        self.groups = groups


def convolution(x, weight, bias, stride, padding, dilation, groups):
    """Forward: out[n, o] = sum over c, i, j of weight[o, c, i, j] * window(n, c, i, j) + bias[o].

    ``x`` is (N, C, *spatial), ``weight`` (OC, C/groups, *kernel); 1 or 2 spatial dims.
    """
    spatial_dims = x.ndim - 2
    geometry = ConvGeometry(spatial_dims, stride, padding, dilation, groups)
    x4 = as_batched_2d(x, spatial_dims)
    w4 = as_batched_2d(weight, spatial_dims) if spatial_dims == 1 else weight
    columns = im2col(x4, w4.shape[2:], geometry.dilation, geometry.padding, geometry.stride)
    out_size = _conv_out_size(x4.shape[2:], w4.shape[2:], geometry)
    n, out_channels = x4.shape[0], w4.shape[0]
    # Groups split channels into independent convolutions: one batched matmul over (n, group).
    per_group = columns.reshape(n, groups, columns.shape[1] // groups, columns.shape[2])
    kernels = w4.reshape(groups, out_channels // groups, -1)
    out = np.matmul(kernels, per_group).reshape(n, out_channels, *out_size)
    if bias is not None:
        out += bias.reshape(out_channels, 1, 1)
    return out.reshape(x.shape[0], out_channels, *out_size[2 - spatial_dims :])


def _conv_out_size(in_size, kernel_size, geometry):
    return tuple(
        conv_output_size(s, k, st, p, d)
        for s, k, st, p, d in zip(
            in_size, kernel_size, geometry.stride, geometry.padding, geometry.dilation
        )
    )


def convolution_input_grad(grad, input_shape, weight, stride, padding, dilation, groups):
    """d(loss)/d(input): each output gradient, times the kernel, added back onto its window."""
    spatial_dims = len(input_shape) - 2
    geometry = ConvGeometry(spatial_dims, stride, padding, dilation, groups)
    w4 = as_batched_2d(weight, spatial_dims) if spatial_dims == 1 else weight
    g4 = as_batched_2d(grad, spatial_dims)
    n, out_channels = g4.shape[:2]
    kernels = w4.reshape(groups, out_channels // groups, -1)
    per_group = g4.reshape(n, groups, out_channels // groups, -1)
    columns = np.matmul(kernels.transpose(0, 2, 1), per_group).reshape(n, -1, per_group.shape[-1])
    in_size = (1, *input_shape[2:]) if spatial_dims == 1 else tuple(input_shape[2:])
    image = col2im(
        columns, in_size, w4.shape[2:], geometry.dilation, geometry.padding, geometry.stride
    )
    return image.reshape(input_shape)


def convolution_weight_grad(grad, x, weight_shape, stride, padding, dilation, groups):
    """d(loss)/d(weight): output gradients times the unfolded input, summed over the batch."""
    spatial_dims = x.ndim - 2
    geometry = ConvGeometry(spatial_dims, stride, padding, dilation, groups)
    x4 = as_batched_2d(x, spatial_dims)
    g4 = as_batched_2d(grad, spatial_dims)
    kernel_size = (1, *weight_shape[2:]) if spatial_dims == 1 else tuple(weight_shape[2:])
    columns = im2col(x4, kernel_size, geometry.dilation, geometry.padding, geometry.stride)
    n, out_channels = g4.shape[:2]
    per_group = columns.reshape(n, groups, -1, columns.shape[2])
    grads = g4.reshape(n, groups, out_channels // groups, -1)
    per_sample = np.matmul(grads, per_group.transpose(0, 1, 3, 2))
    return per_sample.sum(axis=0).reshape(weight_shape)


# --- pooling --------------------------------------------------------------------------------


class PoolGeometry:
    """Where the windows of a 2-d pooling lie: output size and the padding on every side."""

    def __init__(self, in_size, kernel_size, stride, padding, dilation, ceil_mode):
        self.kernel_size, self.stride, self.padding, self.dilation = (
            kernel_size,
            stride,
            padding,
            dilation,
        )
        self.out_size = tuple(
            pool_output_size(s, k, st, p, d, ceil_mode)
            for s, k, st, p, d in zip(in_size, kernel_size, stride, padding, dilation)
        )
        # With ceil_mode the last window may run past the padded input: pad a little more on
        # the right so that every window is whole (those elements never win or count).
        self.extra = tuple(
            max(0, (o - 1) * st + d * (k - 1) + 1 - (s + 2 * p))
            for o, st, d, k, s, p in zip(
                self.out_size, stride, dilation, kernel_size, in_size, padding
            )
        )

    def pad(self, x, value):
        (ph, pw), (eh, ew) = self.padding, self.extra
        return _pad_spatial(x, ph, ph + eh, pw, pw + ew, value)


def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, indices): the max of each window, and where it was as ``row * W + col``."""
    stride = stride or kernel_size  # () when not given, as PyTorch saves it
    x4 = as_batched_2d(x, 2)
    n, c, h, w = x4.shape
    geometry = PoolGeometry((h, w), kernel_size, stride, padding, dilation, ceil_mode)
    oh, ow = geometry.out_size
    kh, kw = kernel_size
    view = windows(geometry.pad(x4, _lowest(x.dtype)), kernel_size, stride, dilation, (oh, ow))
    taps = view.transpose(0, 1, 4, 5, 2, 3).reshape(n, c, oh, ow, kh * kw)
    tap = taps.argmax(axis=-1)
    values = np.take_along_axis(taps, tap[..., None], axis=-1)[..., 0]
    rows = np.arange(oh)[:, None] * stride[0] - padding[0] + (tap // kw) * dilation[0]
    cols = np.arange(ow)[None, :] * stride[1] - padding[1] + (tap % kw) * dilation[1]
    indices = rows * w + cols
    shape = x.shape[:-2] + (oh, ow)
    return values.reshape(shape), indices.astype(np.int64).reshape(shape)


def max_pool2d_backward(grad, input_shape, indices):
    """Each output's gradient goes to the input element that was its max (summed if several)."""
    planes = int(np.prod(input_shape[:-2], dtype=np.int64))
    plane_size = input_shape[-2] * input_shape[-1]
    offsets = (np.arange(planes) * plane_size).reshape(indices.shape[:-2] + (1, 1))
    summed = np.bincount(
        (indices + offsets).ravel(), weights=grad.ravel(), minlength=planes * plane_size
    )
    return summed.astype(grad.dtype, copy=False).reshape(input_shape)


def _avg_divisors(geometry, in_size, ceil_mode, count_include_pad, divisor_override):
    """What each output of avg_pool2d divides its window's sum by, as PyTorch counts it."""
    if divisor_override:
        return divisor_override
    factors = []
    for size, out, k, st, p in zip(
        in_size, geometry.out_size, geometry.kernel_size, geometry.stride, geometry.padding
    ):
        start = np.arange(out) * st - p
        end = np.minimum(start + k, size + p)
        if count_include_pad:
            factors.append(end - start)
        else:
            factors.append(np.minimum(end, size) - np.maximum(start, 0))
    return np.multiply.outer(*factors)


def avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    stride = stride or kernel_size  # () when not given, as PyTorch saves it
    x4 = as_batched_2d(x, 2)
    geometry = PoolGeometry(x4.shape[2:], kernel_size, stride, padding, (1, 1), ceil_mode)
    view = windows(geometry.pad(x4, 0), kernel_size, stride, (1, 1), geometry.out_size)
    sums = view.sum(axis=(2, 3))
    divisors = _avg_divisors(geometry, x4.shape[2:], ceil_mode, count_include_pad, divisor_override)
    out = (sums / divisors).astype(x.dtype, copy=False)
    return out.reshape(x.shape[:-2] + geometry.out_size)


def avg_pool2d_backward(
    grad, input_shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    """Each output's gradient, divided as its sum was, spread over its window."""
    stride = stride or kernel_size
    in_size = tuple(input_shape[-2:])
    geometry = PoolGeometry(in_size, kernel_size, stride, padding, (1, 1), ceil_mode)
    divisors = _avg_divisors(geometry, in_size, ceil_mode, count_include_pad, divisor_override)
    g4 = as_batched_2d(grad, 2)
    share = (g4 / divisors).astype(grad.dtype, copy=False)
    (ph, pw), (eh, ew), (oh, ow), (th, tw) = (
        geometry.padding,
        geometry.extra,
        geometry.out_size,
        stride,
    )
    padded = np.zeros(
        (*g4.shape[:2], in_size[0] + 2 * ph + eh, in_size[1] + 2 * pw + ew), grad.dtype
    )
    for i in range(kernel_size[0]):
        for j in range(kernel_size[1]):
            padded[:, :, i : i + th * (oh - 1) + 1 : th, j : j + tw * (ow - 1) + 1 : tw] += share
    inner = padded[:, :, ph : ph + in_size[0], pw : pw + in_size[1]]
    return np.ascontiguousarray(inner).reshape(input_shape)


# --- padding --------------------------------------------------------------------------------


def constant_pad_nd(x, pad, value):
    """Pad the last dims by ``pad`` = (left, right) of the last dim, then of the one before, ...
    Negative amounts crop, so that ``pad`` and the negated ``pad`` undo each other."""
    dims = len(pad) // 2
    out_shape = list(x.shape)
    source, target = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for k in range(dims):
        axis = x.ndim - 1 - k
        before, after = pad[2 * k], pad[2 * k + 1]
        size = x.shape[axis]
        out_shape[axis] = size + before + after
        source[axis] = slice(max(0, -before), size - max(0, -after))
        target[axis] = slice(
            max(0, before), max(0, before) + source[axis].stop - source[axis].start
        )
    out = np.full(out_shape, value, x.dtype)
    out[tuple(target)] = x[tuple(source)]
    return out


def pad_source_indices(size, before, after, mode):
    """For ``reflect`` / ``replicate`` padding of one dim: which input index each output reads."""
    positions = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(positions, 0, size - 1)
    period = 2 * (size - 1)
    folded = np.abs(positions) % period if period else np.zeros_like(positions)
    return np.where(folded >= size, period - folded, folded)


def _pad_key(shape, padding, mode):
    """The index arrays that read the padded result out of the input, one per padded dim."""
    dims = len(padding) // 2
    key = []
    for axis in range(len(shape) - dims, len(shape)):
        k = len(shape) - 1 - axis  # padding lists the last dim first
        index = pad_source_indices(shape[axis], padding[2 * k], padding[2 * k + 1], mode)
        broadcast = [1] * dims
        broadcast[axis - (len(shape) - dims)] = index.size
        key.append(index.reshape(broadcast))
    return (Ellipsis, *key)


def index_pad(x, padding, mode):
    """``reflect`` or ``replicate`` padding of the last ``len(padding) // 2`` dims."""
    return x[_pad_key(x.shape, padding, mode)]


def index_pad_backward(grad, input_shape, padding, mode):
    """Each padded element's gradient goes back to the input element it copied (summed)."""
    out = np.zeros(input_shape, grad.dtype)
    np.add.at(out, _pad_key(input_shape, padding, mode), grad)
    return out


# --- normalisation --------------------------------------------------------------------------


def layer_norm(x, normalized_shape, weight, bias, eps):
    """(out, mean, rstd) over the last ``len(normalized_shape)`` dims; mean and rstd keep them
    as size-1 dims, as PyTorch's native_layer_norm returns them."""
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    rstd = 1 / np.sqrt((centered * centered).mean(axis=axes, keepdims=True) + eps)
    out = centered * rstd
    if weight is not None:
        out *= weight
    if bias is not None:
        out += bias
    return out, mean, rstd.astype(x.dtype, copy=False)


def layer_norm_input_grad(grad, x, normalized_shape, mean, rstd, weight):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    normalized = (x - mean) * rstd
    g = grad * weight if weight is not None else grad
    return rstd * (
        g
        - g.mean(axis=axes, keepdims=True)
        - normalized * (g * normalized).mean(axis=axes, keepdims=True)
    )


def channel_shape(x):
    """The shape that broadcasts a per-channel vector (dim 1) against ``x``."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def all_but_channel(ndim):
    return (0, *range(2, ndim))


def channel_sum(x):
    """Sum over every dim but the channels (dim 1). A matrix-vector product with ones does the
    inner sum: BLAS does it several times faster than ``x.sum(axis=(0, 2, 3))``."""
    n, c = x.shape[:2]
    per_sample = x.reshape(n, c, -1) @ np.ones(x[:1, :1].size, x.dtype)
    return per_sample.sum(axis=0)


def batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """(out, save_mean, save_invstd). In training, normalise with the batch's statistics and
    move the running ones toward them (unbiased variance); in eval, use the running ones."""
    shape = channel_shape(x)
    axes = all_but_channel(x.ndim)
    if training:
        mean = x.mean(axis=axes)
        variance = ((x - mean.reshape(shape)) ** 2).mean(axis=axes)
        invstd = 1 / np.sqrt(variance + eps)
        if running_mean is not None:
            count = x.size // x.shape[1]
            running_mean *= 1 - momentum
            running_mean += momentum * mean
            running_var *= 1 - momentum
            # The unbiased variance; of a single value per channel it is 0 / 0, NaN, as in
            # PyTorch (F.batch_norm refuses that input; torch._native_batch_norm_legit takes it).
            unbiased = (
                variance * count / (count - 1) if count > 1 else np.full_like(variance, np.nan)
            )
            running_var += momentum * unbiased
        save_mean, save_invstd = mean, invstd.astype(x.dtype, copy=False)
    else:
        mean, invstd = running_mean, 1 / np.sqrt(running_var + eps)
        save_mean = save_invstd = np.empty((0,), x.dtype)
    out = (x - mean.reshape(shape)) * invstd.reshape(shape).astype(x.dtype, copy=False)
    if weight is not None:
        out *= weight.reshape(shape)
    if bias is not None:
        out += bias.reshape(shape)
    return out, save_mean, save_invstd


def batch_norm_statistics(x, running_mean, running_var, save_mean, save_invstd, training, eps):
    """The mean and 1/std the forward normalised with, shaped to broadcast over ``x``."""
    shape = channel_shape(x)
    if training:
        return save_mean.reshape(shape), save_invstd.reshape(shape)
    return running_mean.reshape(shape), (1 / np.sqrt(running_var + eps)).reshape(shape)


def batch_norm_input_grad(
    grad, x, weight, running_mean, running_var, save_mean, save_invstd, training, eps
):
    mean, invstd = batch_norm_statistics(
        x, running_mean, running_var, save_mean, save_invstd, training, eps
    )
    scale = invstd if weight is None else invstd * weight.reshape(channel_shape(x))
    if not training:
        return (grad * scale).astype(grad.dtype, copy=False)
    axes = all_but_channel(x.ndim)
    normalized = (x - mean) * invstd
    centered_grad = (
        grad
        - grad.mean(axis=axes, keepdims=True)
        - normalized * (grad * normalized).mean(axis=axes, keepdims=True)
    )
    return (centered_grad * scale).astype(grad.dtype, copy=False)


def batch_norm_weight_grad(
    grad, x, running_mean, running_var, save_mean, save_invstd, training, eps
):
    mean, invstd = batch_norm_statistics(
        x, running_mean, running_var, save_mean, save_invstd, training, eps
    )
    return (grad * (x - mean) * invstd).sum(axis=all_but_channel(x.ndim)).astype(grad.dtype)


# --- element-wise -----------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    """The error function, exact to double precision (NumPy has none; math.erf per element)."""
    return _erf(x).astype(x.dtype if np.issubdtype(x.dtype, np.floating) else np.float32)


SQRT_HALF = math.sqrt(0.5)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_TANH_CUBIC = 0.044715


def gelu(x, approximate):
    if approximate == "tanh":
        inner = SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * x * x * x)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + erf(x * SQRT_HALF))


def gelu_backward(grad, x, approximate):
    if approximate == "tanh":
        inner = SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * x * x * x)
        tanh_inner = np.tanh(inner)
        slope = 0.5 * (1 + tanh_inner) + 0.5 * x * (1 - tanh_inner * tanh_inner) * (
            SQRT_2_OVER_PI * (1 + 3 * GELU_TANH_CUBIC * x * x)
        )
        return grad * slope
    cdf = 0.5 * (1 + erf(x * SQRT_HALF))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return grad * (cdf + x * pdf)


# --- norms ---------------------------------------------------------------------------------


def vector_norm(x, ord, dim, keepdim):
    """The 2-norm (or 1-norm) along ``dim``; ``dim=None`` means over every element."""
    axis = dim if x.ndim else None  # a 0-d tensor takes dim 0 or -1; NumPy takes no axis
    if ord == 1:
        return np.abs(x).sum(axis=axis, keepdims=keepdim)
    return np.sqrt((x * x).sum(axis=axis, keepdims=keepdim))


def norm_backward(grad, x, ord, norm, dim, keepdim):
    """d|x|_2/dx = x / |x|_2 (0 where the norm is 0, PyTorch's subgradient); d|x|_1/dx = sign(x)."""
    if not keepdim and dim is not None and x.ndim:
        grad, norm = np.expand_dims(grad, dim), np.expand_dims(norm, dim)
    if ord == 1:
        return (np.sign(x) * grad).astype(grad.dtype, copy=False)
    safe = np.where(norm == 0, 1, norm)
    return np.where(norm == 0, 0, x * (grad / safe)).astype(grad.dtype, copy=False)


# --- losses -----------------------------------------------------------------------------------

REDUCTION_NONE, REDUCTION_MEAN, REDUCTION_SUM = 0, 1, 2


def reduce_loss(losses, reduction):
    if reduction == REDUCTION_MEAN:
        return np.asarray(losses.mean(), losses.dtype)
    if reduction == REDUCTION_SUM:
        return np.asarray(losses.sum(), losses.dtype)
    return losses


def mean_scale(reduction, numel):
    """What a loss's gradient is divided by: the element count for "mean", else 1."""
    return numel if reduction == REDUCTION_MEAN else 1


def mse_loss(x, target, reduction):
    diff = x - target
    return reduce_loss(diff * diff, reduction)


def mse_loss_backward(grad, x, target, reduction):
    return 2 * (x - target) * grad / mean_scale(reduction, x.size)


def nll_target_key(target, ignore_index):
    """(key, valid): the fancy index of each target's class in the input (class dim 1, or 0 for
    a 1-d input), and which targets count (not ``ignore_index``)."""
    valid = target != ignore_index
    classes = np.where(valid, target, 0)
    if target.ndim == 0:
        return (classes,), valid
    if target.ndim == 1:  # a batch of samples, the common case: np.indices costs more
        return (np.arange(target.shape[0]), classes), valid
    grids = np.indices(target.shape, sparse=True)
    return (grids[0], classes, *grids[1:]), valid


def nll_weights(target, weight, ignore_index, dtype):
    """(key, weights): where each target's class is, and its class weight (0 if ignored)."""
    key, valid = nll_target_key(target, ignore_index)
    if weight is None:
        return key, valid.astype(dtype)
    classes = key[0] if target.ndim == 0 else key[1]
    return key, np.where(valid, weight[classes], 0).astype(dtype)


def _unweighted_batch_key(target, weight, ignore_index):
    """The fancy index of each target's class when every weight is 1: a batch of class indices
    (1-d), no class weights, none ignored (the common case, and the cheap one); else None."""
    if weight is not None or target.ndim != 1 or target.size == 0:
        return None
    if ignore_index >= 0 or np.minimum.reduce(target) <= ignore_index:
        return None  # some targets may be ignored (the loss checked the others are classes)
    return (np.arange(target.shape[0]), target)


def nll_loss(log_probs, target, weight, reduction, ignore_index):
    """(loss, total_weight): minus the weighted log-probability of each target class."""
    key = _unweighted_batch_key(target, weight, ignore_index)
    if key is not None and reduction != REDUCTION_NONE:
        # The general path's sums with every weight 1, in the same order: the same numbers.
        total_weight = np.asarray(target.size, log_probs.dtype)
        loss = np.add.reduce(-log_probs[key], axis=None)
        if reduction == REDUCTION_MEAN:
            loss = loss / total_weight
        return np.asarray(loss, log_probs.dtype), total_weight
    key, weights = nll_weights(target, weight, ignore_index, log_probs.dtype)
    losses = -log_probs[key] * weights
    if reduction == REDUCTION_NONE and target.ndim:
        return losses, np.zeros((), log_probs.dtype)
    # A single sample (0-d target) takes PyTorch's reducing kernel even with "none": its
    # total_weight is the target's weight.
    total_weight = np.asarray(np.add.reduce(weights, axis=None), log_probs.dtype)
    if reduction == REDUCTION_NONE:
        return losses, total_weight
    loss = np.add.reduce(losses, axis=None)
    if reduction == REDUCTION_MEAN:
        loss = loss / total_weight
    return np.asarray(loss, log_probs.dtype), total_weight


def nll_loss_backward(grad, log_probs, target, weight, reduction, ignore_index, total_weight):
    key = _unweighted_batch_key(target, weight, ignore_index)
    if key is not None and reduction != REDUCTION_NONE:
        out = np.zeros(log_probs.shape, grad.dtype)
        out[key] = -grad / total_weight if reduction == REDUCTION_MEAN else -grad
        return out
    key, weights = nll_weights(target, weight, ignore_index, grad.dtype)
    if reduction == REDUCTION_MEAN:
        weights = weights / total_weight
    out = np.zeros(log_probs.shape, grad.dtype)
    out[key] = -grad * weights
    return out


def nll_loss2d_backward(grad, log_probs, target, weight, reduction, ignore_index, total_weight):
    """nll_loss_backward for images. ATen's CPU kernel writes into ``zeros_like(self)`` and
    requires it contiguous: log-probabilities laid out otherwise (a permuted batch) raise."""
    innermost_first = result_layout.iterator_order(log_probs.shape, [log_probs])
    sized = [d for d in innermost_first if log_probs.shape[d] > 1]
    if sized != sorted(sized, reverse=True):  # not C order
        raise RuntimeError("grad_input must be contiguous")
    return nll_loss_backward(grad, log_probs, target, weight, reduction, ignore_index, total_weight)


def _log_clamped(x):
    """PyTorch's BCE clamps each log at -100, so that log(0) gives a finite loss."""
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(x), -100)


def binary_cross_entropy(x, target, weight, reduction):
    losses = (target - 1) * _log_clamped(1 - x) - target * _log_clamped(x)
    if weight is not None:
        losses = losses * weight
    return reduce_loss(losses.astype(x.dtype, copy=False), reduction)


BCE_EPSILON = 1e-12


def binary_cross_entropy_backward(grad, x, target, weight, reduction):
    out = grad * (x - target) / np.maximum((1 - x) * x, BCE_EPSILON)
    if weight is not None:
        out = out * weight
    return out / mean_scale(reduction, x.size)


def binary_cross_entropy_target_backward(grad, x, target, weight, reduction):
    with np.errstate(divide="ignore"):
        out = grad * (np.log1p(-x) - np.log(x))  # minus logit(x)
    if weight is not None:
        out = out * weight
    return out / mean_scale(reduction, x.size)


def log_sigmoid(x):
    """log(sigmoid(x)) without overflow for large |x|."""
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def binary_cross_entropy_with_logits(x, target, weight, pos_weight, reduction):
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        losses = (1 - target) * x - log_weight * log_sigmoid(x)
    else:
        losses = (1 - target) * x - log_sigmoid(x)
    if weight is not None:
        losses = losses * weight
    return reduce_loss(losses.astype(x.dtype, copy=False), reduction)


def _sigmoid(x):
    return 0.5 * np.tanh(0.5 * x) + 0.5


def binary_cross_entropy_with_logits_backward(grad, x, target, weight, pos_weight, reduction):
    if pos_weight is not None:
        scaled = pos_weight * target
        out = (scaled + 1 - target) * _sigmoid(x) - scaled
    else:
        out = _sigmoid(x) - target
    out = out * grad
    if weight is not None:
        out = out * weight
    return out / mean_scale(reduction, x.size)


def binary_cross_entropy_with_logits_target_backward(
    grad, x, target, weight, pos_weight, reduction
):
    if pos_weight is not None:
        out = log_sigmoid(-x) - log_sigmoid(x) * pos_weight
    else:
        out = -x
    out = out * grad
    if weight is not None:
        out = out * weight
    return out / mean_scale(reduction, x.size)


def embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Each looked-up row's gradient, added into the row it came from; the padding row gets 0."""
    rows = indices.reshape(-1)
    row_grads = grad.reshape(rows.size, -1)
    if scale_grad_by_freq:
        counts = np.bincount(rows, minlength=num_weights)
        row_grads = row_grads / counts[rows][:, None]
    out = np.zeros((num_weights, row_grads.shape[1]), grad.dtype)
    np.add.at(out, rows, row_grads)
    if padding_idx >= 0:
        out[padding_idx] = 0
    return out
