"""Kernels of derivatives.py's "einsum, normalisation layers, folding" section, and the functions
its formulas call, for NumPy arrays (``ARRAY_FUNCTIONS``) and for differentiable Tensors
(``tensor_namespace()``: group norm's recomputes the statistics from the input, as layer norm's
does, so that a gradient through the layer can be differentiated again)."""

import numpy as np

import nbgrad as nb  # half-loaded while this module loads: used only inside functions
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


# --- Tensor.unfold, pixel shuffle, masked_scatter ---------------------------------------------


def unfold(x, dimension, size, step):
    """Windows of ``size`` every ``step`` along ``dimension``, as a new last dim: a view."""
    dim = dimension % x.ndim if x.ndim else 0
    if x.ndim == 0:
        return np.lib.stride_tricks.as_strided(x, (1,), (x.itemsize,))
    count = (x.shape[dim] - size) // step + 1
    shape = (*x.shape[:dim], count, *x.shape[dim + 1 :], size)
    strides = (*x.strides[:dim], x.strides[dim] * step, *x.strides[dim + 1 :], x.strides[dim])
    return np.lib.stride_tricks.as_strided(x, shape, strides)


def unfold_backward(grad, input_sizes, dim, size, step):
    """Each window's gradient added back where the window was read."""
    out = np.zeros(tuple(input_sizes), dtype=grad.dtype)
    if not out.ndim:
        return grad.reshape(()).copy()
    dim %= out.ndim
    windows = unfold(out, dim, size, step)
    # Windows may overlap: add them one offset at a time.
    moved = np.moveaxis(grad, dim, -2)  # (..., count, size)
    target = np.moveaxis(out, dim, -1)
    for k in range(grad.shape[dim]):
        target[..., k * step : k * step + size] += moved[..., k, :]
    del windows
    return out


def pixel_shuffle(x, upscale_factor):
    r = upscale_factor
    *batch, c, h, w = x.shape
    oc = c // (r * r)
    y = x.reshape(*batch, oc, r, r, h, w)
    n = len(batch)
    y = y.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return np.ascontiguousarray(y).reshape(*batch, oc, h * r, w * r)


def pixel_unshuffle(x, downscale_factor):
    r = downscale_factor
    *batch, c, h, w = x.shape
    oh, ow = h // r, w // r
    y = x.reshape(*batch, c, oh, r, ow, r)
    n = len(batch)
    y = y.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return np.ascontiguousarray(y).reshape(*batch, c * r * r, oh, ow)


def index_put(array, key, values, accumulate):
    out = array.copy()
    if accumulate:
        np.add.at(out, key, np.broadcast_to(values, out[key].shape))
    else:
        out[key] = values
    return out


def masked_scatter(self, source, mask):
    mask = np.broadcast_to(mask, np.broadcast_shapes(self.shape, mask.shape))
    out = np.array(np.broadcast_to(self, mask.shape), dtype=self.dtype)
    count = int(mask.sum())
    out[mask] = source.reshape(-1)[:count]
    return out


def masked_scatter_backward(grad, mask, sizes):
    numel = int(np.prod(sizes, dtype=np.int64))
    picked = grad[np.broadcast_to(mask, grad.shape)]
    out = np.zeros(numel, dtype=grad.dtype)
    out[: picked.size] = picked
    return out.reshape(tuple(sizes))


# --- scaled dot-product attention (PyTorch's fused CPU node) ----------------------------------


def _attention_bias(q, k, attn_mask, is_causal):
    """The additive mask: -inf where attention is not allowed (causal, or a False mask entry)."""
    length, source = q.shape[-2], k.shape[-2]
    bias = np.zeros((length, source), dtype=q.dtype)
    if is_causal:
        bias = np.where(np.tri(length, source, dtype=bool), bias, -np.inf).astype(q.dtype)
    if attn_mask is not None:
        bias = bias + attn_mask
    return bias


def _scale_of(q, scale):
    return 1 / np.sqrt(q.shape[-1]) if scale is None else scale


def _shared_heads(query, tensor):
    """A key or value with fewer heads (dim -3) than the query (grouped query attention): each
    head repeated for its group of consecutive query heads."""
    groups = query.shape[-3] // tensor.shape[-3]
    return tensor if groups == 1 else np.repeat(tensor, groups, axis=-3)


