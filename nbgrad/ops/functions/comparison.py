"""Results that carry no gradient: comparisons, logical and bitwise ops, ``argmax``, rounding;
and remainder/fmod, whose gradient is 1 almost everywhere."""

from functools import partial

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import (
    result_dtype,
    run_op,
    write_untracked,
    write_without_derivative,
)
from nbgrad.autograd.node import not_implemented_history
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _array, _broadcast_error, _make, _operand
from nbgrad.ops.functions.inplace import _inplace_operand
from nbgrad.ops.functions.reductions import _check_reduced_sizes
from nbgrad.ops.public import public


def _no_grad_result(name, function, kernel=None, kinds=None):
    """An op without a gradient. Its operands are first brought to PyTorch's result dtype
    (Python numbers stay weak, as in PyTorch); ``kinds`` lists the dtype categories the op
    accepts (0 bool, 1 integer, 2 float), and ``kernel`` names it in PyTorch's refusal."""

    def compute(input, other):  # noqa: A002
        a, b = _operand(input), _operand(other)
        target = result_dtype((a, b))
        if kinds is not None and target._category not in kinds:
            raise NotImplementedError(
                f"\"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[target]}'"
            )
        arrays = [
            x._data.astype(target.numpy, copy=False) if isinstance(x, Tensor) else x for x in (a, b)
        ]
        dividing = kernel in ("div_floor_cpu", "remainder_cpu", "fmod_cpu")
        if dividing and target._category < 2 and np.any(np.asarray(arrays[1]) == 0):
            raise RuntimeError("ZeroDivisionError")
        try:
            out = np.asarray(function(*arrays))
        except ValueError:
            raise _broadcast_error(a, b) from None
        if out.dtype != bool:
            out = out.astype(target.numpy, copy=False)
        return _make(out)

    compute.__name__ = compute.__qualname__ = name
    return compute


eq = public(function=True, method=True)(_no_grad_result("eq", np.equal))


ne = public(function=("ne", "not_equal"), method=("ne", "not_equal"))(
    _no_grad_result("ne", np.not_equal)
)


lt = public(function=("lt", "less"), method=("lt", "less"))(_no_grad_result("lt", np.less))


le = public(function=("le", "less_equal"), method=("le", "less_equal"))(
    _no_grad_result("le", np.less_equal)
)


gt = public(function=("gt", "greater"), method=("gt", "greater"))(_no_grad_result("gt", np.greater))


ge = public(function=("ge", "greater_equal"), method=("ge", "greater_equal"))(
    _no_grad_result("ge", np.greater_equal)
)


logical_and = public(function=True, method=True)(_no_grad_result("logical_and", np.logical_and))


logical_or = public(function=True, method=True)(_no_grad_result("logical_or", np.logical_or))


logical_xor = public(function=True, method=True)(_no_grad_result("logical_xor", np.logical_xor))


bitwise_and = public(function=True, method=True)(
    _no_grad_result("bitwise_and", np.bitwise_and, "bitwise_and_cpu", (0, 1))
)


bitwise_or = public(function=True, method=True)(
    _no_grad_result("bitwise_or", np.bitwise_or, "bitwise_or_cpu", (0, 1))
)


bitwise_xor = public(function=True, method=True)(
    _no_grad_result("bitwise_xor", np.bitwise_xor, "bitwise_xor_cpu", (0, 1))
)


_floor_divide = _no_grad_result("floor_divide", np.floor_divide, "div_floor_cpu", (1, 2))


@public(function=True, method=True)
def floor_divide(input, other):  # noqa: A002
    """PyTorch records ``x // 2`` with a NotImplemented grad_fn: backward through it raises."""
    return not_implemented_history(_floor_divide(input, other), "floor_divide", (input, other))


_remainder = _no_grad_result("remainder", np.remainder, "remainder_cpu", (1, 2))
_fmod = _no_grad_result("fmod", np.fmod, "fmod_cpu", (1, 2))


def _modulo(name, no_grad, input, other):  # noqa: A002
    """remainder and fmod: RemainderBackward0 for a number divisor, RemainderBackward1 for a
    tensor one; a number dividend has no derivative in PyTorch (NotImplemented)."""
    a, b = _operand(input), _operand(other)
    if not isinstance(a, Tensor) or not result_dtype((a, b)).is_floating_point:
        return not_implemented_history(no_grad(a, b), name, (a, b))
    if isinstance(b, Tensor):
        try:
            return run_op(OPS[f"{name}_tensor"], (a, b))
        except ValueError:
            raise _broadcast_error(a, b) from None
    if not a._dtype.is_floating_point:
        a = a.to(result_dtype((a, b)))
    return run_op(OPS[name], (a,), (b,))


