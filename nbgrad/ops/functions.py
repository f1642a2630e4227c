"""The tensor operations users call (``nbgrad.exp``, ``x.sum(0)``, ``a @ b``), on top of the table.

Each function checks and normalises its arguments the way PyTorch does (dims, shapes, Python
numbers, error messages) and then runs one or a few entries of ``derivatives.OPS``. Where PyTorch
builds an operation from smaller ones (``matmul`` from ``mm``/``mv``/``bmm``, indexing from
``select``/``slice``/``index``), so do we, so that the graph shows the same nodes.
"""

import builtins
import collections
import numbers

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import result_dtype, run_inplace, run_op
from nbgrad.autograd.tensor import Tensor, _wrap_dim
from nbgrad.ops.derivatives import OPS

INT64_MAX = 9223372036854775807

_make = Tensor._make


_PYTHON_NUMBERS = (int, float, bool)


def _operand(value):
    """A Tensor stays a Tensor, a Python or NumPy number becomes a Python number."""
    if type(value) in _PYTHON_NUMBERS or isinstance(value, Tensor):
        return value
    if isinstance(value, np.generic):
        # np.float64 is a float, but NumPy would let it widen a float32 array: unwrap it.
        return value.item()
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, np.ndarray):
        return _make(value)
    raise TypeError(f"unsupported operand type for a tensor operation: {type(value).__name__}")


def _check_tensor(value, name="input"):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a Tensor, not {type(value).__name__}")
    return value


def _broadcast_error(a, b):
    shape_a = a._data.shape if isinstance(a, Tensor) else ()
    shape_b = b._data.shape if isinstance(b, Tensor) else ()
    return _shapes_error(shape_a, shape_b)


def _shapes_error(shape_a, shape_b):
    for offset in range(1, builtins.min(len(shape_a), len(shape_b)) + 1):
        sa, sb = shape_a[-offset], shape_b[-offset]
        if sa != sb and sa != 1 and sb != 1:
            dim = builtins.max(len(shape_a), len(shape_b)) - offset
            return RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                f"non-singleton dimension {dim}"
            )
    return RuntimeError(f"shapes {list(shape_a)} and {list(shape_b)} cannot be broadcast together")


def _fresh(result):
    """The result of an op that PyTorch writes into a new C-contiguous tensor, whatever the
    layout of its input (reductions over a dim, softmax, cat, masked_fill). NumPy may follow a
    transposed input instead, and the layout decides what view() and reshape() do next."""
    if not result._data.flags.c_contiguous:
        result._data = np.ascontiguousarray(result._data)
    return result


def _binary(spec, a, b, attrs=()):
    a, b = _operand(a), _operand(b)
    try:
        return run_op(spec, (a, b), attrs)
    except ValueError:
        raise _broadcast_error(a, b) from None


# --- arithmetic --------------------------------------------------------------------------------


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


def rsub(input, other, *, alpha=1):  # noqa: A002
    """``other - alpha * input`` for a Python number ``other``: PyTorch's RsubBackward1."""
    _check_sub(other, input)
    if isinstance(other, Tensor):
        return sub(other, input, alpha=alpha)
    other = _operand(other)
    return run_op(OPS["rsub"], (_promoted(input, other),), (other, alpha))


def mul(input, other):  # noqa: A002
    return _binary(OPS["mul"], input, other)


def div(input, other, *, rounding_mode=None):  # noqa: A002
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    if rounding_mode is not None:
        return _binary(OPS["div_rounded"], input, other, (rounding_mode,))
    return _binary(OPS["div"], input, other)


def rdiv(input, other):  # noqa: A002
    """``other / input`` for a number ``other``: PyTorch computes ``reciprocal(input) * other``."""
    return mul(reciprocal(input), other)


def neg(input):  # noqa: A002
    if input._dtype is dtypes.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
            "invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return run_op(OPS["neg"], (input,))


def pow(input, exponent):  # noqa: A001, A002
    if not isinstance(input, Tensor):
        base = _operand(input)
        exponent = _promoted(_check_tensor(exponent, "exponent"), base)
        _check_bool_pow(base, exponent)
        return _fresh(run_op(OPS["rpow"], (exponent,), (base,)))
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
minimum, minimum_method = _tensors_only("minimum")


def _array(value):
    return value._data if isinstance(value, Tensor) else np.asarray(value)


# --- element-wise functions ---------------------------------------------------------------------


