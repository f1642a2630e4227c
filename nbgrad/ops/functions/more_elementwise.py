"""More element-wise functions with arguments beyond the tensor: ``atan2``, ``logsumexp`` and the
activations PyTorch has in its own namespace (``torch.selu``, ``torch.threshold_``, ...). Those
that are a table entry run as is (``asin``, ``log2``) are made from their entry: see
``ops/public.py``."""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import (
    _binary,
    _broadcast_error,
    _number,
    _shapes_error,
)
from nbgrad.ops.functions.arithmetic import _tensors_only
from nbgrad.ops.functions.inplace import _inplace_operand
from nbgrad.ops.functions.reductions import _dims
from nbgrad.ops.public import FUNCTIONS, declare, public

atan2, atan2_method = _tensors_only("atan2")
public(function=True, out=True)(atan2)
public(method=True)(atan2_method)


@public(function=True, out=True)
def arctan2(input, other):  # noqa: A002 - PyTorch's argument names
    _check_other("arctan2", other, 2)
    return atan2(input, other)


@public(method="arctan2")
def arctan2_method(self, other):
    _check_other("arctan2", other, 1)
    return atan2(self, other)


def _check_other(name, other, position):
    if not isinstance(other, Tensor):
        raise TypeError(
            f"{name}(): argument 'other' (position {position}) must be Tensor, not "
            f"{type(other).__name__}"
        )
    return other


def _atan2_inplace(name):
    def method(self, other):
        _check_other(name, other, 1)
        return run_inplace(OPS["atan2"], self, (other,))

    method.__name__ = name
    return public(method=True)(method)


atan2_ = _atan2_inplace("atan2_")
arctan2_ = _atan2_inplace("arctan2_")


@public(function=True, method=True, out=True)
def logsumexp(input, dim, keepdim=False):  # noqa: A002 - PyTorch's argument names
    ndim = input.dim()
    if not (isinstance(dim, int) or dim) and ndim:
        # PyTorch's own message for an empty list of dims (it reduces over none, then fails).
        raise RuntimeError(
            f"output with shape [] doesn't match the broadcast shape [{', '.join('1' * ndim)}]"
        )
    dims = _dims(dim, ndim)
    return run_op(OPS["logsumexp"], (input,), (dims, bool(keepdim)))


def _check_floating(input, kernel):  # noqa: A002
    if not input._dtype.is_floating_point:
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input._dtype]}'"
        )


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def elu_attrs(alpha, scale=1, input_scale=1):
    return (_number(alpha), scale, input_scale)


@public(function=True)
def selu(input):  # noqa: A002
    _check_floating(input, "elu_cpu")
    return run_op(OPS["elu"], (input,), (SELU_ALPHA, SELU_SCALE, 1))


@public(function=True)
def selu_(input):  # noqa: A002
    _check_floating(input, "elu_cpu")
    return run_inplace(OPS["elu_inplace"], input, (), (SELU_ALPHA, SELU_SCALE, 1))


