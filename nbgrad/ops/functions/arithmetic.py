"""Arithmetic: ``+ - * / **``, ``clamp``, ``where``, softmax.

The element-wise functions that are their table entry run as is (``exp``, ``sin``) are made from
their entry: see ``ops/public.py``."""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import result_dtype, run_op
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import (
    _binary,
    _broadcast_error,
    _check_tensor,
    _make,
    _number,
    _operand,
    _shapes_error,
    to_dtype,
)
from nbgrad.ops.public import public


@public(function=True, method=True, out=True)
def add(input, other, *, alpha=1):  # noqa: A002 - PyTorch's argument names
    if alpha == 1:
        return _binary(OPS["add"], input, other)
    return _binary(OPS["add_scaled"], input, other, (alpha,))


def _is_bool(value):
    return isinstance(value, bool) or (isinstance(value, Tensor) and value._dtype is dtypes.bool)


def _check_sub(a, b):
    """PyTorch refuses ``-`` on bools and says what to use instead."""
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."
        )
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )


@public(function=("sub", "subtract"), method=("sub", "subtract"), out=True)
def sub(input, other, *, alpha=1):  # noqa: A002
    _check_sub(input, other)
    if alpha == 1:
        return _binary(OPS["sub"], input, other)
    return _binary(OPS["sub_scaled"], input, other, (alpha,))


def _promoted(input, *others):  # noqa: A002
    """``input`` converted to the result dtype of an op with the Python numbers ``others``. Only
    an integer or bool tensor (which cannot require grad) ever changes, so graphs are unchanged."""
    target = result_dtype((input, *(o for o in others if o is not None)))
    return input if target is input._dtype else to_dtype(input, target)


@public(function=True)
def rsub(input, other, *, alpha=1):  # noqa: A002
    """``other - alpha * input``: RsubBackward0 for a tensor ``other``, RsubBackward1 for a
    number."""
    _check_sub(other, input)
    if isinstance(other, Tensor):
        return _binary(OPS["rsub_tensor"], input, other, (alpha,))
    other = _operand(other)
    return run_op(OPS["rsub"], (_promoted(input, other),), (other, alpha))


@public(function=("mul", "multiply"), method=("mul", "multiply"), out=True)
def mul(input, other):  # noqa: A002
    return _binary(OPS["mul"], input, other)


_NOT_GIVEN = object()  # div's rounding_mode when the caller gave none


@public(function=("div", "divide"), method=("div", "divide"), out=True)
def div(input, other, *, rounding_mode=_NOT_GIVEN):  # noqa: A002
    if rounding_mode is _NOT_GIVEN:
        return _binary(OPS["div"], input, other)
    # An explicit rounding_mode, even None, is ATen's div.Tensor_mode: DivBackward2.
    _check_rounding_mode(rounding_mode)
    return _binary(OPS["div_rounded"], input, other, (rounding_mode,))


def _check_rounding_mode(rounding_mode):
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )


def rdiv(input, other):  # noqa: A002
    """``other / input`` for a number ``other``: PyTorch computes ``reciprocal(input) * other``."""
    return mul(run_op(OPS["reciprocal"], (input,)), other)


@public(function=("neg", "negative"), method=("neg", "negative"), out=True)
def neg(input):  # noqa: A002
    if input._dtype is dtypes.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
            "invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return run_op(OPS["neg"], (input,))


@public(function=True, method=True, out=True)
def pow(input, exponent):  # noqa: A001, A002
    if not isinstance(input, Tensor):
        base = _operand(input)
        exponent = _promoted(_check_tensor(exponent, "exponent"), base)
        _check_bool_pow(base, exponent)
        return run_op(OPS["rpow"], (exponent,), (base,))
    _check_bool_pow(input, exponent)
    if input._dtype is dtypes.bool and isinstance(exponent, bool):
        return _make(np.power(input._data, exponent).astype(bool))
    if isinstance(exponent, Tensor):
        return _binary(OPS["pow_tensor"], input, exponent)
    exponent = _operand(exponent)
    if isinstance(exponent, float) and not input._dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    if isinstance(exponent, int) and exponent < 0 and not input._dtype.is_floating_point:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return run_op(OPS["pow"], (input,), (exponent,))


def _check_bool_pow(base, exponent):
    """PyTorch has no bool ** bool between tensors (a bool tensor ** True stays bool)."""
    if _is_bool(base) and _is_bool(exponent) and isinstance(exponent, Tensor):
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


@public(function=True, method=True, out=True)
def square(input):  # noqa: A002
    return pow(input, 2)


