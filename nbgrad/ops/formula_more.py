"""Derivative helpers of the reductions, scans and reorderings added in ``derivatives.py``'s later
sections (var/std, prod, cumsum/cumprod/logcumsumexp, cummax/cummin, roll, flip, repeat, tril,
index_select, masked_select), in the two implementations ``formula_math`` describes: on NumPy
arrays (``ARRAY_NAMESPACE``) and on differentiable Tensors (the ``NAME_tensor`` functions of the
last section, gathered by ``tensor_namespace()``).
"""

import numpy as np

import nbgrad as nb  # half-loaded while this module loads: used only inside functions
from nbgrad.ops.formula_math import _normalize_dims, _reduced_shape

# --- shared ----------------------------------------------------------------------------------


def reduced_axes(dim, ndim):
    """The axes a reduction over ``dim`` (None: all) covers, sorted and non-negative."""
    return _normalize_dims(() if dim is None else dim, ndim)


def reduction_count(shape, dim):
    return int(np.prod([shape[d] for d in reduced_axes(dim, len(shape))], dtype=np.int64))


def var_scale(shape, dim, correction):
    """``2 / (N - correction)`` of var's derivative, as a Python float (inf where PyTorch's C++
    division by zero gives inf)."""
    divisor = reduction_count(shape, dim) - (1 if correction is None else correction)
    return 2 / divisor if divisor else float("inf")


def roll(x, shifts, dims):
    """``torch.roll``: with no dims, the flattened tensor is rolled and reshaped back."""
    if not dims:
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return np.roll(x, shifts, dims)


def flip(x, dims):
    """``torch.flip``: a new array; a 0-d tensor's dim 0 (or -1) names no NumPy axis."""
    return np.flip(x, dims).copy() if x.ndim else x.copy()


def repeat_grouping(sizes, repeats):
    """The shape that splits each repeated dim of ``grad`` into (repeat, size), and the dims to sum
    over: the leading new dims and every repeat."""
    lead = len(repeats) - len(sizes)
    shape, dims = list(repeats[:lead]), list(range(lead))
    for r, s in zip(repeats[lead:], sizes):
        dims.append(len(shape))
        shape += [r, s]
    return tuple(shape), tuple(dims)


def diagonal_view(x, offset, dim1, dim2):
    """``x.diagonal(offset, dim1, dim2)`` as a writable view of ``x`` (NumPy's is read-only),
    its diagonal dim last, as in PyTorch."""
    moved = np.moveaxis(x, (dim1, dim2), (-2, -1))
    corner = moved[..., max(-offset, 0) :, max(offset, 0) :]
    n = max(min(corner.shape[-2], corner.shape[-1]), 0)
    strides = corner.strides[:-2] + (corner.strides[-2] + corner.strides[-1],)
    return np.lib.stride_tricks.as_strided(
        corner, corner.shape[:-2] + (n,), strides, writeable=x.flags.writeable
    )


def diagonal_backward(grad, sizes, offset, dim1, dim2):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    diagonal_view(out, offset, dim1, dim2)[...] = grad
    return out


def diag_embed(x, offset, dim1, dim2):
    """A tensor with ``x``'s last dim on the ``offset`` diagonal of new dims ``dim1``/``dim2``."""
    ndim = x.ndim + 1
    dim1, dim2 = dim1 % ndim, dim2 % ndim
    n = x.shape[-1] + abs(offset)
    shape = list(x.shape[:-1])
    for d in sorted((dim1, dim2)):
        shape.insert(d, n)
    out = np.zeros(shape, dtype=x.dtype)
    diagonal_view(out, offset, dim1, dim2)[...] = x
    return out


def vector_norm(x, ord, dim, keepdim):  # noqa: A002 - PyTorch's argument name
    """``torch.linalg.vector_norm`` of any order over ``dim`` (None: every element)."""
    axes = None if dim is None or x.ndim == 0 else dim
    size = np.abs(x)
    if ord == np.inf:
        if x.size == 0:
            return np.zeros(_kept_shape(x, axes, keepdim), x.dtype)
        return np.asarray(size.max(axis=axes, keepdims=keepdim))
    if ord == -np.inf:
        return np.asarray(size.min(axis=axes, keepdims=keepdim))
    if ord == 0:
        return np.asarray((size != 0).sum(axis=axes, keepdims=keepdim), x.dtype)
    with np.errstate(divide="ignore", over="ignore"):
        return np.asarray((size**ord).sum(axis=axes, keepdims=keepdim) ** (1 / ord), x.dtype)