def _unary(name):
    spec = OPS[name]

    def function(input):  # noqa: A002
        if not isinstance(input, Tensor):
            _check_tensor(input)
        return run_op(spec, (input,))

    function.__name__ = name
    function.__doc__ = f"Element-wise {name}; its backward is ``{spec.grads['self']}``."
    return function


exp = _unary("exp")
log = _unary("log")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
relu = _unary("relu")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
reciprocal = _unary("reciprocal")
abs = _unary("abs")  # noqa: A001
sign = _unary("sign")
log1p = _unary("log1p")
expm1 = _unary("expm1")


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


def _operand_or_none(value):
    return None if value is None else _operand(value)


clip = clamp


def _number(value):
    if isinstance(value, Tensor):
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def where(condition, input=None, other=None):  # noqa: A002
    condition = _bool_array(condition, "where")
    if input is None and other is None:
        return tuple(_make(i) for i in np.nonzero(condition))
    a, b = _operand(input), _operand(other)
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


def masked_fill(input, mask, value):  # noqa: A002
    mask = _bool_array(mask, "masked_fill_")
    if isinstance(value, Tensor) and value._requires_grad:
        # A fill value that requires grad gets the gradient of every place it filled.
        return _fresh(run_op(OPS["masked_fill_tensor"], (input, value), (mask,)))
    return _fresh(run_op(OPS["masked_fill"], (input,), (mask, _number(value))))


def softmax(input, dim, dtype=None):  # noqa: A002
    if dtype is not None:
        input = input.to(dtype)
    _wrap_dim(dim, input.dim())  # checked, but saved as given (-1 stays -1), as PyTorch does
    return _fresh(run_op(OPS["softmax"], (input,), (dim,)))


def log_softmax(input, dim, dtype=None):  # noqa: A002
    if dtype is not None:
        input = input.to(dtype)
    _wrap_dim(dim, input.dim())
    return _fresh(run_op(OPS["log_softmax"], (input,), (dim,)))


# --- comparisons and other results that carry no gradient -------------------------------------


def _no_grad_result(function, kernel=None, kinds=None):
    """An op without a gradient. Its operands are first brought to PyTorch's result dtype
    (Python numbers stay weak, as in PyTorch); ``kinds`` lists the dtype categories the op
    accepts (0 bool, 1 integer, 2 float), and ``kernel`` names it in PyTorch's refusal."""

    def compute(input, other):  # noqa: A002
        a, b = _operand(input), _operand(other)
        target = result_dtype((a, b))
        if kinds is not None and target._category not in kinds:
            raise NotImplementedError(
                f"\"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[target]}'"
            )
        arrays = [
            x._data.astype(target.numpy, copy=False) if isinstance(x, Tensor) else x for x in (a, b)
        ]
        dividing = kernel in ("div_floor_cpu", "remainder_cpu")
        if dividing and target._category < 2 and np.any(np.asarray(arrays[1]) == 0):
            raise RuntimeError("ZeroDivisionError")
        try:
            out = np.asarray(function(*arrays))
        except ValueError:
            raise _broadcast_error(a, b) from None
        if out.dtype != bool:
            out = out.astype(target.numpy, copy=False)
        return _make(out)

    compute.__name__ = function.__name__
    return compute


eq = _no_grad_result(np.equal)
ne = _no_grad_result(np.not_equal)
lt = _no_grad_result(np.less)
le = _no_grad_result(np.less_equal)
gt = _no_grad_result(np.greater)
ge = _no_grad_result(np.greater_equal)
logical_and = _no_grad_result(np.logical_and)
logical_or = _no_grad_result(np.logical_or)
logical_xor = _no_grad_result(np.logical_xor)
bitwise_and = _no_grad_result(np.bitwise_and, "bitwise_and_cpu", (0, 1))
bitwise_or = _no_grad_result(np.bitwise_or, "bitwise_or_cpu", (0, 1))
bitwise_xor = _no_grad_result(np.bitwise_xor, "bitwise_xor_cpu", (0, 1))
floor_divide = _no_grad_result(np.floor_divide, "div_floor_cpu", (1, 2))
remainder = _no_grad_result(np.remainder, "remainder_cpu", (1, 2))


def logical_not(input):  # noqa: A002
    return _make(np.logical_not(input._data))


def bitwise_not(input):  # noqa: A002
    return _make(np.invert(input._data))


def isnan(input):  # noqa: A002
    return _make(np.isnan(input._data))


def isfinite(input):  # noqa: A002
    return _make(np.isfinite(input._data))


