"""Kernels of derivatives.py's "nn functions, more" section (margin losses, rrelu, weight norm,
conv_tbc, affine_grid, embedding_bag), and the functions their formulas call.

Each backward helper is written once over a small backend: ``_Arrays`` (NumPy, for a plain
``backward()``) or ``_Tensors`` (nbgrad's differentiable operations, for ``create_graph=True``),
so that a gradient through these layers can be differentiated again. What never gets a gradient
(targets, masks, indices, noise) stays a NumPy array in both.
"""

import functools

import numpy as np

REDUCTION_NONE, REDUCTION_MEAN, REDUCTION_SUM = 0, 1, 2


class _Arrays:
    @staticmethod
    def const(array, like):
        return np.asarray(array, dtype=like.dtype)

    where = staticmethod(np.where)
    gather1 = staticmethod(lambda a, index: np.take_along_axis(a, index, 1))
    sum = staticmethod(lambda a, dim, keepdim=False: a.sum(axis=dim, keepdims=keepdim))
    mT = staticmethod(lambda a: np.swapaxes(a, -1, -2))  # noqa: N815
    stack = staticmethod(lambda pieces: np.stack(pieces))
    zeros = staticmethod(lambda shape, like: np.zeros(shape, like.dtype))
    cat = staticmethod(lambda pieces, dim=0: np.concatenate(pieces, axis=dim))
    take = staticmethod(lambda a, key: a[key])

    @staticmethod
    def add_into_zeros(values, sizes, key):
        out = np.zeros(tuple(sizes), values.dtype)
        np.add.at(out, key, values)
        return out


class _Tensors:
    @staticmethod
    def const(array, like):
        import nbgrad

        return nbgrad.tensor(np.asarray(array, dtype=like.dtype.numpy))

    @staticmethod
    def where(mask, a, b):
        import nbgrad

        return nbgrad.where(nbgrad.tensor(np.asarray(mask)), a, b)

    @staticmethod
    def gather1(a, index):
        import nbgrad

        return a.gather(1, nbgrad.tensor(np.asarray(index, dtype=np.int64)))

    sum = staticmethod(lambda a, dim, keepdim=False: a.sum(dim, keepdim=keepdim))
    mT = staticmethod(lambda a: a.transpose(-1, -2))  # noqa: N815

    @staticmethod
    def stack(pieces):
        import nbgrad

        return nbgrad.stack(pieces)

    @staticmethod
    def zeros(shape, like):
        return like.new_zeros(tuple(shape))

    @staticmethod
    def cat(pieces, dim=0):
        import nbgrad

        return nbgrad.cat(pieces, dim)

    @staticmethod
    def take(a, key):
        import nbgrad

        key = key if isinstance(key, tuple) else (key,)
        return a[tuple(nbgrad.tensor(np.asarray(k, dtype=np.int64)) for k in key)]

    @staticmethod
    def add_into_zeros(values, sizes, key):
        from nbgrad.ops.functions import index_put_into_zeros

        return index_put_into_zeros(values, tuple(sizes), key)


def _per_sample(B, grad, n, reduction, like):  # noqa: N803 - B is the backend
    """The gradient of each sample's loss, shaped (n, 1), from the gradient of the reduced loss."""
    if reduction == REDUCTION_NONE:
        return grad.reshape(n, 1)
    scale = 1.0 / n if reduction == REDUCTION_MEAN else 1.0
    return grad.reshape(1, 1) * B.const(np.full((n, 1), scale), like)


def _reduce(losses, reduction, dtype):
    if reduction == REDUCTION_MEAN:
        return np.asarray(losses.sum() / losses.size, dtype)
    if reduction == REDUCTION_SUM:
        return np.asarray(losses.sum(), dtype)
    return losses.astype(dtype, copy=False)


# --- multi_margin_loss ---------------------------------------------------------------------------
# Each sample's loss: sum over classes j other than its target y of
# weight[y] * max(0, margin - x[y] + x[j]) ** p, divided by the number of classes.


def _margins(xs, target, margin):
    """(n, C) margins ``margin - x[y] + x[j]``, and where each is active (positive, j != y)."""
    rows = np.arange(xs.shape[0])
    z = margin - xs[rows, target][:, None] + xs
    active = z > 0
    active[rows, target] = False
    return z, active


