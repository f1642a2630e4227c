"""nbgrad.nn.functional: the layers as functions, as ``torch.nn.functional`` has them.

Each function checks its arguments the way PyTorch does (with PyTorch's messages), then runs the
table ops of the layer. Where PyTorch has a dedicated backward node (``ConvolutionBackward0``,
``NllLossBackward0``, ...) the layer is one table op; where PyTorch composes smaller ops
(``linear`` from ``addmm`` and ``t``, ``l1_loss`` from ``sub``, ``abs`` and ``mean``,
``cross_entropy`` from ``log_softmax`` and ``nll_loss``), so does this module, in the same order,
so that ``grad_fn`` and ``next_functions`` read the same as PyTorch's.
"""

import math
import numbers
import warnings

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.node import save
from nbgrad.autograd.tensor import Size, Tensor, wrap_dim
from nbgrad.ops import creation, layer_kernels, nn_kernels
from nbgrad.ops import functions as ops
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions import convs
from nbgrad.random import rng_of

# The element-wise activations are the tensor functions themselves.
sigmoid = ops.sigmoid
tanh = ops.tanh

# --- argument helpers -------------------------------------------------------------------------


def _tuple(value, n, name="argument"):
    """``3`` -> ``(3, 3)``; a sequence of length n stays as it is (as a tuple of ints)."""
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise ValueError(f"expected {name} to be a single integer value or a list of {n} values")
    return value


def _shape_text(shape):
    return f"[{', '.join(str(s) for s in shape)}]"


def _c_type_name(tensor):
    """The C++ type name PyTorch's convolution messages use."""
    names = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int"}
    return names.get(tensor._dtype.name, tensor._dtype.name)


def _as_array(tensor):
    return None if tensor is None else tensor._data


def _bump_version(tensor):
    """Record an in-place change made directly to ``tensor``'s memory (as PyTorch's in-place ops
    do), so that a graph that saved the old value notices."""
    tensor._version_counter.value += 1


REDUCTIONS = {
    "none": nn_kernels.REDUCTION_NONE,
    "mean": nn_kernels.REDUCTION_MEAN,
    "sum": nn_kernels.REDUCTION_SUM,
}


def _reduction(reduction, size_average=None, reduce=None):
    """PyTorch's reduction enum, accepting the deprecated ``size_average`` / ``reduce`` too."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return REDUCTIONS[reduction]


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
        "instead.",
        UserWarning,
        stacklevel=3,
    )
    return reduction


# --- linear -----------------------------------------------------------------------------------


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``, built as PyTorch builds it.

    A 2-d input with a bias is one ``addmm`` (AddmmBackward0, with TBackward0 on the weight).
    Any other contiguous input with a bias is flattened to 2-d, run through ``addmm`` and viewed
    back; without a bias it is ``matmul``; a non-contiguous input is ``matmul``, then an in-place
    add of the bias.
    """
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError(
            "both arguments to linear need to be at least 1D, but they are "
            f"{input.dim()}D and {weight.dim()}D"
        )
    if input._dtype is not weight._dtype and bias is not None:
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {dtypes.name_of(input)} and "
            f"{dtypes.name_of(weight)}"
        )
    if input._dtype is not weight._dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {_c_type_name(input)} != "
            f"{_c_type_name(weight)}"
        )
    if bias is not None and input.dim() == 2:
        return ops.addmm(bias, input, ops.t(weight))
    if bias is not None and input.is_contiguous() and bias.dim() == 1:
        shape = input.shape
        rows = int(np.prod(shape[:-1], dtype=np.int64))
        flat = ops.reshape(input, (rows, shape[-1]))
        out = ops.addmm(bias, flat, ops.t(weight))
        return out.view((*shape[:-1], out.shape[1]))
    out = ops.matmul(input, ops.t(weight))
    if bias is not None:
        out = out.add_(bias)
    return out


# --- convolution ------------------------------------------------------------------------------


# A set, as PyTorch's: its message shows it in this process's set order.
PADDING_STRINGS = {"same", "valid"}


def _conv_padding(padding, input, weight, stride, dilation, spatial_dims):
    """Numbers for ``padding``; for ``"same"``, also the extra padding an even kernel needs on
    one side, which PyTorch applies first with a ConstantPadNd."""
    if not isinstance(padding, str):
        return _tuple(padding, spatial_dims, "padding"), None
    if padding == "valid":
        return (0,), None  # one value for every dim, as PyTorch saves it
    if padding != "same":
        raise ValueError(f"Invalid padding string '{padding}', should be one of {PADDING_STRINGS}")
    if any(s != 1 for s in stride):
        raise ValueError("padding='same' is not supported for strided convolutions")
    left, right = [], []
    for d, k in zip(dilation, weight.shape[2:]):
        total = d * (k - 1)
        left.append(total // 2)
        right.append(total - total // 2)
    if left == right:
        return tuple(left), None
    warnings.warn(
        "Using padding='same' with even kernel lengths and odd dilation may require a "
        "zero-padded copy of the input be created",
        UserWarning,
        stacklevel=4,
    )
    extra = [0] * (2 * spatial_dims)
    for i in range(spatial_dims):
        extra[2 * (spatial_dims - 1 - i) + 1] = right[i] - left[i]  # pad lists the last dim first
    return tuple(left), tuple(extra)


def _check_conv(input, weight, bias, padding, dilation, groups, spatial_dims, name):
    dims = spatial_dims + 2
    if input.dim() not in (dims - 1, dims):
        raise RuntimeError(
            f"Expected {dims - 1}D (unbatched) or {dims}D (batched) input to {name}, but got "
            f"input of size: {_shape_text(input.shape)}"
        )
    if bias is not None and input._dtype is not bias._dtype:
        raise RuntimeError(
            f"Input type ({_c_type_name(input)}) and bias type ({_c_type_name(bias)}) should be "
            "the same"
        )
    if input._dtype is not weight._dtype:
        raise RuntimeError(
            f"expected scalar type {dtypes.name_of(input)} but found {dtypes.name_of(weight)}"
        )
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{_shape_text(weight.shape)}] instead"
        )
    channels = input.shape[-spatial_dims - 1]
    if channels != weight.shape[1] * groups:
        batched = input.shape if input.dim() == dims else (1, *input.shape)
        raise RuntimeError(
            f"Given groups={groups}, weight of size {_shape_text(weight.shape)}, expected "
            f"input{_shape_text(batched)} to have {weight.shape[1] * groups} channels, but got "
            f"{channels} channels instead"
        )
    padding = padding * spatial_dims if len(padding) == 1 else padding
    padded = [s + 2 * p for s, p in zip(input.shape[-spatial_dims:], padding)]
    kernel = [d * (k - 1) + 1 for d, k in zip(dilation, weight.shape[2:])]
    if any(k > s for k, s in zip(kernel, padded)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than "
            "actual input size"
        )