def equal(input, other):  # noqa: A002
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return _make(np.isclose(input._data, _array(other), rtol=rtol, atol=atol, equal_nan=equal_nan))


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    return _arg_extreme(np.argmax, input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    return _arg_extreme(np.argmin, input, dim, keepdim)


def _arg_extreme(function, input, dim, keepdim):  # noqa: A002
    name = function.__name__
    if dim is None:
        if input._data.size == 0:
            raise IndexError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        index = function(input._data)
        return _make(
            np.asarray(index, dtype=np.int64).reshape((1,) * input.dim() if keepdim else ())
        )
    _check_reduced_sizes(input, name, (dim,))
    return _make(function(input._data, axis=_wrap_dim(dim, input.dim()), keepdims=keepdim))


def all(input, dim=None, keepdim=False):  # noqa: A001, A002
    return _make(np.asarray(np.all(input._data, axis=dim, keepdims=keepdim)))


def any(input, dim=None, keepdim=False):  # noqa: A001, A002
    return _make(np.asarray(np.any(input._data, axis=dim, keepdims=keepdim)))


def floor(input):  # noqa: A002
    return run_op(OPS["floor"], (input,))


def ceil(input):  # noqa: A002
    return run_op(OPS["ceil"], (input,))


def trunc(input):  # noqa: A002
    return run_op(OPS["trunc"], (input,))


def round(input, decimals=0):  # noqa: A001, A002
    if decimals == 0:
        return run_op(OPS["round"], (input,))
    return run_op(OPS["round_decimals"], (input,), (decimals,))


# --- reductions ---------------------------------------------------------------------------------


def _dims(dim, ndim):
    """PyTorch accepts an int, a tuple or a list of dims; the node saves them as a tuple."""
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    for d in dims:
        _wrap_dim(d, ndim)
    return dims


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001, A002
    if dtype is not None:
        input = input.to(dtype)
    if input._dtype is dtypes.bool or (not input._dtype.is_floating_point and dtype is None):
        input = input.to(dtypes.int64) if input._dtype is not dtypes.int64 else input
    if dim is None:
        return run_op(OPS["sum"], (input,))
    return _fresh(run_op(OPS["sum_dim"], (input,), (_dims(dim, input.dim()), keepdim)))


def mean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if dtype is not None:
        input = input.to(dtype)
    if not input._dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {dtypes.LEGACY_TYPE_NAMES[input._dtype][:-6]}"
        )
    if dim is None:
        return run_op(OPS["mean"], (input,))
    return _fresh(run_op(OPS["mean_dim"], (input,), (_dims(dim, input.dim()), keepdim)))


MaxResult = collections.namedtuple("max", ["values", "indices"])
MinResult = collections.namedtuple("min", ["values", "indices"])


def max(input, dim=None, keepdim=False):  # noqa: A001, A002
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        _check_not_empty(input, "max")
        return run_op(OPS["max"], (input,))
    _check_reduced_sizes(input, "max", (dim,))
    values, indices = run_op(OPS["max_dim"], (input,), (_wrap_dim(dim, input.dim()), keepdim))
    return MaxResult(_fresh(values), _fresh(indices))


def min(input, dim=None, keepdim=False):  # noqa: A001, A002
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        _check_not_empty(input, "min")
        return run_op(OPS["min"], (input,))
    _check_reduced_sizes(input, "min", (dim,))
    values, indices = run_op(OPS["min_dim"], (input,), (_wrap_dim(dim, input.dim()), keepdim))
    return MinResult(_fresh(values), _fresh(indices))


def _check_not_empty(input, name):  # noqa: A002
    if input._data.size == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
            "the reduction dim with the 'dim' argument."
        )


def _check_reduced_sizes(input, name, dims, wrapped=True):  # noqa: A002
    """Max-like reductions of an empty tensor: PyTorch refuses to reduce a dim of size 0, naming
    it wrapped (max, argmax) or as given (amax, amin)."""
    if input._data.size:
        return
    if not dims:
        _check_not_empty(input, name)
    for d in dims:
        wrapped_dim = _wrap_dim(d, input.dim())
        if input._data.shape[wrapped_dim] == 0:
            shown = wrapped_dim if wrapped else d
            raise IndexError(f"{name}(): Expected reduction dim {shown} to have non-zero size.")


def amax(input, dim=(), keepdim=False):  # noqa: A002
    dims = _dims(dim, input.dim())
    _check_reduced_sizes(input, "amax", dims, wrapped=False)
    return _fresh(run_op(OPS["amax"], (input,), (dims, keepdim)))


