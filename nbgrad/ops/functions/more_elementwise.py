"""More element-wise functions with arguments beyond the tensor: ``atan2``, ``logsumexp`` and the
activations PyTorch has in its own namespace (``torch.selu``, ``torch.threshold_``, ...). Those
that are a table entry run as is (``asin``, ``log2``) are made from their entry: see
``ops/public.py``."""

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.tensor import Tensor, _wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _fresh, _number
from nbgrad.ops.functions.arithmetic import _tensors_only
from nbgrad.ops.public import public

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
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    ndim = input.dim()
    if not dims and ndim:
        # PyTorch's own message for an empty list of dims (it reduces over none, then fails).
        raise RuntimeError(
            f"output with shape [] doesn't match the broadcast shape [{', '.join('1' * ndim)}]"
        )
    seen = set()
    for d in dims:
        wrapped = _wrap_dim(d, ndim)
        if wrapped in seen:
            raise RuntimeError(f"dim {wrapped} appears multiple times in the list of dims")
        seen.add(wrapped)
    return _fresh(run_op(OPS["logsumexp"], (input,), (dims, bool(keepdim))))


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