def _conv(input, weight, bias, stride, padding, dilation, groups, spatial_dims, name):
    stride = _tuple(stride, spatial_dims, "stride")
    dilation = _tuple(dilation, spatial_dims, "dilation")
    padding, extra = _conv_padding(padding, input, weight, stride, dilation, spatial_dims)
    if extra is not None:
        input = pad(input, extra)
    _check_conv(input, weight, bias, padding, dilation, groups, spatial_dims, name)
    unbatched = input.dim() == spatial_dims + 1
    if unbatched:
        input = ops.unsqueeze(input, 0)
    attrs = (
        stride,
        padding,
        dilation,
        False,  # transposed
        (0,) * len(padding),  # output_padding, as long as padding (PyTorch's habit)
        groups,
        (0,) if bias is None else tuple(bias.shape),  # what PyTorch shows without a bias
    )
    spec = OPS["convolution3d"] if spatial_dims == 3 else OPS["convolution"]
    out = run_op(spec, (input, weight, bias), attrs)
    return ops.squeeze(out, 0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _legacy_name(tensor):
    return "torch." + dtypes.LEGACY_TYPE_NAMES[tensor._dtype]


def _conv_transpose(
    input, weight, bias, stride, padding, output_padding, groups, dilation, spatial_dims, name
):
    dims = spatial_dims + 2
    if input.dim() not in (dims - 1, dims):
        raise RuntimeError(
            f"Expected {dims - 1}D (unbatched) or {dims}D (batched) input to {name}, but got "
            f"input of size: {_shape_text(input.shape)}"
        )
    stride = _tuple(stride, spatial_dims, "stride")
    padding = _tuple(padding, spatial_dims, "padding")
    output_padding = _tuple(output_padding, spatial_dims, "output_padding")
    dilation = _tuple(dilation, spatial_dims, "dilation")
    unbatched = input.dim() == dims - 1
    if unbatched:
        input = ops.unsqueeze(input, 0)
    if input._dtype is not weight._dtype:
        raise RuntimeError(
            f"Input type ({_legacy_name(input)}) and weight type ({_legacy_name(weight)}) should "
            "be the same or input should be a MKLDNN tensor and weight is a dense tensor"
        )
    # ATen's checks, shared with torch._convolution (ops/functions/convs.py)
    convs.check_shapes(input, weight, bias, padding, dilation, True, groups)
    convs.check_output_padding(output_padding, stride, dilation)
    sizes = [
        layer_kernels.transposed_size(s, k, st, p, d, op)
        for s, k, st, p, d, op in zip(
            input.shape[2:], weight.shape[2:], stride, padding, dilation, output_padding
        )
    ]
    if min(sizes) < 1:
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, input.shape[2:]))}). "
            f"Calculated output size per channel: ({' x '.join(map(str, sizes))}). Output size "
            "is too small"
        )
    attrs = (
        stride,
        padding,
        dilation,
        True,  # transposed
        output_padding,
        groups,
        (0,) if bias is None else tuple(bias.shape),
    )
    spec = OPS["convolution_transposed3d" if spatial_dims == 3 else "convolution_transposed"]
    out = run_op(spec, (input, weight, bias), attrs)
    return ops.squeeze(out, 0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):  # fmt: skip
    """The transpose (gradient) of conv1d: each input element spreads, times the kernel, over a
    window of the output. ``weight`` is (in_channels, out_channels / groups, k)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
        "conv_transpose1d",
    )  # fmt: skip


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):  # fmt: skip
    """The transpose (gradient) of conv2d, as ``conv_transpose1d`` in two dims."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
        "conv_transpose2d",
    )  # fmt: skip


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):  # fmt: skip
    """The transpose (gradient) of conv3d, as ``conv_transpose1d`` in three dims."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
        "conv_transpose3d",
    )  # fmt: skip


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Every kernel-sized block of a (N, C, H, W) or (C, H, W) input as a column: the "im2col"
    that convolution is built on."""
    if input.dim() not in (3, 4):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor for input with possible 0 batch size and "
            f"non-zero dimensions, but got: {_shape_text(input.shape)}"
        )
    kernel_size, dilation = _tuple(kernel_size, 2), _tuple(dilation, 2)
    padding, stride = _tuple(padding, 2), _tuple(stride, 2)
    height, width = input.shape[-2:]
    blocks = [
        nn_kernels.conv_output_size(s, k, st, p, d)
        for s, k, st, p, d in zip((height, width), kernel_size, stride, padding, dilation)
    ]
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size ({height}, {width}), kernel_size={kernel_size}, "
            f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding "
            f"blocks as ({blocks[0]}, {blocks[1]}), but its components must be at least one."
        )
    attrs = (kernel_size, dilation, padding, stride, height, width)
    return run_op(OPS["im2col"], (input,), attrs)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The inverse arrangement of ``unfold``: columns summed back into an image (col2im)."""
    output_size, kernel_size = _tuple(output_size, 2), _tuple(kernel_size, 2)
    dilation, padding, stride = _tuple(dilation, 2), _tuple(padding, 2), _tuple(stride, 2)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possible 0 batch size and "
            f"non-zero dimensions, but got: {_shape_text(input.shape)}"
        )
    blocks = [
        nn_kernels.conv_output_size(s, k, st, p, d)
        for s, k, st, p, d in zip(output_size, kernel_size, stride, padding, dilation)
    ]
    columns, length = input.shape[-2:]
    taps = kernel_size[0] * kernel_size[1]
    if columns % taps:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={columns} and kernel_size={kernel_size}"
        )
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size={output_size}, kernel_size={kernel_size}, "
            f"dilation={dilation}, padding={padding}, stride={stride}, expected size of "
            f"input's dimension 2 to match the calculated number of sliding blocks "
            f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)="
            f"{length}."
        )
    attrs = (output_size, kernel_size, dilation, padding, stride)
    return run_op(OPS["col2im"], (input,), attrs)


# --- pooling ----------------------------------------------------------------------------------


def _check_pool(input, kernel_size, stride, padding, dilation, ceil_mode):
    if input.dim() not in (3, 4) or input.numel() == 0:
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    for k, p, d in zip(kernel_size, padding, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    out = [
        nn_kernels.pool_output_size(s, k, st, p, d, ceil_mode)
        for s, k, st, p, d in zip(input.shape[-2:], kernel_size, stride, padding, dilation)
    ]
    if min(out) < 1:
        channels = input.shape[-3]
        raise RuntimeError(
            f"Given input size: ({channels}x{input.shape[-2]}x{input.shape[-1]}). Calculated "
            f"output size: ({channels}x{out[0]}x{out[1]}). Output size is too small"
        )


def _pool_stride(stride):
    """The stride as PyTorch keeps it: () when not given (the kernels then use kernel_size)."""
    if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0):
        return ()
    return _tuple(stride, 2, "stride")


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """The max of each window; with ``return_indices``, also where it was (``row * W + col``)."""
    kernel_size = _tuple(kernel_size, 2, "kernel_size")
    stride = _pool_stride(stride)
    padding, dilation = _tuple(padding, 2, "padding"), _tuple(dilation, 2, "dilation")
    _check_pool(input, kernel_size, stride or kernel_size, padding, dilation, ceil_mode)
    attrs = (kernel_size, stride, padding, dilation, bool(ceil_mode))
    values, indices = run_op(OPS["max_pool2d"], (input,), attrs)
    return (values, indices) if return_indices else values


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    kernel_size = _tuple(kernel_size, 2, "kernel_size")
    stride = _pool_stride(stride)
    padding = _tuple(padding, 2, "padding")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool(input, kernel_size, stride or kernel_size, padding, (1, 1), ceil_mode)
    attrs = (
        kernel_size,
        stride,
        padding,
        bool(ceil_mode),
        bool(count_include_pad),
        divisor_override,
    )
    return run_op(OPS["avg_pool2d"], (input,), attrs)


def _adaptive_size(output_size, input, dims, name):
    sizes = (output_size,) * dims if isinstance(output_size, numbers.Integral) else output_size
    sizes = tuple(sizes)
    if len(sizes) != dims:
        if name.startswith("adaptive_max_pool"):
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {dims}")
        raise RuntimeError(f"{name}: output_size must be {dims}")
    sizes = tuple(input.shape[-dims + i] if s is None else int(s) for i, s in enumerate(sizes))
    if any(s < 0 for s in sizes):
        shown = ", ".join(map(str, sizes))
        raise RuntimeError(
            f"{name}: elements of output_size must be greater than or equal to 0 but received "
            f"{{{shown}}}"
        )
    return sizes


def _check_adaptive_input(input, name, colon=False):
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"{name}(): Expected 3D or 4D tensor, but got{':' if colon else ''} "
            f"{_shape_text(input.shape)}"
        )
    for dim in range(input.dim() - 3, input.dim()):
        if input.shape[dim] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {_shape_text(input.shape)} with dimension {dim} being empty"
            )


def _at_least_3d(input):
    if input.dim() < 3:
        raise ValueError("Input dimension should be at least 3")


def adaptive_avg_pool2d(input, output_size):
    """The mean over each of ``output_size`` windows that tile the last two dims. For output
    size 1, a mean over them (MeanBackward1), as PyTorch computes it."""
    if not isinstance(output_size, numbers.Integral):
        _at_least_3d(input)  # PyTorch's Python check, run only for a tuple of sizes
    sizes = _adaptive_size(output_size, input, 2, "adaptive_avg_pool2d")
    _check_adaptive_input(input, "adaptive_avg_pool2d")
    if sizes == (1, 1):
        return ops.mean(input, (-1, -2), keepdim=True)
    return run_op(OPS["adaptive_avg_pool2d"], (input,), (sizes,))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The max over each of ``output_size`` windows tiling the last two dims (and, with
    ``return_indices``, where it was, as ``row * W + col``)."""
    if not isinstance(output_size, numbers.Integral):
        _at_least_3d(input)
    sizes = _adaptive_size(output_size, input, 2, "adaptive_max_pool2d")
    _check_adaptive_input(input, "adaptive_max_pool2d", colon=True)
    values, indices = run_op(OPS["adaptive_max_pool2d"], (input,), (sizes,))
    return (values, indices) if return_indices else values


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, return_indices=True)


