"""nn.functional, more: the multi-class margin losses and rrelu (PyTorch's checks and messages,
then one table entry each; ``nbgrad/ops/nn_extra_kernels.py`` has the kernels)."""

import warnings

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops import creation
from nbgrad.ops import functions as ops
from nbgrad.ops.derivatives import OPS


def _reduction(reduction, size_average, reduce):
    from nbgrad.nn.functional import _reduction

    return _reduction(reduction, size_average, reduce)


def _sizes(shape):
    return str(list(shape))


def _check_margin_input(input, kernel):
    shape = input.shape
    ndim = len(shape)
    if not ((ndim == 2 and shape[1] != 0) or (ndim == 1 and shape[0] != 0) or ndim == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{_sizes(shape)}"
        )
    if not input.is_floating_point():
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input._dtype]}'"
        )


def _check_long(tensor, name="target"):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected Tensor as argument {name}, got {type(tensor).__name__}")
    if tensor._dtype is not dtypes.int64:
        raise RuntimeError(
            f"expected scalar type Long but found {dtypes.SCALAR_TYPE_NAMES[tensor._dtype]}"
        )


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """For each sample, the mean over the other classes of max(0, margin - x[y] + x[j]) ** p,
    times the target class's weight."""
    reduction = _reduction(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    shape = tuple(input.shape)
    _check_margin_input(input, "multi_margin_loss_cpu_kernel")
    samples, classes = (shape[0], shape[1]) if len(shape) == 2 else (1, shape[0] if shape else 1)
    _check_long(target)
    if target.dim() > 1 or target.numel() != samples:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{samples}], but got "
            f"{_sizes(target.shape)}. Input has shape {_sizes(shape)}."
        )
    if weight is not None:
        if weight.numel() != classes:
            raise RuntimeError(
                f"inconsistent weight size, expected {classes} but got {_sizes(weight.shape)}"
            )
        if weight._dtype is not input._dtype:
            raise RuntimeError(
                f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[input._dtype]} but found "
                f"{dtypes.SCALAR_TYPE_NAMES[weight._dtype]}"
            )
    labels = target._data
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise RuntimeError("target out of range")
    attrs = (labels, int(p), float(margin), None if weight is None else weight._data, reduction)
    return run_op(OPS["multi_margin_loss"], (input,), attrs)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each sample, over its listed classes k (the target's entries before the first -1)
    and its unlisted classes j, the sum of max(0, 1 - x[k] + x[j]), over the number of classes."""
    reduction = _reduction(reduction, size_average, reduce)
    shape = tuple(input.shape)
    ndim = len(shape)
    if not ((ndim == 2 and shape[1] != 0) or (ndim == 1 and shape[0] != 0) or ndim == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{_sizes(shape)}"
        )
    _check_long(target)
    one_sample = ndim <= 1 and target.dim() <= 1 and target.numel() == max(input.numel(), 1)
    if not (one_sample or (ndim == 2 and tuple(target.shape) == shape)):
        raise RuntimeError(
            f"inconsistent target size: {_sizes(target.shape)} for input of size: {_sizes(shape)}"
        )
    if not input.is_floating_point():
        raise NotImplementedError(
            '"multilabel_margin_loss_forward_out_frame" not implemented for '
            f"'{dtypes.SCALAR_TYPE_NAMES[input._dtype]}'"
        )
    classes = shape[-1] if shape else 1
    labels = target._data
    if labels.size and (labels.min() < -1 or labels.max() >= classes):
        raise RuntimeError("argument #2 'target' is out of range")
    return run_op(OPS["multilabel_margin_loss_forward"], (input,), (labels, reduction))[0]


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if inplace:
        return ops.rrelu_(input, lower, upper, training)
    return ops.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return ops.rrelu_(input, lower, upper, training)


conv_tbc = ops.conv_tbc


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of ``grid_sample`` for a batch of affine matrices: each output
    position's normalised coordinates, moved by theta."""
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
            "See the documentation of grid_sample for details.",
            stacklevel=2,
        )
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                f"Got {theta.shape}."
            )
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                f"Got {theta.shape}."
            )
        spatial_size = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if align_corners and min(spatial_size) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return ops.affine_grid_generator(theta, size, align_corners)


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """The sum, mean or max of each bag of embedding rows: bags are the rows of a 2-d ``input``,
    or the stretches of a 1-d one that start at ``offsets``."""
    from nbgrad.nn.functional import _check_indices, _embedding_renorm

    if weight._dtype is dtypes.int64 and input.is_floating_point():
        warnings.warn(
            "Argument order of nn.functional.embedding_bag was changed. Usage "
            "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
            "`embedding_bag(input, weight, ...)`.",
            stacklevel=2,
        )
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})"
        )
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        offsets = creation.arange(0, input.numel(), input.shape[1], dtype=input.dtype)
        include_last_offset = False
        input = ops.reshape(input, (-1,))
        if per_sample_weights is not None:
            per_sample_weights = ops.reshape(per_sample_weights, (-1,))
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    modes = {"sum": 0, "mean": 1, "max": 2}
    if mode not in modes:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    _check_indices(input, "embedding_bag")
    if max_norm is not None:
        _embedding_renorm(weight, input._data, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    if per_sample_weights is not None and per_sample_weights._dtype is not weight._dtype:
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
            f"#1 'per_sample_weights'; but type torch.{dtypes.LEGACY_TYPE_NAMES[weight._dtype]} "
            "does not equal "
            f"torch.{dtypes.LEGACY_TYPE_NAMES[per_sample_weights._dtype]} (while checking "
            "arguments for embedding_bag)"
        )
    return ops.embedding_bag(
        weight,
        input,
        offsets,
        scale_grad_by_freq,
        modes[mode],
        sparse,
        per_sample_weights,
        include_last_offset,
        padding_idx,
    )[0]


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, samples, k):
    name = f"fractional_max_pool{k}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if k == 2 and isinstance(output_ratio, (tuple, list)) and len(output_ratio) > 2:
            raise ValueError(
                f"{name} requires output_ratio to either be a single Int or tuple of Ints."
            )
        ratios = (
            tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * k
        )
        output_size = [int(input.shape[d - k] * ratios[d]) for d in range(k)]
    if samples is None:
        batch = 1 if input.dim() == k + 1 else input.shape[0]
        samples = creation.rand(batch, input.shape[-k - 1], k, dtype=input.dtype)
    kernel = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * k
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * k
    labels = ("height", "width") if k == 2 else ("time", "height", "width")
    where = "fractional_max_pool2d()" if k == 2 else "fractional_max_pool3d_out()"
    for d in range(k):
        if sizes[d] + kernel[d] - 1 > input.shape[d - k]:
            raise RuntimeError(
                f"{where}: pool {labels[d]} {kernel[d]} too large relative to input "
                f"{labels[d]} {input.shape[d - k]}"
            )
    _check_random_samples(samples, input, k)
    attrs = (kernel, sizes, samples._data)
    return run_op(OPS[name], (input,), attrs)


def _check_random_samples(samples, input, k):  # noqa: A002
    """ATen's checks of the offsets fractional max pooling is given (N or more, C, k)."""
    if samples._dtype is not input._dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    batch = 1 if input.dim() == k + 1 else input.shape[0]
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != input.shape[-k - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != k:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {k}; got {samples.shape[2]}.")


def fractional_max_pool2d_with_indices(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """Max pooling over windows at pseudo-random offsets, to an output size that need not
    divide the input's (Graham, 2014); ``_random_samples`` (N, C, 2) fixes the offsets."""
    result = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return tuple(result) if return_indices else result[0]


def fractional_max_pool3d_with_indices(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    result = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return tuple(result) if return_indices else result[0]


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """The Connectionist Temporal Classification loss of (T, N, C) log-probabilities against
    unaligned targets (padded (N, S) or concatenated)."""
    from nbgrad.nn.functional import REDUCTIONS

    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return ops.ctc_loss(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank,
        REDUCTIONS[reduction],
        zero_infinity,
    )
