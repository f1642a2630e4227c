"""The functions a derivative formula may call, in two implementations with the same names.

``ARRAY_NAMESPACE`` works on NumPy arrays: plain ``backward()`` uses it and builds no graph.
``tensor_namespace()`` works on nbgrad Tensors through differentiable operations: backward with
``create_graph=True`` uses it, so the gradient itself has a graph (second derivatives).
Operators (``*``, ``+``, ``@``, ``**``, ``>``) need no entry: arrays and Tensors both have them.
"""

import math

import numpy as np


def _normalize_dims(dims, ndim):
    if isinstance(dims, int):
        dims = (dims,)
    if not dims:  # None or (): PyTorch reduces over every dim
        return tuple(range(ndim))
    return tuple(sorted(d % ndim if ndim else 0 for d in dims))


def _reduced_shape(sizes, dims, keepdim):
    """The shape ``grad`` must take to broadcast back over ``sizes`` after a reduction."""
    dims = _normalize_dims(dims, len(sizes))
    return tuple(1 if i in dims else s for i, s in enumerate(sizes))


# --- NumPy implementations -------------------------------------------------------------------


def _sum_to(grad, shape):
    """Sum ``grad`` down to ``shape``: the inverse of broadcasting it up."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1
    )
    summed = grad.sum(axis=axes, keepdims=True) if axes else grad
    return summed.reshape(shape)


def _expand(grad, shape):
    return np.broadcast_to(grad, tuple(shape))


def _restore_reduced(grad, sizes, dims, keepdim):
    """Put back the dimensions a reduction removed, so ``grad`` broadcasts against the input."""
    return np.reshape(grad, _reduced_shape(sizes, dims, keepdim))


def select_backward(grad, sizes, dim, index):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    key = (slice(None),) * dim + (index,)
    out[key] = grad
    return out


def slice_backward(grad, sizes, dim, start, end, step):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    key = (slice(None),) * dim + (slice(start, end, step),)
    out[key] = grad
    return out


def index_backward(grad, sizes, indices):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    np.add.at(out, indices, grad)
    return out


def _gather_backward(grad, sizes, dim, index):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    np.add.at(out, _gather_key(index, dim), grad)
    return out


def _gather_key(index, dim):
    """The fancy-index key that reads ``input.gather(dim, index)`` out of ``input``."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def _value_selecting_backward(grad, sizes, dim, indices, keepdim):
    """Backward of max/min along a dim: the gradient goes to the element that was selected."""
    if not keepdim:
        grad = np.expand_dims(grad, dim)
        indices = np.expand_dims(indices, dim)
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    np.put_along_axis(out, indices, grad, axis=dim)
    return out


def _evenly_distribute(grad, self, result):
    """Backward of a full max/min: ties share the gradient equally, as PyTorch does."""
    mask = self == result
    return np.where(mask, grad / mask.sum(), 0).astype(grad.dtype, copy=False)


def _amax_backward(grad, self, result, dims, keepdim):
    grad = _restore_reduced(grad, self.shape, dims, keepdim)
    result = _restore_reduced(result, self.shape, dims, keepdim)
    mask = self == result
    count = mask.sum(axis=_normalize_dims(dims, self.ndim) or None, keepdims=True)
    return np.where(mask, grad / count, 0).astype(grad.dtype, copy=False)


def _clamp_backward(grad, self, min, max):  # noqa: A002 - PyTorch's argument names
    keep = np.ones(self.shape, dtype=bool)
    if min is not None:
        keep &= self >= min
    if max is not None:
        keep &= self <= max
    return np.where(keep, grad, 0).astype(grad.dtype, copy=False)


def _split_along(grad, dim, sizes):
    """Cut ``grad`` into the pieces that were concatenated along ``dim``."""
    bounds = np.cumsum([s[dim] for s in sizes])[:-1]
    return list(np.split(grad, bounds, axis=dim))


def _unstack(grad, dim, count):
    return [np.take(grad, i, axis=dim) for i in range(count)]


def _permute_back(grad, dims):
    return np.transpose(grad, np.argsort(dims))


def _reduced_count(sizes, dims):
    """How many input elements each output element of a reduction over ``dims`` summarises."""
    count = 1
    for d in _normalize_dims(dims, len(sizes)):
        count *= sizes[d]
    return count


# Arithmetic on 0-d arrays gives NumPy scalars (``np.float64``), so a gradient that flowed through
# a 0-d tensor may arrive as one: it has a dtype but cannot be written into.


def _zero_at(grad, key):
    out = np.array(grad)  # a copy, and an array even when grad is a NumPy scalar
    out[key] = 0
    return out


def _where(condition, a, b):
    out = np.where(condition, a, b)
    like = a if isinstance(a, (np.ndarray, np.generic)) else b
    return out.astype(like.dtype, copy=False)


def _masked_zero(grad, mask):
    return np.where(mask, 0, grad).astype(grad.dtype, copy=False)


def _sum_dim(grad, dim, keepdim):
    return grad.sum(axis=dim, keepdims=keepdim)


def _scalar_log(value):
    """The log of a Python number, nan below zero as ``torch.log`` gives (``math.log`` raises)."""
    if value > 0:
        return math.log(value)
    return -math.inf if value == 0 else math.nan


