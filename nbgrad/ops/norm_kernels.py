"""Group normalisation: the NumPy kernel of NativeGroupNormBackward0's forward and the functions
its formulas call, for NumPy arrays (``ARRAY_FUNCTIONS``) and for differentiable Tensors
(``tensor_namespace()``, which recomputes the statistics from the input, as layer norm's does,
so that a gradient through the layer can be differentiated again)."""

import numpy as np

from nbgrad.ops import nn_kernels


def _grouped(x, group):
    """``x`` (N, C, *) as (N, group, C // group * prod(*))."""
    return x.reshape(x.shape[0], group, -1)


def group_norm(x, weight, bias, N, C, HxW, group, eps):  # noqa: N803 - PyTorch's names
    """(out, mean, rstd): each sample's channels normalised by groups; mean and rstd are
    (N, group), as PyTorch's native_group_norm returns them."""
    grouped = _grouped(x, group)
    mean = grouped.mean(axis=-1, keepdims=True)
    centered = grouped - mean
    rstd = 1 / np.sqrt((centered * centered).mean(axis=-1, keepdims=True) + eps)
    out = (centered * rstd).reshape(x.shape)
    shape = nn_kernels.channel_shape(x)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return (
        out.astype(x.dtype, copy=False),
        mean.reshape(N, group).astype(x.dtype, copy=False),
        rstd.reshape(N, group).astype(x.dtype, copy=False),
    )


def group_norm_input_grad(grad, x, weight, mean, rstd, group, eps):
    if weight is not None:
        grad = grad * weight.reshape(nn_kernels.channel_shape(x))
    g = _grouped(grad, group)
    rstd = rstd[..., None]
    normalized = (_grouped(x, group) - mean[..., None]) * rstd
    out = rstd * (
        g
        - g.mean(axis=-1, keepdims=True)
        - normalized * (g * normalized).mean(axis=-1, keepdims=True)
    )
    return out.reshape(x.shape)


def group_norm_weight_grad(grad, x, mean, rstd, group, eps):
    normalized = ((_grouped(x, group) - mean[..., None]) * rstd[..., None]).reshape(x.shape)
    return nn_kernels.channel_sum(grad * normalized)


ARRAY_FUNCTIONS = {
    "group_norm_input_grad": group_norm_input_grad,
    "group_norm_weight_grad": group_norm_weight_grad,
}


def tensor_namespace():
    """The Tensor versions, from differentiable operations."""

    def normalized_groups(x, group, eps):
        grouped = x.reshape(x.shape[0], group, -1)
        centered = grouped - grouped.mean(-1, keepdim=True)
        rstd = ((centered * centered).mean(-1, keepdim=True) + eps).rsqrt()
        return centered * rstd, rstd

    def channel_sum(x):
        return x.sum([0, *range(2, x.ndim)]) if x.ndim > 1 else x

    def group_norm_input_grad(grad, x, weight, mean, rstd, group, eps):
        if weight is not None:
            grad = grad * weight.reshape(nn_kernels.channel_shape(x))
        normalized, rstd = normalized_groups(x, group, eps)
        g = grad.reshape(normalized.shape)
        out = rstd * (
            g - g.mean(-1, keepdim=True) - normalized * (g * normalized).mean(-1, keepdim=True)
        )
        return out.reshape(x.shape)

    def group_norm_weight_grad(grad, x, mean, rstd, group, eps):
        normalized, _ = normalized_groups(x, group, eps)
        return channel_sum(grad * normalized.reshape(x.shape))

    return {
        "group_norm_input_grad": group_norm_input_grad,
        "group_norm_weight_grad": group_norm_weight_grad,
    }