@public(function=True, method=True)
def remainder(input, other):  # noqa: A002
    return _modulo("remainder", _remainder, input, other)


@public(function=True, method=True)
def fmod(input, other):  # noqa: A002
    return _modulo("fmod", _fmod, input, other)


@public(function=True, method=True)
def logical_not(input):  # noqa: A002
    return _make(np.logical_not(input._data))


@public(function=True, method=True)
def bitwise_not(input):  # noqa: A002
    if input._dtype.is_floating_point:
        raise NotImplementedError(
            f"\"bitwise_not_cpu\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input._dtype]}'"
        )
    return _make(np.invert(input._data))


def _written_in_place(name, function, write):
    """The in-place method ``x.<name>_(other)``: ``function``'s result, in x's dtype where
    PyTorch's casting rule allows it, written into x by ``write``."""

    def method(input, *other):  # noqa: A002
        other = tuple(_inplace_operand(input, o) for o in other)
        result = function(input, *other)._data
        if not np.can_cast(result.dtype, input._data.dtype, casting="same_kind"):
            raise RuntimeError(
                f"result type {dtypes.name_of(result.dtype)} can't be cast to the desired "
                f"output type {dtypes.name_of(input._data.dtype)}"
            )
        return write(input, result, others=other)

    method.__name__ = method.__qualname__ = f"{name}_"
    return public(method=True)(method)


# Logical and bitwise results are never differentiated: the history stays (write_untracked);
# floor_divide could be but is not, so PyTorch gives it a NotImplemented grad_fn.
for _name, _function in (
    ("logical_and", logical_and),
    ("logical_or", logical_or),
    ("logical_xor", logical_xor),
    ("logical_not", logical_not),
    ("bitwise_and", bitwise_and),
    ("bitwise_or", bitwise_or),
    ("bitwise_xor", bitwise_xor),
    ("bitwise_not", bitwise_not),
):
    globals()[f"{_name}_"] = _written_in_place(_name, _function, write_untracked)
floor_divide_ = _written_in_place(
    "floor_divide", floor_divide, partial(write_without_derivative, op="floor_divide_")
)
del _name, _function


@public(function=True, method=True)
def isnan(input):  # noqa: A002
    return _make(np.isnan(input._data))


@public(function=True, method=True)
def isfinite(input):  # noqa: A002
    return _make(np.isfinite(input._data))


@public(function=True, method=True)
def equal(input, other):  # noqa: A002
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


@public(function=True, method=True)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@public(function=True, method=True)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    close = _make(np.isclose(input._data, _array(other), rtol=rtol, atol=atol, equal_nan=equal_nan))
    close._version_counter.value = 1  # PyTorch finishes its result in place once: _version 1
    return close


@public(function=True, method=True)
def argmax(input, dim=None, keepdim=False):  # noqa: A002
    return _arg_extreme(np.argmax, input, dim, keepdim)


@public(function=True, method=True)
def argmin(input, dim=None, keepdim=False):  # noqa: A002
    return _arg_extreme(np.argmin, input, dim, keepdim)


def _arg_extreme(function, input, dim, keepdim):  # noqa: A002
    name = function.__name__
    if dim is None:
        if input._data.size == 0:
            raise IndexError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        index = function(input._data)
        return _make(
            np.asarray(index, dtype=np.int64).reshape((1,) * input.dim() if keepdim else ())
        )
    _check_reduced_sizes(input, name, (dim,))
    return _make(function(input._data, axis=wrap_dim(dim, input.dim()), keepdims=keepdim))


@public(function=True, method=True)
def all(input, dim=None, keepdim=False):  # noqa: A001, A002
    return _make(np.asarray(np.all(input._data, axis=dim, keepdims=keepdim)))


@public(function=True, method=True)
def any(input, dim=None, keepdim=False):  # noqa: A001, A002
    return _make(np.asarray(np.any(input._data, axis=dim, keepdims=keepdim)))


@public(function=True, method=True)
def round(input, decimals=0):  # noqa: A001, A002
    if decimals == 0:
        return run_op(OPS["round"], (input,))
    return run_op(OPS["round_decimals"], (input,), (decimals,))
