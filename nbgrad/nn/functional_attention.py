"""``F.scaled_dot_product_attention``: PyTorch 2.13 runs 4-d CPU inputs through its fused flash
attention kernel, one node (ScaledDotProductFlashAttentionForCpuBackward0), in float32 and in
float64 alike; so does nbgrad."""

import numpy as np

from nbgrad import dtypes
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
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4 or value.shape[-1] != query.shape[-1]:
        raise NotImplementedError(
            "nbgrad: scaled_dot_product_attention takes 4-d (batch, heads, length, features) "
            "inputs whose values have the queries' feature size, which PyTorch runs through its "
            "fused CPU node; PyTorch decomposes the others into bmm and _safe_softmax, which "
            "nbgrad does not have yet"
        )
    if dropout_p:
        raise NotImplementedError("nbgrad: scaled_dot_product_attention with dropout_p > 0")
    if enable_gqa:
        raise NotImplementedError("nbgrad: scaled_dot_product_attention with enable_gqa=True")
    if not (query._dtype is key._dtype is value._dtype):
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{names[query._dtype]} key.dtype: {names[key._dtype]} and value.dtype: "
            f"{names[value._dtype]} instead."
        )
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
        (mask, float(dropout_p), bool(is_causal), scale),
    )
    return out