def amin(input, dim=(), keepdim=False):  # noqa: A002
    dims = _dims(dim, input.dim())
    _check_reduced_sizes(input, "amin", dims, wrapped=False)
    return _fresh(run_op(OPS["amin"], (input,), (dims, keepdim)))


# --- matrix products ----------------------------------------------------------------------------


def mm(input, mat2):  # noqa: A002
    a, b = input._data.shape, mat2._data.shape
    if len(a) != 2:
        raise RuntimeError("self must be a matrix")
    if len(b) != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a[1] != b[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})"
        )
    if input._dtype is not mat2._dtype:
        names = dtypes.CPP_TYPE_NAMES
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{names[input._dtype]} != {names[mat2._dtype]}"
        )
    return run_op(OPS["mm"], (input, mat2))


def mv(input, vec):  # noqa: A002
    a, v = input._data.shape, vec._data.shape
    if len(a) != 2 or len(v) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {len(a)}, {len(v)}")
    if a[1] != v[0]:
        raise RuntimeError(f"size mismatch, got input ({a[0]}), mat ({a[0]}x{a[1]}), vec ({v[0]})")
    if input._dtype is not vec._dtype:
        mat_name, vec_name = (dtypes.SCALAR_TYPE_NAMES[t._dtype] for t in (input, vec))
        raise RuntimeError(
            "addmv input tensors must have the same dtype, but got "
            f"{vec_name}, {mat_name}, and {vec_name}"
        )
    return run_op(OPS["mv"], (input, vec))


def dot(input, tensor):  # noqa: A002
    a, b = input._data.shape, tensor._data.shape
    if len(a) != 1 or len(b) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(a)}D and {len(b)}D tensors")
    if input._dtype is not tensor._dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{dtypes.SCALAR_TYPE_NAMES[input._dtype]} and "
            f"{dtypes.SCALAR_TYPE_NAMES[tensor._dtype]}"
        )
    if a[0] != b[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the "
            f"same number of elements, but got {a[0]} and {b[0]} elements respectively"
        )
    return run_op(OPS["dot"], (input, tensor))


def bmm(input, mat2):  # noqa: A002
    a, b = input._data.shape, mat2._data.shape
    if len(a) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(b) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a[0] != b[0] or a[2] != b[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a[0]}, {a[2]}] "
            f"but got: [{b[0]}, {b[1]}]."
        )
    if input._dtype is not mat2._dtype:
        raise RuntimeError(
            f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[input._dtype]} but found "
            f"{dtypes.SCALAR_TYPE_NAMES[mat2._dtype]}"
        )
    return run_op(OPS["bmm"], (input, mat2))


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    a, b = mat1._data.shape, mat2._data.shape
    if a[1] != b[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})"
        )
    if beta == 1 and alpha == 1:
        return run_op(OPS["addmm"], (input, mat1, mat2))
    return run_op(OPS["addmm_scaled"], (input, mat1, mat2), (beta, alpha))


def matmul(input, other):  # noqa: A002
    """Matrix product of any ranks, built from dot/mv/mm/bmm as PyTorch builds it."""
    da, db = input.dim(), other.dim()
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 1 and db == 2:
        return run_op(OPS["squeeze_dims"], (mm(unsqueeze(input, 0), other),), (0,))
    if da == 2 and db == 2:
        return mm(input, other)
    if _should_fold(input, other):
        return _folded_matmul(input, other)
    return _batched_matmul(input, other)


