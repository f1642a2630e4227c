"""Kernels of the distance ops (``torch.cdist``, ``F.pdist``) and of ``_trilinear`` (the op
under ``F.bilinear``).

The p-norm distances follow ATen's CPU kernels case by case (p = 0, 1, 2, inf, p < 2, any other
p), in their backward too: where a distance is 0 its gradient is 0 (a subgradient), as PyTorch's
is. Their backwards are ops of their own (``CdistBackwardBackward0``, ``PdistBackwardBackward0``)
whose derivatives PyTorch does not implement: a second derivative through cdist (other than the
matrix-product path of p = 2) or pdist raises, as in PyTorch.
"""

import string

import numpy as np

# --- p-norm distances ----------------------------------------------------------------------------


def _norm_of_differences(diff, p):
    """The p-norm over the last dim of ``diff`` (x_i - y_j, one row per pair)."""
    magnitude = np.abs(diff)
    if p == 0:
        return np.count_nonzero(diff, axis=-1).astype(diff.dtype)
    if p == 1:
        return magnitude.sum(-1)
    if p == 2:
        return np.sqrt((diff * diff).sum(-1))
    if p == np.inf:
        return magnitude.max(-1, initial=0)
    return (magnitude**p).sum(-1) ** (1.0 / p)


def _pair_gradients(diff, grad, dist, p):
    """d dist / d x_i times the pair's incoming gradient, for each pair (ATen's cases)."""
    grad, dist = grad[..., None], dist[..., None]
    sign = np.sign(diff)
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            return np.zeros_like(diff)
        if p == 1:
            return sign * grad
        if p == 2:
            return np.where(dist == 0, 0.0, grad * diff / dist)
        if p == np.inf:
            return sign * (np.abs(diff) == dist) * grad
        scaled = np.abs(diff) ** (p - 1) * grad / dist ** (p - 1)
        if p < 2:
            zero = (dist == 0) | ((diff == 0) & (p < 1))
            return np.where(zero, 0.0, sign * scaled)
        return np.where(dist == 0, 0.0, sign * scaled)


def _broadcast_batches(x1, x2):
    batch = np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    return (
        np.broadcast_to(x1, (*batch, *x1.shape[-2:])),
        np.broadcast_to(x2, (*batch, *x2.shape[-2:])),
    )


def cdist(x1, x2, p):
    """Distances between the rows of x1 (r1 x c) and of x2 (r2 x c), over broadcast batches."""
    x1, x2 = _broadcast_batches(x1, x2)
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    return np.ascontiguousarray(_norm_of_differences(diff, p))


def cdist_backward(grad, x1, x2, cdist, p):
    """ATen's ``_cdist_backward``: the gradient for x1, over the broadcast batch shape (the
    engine sums it down to x1's)."""
    x1, x2 = _broadcast_batches(x1, x2)
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    return _pair_gradients(diff, grad, cdist, p).sum(-2)


def _pairs(n):
    return np.triu_indices(n, 1)  # (i, j), i < j, in the row-major order of pdist's result


def pdist(x, p):
    """Distances between the rows of x, for each pair i < j."""
    first, second = _pairs(x.shape[0])
    return np.ascontiguousarray(_norm_of_differences(x[first] - x[second], p))


def pdist_backward(grad, x, pdist, p):
    """ATen's ``_pdist_backward``: each pair's gradient goes to its first row, minus to its
    second."""
    first, second = _pairs(x.shape[0])
    per_pair = _pair_gradients(x[first] - x[second], grad, pdist, p)
    result = np.zeros_like(x)
    np.add.at(result, first, per_pair)
    np.subtract.at(result, second, per_pair)
    return result