ARRAY_NAMESPACE = {
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "sqrt": np.sqrt,
    "sign": np.sign,
    "where": _where,
    "zeros_like": np.zeros_like,
    "reshape": np.reshape,
    "transpose": np.swapaxes,
    "permute_back": _permute_back,
    "matrix_t": np.transpose,
    "unsqueeze": np.expand_dims,
    "outer": np.multiply.outer,
    "sum_to": _sum_to,
    "sum_dim": _sum_dim,
    "expand": _expand,
    "restore_reduced": _restore_reduced,
    "select_backward": select_backward,
    "slice_backward": slice_backward,
    "index_backward": index_backward,
    "gather_backward": _gather_backward,
    "value_selecting_backward": _value_selecting_backward,
    "evenly_distribute": _evenly_distribute,
    "amax_backward": _amax_backward,
    "clamp_backward": _clamp_backward,
    "split_along": _split_along,
    "unstack": _unstack,
    "masked_zero": _masked_zero,
    "swap_last": lambda a: np.swapaxes(a, -1, -2),
    "squeeze": np.squeeze,
    "reduced_count": _reduced_count,
    "scalar_log": _scalar_log,
    "zero_at": _zero_at,
    "astype": lambda a, dt: a.astype(dt.numpy, copy=False),
}


# --- nbgrad Tensor implementations (differentiable) ------------------------------------------


def tensor_namespace():
    """The same names, built from nbgrad operations so that backward itself is differentiable."""
    import nbgrad as nb

    def sum_to(grad, shape):
        return grad.sum_to_size(tuple(shape))

    def restore_reduced(grad, sizes, dims, keepdim):
        return grad.reshape(_reduced_shape(sizes, dims, keepdim))

    def select_backward(grad, sizes, dim, index):
        return nb.ops.functions.select_backward(grad, tuple(sizes), dim, index)

    def slice_backward(grad, sizes, dim, start, end, step):
        return nb.ops.functions.slice_backward(grad, tuple(sizes), dim, start, end, step)

    def index_backward(grad, sizes, indices):
        return nb.ops.functions.index_put_into_zeros(grad, tuple(sizes), indices)

    def gather_backward(grad, sizes, dim, index):
        return nb.ops.functions.index_put_into_zeros(
            grad, tuple(sizes), _gather_key(np.asarray(index), dim)
        )

    def value_selecting_backward(grad, sizes, dim, indices, keepdim):
        indices = np.asarray(indices)
        if not keepdim:
            grad = grad.unsqueeze(dim)
            indices = np.expand_dims(indices, dim)
        return gather_backward(grad, sizes, dim, indices)

    def evenly_distribute(grad, self, result):
        mask = (self == result).detach()
        return nb.where(mask, grad / mask.sum(), 0.0)

    def amax_backward(grad, self, result, dims, keepdim):
        grad = restore_reduced(grad, self.shape, dims, keepdim)
        result = restore_reduced(result, self.shape, dims, keepdim)
        mask = (self == result).detach()
        count = mask.sum(dim=_normalize_dims(dims, self.ndim), keepdim=True)
        return nb.where(mask, grad / count, 0.0)

    def clamp_backward(grad, self, min, max):  # noqa: A002
        keep = nb.ones(self.shape, dtype=nb.bool)
        if min is not None:
            keep = keep & (self >= min)
        if max is not None:
            keep = keep & (self <= max)
        return nb.where(keep, grad, 0.0)

    def zero_at(grad, key):
        out = grad.clone()
        out[key] = 0.0
        return out

    def split_along(grad, dim, sizes):
        pieces, start = [], 0
        for s in sizes:
            pieces.append(grad.narrow(dim, start, s[dim]))
            start += s[dim]
        return pieces

    def unstack(grad, dim, count):
        return [grad.select(dim, i) for i in range(count)]

    return {
        "exp": nb.exp,
        "log": nb.log,
        "sin": nb.sin,
        "cos": nb.cos,
        "sqrt": nb.sqrt,
        "sign": nb.sign,
        "where": nb.where,
        "zeros_like": nb.zeros_like,
        "reshape": nb.reshape,
        "transpose": nb.transpose,
        "permute_back": lambda g, dims: g.permute(*np.argsort(dims).tolist()),
        "matrix_t": lambda a: a.t(),
        "unsqueeze": nb.unsqueeze,
        "outer": lambda a, b: a.reshape(*a.shape, *([1] * b.ndim)) * b,
        "sum_to": sum_to,
        "sum_dim": lambda g, dim, keepdim: g.sum(dim=dim, keepdim=keepdim),
        "expand": lambda g, shape: g.expand(*shape),
        "restore_reduced": restore_reduced,
        "select_backward": select_backward,
        "slice_backward": slice_backward,
        "index_backward": index_backward,
        "gather_backward": gather_backward,
        "value_selecting_backward": value_selecting_backward,
        "evenly_distribute": evenly_distribute,
        "amax_backward": amax_backward,
        "clamp_backward": clamp_backward,
        "split_along": split_along,
        "unstack": unstack,
        "masked_zero": lambda g, mask: g.masked_fill(mask, 0.0),
        "swap_last": lambda a: a.transpose(-1, -2),
        "squeeze": lambda g, dim: g.squeeze(dim),
        "reduced_count": _reduced_count,
        "scalar_log": _scalar_log,
        "zero_at": zero_at,
        "astype": lambda a, dt: a.to(dt),
    }
