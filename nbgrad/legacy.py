"""PyTorch's legacy constructors: ``torch.Tensor(2, 3)``, ``torch.FloatTensor([1, 2])``,
``x.new(...)``, ``x.type(torch.DoubleTensor)`` and ``torch.autograd.Variable``.

``torch.FloatTensor`` and friends are not classes of their own tensors: what they make is a plain
``Tensor`` (as in PyTorch), and ``isinstance(t, torch.FloatTensor)`` asks for the dtype.
Uninitialised memory (``torch.Tensor(2, 3)``, ``x.new(2)``) is given zeros.
"""

import warnings

import numpy as np

from nbgrad import devices, dtypes
from nbgrad.autograd import errors
from nbgrad.autograd.tensor import Size, Tensor
from nbgrad.ops import creation

_SIGNATURES = (
    " * (*, torch.device device = None)\n",
    " * (torch.Storage storage)\n",
    " * (Tensor other)\n",
    " * (tuple of ints size, *, torch.device device = None)\n",
    " * (object data, *, torch.device device = None)\n",
)


def _argument_type_name(value):
    if isinstance(value, Size):
        return "torch.Size"
    if isinstance(value, dtypes.dtype):
        return "torch.dtype"
    return type(value).__name__


def _parsed_name(value):
    """How PyTorch's argument parser describes a value it could not match: lists with the
    types of their elements (``list of [int]``)."""
    if isinstance(value, (list, tuple)):
        names = dict.fromkeys(_argument_type_name(v) for v in value)
        return f"{_argument_type_name(value)} of [{', '.join(names)}]"
    return _argument_type_name(value)


def _bad_keywords(args, kwargs):
    got = ", ".join(
        [_argument_type_name(a) for a in args]
        + [f"{k}={_argument_type_name(v)}" for k, v in kwargs.items()]
    )
    wrong = ", ".join(k for k in kwargs if k != "device")
    return TypeError(
        f"new() received an invalid combination of arguments - got ({got}), but expected one "
        f"of:\n{_SIGNATURES[0]}      didn't match because some of the keywords were incorrect: "
        f"{wrong}\n" + "".join(_SIGNATURES[1:])
    )


def _options(dtype):
    return (
        f"TensorOptions(dtype={dtypes.CPP_TYPE_NAMES[dtype]}, device=cpu, layout=Strided, "
        "requires_grad=false (default), pinned_memory=false (default), "
        "memory_format=(nullopt))"
    )


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def new(dtype, args, kwargs, any_tensor=False):
    """What ``torch.<Type>Tensor(*args, **kwargs)`` (and ``x.new``) makes, of ``dtype``.
    ``any_tensor``: a tensor argument is returned whatever its dtype (``torch.Tensor(t)``)."""
    if set(kwargs) - {"device"}:
        raise _bad_keywords(args, kwargs)
    devices.legacy_check(kwargs.get("device"))
    if not args:
        return creation.zeros(0, dtype=dtype)
    if len(args) == 1:
        (data,) = args
        if isinstance(data, Tensor):
            if not any_tensor and data._dtype is not dtype:
                raise TypeError(f"expected {_options(dtype)} (got {_options(data._dtype)})")
            return Tensor._make(data._data)
        if isinstance(data, Size) or _is_int(data):
            return creation.empty(*((data,) if _is_int(data) else data), dtype=dtype)
        if isinstance(data, (float, bool, complex)):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        if isinstance(data, np.ndarray):
            return creation.as_tensor(np.array(data), dtype=dtype)
        creation._data_dtype(data)  # PyTorch's checks of the nesting and the elements
        return Tensor._make(np.array(creation._plain(data), dtype=dtype.numpy))
    if all(_is_int(a) for a in args):
        return creation.empty(*args, dtype=dtype)
    got = ", ".join(_argument_type_name(a) for a in args)
    raise TypeError(
        f"new() received an invalid combination of arguments - got ({got}), but expected one "
        f"of:\n{_SIGNATURES[0]}      didn't match because some of the arguments have invalid "
        f"types: ({', '.join(f'!{_parsed_name(a)}!' for a in args)})\n" + "".join(_SIGNATURES[1:])
    )


class _LegacyTensorType(type):
    """The type of ``torch.FloatTensor`` and friends: calling one makes a tensor of its dtype,
    ``isinstance`` asks a tensor for that dtype."""

    def __call__(cls, *args, **kwargs):
        return new(cls.dtype, args, kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj._dtype is cls.dtype

    def __subclasscheck__(cls, sub):
        return sub is cls


LEGACY_TYPES = {}
for _dtype, _name in dtypes.LEGACY_TYPE_NAMES.items():
    LEGACY_TYPES[_name] = _LegacyTensorType(
        _name, (), {"dtype": _dtype, "is_cuda": False, "is_sparse": False, "__module__": "nbgrad"}
    )
    LEGACY_TYPES[_name].__module__ = "torch"  # repr: <class 'torch.FloatTensor'>, as PyTorch
del _dtype, _name


def tensor_new(cls, *args, **kwargs):
    """``torch.Tensor(...)``: the legacy constructor of the default dtype."""
    return new(dtypes.get_default_dtype(), args, kwargs, any_tensor=True)


def new_method(self, *args, **kwargs):
    """``x.new(...)``: the legacy constructor of ``x``'s dtype."""
    return new(self._dtype, args, kwargs)


def resolve_type(target):
    """The dtype ``x.type(target)`` converts to: a dtype, a legacy type, or its name."""
    if isinstance(target, dtypes.dtype):
        return target
    if target is Tensor:
        return dtypes.get_default_dtype()
    if isinstance(target, _LegacyTensorType):
        return target.dtype
    name = target if isinstance(target, str) else getattr(target, "__name__", repr(target))
    if isinstance(target, str) and target.startswith("torch."):
        legacy = LEGACY_TYPES.get(target[len("torch.") :])
        if legacy is not None:
            return legacy.dtype
    raise ValueError(f"invalid type: '{name}'")


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return creation.full(
        size, fill_value, dtype=dtype or self._dtype, device=device, requires_grad=requires_grad
    )


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return creation.empty(
        *size, dtype=dtype or self._dtype, device=device, requires_grad=requires_grad
    )


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than "
            "tensor.new_tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
        return creation._finish(data._data.copy(), dtype or self._dtype, requires_grad)
    return creation.tensor(
        data, dtype=dtype or self._dtype, device=device, requires_grad=requires_grad
    )


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """``torch.autograd.Variable(t, requires_grad=False)``: long merged into Tensor; it makes a
    new leaf tensor sharing ``t``'s data."""

    def __new__(cls, data=None, requires_grad=False, volatile=False, **kwargs):
        for keyword in kwargs:
            raise TypeError(f"'{keyword}' is an invalid keyword argument for this function")
        if data is None:
            return creation.zeros(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        out = Tensor._make(data._data)
        out._version_counter = data._version_counter
        if requires_grad:
            if not data._dtype.is_floating_point:
                text = errors.ONLY_FLOAT_REQUIRES_GRAD
                raise RuntimeError(text[0].upper() + text[1:])
            out.requires_grad_(True)
        return out


Variable.__module__ = "torch.autograd.variable"


def install():
    Tensor.__new__ = staticmethod(tensor_new)
    Tensor.new = new_method
    Tensor.new_full = new_full
    Tensor.new_empty = new_empty
    Tensor.new_tensor = new_tensor
