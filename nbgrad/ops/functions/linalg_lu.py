"""The LU family (``linalg.lu_factor``, ``lu_factor_ex``, ``lu``, ``lu_solve``; ``torch.lu``,
``lu_unpack``, ``lu_solve``) and the deprecated solvers ``torch.triangular_solve`` and
``torch.cholesky``, with ATen's checks and messages (table entries under "the LU family" in
``ops/derivatives.py``)."""

from collections import namedtuple

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.formula_linalg_lu import lu_factor as factor_arrays
from nbgrad.ops.formula_linalg_lu import permutation
from nbgrad.ops.functions.linalg_decompositions import (
    LinAlgError,
    _batch_prefix,
    _cholesky_failure,
    _first_failure,
)
from nbgrad.ops.public import public
from nbgrad.warn_once import warn_once

LUFactorResult = namedtuple("linalg_lu_factor", ("LU", "pivots"))
LUFactorExResult = namedtuple("linalg_lu_factor_ex", ("LU", "pivots", "info"))
LUResult = namedtuple("linalg_lu", ("P", "L", "U"))
LUUnpackResult = namedtuple("lu_unpack", ("P", "L", "U"))
LUWithInfoResult = namedtuple("_lu_with_info", ("LU", "pivots", "info"))
TriangularSolveResult = namedtuple("triangular_solve", ("solution", "cloned_coefficient"))


def _check_kernel_dtype(t, kernel):
    """ATen's LAPACK kernels take float32 and float64 only (NotImplementedError otherwise)."""
    if t._dtype not in (dtypes.float32, dtypes.float64):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtypes.name_of(t)}'")


def _check_at_least_2d(t, name):
    if t.dim() < 2:
        raise RuntimeError(
            f"{name}: Expected tensor with 2 or more dimensions. Got size: {list(t.shape)} instead"
        )


def _check_pivot(pivot):
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def lu_factor_ex(A, *, pivot=True, check_errors=False):  # noqa: N803
    """``torch.linalg.lu_factor_ex``: LU packed as LAPACK's getrf, 1-based int32 pivots, and
    ``info`` (the first zero pivot, 0 if none). One LinalgLuFactorExBackward0 node."""
    _check_at_least_2d(A, "torch.lu_factor")
    _check_kernel_dtype(A, "lu_cpu")
    _check_pivot(pivot)
    LU, pivots, info = run_op(OPS["linalg_lu_factor_ex"], (A,), (pivot,))  # noqa: N806
    if check_errors:
        _raise_zero_pivot(A, info, "torch.linalg.lu_factor_ex")
    return LUFactorExResult(LU, pivots, info)


def _raise_zero_pivot(A, info, name):  # noqa: N803
    index, position = _first_failure(info.numpy())
    if index is not None:
        raise RuntimeError(
            f"{name}: {_batch_prefix(A, index)}U[{position},{position}] is zero and using it on "
            "lu_solve would result in a division by zero. If you still want to perform the "
            "factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
        )