def multi_margin_loss(x, target, p, margin, weight, reduction):
    xs = x.reshape(-1, x.shape[-1] if x.ndim else 1)
    shape, target = target.shape, target.reshape(-1)
    z, active = _margins(xs, target, margin)
    h = np.where(active, z if p == 1 else z * z, 0)
    if weight is not None:
        h = h * weight[target][:, None]
    losses = (h.sum(axis=1) / xs.shape[1]).reshape(shape)  # "none": shaped as the target
    return _reduce(losses, reduction, x.dtype)


def multi_margin_loss_backward(B, grad, x, target, p, margin, weight, reduction):  # noqa: N803
    n, c = x.shape if x.ndim == 2 else (1, x.shape[0] if x.ndim else 1)
    xs = x.reshape(n, c)
    target = np.asarray(target).reshape(-1)
    _, active = _margins(np.asarray(getattr(x, "_data", x)).reshape(n, c), target, margin)
    scale = np.full((n, 1), 1.0 / c)
    if weight is not None:
        scale = scale * np.asarray(weight)[target][:, None]
    scale = B.const(scale, xs) * _per_sample(B, grad, n, reduction, xs)
    if p == 1:
        d = B.where(active, scale, B.zeros((n, c), xs))
    else:
        z = xs - B.gather1(xs, target[:, None]) + margin
        d = B.where(active, 2 * z * scale, B.zeros((n, c), xs))
    onehot = np.zeros((n, c), bool)
    onehot[np.arange(n), target] = True
    out = d - B.where(onehot, B.sum(d, 1, True), B.zeros((n, c), xs))
    return out.reshape(x.shape)


# --- multilabel_margin_loss ----------------------------------------------------------------------
# A sample's target lists its classes, ended by the first -1. Its loss: sum over listed classes k
# (a class listed twice counts twice) and unlisted classes j of max(0, 1 - x[k] + x[j]), divided
# by the number of classes. ``is_target`` marks the listed classes.


def _listed(target, c):
    """(n, C) how many times each class is listed, and the (n, C) is_target mask."""
    t = target.reshape(-1, c)
    counts = np.zeros(t.shape, np.int64)
    for i, row in enumerate(t):
        ends = np.flatnonzero(row < 0)
        listed = row[: ends[0]] if ends.size else row
        np.add.at(counts[i], listed, 1)
    return counts, counts > 0


def _pair_mask(target, c):
    """(n, C, C): how many times the pair (listed k, unlisted j) counts."""
    counts, is_target = _listed(target, c)
    return counts[:, :, None] * ~is_target[:, None, :]


def multilabel_margin_loss(x, target, reduction):
    c = x.shape[-1] if x.ndim else 1
    xs = x.reshape(-1, c)
    counts, is_target = _listed(target, c)
    pairs = counts[:, :, None] * ~is_target[:, None, :]
    z = 1 - xs[:, :, None] + xs[:, None, :]
    losses = (np.where(z > 0, z, 0) * pairs).sum(axis=(1, 2)) / c
    if x.ndim < 2:
        losses = losses.reshape(())
    return _reduce(losses, reduction, x.dtype), is_target.reshape(target.shape).astype(x.dtype)


def multilabel_margin_loss_backward(B, grad, x, target, reduction, is_target):  # noqa: N803
    c = x.shape[-1] if x.ndim else 1
    n = x.shape[0] if x.ndim == 2 else 1
    data = np.asarray(getattr(x, "_data", x)).reshape(n, c)
    pairs = _pair_mask(np.asarray(target), c)
    active = (1 - data[:, :, None] + data[:, None, :] > 0) * pairs / c
    if reduction == REDUCTION_NONE:
        g = grad.reshape(n, 1)
    else:
        g = _per_sample(B, grad, n, reduction, grad)
    weights = B.const(active, grad)  # (n, k, j)
    towards_j = B.sum(weights, 1) * g  # d loss / d x[j]
    from_k = B.sum(weights, 2) * g  # minus d loss / d x[k]
    return (towards_j - from_k).reshape(x.shape)