def _check_1d_input(input, name):
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
            f"#1 'self' (while checking arguments for {name})"
        )


def _one(value, name):
    if isinstance(value, numbers.Integral):
        return int(value)
    value = tuple(value)
    if len(value) != 1:
        raise RuntimeError(f"{name} argument '{name.split()[-1]}' should contain one int")
    return int(value[0])


def _adaptive_1d_size(output_size, name):
    if isinstance(output_size, numbers.Integral):
        return int(output_size)
    output_size = tuple(output_size)
    if len(output_size) != 1:
        raise RuntimeError(
            f"{name}() argument 'output_size' should contain one int (got {len(output_size)})"
        )
    return int(output_size[0])


# PyTorch's 1-d pooling is 2-d pooling of the input unsqueezed at dim -2 (a height of 1),
# squeezed after: UnsqueezeBackward0, the 2-d node, SqueezeBackward1 in the graph.


def adaptive_avg_pool1d(input, output_size):
    _check_1d_input(input, "adaptive_avg_pool1d")
    size = _adaptive_1d_size(output_size, "adaptive_avg_pool1d")
    out = adaptive_avg_pool2d(ops.unsqueeze(input, -2), (1, size))
    return ops.squeeze(out, -2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    _check_1d_input(input, "adaptive_max_pool1d")
    size = _adaptive_1d_size(output_size, "adaptive_max_pool1d")
    values, indices = adaptive_max_pool2d(ops.unsqueeze(input, -2), (1, size), True)
    values, indices = ops.squeeze(values, -2), ops.squeeze(indices, -2)
    return (values, indices) if return_indices else values


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    _check_1d_input(input, "avg_pool1d")
    kernel = _one(kernel_size, "avg_pool1d() kernel_size")
    step = kernel if stride is None or stride == () else _one(stride, "avg_pool1d() stride")
    if step == 0:
        raise RuntimeError("stride should not be zero")
    pad_ = _one(padding, "avg_pool1d() padding")
    out = avg_pool2d(
        ops.unsqueeze(input, -2), (1, kernel), (1, step), (0, pad_), ceil_mode, count_include_pad
    )
    return ops.squeeze(out, -2)


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    if input.dim() not in (2, 3):
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
            f"for input, but got:{_shape_text(input.shape)}"
        )
    kernel = _one(kernel_size, "max_pool1d() kernel_size")
    step = kernel if stride is None or stride == () else _one(stride, "max_pool1d() stride")
    pad_, dilation = _one(padding, "max_pool1d() padding"), _one(dilation, "max_pool1d() dilation")
    if kernel <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {kernel}")
    if step <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {step}")
    if pad_ < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {pad_}")
    if pad_ > kernel // 2:
        raise RuntimeError(
            "max_pool1d() padding should be at most half of kernel size, but got padding="
            f"{pad_} and kernel_size={kernel}"
        )
    if dilation <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {dilation}")
    size = nn_kernels.pool_output_size(input.shape[-1], kernel, step, pad_, dilation, ceil_mode)
    if size <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {size}")
    attrs = ((1, kernel), (1, step), (0, pad_), (1, dilation), bool(ceil_mode))
    values, indices = run_op(OPS["max_pool2d"], (ops.unsqueeze(input, -2),), attrs)
    values, indices = ops.squeeze(values, -2), ops.squeeze(indices, -2)
    return (values, indices) if return_indices else values


def _check_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, name):
    if input.dim() not in (4, 5) or input.numel() == 0:
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    for k, p, d in zip(kernel_size, padding, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    sizes = input.shape[-3:]
    out = [
        nn_kernels.pool_output_size(s, k, st, p, d, ceil_mode)
        for s, k, st, p, d in zip(sizes, kernel_size, stride, padding, dilation)
    ]
    if min(out) < 1:
        channels = input.shape[-4]
        if name == "avg_pool3d":
            kd, kh, kw = kernel_size
            raise RuntimeError(
                f"input image (T: {sizes[0]} H: {sizes[1]} W: {sizes[2]}) smaller than kernel "
                f"size (kT: {kd} kH: {kh} kW: {kw})"
            )
        raise RuntimeError(
            f"Given input size: ({channels}x{'x'.join(map(str, sizes))}). Calculated output size: "
            f"({channels}x{'x'.join(map(str, out))}). Output size is too small"
        )


def _pool_stride3(stride):
    if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0):
        return ()
    return _tuple(stride, 3, "stride")


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """The max of each ``kernel_size`` window of the last three dims."""
    kernel_size = _tuple(kernel_size, 3, "kernel_size")
    stride = _pool_stride3(stride)
    padding, dilation = _tuple(padding, 3, "padding"), _tuple(dilation, 3, "dilation")
    _check_pool3d(input, kernel_size, stride or kernel_size, padding, dilation, ceil_mode, "max")
    attrs = (kernel_size, stride, padding, dilation, bool(ceil_mode))
    values, indices = run_op(OPS["max_pool3d"], (input,), attrs)
    return (values, indices) if return_indices else values


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """The mean of each ``kernel_size`` window of the last three dims."""
    kernel_size = _tuple(kernel_size, 3, "kernel_size")
    stride = _pool_stride3(stride)
    padding = _tuple(padding, 3, "padding")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool3d(
        input, kernel_size, stride or kernel_size, padding, (1, 1, 1), ceil_mode, "avg_pool3d"
    )
    attrs = (
        kernel_size,
        stride,
        padding,
        bool(ceil_mode),
        bool(count_include_pad),
        divisor_override,
    )
    return run_op(OPS["avg_pool3d"], (input,), attrs)


