"""Functions of a float's parts: ``nextafter``, ``ldexp`` and ``frexp`` (with their methods and
in-place variants as PyTorch has them). ``fmax``, ``fmin`` and ``angle`` are made from their table
entries' flags."""

from collections import namedtuple

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _binary, _check_tensor
from nbgrad.ops.functions.inplace import _inplace_operand
from nbgrad.ops.public import public

FrexpResult = namedtuple("frexp", ("mantissa", "exponent"))


def _check_nextafter(input, other):  # noqa: A002
    common = dtypes.promote_types(input.dtype, other.dtype)
    if not common.is_floating_point:
        raise NotImplementedError(
            f"\"nextafter_cpu\" not implemented for '{dtypes.name_of(common.numpy)}'"
        )


@public(function=True, method=True, out=True)
def nextafter(input, other):  # noqa: A002 - PyTorch's argument names
    _check_tensor(input)
    _check_tensor(other, "other")
    _check_nextafter(input, other)
    return _binary(OPS["nextafter"], input, other)


@public(method=True)
def nextafter_(input, other):  # noqa: A002
    _check_nextafter(input, other)
    return run_inplace(OPS["nextafter"], input, (_inplace_operand(input, other),))


@public(function=True, method=True, out=True)
def ldexp(input, other):  # noqa: A002
    _check_tensor(input)
    _check_tensor(other, "other")
    return _binary(OPS["ldexp"], input, other)


@public(function=True, method=True)
def ldexp_(input, other):  # noqa: A002
    return run_inplace(OPS["ldexp"], input, (_inplace_operand(input, other),))


@public(function=True, method=True)
def frexp(input):  # noqa: A002
    _check_tensor(input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = run_op(OPS["frexp"], (input,))
    return FrexpResult(mantissa, exponent)


def _fmax_fmin(name):
    def function(input, other):  # noqa: A002
        _check_tensor(input)
        _check_tensor(other, "other")
        return _binary(OPS[name], input, other)

    function.__name__ = function.__qualname__ = name
    return public(function=True, method=True, out=True)(function)


fmax = _fmax_fmin("fmax")
fmin = _fmax_fmin("fmin")