# --- rrelu ----------------------------------------------------------------------------------------


def rrelu_with_noise(x, noise, lower, upper, training, generator):
    """Training: each non-positive element times a slope drawn from U(lower, upper), which
    ``noise`` keeps (1 where the element is positive); otherwise the mean slope, and ``noise``
    is not written."""
    if training:
        slopes = generator.uniform(lower, upper, x.shape)
        noise[...] = np.where(x <= 0, slopes, 1).astype(noise.dtype)
        return (x * noise).astype(x.dtype, copy=False)
    slope = (lower + upper) / 2
    return np.where(x > 0, x, x * slope).astype(x.dtype, copy=False)


def rrelu_with_noise_backward(grad_output, x, noise, lower, upper, training, self_is_result):
    """rrelu's gradient, an op of its own (RreluWithNoiseBackwardBackward0): in training the
    incoming gradient times the slopes the forward drew, otherwise leaky_relu's with the mean
    slope. ``x`` may be rrelu_'s result (``self_is_result``): its sign is its input's."""
    if training:
        return grad_output * noise.astype(grad_output.dtype, copy=False)
    return np.where(x > 0, grad_output, grad_output * ((lower + upper) / 2))


# --- weight norm ---------------------------------------------------------------------------------
# w = g * v / ||v||, the norm over every dim but ``dim`` (0 or the last), ``norms`` shaped as g.


def _keep_shape(v, dim):
    return tuple(s if i == dim else 1 for i, s in enumerate(v.shape))


def _except(v, dim):
    return tuple(i for i in range(v.ndim) if i != dim)


def weight_norm(v, g, dim):
    dim %= max(v.ndim, 1)
    norms = np.sqrt((v * v).sum(axis=_except(v, dim), keepdims=True))
    w = v * (g.reshape(_keep_shape(v, dim)) / norms)
    return w.astype(v.dtype, copy=False), norms.reshape(g.shape).astype(g.dtype, copy=False)


def weight_norm_backward(B, grad, v, g, norms, dim, which):  # noqa: N803
    """The gradient for ``v`` (which 0) or ``g`` (which 1). The norms are recomputed from v,
    so that their own dependence on v is differentiated too."""
    dim %= max(v.ndim, 1)
    keep = _keep_shape(v, dim)
    axes = _except(v, dim)
    norm = B.sum(v * v, axes, True) ** 0.5
    projection = B.sum(grad * v, axes, True)  # <grad, v> per slice
    if which == 1:
        return (projection / norm).reshape(tuple(g.shape))
    gk = g.reshape(keep)
    return gk / norm * (grad - v * (projection / (norm * norm)))


# --- conv_tbc: a 1-d convolution over (time, batch, channel) inputs ------------------------------
# out[t] = bias + sum over k of x_padded[t + k] @ weight[k], weight (kernel, in, out).


def _pad_time(B, x, before, after):  # noqa: N803
    pieces = []
    if before:
        pieces.append(B.zeros((before, *x.shape[1:]), x))
    pieces.append(x)
    if after:
        pieces.append(B.zeros((after, *x.shape[1:]), x))
    return B.cat(pieces) if len(pieces) > 1 else x


def conv_tbc(x, weight, bias, pad):
    xp = _pad_time(_Arrays, x, pad, pad)
    kernel = weight.shape[0]
    steps = xp.shape[0] - kernel + 1
    out = np.broadcast_to(bias, (steps, x.shape[1], weight.shape[2])).copy()
    for k in range(kernel):
        out += xp[k : k + steps] @ weight[k]
    return out


def conv_tbc_backward(B, grad, x, weight, bias, pad, which):  # noqa: N803
    kernel = weight.shape[0]
    steps = grad.shape[0]
    if which == 2:
        return B.sum(grad, (0, 1))
    if which == 0:
        length = x.shape[0] + 2 * pad
        total = None
        for k in range(kernel):
            part = _pad_time(B, grad @ B.mT(weight[k]), k, length - k - steps)
            total = part if total is None else total + part
        return total[pad : pad + x.shape[0]]
    xp = _pad_time(B, x, pad, pad)
    flat_grad = grad.reshape(-1, grad.shape[2])
    return B.stack(
        [B.mT(xp[k : k + steps].reshape(-1, x.shape[2])) @ flat_grad for k in range(kernel)]
    )