def euclidean_dist(x1, x2):
    """ATen's ``_euclidean_dist``: 2-norm distances through one matrix product,
    ||x||^2 - 2 x.y + ||y||^2, then the square root of what is not negative."""
    x1_norm = (x1 * x1).sum(-1, keepdims=True)
    x2_norm = (x2 * x2).sum(-1, keepdims=True)
    x1_padded = np.concatenate([-2 * x1, x1_norm, np.ones_like(x1_norm)], -1)
    x2_padded = np.concatenate([x2, np.ones_like(x2_norm), x2_norm], -1)
    # The product summed term by term in order (as PyTorch's CPU kernel sums these short rows):
    # a row against itself then cancels to exactly 0, where a blocked matmul leaves rounding
    # noise, and a distance of 0 has a gradient of 0 rather than noise / noise.
    product = x1_padded[..., :, None, 0] * x2_padded[..., None, :, 0]
    for k in range(1, x1_padded.shape[-1]):
        product += x1_padded[..., :, None, k] * x2_padded[..., None, :, k]
    return np.sqrt(np.maximum(product, 0))


def _euclidean_dist_backward_arrays(grad, x1, x2, result, wrt_x2):
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(result == 0, 0.0, grad / result)
    if wrt_x2:
        return x2 * ratio.sum(-2)[..., None] - np.swapaxes(ratio, -1, -2) @ x1
    return x1 * ratio.sum(-1, keepdims=True) - ratio @ x2


def euclidean_dist_backward_tensor(grad, x1, x2, result, wrt_x2):
    # ATen's composite formula, op for op (its graph is what a double backward records)
    ratio = grad / result
    ratio.masked_fill_(result == 0, 0)
    if wrt_x2:
        return x2 * ratio.sum(-2, False).unsqueeze(-1) - ratio.mT.matmul(x1)
    return x1 * ratio.sum(-1, True) - ratio.matmul(x2)


# --- _trilinear ----------------------------------------------------------------------------------


def _subscripts(ndim, expand):
    """einsum letters of an input that ``_trilinear`` unsqueezes at ``expand`` to ``ndim``."""
    return "".join(string.ascii_letters[d] for d in range(ndim) if d not in expand)


def trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim):
    """sum over ``sumdim`` of i1 * i2 * i3, each unsqueezed at its ``expand`` dims first."""
    ndim = i1.ndim + len(expand1)
    output = "".join(string.ascii_letters[d] for d in range(ndim) if d not in sumdim)
    spec = ",".join(_subscripts(ndim, e) for e in (expand1, expand2, expand3)) + "->" + output
    return np.ascontiguousarray(np.einsum(spec, i1, i2, i3))


def trilinear_tensor(i1, i2, i3, expand1, expand2, expand3, sumdim):
    import nbgrad

    return nbgrad._trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim)


def _trilinear_arrays(i1, i2, i3, expand1, expand2, expand3, sumdim):
    return trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, 1)


# --- the formulas' functions ---------------------------------------------------------------------


def _contiguous_mT(a):  # noqa: N802
    return np.ascontiguousarray(np.swapaxes(a, -1, -2))


def cdist_backward_tensor(grad, x1, x2, p, cdist):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS["cdist_backward"], (grad, x1, x2, cdist), (p,))


def pdist_backward_tensor(grad, x, p, pdist):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS["pdist_backward"], (grad, x, pdist), (p,))


ARRAY_FUNCTIONS = {
    "cdist_backward": lambda grad, x1, x2, p, cdist: cdist_backward(grad, x1, x2, cdist, p),
    "pdist_backward": lambda grad, x, p, pdist: pdist_backward(grad, x, pdist, p),
    "contiguous_mT": _contiguous_mT,
    "euclidean_dist_backward": _euclidean_dist_backward_arrays,
    "trilinear": _trilinear_arrays,
}


def tensor_namespace():
    return {
        "cdist_backward": cdist_backward_tensor,
        "pdist_backward": pdist_backward_tensor,
        "contiguous_mT": lambda a: a.mT.contiguous(),
        "euclidean_dist_backward": euclidean_dist_backward_tensor,
        "trilinear": trilinear_tensor,
    }
