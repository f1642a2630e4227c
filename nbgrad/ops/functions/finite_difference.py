"""``torch.diff``: differences of neighbours along a dimension, as ATen builds it (the input with
``prepend`` and ``append`` joined on by ``cat``, then ``n`` times the later slice minus the
earlier one: SubBackward0 over two SliceBackward0, or ``logical_xor`` for booleans).

``nbgrad.diff`` given two Traces instead compares two recordings (nbgrad/trace/diff.py); the
name is shared as it is in PyTorch, where ``torch.diff`` is this function.
"""

from nbgrad import dtypes
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.creation import empty_like
from nbgrad.ops.functions.arithmetic import sub
from nbgrad.ops.functions.comparison import logical_xor
from nbgrad.ops.functions.shapes import cat, narrow
from nbgrad.ops.public import public


@public(method=True)
def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(
            f"diff(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    if type(n) is not int:
        raise TypeError(f"diff(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = wrap_dim(dim, input.dim())
    for extra in (prepend, append):
        if extra is not None and extra.dim() != input.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if prepend is not None or append is not None:
        input = cat([t for t in (prepend, input, append) if t is not None], dim)
    if n == 0:  # ATen returns a copy: an empty tensor with the input copied in (CopyBackwards)
        return empty_like(input).copy_(input)
    for _ in range(n):
        length = input.shape[dim]
        if length == 0:
            break
        later, earlier = narrow(input, dim, 1, length - 1), narrow(input, dim, 0, length - 1)
        input = logical_xor(later, earlier) if input.dtype == dtypes.bool else sub(later, earlier)
    return input