def _kept_shape(x, axes, keepdim):
    axes = range(x.ndim) if axes is None else [a % x.ndim for a in axes]
    return tuple(1 if i in axes else s for i, s in enumerate(x.shape) if keepdim or i not in axes)


def scatter_key(index, dim, ndim):
    """The fancy-index key of the elements ``scatter(dim, index, ...)`` writes (and ``gather``
    reads): ``index`` along ``dim``, its own position along every other dim."""
    if ndim == 0:
        return ()
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim % ndim] = index
    return tuple(grids)


def scatter(x, dim, index, src, add=False):
    out = x.copy()
    key = scatter_key(index, dim, x.ndim)
    if isinstance(src, np.ndarray):
        src = src[tuple(slice(0, n) for n in index.shape)] if src.ndim else src
    if add:
        np.add.at(out, key, src)
    else:
        out[key] = src
    return out


def index_key(dim, index, ndim):
    return (slice(None),) * (dim % ndim) + (index,) if ndim else ()


def index_put(x, dim, index, values, add=False):
    out = x.copy()
    key = index_key(dim, index, x.ndim)
    if add:
        np.add.at(out, key, values)
    else:
        out[key] = values
    return out


def rot90(x, k, dims):
    """``torch.rot90`` laid out as PyTorch lays it out: a flipped copy, transposed for odd k."""
    d0, d1 = dims
    k %= 4
    # PyTorch flips into a tensor laid out as x (order="K"), then transposes that for odd k.
    if k == 0:
        return x.copy(order="K")
    if k == 2:
        return np.flip(x, (d0, d1)).copy(order="K")
    flipped = np.flip(x, d1 if k == 1 else d0).copy(order="K")
    return np.swapaxes(flipped, d0, d1)


