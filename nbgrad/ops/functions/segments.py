"""``torch.segment_reduce``: a reduction over consecutive segments along one dim.

The segments are given by ``lengths`` or ``offsets`` (integer tensors whose leading dims are
``data``'s before ``axis``); ``indices`` is in the signature but PyTorch refuses it. The kernel
and its backward are in ops/ddmore_kernels.py, the entry (SegmentReduceBackward0) in the table.
"""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops import ddmore_kernels
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.public import public

_FLOATING = (dtypes.float16, dtypes.float32, dtypes.float64)
_INDEX_TYPES = (dtypes.int32, dtypes.int64)
# ATen's checks that end in this sentence (TORCH_CHECK without a message of its own)
_IMPROVE = (
    " to be true, but got false.  (Could this error message be improved?  If so, please report"
    " an enhancement request to PyTorch.)"
)


@public(function=True)
def segment_reduce(
    data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None
):
    given_axis = axis  # saved as given (PyTorch's _saved_axis), negative or not
    axis = wrap_dim(axis, data.dim())
    if reduce not in ddmore_kernels.REDUCTIONS:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    # ATen reads offsets when both are given
    bounds_name, given = ("offsets", offsets) if offsets is not None else ("lengths", lengths)
    if given.dim() > data.dim():
        raise RuntimeError(f"Expected data.dim() >= {bounds_name}_value.dim(){_IMPROVE}")
    if given.dim() - 1 != axis:
        raise RuntimeError(
            f"segment_reduce(): Expected axis to be the last dimension of {bounds_name} but got"
            f" {axis}."
        )
    if given._dtype not in _INDEX_TYPES:
        raise NotImplementedError(
            f'"_segment_reduce_{bounds_name}_cpu_kernel1" not implemented for '
            f"'{dtypes.SCALAR_TYPE_NAMES[given._dtype]}'"
        )
    if data._dtype not in _FLOATING:
        raise NotImplementedError(
            f"\"_segment_reduce_cpu\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[data._dtype]}'"
        )
    size = data.shape[axis]
    if offsets is None:
        _check_lengths(lengths._data, size, unsafe)
        bounds = ddmore_kernels.offsets_of(lengths._data)
    else:
        bounds = offsets._data
    if np.any(np.diff(bounds, axis=-1) < 0):
        raise RuntimeError(f"Expected segment_length >= 0{_IMPROVE}")
    if bounds.size and (bounds.min() < 0 or bounds.max() > size):
        # ATen's kernel reads past the data here (unchecked); nbgrad refuses instead
        raise RuntimeError(
            f"segment_reduce(): the segments' bounds must lie in [0, {size}] (data.size({axis}))"
            f" but reach {int(bounds.min()) if bounds.min() < 0 else int(bounds.max())}"
        )
    return run_op(
        OPS["segment_reduce"],
        (data,),
        (
            reduce,
            None if lengths is None else lengths._data.copy(),
            None if offsets is None else offsets._data.copy(),
            given_axis,
            bool(unsafe),
            initial,
        ),
    )


def _check_lengths(lengths, size, unsafe):
    if unsafe:
        return
    if lengths.size == 0:
        raise RuntimeError(
            "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the"
            " reduction dim with the 'dim' argument."
        )
    if lengths.min() < 0:
        raise RuntimeError("lengths contains negative value!")
    if np.any(lengths.sum(axis=-1) != size):
        raise RuntimeError(
            "segment_reduce(): Expected all rows of lengths along axis to sum to"
            " data.size(lengths.dim()-1) when !unsafe."
        )