def _summed_over_groups(grad, tensor):
    """The gradient of a repeated key or value head: the sum over its group of query heads."""
    heads = tensor.shape[-3]
    if grad.shape[-3] == heads:
        return grad
    shape = grad.shape
    grouped = grad.reshape(*shape[:-3], heads, shape[-3] // heads, *shape[-2:])
    return grouped.sum(axis=-3).astype(grad.dtype, copy=False)


def attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """(output, logsumexp, output): softmax(q k^T * scale + mask) v, and the log of each row's
    normaliser. Key and value may have fewer heads than the query (grouped query attention)."""
    key, value = _shared_heads(query, key), _shared_heads(query, value)
    scores = query @ np.swapaxes(key, -1, -2) * _scale_of(query, scale)
    scores = scores + _attention_bias(query, key, attn_mask, is_causal)
    top = scores.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    weights = np.exp(scores - top)
    total = weights.sum(axis=-1, keepdims=True)
    logsumexp = (np.log(total) + top)[..., 0]
    # PyTorch's CPU kernel writes its output in the query's memory layout (a query that is a
    # transposed view gives an output whose permute back is contiguous); np.empty_like keeps it.
    out = np.empty_like(query)
    out[...] = (weights / total) @ value
    return out, logsumexp.astype(query.dtype, copy=False), out.copy(order="K")


def attention_grad(grad, query, key, value, attn_mask, is_causal, scale, logsumexp, which):
    """The gradient of query (0), key (1) or value (2)."""
    shared_key, shared_value = _shared_heads(query, key), _shared_heads(query, value)
    sc = _scale_of(query, scale)
    scores = query @ np.swapaxes(shared_key, -1, -2) * sc + _attention_bias(
        query, shared_key, attn_mask, is_causal
    )
    weights = np.exp(scores - logsumexp[..., None])
    if which == 2:
        return _summed_over_groups(np.swapaxes(weights, -1, -2) @ grad, value)
    d_weights = grad @ np.swapaxes(shared_value, -1, -2)
    d_scores = weights * (d_weights - (d_weights * weights).sum(axis=-1, keepdims=True))
    if which == 0:
        return (d_scores @ shared_key * sc).astype(query.dtype, copy=False)
    d_key = (np.swapaxes(d_scores, -1, -2) @ query * sc).astype(query.dtype, copy=False)
    return _summed_over_groups(d_key, key)


ARRAY_FUNCTIONS = {
    "attention_grad": attention_grad,
    "group_norm_input_grad": group_norm_input_grad,
    "group_norm_weight_grad": group_norm_weight_grad,
    "unfold_backward": unfold_backward,
    "unfold": unfold,
    "pixel_shuffle": pixel_shuffle,
    "pixel_unshuffle": pixel_unshuffle,
    "masked_scatter_backward": masked_scatter_backward,
    "masked_zero_broadcast": lambda grad, mask: np.where(mask, 0, grad).astype(grad.dtype),
}


# --- Tensor versions (backward with create_graph=True) -----------------------------------------
# The same helpers over nbgrad Tensors, built from differentiable operations: NAME_tensor is the
# Tensor version of the formula function NAME. ``nb`` is complete by the time they run; run_op and
# the op table, which load after this module, they import inside their bodies.


def normalized_groups_tensor(x, group, eps):
    grouped = x.reshape(x.shape[0], group, -1)
    centered = grouped - grouped.mean(-1, keepdim=True)
    rstd = ((centered * centered).mean(-1, keepdim=True) + eps).rsqrt()
    return centered * rstd, rstd


def channel_sum_tensor(x):
    return x.sum([0, *range(2, x.ndim)]) if x.ndim > 1 else x


def group_norm_input_grad_tensor(grad, x, weight, mean, rstd, group, eps):
    if weight is not None:
        grad = grad * weight.reshape(nn_kernels.channel_shape(x))
    normalized, rstd = normalized_groups_tensor(x, group, eps)
    g = grad.reshape(normalized.shape)
    out = rstd * (
        g - g.mean(-1, keepdim=True) - normalized * (g * normalized).mean(-1, keepdim=True)
    )
    return out.reshape(x.shape)


def group_norm_weight_grad_tensor(grad, x, mean, rstd, group, eps):
    normalized, _ = normalized_groups_tensor(x, group, eps)
    return channel_sum_tensor(grad * normalized.reshape(x.shape))


def unfold_backward_tensor(grad, input_sizes, dim, size, step):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS["unfold_backward"], (grad,), (tuple(input_sizes), dim, size, step))


def masked_scatter_backward_tensor(grad, mask, sizes):
    numel = int(np.prod(sizes, dtype=np.int64))
    picked = grad.masked_select(nb.tensor(np.broadcast_to(mask, grad.shape)))
    if picked.numel() < numel:
        picked = nb.cat([picked, picked.new_zeros(numel - picked.numel())])
    return picked.reshape(tuple(sizes))


def masked_zero_broadcast_tensor(grad, mask):
    return grad.masked_fill(nb.tensor(mask), 0)


def shared_heads_tensor(query, tensor):
    groups = query.shape[-3] // tensor.shape[-3]
    return tensor if groups == 1 else tensor.repeat_interleave(groups, -3)


def summed_over_groups_tensor(grad, tensor):
    heads = tensor.shape[-3]
    if grad.shape[-3] == heads:
        return grad
    shape = tuple(grad.shape)
    return grad.reshape(*shape[:-3], heads, shape[-3] // heads, *shape[-2:]).sum(-3)


def attention_grad_tensor(grad, query, key, value, attn_mask, is_causal, scale, logsumexp, which):
    shared_key, shared_value = shared_heads_tensor(query, key), shared_heads_tensor(query, value)
    sc = _scale_of(query, scale)
    mask = getattr(attn_mask, "_data", attn_mask)
    bias = nb.tensor(_attention_bias(query._data, shared_key._data, mask, is_causal))
    scores = query.matmul(shared_key.transpose(-1, -2)) * sc + bias
    weights = scores.softmax(-1)
    if which == 2:
        return summed_over_groups_tensor(weights.transpose(-1, -2).matmul(grad), value)
    d_weights = grad.matmul(shared_value.transpose(-1, -2))
    d_scores = weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))
    if which == 0:
        return d_scores.matmul(shared_key) * sc
    return summed_over_groups_tensor(d_scores.transpose(-1, -2).matmul(query) * sc, key)


def tensor_namespace():
    """The Tensor versions, from differentiable operations."""
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return {
        "attention_grad": attention_grad_tensor,
        "group_norm_input_grad": group_norm_input_grad_tensor,
        "group_norm_weight_grad": group_norm_weight_grad_tensor,
        "unfold_backward": unfold_backward_tensor,
        "unfold": lambda g, dim, size, step: g.unfold(dim, size, step),
        "pixel_shuffle": lambda g, r: run_op(OPS["pixel_shuffle"], (g,), (r,)),
        "pixel_unshuffle": lambda g, r: run_op(OPS["pixel_unshuffle"], (g,), (r,)),
        "masked_scatter_backward": masked_scatter_backward_tensor,
        "masked_zero_broadcast": masked_zero_broadcast_tensor,
    }