def _tensors_only(name):
    """``torch.maximum(x, y)`` and ``x.maximum(y)``: PyTorch refuses a Python number for ``y``,
    naming its position (2 in the function, 1 in the method)."""
    spec = OPS[name]

    def checked(input, other, position):  # noqa: A002
        if not isinstance(other, Tensor):
            raise TypeError(
                f"{name}(): argument 'other' (position {position}) must be Tensor, not "
                f"{type(other).__name__}"
            )
        return _binary(spec, input, other)

    def function(input, other):  # noqa: A002
        return checked(input, other, 2)

    def method(self, other):
        return checked(self, other, 1)

    function.__name__ = method.__name__ = name
    return function, method


maximum, maximum_method = _tensors_only("maximum")
public(function=True, out=True)(maximum)
public(method=True)(maximum_method)


minimum, minimum_method = _tensors_only("minimum")
public(function=True, out=True)(minimum)
public(method=True)(minimum_method)


@public(function=("clamp", "clip"), method=("clamp", "clip"), out=True)
def clamp(input, min=None, max=None):  # noqa: A001, A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        # Tensor bounds are inputs of their own (ClampBackward0): they get gradients too.
        return run_op(
            OPS["clamp_tensor"],
            (_check_tensor(input), _operand_or_none(min), _operand_or_none(max)),
        )
    min, max = _number(min), _number(max)  # noqa: A001
    return run_op(OPS["clamp"], (_promoted(_check_tensor(input), min, max),), (min, max))


@public(function=True, method=True)
def clamp_min(input, min):  # noqa: A002
    return _clamp_one("clamp_min", input, min)


@public(function=True, method=True)
def clamp_max(input, max):  # noqa: A002
    return _clamp_one("clamp_max", input, max)


def _clamp_one(name, input, bound):  # noqa: A002
    """clamp_min / clamp_max: nodes of their own (ClampMinBackward0, ...), not clamp's."""
    input = _check_tensor(input)  # noqa: A001
    if isinstance(bound, Tensor):
        try:
            return run_op(OPS[f"{name}_tensor"], (input, bound))
        except ValueError:
            raise _broadcast_error(input, bound) from None
    bound = _number(bound)
    return run_op(OPS[name], (_promoted(input, bound),), (bound,))


def _operand_or_none(value):
    return None if value is None else _operand(value)


@public(function=True, out=True)
def where(condition, input=None, other=None):  # noqa: A002
    condition = _bool_array(condition, "where")
    if input is None and other is None:
        return tuple(_make(i) for i in np.nonzero(condition))
    a, b = _operand(input), _operand(other)
    _check_mask_shape(condition, a)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = _make(np.asarray(a, dtype=_scalar_dtype(a).numpy))
    try:
        return run_op(OPS["where"], (a, b), (condition,))
    except ValueError:
        raise _broadcast_error(a, b) from None


def _scalar_dtype(value):
    if isinstance(value, bool):
        return dtypes.bool
    if isinstance(value, int):
        return dtypes.int64
    return dtypes.get_default_dtype()


def _bool_array(mask, op_name):
    if isinstance(mask, Tensor):
        if mask._dtype is not dtypes.bool:
            if op_name == "masked_fill_":
                raise RuntimeError(
                    "masked_fill_ only supports boolean masks, but got mask with dtype "
                    f"{dtypes.CPP_TYPE_NAMES[mask._dtype]}"
                )
            raise RuntimeError(
                f"{op_name} expected condition to be a boolean tensor, but got a "
                f"tensor with dtype {dtypes.SCALAR_TYPE_NAMES[mask._dtype]}"
            )
        return mask._data
    return np.asarray(mask, dtype=bool)


def _check_mask_shape(mask, input):  # noqa: A002
    """PyTorch's error for a mask that does not broadcast with ``input`` (mask is tensor a)."""
    other = input._data.shape if isinstance(input, Tensor) else ()
    try:
        np.broadcast_shapes(mask.shape, other)
    except ValueError:
        raise _shapes_error(mask.shape, other) from None


@public(function=True, method=True)
def masked_fill(input, mask, value):  # noqa: A002
    mask = _bool_array(mask, "masked_fill_")
    _check_mask_shape(mask, input)
    if isinstance(value, Tensor) and value._requires_grad:
        # A fill value that requires grad gets the gradient of every place it filled.
        return run_op(OPS["masked_fill_tensor"], (input, value), (mask,))
    return run_op(OPS["masked_fill"], (input,), (mask, _number(value)))


@public(function=True, method=True)
def softmax(input, dim, dtype=None):  # noqa: A002
    if dtype is not None:
        input = input.to(dtype)
    wrap_dim(dim, input.dim())  # checked, but saved as given (-1 stays -1), as PyTorch does
    return run_op(OPS["softmax"], (input,), (dim,))


@public(function=True, method=True)
def log_softmax(input, dim, dtype=None):  # noqa: A002
    if dtype is not None:
        input = input.to(dtype)
    wrap_dim(dim, input.dim())
    return run_op(OPS["log_softmax"], (input,), (dim,))
