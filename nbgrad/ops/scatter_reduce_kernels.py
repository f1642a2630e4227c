"""``Tensor.scatter_reduce`` and ``Tensor.index_reduce``: the kernels, and their gradients for
NumPy arrays (``ARRAY_FUNCTIONS``) and differentiable Tensors (``tensor_namespace()``).

index_reduce is scatter_reduce with the index spread over the source's shape (source slice i
goes to self slice index[i]), so both share one kernel and one gradient, PyTorch's
scatter_reduce_backward:

- sum:        self gets grad; src gets grad gathered at its index;
- mean:       both divided by how many values each place averaged;
- prod:       each factor gets grad times the product of the others (computed without dividing
              by a factor that is zero);
- amax, amin: the gradient split evenly between the values equal to the result;

and without include_self, self's old value at a place written to gets nothing.
"""

import numpy as np

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_UFUNCS = {
    "sum": np.add,
    "mean": np.add,
    "prod": np.multiply,
    "amax": np.maximum,
    "amin": np.minimum,
}


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    return -big if reduce == "amax" else big


def _places(index, dim):
    """The full coordinates in self of each element of src: index along dim, its own position
    along the other dims."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def scatter_reduce(self, dim, index, src, reduce, include_self):
    if self.ndim == 0:  # a 0-d self, index and src: as 1-d of one element
        one = scatter_reduce(
            self.reshape(1), 0, index.reshape(1), src.reshape(1), reduce, include_self
        )
        return one.reshape(())
    out = self.copy()
    if index.size == 0:
        return out
    places = _places(index, dim)
    values = src[tuple(slice(0, n) for n in index.shape)]
    if not include_self:
        out[places] = _identity(reduce, out.dtype)
    _UFUNCS[reduce].at(out, places, values)
    if reduce == "mean":
        counts = np.zeros(out.shape, np.int64)
        np.add.at(counts, places, 1)
        if include_self:
            counts += 1
        counts = np.maximum(counts, 1)
        if out.dtype.kind == "f":
            out = out / counts
        else:
            out = np.floor_divide(out, counts)
    return out.astype(self.dtype, copy=False)


def spread_index(index, dim, source_shape):
    """index_reduce's 1-d index as scatter_reduce's: index[i] at every element of slice i."""
    shape = [1] * len(source_shape)
    if shape:
        shape[dim] = -1
    return np.broadcast_to(index.reshape(shape), source_shape).copy()


def index_reduce(self, dim, index, source, reduce, include_self):
    if self.ndim == 0:
        return scatter_reduce(
            self.reshape(1), 0, index.reshape(1), source.reshape(1), reduce, include_self
        ).reshape(())
    return scatter_reduce(
        self, dim, spread_index(index, dim, source.shape), source, reduce, include_self
    )


# --- the gradient, written once over a small set of operations -----------------------------------


class ArrayOps:
    @staticmethod
    def gather(x, dim, index):
        return np.take_along_axis(x, index, axis=dim)

    @staticmethod
    def scatter_add(x, dim, index, src):
        out = x.copy()
        np.add.at(out, _places(index, dim), src[tuple(slice(0, n) for n in index.shape)])
        return out

    @staticmethod
    def scatter_value(x, dim, index, value):
        out = x.copy()
        out[_places(index, dim)] = value
        return out

    @staticmethod
    def scatter_reduce(x, dim, index, src, reduce, include_self):
        return scatter_reduce(x, dim, index, src, reduce, include_self)

    @staticmethod
    def where(condition, a, b):
        return np.where(condition, a, b)

    @staticmethod
    def as_float(mask, like):
        return np.asarray(mask, like.dtype)

    @staticmethod
    def filled_like(x, value):
        return np.full_like(x, value)


class TensorOps:
    @staticmethod
    def _index(index):
        import nbgrad as nb

        return nb.as_tensor(np.asarray(getattr(index, "_data", index), np.int64))

    @classmethod
    def gather(cls, x, dim, index):
        return x.gather(dim, cls._index(index))

    @classmethod
    def scatter_add(cls, x, dim, index, src):
        return x.scatter_add(dim, cls._index(index), src)

    @classmethod
    def scatter_value(cls, x, dim, index, value):
        return x.scatter(dim, cls._index(index), value)

    @classmethod
    def scatter_reduce(cls, x, dim, index, src, reduce, include_self):
        return x.scatter_reduce(dim, cls._index(index), src, reduce, include_self=include_self)

    @staticmethod
    def where(condition, a, b):
        import nbgrad as nb

        return nb.where(condition, a, b)

    @staticmethod
    def as_float(mask, like):
        return mask.to(like.dtype)

    @staticmethod
    def filled_like(x, value):
        """A constant of ``x``'s shape and dtype: no graph to ``x``."""
        import nbgrad as nb

        return nb.full_like(x, value)