def _should_fold(tensor1, tensor2):
    """PyTorch's choice of folding the batch dims of the larger operand into one matrix (mm or
    mv) instead of a batched product (bmm): when the other operand requires grad, or when the
    fold needs no copy."""
    larger = tensor1.dim() >= tensor2.dim()
    big, small = (tensor1, tensor2) if larger else (tensor2, tensor1)
    if not (big.dim() >= 3 and small.dim() <= 2):
        return False
    if small._requires_grad:
        return True
    if tensor1.dim() == 2:
        return False
    if big._data.size == 0:
        return True
    shape = list(big._data.shape)
    strides = [s // big._data.itemsize for s in big._data.strides]
    if not larger:  # tensor2.mT
        shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
    return builtins.all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _folded_matmul(tensor1, tensor2):
    transpose_back = tensor2.dim() > tensor1.dim()
    if transpose_back:  # (tensor2.mT @ tensor1.mT).mT
        t1 = transpose(tensor2, -2, -1)
        t2 = t(tensor1) if tensor1.dim() == 2 else tensor1
    else:
        t1, t2 = tensor1, tensor2
    output_shape = t1._data.shape[:-1]
    folded = reshape(t1, (int(np.prod(output_shape)), t1._data.shape[-1]))
    if t2.dim() == 1:
        return run_op(OPS["unsafe_view"], (mv(folded, t2),), (output_shape,))
    output_shape = (*output_shape, t2._data.shape[1])
    output = run_op(OPS["unsafe_view"], (mm(folded, t2),), (output_shape,))
    return contiguous(transpose(output, -2, -1)) if transpose_back else output


def _batched_matmul(tensor1, tensor2):
    """Broadcast the batch dims, expand both operands to them and multiply with bmm, as
    PyTorch does (a vector on the left is expanded as a row, one on the right as a column)."""
    d1, d2 = tensor1.dim(), tensor2.dim()
    shape1, shape2 = tensor1._data.shape, tensor2._data.shape
    n, m1, batch1 = (shape1[-2] if d1 > 1 else 1), shape1[-1], shape1[: builtins.max(d1 - 2, 0)]
    m2, p = (shape2[-2], shape2[-1]) if d2 > 1 else (shape2[0], 1)
    batch2 = shape2[: builtins.max(d2 - 2, 0)]
    if d1 == 3 and d2 == 3 and batch1[0] != batch2[0]:
        if batch1[0] == 1 and tensor1._requires_grad:
            return matmul(squeeze(tensor1, 0), tensor2)
        if batch2[0] == 1 and tensor2._requires_grad:
            return matmul(tensor1, squeeze(tensor2, 0))
    try:
        batch = np.broadcast_shapes(batch1, batch2)
    except ValueError:
        raise _shapes_error(batch1, batch2) from None
    count = int(np.prod(batch))
    expanded1 = reshape(expand(tensor1, (*batch, n, m1)), (count, n, m1))
    if d2 == 1:
        expanded2 = unsqueeze(reshape(expand(tensor2, (*batch, m2)), (count, m2)), 2)
    else:
        expanded2 = reshape(expand(tensor2, (*batch, m2, p)), (count, m2, p))
    output_shape = (*batch, *((n,) if d1 > 1 else ()), *((p,) if d2 > 1 else ()))
    product = bmm(expanded1, expanded2)
    if d2 == 1:
        product = squeeze(product, -1)
    return run_op(OPS["unsafe_view"], (product,), (output_shape,))


# --- shapes -------------------------------------------------------------------------------------


def _shape_args(shape):
    """``x.view(2, 3)`` and ``x.view((2, 3))`` mean the same."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _infer_shape(shape, numel):
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(
                f"invalid shape dimension {s} at index {i} of shape [{', '.join(map(str, shape))}]"
            )
        if s != -1:
            known *= s
    if unknown and numel == 0 and known == 0:
        raise RuntimeError(
            f"cannot reshape tensor of 0 elements into shape [{', '.join(map(str, shape))}] "
            "because the unspecified dimension size -1 can be any value and is ambiguous"
        )
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(
                f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}"
            )
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(
            f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}"
        )
    return shape


def _viewable(array, shape):
    try:
        probe = array.view()
        probe.shape = shape
    except AttributeError:
        return False
    return True


def view(input, *shape):  # noqa: A002
    shape = _infer_shape(_shape_args(shape), input._data.size)
    if not _viewable(input._data, shape):
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return run_op(OPS["view"], (input,), (shape,))


def reshape(input, *shape):  # noqa: A002
    shape = _infer_shape(_shape_args(shape), input._data.size)
    if input._data.flags.c_contiguous:
        return run_op(OPS["view"], (input,), (shape,))
    if _viewable(input._data, shape):  # strided, but the new shape still fits its memory
        return run_op(OPS["reshape_alias"], (input,), (shape,))
    # PyTorch copies first, then views the copy: CloneBackward0 then UnsafeViewBackward0.
    return run_op(OPS["unsafe_view"], (run_op(OPS["clone"], (input,)),), (shape,))


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    if input.dim() == 0:
        return reshape(input, (1,))
    start, end = _wrap_dim(start_dim, input.dim()), _wrap_dim(end_dim, input.dim())
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input._data.shape
    merged = int(np.prod(shape[start : end + 1]))  # not -1: that is ambiguous with 0 elements
    return reshape(input, (*shape[:start], merged, *shape[end + 1 :]))


def t(input):  # noqa: A002
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.dim()}D")
    return run_op(OPS["t"], (input,))


def transpose(input, dim0, dim1):  # noqa: A002
    n = input.dim()
    _wrap_dim(dim0, n), _wrap_dim(dim1, n)  # checked, but saved as given, as PyTorch does
    return run_op(OPS["transpose"], (input,), (dim0, dim1))


def permute(input, *dims):  # noqa: A002
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _shape_args(dims)
    n = input.dim()
    if len(dims) != n:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
            f"len(dims) = {len(dims)}"
        )
    dims = tuple(_wrap_dim(d, n) for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return run_op(OPS["permute"], (input,), (dims,))


def unsqueeze(input, dim):  # noqa: A002
    return run_op(OPS["unsqueeze"], (input,), (_wrap_dim(dim, input.dim() + 1),))


def squeeze(input, dim=None):  # noqa: A002
    if dim is None:
        return run_op(OPS["squeeze"], (input,))
    if isinstance(dim, (tuple, list)):
        dims = tuple(
            d for d in (_wrap_dim(d, input.dim()) for d in dim) if input._data.shape[d] == 1
        )
        return run_op(OPS["squeeze_dims"], (input,), (dims,))
    return run_op(OPS["squeeze_dim"], (input,), (_wrap_dim(dim, input.dim()),))


def _listed(sizes):
    return ", ".join(str(s) for s in sizes)


def expand(input, *sizes):  # noqa: A002
    if not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = _shape_args(sizes)
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand(torch.{dtypes.LEGACY_TYPE_NAMES[input._dtype]}{{[{_listed(shape)}]}}, "
            f"size=[{_listed(sizes)}]): the number of sizes provided ({len(sizes)}) must be "
            f"greater or equal to the number of dimensions in the tensor ({len(shape)})"
        )
    lead = len(sizes) - len(shape)
    target = list(sizes)
    for i in range(lead):
        if sizes[i] == -1:
            raise RuntimeError(
                f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                f"dimension {i}"
            )
    # PyTorch checks from the last dim backwards, so it reports the last mismatch.
    for i, s in reversed(list(enumerate(shape))):
        want = sizes[lead + i]
        if want == -1:
            target[lead + i] = s
        elif s != want and s != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({want}) must match the existing size ({s}) at "
                f"non-singleton dimension {lead + i}.  Target sizes: [{_listed(sizes)}].  "
                f"Tensor sizes: [{_listed(shape)}]"
            )
    return run_op(OPS["expand"], (input,), (tuple(target),))


def sum_to_size(input, *size):  # noqa: A002
    size = _shape_args(size)
    shape = input._data.shape
    if shape == size:
        return input
    lead = len(shape) - len(size)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1
    )
    summed = sum(input, dims, keepdim=True)
    return view(summed, size) if lead else summed


def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    first = tensors[0]
    dim = _wrap_dim(dim, first.dim())
    for i, t in enumerate(tensors[1:], 1):
        if t.dim() != first.dim():
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {first.dim()} and {t.dim()}"
            )
        for d, (a, b) in enumerate(zip(first._data.shape, t._data.shape)):
            if d != dim and a != b:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size {a} "
                    f"but got size {b} for tensor number {i} in the list."
                )
    return _fresh(run_op(OPS["cat"], (tensors,), (dim,)))


concat = cat


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != tensors[0]._data.shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got "
                f"[{', '.join(map(str, tensors[0]._data.shape))}] at entry 0 and "
                f"[{', '.join(map(str, t._data.shape))}] at entry {i}"
            )
    return _fresh(run_op(OPS["stack"], (tensors,), (_wrap_dim(dim, tensors[0].dim() + 1),)))


def narrow(input, dim, start, length):  # noqa: A002
    dim = _wrap_dim(dim, input.dim())
    size = input._data.shape[dim]
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    start %= builtins.max(size, 1)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return run_op(OPS["slice"], (input,), (dim, start, start + length, 1))


def select(input, dim, index):  # noqa: A002
    dim = _wrap_dim(dim, input.dim())
    size = input._data.shape[dim]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size "
            f"[{_listed(input._data.shape)}] at dimension {dim}"
        )
    return run_op(OPS["select"], (input,), (dim, index))


def gather(input, dim, index, *, sparse_grad=False):  # noqa: A002
    dim = _wrap_dim(dim, input.dim())
    if index._dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if index.dim() != input.dim():
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d, (i, s) in enumerate(zip(index._data.shape, input._data.shape)):
        if d != dim and i > s:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index [{_listed(index.shape)}] to "
                f"be no larger than self [{_listed(input.shape)}] apart from dimension {dim}"
            )
    size = input._data.shape[dim]
    bad = index._data[(index._data < -size) | (index._data >= size)]
    if bad.size:
        raise RuntimeError(
            f"index {bad.flat[0]} is out of bounds for dimension {dim} with size {size}"
        )
    return run_op(OPS["gather"], (input,), (dim, index._data, sparse_grad))


def clone(input):  # noqa: A002
    return run_op(OPS["clone"], (input,))


def contiguous(input):  # noqa: A002
    if input._data.flags.c_contiguous:
        return input
    # PyTorch's clone keeps a transposed layout (as ``np.array`` does); contiguous() does not.
    result = clone(input)
    result._data = np.ascontiguousarray(result._data)
    return result


def detach(input):  # noqa: A002
    return input.detach()


def to_dtype(input, dtype):  # noqa: A002
    dtype = dtypes.to_dtype(dtype)
    if dtype is input._dtype:
        return input
    return run_op(OPS["to_dtype"], (input,), (dtype,))


def select_backward(grad, sizes, dim, index):
    return run_op(OPS["select_backward"], (grad,), (sizes, dim, index))


def slice_backward(grad, sizes, dim, start, end, step):
    return run_op(OPS["slice_backward"], (grad,), (sizes, dim, start, end, step))


def index_put_into_zeros(values, sizes, indices):
    return run_op(OPS["index_put_into_zeros"], (values,), (sizes, indices))


# --- indexing -----------------------------------------------------------------------------------


def _index_array(value):
    if isinstance(value, Tensor):
        if value._dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return value._data
    array = np.asarray(value)
    if array.dtype.kind == "f":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return array


def _is_integer(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return isinstance(value, Tensor) and value._data.ndim == 0 and value._dtype._category == 1


def _check_zero_dim_key(tensor, key):
    if tensor.dim() == 0:
        for k in key:
            if _is_integer(k):
                raise IndexError(
                    "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                    "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
                )
            if isinstance(k, slice):
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")


def _consumed(key):
    """How many of the tensor's dims the key indexes (a k-dim bool mask indexes k)."""
    return builtins.sum(
        (_array(k).ndim if _is_bool_mask(k) else 1)
        for k in key
        if k is not None and k is not Ellipsis
    )


def _is_full_slice(k, size):
    """``:``, ``0:``, ``:n`` with n >= size: PyTorch skips these inside a tuple of indices."""
    return k.start in (None, 0) and (k.stop is None or k.stop >= size) and k.step in (None, 1)


def getitem(tensor, key):
    """``tensor[key]``: ints select, slices slice, None unsqueezes, arrays index, as in PyTorch."""
    # A lone slice is always recorded (``x[:]`` is SliceBackward0); inside a tuple, a slice
    # that keeps everything is skipped, as PyTorch's indexing does.
    lone_slice = isinstance(key, slice)
    if not isinstance(key, tuple):
        key = (key,)
    _check_zero_dim_key(tensor, key)
    consumed = _consumed(key)
    if consumed > tensor.dim():
        raise IndexError(f"too many indices for tensor of dimension {tensor.dim()}")
    result, dim, advanced, has_advanced = tensor, 0, [], False
    for position, k in enumerate(key):
        if k is Ellipsis:
            skip = tensor.dim() - consumed
            advanced.extend([slice(None)] * skip)
            dim += skip
            consumed = tensor.dim()
        elif k is None:
            result = unsqueeze(result, dim)
            advanced.append(slice(None))
            dim += 1
        elif _is_integer(k):
            index, size = int(k), result._data.shape[dim]
            if not -size <= index < size:
                raise IndexError(
                    f"index {index} is out of bounds for dimension {position} with size {size}"
                )
            result = run_op(OPS["select"], (result,), (dim, index))
        elif isinstance(k, slice):
            start, stop, step = k.start, k.stop, k.step
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero")
            if lone_slice or not _is_full_slice(k, result._data.shape[dim]):
                result = run_op(
                    OPS["slice"],
                    (result,),
                    (
                        dim,
                        0 if start is None else start,
                        INT64_MAX if stop is None else stop,
                        1 if step is None else step,
                    ),
                )
            advanced.append(slice(None))
            dim += 1
        elif isinstance(k, float):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                f"are valid indices (got {type(k).__name__})"
            )
        else:
            array = _index_array(k)
            advanced.append(array)
            has_advanced = True
            dim += array.ndim if array.dtype == bool else 1
    if has_advanced:
        _check_advanced(result, advanced)
        result = run_op(OPS["index"], (result,), (tuple(advanced),))
        # PyTorch's index result is a fresh C-contiguous tensor; NumPy may lay it out otherwise.
        result._data = np.ascontiguousarray(result._data)
    if result is tensor:
        # ``x[...]`` gives a new view of the same memory (PyTorch: AliasBackward0).
        result = run_op(OPS["alias"], (tensor,))
    return result