# --- affine_grid: sampling positions in [-1, 1] moved by a batch of affine matrices ------------


def _positions(steps, align_corners, dtype):
    """ATen's linspace_from_neg_one: the centres of ``steps`` pixels (their edges span [-1, 1]
    unless ``align_corners``, where the outer centres are -1 and 1)."""
    if steps <= 1:
        return np.zeros(max(steps, 0), dtype)
    grid = np.linspace(-1, 1, steps, dtype=np.float64)
    if not align_corners:
        grid = grid * (steps - 1) / steps
    return grid.astype(dtype)


def _base_grid(size, align_corners, dtype):
    """(D*H*W, k + 1): each output position's coordinates (x, y[, z]) then 1."""
    spatial = tuple(size[2:])
    axes = [_positions(n, align_corners, dtype) for n in reversed(spatial)]  # x first
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]  # each shaped as spatial
    columns = [m.reshape(-1) for m in mesh] + [np.ones(int(np.prod(spatial)), dtype)]
    return np.stack(columns, axis=1)


def affine_grid_generator(theta, size, align_corners):
    base = _base_grid(size, align_corners, theta.dtype)
    grid = np.matmul(base, np.swapaxes(theta, 1, 2))  # (N, positions, k)
    return grid.reshape(size[0], *size[2:], theta.shape[1])


def affine_grid_generator_backward(B, grad, size, align_corners):  # noqa: N803
    k = len(size) - 2
    base = B.const(_base_grid(size, align_corners, np.float64), grad)
    # grid[n, p, i] = sum_j base[p, j] theta[n, i, j], so d theta = grad^T @ base.
    return B.mT(grad.reshape(size[0], -1, k)) @ base


# --- embedding_bag: sums, means or maxima of bags of embedding rows ------------------------------
# Bag b holds the indices from offsets[b] up to the next bag's offset (the last bag: to the end;
# with include_last_offset the last offset only closes the bags). Padding entries are skipped.
# What ATen returns besides the output, and its backward reads: offset2bag (each index's bag),
# bag_size (entries per bag, counted for mean and max; zeros for sum) and max_indices (for max:
# which row gave each maximum; otherwise a copy of bag_size).

MODE_SUM, MODE_MEAN, MODE_MAX = 0, 1, 2


def embedding_bag(
    weight,
    per_sample_weights,
    indices,
    offsets,
    scale_grad_by_freq,
    mode,
    sparse,
    include_last_offset,
    padding_idx,
):
    bags = len(offsets) - 1 if include_last_offset else len(offsets)
    starts = np.asarray(offsets[:bags], np.int64)
    offset2bag = (np.searchsorted(starts, np.arange(len(indices)), side="right") - 1).astype(
        indices.dtype
    )
    kept = (indices != padding_idx) & (offset2bag >= 0)
    counts = np.bincount(offset2bag[kept], minlength=bags)[:bags]
    dim = weight.shape[1]
    rows = weight[indices[kept]]
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[kept][:, None]
    if mode == MODE_MAX:
        out = np.zeros((bags, dim), weight.dtype)
        max_indices = np.zeros((bags, dim), indices.dtype)
        for b in range(bags):
            members = np.flatnonzero(kept & (offset2bag == b))
            if members.size:
                best = np.argmax(weight[indices[members]], axis=0)  # the first of equal maxima
                max_indices[b] = indices[members][best]
                out[b] = weight[max_indices[b], np.arange(dim)]
        bag_size = counts.astype(indices.dtype)
        return out, offset2bag, bag_size, max_indices
    out = np.zeros((bags, dim), weight.dtype)
    np.add.at(out, offset2bag[kept], rows)
    if mode == MODE_MEAN:
        out = out / np.maximum(counts, 1)[:, None].astype(weight.dtype)
        bag_size = counts.astype(indices.dtype)
        return out.astype(weight.dtype, copy=False), offset2bag, bag_size, bag_size.copy()
    zeros = np.zeros(bags, indices.dtype)
    if weight.dtype != np.float64 and padding_idx < 0:
        # ATen's fast float32/float16 sum kernel returns offset2bag empty.
        offset2bag = offset2bag[:0]
    return out, offset2bag, zeros, zeros.copy()