def _check_adaptive3d_input(input, name, colon=False):
    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"{name}(): Expected 4D or 5D tensor, but got{':' if colon else ''} "
            f"{_shape_text(input.shape)}"
        )
    for dim in range(input.dim() - 4, input.dim()):
        if input.shape[dim] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {_shape_text(input.shape)} with dimension {dim} being empty"
            )


def adaptive_avg_pool3d(input, output_size):
    """The mean over each of ``output_size`` windows tiling the last three dims (output size 1:
    a mean over them, MeanBackward1, as PyTorch)."""
    if not isinstance(output_size, numbers.Integral):
        _at_least_3d(input)
    sizes = _adaptive_size(output_size, input, 3, "adaptive_avg_pool3d")
    _check_adaptive3d_input(input, "adaptive_avg_pool3d")
    if sizes == (1, 1, 1):
        return ops.mean(input, (-1, -2, -3), keepdim=True)
    return run_op(OPS["adaptive_avg_pool3d"], (input,), (sizes,))


def adaptive_max_pool3d(input, output_size, return_indices=False):
    if not isinstance(output_size, numbers.Integral):
        _at_least_3d(input)
    sizes = _adaptive_size(output_size, input, 3, "adaptive_max_pool3d")
    _check_adaptive3d_input(input, "adaptive_max_pool3d", colon=True)
    values, indices = run_op(OPS["adaptive_max_pool3d"], (input,), (sizes,))
    return (values, indices) if return_indices else values


# --- interpolation ----------------------------------------------------------------------------

_INTERPOLATE_MODES = (
    "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
)
_UPSAMPLE_OPS = {
    ("nearest", 1): "upsample_nearest1d",
    ("nearest", 2): "upsample_nearest2d",
    ("nearest-exact", 1): "upsample_nearest_exact1d",
    ("nearest-exact", 2): "upsample_nearest_exact2d",
    ("linear", 1): "upsample_linear1d",
    ("bilinear", 2): "upsample_bilinear2d",
    ("nearest", 3): "upsample_nearest3d",
    ("nearest-exact", 3): "upsample_nearest_exact3d",
    ("trilinear", 3): "upsample_trilinear3d",
    ("bicubic", 2): "upsample_bicubic2d",
    ("lanczos", 2): "_upsample_lanczos2d_aa",  # (antialias=True only: checked above)
}


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resize the spatial dims (1, 2 or 3 of them) to ``size`` or by ``scale_factor``: modes
    ``nearest``, ``nearest-exact``, ``linear`` (3-d input), ``bilinear`` and ``bicubic`` (4-d),
    ``trilinear`` (5-d), and ``area`` (adaptive average pooling, as PyTorch's)."""
    dims = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dims:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format."
                )
            output_size = [int(s) for s in size]
        else:
            output_size = [int(size)] * dims
        scale_factors = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dims:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in (N, C, "
                    "d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dims
        output_size = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input"
        )
    if mode == "lanczos" and input.dim() == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
        if input._dtype is dtypes.float16:
            raise NotImplementedError("\"compute_index_ranges_weights\" not implemented for 'Half'")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True  # PyTorch's: area needs an output size
    if recompute_scale_factor and scale_factors is not None:
        output_size = [
            math.floor(float(input.shape[i + 2]) * scale_factors[i]) for i in range(dims)
        ]
        scale_factors = None
    key = (mode, dims)
    if mode == "area" and input.dim() in (3, 4, 5):
        # PyTorch's area mode is adaptive average pooling to the output size.
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dims - 1]
        return pool(input, output_size)
    if key not in _UPSAMPLE_OPS:
        if mode in ("linear", "bilinear", "trilinear", "bicubic") and input.dim() in (3, 4, 5):
            needed = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}[mode]
            if needed != input.dim():
                raise NotImplementedError(
                    f"Got {input.dim()}D input, but {mode} mode needs {needed}D input"
                )
        if input.dim() in (3, 4, 5) and mode in _INTERPOLATE_MODES.split(" | "):
            raise NotImplementedError(f"nbgrad's interpolate has no mode {mode!r} for this input")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: {_INTERPOLATE_MODES} (got {mode})"
        )
    if output_size is None:
        output_size = [
            math.floor(float(input.shape[i + 2]) * scale_factors[i]) for i in range(dims)
        ]
    scales = tuple(scale_factors) if scale_factors is not None else (None,) * dims
    corners = (
        (bool(align_corners),)
        if mode in ("linear", "bilinear", "trilinear", "bicubic", "lanczos")
        else ()
    )
    attrs = (tuple(output_size), *corners, *scales, tuple(input.shape))
    if antialias:
        return run_op(OPS[f"_upsample_{mode}2d_aa"], (input,), attrs)
    return run_op(OPS[_UPSAMPLE_OPS[key]], (input,), attrs)


# --- padding ----------------------------------------------------------------------------------