def _gradients(ops, grad, self, dim, index, src, reduce, include_self, result):
    """(grad_self, grad_src), as PyTorch's scatter_reduce_backward computes them."""
    if reduce == "sum":
        grad_self, grad_src = grad, ops.gather(grad, dim, index)
    elif reduce == "mean":
        # how many values each place averaged: a constant, as PyTorch's N (no graph to src)
        counts = ops.filled_like(grad, 1 if include_self else 0)
        counts = ops.scatter_add(counts, dim, index, ops.filled_like(src, 1))
        counts = ops.where(counts == 0, ops.filled_like(counts, 1), counts)
        grad_self = grad / counts
        grad_src = ops.gather(grad, dim, index) / ops.gather(counts, dim, index)
    elif reduce == "prod":
        # Each factor's gradient is the product of the others: result / factor where it is not
        # zero; where it is, the product with that factor replaced by 1.
        self_is_zero = self == 0
        masked_self = ops.where(self_is_zero, self * 0 + 1, self)
        others_of_self = ops.scatter_reduce(masked_self, dim, index, src, "prod", include_self)
        grad_self = grad * others_of_self / masked_self
        src_is_zero = src == 0
        zeros_at_place = ops.gather(
            ops.scatter_add(self * 0, dim, index, ops.as_float(src_is_zero, self)), dim, index
        )
        single_zero = src_is_zero & (zeros_at_place == 1)
        masked_src = ops.where(single_zero, src * 0 + 1, src)
        others_of_src = ops.scatter_reduce(self, dim, index, masked_src, "prod", include_self)
        grad_src = ops.where(
            single_zero,
            ops.gather(grad * others_of_src, dim, index),
            ops.gather(grad * result, dim, index) / ops.where(src_is_zero, src * 0 + 1, src),
        )
    else:  # amax, amin: split evenly between the values equal to the result
        value = ops.gather(result, dim, index)
        self_is_result = ops.as_float(self == result, self)
        src_is_result = ops.as_float(src == value, src)
        ties = ops.scatter_add(self_is_result, dim, index, src_is_result)
        distributed = grad / ties
        grad_self = self_is_result * distributed
        grad_src = src_is_result * ops.gather(distributed, dim, index)
    if not include_self:
        grad_self = ops.scatter_value(grad_self, dim, index, 0.0)
    return grad_self, grad_src


def scatter_reduce_backward(which, grad, self, dim, index, src, reduce, include_self, result):
    if np.ndim(self) == 0:
        return scatter_reduce_backward(
            which,
            grad.reshape(1),
            self.reshape(1),
            0,
            np.reshape(index, 1),
            src.reshape(1),
            reduce,
            include_self,
            result.reshape(1),
        ).reshape(())
    return _gradients(ArrayOps, grad, self, dim, index, src, reduce, include_self, result)[which]


def index_reduce_backward(which, grad, self, dim, index, source, reduce, include_self, result):
    if np.ndim(self) == 0:
        return index_reduce_backward(
            which,
            grad.reshape(1),
            self.reshape(1),
            0,
            index,
            source.reshape(1),
            reduce,
            include_self,
            result.reshape(1),
        ).reshape(())
    spread = spread_index(np.asarray(index), dim, source.shape)
    return _gradients(ArrayOps, grad, self, dim, spread, source, reduce, include_self, result)[
        which
    ]


ARRAY_FUNCTIONS = {
    "scatter_reduce_backward": scatter_reduce_backward,
    "index_reduce_backward": index_reduce_backward,
}


def scatter_reduce_backward_tensor(
    which, grad, self, dim, index, src, reduce, include_self, result
):
    if self.dim() == 0:
        index = np.reshape(np.asarray(getattr(index, "_data", index)), 1)
        return scatter_reduce_backward_tensor(
            which,
            grad.reshape(1),
            self.reshape(1),
            0,
            index,
            src.reshape(1),
            reduce,
            include_self,
            result.reshape(1),
        ).reshape(())
    return _gradients(TensorOps, grad, self, dim, index, src, reduce, include_self, result)[which]


def index_reduce_backward_tensor(
    which, grad, self, dim, index, source, reduce, include_self, result
):
    if self.dim() == 0:
        return index_reduce_backward_tensor(
            which,
            grad.reshape(1),
            self.reshape(1),
            0,
            index,
            source.reshape(1),
            reduce,
            include_self,
            result.reshape(1),
        ).reshape(())
    index = np.asarray(getattr(index, "_data", index))
    spread = spread_index(index, dim, tuple(source.shape))
    return _gradients(TensorOps, grad, self, dim, spread, source, reduce, include_self, result)[
        which
    ]


def tensor_namespace():
    return {
        "scatter_reduce_backward": scatter_reduce_backward_tensor,
        "index_reduce_backward": index_reduce_backward_tensor,
    }