def lu_factor(A, *, pivot=True):  # noqa: N803
    """``torch.linalg.lu_factor``: raises where a pivot is zero (lu_factor_ex does not)."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)  # noqa: N806
    _raise_zero_pivot(A, info, "torch.linalg.lu_factor")
    return LUFactorResult(LU, pivots)


def lu(A, *, pivot=True):  # noqa: N803
    """``torch.linalg.lu``: P, L, U with A = P L U; P does not require grad."""
    _check_at_least_2d(A, "linalg.lu")
    _check_kernel_dtype(A, "lu_cpu")
    _check_pivot(pivot)
    pivots = factor_arrays(A._data)[1]
    P = _tensor(permutation(pivots, A.shape[-2], A._data.dtype))  # noqa: N806
    L, U = run_op(OPS["linalg_lu"], (A,), (pivot, P._data))  # noqa: N806
    return LUResult(P, L, U)


def _tensor(array):
    from nbgrad.autograd.tensor import Tensor

    return Tensor._make(array)


@public(function=True)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):  # noqa: N803
    """``torch.lu_unpack``: P, L, U from lu_factor's LU and pivots (LuUnpackBackward0)."""
    _check_at_least_2d(LU_data, "torch.lu_unpack")
    if LU_pivots._dtype is not dtypes.int32:
        raise RuntimeError(
            "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
            "dtype.\nNote: this function is intended to be used with the output produced by "
            "torch.linalg.lu_factor"
        )
    m, n = LU_data.shape[-2:]
    pivots = LU_pivots._data
    if unpack_pivots and (
        pivots.shape[-1:] != (min(m, n),) or np.any(pivots < 1) or np.any(pivots > m)
    ):
        raise RuntimeError(
            "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
            "properly pass the result of lu_factor?"
        )
    empty = np.zeros(0, LU_data._data.dtype)
    P = _tensor(permutation(pivots, m, LU_data._data.dtype) if unpack_pivots else empty)  # noqa: N806
    L, U = run_op(OPS["lu_unpack"], (LU_data,), (unpack_data, m, n))  # noqa: N806
    return LUUnpackResult(P, L, U)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):  # noqa: N803
    """``torch.linalg.lu_solve``: X with A X = B from A's LU factorization (A^T X = B with
    ``adjoint``; X A = B with ``left=False``). LinalgLuSolveBackward0."""
    if LU.dim() < 2:
        raise RuntimeError(
            "torch.linalg.lu_solve: The input tensor A must have at least 2 dimensions."
        )
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if LU._dtype is not B._dtype:
        raise RuntimeError(
            "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
            f"{dtypes.name_of(LU)} and B of type {dtypes.name_of(B)} instead"
        )
    m, n = LU.shape[-2:]
    if m != n:
        raise RuntimeError(
            "torch.linalg.lu_solve: A must be batches of square matrices, but they are "
            f"{m} by {n} matrices"
        )
    if pivots._dtype is not dtypes.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if pivots.shape[-1:] != (n,):
        raise RuntimeError(
            "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the "
            "matrix"
        )
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.lu_solve: Incompatible shapes of A and B for the equation {equation} "
            f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )
    _check_kernel_dtype(LU, "lu_solve_cpu")
    return run_op(OPS["linalg_lu_solve"], (LU, B), (pivots._data, left, adjoint))


@public(function="lu", method="lu")
def lu_legacy(A, pivot=True, get_infos=False):  # noqa: N803
    """``torch.lu``: ``(LU, pivots)``, or with ``get_infos`` ``(LU, pivots, infos)``; runs
    linalg.lu_factor_ex, as PyTorch's does."""
    result = lu_factor_ex(A, pivot=pivot)
    return LUWithInfoResult(*result) if get_infos else (result.LU, result.pivots)


@public(function="lu_solve", method="lu_solve")
def lu_solve_legacy(b, LU_data, LU_pivots):  # noqa: N803
    """``torch.lu_solve(b, LU_data, LU_pivots)``: linalg.lu_solve with the arguments reordered."""
    return lu_solve(LU_data, LU_pivots, b)


_TRIANGULAR_SOLVE_DEPRECATED = (
    "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be "
    "removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
    "reversed and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
    "A).solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, B)."
)
_CHOLESKY_DEPRECATED = (
    "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
    "future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = "
    "torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced with\n"
    "U = torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results for all "
    "valid (symmetric positive definite) inputs."
)


@public(function=True, method=True)
def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):  # noqa: A002, N803
    """``torch.triangular_solve(B, A)``: X with op(A) X = B, and a copy of A (deprecated)."""
    warn_once(_TRIANGULAR_SOLVE_DEPRECATED)
    for name, t in (("b", input), ("A", A)):
        if t.dim() < 2:
            raise RuntimeError(
                f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it "
                f"has {t.dim()} dimensions instead"
            )
    if input._dtype is not A._dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type {dtypes.name_of(input)} "
            f"and A of type {dtypes.name_of(A)} instead."
        )
    m, n = A.shape[-2:]
    if m != n:
        raise RuntimeError(
            f"A must be batches of square matrices, but they are {m} by {n} matrices"
        )
    if input.shape[-2] != n:
        raise RuntimeError(
            f"Incompatible matrix sizes for triangular_solve: each A matrix is {n} by {n} but "
            f"each b matrix is {input.shape[-2]} by {input.shape[-1]}"
        )
    _check_kernel_dtype(A, "triangular_solve_cpu")
    solution, clone = run_op(OPS["triangular_solve"], (input, A), (upper, transpose, unitriangular))
    return TriangularSolveResult(solution, clone)


