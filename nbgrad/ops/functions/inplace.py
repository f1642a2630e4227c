"""In-place operations: ``add_``, ``mul_``, ``zero_``, ``copy_``, ...: they bump the version."""

import numpy as np

from nbgrad.autograd.dispatch import run_inplace
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _broadcast_error, _listed, _number, _operand
from nbgrad.ops.functions.arithmetic import _bool_array, _check_sub


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


def add_(input, other, *, alpha=1):  # noqa: A002
    if alpha == 1:
        return run_inplace(OPS["add"], input, (_inplace_operand(input, other),))
    return run_inplace(OPS["add_scaled"], input, (_inplace_operand(input, other),), (alpha,))


def sub_(input, other, *, alpha=1):  # noqa: A002
    _check_sub(input, other)
    if alpha == 1:
        return run_inplace(OPS["sub"], input, (_inplace_operand(input, other),))
    return run_inplace(OPS["sub_scaled"], input, (_inplace_operand(input, other),), (alpha,))


def mul_(input, other):  # noqa: A002
    return run_inplace(OPS["mul"], input, (_inplace_operand(input, other),))


def div_(input, other):  # noqa: A002
    return run_inplace(OPS["div"], input, (_inplace_operand(input, other),))


def remainder_(input, other):  # noqa: A002
    return _modulo_(input, other, "remainder")


def fmod_(input, other):  # noqa: A002
    return _modulo_(input, other, "fmod")


def _modulo_(input, other, name):  # noqa: A002
    other = _inplace_operand(input, other)
    if isinstance(other, Tensor):
        return run_inplace(OPS[f"{name}_tensor"], input, (other,))
    return run_inplace(OPS[name], input, (), (other,))


def clamp_(input, min=None, max=None):  # noqa: A001, A002
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        # Tensor bounds are inputs of their own (ClampBackward0), as in clamp.
        bounds = tuple(None if b is None else _inplace_operand(input, b) for b in (min, max))
        return run_inplace(OPS["clamp_tensor"], input, bounds)
    return run_inplace(OPS["clamp"], input, (), (_number(min), _number(max)))


def clamp_min_(input, min):  # noqa: A001, A002
    return _clamp_one_(input, min, "clamp_min")


def clamp_max_(input, max):  # noqa: A001, A002
    return _clamp_one_(input, max, "clamp_max")


def _clamp_one_(input, bound, name):  # noqa: A002
    if isinstance(bound, Tensor):
        return run_inplace(OPS[f"{name}_tensor"], input, (_inplace_operand(input, bound),))
    return run_inplace(OPS[name], input, (), (_number(bound),))


def relu_(input):  # noqa: A002
    return run_inplace(OPS["relu"], input)


def zero_(input):  # noqa: A002
    return run_inplace(OPS["zero"], input)


def fill_(input, value):  # noqa: A002
    if isinstance(value, Tensor):
        if value.dim():
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.dim()} dimensions."
            )
        return run_inplace(OPS["fill_tensor"], input, (value,))
    return run_inplace(OPS["fill"], input, (), (_number(value),))


def copy_(input, src):  # noqa: A002
    return run_inplace(OPS["copy"], input, (_inplace_operand(input, src),))


def masked_fill_(input, mask, value):  # noqa: A002
    if isinstance(mask, Tensor):
        _inplace_operand(input, mask)
    return run_inplace(
        OPS["masked_fill"], input, (), (_bool_array(mask, "masked_fill_"), _number(value))
    )


def _unary_inplace(name):
    spec = OPS[name]

    def function(input):  # noqa: A002
        return run_inplace(spec, input)

    function.__name__ = name + "_"
    function.__doc__ = f"In-place {name}: writes into the tensor and bumps its version."
    return function


exp_ = _unary_inplace("exp")
log_ = _unary_inplace("log")
sin_ = _unary_inplace("sin")
cos_ = _unary_inplace("cos")
tan_ = _unary_inplace("tan")
tanh_ = _unary_inplace("tanh")
sigmoid_ = _unary_inplace("sigmoid")
sqrt_ = _unary_inplace("sqrt")
rsqrt_ = _unary_inplace("rsqrt")
reciprocal_ = _unary_inplace("reciprocal")
abs_ = _unary_inplace("abs")
neg_ = _unary_inplace("neg")
sign_ = _unary_inplace("sign")
floor_ = _unary_inplace("floor")
ceil_ = _unary_inplace("ceil")
round_ = _unary_inplace("round")
trunc_ = _unary_inplace("trunc")
