"""What every tensor function needs: operands as tensors or Python numbers, PyTorch's
broadcast errors, and running a binary table op."""

import builtins

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS

INT64_MAX = 9223372036854775807


_make = Tensor._make


_PYTHON_NUMBERS = (int, float, bool)


def _operand(value):
    """A Tensor stays a Tensor, a Python or NumPy number becomes a Python number."""
    if type(value) in _PYTHON_NUMBERS or isinstance(value, Tensor):
        return value
    if isinstance(value, np.generic):
        # np.float64 is a float, but NumPy would let it widen a float32 array: unwrap it.
        return value.item()
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, np.ndarray):
        return _make(value)
    raise TypeError(f"unsupported operand type for a tensor operation: {type(value).__name__}")


def _check_tensor(value, name="input"):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a Tensor, not {type(value).__name__}")
    return value


def _broadcast_error(a, b):
    shape_a = a._data.shape if isinstance(a, Tensor) else ()
    shape_b = b._data.shape if isinstance(b, Tensor) else ()
    return _shapes_error(shape_a, shape_b)


def _shapes_error(shape_a, shape_b):
    for offset in range(1, builtins.min(len(shape_a), len(shape_b)) + 1):
        sa, sb = shape_a[-offset], shape_b[-offset]
        if sa != sb and sa != 1 and sb != 1:
            dim = builtins.max(len(shape_a), len(shape_b)) - offset
            return RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                f"non-singleton dimension {dim}"
            )
    return RuntimeError(f"shapes {list(shape_a)} and {list(shape_b)} cannot be broadcast together")


def contiguous_result(result):
    """The result of an op that PyTorch writes into a new C-contiguous tensor, whatever the
    layout of its input (reductions over a dim, softmax, cat, masked_fill). NumPy may follow a
    transposed input instead, and the layout decides what view() and reshape() do next."""
    if not result._data.flags.c_contiguous:
        result._data = np.ascontiguousarray(result._data)
    return result


def _binary(spec, a, b, attrs=()):
    a, b = _operand(a), _operand(b)
    try:
        return run_op(spec, (a, b), attrs)
    except ValueError:
        raise _broadcast_error(a, b) from None


def _array(value):
    return value._data if isinstance(value, Tensor) else np.asarray(value)


def _number(value):
    if isinstance(value, Tensor):
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _listed(sizes):
    return ", ".join(str(s) for s in sizes)


def to_dtype(input, dtype):  # noqa: A002
    dtype = dtypes.to_dtype(dtype)
    if dtype is input._dtype:
        return input
    return run_op(OPS["to_dtype"], (input,), (dtype,))