def _bags_of(indices, offsets, offset2bag, bags):
    """Each index's bag: offset2bag, or (when ATen's fast kernel left it empty) from offsets."""
    if offset2bag.size == indices.size:
        return offset2bag
    found = np.searchsorted(np.asarray(offsets), np.arange(indices.size), side="right") - 1
    return np.minimum(found, bags - 1)


def embedding_bag_backward(
    B,
    grad,
    indices,
    offsets,
    offset2bag,
    bag_size,
    max_indices,  # noqa: N803
    num_weights,
    scale_grad_by_freq,
    mode,
    sparse,
    per_sample_weights,
    padding_idx,
):
    """The gradient for weight: each kept index's row gets its bag's gradient (divided by the
    bag's size for mean, times its per-sample weight); for max, each maximum's row only."""
    indices, offset2bag = np.asarray(indices), np.asarray(offset2bag)
    dim = grad.shape[1]
    if mode == MODE_MAX:
        max_indices, bag_size = np.asarray(max_indices), np.asarray(bag_size)
        bags = np.flatnonzero(bag_size > 0)
        rows = max_indices[bags].reshape(-1)
        cols = np.tile(np.arange(dim), len(bags))
        values = B.take(grad, (np.repeat(bags, dim), cols))
        return B.add_into_zeros(values, (num_weights, dim), (rows, cols))
    offset2bag = _bags_of(indices, offsets, offset2bag, grad.shape[0])
    kept = np.flatnonzero((indices != padding_idx) & (offset2bag >= 0))
    scale = np.ones(len(kept))
    if mode == MODE_MEAN:
        scale = scale / np.asarray(bag_size)[offset2bag[kept]]
    row_grads = B.take(grad, offset2bag[kept]) * B.const(scale[:, None], grad)
    if per_sample_weights is not None:
        row_grads = row_grads * B.take(per_sample_weights, kept).reshape(-1, 1)
    return B.add_into_zeros(row_grads, (num_weights, dim), (indices[kept],))


def embedding_bag_per_sample_weights_backward(
    B,
    grad,
    weight,
    indices,
    offsets,
    offset2bag,  # noqa: N803
    mode,
    padding_idx,
):
    """d out[bag] / d per_sample_weights[i] = weight[indices[i]]: its dot with the bag's grad."""
    indices, offset2bag = np.asarray(indices), np.asarray(offset2bag)
    offset2bag = _bags_of(indices, offsets, offset2bag, grad.shape[0])
    kept = (indices != padding_idx) & (offset2bag >= 0)
    bag_of = np.where(kept, offset2bag, 0)
    products = (B.take(grad, bag_of) * B.take(weight, indices)).sum(1)
    return B.where(kept, products, B.zeros(products.shape, products))


# --- fractional max pooling ---------------------------------------------------------------------
# Each plane's windows start at pseudo-random offsets made from its random samples u in [0, 1):
# start[i] = int((i + u) * alpha) - int(u * alpha), alpha = (input - pool) / (output - 1), the
# last window ending at the input's end. ATen computes this in the input's dtype; so does this.
# The samples of a plane are (u_w, u_h) in 2-d and (u_t, u_h, u_w) in 3-d.


def _window_starts(sample, input_size, output_size, pool_size, dtype):
    starts = np.zeros(output_size, np.int64)
    if output_size > 1:
        sample = dtype.type(sample)
        alpha = dtype.type(input_size - pool_size) / dtype.type(output_size - 1)
        for i in range(output_size - 1):
            starts[i] = int(dtype.type(dtype.type(i) + sample) * alpha) - int(sample * alpha)
    if output_size > 0:
        starts[-1] = input_size - pool_size
    return starts