@public(function="cholesky", method="cholesky")
def cholesky_legacy(input, upper=False):  # noqa: A002
    """``torch.cholesky`` (deprecated): the factor L (U with ``upper``), CholeskyBackward0."""
    warn_once(_CHOLESKY_DEPRECATED)
    if input.dim() < 2:
        raise RuntimeError("cholesky: The input tensor A must have at least 2 dimensions.")
    m, n = input.shape[-2:]
    if m != n:
        raise RuntimeError(
            f"cholesky: A must be batches of square matrices, but they are {m} by {n} matrices"
        )
    _check_kernel_dtype(input, "cholesky_cpu")
    failure = _cholesky_failure(input._data)
    if failure is not None:
        index, minor = failure
        raise LinAlgError(
            f"cholesky: {_batch_prefix(input, index)}The factorization could not be completed "
            "because the input is not positive-definite (the leading minor of order "
            f"{minor} is not positive-definite)."
        )
    return run_op(OPS["cholesky"], (input,), (upper,))


# --- Householder reflectors (table entries under "Householder reflectors") ----------------------

GeqrfResult = namedtuple("geqrf", ("a", "tau"))


@public(function=True, method=True)
def geqrf(input):  # noqa: A002
    """``torch.geqrf``: LAPACK's packed QR (reflectors below the diagonal, R on and above it)
    and the reflectors' scales; its backward raises, as PyTorch's."""
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    _check_kernel_dtype(input, "geqrf_cpu")
    a, tau = run_op(OPS["geqrf"], (input,))
    return GeqrfResult(a, tau)


def _check_reflectors(name, input, tau):  # noqa: A002
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(
            f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(tau.shape[:-1])}"
        )
    if tau._dtype is not input._dtype:
        raise RuntimeError(
            f"{name}: tau dtype {dtypes.name_of(tau)} does not match input dtype "
            f"{dtypes.name_of(input)}"
        )


def householder_product(A, tau):  # noqa: N803
    """``torch.linalg.householder_product`` (``torch.orgqr``): the first n columns of the product
    of the Householder reflectors packed in A (m x n, m >= n) and tau."""
    name = "torch.linalg.householder_product"
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(
            f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(
            f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        )
    _check_reflectors(name, A, tau)
    return run_op(OPS["linalg_householder_product"], (A, tau))


@public(function=True, method=True)
def orgqr(input, tau):  # noqa: A002
    return householder_product(input, tau)


@public(function=True, method=True)
def ormqr(input, tau, other, left=True, transpose=False):  # noqa: A002
    """``torch.ormqr``: Q @ other (Q^T with ``transpose``; other @ Q with ``left=False``), Q the
    product of the reflectors packed by geqrf in ``input`` and ``tau``."""
    name = "torch.ormqr"
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other.dim() != input.dim():
        raise RuntimeError(
            f"{name}: Expected other to have the same number of dimensions as input, but got "
            f"other.ndim equal to {other.dim()} and input.ndim is equal to {input.dim()}"
        )
    side, which = (-2, "other.shape[-2]") if left else (-1, "other.shape[-1]")
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{name}: {which} must be equal to input.shape[-2]")
    if tau.shape[-1] > min(other.shape[side], input.shape[-1]):
        raise RuntimeError(
            f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])"
        )
    _check_reflectors(name, input, tau)
    return run_op(OPS["ormqr"], (input, tau, other), (left, transpose))
