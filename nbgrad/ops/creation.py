"""Making tensors: ``tensor``, ``zeros``, ``randn``, ... and the random number generator."""

import math
import warnings

import numpy as np

from nbgrad import devices, dtypes, float_warnings, random
from nbgrad.autograd import errors
from nbgrad.autograd.tensor import Size, Tensor

_make = Tensor._make
# The default generator's NumPy generator: reseeding changes its state in place, so this object
# is the one stream every random function shares (nn.init and dropout read it directly).
_generator = np.random.default_rng(0)
default_generator = random.Generator._wrapping(_generator, 0)
rng_of = random.rng_of
manual_seed = random.manual_seed
seed = random.seed


def _check_requires_grad(dtype, requires_grad):
    if requires_grad and not dtype.is_floating_point:
        text = errors.ONLY_FLOAT_REQUIRES_GRAD
        raise RuntimeError(text[0].upper() + text[1:])


def _finish(array, dtype, requires_grad):
    if dtype is not None:
        array = array.astype(dtypes.to_dtype(dtype).numpy, copy=False)
    t = _make(array)
    _check_requires_grad(t._dtype, requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


_SEQUENCES = (list, tuple, range)


def _element_dtype(value):
    """The dtype PyTorch infers for one number of the data (a NumPy number keeps its own)."""
    if isinstance(value, Tensor):
        if value._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return value._dtype
    if isinstance(value, np.generic):
        return dtypes.from_numpy_dtype(value.dtype)
    if isinstance(value, bool):
        return dtypes.bool
    if isinstance(value, int):
        return dtypes.int64
    if isinstance(value, float):
        return dtypes.get_default_dtype()
    if isinstance(value, str):
        raise TypeError("new(): invalid data type 'str'")
    raise RuntimeError(f"Could not infer dtype of {type(value).__name__}")


def _is_sequence(value):
    return isinstance(value, _SEQUENCES) or (isinstance(value, np.ndarray) and value.ndim)


def _data_dtype(data):
    """Check that nested lists are rectangular, as PyTorch does, and infer their dtype: the
    promotion of every element's dtype (Python floats give the default float, ints int64)."""
    sizes = []
    first = data
    while _is_sequence(first):
        sizes.append(len(first))
        if not len(first):
            break
        first = first[0]
    found = set()

    def walk(value, dim):
        if dim == len(sizes):
            found.add(_element_dtype(value))
            return
        if not _is_sequence(value):
            raise TypeError("not a sequence")
        if len(value) != sizes[dim]:
            raise ValueError(
                f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(value)})"
            )
        for item in value:
            walk(item, dim + 1)

    walk(data, 0)
    result = dtypes.get_default_dtype() if not found else None
    for d in found:
        result = d if result is None else dtypes.promote_types(result, d)
    return result


def _plain(data):
    """Nested lists with tensors inside become nested lists of numbers."""
    if isinstance(data, Tensor):
        return data._data.reshape(()).item()
    if isinstance(data, _SEQUENCES):
        return [_plain(d) for d in data]
    return data


def tensor(data, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    float_warnings.keep_first()  # torch.tensor([1e308]) is inf in float32, without a word
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than "
            "torch.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
        array = data._data.copy()
    elif isinstance(data, np.ndarray):
        array = np.array(data)
        dtypes.from_numpy_dtype(array.dtype)
    else:
        inferred = _data_dtype(data)
        target = dtypes.to_dtype(dtype) if dtype is not None else inferred
        array = np.array(_plain(data), dtype=target.numpy)
    target = dtypes.to_dtype(dtype) if dtype is not None else dtypes.from_numpy_dtype(array.dtype)
    _check_requires_grad(target, requires_grad)
    return _finish(array, dtype, requires_grad)


def as_tensor(data, dtype=None, device=None):
    devices.check(device)
    if isinstance(data, Tensor) and (dtype is None or dtypes.to_dtype(dtype) is data._dtype):
        return data
    if isinstance(data, Tensor):  # another dtype: a differentiable copy (ToCopyBackward0)
        return data.to(dtypes.to_dtype(dtype))
    if isinstance(data, np.ndarray):
        return _finish(np.asarray(data), dtype, False)
    return tensor(data, dtype=dtype)


def from_numpy(array):
    dtypes.from_numpy_dtype(array.dtype)
    return _make(array)


def _size(size, zeros=False):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    for s in size:
        if s < 0:
            if zeros:
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: "
                f"[{', '.join(map(str, size))}]"
            )
    return size