def block_rows_cols(shape):
    """The (rows, cols) block a tensor of ``shape`` fills in ``block_diag``."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return 1, shape[0]
    return shape[0], shape[1]


def block_diag(arrays):
    blocks = [block_rows_cols(a.shape) for a in arrays]
    out = np.zeros(
        (sum(r for r, _ in blocks), sum(c for _, c in blocks)),
        np.result_type(*arrays) if arrays else np.float32,
    )
    row = col = 0
    for a, (r, c) in zip(arrays, blocks):
        out[row : row + r, col : col + c] = a.reshape(r, c)
        row, col = row + r, col + c
    return out


# --- NumPy implementations -------------------------------------------------------------------


def _var_backward(grad, self, dim, correction, keepdim):
    axes = reduced_axes(dim, self.ndim)
    grad = grad.reshape(_reduced_shape(self.shape, axes, keepdim))
    mean = self.mean(axis=axes, keepdims=True) if self.ndim else self
    return var_scale(self.shape, dim, correction) * grad * (self - mean)


def _std_backward(grad, self, result, dim, correction, keepdim):
    with np.errstate(divide="ignore", invalid="ignore"):
        grad = np.where(result == 0, 0, grad / (2 * result)).astype(grad.dtype, copy=False)
    return _var_backward(grad, self, dim, correction, keepdim)


def _others_product(x, axis):
    """For each element along ``axis``, the product of all the others (exact with zeros)."""
    n = x.shape[axis]
    ones = np.ones_like(np.take(x, [0], axis=axis)) if n else x
    prefix = np.concatenate([ones, np.cumprod(np.take(x, range(n - 1), axis=axis), axis)], axis)
    flipped = np.flip(x, axis)
    suffix = np.concatenate(
        [ones, np.cumprod(np.take(flipped, range(n - 1), axis=axis), axis)], axis
    )
    return prefix * np.flip(suffix, axis)


def _prod_backward(grad, self, result, dim, keepdim):
    if dim is None or self.ndim == 0:
        others = _others_product(self.reshape(-1), 0).reshape(self.shape) if self.size else self
        return grad * others
    dim %= self.ndim
    if not keepdim:
        grad = np.expand_dims(grad, dim)
    return grad * _others_product(self, dim)


def _reverse_cumsum(grad, dim):
    if grad.ndim == 0:
        return grad
    # (a copy, as PyTorch's flip makes: NumPy's flip is a view with a negative stride)
    return np.ascontiguousarray(np.flip(np.cumsum(np.flip(grad, dim), dim), dim))


def _last(x, dim):
    return np.moveaxis(x, dim, -1)


def _cumprod_backward(grad, self, dim, result):  # result: saved as PyTorch saves it
    """sum over j >= k of grad[j] * prod_{i <= j, i != k} self[i], without dividing (zeros)."""
    if self.size <= 1:  # PyTorch's cumprod_backward hands grad back as it is (no graph on self)
        return grad
    x, g = _last(self, dim), _last(grad, dim)
    n = x.shape[-1]
    i = np.arange(n)
    expanded = np.broadcast_to(x[..., None, :], x.shape + (n,))  # [..., k, i]
    before = np.where(i[None, :] < i[:, None], expanded, 1).prod(-1)  # prod_{i < k}
    after = np.cumprod(np.where(i[None, :] > i[:, None], expanded, 1), -1)  # prod_{k < i <= j}
    weights = np.where(i[None, :] >= i[:, None], after, 0) * before[..., None]
    return np.moveaxis((weights * g[..., None, :]).sum(-1), -1, dim).astype(grad.dtype, copy=False)


def _logcumsumexp_backward(grad, self, result, dim):
    """sum over j >= k of grad[j] * exp(self[k] - result[j])."""
    if self.ndim == 0:
        return grad
    x, r, g = _last(self, dim), _last(result, dim), _last(grad, dim)
    i = np.arange(x.shape[-1])
    upper = i[None, :] >= i[:, None]  # [k, j]
    exponent = np.where(upper, x[..., :, None] - r[..., None, :], -np.inf)
    weights = np.exp(exponent)
    return np.moveaxis((weights * g[..., None, :]).sum(-1), -1, dim).astype(grad.dtype, copy=False)


def _scatter_add_into_zeros(grad, sizes, dim, index):
    """The gradient of cummax/cummin: grad[j] goes to the input element index[j] along dim."""
    if not sizes:
        return grad
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim % len(sizes)] = index
    np.add.at(out, tuple(grids), grad)
    return out


def _repeat_backward(grad, repeats, sizes):
    shape, dims = repeat_grouping(sizes, repeats)
    return grad.reshape(shape).sum(axis=dims).reshape(tuple(sizes))


def _index_select_backward(grad, sizes, dim, index):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    if not sizes:
        return grad.reshape(())
    np.add.at(out, (slice(None),) * (dim % len(sizes)) + (index.reshape(-1),), grad)
    return out


def _masked_select_backward(grad, self, mask):
    shape = np.broadcast_shapes(self.shape, mask.shape)
    out = np.zeros(shape, dtype=grad.dtype)
    out[np.broadcast_to(mask, shape)] = grad
    return out


def split_lengths(sizes, dim, split_size):
    """The length along ``dim`` of each piece ``split(split_size, dim)`` made."""
    size = sizes[dim]
    if split_size == 0 or size == 0:  # one piece, empty when the dim is (as PyTorch counts)
        return [size]
    return [split_size] * (size // split_size) + ([size % split_size] if size % split_size else [])


def piece_shapes(sizes, dim, lengths):
    """The shape of each piece cut along ``dim`` (None in ``lengths``: the dim was removed)."""
    dim %= len(sizes)
    shapes = []
    for n in lengths:
        shape = list(sizes)
        if n is None:
            del shape[dim]
        else:
            shape[dim] = n
        shapes.append(tuple(shape))
    return shapes


def _with_zeros(grads, shapes, zeros):
    like = next(g for g in grads if g is not None)
    return [zeros(shape, like) if g is None else g for g, shape in zip(grads, shapes)]


def _array_zeros(shape, like):
    return np.zeros(shape, like.dtype)


def _mean_part(grad, self, dim, keepdim):
    """The gradient of a mean over ``dim``, shaped to broadcast against ``self``."""
    axes = reduced_axes(dim, self.ndim)
    return grad.reshape(_reduced_shape(self.shape, axes, keepdim)) / reduction_count(
        self.shape, dim
    )


def _vector_norm_backward(grad, self, ord, norm, dim, keepdim):  # noqa: A002
    """PyTorch's linalg_vector_norm_backward for the orders other than 1 and 2 (none at all for
    order 0, which counts: PyTorch leaves the input's gradient undefined)."""
    if ord == 0:
        return None
    axes = reduced_axes(dim, self.ndim)
    shape = _reduced_shape(self.shape, axes, keepdim)
    grad, norm = grad.reshape(shape), norm.reshape(shape)
    if ord in (np.inf, -np.inf):
        mask = np.abs(self) == norm
        count = mask.sum(axis=axes, keepdims=True) if axes else mask.astype(np.int64)
        return (np.sign(self) * mask * grad / count).astype(grad.dtype, copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(norm == 0, 0, grad / norm ** (ord - 1))
        out = self * np.abs(self) ** (ord - 2) * scale
        if ord < 2:  # 0 * inf where an element is zero: its subgradient 0, as in PyTorch
            out = np.where(self == 0, 0, out)
    return out.astype(grad.dtype, copy=False)


def _take_backward(grad, self, index):
    out = np.zeros(self.size, dtype=grad.dtype)
    np.add.at(out, index, grad)
    return out.reshape(self.shape)


def _scatter_zero(grad, dim, index):
    out = grad.copy()
    out[scatter_key(index, dim, grad.ndim)] = 0
    return out


def _index_zero(grad, dim, index):
    out = grad.copy()
    out[index_key(dim, index, grad.ndim)] = 0
    return out


def _index_select_grad(grad, dim, index, source):
    return grad[index_key(dim, index, grad.ndim)].reshape(source.shape)


def _block_diag_pieces(grad, sizes):
    pieces, row, col = [], 0, 0
    for shape in sizes:
        r, c = block_rows_cols(shape)
        pieces.append(grad[row : row + r, col : col + c].reshape(shape))
        row, col = row + r, col + c
    return pieces


def scaled(value, factor):
    """PyTorch's maybe_multiply: ``value * factor``, or ``value`` itself when the factor is 1."""
    return value if factor == 1 else value * factor


ARRAY_NAMESPACE = {
    "scaled": scaled,
    "block_diag_pieces": _block_diag_pieces,
    "rot90": rot90,
    "scatter_zero": _scatter_zero,
    "gather_at": lambda grad, dim, index: grad[scatter_key(index, dim, grad.ndim)],
    "index_zero": _index_zero,
    "index_select_grad": _index_select_grad,
    "vector_norm_backward": _vector_norm_backward,
    "cross": lambda a, b, dim: np.cross(a, b, axis=dim),
    "diagonal_backward": diagonal_backward,
    "diagonal": lambda g, offset, dim1, dim2: diagonal_view(g, offset, dim1, dim2),
    "take_backward": _take_backward,
    "cat_pieces": lambda grads, dim, sizes, lengths: np.concatenate(
        _with_zeros(grads, piece_shapes(sizes, dim, lengths), _array_zeros), axis=dim
    ),
    "stack_pieces": lambda grads, dim, sizes: np.stack(
        _with_zeros(grads, piece_shapes(sizes, dim, [None] * sizes[dim]), _array_zeros), axis=dim
    ),
    "split_lengths": split_lengths,
    "mean_part": _mean_part,
    "var_backward": _var_backward,
    "std_backward": _std_backward,
    "prod_backward": _prod_backward,
    "reverse_cumsum": _reverse_cumsum,
    "cumprod_backward": _cumprod_backward,
    "logcumsumexp_backward": _logcumsumexp_backward,
    "scatter_add_into_zeros": _scatter_add_into_zeros,
    "roll": roll,
    "flip": flip,
    "repeat_backward": _repeat_backward,
    "tril": np.tril,
    "triu": np.triu,
    "index_select_backward": _index_select_backward,
    "masked_select_backward": _masked_select_backward,
}


# --- Tensor versions (backward with create_graph=True) -----------------------------------------
# The same helpers over nbgrad Tensors, built from differentiable operations: NAME_tensor is the
# Tensor version of the formula function NAME. ``nb`` is complete by the time they run; run_op and
# the op table, which load after this module, they import inside their bodies.


def var_backward_tensor(grad, self, dim, correction, keepdim):
    axes = reduced_axes(dim, self.ndim)
    grad = grad.reshape(_reduced_shape(self.shape, axes, keepdim))
    centred = self - self.mean(dim=axes, keepdim=True) if self.ndim else self - self
    return var_scale(self.shape, dim, correction) * grad * centred


def std_backward_tensor(grad, self, result, dim, correction, keepdim):
    grad = (grad / (2 * result)).masked_fill((result == 0).detach(), 0.0)
    return var_backward_tensor(grad, self, dim, correction, keepdim)


def others_product_tensor(x, dim):
    n = x.shape[dim]
    ones = nb.ones_like(x.narrow(dim, 0, 1))
    prefix = nb.cat([ones, x.narrow(dim, 0, n - 1).cumprod(dim)], dim)
    flipped = x.flip(dim)
    suffix = nb.cat([ones, flipped.narrow(dim, 0, n - 1).cumprod(dim)], dim)
    return prefix * suffix.flip(dim)


def prod_backward_tensor(grad, self, result, dim, keepdim):  # result: saved as PyTorch saves it
    if dim is None or self.ndim == 0:
        if self.numel() == 0:
            return grad * self
        return grad * others_product_tensor(self.reshape(-1), 0).reshape(self.shape)
    dim %= self.ndim
    if not keepdim:
        grad = grad.unsqueeze(dim)
    return grad * others_product_tensor(self, dim)


def reverse_cumsum_tensor(grad, dim):
    if grad.ndim == 0:
        return grad
    return grad.flip(dim).cumsum(dim).flip(dim)


def cumprod_backward_tensor(grad, self, dim, result):
    if self.numel() <= 1:
        return grad
    x, g = self.transpose(dim, -1), grad.transpose(dim, -1)
    n = x.shape[-1]
    i = np.arange(n)
    expanded = x.unsqueeze(-2).expand(*x.shape[:-1], n, n)
    before = nb.where(nb.tensor(i[None, :] < i[:, None]), expanded, 1.0).prod(-1)
    after = nb.where(nb.tensor(i[None, :] > i[:, None]), expanded, 1.0).cumprod(-1)
    weights = nb.where(nb.tensor(i[None, :] >= i[:, None]), after, 0.0) * before.unsqueeze(-1)
    return (weights * g.unsqueeze(-2)).sum(-1).transpose(dim, -1)


def logcumsumexp_backward_tensor(grad, self, result, dim):
    if self.ndim == 0:
        return grad
    x, r, g = (t.transpose(dim, -1) for t in (self, result, grad))
    i = np.arange(x.shape[-1])
    upper = nb.tensor(i[None, :] >= i[:, None])
    exponent = nb.where(upper, x.unsqueeze(-1) - r.unsqueeze(-2), -float("inf"))
    return (exponent.exp() * g.unsqueeze(-2)).sum(-1).transpose(dim, -1)


def scatter_add_into_zeros_tensor(grad, sizes, dim, index):
    from nbgrad.ops.functions.shapes import index_put_into_zeros

    if not sizes:
        return grad
    index = np.asarray(index)
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim % len(sizes)] = index
    return index_put_into_zeros(grad, tuple(sizes), tuple(grids))


