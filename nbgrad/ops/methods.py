"""Tensor methods and operators: ``x.exp()``, ``x + y``, ``x[0] = v``, all calling ``functions``.

The methods that are a function with the tensor first are declared beside their function (see
``ops/public.py``); this module binds them, and defines the operators and the methods that exist
only as methods (``x.float()``, ``x.view_as(y)``, ``x.to(...)``).
"""

from nbgrad import devices, dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops import functions as F
from nbgrad.ops import public
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions import comparison, indexing, inplace, more_elementwise
from nbgrad.ops.functions._common import _PYTHON_NUMBERS, _broadcast_error, _operand
from nbgrad.ops.functions.arithmetic import _check_sub, rdiv
from nbgrad.warn_once import warn_once


def _reflected(function):
    def method(self, other):
        if type(other) not in _PYTHON_NUMBERS and not isinstance(other, Tensor):
            try:
                other = _operand(other)
            except TypeError:
                return NotImplemented
        return function(self, other)

    return method


def _arithmetic(spec_name, attrs=(), check=None):
    """``x + y``-style operators straight to the op table: the hottest path of all. ``check``
    raises PyTorch's error for operands the op refuses (``-`` on bools)."""
    spec = OPS[spec_name]

    def operator(self, other):
        if type(other) not in _PYTHON_NUMBERS and not isinstance(other, Tensor):
            try:
                other = _operand(other)
            except TypeError:
                return NotImplemented
        if check is not None:
            check(self, other)
        try:
            return run_op(spec, (self, other), attrs)
        except ValueError:
            raise _broadcast_error(self, other) from None

    operator.__name__ = f"__{spec_name}__"
    return operator


def _swapped(function):
    """``other <op> self`` for an operator that is not symmetric (``2 // x``)."""

    def method(self, other):
        try:
            other = _operand(other)
        except TypeError:
            return NotImplemented
        return function(other, self)

    return method


def _inplace_operator(function):
    def method(self, other):
        return function(self, other)

    return method


