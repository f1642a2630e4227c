"""Making tensors: ``tensor``, ``zeros``, ``randn``, ... and the random number generator."""

import warnings

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd import errors, grad_mode
from nbgrad.autograd.tensor import Tensor

_make = Tensor._make
_generator = np.random.default_rng(0)


def manual_seed(seed):
    """Seed nbgrad's generator (NumPy's PCG64: the numbers differ from PyTorch's)."""
    global _generator
    _generator = np.random.default_rng(int(seed))
    return _generator


def seed():
    global _generator
    _generator = np.random.default_rng()


def _finish(array, dtype, requires_grad):
    if dtype is not None:
        array = array.astype(dtypes.to_dtype(dtype).numpy, copy=False)
    t = _make(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _inferred(array, from_python):
    """PyTorch's dtype for data: Python floats give the default float, ints int64."""
    kind = array.dtype.kind
    if kind == "f" and from_python:
        return array.astype(dtypes.get_default_dtype().numpy)
    if kind in "iu" and from_python:
        return array.astype(np.int64)
    if kind == "O":
        raise TypeError(
            "can't convert this data to a tensor: expected numbers or nested lists of numbers"
        )
    return array


def _plain(data):
    """Nested lists with tensors inside become nested lists of numbers."""
    if isinstance(data, Tensor):
        return data._data.tolist()
    if isinstance(data, (list, tuple)):
        return [_plain(d) for d in data]
    return data


def tensor(data, dtype=None, device=None, requires_grad=False):
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
        array = _inferred(array, from_python=False)
    else:
        array = _inferred(np.array(_plain(data)), from_python=True)
    if requires_grad:
        target = (
            dtypes.to_dtype(dtype) if dtype is not None else dtypes.from_numpy_dtype(array.dtype)
        )
        if not target.is_floating_point:
            raise RuntimeError(
                errors.ONLY_FLOAT_REQUIRES_GRAD[0].upper() + errors.ONLY_FLOAT_REQUIRES_GRAD[1:]
            )
    return _finish(array, dtype, requires_grad)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or dtypes.to_dtype(dtype) is data._dtype):
        return data
    if isinstance(data, np.ndarray):
        return _finish(np.asarray(data), dtype, False)
    return tensor(data, dtype=dtype)


def from_numpy(array):
    dtypes.from_numpy_dtype(array.dtype)
    return _make(array)


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _filled(fill, size, dtype, requires_grad, default=None):
    dtype = dtypes.to_dtype(dtype) if dtype is not None else (default or dtypes.get_default_dtype())
    return _finish(fill(_size(size), dtype.numpy), None, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.zeros, size, dtype, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.ones, size, dtype, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.zeros, size, dtype, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
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
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _finish(np.eye(n, m, dtype=dtype.numpy), None, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    numbers = (start, end, step)
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in numbers)
        dtype = dtypes.int64 if is_int else dtypes.get_default_dtype()
    dtype = dtypes.to_dtype(dtype)
    return _finish(np.arange(start, end, step).astype(dtype.numpy), None, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _finish(np.linspace(start, end, steps).astype(dtype.numpy), None, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    rng = generator or _generator
    return _finish(rng.random(_size(size)).astype(dtype.numpy), None, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    rng = generator or _generator
    return _finish(rng.standard_normal(_size(size)).astype(dtype.numpy), None, requires_grad)


def randint(low, high=None, size=(), dtype=None, device=None, requires_grad=False):
    if high is None:
        low, high = 0, low
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    return _finish(
        _generator.integers(low, high, _size((size,))).astype(dtype.numpy), None, requires_grad
    )


def randperm(n, dtype=None, device=None):
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    return _make(_generator.permutation(n).astype(dtype.numpy))


def _like(function):
    def like(input, dtype=None, device=None, requires_grad=False):  # noqa: A002
        return function(
            *input._data.shape, dtype=dtype or input._dtype, requires_grad=requires_grad
        )

    like.__name__ = function.__name__ + "_like"
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
rand_like = _like(rand)
randn_like = _like(randn)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):  # noqa: A002
    return full(
        input._data.shape, fill_value, dtype=dtype or input._dtype, requires_grad=requires_grad
    )


def _fill_from(tensor, values):
    """Random in-place initialisers write without recording; like PyTorch they refuse a leaf
    that requires grad unless grad mode is off (``nn.init`` turns it off)."""
    if tensor._requires_grad and tensor._grad_fn is None and grad_mode._enabled:
        raise RuntimeError(errors.LEAF_INPLACE)
    tensor._data[...] = values
    tensor._version_counter.value += 1
    return tensor


def uniform_(self, a=0.0, b=1.0):
    return _fill_from(self, _generator.uniform(a, b, self._data.shape))


def normal_(self, mean=0.0, std=1.0):
    return _fill_from(self, _generator.normal(mean, std, self._data.shape))


def _rebuild(data, requires_grad):
    t = _make(data)
    t._requires_grad = requires_grad
    return t


def install():
    Tensor.uniform_ = uniform_
    Tensor.normal_ = normal_
    Tensor.new_zeros = lambda self, *size, **kw: zeros(*size, **{"dtype": self._dtype, **kw})
    Tensor.new_ones = lambda self, *size, **kw: ones(*size, **{"dtype": self._dtype, **kw})
    Tensor.new_tensor = lambda self, data, **kw: tensor(data, **{"dtype": self._dtype, **kw})
