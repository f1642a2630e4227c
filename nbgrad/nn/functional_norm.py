"""Group, instance, RMS and local response normalisation, as ``torch.nn.functional`` has them.

Group norm is one table op (NativeGroupNormBackward0). The others are, in PyTorch, other ops on
reshaped inputs, and so they are here, in the same order: instance norm is batch norm over a
(1, N * C, *) view with repeated weights (RepeatBackward0), rms norm a chain of pow, mean, add,
rsqrt and mul, local response norm an average pooling of the squares.
"""

import numbers

import numpy as np

from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops import functions as ops
from nbgrad.ops.derivatives import OPS


def _shape_text(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise each sample's channels in ``num_groups`` groups, then scale and shift them."""
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {_shape_text(input.shape)} and num_groups={num_groups}"
        )
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and (param.dim() != 1 or param.numel() != c):
            # PyTorch shows the weight's shape in both messages ([0] when there is none).
            shown = weight.shape if weight is not None else (0,)
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {_shape_text(shown)} and input of shape "
                f"{_shape_text(input.shape)}"
            )
    hxw = int(np.prod(input.shape[2:], dtype=np.int64))
    out, _, _ = run_op(
        OPS["native_group_norm"], (input, weight, bias), (n, c, hxw, int(num_groups), eps)
    )
    return out


def instance_norm(
    input,  # noqa: A002
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Batch norm of each (sample, channel) on its own: over a (1, N * C, *) view of the input."""
    from nbgrad.nn.functional import batch_norm

    if use_input_stats:
        spatial = int(np.prod(input.shape[2:], dtype=np.int64))
        if spatial == 1:
            raise ValueError(
                "Expected more than 1 spatial element when training, got input size "
                f"{input.shape!r}"
            )
    n, c = input.shape[0], input.shape[1]
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is not None and stat.numel() != c:
            raise RuntimeError(f"{name} should contain {n * c} elements not {stat.numel() * n}")
    shape = input.shape
    reshaped = input.contiguous().view((1, n * c, *shape[2:]))  # as PyTorch: a copy if strided
    weight_ = weight.repeat(n) if weight is not None else None
    bias_ = bias.repeat(n) if bias is not None else None
    with grad_mode.no_grad():
        mean_ = running_mean.repeat(n) if running_mean is not None else None
        var_ = running_var.repeat(n) if running_var is not None else None
    out = batch_norm(reshaped, mean_, var_, weight_, bias_, use_input_stats, momentum, eps)
    # The running statistics moved per (sample, channel): each channel's is their mean.
    with grad_mode.no_grad():
        if running_mean is not None and use_input_stats:
            running_mean.copy_(ops.mean(mean_.view((n, c)), 0))
        if running_var is not None and use_input_stats:
            running_var.copy_(ops.mean(var_.view((n, c)), 0))
    return out.view(tuple(shape))


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """``input * rsqrt(mean(input ** 2) + eps) * weight`` over the last dims."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    count = len(normalized_shape)
    if input.dim() < count or tuple(input.shape[input.dim() - count :]) != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={_shape_text(normalized_shape)}, expected input with shape "
            f"[*{', '.join(map(str, normalized_shape))}], but got input of size"
            f"{_shape_text(input.shape)}"
        )
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{_shape_text(weight.shape)} and normalized_shape = {_shape_text(normalized_shape)}"
        )
    if eps is None:
        eps = float(np.finfo(input._dtype.numpy).eps)
    dims = [input.dim() - 1 - i for i in range(count)]
    # ATen adds eps with its Scalar overload: AddBackward1.
    mean_square = ops.mean(ops.pow(input, 2), dims, keepdim=True)
    rstd = ops.rsqrt(run_op(OPS["add_scalar"], (mean_square,), (eps,)))
    out = ops.mul(input, rstd)
    if weight is not None:
        out = ops.mul(out, weight)
    return out.contiguous()  # ATen's last step: CloneBackward0 for a strided input


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """Divide each value by a power of the mean square over ``size`` neighbouring channels."""
    from nbgrad.nn.functional import avg_pool2d, avg_pool3d, pad

    dim = input.dim()
    if dim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality                          input (got {dim} "
            "dimensions)"
        )
    if input.numel() == 0:
        return input
    div = ops.mul(input, input)
    if dim == 3:
        div = ops.unsqueeze(div, 1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = ops.squeeze(avg_pool2d(div, (size, 1), stride=1), 1)
    else:
        sizes = tuple(input.shape)
        div = div.view((sizes[0], 1, sizes[1], sizes[2], -1))
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = ops.squeeze(avg_pool3d(div, (size, 1, 1), stride=1), 1)
        div = div.view(sizes)
    div = ops.pow(ops.add(ops.mul(div, alpha), k), beta)
    return ops.div(input, div)