def _check_advanced(result, advanced):
    """PyTorch's messages for a mask of the wrong shape and an index out of range."""
    dim, ordinal = 0, 0
    shape = result._data.shape
    for index in advanced:
        if isinstance(index, slice):
            dim += 1
            continue
        if index.dtype == bool:
            for j, size in enumerate(index.shape):
                if dim + j >= len(shape) or shape[dim + j] != size:
                    raise IndexError(
                        f"The shape of the mask [{_listed(index.shape)}] at index {j} does not "
                        f"match the shape of the indexed tensor [{_listed(shape)}] at index "
                        f"{dim + j}"
                    )
            dim, ordinal = dim + index.ndim, ordinal + index.ndim
            continue
        size = shape[dim]
        bad = index[(index < -size) | (index >= size)]
        if bad.size:
            raise IndexError(
                f"index {bad.flat[0]} is out of bounds for dimension {ordinal} with size {size}"
            )
        dim, ordinal = dim + 1, ordinal + 1


def _writes_through_view(tensor, key):
    """Whether PyTorch writes ``tensor[key] = value`` into a view of ``tensor`` (an int, None or
    a partial slice in the key) rather than into ``tensor`` itself."""
    if not isinstance(key, tuple):
        key = (key,)
    dim, consumed = 0, _consumed(key)
    for k in key:
        if k is None or _is_integer(k):
            return True
        if k is Ellipsis:
            dim += tensor.dim() - consumed
        elif isinstance(k, slice):
            if dim < tensor.dim() and not _is_full_slice(k, tensor._data.shape[dim]):
                return True
            dim += 1
        else:
            dim += _array(k).ndim if _is_bool_mask(k) else 1
    return False