def repeat_backward_tensor(grad, repeats, sizes):
    shape, dims = repeat_grouping(sizes, repeats)
    return grad.reshape(shape).sum(dims).reshape(tuple(sizes))


def index_select_backward_tensor(grad, sizes, dim, index):
    from nbgrad.ops.functions.shapes import index_put_into_zeros

    if not sizes:
        return grad.reshape(())
    key = (slice(None),) * (dim % len(sizes)) + (np.asarray(index).reshape(-1),)
    return index_put_into_zeros(grad, tuple(sizes), key)


def masked_select_backward_tensor(grad, self, mask):
    from nbgrad.ops.functions.shapes import index_put_into_zeros

    mask = np.asarray(mask)
    shape = np.broadcast_shapes(tuple(self.shape), mask.shape)
    return index_put_into_zeros(grad, shape, (np.broadcast_to(mask, shape),))


def zeros_tensor(shape, like):
    return nb.zeros(shape, dtype=like.dtype)


def mean_part_tensor(grad, self, dim, keepdim):
    axes = reduced_axes(dim, self.ndim)
    return grad.reshape(_reduced_shape(self.shape, axes, keepdim)) / reduction_count(
        self.shape, dim
    )


def vector_norm_backward_tensor(grad, self, ord, norm, dim, keepdim):  # noqa: A002
    if ord == 0:
        return None
    axes = reduced_axes(dim, self.ndim)
    shape = _reduced_shape(self.shape, axes, keepdim)
    grad, norm = grad.reshape(shape), norm.reshape(shape)
    if ord in (np.inf, -np.inf):
        mask = (self.abs() == norm).detach()
        count = mask.sum(dim=axes, keepdim=True) if axes else mask.to(nb.int64)
        return self.sign() * mask * grad / count
    scale = (grad / norm ** (ord - 1)).masked_fill((norm == 0).detach(), 0.0)
    out = self * self.abs() ** (ord - 2) * scale
    if ord < 2:
        out = out.masked_fill((self == 0).detach(), 0.0)
    return out