def _check_celu(input, alpha):  # noqa: A002
    _check_floating(input, "elu_cpu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _number(alpha)


@public(function=True)
def celu(input, alpha=1.0):  # noqa: A002
    return run_op(OPS["celu"], (input,), (_check_celu(input, alpha),))


@public(function=True)
def celu_(input, alpha=1.0):  # noqa: A002
    return run_inplace(OPS["celu_inplace"], input, (), (_check_celu(input, alpha),))


@public(function=True)
def threshold(input, threshold, value):  # noqa: A002
    return run_op(OPS["threshold"], (input,), (_number(threshold), _number(value)))


@public(function=True)
def threshold_(input, threshold, value):  # noqa: A002
    return run_inplace(OPS["threshold_inplace"], input, (), (_number(threshold), _number(value)))


@public(function=True, method=True)
def hardshrink(input, lambd=0.5):  # noqa: A002
    _check_floating(input, "hardshrink_cpu")
    return run_op(OPS["hardshrink"], (input,), (_number(lambd),))


# --- binary and ternary element-wise functions ------------------------------------------------


def _check_floating_pair(name, input, other):  # noqa: A002
    if not input._dtype.is_floating_point and not other._dtype.is_floating_point:
        _check_floating(input if isinstance(input, Tensor) else other, name)


def _tensor_pair(name, kernel):
    """``torch.hypot(x, y)`` and ``x.hypot(y)``, and ``x.hypot_(y)`` where PyTorch has it: both
    operands tensors (a Python number is refused, naming its position), floating point."""
    spec = OPS[name]

    def run(input, other, position):  # noqa: A002
        _check_other(name, other, position)
        _check_floating_pair(kernel, input, other)
        return _binary(spec, input, other)

    def function(input, other):  # noqa: A002
        return run(input, other, 2)

    def method(self, other):
        return run(self, other, 1)

    function.__name__ = method.__name__ = name
    public(function=True, out=True)(function)
    public(method=True)(method)
    return function


hypot = _tensor_pair("hypot", "hypot_cpu")
logaddexp = _tensor_pair("logaddexp", "logaddexp_cpu")
logaddexp2 = _tensor_pair("logaddexp2", "logaddexp2_cpu")


@public(method=True)
def hypot_(input, other):  # noqa: A002
    _check_other("hypot_", other, 1)
    return run_inplace(OPS["hypot"], input, (_inplace_operand(input, other),))


@public(function=True, method=True, out=True)
def xlogy(input, other):  # noqa: A002
    if not isinstance(input, Tensor):
        return run_op(OPS["xlogy_scalar_self"], (_check_other("xlogy", other, 2),), (input,))
    if not isinstance(other, Tensor):
        return run_op(OPS["xlogy_scalar_other"], (input,), (_number(other),))
    return _binary(OPS["xlogy"], input, other)


@public(function=True, method=True)
def xlogy_(input, other):  # noqa: A002
    if not isinstance(other, Tensor):
        return run_inplace(OPS["xlogy_scalar_other"], input, (), (_number(other),))
    return run_inplace(OPS["xlogy"], input, (_inplace_operand(input, other),))


@public(function=True, method=True, out=True)
def copysign(input, other):  # noqa: A002
    if not isinstance(other, Tensor):
        return run_op(OPS["copysign_scalar"], (input,), (_number(other),))
    return _binary(OPS["copysign"], input, other)


@public(method=True)
def copysign_(input, other):  # noqa: A002
    if not isinstance(other, Tensor):
        return run_inplace(OPS["copysign_scalar"], input, (), (_number(other),))
    return run_inplace(OPS["copysign"], input, (_inplace_operand(input, other),))


def _check_lerp(input, end, weight):  # noqa: A002
    if not isinstance(end, Tensor):
        raise TypeError(
            "lerp() received an invalid combination of arguments - got (Tensor, "
            f"{type(end).__name__}, {type(weight).__name__}), but expected one of:\n"
            " * (Tensor input, Tensor end, Tensor weight, *, Tensor out = None)\n"
            " * (Tensor input, Tensor end, Number weight, *, Tensor out = None)\n"
        )
    expected = dtypes.CPP_TYPE_NAMES[input._dtype]
    if end._dtype is not input._dtype:
        raise RuntimeError(
            f"expected dtype {expected} for `end` but got dtype {dtypes.CPP_TYPE_NAMES[end._dtype]}"
        )
    if isinstance(weight, Tensor):
        if weight._dtype is not input._dtype and weight.dim() > 0:
            raise RuntimeError(
                f"expected dtype {expected} for `weight` but got dtype "
                f"{dtypes.CPP_TYPE_NAMES[weight._dtype]}"
            )
    else:
        _check_floating(input, "lerp_kernel_scalar")


def _lerp_weight(input, weight):  # noqa: A002
    """A 0-d weight of another dtype is used in input's (PyTorch casts it)."""
    if weight._dtype is not input._dtype:
        return weight.to(input._dtype)
    return weight


@public(function=True, method=True, out=True)
def lerp(input, end, weight):  # noqa: A002
    _check_lerp(input, end, weight)
    try:
        if isinstance(weight, Tensor):
            weight = _lerp_weight(input, weight)
            return run_op(OPS["lerp_tensor"], (input, end, weight))
        return run_op(OPS["lerp"], (input, end), (_number(weight),))
    except ValueError:
        raise _broadcast_error(input, end) from None


@public(method=True)
def lerp_(input, end, weight):  # noqa: A002
    _check_lerp(input, end, weight)
    end = _inplace_operand(input, end)
    if isinstance(weight, Tensor):
        weight = _inplace_operand(input, _lerp_weight(input, weight))
        return run_inplace(OPS["lerp_tensor"], input, (end, weight))
    return run_inplace(OPS["lerp"], input, (end,), (_number(weight),))


def _check_value(name, value):
    if isinstance(value, Tensor) and value.dim() > 0:  # a 0-d tensor is taken as a number
        raise TypeError(f"{name}(): argument 'value' must be Number, not Tensor")
    return _number(value)


def _check_addcdiv(tensor1, tensor2):
    if not tensor1._dtype.is_floating_point and not tensor2._dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes."
        )


def _ternary(name, input, tensor1, tensor2, value):  # noqa: A002
    try:
        return run_op(OPS[name], (input, tensor1, tensor2), (value,))
    except ValueError:
        shapes = (input.shape, tensor1.shape, tensor2.shape)
        raise _shapes_error_of(shapes) from None


def _shapes_error_of(shapes):
    first = shapes[0]
    for other in shapes[1:]:
        try:
            first = np.broadcast_shapes(first, other)
        except ValueError:
            return _shapes_error(tuple(first), tuple(other))
    return _shapes_error(tuple(shapes[0]), tuple(shapes[1]))


