"""In-place operations: ``add_``, ``mul_``, ``zero_``, ``copy_``, ...: they bump the version. (Those
that are a table entry run as is, ``exp_`` or ``relu_``, are made from their entry: see
``ops/public.py``.)"""

import numpy as np

from nbgrad.autograd.dispatch import run_inplace
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _broadcast_error, _listed, _number, _operand
from nbgrad.ops.functions.arithmetic import (
    _NOT_GIVEN,
    _bool_array,
    _check_rounding_mode,
    _check_sub,
)
from nbgrad.ops.public import public


def _inplace_operand(input, other):  # noqa: A002
    """``other`` as an operand of an in-place op on ``input``: it broadcasts to input's shape."""
    other = _operand(other)
    if isinstance(other, Tensor) and other._data.shape != input._data.shape:
        try:
            shape = np.broadcast_shapes(input._data.shape, other._data.shape)
        except ValueError:
            raise _broadcast_error(input, other) from None
        if shape != input._data.shape:
            raise RuntimeError(
                f"output with shape [{_listed(input._data.shape)}] doesn't match the broadcast "
                f"shape [{_listed(shape)}]"
            )
    return other


@public(method=True)
def add_(input, other, *, alpha=1):  # noqa: A002
    if alpha == 1:
        return run_inplace(OPS["add"], input, (_inplace_operand(input, other),))
    return run_inplace(OPS["add_scaled"], input, (_inplace_operand(input, other),), (alpha,))


@public(method=True)
def sub_(input, other, *, alpha=1):  # noqa: A002
    _check_sub(input, other)
    if alpha == 1:
        return run_inplace(OPS["sub"], input, (_inplace_operand(input, other),))
    return run_inplace(OPS["sub_scaled"], input, (_inplace_operand(input, other),), (alpha,))


@public(method=True)
def mul_(input, other):  # noqa: A002
    return run_inplace(OPS["mul"], input, (_inplace_operand(input, other),))


@public(method=True)
def div_(input, other, *, rounding_mode=_NOT_GIVEN):  # noqa: A002
    if rounding_mode is not _NOT_GIVEN:  # even None: DivBackward2, as in div
        _check_rounding_mode(rounding_mode)
        return run_inplace(
            OPS["div_rounded"], input, (_inplace_operand(input, other),), (rounding_mode,)
        )
    return run_inplace(OPS["div"], input, (_inplace_operand(input, other),))


@public(method=True)
def remainder_(input, other):  # noqa: A002
    return _modulo_(input, other, "remainder")


@public(method=True)
def fmod_(input, other):  # noqa: A002
    return _modulo_(input, other, "fmod")


def _modulo_(input, other, name):  # noqa: A002
    other = _inplace_operand(input, other)
    if isinstance(other, Tensor):
        return run_inplace(OPS[f"{name}_tensor"], input, (other,))
    return run_inplace(OPS[name], input, (), (other,))


@public(method=True)
def clamp_(input, min=None, max=None):  # noqa: A001, A002
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        # Tensor bounds are inputs of their own (ClampBackward0), as in clamp.
        bounds = tuple(None if b is None else _inplace_operand(input, b) for b in (min, max))
        return run_inplace(OPS["clamp_tensor"], input, bounds)
    return run_inplace(OPS["clamp"], input, (), (_number(min), _number(max)))


@public(method=True)
def clamp_min_(input, min):  # noqa: A001, A002
    return _clamp_one_(input, min, "clamp_min")


@public(method=True)
def clamp_max_(input, max):  # noqa: A001, A002
    return _clamp_one_(input, max, "clamp_max")


def _clamp_one_(input, bound, name):  # noqa: A002
    if isinstance(bound, Tensor):
        return run_inplace(OPS[f"{name}_tensor"], input, (_inplace_operand(input, bound),))
    return run_inplace(OPS[name], input, (), (_number(bound),))


@public(method=True)
def zero_(input):  # noqa: A002
    return run_inplace(OPS["zero"], input)


@public(method=True)
def fill_(input, value):  # noqa: A002
    if isinstance(value, Tensor):
        if value.dim():
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.dim()} dimensions."
            )
        return run_inplace(OPS["fill_tensor"], input, (value,))
    return run_inplace(OPS["fill"], input, (), (_number(value),))


@public(method=True)
def copy_(input, src):  # noqa: A002
    return run_inplace(OPS["copy"], input, (_inplace_operand(input, src),))


@public(method=True)
def masked_fill_(input, mask, value):  # noqa: A002
    if isinstance(mask, Tensor):
        _inplace_operand(input, mask)
    return run_inplace(
        OPS["masked_fill"], input, (), (_bool_array(mask, "masked_fill_"), _number(value))
    )