def take_backward_tensor(grad, self, index):
    from nbgrad.ops.functions.shapes import index_put_into_zeros

    flat = index_put_into_zeros(grad, (self.numel(),), (np.asarray(index),))
    return flat.reshape(tuple(self.shape))


def index_select_grad_tensor(grad, dim, index, source):
    if grad.ndim == 0:
        return grad.reshape(tuple(source.shape))
    return grad.index_select(dim, nb.tensor(np.asarray(index))).reshape(tuple(source.shape))


def gather_at_tensor(grad, dim, index):
    return grad.gather(dim, nb.tensor(np.asarray(index))) if grad.ndim else grad


def block_diag_pieces_tensor(grad, sizes):
    pieces, row, col = [], 0, 0
    for shape in sizes:
        r, c = block_rows_cols(shape)
        pieces.append(grad[row : row + r, col : col + c].reshape(tuple(shape)))
        row, col = row + r, col + c
    return pieces


def diagonal_backward_tensor(grad, sizes, offset, dim1, dim2):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS["diagonal_backward"], (grad,), (tuple(sizes), offset, dim1, dim2))


def cat_pieces_tensor(grads, dim, sizes, lengths):
    return nb.cat(_with_zeros(grads, piece_shapes(sizes, dim, lengths), zeros_tensor), dim)


