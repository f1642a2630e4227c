"""``torch.cdist``, ``torch.pdist`` (``F.pdist``), ``torch._trilinear`` and ``torch.bilinear``
(``F.bilinear``), composed as ATen composes them, with its checks and messages."""

import math

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _shapes_error
from nbgrad.ops.public import public

# torch.cdist's compute_mode, as ATen numbers it
_COMPUTE_MODES = {
    "use_mm_for_euclid_dist_if_necessary": 0,
    "use_mm_for_euclid_dist": 1,
    "donot_use_mm_for_euclid_dist": 2,
}


@public(function=True)
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 and each row of x2 (batched, broadcast).

    CdistBackward0, except for p = 2 over more than 25 rows (or with
    ``compute_mode="use_mm_for_euclid_dist"``), which ATen computes through a matrix product,
    _euclidean_dist, and then views to the output's shape.
    """
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _COMPUTE_MODES[compute_mode]
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    for name, t in (("X1", x1), ("X2", x2)):
        if not t._dtype.is_floating_point:
            raise RuntimeError(
                f"cdist only supports floating-point dtypes, {name} got: "
                f"{dtypes.SCALAR_TYPE_NAMES[t._dtype]}"
            )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    try:
        batch = np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    except ValueError:
        raise _shapes_error(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])) from None
    r1, r2 = x1.shape[-2], x2.shape[-2]
    matrix_product = (
        x1.numel() and x2.numel() and p == 2 and (mode == 1 or (mode == 0 and max(r1, r2) > 25))
    )
    if x1._dtype is not x2._dtype:
        if matrix_product:
            raise RuntimeError(
                "expected m1 and m2 to have the same dtype, but got: "
                f"{dtypes.CPP_TYPE_NAMES[x1._dtype]} != {dtypes.CPP_TYPE_NAMES[x2._dtype]}"
            )
        raise RuntimeError(
            f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[x1._dtype]} but found "
            f"{dtypes.SCALAR_TYPE_NAMES[x2._dtype]}"
        )
    if not matrix_product:
        return run_op(OPS["cdist"], (x1, x2), (float(p), None if mode == 0 else mode))
    count = math.prod(batch)
    if count != 1:  # ATen flattens the broadcast batch into one dim
        c = x1.shape[-1]
        x1 = x1.expand(*batch, r1, c).contiguous().view(count, r1, c)
        x2 = x2.expand(*batch, r2, c).contiguous().view(count, r2, c)
    return run_op(OPS["euclidean_dist"], (x1, x2)).view(*batch, r1, r2)


@public(function=True)
def pdist(input, p=2):  # noqa: A002
    """The p-norm distance between each pair of rows i < j of a matrix (PdistBackward0)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input._dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return run_op(OPS["pdist"], (input.contiguous(),), (float(p),))


@public(function="_trilinear")
def trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """``torch._trilinear``: i1 * i2 * i3, each unsqueezed at its ``expand`` dims, summed over
    ``sumdim`` (TrilinearBackward0)."""
    attrs = (tuple(expand1), tuple(expand2), tuple(expand3), tuple(sumdim), unroll_dim)
    return run_op(OPS["trilinear"], (i1, i2, i3), attrs)


@public(function=True)
def bilinear(input1, input2, weight, bias=None):
    """``y = x1^T A x2 + b`` for each output feature: ATen's _trilinear over the inputs
    flattened to matrices, reshaped back, plus the bias."""
    tensors = [input1, input2, weight] + ([bias] if bias is not None else [])
    if any(t._dtype is not input1._dtype for t in tensors):
        names = ("input1", "input2", "weight", "bias")
        listed = ", ".join(
            f"{name}: {dtypes.CPP_TYPE_NAMES[t._dtype]}" for name, t in zip(names, tensors)
        )
        raise RuntimeError(f"All tensors must have the same dtype, got {listed}")
    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}"
        )
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {i}: got "
                f"{input1.shape[i]} and {input2.shape[i]}"
            )
    for name, t, dim in (("input1", input1, 1), ("input2", input2, 2)):
        if t.shape[-1] != weight.shape[dim]:
            raise RuntimeError(
                f"bilinear(): {name} size does not match weight size: got {t.shape[-1]} but "
                f"expected {weight.shape[dim]}"
            )
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but "
            f"expected {weight.shape[0]}"
        )
    flat1 = input1.reshape(-1, input1.shape[-1])
    flat2 = input2.reshape(-1, input2.shape[-1])
    output = trilinear(flat1, weight, flat2, (1, 3), (0,), (1, 2), (2, 3))
    output = output.reshape(*input1.shape[:-1], weight.shape[0])
    return output if bias is None else output + bias
