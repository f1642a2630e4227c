"""``torch.rrelu``, ``torch.conv_tbc`` and ``torch._weight_norm``: PyTorch's argument checks, then
one table entry each (``nn.functional`` and ``nn.utils`` call these)."""

import numpy as np

from nbgrad import dtypes, random
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.arithmetic import div, mul, where
from nbgrad.ops.functions.reductions import mean, sum  # noqa: A004
from nbgrad.ops.functions.shapes import _viewable, view_size_error
from nbgrad.ops.public import public


def _rrelu_arguments(input, lower, upper, kernel):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtypes.name_of(input)}'")
    # The noise is written by a training forward only; in eval PyTorch leaves it uninitialised,
    # nbgrad zeros.
    return np.zeros(input.shape, input._dtype.numpy)


def _generator(generator):
    return random.rng_of(generator)


@public(function=True)
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):  # noqa: A002
    """Randomized leaky ReLU: in training each non-positive element gets a slope drawn from
    U(lower, upper); in eval the slope is their mean."""
    noise = _rrelu_arguments(input, lower, upper, "rrelu_with_noise_out_cpu")
    attrs = (noise, float(lower), float(upper), bool(training), _generator(generator))
    return run_op(OPS["rrelu_with_noise"], (input,), attrs)


@public(function=True)
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):  # noqa: A002
    noise = _rrelu_arguments(input, lower, upper, "rrelu_with_noise_out_cpu")
    attrs = (noise, float(lower), float(upper), bool(training), _generator(generator))
    return run_inplace(OPS["rrelu_with_noise_inplace"], input, (), attrs)


@public(function=True)
def conv_tbc(input, weight, bias, pad=0):  # noqa: A002
    """A 1-d convolution over a (time, batch, channels) input; weight is (kernel, in, out)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError(
            "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels."
        )
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input._dtype is not weight._dtype:  # its kernel's matrix product refuses to mix them
        raise RuntimeError(
            "self and mat2 must have the same dtype, but got "
            f"{dtypes.name_of(input)} and {dtypes.name_of(weight)}"
        )
    # PyTorch's kernel views the input as (time * batch, channels): a layout that cannot be
    # read so raises its view error.
    time, batch, channels = input.shape
    if not _viewable(input._data, (time * batch, channels)):
        raise view_size_error()
    return run_op(OPS["conv_tbc"], (input, weight, bias), (int(pad),))


@public(function=True)
def _weight_norm_interface(v, g, dim=0):
    _check_one_scale_per_slice(v, g, dim)
    return run_op(OPS["_weight_norm_interface"], (v, g), (dim,))


def _check_one_scale_per_slice(v, g, dim):
    """The fused kernel reads one element of ``g`` per slice of ``v`` along ``dim``. PyTorch
    2.13 does not check that ``g`` has that many: with fewer it reads past ``g``'s memory and
    returns whatever lies there, with more it takes the first ones. nbgrad refuses both, with a
    message in the style of PyTorch's size checks (of a ``g`` shaped otherwise but with the
    right count, as ``[3]`` for ``[3, 1]``, it reads the elements in order, as PyTorch does)."""
    ndim = v.dim()
    wrapped = dim % ndim if ndim else 0
    expected = [v.shape[i] if i == wrapped else 1 for i in range(ndim)]
    count = v.shape[wrapped] if ndim else 1
    if g.numel() != count:
        raise RuntimeError(
            f"_weight_norm: expected g to hold one element per slice of v along dim {dim}: "
            f"{count} element{'' if count == 1 else 's'} (a tensor of size {expected}), but got "
            f"g of size {list(g.shape)}"
        )


@public(function=True)
def _weight_norm(v, g, dim=0):
    """``g * v / ||v||``, the norm taken over every dim but ``dim``. Along the first or the last
    dim PyTorch runs its fused kernel (one WeightNormInterfaceBackward0), as nbgrad does."""
    ndim = v.dim()
    if dim != -1:
        wrap_dim(dim, max(ndim, 1))  # PyTorch's IndexError for a dim out of range
    if ndim == 0:  # ATen's norm_except_dim wraps the dim without a scalar's allowance
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if g._dtype is not v._dtype:
        raise RuntimeError(
            f"expected scalar type {dtypes.name_of(v)} but found {dtypes.name_of(g)}"
        )
    fused = dim == 0 or dim == ndim - 1
    if fused:
        _check_one_scale_per_slice(v, g, dim)  # before contiguous(): no node for a refused call
    v, g = v.contiguous(), g.contiguous()  # as ATen does first: CloneBackward0 if strided
    if fused:
        return _weight_norm_interface(v, g, dim)[0]
    return mul(v, div(g, norm_except_dim(v, 2, dim)))


@public(function=True)
def norm_except_dim(v, pow=2, dim=0):  # noqa: A002
    """The ``pow``-norm of each slice of ``v`` along ``dim`` (of all of it for dim -1), shaped to
    broadcast against ``v``: ATen's own steps, so the graph shows its nodes."""
    if dim == -1:
        return run_op(OPS["norm_scalar"], (v,), (pow,))
    ndim = v.dim()
    output_size = tuple(s if i == dim else 1 for i, s in enumerate(v.shape))
    if dim == 0:
        flat = v.contiguous().view((v.shape[0], -1))
        return run_op(OPS["norm_dim"], (flat,), (pow, (1,), False)).view(output_size)
    if dim == ndim - 1:
        flat = v.contiguous().view((-1, v.shape[ndim - 1]))
        return run_op(OPS["norm_dim"], (flat,), (pow, (0,), False)).view(output_size)
    moved = v.transpose(0, dim)
    return norm_except_dim(moved, pow, 0).transpose(0, dim)