def stack_pieces_tensor(grads, dim, sizes):
    shapes = piece_shapes(sizes, dim, [None] * sizes[dim])
    return nb.stack(_with_zeros(grads, shapes, zeros_tensor), dim)


def tensor_namespace():
    """The formula names mapped to the Tensor versions above."""
    return {
        "scaled": scaled,
        "block_diag_pieces": block_diag_pieces_tensor,
        "rot90": lambda g, k, dims: g.rot90(k, dims),
        "scatter_zero": lambda g, dim, index: g.scatter(dim, nb.tensor(np.asarray(index)), 0.0),
        "gather_at": gather_at_tensor,
        "index_zero": lambda g, dim, index: g.index_fill(dim, nb.tensor(np.asarray(index)), 0.0),
        "index_select_grad": index_select_grad_tensor,
        "vector_norm_backward": vector_norm_backward_tensor,
        "cross": lambda a, b, dim: nb.linalg.cross(a, b, dim=dim),
        "diagonal_backward": diagonal_backward_tensor,
        "diagonal": lambda g, offset, dim1, dim2: g.diagonal(offset, dim1, dim2),
        "take_backward": take_backward_tensor,
        "cat_pieces": cat_pieces_tensor,
        "stack_pieces": stack_pieces_tensor,
        "split_lengths": split_lengths,
        "mean_part": mean_part_tensor,
        "var_backward": var_backward_tensor,
        "std_backward": std_backward_tensor,
        "prod_backward": prod_backward_tensor,
        "reverse_cumsum": reverse_cumsum_tensor,
        "cumprod_backward": cumprod_backward_tensor,
        "logcumsumexp_backward": logcumsumexp_backward_tensor,
        "scatter_add_into_zeros": scatter_add_into_zeros_tensor,
        "roll": lambda g, shifts, dims: nb.roll(g, shifts, dims),
        "flip": lambda g, dims: g.flip(dims),
        "repeat_backward": repeat_backward_tensor,
        "tril": lambda g, diagonal: g.tril(diagonal),
        "triu": lambda g, diagonal: g.triu(diagonal),
        "index_select_backward": index_select_backward_tensor,
        "masked_select_backward": masked_select_backward_tensor,
    }