def fractional_max_pool(x, kernel_size, output_size, random_samples):
    """(output, indices): each window's maximum (nan wins, the first of equal maxima) and its
    position, flattened over the plane's spatial dims."""
    k = len(kernel_size)
    batched = x.ndim == k + 2
    xs = x if batched else x[None]
    samples = random_samples.reshape(random_samples.shape[0], -1, k)
    spatial = xs.shape[2:]
    out = np.zeros((*xs.shape[:2], *output_size), x.dtype)
    indices = np.zeros(out.shape, np.int64)
    # Sample order per dim: 2-d pools read (w, h), 3-d (t, h, w).
    order = (1, 0) if k == 2 else (0, 1, 2)
    flat_positions = np.arange(int(np.prod(spatial))).reshape(spatial)
    for n in range(xs.shape[0]):
        for c in range(xs.shape[1]):
            starts = [
                _window_starts(
                    samples[n, c, order[d]], spatial[d], output_size[d], kernel_size[d], x.dtype
                )
                for d in range(k)
            ]
            plane = xs[n, c]
            for out_pos in np.ndindex(*output_size):
                window = tuple(
                    slice(starts[d][out_pos[d]], starts[d][out_pos[d]] + kernel_size[d])
                    for d in range(k)
                )
                values = plane[window].reshape(-1)
                nans = np.flatnonzero(np.isnan(values))
                best = nans[0] if nans.size else int(np.argmax(values))
                out[(n, c, *out_pos)] = values[best]
                indices[(n, c, *out_pos)] = flat_positions[window].reshape(-1)[best]
    if not batched:
        out, indices = out[0], indices[0]
    return out, indices


def fractional_max_pool_backward(B, grad, self_shape, indices, k):  # noqa: N803
    """Each output's gradient added back where its maximum was."""
    indices = np.asarray(indices)
    planes = int(np.prod(self_shape[:-k], dtype=np.int64))
    plane_size = int(np.prod(self_shape[-k:], dtype=np.int64))
    offsets = (np.arange(planes) * plane_size).reshape(planes, 1)
    flat = (indices.reshape(planes, -1) + offsets).reshape(-1)
    return B.add_into_zeros(grad.reshape(-1), (planes * plane_size,), (flat,)).reshape(
        tuple(self_shape)
    )


# --- embedding_renorm_, _masked_softmax --------------------------------------------------------


def embedding_renorm(weight, indices, max_norm, norm_type):
    """The looked-up rows whose norm exceeds ``max_norm``, scaled down to it (ATen's formula,
    with its 1e-7), the others as they were."""
    out = weight.copy()
    rows = np.unique(indices)
    norms = np.linalg.norm(weight[rows], ord=norm_type, axis=1)
    too_long = norms > max_norm
    scale = (max_norm / (norms[too_long] + 1e-7)).astype(weight.dtype)
    out[rows[too_long]] *= scale[:, None]
    return out