def _matmul(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return F.matmul(self, other)


def _rmatmul(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return F.matmul(other, self)


def _rsub(self, other):
    try:
        other = _operand(other)
    except TypeError:
        return NotImplemented
    return F.rsub(self, other)


def _rtruediv(self, other):
    try:
        other = _operand(other)
    except TypeError:
        return NotImplemented
    return rdiv(self, other)


def _rpow(self, other):
    try:
        other = _operand(other)
    except TypeError:
        return NotImplemented
    return F.pow(other, self)


OPERATORS = {
    "__add__": _arithmetic("add"),
    "__radd__": _arithmetic("add"),
    "__sub__": _arithmetic("sub", check=_check_sub),
    "__rsub__": _rsub,
    "__mul__": _arithmetic("mul"),
    "__rmul__": _arithmetic("mul"),
    "__truediv__": _arithmetic("div"),
    "__rtruediv__": _rtruediv,
    "__pow__": _reflected(F.pow),
    "__rpow__": _rpow,
    "__matmul__": _matmul,
    "__rmatmul__": _rmatmul,
    "__neg__": F.neg,
    "__pos__": lambda self: self,
    "__abs__": F.abs,
    "__floordiv__": _reflected(comparison.floor_divide),
    "__rfloordiv__": _swapped(comparison.floor_divide),
    "__mod__": _reflected(comparison.remainder),
    "__rmod__": _swapped(comparison.remainder),
    "__eq__": _reflected(F.eq),
    "__ne__": _reflected(F.ne),
    "__lt__": _reflected(F.lt),
    "__le__": _reflected(F.le),
    "__gt__": _reflected(F.gt),
    "__ge__": _reflected(F.ge),
    "__and__": _reflected(comparison.bitwise_and),
    "__rand__": _reflected(comparison.bitwise_and),
    "__or__": _reflected(comparison.bitwise_or),
    "__ror__": _reflected(comparison.bitwise_or),
    "__xor__": _reflected(comparison.bitwise_xor),
    "__rxor__": _reflected(comparison.bitwise_xor),
    "__invert__": comparison.bitwise_not,
    "__iadd__": _inplace_operator(inplace.add_),
    "__isub__": _inplace_operator(inplace.sub_),
    "__imul__": _inplace_operator(inplace.mul_),
    "__itruediv__": _inplace_operator(inplace.div_),
    "__imod__": _inplace_operator(inplace.remainder_),
    "__ifloordiv__": _inplace_operator(comparison.floor_divide_),
    "__ipow__": _inplace_operator(more_elementwise.pow_),
    "__iand__": _inplace_operator(comparison.bitwise_and_),
    "__ior__": _inplace_operator(comparison.bitwise_or_),
    "__ixor__": _inplace_operator(comparison.bitwise_xor_),
    "__getitem__": indexing.getitem,
    "__setitem__": indexing.setitem,
}

# Methods with no function of their own: conversions, and the ``*_as`` spellings.
METHOD_ONLY = {
    "view_as": lambda self, other: self.view(other._data.shape),
    # the address of the first element (0 for an empty tensor, as PyTorch's)
    "data_ptr": lambda self: self._data.ctypes.data if self._data.size else 0,
    "reshape_as": lambda self, other: F.reshape(self, other._data.shape),
    "expand_as": lambda self, other: F.expand(self, other._data.shape),
    "type_as": lambda self, other: F.to_dtype(self, other._dtype),
    "float": lambda self: F.to_dtype(self, dtypes.float32),
    "double": lambda self: F.to_dtype(self, dtypes.float64),
    "half": lambda self: F.to_dtype(self, dtypes.float16),
    "long": lambda self: F.to_dtype(self, dtypes.int64),
    "int": lambda self: F.to_dtype(self, dtypes.int32),
    "bool": lambda self: F.to_dtype(self, dtypes.bool),
}


def _to(self, *args, **kwargs):
    """``x.to(dtype)``, ``x.to("cpu")``, ``x.to(other)``, ``x.to("cpu", torch.float64)``."""
    target = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            target = arg._dtype
        elif isinstance(arg, (str, int, devices.device)) and not isinstance(arg, bool):
            device = arg
        elif arg is not None:
            target = arg
    if device is not None:
        devices.check(device)
    result = self if target is None else F.to_dtype(self, target)
    return F.clone(result) if copy and result is self else result


# PyTorch's deprecation warnings for ``x.T``, given once per process as its TORCH_WARN_ONCE
# gives them (without its "(Triggered internally at <its build path>)" suffix).
T_WARNINGS = {
    "other": (
        "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
        "deprecated and it will throw an error in a future release. Consider `x.mT` to "
        "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
        "reverse the dimensions of a tensor."
    ),
    "0-d": "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
}


def _transposed(self):
    """``x.T``: all dims reversed, recorded as PermuteBackward0 as in PyTorch (a new view even
    for a vector or a 0-d tensor)."""
    ndim = self.dim()
    kind = "0-d" if ndim == 0 else "other" if ndim > 2 else None
    if kind is not None:
        warn_once(T_WARNINGS[kind])
    return F.permute(self, tuple(reversed(range(ndim))))


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """``x.type()``: its legacy type's name; ``x.type(torch.DoubleTensor)``: converted."""
    from nbgrad.legacy import resolve_type

    if dtype is None:
        return f"torch.{dtypes.LEGACY_TYPE_NAMES[self._dtype]}"
    return F.to_dtype(self, resolve_type(dtype))


def install():
    for name, function in OPERATORS.items():
        setattr(Tensor, name, function)
    for name, function in public.METHODS.items():
        setattr(Tensor, name, function)
    for name, function in METHOD_ONLY.items():
        setattr(Tensor, name, function)
    Tensor.to = _to
    Tensor.type = _type
    Tensor.T = property(_transposed)
    Tensor.mT = property(lambda self: F.transpose(self, -2, -1))
    Tensor.__hash__ = object.__hash__
