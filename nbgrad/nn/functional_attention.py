"""``F.scaled_dot_product_attention``, as PyTorch 2.13 runs it on the CPU.

PyTorch picks one of two implementations. Its fused flash-attention kernel records one node
(ScaledDotProductFlashAttentionForCpuBackward0); it takes 4-d (batch, heads, length, features)
inputs of one feature size whose last dimension is contiguous, and a mask that needs no gradient.
Everything else (dropout, 3-d inputs, values of another feature size, a mask that needs a
gradient, a transposed query) runs PyTorch's "math" implementation, a composite whose nodes
show in the graph: both q and k scaled by the square root of the scale, a matmul, the mask
added in place, ``_safe_softmax``, dropout and a second matmul. nbgrad makes the same choice,
and builds the math path from the same ops so the graph is PyTorch's.
"""

import math

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops.derivatives import OPS


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    scale=None,
    enable_gqa=False,
):
    if not (query._dtype is key._dtype is value._dtype):
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{names[query._dtype]} key.dtype: {names[key._dtype]} and value.dtype: "
            f"{names[value._dtype]} instead."
        )
    if not dropout_p and _fused_kernel_runs(query, key, value, attn_mask, enable_gqa):
        # (the kernel shares each key and value head among its group of query heads itself)
        return _flash_attention(query, key, value, attn_mask, is_causal, scale)
    if enable_gqa:
        key, value = _grouped_query_heads(query, key, value)
    return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)


def _grouped_query_heads(query, key, value):
    """Grouped query attention (``enable_gqa``): ATen's pre_process_group_query_attention_input.
    Each key and value head (dim -3) serves a group of consecutive query heads: repeated with
    ``repeat_interleave`` (the graph shows it) unless every count of heads is the same."""
    heads, key_heads, value_heads = query.shape[-3], key.shape[-3], value.shape[-3]
    if heads == key_heads == value_heads:
        return key, value
    if heads % key_heads or heads % value_heads:
        # PyTorch's message ends so, the word "query" lost
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    return (
        key.repeat_interleave(heads // key_heads, -3),
        value.repeat_interleave(heads // value_heads, -3),
    )


def _fused_kernel_runs(query, key, value, attn_mask, enable_gqa=False):
    """PyTorch's conditions for its CPU flash kernel (sdp_utils_cpp: 4-d inputs, one batch size,
    one number of heads, or with ``enable_gqa`` as many key as value heads dividing the query's,
    one head size, unit stride in the last dimension, no sequence of length 0, no mask needing a
    gradient); with dropout PyTorch takes the math path too."""
    tensors = (query, key, value)
    if any(t.dim() != 4 for t in tensors):
        return False
    if not (query.shape[0] == key.shape[0] == value.shape[0]):
        return False
    heads, key_heads, value_heads = query.shape[1], key.shape[1], value.shape[1]
    grouped = enable_gqa and key_heads == value_heads and heads % key_heads == 0
    if not (heads == key_heads == value_heads or grouped):
        return False
    if not (query.shape[-1] == key.shape[-1] == value.shape[-1]):
        return False
    if any(t.shape[-1] > 1 and t.stride(-1) != 1 for t in tensors):
        return False
    if any(t.shape[-2] == 0 for t in tensors):
        return False
    return not (attn_mask is not None and attn_mask.requires_grad and grad_mode._enabled)


def _flash_attention(query, key, value, attn_mask, is_causal, scale):
    mask = None
    if attn_mask is not None:
        if attn_mask._dtype is dtypes.bool:
            # The fused kernel adds the mask: PyTorch turns a boolean one into 0 / -inf first.
            mask = np.where(attn_mask._data, 0.0, -np.inf).astype(query._dtype.numpy)
        else:
            mask = attn_mask._data.astype(query._dtype.numpy, copy=True)
    out, _, _ = run_op(
        OPS["scaled_dot_product_attention"],
        (query, key, value),
        (mask, 0.0, bool(is_causal), scale),
    )
    return out


def _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """PyTorch's ``_scaled_dot_product_attention_math``, op for op: scaling q and k each by the
    square root of the scale keeps the products' size moderate (and is what the graph shows)."""
    import nbgrad

    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    root = math.sqrt(abs(scale))
    # a negative scale goes to the query only, as 0 - sqrt(|scale|)
    query = _times_number(query, 0.0 - root if scale < 0 else root)
    if is_causal:
        causal = nbgrad.ones(query.shape[-2], key.shape[-2], dtype=nbgrad.bool).tril()
        attn_mask = causal
    if attn_mask is not None and attn_mask._dtype is dtypes.bool:
        # made without a graph: PyTorch converts the boolean mask to 0 / -inf in C++
        with grad_mode.no_grad():
            attn_mask = nbgrad.where(
                attn_mask,
                nbgrad.zeros((), dtype=query.dtype),
                nbgrad.full((), -math.inf, dtype=query.dtype),
            )
    scores = nbgrad.matmul(query, _times_number(key.transpose(-2, -1), root))
    if attn_mask is not None:
        scores.add_(attn_mask)
    weights = nbgrad._safe_softmax(scores, -1)
    if dropout_p > 0.0:
        # ATen's dropout on the CPU: weights * (bernoulli mask / (1 - p)), MulBackward0
        from nbgrad.nn import functional as F

        weights = F.dropout(weights, dropout_p, True)
    return nbgrad.matmul(weights, value)


def _times_number(tensor, number):
    """ATen's C++ ``tensor * double``: the Scalar overload, MulBackward1 (Python's ``*`` would
    wrap the number as a tensor: MulBackward0)."""
    return run_op(OPS["mul_scalar"], (tensor,), (float(number),))