_INDEX_PAD_HELP = (
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def pad(input, pad, mode="constant", value=None):
    """Pad the last dims: ``pad`` lists (left, right) of the last dim, then of the one before.

    ``constant`` (negative amounts crop), ``reflect``, ``replicate`` and ``circular``, as
    PyTorch.
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {input.dim()}"
        )
    if mode == "constant":
        return run_op(OPS["constant_pad_nd"], (input,), (pad, 0 if value is None else value))
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value:  # 0 is taken: it is what constant padding would default to
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    dims = len(pad) // 2
    if input.dim() not in (dims + 1, dims + 2) or dims > 3:
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            + _INDEX_PAD_HELP
        )
    if mode == "circular":
        return _pad_circular(input, pad)
    if mode == "reflect":
        for k in range(dims):
            axis = input.dim() - 1 - k
            if max(pad[2 * k], pad[2 * k + 1]) >= input.shape[axis]:
                raise RuntimeError(
                    "Argument #4: Padding size should be less than the corresponding input "
                    f"dimension, but got: padding ({pad[2 * k]}, {pad[2 * k + 1]}) at dimension "
                    f"{axis} of input {_shape_text(input.shape)}"
                )
    return run_op(OPS[f"{mode}_pad{dims}d"], (input,), (pad,))


def _pad_circular(input, pad):  # noqa: A002
    """Wrap the input around (the last dims first), as PyTorch composes it: a new tensor, the
    input copied into its middle (CopySlices over slices of the input), then for each padded dim
    the padding copied in from the other end of the same tensor (one CopySlices per side)."""
    sides = [(input.dim() - 1 - k, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]
    shape = list(input.shape)
    for axis, left, right in sides:
        if left > shape[axis] or right > shape[axis]:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        shape[axis] += left + right
    out = input.new_empty(shape)
    middle, inside = out, input
    for axis, left, right in sides:
        # negative amounts crop, possibly everything
        kept = max(input.shape[axis] - max(-left, 0) - max(-right, 0), 0)
        middle = middle.narrow(axis, max(left, 0), kept)
        inside = inside.narrow(axis, min(max(-left, 0), input.shape[axis]), kept)
    middle.copy_(inside)
    for axis, left, right in sides:
        size = shape[axis]
        if size == 0:
            continue
        if left > 0:
            out.narrow(axis, 0, left).copy_(out.narrow(axis, size - max(right, 0) - left, left))
        if right > 0:
            out.narrow(axis, size - right, right).copy_(out.narrow(axis, max(left, 0), right))
    return out


# --- dropout, embedding -----------------------------------------------------------------------


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (during
    training only): the input times a random mask, MulBackward0 as in PyTorch."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    if not input.is_floating_point():
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type {dtypes.name_of(input)}"
        )
    dtype = input._dtype.numpy
    if p == 1:
        mask = np.zeros(input.shape, dtype)
    else:
        keep = rng_of(None).random(input.shape) >= p
        mask = (keep / (1 - p)).astype(dtype)
    mask = Tensor._make(mask)
    return input.mul_(mask) if inplace else ops.mul(input, mask)


def _check_indices(indices, name):
    if not isinstance(indices, Tensor) or indices._dtype not in (dtypes.int64, dtypes.int32):
        kind = (
            f"torch.{dtypes.LEGACY_TYPE_NAMES[indices._dtype]}"
            if isinstance(indices, Tensor)
            else type(indices).__name__
        )
        raise RuntimeError(
            f"Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {kind} instead (while checking arguments for {name})"
        )


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of ``weight`` looked up by the integer ``input``; the padding row gets no gradient."""
    _check_indices(input, "embedding")
    num_weights = weight.shape[0]
    if padding_idx is None:
        padding_idx = -1
    else:
        if not -num_weights <= padding_idx < num_weights:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= num_weights
    indices = input._data
    if indices.size and (indices.min() < 0 or indices.max() >= num_weights):
        raise IndexError("index out of range in self")
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported by nbgrad")
    if max_norm is not None:
        _embedding_renorm(weight, indices, max_norm, norm_type)
    attrs = (indices, padding_idx, bool(scale_grad_by_freq), False, num_weights)
    return run_op(OPS["embedding"], (weight,), attrs)


def _embedding_renorm(weight, indices, max_norm, norm_type):
    """Shrink, in place, the looked-up rows whose norm exceeds ``max_norm`` (as PyTorch does,
    outside the graph)."""
    rows = np.unique(indices)
    data = weight._data
    norms = np.linalg.norm(data[rows], ord=norm_type, axis=1)
    too_long = norms > max_norm
    if too_long.any():
        scale = max_norm / (norms[too_long] + 1e-7)
        data[rows[too_long]] *= scale[:, None].astype(data.dtype)
        _bump_version(weight)


def one_hot(tensor, num_classes=-1):
    if not isinstance(tensor, Tensor) or tensor._dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    labels = tensor._data
    if num_classes == -1:
        if labels.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(labels.max()) + 1
    if labels.size and labels.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if labels.size and labels.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros((*labels.shape, num_classes), np.int64)
    np.put_along_axis(out, labels[..., None], 1, axis=-1)
    return Tensor._make(out)


# --- activations ------------------------------------------------------------------------------


def _check_floating(input, kernel):
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtypes.name_of(input)}'")


def relu(input, inplace=False):
    return input.relu_() if inplace else ops.relu(input)


def gelu(input, approximate="none"):
    """x * P(X <= x) for a standard normal X; ``approximate="tanh"`` uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _check_floating(input, "GeluKernelImpl")
    return run_op(OPS["gelu"], (input,), (approximate,))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _check_floating(input, "leaky_relu_cpu")
    if inplace:
        return run_inplace(OPS["leaky_relu_inplace"], input, (), (negative_slope,))
    return run_op(OPS["leaky_relu"], (input,), (negative_slope,))


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    if dtype is None:
        _check_floating(input, "softmax_lastdim_kernel_impl")
    return ops.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    if dtype is None:
        _check_floating(input, "log_softmax_lastdim_kernel_impl")
    return ops.log_softmax(input, dim, dtype=dtype)


# --- normalisation ----------------------------------------------------------------------------


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last ``len(normalized_shape)`` dims to mean 0 and variance 1."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    count = len(normalized_shape)
    if input.dim() < count or tuple(input.shape[input.dim() - count :]) != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={_shape_text(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
            f"{_shape_text(input.shape)}"
        )
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and tuple(param.shape) != normalized_shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {_shape_text(param.shape)} and normalized_shape = "
                f"{_shape_text(normalized_shape)}"
            )
    _check_same_dtype(input, weight, bias)
    out, _, _ = run_op(OPS["layer_norm"], (input, weight, bias), (normalized_shape, eps))
    return out


def _check_same_dtype(*tensors):
    kinds = {t._dtype for t in tensors if t is not None}
    if len(kinds) > 1:
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """Normalise each channel (dim 1): with the batch's statistics when training (and move the
    running ones toward them), with the running ones otherwise."""
    if input.dim() < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")
    channels = input.shape[1]
    if training:
        values_per_channel = input.numel() // channels if channels else 0
        if values_per_channel == 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{input.shape!r}"
            )
    elif running_mean is None or running_var is None:
        raise RuntimeError(
            f"running_{'mean' if running_mean is None else 'var'} must be defined in evaluation "
            "mode"
        )
    for name, tensor in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        if tensor is not None and tensor.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {tensor.numel()}")
    _check_same_dtype(input, weight, bias)
    # The kernel updates the running stats in place without bumping their version, as
    # PyTorch's does; the node keeps them as saved tensors, so a later in-place change to them
    # is caught at backward, as in PyTorch.
    attrs = (_as_array(running_mean), _as_array(running_var), bool(training), momentum, eps)
    out, _, _ = run_op(OPS["batch_norm"], (input, weight, bias), attrs)
    node = out._grad_fn
    if node is not None and running_mean is not None:
        saves = OPS["batch_norm"].saves
        node._saved[saves.index("running_mean")] = save(running_mean, False)
        node._saved[saves.index("running_var")] = save(running_var, False)
    return out


# --- losses -----------------------------------------------------------------------------------


def _broadcast_pair(input, target, name):
    """PyTorch warns when a loss's target has another shape, then broadcasts the two."""
    if input.shape == target.shape:
        return input, target
    warnings.warn(
        f"Using a target size ({target.shape!r}) that is different to the input size "
        f"({input.shape!r}). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size.",
        UserWarning,
        stacklevel=3,
    )
    try:
        shape = np.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise ops._broadcast_error(input, target) from None
    if input.shape != shape:
        input = ops.expand(input, shape)
    if target.shape != shape:
        target = ops.expand(target, shape)
    return input, target


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean (or sum) of squared differences: one MseLossBackward0 node."""
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _broadcast_pair(input, target, "mse_loss")
    if not input.is_floating_point() and not target.is_floating_point():
        raise NotImplementedError(f"\"mse_cpu\" not implemented for '{dtypes.name_of(input)}'")
    if weight is not None:
        losses = weight * (input - target) ** 2
        return _apply_reduction(losses, reduction)
    return run_op(OPS["mse_loss"], (input, target), (reduction,))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean (or sum) of absolute differences, composed as PyTorch composes it."""
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _broadcast_pair(input, target, "l1_loss")
    losses = ops.abs(ops.sub(input, target))
    if weight is not None:
        losses = losses * weight
    return _apply_reduction(losses, reduction)


