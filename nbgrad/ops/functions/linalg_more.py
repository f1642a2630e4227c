"""``torch.linalg.norm`` / ``matrix_norm`` (the orders that are vector norms), ``dist`` and
``cross`` / ``torch.linalg.cross``."""

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _broadcast_error
from nbgrad.ops.functions.reductions import vector_norm
from nbgrad.ops.public import public
from nbgrad.warn_once import warn_once


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False):  # noqa: A002, N803
    """The Frobenius norm, PyTorch's LinalgVectorNormBackward0 over the two matrix dims."""
    if A.dim() < 2:
        raise RuntimeError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."
        )
    dims = tuple(wrap_dim(d, A.dim()) for d in dim)
    if ord in (2, -2, "nuc"):
        from nbgrad.ops.functions.linalg_decompositions import singular_value_norm

        return singular_value_norm(A, ord, dims, keepdim)
    if ord != "fro":
        raise NotImplementedError(f"nbgrad has no matrix norm of order {ord}")
    return vector_norm(A, 2, dims, keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002, N803
    """``torch.linalg.norm``: a vector norm (ord a number, or None: 2 over all elements) or the
    Frobenius norm of matrices (``ord="fro"``)."""
    if dtype is not None:
        A = A.to(dtype)
    if isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim)
    if dim is not None and not isinstance(dim, int) and len(dim) == 2 and ord is not None:
        if ord in (2, -2):
            return matrix_norm(A, ord, dim, keepdim)
        raise NotImplementedError(f"nbgrad has no matrix norm of order {ord}")
    if ord is not None and dim is None and A.dim() == 2:
        if ord in (2, -2):
            return matrix_norm(A, ord, (-2, -1), keepdim)
        raise NotImplementedError(f"nbgrad has no matrix norm of order {ord}")
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
