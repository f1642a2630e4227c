"""``torch.linalg.norm`` / ``matrix_norm`` (the orders that are vector norms), ``dist`` and
``cross`` / ``torch.linalg.cross``."""

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _broadcast_error
from nbgrad.ops.functions.reductions import amax, amin, vector_norm
from nbgrad.ops.public import public
from nbgrad.warn_once import warn_once


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False):  # noqa: A002, N803
    """``torch.linalg.matrix_norm``, built from other ops as PyTorch builds it: the Frobenius
    norm is a vector norm over both dims; orders 1 and inf are the largest vector 1-norm of the
    columns (1) or rows (inf), -1 and -inf the smallest (LinalgVectorNormBackward0 under
    AmaxBackward0 / AminBackward0); 2, -2 and "nuc" come from the singular values."""
    if A.dim() < 2:
        raise RuntimeError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."
        )
    if not A._dtype.is_floating_point:
        raise RuntimeError(
            "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
            f"{dtypes.SCALAR_TYPE_NAMES[A._dtype]}"
        )
    dims = tuple(wrap_dim(d, A.dim()) for d in dim)
    if dims[0] == dims[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got {dims}")
    if ord in (2, -2, "nuc"):
        from nbgrad.ops.functions.linalg_decompositions import singular_value_norm

        return singular_value_norm(A, ord, dims, keepdim)
    if ord == "fro":
        return vector_norm(A, 2, dims, keepdim)
    if isinstance(ord, str) or ord not in (1, -1, INF, -INF):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    # The 1-norms run down the dim whose entries are summed (the rows for ord 1, the columns
    # for inf); the extreme is then taken over the other dim, one lower once the first is gone.
    summed, across = dims if abs(ord) == 1 else dims[::-1]
    if not keepdim and summed < across:
        across -= 1
    one_norms = vector_norm(A, 1.0, (summed,), keepdim)
    extreme = amax if ord > 0 else amin
    return extreme(one_norms, (across,), keepdim)


INF = float("inf")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002, N803
    """``torch.linalg.norm``: a matrix norm for a string order, two dims, or an order given for a
    2-d input without dims; a vector norm otherwise (no order: 2, over all elements)."""
    if dtype is not None:
        A = A.to(dtype)
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim)
    if ord is not None and dim is None:
        if A.dim() not in (1, 2):
            raise RuntimeError(
                "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                f"Got {A.dim()}D."
            )
        if A.dim() == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim)
    if ord is not None and dim is not None and len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim)
    return vector_norm(A, 2.0 if ord is None else ord, dim, keepdim)


@public(function=True, method=True)
def dist(input, other, p=2):  # noqa: A002
    if not input._dtype.is_floating_point:
        raise RuntimeError(
            "norm(): input dtype should be either floating point or complex. Got "
            f"{dtypes.LEGACY_TYPE_NAMES[input._dtype][:-6]} instead."
        )
    try:
        return run_op(OPS["dist"], (input, other), (p,))
    except ValueError:
        raise _broadcast_error(input, other) from None


def cross(input, other, *, dim=-1):  # noqa: A002
    """``torch.linalg.cross``: the cross product of 3-vectors along ``dim``."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    wrapped = wrap_dim(dim, input.dim())
    for t in (input, other):
        if t._data.shape[wrapped] != 3:
            raise RuntimeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                f"{input._data.shape[wrapped]} and {other._data.shape[wrapped]}"
            )
    try:
        return run_op(OPS["linalg_cross"], (input, other), (dim,))
    except ValueError:
        raise _broadcast_error(input, other) from None


@public(function="cross", method="cross", out=True)
def cross_function(input, other, dim=None):  # noqa: A002
    """``torch.cross``: with no dim, the first dim of size 3 (PyTorch warns it will become -1)."""
    if dim is None:
        warn_once(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either "
            "pass the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim "
            "will change to agree with that of linalg.cross in a future release.",
            stacklevel=3,
        )
        dim = next((d for d, s in enumerate(input._data.shape) if s == 3), -1)
    return cross(input, other, dim=dim)
