"""``nansum``, ``nanmedian`` and ``aminmax`` (branch special's reductions)."""

import collections

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.reductions import _dims
from nbgrad.ops.public import public

NanmedianResult = collections.namedtuple("nanmedian", ["values", "indices"])
AminmaxResult = collections.namedtuple("aminmax", ["min", "max"])


@public(function=True, method=True, out=True)
def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if not input._dtype.is_floating_point:
        # integers have no nan: PyTorch's nansum of an integer tensor is its sum
        from nbgrad.ops.functions.reductions import sum as plain_sum

        return plain_sum(input, dim, keepdim, dtype=dtype)
    dims = None if dim is None else _dims(dim, input.dim())
    numpy_dtype = None if dtype is None else dtypes.to_dtype(dtype).numpy
    return run_op(OPS["nansum"], (input,), (dims, keepdim, numpy_dtype))


@public(function=True, method=True)
def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    if dim is None:
        return run_op(OPS["nanmedian"], (input,))
    wrapped = wrap_dim(dim, input.dim())
    if input.dim() and input._data.shape[wrapped] == 0:
        raise IndexError(f"median(): Expected reduction dim {wrapped} to have non-zero size.")
    return NanmedianResult(*run_op(OPS["nanmedian_dim"], (input,), (dim, keepdim)))


@public(function=True, method=True)
def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    if dim is not None:
        wrap_dim(dim, input.dim())
    if input._data.size == 0:
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity."
        )
    return AminmaxResult(*run_op(OPS["aminmax"], (input,), (dim, keepdim)))