def _apply_reduction(losses, reduction):
    if reduction == nn_kernels.REDUCTION_MEAN:
        return ops.mean(losses)
    if reduction == nn_kernels.REDUCTION_SUM:
        return ops.sum(losses)
    return losses


def _check_class_weight(weight, classes):
    if weight is not None and (weight.dim() != 1 or weight.numel() != classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes but "
            f"got weight tensor of shape: {_shape_text(weight.shape)}"
        )


def _check_class_targets(target, classes, ignore_index):
    """Class indices must be Long (or Byte) and name a class, unless they are ``ignore_index``."""
    if target._dtype not in (dtypes.int64, dtypes.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {dtypes.name_of(target)}"
        )
    labels = target._data.reshape(-1)
    if labels.size == 0:
        return
    # Two reductions clear the common case; only then are ignored targets looked at.
    if np.minimum.reduce(labels) >= 0 and np.maximum.reduce(labels) < classes:
        return
    counted = labels[labels != ignore_index]
    outside = counted[(counted < 0) | (counted >= classes)]
    if outside.size:
        raise IndexError(f"Target {outside.reshape(-1)[0]} is out of bounds.")


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    """Minus the (weighted) log-probability of each target class: ``input`` holds
    log-probabilities (of ``log_softmax``), class dim 1 (or 0 for one sample)."""
    return _nll_loss_nd(
        input, target, weight, _reduction(reduction, size_average, reduce), ignore_index
    )


def _nll_loss_nd(input, target, weight, reduction, ignore_index):
    """PyTorch's nll_loss_nd: 1-d and 2-d inputs are one NllLoss, 4-d one NllLoss2d, other ranks
    are viewed as 4-d first. The checks come in PyTorch's order, so the first problem found is
    the one PyTorch reports."""
    ndim, shape = input._data.ndim, input._data.shape  # read once: every loss call runs these
    if ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {ndim})")
    if not isinstance(target, Tensor):
        raise TypeError(f"nll_loss(): target must be a Tensor, not {type(target).__name__}")
    labels = target._data
    target_ndim, target_shape = labels.ndim, labels.shape
    if ndim != 1 and (target_ndim == 0 or shape[0] != target_shape[0]):
        raise ValueError(
            f"Expected input batch_size ({shape[0]}) to match target batch_size "
            f"({target_shape[0] if target_ndim else 1})."
        )
    if ndim <= 2:
        if target_ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        spec = OPS["nll_loss"]
        if ndim == 1:
            labels = labels.reshape(())
    elif ndim == 4:
        if target_ndim != 3:
            raise RuntimeError(
                "only batches of spatial targets supported (3D tensors) but got targets of "
                f"dimension: {target_ndim}"
            )
        if target_shape[1:] != shape[2:]:
            raise RuntimeError(
                f"size mismatch (got input: {_shape_text(shape)} , target: "
                f"{_shape_text(target_shape)}"
            )
        spec = OPS["nll_loss2d"]
    else:
        out_size = (shape[0], *shape[2:])
        if target_shape[1:] != shape[2:]:
            raise RuntimeError(
                f"Expected target size {_shape_text(out_size)}, got {_shape_text(target_shape)}"
            )
        spec = OPS["nll_loss2d"]
    classes = shape[0] if ndim == 1 else shape[1]
    _check_class_weight(weight, classes)
    _check_class_targets(target, classes, ignore_index)
    attrs = (labels, _as_array(weight), reduction, ignore_index)
    if ndim in (1, 2, 4):
        return run_op(spec, (input,), attrs)[0]
    # Other ranks: PyTorch views (N, C, d1, d2, ...) as a 4-d (N, C, 1, d1*d2*...) first.
    n, c = shape[:2]
    flat = input.contiguous().view((n, c, 1, -1))
    out = run_op(spec, (flat,), (labels.reshape(n, 1, -1), *attrs[1:]))[0]
    return out.view(out_size) if reduction == nn_kernels.REDUCTION_NONE else out


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """``nll_loss(log_softmax(input, 1), target)``: NllLossBackward0 after LogSoftmaxBackward0.

    ``target`` holds class indices, or class probabilities (a float tensor shaped like
    ``input``). Stable for large inputs: log_softmax subtracts each row's max first.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    ndim = input._data.ndim
    class_dim = 0 if ndim == 1 else 1
    if ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if isinstance(target, Tensor) and target._data.shape == input._data.shape:
        if not target.is_floating_point():
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, got "
                f"{dtypes.name_of(target)}"
            )
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probabilities(
            input, target, weight, reduction, label_smoothing, class_dim
        )
    log_probs = ops.log_softmax(input, class_dim)
    if label_smoothing > 0:
        return _cross_entropy_label_smoothing(
            log_probs, target, weight, reduction, ignore_index, label_smoothing, class_dim
        )
    return _nll_loss_nd(log_probs, target, weight, reduction, ignore_index)


def _mul_scalar(tensor, number):
    return run_op(OPS["mul_scalar"], (tensor,), (number,))


def _class_weight_view(weight, ndim, class_dim):
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return weight.view(shape)


def _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing, class_dim):
    classes = input.shape[class_dim]
    _check_class_weight(weight, classes)
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    log_probs = ops.log_softmax(input, class_dim)
    products = log_probs * target
    if weight is not None:
        products = products * _class_weight_view(weight, input.dim(), class_dim)
    if reduction == nn_kernels.REDUCTION_NONE:
        return -ops.sum(products, class_dim)
    total = -ops.sum(products)
    if reduction == nn_kernels.REDUCTION_SUM:
        return total
    return run_op(OPS["div_scalar"], (total,), (input.numel() // classes,))


def _cross_entropy_label_smoothing(
    log_probs, target, weight, reduction, ignore_index, label_smoothing, class_dim
):
    """PyTorch's composition: (1 - s) * nll + s / C * (the loss against uniform targets)."""
    classes = log_probs.shape[class_dim]
    nll = _nll_loss_nd(log_probs, target, weight, reduction, ignore_index)
    ignored = target._data == ignore_index
    if weight is not None:
        smooth = -ops.sum(
            log_probs * _class_weight_view(weight, log_probs.dim(), class_dim), class_dim
        )
    else:
        smooth = -ops.sum(log_probs, class_dim)
    smooth = smooth.masked_fill_(ignored, 0.0)
    if reduction == nn_kernels.REDUCTION_MEAN:
        if weight is not None:
            counted = Tensor._make(np.asarray(weight._data[target._data[~ignored]].sum()))
        else:
            counted = Tensor._make(np.asarray((~ignored).sum(), np.int64))
        smooth = ops.div(ops.sum(smooth), counted)
    elif reduction == nn_kernels.REDUCTION_SUM:
        smooth = ops.sum(smooth)
    return ops.add(
        _mul_scalar(nll, 1 - label_smoothing), _mul_scalar(smooth, label_smoothing / classes)
    )


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """-(t log(p) + (1 - t) log(1 - p)) for probabilities ``input`` in [0, 1]."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape!r}) that is different to the input size "
            f"({input.shape!r}) is deprecated. Please ensure they have the same size."
        )
    if target._dtype is not input._dtype:
        raise RuntimeError(
            f"Found dtype {dtypes.name_of(target)} but expected {dtypes.name_of(input)}"
        )
    data = input._data
    if data.size and ((data < 0) | (data > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    weights = None if weight is None else np.broadcast_to(weight._data, target.shape)
    return run_op(OPS["binary_cross_entropy"], (input, target), (weights, reduction))


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from the logits."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape!r}) must be the same as input size ({input.shape!r})"
        )
    if not target.is_floating_point():
        raise RuntimeError(
            f"Found dtype {dtypes.name_of(target)} but expected {dtypes.name_of(input)}"
        )
    attrs = (_as_array(weight), _as_array(pos_weight), reduction)
    return run_op(OPS["binary_cross_entropy_with_logits"], (input, target), attrs)


# --- similarity -------------------------------------------------------------------------------


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``, composed as PyTorch does:
    each input divided by its norm (clamped to at least ``eps``), multiplied, summed."""
    try:
        shape = Size(np.broadcast_shapes(x1.shape, x2.shape))
    except ValueError:
        raise ops._broadcast_error(x1, x2) from None
    if x1.shape != x2.shape:  # PyTorch's expand_outplace: both expanded, or neither
        x1, x2 = ops.expand(x1, shape), ops.expand(x2, shape)
    wrap_dim(dim, len(shape))  # checked, but saved as given, as PyTorch saves it
    norms = []
    for x in (x1, x2):
        norm = ops.clone(run_op(OPS["linalg_vector_norm"], (x,), (2, (dim,), True)))
        with grad_mode.no_grad():
            norm.clamp_(min=eps)
        norms.append(norm)
    return ops.sum(ops.div(x1, norms[0]) * ops.div(x2, norms[1]), dim)


