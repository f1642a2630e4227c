"""More reductions and scans: ``var``/``std``, ``prod``, ``cumsum``/``cumprod``/``logcumsumexp``,
``cummax``/``cummin``."""

import collections
import warnings

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops import formula_more
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.reductions import _dims, accumulation_dtype
from nbgrad.ops.public import public

_UNSET = object()


def _correction_and_dims(input, name, dim, unbiased, correction):  # noqa: A002
    """PyTorch's overloads of var/std: (dim, unbiased, keepdim), (dim, *, correction, keepdim)
    and (unbiased). The node saves correction None when no overload named it (``x.var()``)."""
    if isinstance(dim, bool):  # x.var(False): the (unbiased) overload
        dim, unbiased = _UNSET, dim
    if correction is not _UNSET and unbiased is not _UNSET:
        raise TypeError(
            f"{name}() received an invalid combination of arguments: unbiased and correction "
            "cannot both be given"
        )
    if correction is not _UNSET:
        saved = correction
    elif unbiased is not _UNSET:
        saved = 1 if unbiased else 0
    else:
        saved = None if dim is _UNSET else 1
    dims = None if dim is _UNSET or dim is None else _dims(dim, input.dim())
    if not input._dtype.is_floating_point:
        kind = "std and var" if name in ("std", "var") else name
        raise RuntimeError(f"{kind} only support floating point and complex dtypes")
    count = formula_more.reduction_count(input._data.shape, dims)
    if count - (1 if saved is None else saved) <= 0:
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=3,
        )
    return dims, saved


@public(function=True, method=True, out=True)
def var(input, dim=_UNSET, unbiased=_UNSET, keepdim=False, *, correction=_UNSET):  # noqa: A002
    dims, correction = _correction_and_dims(input, "var", dim, unbiased, correction)
    return run_op(OPS["var"], (input,), (dims, correction, keepdim))


@public(function=True, method=True, out=True)
def std(input, dim=_UNSET, unbiased=_UNSET, keepdim=False, *, correction=_UNSET):  # noqa: A002
    dims, correction = _correction_and_dims(input, "std", dim, unbiased, correction)
    return run_op(OPS["std"], (input,), (dims, correction, keepdim))


@public(function=True, method=True, out=True)
def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    accumulated = accumulation_dtype(input, dtype)
    if dim is None:
        return run_op(OPS["prod"], (input,), (accumulated,))
    if not isinstance(dim, int):
        raise TypeError(
            f"prod() received an invalid combination of arguments - got (dim={type(dim).__name__})"
            ", but expected (int dim, bool keepdim = False, *, torch.dtype dtype = None)"
        )
    wrap_dim(dim, input.dim())
    return run_op(OPS["prod_dim"], (input,), (dim, keepdim, accumulated))


def _scan_dtype(input, dtype):  # noqa: A002
    if dtype is not None:
        return dtypes.to_dtype(dtype).numpy
    if not input._dtype.is_floating_point:
        return np.int64
    return None


@public(function=True, method=True, out=True)
def cumsum(input, dim, *, dtype=None):  # noqa: A002
    wrap_dim(dim, input.dim())
    return run_op(OPS["cumsum"], (input,), (dim, _scan_dtype(input, dtype)))


@public(function=True, method=True, out=True)
def cumprod(input, dim, *, dtype=None):  # noqa: A002
    wrap_dim(dim, input.dim())
    return run_op(OPS["cumprod"], (input,), (dim, _scan_dtype(input, dtype)))


@public(function=True, method=True, out=True)
def logcumsumexp(input, dim):  # noqa: A002
    wrap_dim(dim, input.dim())
    if not input._dtype.is_floating_point:
        name = dtypes.LEGACY_TYPE_NAMES[input._dtype][:-6]
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{name}'")
    return run_op(OPS["logcumsumexp"], (input,), (dim,))


CummaxResult = collections.namedtuple("cummax", ["values", "indices"])
CumminResult = collections.namedtuple("cummin", ["values", "indices"])


@public(function=True, method=True)
def cummax(input, dim):  # noqa: A002
    wrap_dim(dim, input.dim())
    return CummaxResult(*run_op(OPS["cummax"], (input,), (dim,)))


@public(function=True, method=True)
def cummin(input, dim):  # noqa: A002
    wrap_dim(dim, input.dim())
    return CumminResult(*run_op(OPS["cummin"], (input,), (dim,)))


@public(function=True)
def var_mean(input, dim=_UNSET, unbiased=_UNSET, keepdim=False, *, correction=_UNSET):  # noqa: A002
    dims, correction = _correction_and_dims(input, "var_mean", dim, unbiased, correction)
    return tuple(run_op(OPS["var_mean"], (input,), (dims, correction, keepdim)))


@public(function=True)
def std_mean(input, dim=_UNSET, unbiased=_UNSET, keepdim=False, *, correction=_UNSET):  # noqa: A002
    dims, correction = _correction_and_dims(input, "std_mean", dim, unbiased, correction)
    return tuple(run_op(OPS["std_mean"], (input,), (dims, correction, keepdim)))
