"""``torch.linalg.lstsq`` (the table entry ``linalg_lstsq`` in ``ops/derivatives.py``)."""

from collections import namedtuple

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.formula_linalg_lstsq import DRIVERS, default_rcond, solve_least_squares
from nbgrad.ops.functions.linalg_decompositions import LinAlgError

LstsqResult = namedtuple("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """The least-squares solution of A X = B (B a matrix, or a vector when it has one dim less
    than A), its squared residuals, and, by driver, the rank and the singular values.

    One LinalgLstsqBackward0 node, whose outputs are the solution and the residuals. The
    solution is the minimum-norm one; for a matrix not of full rank, gelsy's (the default)
    differs from it (README).
    """
    name = "torch.linalg.lstsq"
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A._dtype is not B._dtype:
        raise RuntimeError(
            f"{name}: Expected input and other to have the same dtype, but got input's dtype "
            f"{dtypes.SCALAR_TYPE_NAMES[A._dtype]} and other's dtype "
            f"{dtypes.SCALAR_TYPE_NAMES[B._dtype]}"
        )
    if A._dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if not (A.dim() >= B.dim() and A.dim() - B.dim() <= 1):
        raise RuntimeError(
            f"{name}: input.dim() must be greater or equal to other.dim() and (input.dim() - "
            "other.dim()) <= 1"
        )
    vector = A.dim() == B.dim() + 1
    rows = B.shape[-1] if vector else B.shape[-2]
    if rows != A.shape[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-2)")
    driver = "gelsy" if driver is None else driver
    if driver not in DRIVERS:
        raise RuntimeError(
            f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )
    a = A._data
    rcond = default_rcond(a) if rcond is None else rcond
    m, n = a.shape[-2:]
    b = B._data[..., None] if vector else B._data
    _, ranks, values = solve_least_squares(a, b, rcond if driver != "gels" else -1)
    if driver == "gels":  # LAPACK's gels fails where its triangular factor has a zero pivot
        factor = np.linalg.qr(a if m >= n else np.swapaxes(a, -1, -2), mode="r")
        zero = np.diagonal(factor, axis1=-2, axis2=-1).reshape(-1, min(m, n)) == 0
        failed = np.flatnonzero(zero.any(-1))
        if failed.size:
            position = int(np.argmax(zero[failed[0]])) + 1
            raise LinAlgError(
                f"{name}: The least squares solution could not be computed because the input "
                f"matrix does not have full rank (error code: {position})."
            )
    solution, residuals = run_op(OPS["linalg_lstsq"], (A, B), (rcond, driver, vector))
    from nbgrad.autograd.tensor import Tensor

    empty = np.zeros(0, np.int64)
    rank = Tensor._make(empty if driver == "gels" else ranks)
    singular = values if driver in ("gelsd", "gelss") else np.zeros(0, a.dtype)
    return LstsqResult(solution, residuals, rank, Tensor._make(singular))