@public(function=True, method=True, out=True)
def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return _ternary("addcmul", input, tensor1, tensor2, _check_value("addcmul", value))


@public(method=True)
def addcmul_(input, tensor1, tensor2, *, value=1):  # noqa: A002
    value = _check_value("addcmul_", value)
    others = (_inplace_operand(input, tensor1), _inplace_operand(input, tensor2))
    return run_inplace(OPS["addcmul"], input, others, (value,))


@public(function=True, method=True, out=True)
def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    value = _check_value("addcdiv", value)
    _check_addcdiv(tensor1, tensor2)
    return _ternary("addcdiv", input, tensor1, tensor2, value)


@public(method=True)
def addcdiv_(input, tensor1, tensor2, *, value=1):  # noqa: A002
    value = _check_value("addcdiv_", value)
    _check_addcdiv(tensor1, tensor2)
    others = (_inplace_operand(input, tensor1), _inplace_operand(input, tensor2))
    return run_inplace(OPS["addcdiv"], input, others, (value,))


# --- unary functions with arguments -----------------------------------------------------------


@public(function=True, method=True, out=True)
def logit(input, eps=None):  # noqa: A002
    return run_op(OPS["logit"], (input,), (None if eps is None else float(eps),))


@public(function=True, method=True)
def logit_(input, eps=None):  # noqa: A002
    return run_inplace(OPS["logit"], input, (), (None if eps is None else float(eps),))


def _nan_to_num_attrs(input, nan, posinf, neginf):  # noqa: A002
    if input._dtype.is_floating_point:
        info = np.finfo(input._dtype.numpy)
        posinf = info.max if posinf is None else posinf
        neginf = info.min if neginf is None else neginf
    return (0.0 if nan is None else nan, posinf, neginf)


@public(function=True, method=True, out=True)
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    if not input._dtype.is_floating_point:
        return input.clone()
    return run_op(OPS["nan_to_num"], (input,), _nan_to_num_attrs(input, nan, posinf, neginf))


@public(function=True, method=True)
def nan_to_num_(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    if not input._dtype.is_floating_point:
        return input
    attrs = _nan_to_num_attrs(input, nan, posinf, neginf)
    return run_inplace(OPS["nan_to_num"], input, (), attrs)


# --- powers -----------------------------------------------------------------------------------


@public(method=True)
def pow_(input, exponent):  # noqa: A002
    if isinstance(exponent, Tensor):
        return run_inplace(OPS["pow_tensor"], input, (_inplace_operand(input, exponent),))
    exponent = _number(exponent)
    if isinstance(exponent, float) and not input._dtype.is_floating_point:
        raise RuntimeError(
            f"result type {dtypes.SCALAR_TYPE_NAMES[dtypes.get_default_dtype()]} can't be cast to "
            f"the desired output type {dtypes.SCALAR_TYPE_NAMES[input._dtype]}"
        )
    if isinstance(exponent, int) and exponent < 0 and not input._dtype.is_floating_point:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return run_inplace(OPS["pow"], input, (), (exponent,))


@public(function=True, method=True)
def square_(input):  # noqa: A002
    return pow_(input, 2)


def _double(value):
    if isinstance(value, Tensor):
        return value if value._dtype is dtypes.float64 else value.to(dtypes.float64)
    return float(value)


@public(function=True, method=True, out=True)
def float_power(input, exponent):  # noqa: A002
    """``pow`` in double precision: both operands cast to float64 first (ToCopyBackward0)."""
    from nbgrad.ops.functions.arithmetic import pow as power

    if not isinstance(input, Tensor):
        return power(float(input), _double(exponent))
    return power(_double(input), _double(exponent))


@public(method=True)
def float_power_(input, exponent):  # noqa: A002
    if input._dtype is not dtypes.float64:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {dtypes.SCALAR_TYPE_NAMES[input._dtype]} "
            "but the operation's result requires dtype Double"
        )
    return pow_(input, _double(exponent))


def _recorded_without_backward(name):
    spec = OPS[name + "_inplace"]

    def function(input):  # noqa: A002
        return run_inplace(spec, input)

    function.__name__ = function.__qualname__ = name + "_"
    return public(function=True, method=True)(function)


asinh_ = _recorded_without_backward("asinh")
acosh_ = _recorded_without_backward("acosh")
atanh_ = _recorded_without_backward("atanh")


# PyTorch's in-place aliases (torch.arcsin_, x.arcsin_()): the same functions under more names.
for _name, _alias in (
    ("asin_", "arcsin_"),
    ("acos_", "arccos_"),
    ("atan_", "arctan_"),
    ("asinh_", "arcsinh_"),
    ("acosh_", "arccosh_"),
    ("atanh_", "arctanh_"),
):
    declare(FUNCTIONS[_name], _alias, as_function=True, as_method=True)