# --- activations, more ------------------------------------------------------------------------
# One table op each where PyTorch has a backward node of its own (SoftplusBackward0, ...); where
# PyTorch composes them (softsign, tanhshrink), the same composition. ``inplace=True`` writes into
# the input, recorded as PyTorch records it (EluBackward1 saves the result, not the input).

selu_ = ops.selu_
celu_ = ops.celu_
threshold_ = ops.threshold_


def _check_not_bool(input, name):
    if input._dtype is dtypes.bool:
        raise RuntimeError(f"Bool inputs not supported for {name}")


def _run_activation(name, input, attrs=(), inplace=False, kernel=None):
    if kernel is not None:
        _check_floating(input, kernel)
    if inplace:
        return run_inplace(OPS[name], input, (), attrs)
    return run_op(OPS[name], (input,), attrs)


def softplus(input, beta=1.0, threshold=20.0):
    return _run_activation("softplus", input, (beta, threshold), kernel="softplus_cpu")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    _check_not_bool(input, "hardtanh")
    return _run_activation("hardtanh", input, (min_val, max_val), inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    return hardtanh(input, 0, 6, inplace)


def logsigmoid(input):
    _check_floating(input, "log_sigmoid_cpu")
    out, _ = run_op(OPS["log_sigmoid"], (input,))
    return out


def silu(input, inplace=False):
    return _run_activation("silu", input, (), inplace, "silu_cpu")


def mish(input, inplace=False):
    return _run_activation("mish", input, (), inplace, "mish_cpu")


def hardswish(input, inplace=False):
    return _run_activation("hardswish", input, (), inplace, "hardswish_cpu")


def hardsigmoid(input, inplace=False):
    return _run_activation("hardsigmoid", input, (), inplace, "hardsigmoid_cpu")


def elu(input, alpha=1.0, inplace=False):
    name = "elu_inplace" if inplace else "elu"
    return _run_activation(name, input, (alpha, 1, 1), inplace, "elu_cpu")


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    return ops.selu_(input) if inplace else ops.selu(input)


def celu(input, alpha=1.0, inplace=False):
    return ops.celu_(input, alpha) if inplace else ops.celu(input, alpha)


def threshold(input, threshold, value, inplace=False):
    if inplace:
        return ops.threshold_(input, threshold, value)
    return ops.threshold(input, threshold, value)


def softshrink(input, lambd=0.5):
    _check_floating(input, "softshrink_check")
    if lambd < 0:
        raise RuntimeError(
            f"lambda must be in range [0, {_largest(input)}] for input dtype "
            f"{dtypes.name_of(input)}, but found {lambd:g}"
        )
    return run_op(OPS["softshrink"], (input,), (lambd,))


def _largest(input):
    return f"{float(np.finfo(input._dtype.numpy).max):g}"


hardshrink = ops.hardshrink


def softsign(input):
    """x / (1 + |x|), composed as PyTorch composes it."""
    return ops.div(input, ops.add(ops.abs(input), 1))


def tanhshrink(input):
    """x - tanh(x), composed as PyTorch composes it."""
    return ops.sub(input, ops.tanh(input))


# --- losses, more -----------------------------------------------------------------------------
# One table op where PyTorch has a backward node of its own (SmoothL1LossBackward0, ...);
# otherwise composed as PyTorch composes them (kl_div, poisson_nll_loss, gaussian_nll_loss).


def _expanded_pair(input, target):
    """PyTorch's ``broadcast_tensors`` after the size warning (only different sizes expand)."""
    if input.shape == target.shape:
        return input, target
    return _broadcast_pair(input, target, "")


def _check_floating_pair(input, target, kernel):
    if not input.is_floating_point() and not target.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtypes.name_of(input)}'")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _expanded_pair(input, target)
    _check_floating_pair(input, target, "smooth_l1_cpu")
    if beta == 0.0:
        return _apply_reduction(ops.abs(ops.sub(input, target)), reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return run_op(OPS["smooth_l1_loss"], (input, target), (reduction, beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    input, target = _expanded_pair(input, target)
    _check_floating_pair(input, target, "huber_cpu")
    if weight is None:
        if delta <= 0:
            raise RuntimeError("huber_loss does not support non-positive values for delta.")
        return run_op(OPS["huber_loss"], (input, target), (_reduction(reduction), delta))
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    losses = run_op(OPS["huber_loss"], (input, target), (nn_kernels.REDUCTION_NONE, delta))
    weighted = losses * weight
    if reduction not in REDUCTIONS:
        raise ValueError(
            f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'."
        )
    return _apply_reduction(weighted, REDUCTIONS[reduction])


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    if grad_mode.is_grad_enabled() and target.requires_grad:
        raise RuntimeError(
            "The function 'soft_margin_loss' is not differentiable with respect to argument "
            "'target'. This input cannot have requires_grad True."
        )
    if not input.is_floating_point():
        raise RuntimeError(
            f"result type {dtypes.SCALAR_TYPE_NAMES[dtypes.get_default_dtype()]} can't be cast "
            f"to the desired output type {dtypes.name_of(input)}"
        )
    target = np.broadcast_to(target._data, input.shape).astype(input._dtype.numpy)
    return run_op(OPS["soft_margin_loss"], (input,), (target, reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        enum = _reduction(None, size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support "
                "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                "major release.",
                UserWarning,
                stacklevel=2,
            )
        enum = _reduction("sum" if reduction == "batchmean" else reduction)
    if not input.is_floating_point() or not target.is_floating_point():
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        losses = ops.mul(ops.exp(target), ops.sub(target, input))
    else:
        losses = ops.sub(ops.xlogy(target, target), ops.mul(target, input))
    reduced = _apply_reduction(losses, enum)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.shape[0]
    return reduced


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        losses = ops.sub(ops.exp(input), ops.mul(target, input))
    else:
        losses = ops.sub(
            input, ops.mul(target, ops.log(run_op(OPS["add_scalar"], (input,), (eps,))))
        )
    if full:
        # ATen's C++: its number products are the Scalar overload (MulBackward1)
        half_log = _mul_scalar(ops.log(_mul_scalar(target, 2 * np.pi)), 0.5)
        stirling = target * ops.log(target) - target + half_log
        losses += stirling.masked_fill(target <= 1, 0)
    return _apply_reduction(losses, REDUCTIONS[reduction])


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * creation.ones_like(input)
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = ops.unsqueeze(var, -1)
        elif input.dim() == var.dim() and (
            sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1
        ):
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    var = ops.clone(var)
    with grad_mode.no_grad():
        var.clamp_(min=eps)
    losses = 0.5 * (ops.log(var) + (input - target) ** 2 / var)
    if full:
        losses += 0.5 * np.log(2 * np.pi)
    return _apply_reduction(losses, REDUCTIONS[reduction])


# --- distances and margin losses ----------------------------------------------------------------
# Composed as ATen composes them; the clamps at zero are ``clamp_min`` (ClampMinBackward0).


def _add_number(tensor, number):
    """ATen's ``tensor + number`` for a C++ double (the Scalar overload: AddBackward1)."""
    return run_op(OPS["add_scalar"], (_floating(tensor),), (float(number),))


def _sub_number(tensor, number):
    return run_op(OPS["sub_scalar"], (_floating(tensor),), (float(number),))


def _floating(tensor):
    """An integer tensor plus a double is in the default float dtype (it has no graph)."""
    if tensor.is_floating_point():
        return tensor
    return ops.to_dtype(tensor, dtypes.get_default_dtype())


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(norm(input, p, dim), eps)`` along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return ops.div(input, denom)
    from nbgrad.ops.out import with_out

    return with_out(ops.div)(input, denom, out=out)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of ``x1 - x2 + eps`` along the last dim."""
    innermost = max(x1.dim(), x2.dim()) - 1
    if p not in (1, 2):
        raise NotImplementedError(f"nbgrad computes 1- and 2-norms only, not p={p}")
    diff = _add_number(ops.sub(x1, x2), eps)
    dims = (innermost,) if innermost >= 0 else None
    return run_op(OPS["norm_dim"], (diff,), (float(p), dims, keepdim))


def margin_ranking_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} "
        )
    unclamped = _add_number(ops.mul(ops.neg(target), ops.sub(input1, input2)), margin)
    return _apply_reduction(unclamped.clamp_min(0), reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    zeros = creation.zeros_like(input)
    margin_clamp = ops.sub(creation.full_like(input, margin), input).clamp_min(0)
    output_margin = ops.where(target != 1, margin_clamp, zeros)
    output_self = ops.where(target != -1, input, zeros)
    return _apply_reduction(ops.add(output_margin, output_self), reduction)


def cosine_embedding_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    dim = target.dim()
    if dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if dim == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(
            "1D target tensor expects 2D input tensors, but found inputs with sizes "
            f"{_shape_text(input1.shape)} and {_shape_text(input2.shape)}."
        )
    if dim == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(
            "0D target tensor expects 1D input tensors, but found inputs with sizes "
            f"{_shape_text(input1.shape)} and {_shape_text(input2.shape)}."
        )
    epsilon = 1e-12
    prod_sum = ops.sum(ops.mul(input1, input2), dim)
    mag_square1 = _add_number(ops.sum(ops.mul(input1, input1), dim), epsilon)
    mag_square2 = _add_number(ops.sum(ops.mul(input2, input2), dim), epsilon)
    denom = ops.sqrt(ops.mul(mag_square1, mag_square2))
    cos = ops.div(prod_sum, denom)
    zeros = creation.zeros_like(cos)
    pos = ops.sub(creation.ones_like(cos), cos)
    neg = _sub_number(cos, margin).clamp_min(0)
    output_pos = ops.where(target == 1, pos, zeros)
    output_neg = ops.where(target == -1, neg, zeros)
    return _apply_reduction(ops.add(output_pos, output_neg), reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D "
            "inputs"
        )
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = ops.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    output = ops.sub(_add_number(dist_pos, margin), dist_neg).clamp_min(0)
    return _apply_reduction(output, reduction)


# --- activations, more: in-place relu and leaky_relu, softmin, glu, prelu ------------------------


def relu_(input):
    return ops.relu_(input)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax of -input, as PyTorch composes it."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return ops.softmax(ops.neg(input), dim, dtype=dtype)


def glu(input, dim=-1):
    """The first half of ``input`` along ``dim`` times the sigmoid of the second."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    wrapped = wrap_dim(dim, input.dim())
    if input.shape[wrapped] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {wrapped} is size "
            f"{input.shape[wrapped]}"
        )
    _check_floating(input, "glu_cpu")
    return run_op(OPS["glu"], (input,), (dim,))


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), with one weight per channel (dim 1) or one for all."""
    if input._dtype is not weight._dtype:
        raise RuntimeError(
            "prelu: Type promoting not supported. "
            f"Got {dtypes.name_of(input)} and {dtypes.name_of(weight)}"
        )
    count = weight.numel()
    if count != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if channels != count:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                f"= {count} and channel size = {channels}."
            )
    shape = [1] * input.dim()
    if input.dim() >= 2:
        shape[1] = count
    return run_op(OPS["prelu"], (input, ops.reshape(weight, tuple(shape))))


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = ops.sum(loss, class_dim) / input.shape[class_dim]
    if reduction == "none":
        return loss
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    raise ValueError(reduction + " is not valid")


# --- normalisation layers, attention, pixel shuffle (their own modules) ---------------------------
from nbgrad.nn.functional_attention import scaled_dot_product_attention  # noqa: E402, F401
from nbgrad.nn.functional_mha import multi_head_attention_forward  # noqa: E402, F401
from nbgrad.nn.functional_norm import (  # noqa: E402, F401
    group_norm,
    instance_norm,
    local_response_norm,
    rms_norm,
)

pixel_shuffle = ops.pixel_shuffle
pixel_unshuffle = ops.pixel_unshuffle
# --- max unpooling, channel shuffle (their own module); distances and bilinear -------------------
from nbgrad.nn.functional_dropout import (  # noqa: E402, F401
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from nbgrad.nn.functional_extra import (  # noqa: E402, F401
    affine_grid,
    conv_tbc,
    ctc_loss,
    embedding_bag,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    multi_margin_loss,
    multilabel_margin_loss,
    rrelu,
    rrelu_,
)
from nbgrad.nn.functional_grid_sample import grid_sample  # noqa: E402, F401
from nbgrad.nn.functional_layers_more import (  # noqa: E402, F401
    channel_shuffle,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from nbgrad.ops.functions.distances import bilinear, pdist  # noqa: E402, F401