@public(function=True)
def affine_grid_generator(theta, size, align_corners):
    return run_op(
        OPS["affine_grid_generator"], (theta,), (tuple(int(s) for s in size), bool(align_corners))
    )


@public(function=True)
def _embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
):
    if sparse:
        raise NotImplementedError("embedding_bag: sparse gradients are not supported by nbgrad")
    if scale_grad_by_freq:
        # PyTorch 2.13's CPU backward does not divide each row by its own frequency (an index
        # seen twice may keep its full gradient while one seen once is halved): not reproduced.
        raise NotImplementedError("embedding_bag: nbgrad does not support scale_grad_by_freq")
    rows = indices._data
    num_weights = weight.shape[0]
    outside = np.flatnonzero((rows < 0) | (rows >= num_weights))
    if outside.size:
        at = outside[0]
        raise RuntimeError(
            f"Index {at} of input takes value {rows[at]} which is not in the valid range "
            f"[0, {num_weights})"
        )
    starts = offsets._data
    if starts.size and starts[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {starts[0]}\n[ torch.LongTensor{{}} ]"
        )
    if starts.size and starts[-1] > rows.size:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {rows.size} but got "
            f"offsets[-1] of {starts[-1]}"
        )
    attrs = (
        rows,
        offsets._data,
        bool(scale_grad_by_freq),
        int(mode),
        False,
        bool(include_last_offset),
        int(padding_idx),
        num_weights,
    )
    return tuple(run_op(OPS["_embedding_bag"], (weight, per_sample_weights), attrs))


@public(function=True)
def embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """Sums, means or maxima of bags of ``weight``'s rows (``_embedding_bag``'s four results)."""
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += weight.shape[0]
    return _embedding_bag(
        weight,
        indices,
        offsets,
        scale_grad_by_freq,
        mode,
        sparse,
        per_sample_weights,
        include_last_offset,
        padding_idx,
    )


@public(function=True)
def embedding_renorm_(input, indices, max_norm, norm_type):  # noqa: A002
    """Scale down, in place, the rows of ``input`` looked up by ``indices`` whose
    ``norm_type``-norm exceeds ``max_norm``."""
    attrs = (indices._data, float(max_norm), float(norm_type))
    return run_inplace(OPS["embedding_renorm"], input, (), attrs)


@public(function=True)
def _masked_softmax(input, mask, dim=None, mask_type=None):  # noqa: A002
    """Softmax over the positions ``mask`` leaves (True masks a position out)."""
    if tuple(mask.shape) != tuple(input.shape) or (
        dim is not None and wrap_dim(dim, max(input.dim(), 1)) != input.dim() - 1
    ):
        raise NotImplementedError(
            "torch._masked_softmax: nbgrad takes a mask of the input's shape, along the last dim"
        )
    return run_op(OPS["_masked_softmax"], (input,), (mask._data.astype(bool), dim, mask_type))


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        return tuple(int(v) for v in lengths._data.reshape(-1))
    return tuple(int(v) for v in lengths)


@public(function=True)
def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False):
    """(each sample's negative log-likelihood, its log_alpha) of the CTC loss."""
    if log_probs.dim() != 3:
        raise NotImplementedError("ctc_loss: nbgrad takes batched (T, N, C) log_probs only")
    if isinstance(input_lengths, Tensor) and isinstance(target_lengths, Tensor):
        # The Tensor overload: the lengths are kept (and shown) as tensors.
        lengths = (input_lengths._data.reshape(-1), target_lengths._data.reshape(-1))
        spec = OPS["_ctc_loss_tensor"]
    else:
        lengths = (_lengths(input_lengths), _lengths(target_lengths))
        spec = OPS["_ctc_loss"]
    attrs = (targets._data, *lengths, int(blank), bool(zero_infinity))
    return tuple(run_op(spec, (log_probs,), attrs))


@public(function=True)
def ctc_loss(
    log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False
):
    """The CTC loss, then ATen's reduction: zero_infinity's where, a mean of the losses each
    divided by its target's length, or a sum."""
    # ATen's ctc_loss turns tensor lengths into lists first (CtcLossBackward0 either way).
    input_lengths, target_lengths = _lengths(input_lengths), _lengths(target_lengths)
    losses, _ = _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)
    if zero_infinity:
        losses = where(losses == float("inf"), losses.new_zeros(()), losses)
    if reduction == 1:
        lengths = Tensor._make(np.asarray(_lengths(target_lengths), losses._dtype.numpy))
        return mean(div(losses, lengths.clamp_min(1)))
    if reduction == 2:
        return sum(losses)
    return losses
