"""Tensor dtypes, named and printed as PyTorch names them (``torch.float32``), backed by NumPy."""

import builtins

import numpy as np


class dtype:  # noqa: N801 - PyTorch's spelling, so `torch.dtype` works unchanged
    __slots__ = ("name", "numpy", "is_floating_point", "is_signed", "itemsize", "_category")

    def __init__(self, name, numpy_dtype, category):
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = category == 2
        self.is_signed = category != 0 and name != "uint8"
        self.itemsize = self.numpy.itemsize
        # 0 bool < 1 integer < 2 floating: the order PyTorch's type promotion climbs.
        self._category = category

    def __repr__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return self.name


bool = dtype("bool", np.bool_, 0)  # noqa: A001 - PyTorch exports `torch.bool`
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)

ALL = (bool, uint8, int8, int16, int32, int64, float16, float32, float64)
_BY_NUMPY = {d.numpy: d for d in ALL}

# Names of the legacy tensor types that PyTorch's error messages print ("torch.FloatTensor").
LEGACY_TYPE_NAMES = {
    bool: "BoolTensor",
    uint8: "ByteTensor",
    int8: "CharTensor",
    int16: "ShortTensor",
    int32: "IntTensor",
    int64: "LongTensor",
    float16: "HalfTensor",
    float32: "FloatTensor",
    float64: "DoubleTensor",
}

# How PyTorch's C++ messages name a dtype: its ScalarType ("Float") and its C++ type ("float").
SCALAR_TYPE_NAMES = {d: name[: -len("Tensor")] for d, name in LEGACY_TYPE_NAMES.items()}
CPP_TYPE_NAMES = {
    bool: "bool",
    uint8: "unsigned char",
    int8: "signed char",
    int16: "short int",
    int32: "int",
    int64: "long int",
    float16: "c10::Half",
    float32: "float",
    float64: "double",
}

_default_float = float32


def get_default_dtype():
    return _default_float


def set_default_dtype(d):
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_float = d


def name_of(value):
    """PyTorch's short name of a dtype as its messages write it (Float, Double, Long): of an
    nbgrad dtype, a NumPy dtype, or a tensor."""
    value = getattr(value, "_dtype", value)  # a Tensor: its dtype
    if not isinstance(value, dtype):
        value = from_numpy_dtype(value)
    return SCALAR_TYPE_NAMES[value]


def from_numpy_dtype(np_dtype):
    """The nbgrad dtype for a NumPy dtype; float64 arrays stay float64, as torch.from_numpy does."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).name}. The only supported "
            "types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


def to_dtype(d):
    """Accept an nbgrad dtype, a NumPy dtype or a Python type (float, int, bool)."""
    if isinstance(d, dtype):
        return d
    if d is builtins.float:
        return _default_float
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool
    return from_numpy_dtype(d)


def promote_types(a, b):
    """PyTorch's promote_types for the dtypes nbgrad has."""
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    if a._category == 1 and {a.name, b.name} == {"uint8", "int8"}:
        return int16
    return a if a.itemsize >= b.itemsize else b


half = float16
float = float32  # noqa: A001
double = float64
short = int16
int = int32  # noqa: A001
long = int64