def masked_softmax(x, mask, dim, mask_type):
    """Softmax along ``dim`` over the positions the mask leaves (True masks out: 0 there); a
    row with every position masked is nan, as in ATen's CPU kernel."""
    shifted = np.where(mask, -np.inf, x)
    peak = shifted.max(axis=dim, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(shifted - peak)
        return (e / e.sum(axis=dim, keepdims=True)).astype(x.dtype, copy=False)


def masked_softmax_backward(B, grad, result, mask, dim):  # noqa: N803
    d = result.ndim - 1 if dim is None else dim
    out = result * (grad - B.sum(grad * result, d, True))
    return B.where(np.asarray(mask), B.zeros(out.shape, out), out)


# --- CTC loss -------------------------------------------------------------------------------------
# Each sample's target l is extended with blanks, l' = (blank, l1, blank, l2, ..., blank), and
# log_alpha[t, s] is the log-probability of all alignments of the first t + 1 frames that end at
# l'[s]; the loss is minus the log of those ending at one of l's last two positions.


def _ctc_targets(targets, target_lengths, n):
    """Each sample's target, from a padded (N, S) or a concatenated 1-d targets tensor."""
    if targets.ndim == 2:
        return [targets[i, : target_lengths[i]] for i in range(n)]
    starts = np.concatenate([[0], np.cumsum(target_lengths)[:-1]]).astype(np.int64)
    return [targets[starts[i] : starts[i] + target_lengths[i]] for i in range(n)]


def _extended(target, blank):
    labels = np.full(2 * len(target) + 1, blank, np.int64)
    labels[1::2] = target
    # Where a path may skip the blank before position s: l'[s] is a label unlike l'[s - 2].
    skip = np.zeros(len(labels), bool)
    skip[2:] = (labels[2:] != blank) & (labels[2:] != labels[:-2])
    return labels, skip


def _logaddexp_many(*terms):
    out = terms[0]
    for term in terms[1:]:
        out = np.logaddexp(out, term)
    return out


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    """(neg_log_likelihood (N,), log_alpha (N, T, 2 * max target length + 1))."""
    t_max, n = log_probs.shape[0], log_probs.shape[1]
    width = 2 * (max(target_lengths) if len(target_lengths) else 0) + 1
    log_alpha = np.full((n, t_max, width), -np.inf, log_probs.dtype)
    nll = np.zeros(n, log_probs.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, target in enumerate(_ctc_targets(targets, target_lengths, n)):
            labels, skip = _extended(target, blank)
            frames = input_lengths[i]
            lp = log_probs[:, i, :]
            alpha = log_alpha[i, :, : len(labels)]
            if frames > 0:
                alpha[0, 0] = lp[0, blank]
                if len(labels) > 1:
                    alpha[0, 1] = lp[0, labels[1]]
            for t in range(1, frames):
                before = alpha[t - 1]
                one_back = np.concatenate([[-np.inf], before[:-1]])
                two_back = np.where(
                    skip, np.concatenate([[-np.inf, -np.inf], before[:-2]]), -np.inf
                )
                alpha[t] = lp[t, labels] + _logaddexp_many(before, one_back, two_back)
            last = alpha[frames - 1] if frames > 0 else np.full(len(labels), -np.inf)
            total = last[-1] if len(labels) == 1 else np.logaddexp(last[-1], last[-2])
            nll[i] = -total
    return nll, log_alpha


def _ctc_beta(lp, labels, skip, frames):
    """log_beta[t, s]: the log-probability of the alignments of frames t.. that start at l'[s]
    and end at one of l's last two positions (lp[t, l'[s]] included, as in alpha)."""
    size = len(labels)
    beta = np.full((frames, size), -np.inf, lp.dtype)
    beta[frames - 1, size - 1] = lp[frames - 1, labels[size - 1]]
    if size > 1:
        beta[frames - 1, size - 2] = lp[frames - 1, labels[size - 2]]
    # Skipping forward from s to s + 2 is allowed where l'[s + 2] may be reached by a skip.
    skip_ahead = np.concatenate([skip[2:], [False, False]])
    for t in range(frames - 2, -1, -1):
        after = beta[t + 1]
        one_on = np.concatenate([after[1:], [-np.inf]])
        two_on = np.where(skip_ahead, np.concatenate([after[2:], [-np.inf, -np.inf]]), -np.inf)
        beta[t] = lp[t, labels] + _logaddexp_many(after, one_on, two_on)
    return beta


def ctc_loss_backward_array(
    grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha, blank, zero_infinity
):
    """ATen's gradient, in log space: exp(lp) - exp(log(sum over l'[s] = c of alpha * beta) +
    nll - lp) for the frames inside the input length (zero after them, and for an infinite loss
    with zero_infinity). It is the true gradient once it passes a log_softmax that made lp."""
    t_max, n, classes = log_probs.shape
    out = np.zeros(log_probs.shape, log_probs.dtype)
    grad = np.broadcast_to(grad, (n,))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i, target in enumerate(_ctc_targets(targets, list(target_lengths), n)):
            frames = input_lengths[i]
            if frames == 0 or (zero_infinity and np.isinf(nll[i])):
                continue
            labels, skip = _extended(target, blank)
            lp = log_probs[:frames, i, :]
            both = log_alpha[i, :frames, : len(labels)] + _ctc_beta(lp, labels, skip, frames)
            per_class = np.full((frames, classes), -np.inf, log_probs.dtype)
            for s, c in enumerate(labels):
                per_class[:, c] = np.logaddexp(per_class[:, c], both[:, s])
            out[:frames, i] = (np.exp(lp) - np.exp(per_class + nll[i] - lp)) * grad[i]
    return out


def ctc_loss_backward_tensor(
    grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha, blank, zero_infinity
):
    """The same gradient from differentiable operations, in probability space (alpha and beta
    recomputed from log_probs, so that their dependence on them is differentiated too; long
    sequences may underflow here where the plain backward, in log space, does not)."""
    import nbgrad

    t_max, n, classes = log_probs.shape
    nll_values = np.asarray(getattr(nll, "_data", nll))
    grad = grad.reshape(-1).expand((n,))
    columns = []
    for i, target in enumerate(_ctc_targets(np.asarray(targets), list(target_lengths), n)):
        frames = input_lengths[i]
        if frames == 0 or (zero_infinity and np.isinf(nll_values[i])):
            columns.append(log_probs.new_zeros((t_max, classes)))
            continue
        labels, skip = _extended(target, blank)
        size = len(labels)
        p = log_probs[:frames, i, :].exp()
        emit = p[:, nbgrad.tensor(labels)]  # (frames, size): p[t, l'[s]]
        skip_mask = nbgrad.tensor(skip.astype(np.float64)).to(p.dtype)
        start = np.zeros(size)
        start[: min(size, 2)] = 1
        alphas = [emit[0] * nbgrad.tensor(start).to(p.dtype)]
        for t in range(1, frames):
            before = alphas[-1]
            one_back = nbgrad.cat([before.new_zeros(1), before[:-1]])
            two_back = nbgrad.cat([before.new_zeros(2), before[:-2]])[:size] * skip_mask
            alphas.append(emit[t] * (before + one_back + two_back))
        end = np.zeros(size)
        end[-min(size, 2) :] = 1
        skip_ahead = nbgrad.tensor(np.concatenate([skip[2:], [False, False]]).astype(np.float64))
        skip_ahead = skip_ahead.to(p.dtype)
        betas = [emit[frames - 1] * nbgrad.tensor(end).to(p.dtype)]
        for t in range(frames - 2, -1, -1):
            after = betas[-1]
            one_on = nbgrad.cat([after[1:], after.new_zeros(1)])
            two_on = nbgrad.cat([after[2:], after.new_zeros(2)])[:size] * skip_ahead
            betas.append(emit[t] * (after + one_on + two_on))
        alpha, beta = nbgrad.stack(alphas), nbgrad.stack(betas[::-1])
        likelihood = (alpha[frames - 1] * nbgrad.tensor(end).to(p.dtype)).sum()
        onehot = np.zeros((size, classes))
        onehot[np.arange(size), labels] = 1
        per_class = (alpha * beta).matmul(nbgrad.tensor(onehot).to(p.dtype))  # (frames, C)
        g = p - per_class / (likelihood * p)
        if frames < t_max:
            g = nbgrad.cat([g, g.new_zeros((t_max - frames, classes))])
        columns.append(g * grad[i])
    return nbgrad.stack(columns, 1)


# --- the formula namespaces ----------------------------------------------------------------------

_HELPERS = {
    "multi_margin_loss_backward": multi_margin_loss_backward,
    "multilabel_margin_loss_backward": multilabel_margin_loss_backward,
    "weight_norm_backward": weight_norm_backward,
    "conv_tbc_backward": conv_tbc_backward,
    "affine_grid_generator_backward": affine_grid_generator_backward,
    "embedding_bag_backward": embedding_bag_backward,
    "fractional_max_pool_backward": fractional_max_pool_backward,
    "masked_softmax_backward": masked_softmax_backward,
    "embedding_bag_per_sample_weights_backward": embedding_bag_per_sample_weights_backward,
}

ARRAY_FUNCTIONS = {name: functools.partial(f, _Arrays) for name, f in _HELPERS.items()}
ARRAY_FUNCTIONS["ctc_loss_backward"] = ctc_loss_backward_array


def tensor_namespace():
    return {
        **{name: functools.partial(f, _Tensors) for name, f in _HELPERS.items()},
        "ctc_loss_backward": ctc_loss_backward_tensor,
    }