def _is_bool_mask(k):
    if isinstance(k, Tensor):
        return k._dtype is dtypes.bool
    return isinstance(k, np.ndarray) and k.dtype == bool


def _numpy_key(key):
    if not isinstance(key, tuple):
        key = (key,)
    converted = []
    for k in key:
        if isinstance(k, Tensor):
            converted.append(k._data if k._data.ndim else k.item())
        elif isinstance(k, list):
            converted.append(np.asarray(k))
        else:
            converted.append(k)
    return tuple(converted)


def setitem(tensor, key, value):
    """``tensor[key] = value``: an in-place write, recorded as PyTorch's CopySlices."""
    value = _operand(value)
    key = _numpy_key(key)
    recording = grad_mode._enabled and (
        tensor._requires_grad or (isinstance(value, Tensor) and value._requires_grad)
    )
    leaf = tensor._grad_fn is None and tensor._requires_grad
    if recording and leaf and _writes_through_view(tensor, key):
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
    if not recording:
        tensor._data[key] = value._data if isinstance(value, Tensor) else value
        tensor._version_counter.value += 1
        return
    # PyTorch records different nodes by the kind of key, and so do we.
    if builtins.any(isinstance(k, np.ndarray) for k in key):
        run_inplace(OPS["index_put"], tensor, (value,), (key, False))
    elif builtins.all(k is Ellipsis or k == slice(None) for k in key):
        if isinstance(value, Tensor):  # the whole tensor: copy_ of the expanded value
            run_inplace(OPS["copy"], tensor, (expand(value, tensor._data.shape),))
        else:
            run_inplace(OPS["fill_whole"], tensor, (value,))
    else:
        run_inplace(OPS["copy_slices"], tensor, (value,), (key,))


# --- in-place operations ------------------------------------------------------------------------


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


def clamp_(input, min=None, max=None):  # noqa: A001, A002
    return run_inplace(OPS["clamp"], input, (), (_number(min), _number(max)))


def relu_(input):  # noqa: A002
    return run_inplace(OPS["relu"], input)


def zero_(input):  # noqa: A002
    return run_inplace(OPS["zero"], input)


def fill_(input, value):  # noqa: A002
    return run_inplace(OPS["fill"], input, (), (_number(value),))


def copy_(input, src):  # noqa: A002
    return run_inplace(OPS["copy"], input, (_inplace_operand(input, src),))


def masked_fill_(input, mask, value):  # noqa: A002
    if isinstance(mask, Tensor):
        _inplace_operand(input, mask)
    return run_inplace(
        OPS["masked_fill"], input, (), (_bool_array(mask, "masked_fill_"), _number(value))
    )