def _filled(fill, size, dtype, requires_grad, zeros=False):
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _finish(fill(_size(size, zeros), dtype.numpy), None, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    return _filled(np.zeros, size, dtype, requires_grad, zeros=True)


def ones(*size, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    return _filled(np.ones, size, dtype, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    return _filled(np.zeros, size, dtype, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    if dtype is None:
        dtype = (
            dtypes.bool
            if isinstance(fill_value, bool)
            else dtypes.int64
            if isinstance(fill_value, int)
            else dtypes.get_default_dtype()
        )
    dtype = dtypes.to_dtype(dtype)
    return _finish(np.full(_size((size,)), fill_value, dtype.numpy), None, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    for name, value in (("n", n), ("m", m)):
        if value is not None and value < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {value}")
    return _finish(np.eye(n, m, dtype=dtype.numpy), None, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    if end is None:
        start, end = 0, start
    numbers = (start, end, step)
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in numbers)
        dtype = dtypes.int64 if is_int else dtypes.get_default_dtype()
    dtype = dtypes.to_dtype(dtype)
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    return _finish(np.arange(start, end, step).astype(dtype.numpy), None, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return _finish(np.linspace(start, end, steps).astype(dtype.numpy), None, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    rng = rng_of(generator)
    return _finish(rng.random(_size(size)).astype(dtype.numpy), None, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    rng = rng_of(generator)
    return _finish(rng.standard_normal(_size(size)).astype(dtype.numpy), None, requires_grad)


def _integers(rng, low, high, shape, dtype):
    """Integers in ``[low, high)``, as ``random_(low, high)`` draws them."""
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    return rng.integers(low, high, shape).astype(dtype.numpy)


def randint(
    low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
):
    """``randint(high, size)`` or ``randint(low, high, size)``, as in PyTorch."""
    devices.check(device)
    if size is None:
        if not isinstance(high, (tuple, list, Size)):
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    _check_requires_grad(dtype, requires_grad)
    values = _integers(rng_of(generator), low, high, _size((size,)), dtype)
    return _finish(values, None, requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    devices.check(device)
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    _size((n,))
    _check_requires_grad(dtype, requires_grad)
    return _finish(rng_of(generator).permutation(n).astype(dtype.numpy), None, requires_grad)


def _like(function, random=False):
    def like(input, dtype=None, device=None, requires_grad=False, **generator):  # noqa: A002
        devices.check(device)
        if generator and (not random or set(generator) != {"generator"}):
            raise TypeError(
                f"{function.__name__}_like() got an unexpected keyword argument "
                f"'{next(iter(generator))}'"
            )
        return function(
            *input._data.shape,
            dtype=dtype or input._dtype,
            requires_grad=requires_grad,
            **generator,
        )

    like.__name__ = function.__name__ + "_like"
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
rand_like = _like(rand, random=True)
randn_like = _like(randn, random=True)


def randint_like(
    input,
    low=0,
    high=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad=False,  # noqa: A002
):
    if high is None:
        low, high = 0, low
    return randint(
        low,
        high,
        input._data.shape,
        generator=generator,
        dtype=dtype or input._dtype,
        device=device,
        requires_grad=requires_grad,
    )


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):  # noqa: A002
    devices.check(device)
    return full(
        input._data.shape, fill_value, dtype=dtype or input._dtype, requires_grad=requires_grad
    )


def rebuild_tensor(data, requires_grad):
    t = _make(data)
    t._requires_grad = requires_grad
    return t


def install():
    Tensor.new_zeros = lambda self, *size, **kw: zeros(*size, **{"dtype": self._dtype, **kw})
    Tensor.new_ones = lambda self, *size, **kw: ones(*size, **{"dtype": self._dtype, **kw})
