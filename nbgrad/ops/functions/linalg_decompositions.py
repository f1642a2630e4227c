"""``torch.linalg``'s determinants, inverses, solvers and decompositions (det, slogdet, inv,
solve, cholesky, qr, eigh, svd, pinv, matrix_exp), ``torch.cholesky_solve``, and the matrix norms
built on singular values (ord 2, -2, "nuc") and ``cond``, as PyTorch composes them.

Each checks its input as ATen does, with ATen's messages, and runs one entry of the table (see
"linear algebra" in ``ops/derivatives.py``); the functions returning several tensors return
PyTorch's named tuples.
"""

from collections import namedtuple

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.formula_linalg import lu_factor, matrix_batch, solve_vector_case
from nbgrad.ops.public import public


class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a matrix the routine cannot factor (singular, not positive
    definite)."""


LinAlgError.__module__ = "nbgrad.linalg"

SlogdetResult = namedtuple("slogdet", ("sign", "logabsdet"))
QRResult = namedtuple("qr", ("Q", "R"))
EighResult = namedtuple("eigh", ("eigenvalues", "eigenvectors"))
SVDResult = namedtuple("svd", ("U", "S", "Vh"))
InvExResult = namedtuple("inv_ex", ("inverse", "info"))
CholeskyExResult = namedtuple("cholesky_ex", ("L", "info"))


def _check_matrices(A, name, square=True, what="A"):  # noqa: N803
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")
    if not A._dtype.is_floating_point:
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{dtypes.LEGACY_TYPE_NAMES[A._dtype][:-6]}"
        )
    m, n = A.shape[-2:]
    if square and m != n:
        raise RuntimeError(
            f"{name}: {what} must be batches of square matrices, but they are {m} by {n} matrices"
        )


def _batch_prefix(A, index):  # noqa: N803
    if A.dim() <= 2:
        return ""
    return f"(Batch element {index}): "


def _first_failure(info):
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    return (None, 0) if not bad.size else (int(bad[0]), int(flat[bad[0]]))


def det(A):  # noqa: N803
    """``torch.linalg.det``: LinalgDetBackward0, which keeps A's LU factorization."""
    _check_matrices(A, "linalg.det")
    return run_op(OPS["linalg_det"], (A,))[0]


@public(function="det", method="det")
def det_function(input):  # noqa: A002
    return det(input)


def slogdet(A):  # noqa: N803
    """``torch.linalg.slogdet``: (sign, log|det|), one LinalgSlogdetBackward0 node."""
    _check_matrices(A, "linalg.slogdet")
    sign, logabsdet = run_op(OPS["linalg_slogdet"], (A,))
    return SlogdetResult(sign, logabsdet)


@public(function="slogdet", method="slogdet")
def slogdet_function(input):  # noqa: A002
    return slogdet(input)


@public(function=True, method=True)
def logdet(input):  # noqa: A002
    """``torch.logdet``: log|det| where det > 0, nan where it is negative (ATen's ``where``)."""
    _check_matrices(input, "logdet")
    sign, logabsdet = slogdet(input)
    from nbgrad.ops.functions import where

    return where(sign == -1.0, float("nan"), logabsdet)


def _raise_singular_inverse(A, info, name="linalg.inv"):  # noqa: N803
    index, position = _first_failure(info)
    if index is not None:
        raise LinAlgError(
            f"{name}: {_batch_prefix(A, index)}The diagonal element {position} is zero, the "
            "inversion could not be completed because the input matrix is singular."
        )


def inv_ex(A, *, check_errors=False):  # noqa: N803
    _check_matrices(A, "linalg.inv_ex")
    info = lu_factor(A._data)[2]
    if check_errors:
        _raise_singular_inverse(A, info, "linalg.inv_ex")
    inverse = run_op(OPS["linalg_inv_ex"], (A,))[0]  # nan where A is singular
    from nbgrad.autograd.tensor import Tensor

    return InvExResult(inverse, Tensor._make(np.asarray(info, np.int32)))


def inv(A):  # noqa: N803
    """``torch.linalg.inv``: LinalgInvExBackward0, PyTorch's error for a singular matrix."""
    _check_matrices(A, "linalg.inv")
    _raise_singular_inverse(A, lu_factor(A._data)[2])
    return run_op(OPS["linalg_inv_ex"], (A,))[0]


@public(function="inverse", method="inverse")
def inverse(input):  # noqa: A002
    return inv(input)


def solve(A, B, *, left=True):  # noqa: N803
    """``torch.linalg.solve``: X with AX = B (XA = B for ``left=False``); B a matrix or a vector."""
    _check_matrices(A, "linalg.solve")
    n = A.shape[-1]
    vector = left and solve_vector_case(tuple(A.shape), tuple(B.shape))
    rows = B.shape[-1] if vector else (B.shape[-2] if left else B.shape[-1])
    if B.dim() < 1 or (not vector and B.dim() < 2) or rows != n:
        b_shape = f"{B.shape[-1]}" if vector or B.dim() < 2 else f"{B.shape[-2]}x{B.shape[-1]}"
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation {equation} "
            f"({n}x{n} and {b_shape})"
        )
    if np.any(lu_factor(A._data)[2]):
        raise LinAlgError(
            "torch.linalg.solve: The solver failed because the input matrix is singular."
        )
    return run_op(OPS["linalg_solve_ex"], (A, B), (left,))[0]


def cholesky_ex(A, *, upper=False, check_errors=False):  # noqa: N803
    """``torch.linalg.cholesky_ex``; a matrix that is not positive definite raises (PyTorch
    returns a partial factor and a nonzero ``info`` unless ``check_errors``)."""
    _check_matrices(A, "linalg.cholesky")
    order = _cholesky_failure(A._data)
    info = np.zeros(A.shape[:-2], np.int32)
    if order is not None:
        index, minor = order
        raise LinAlgError(
            f"linalg.cholesky: {_batch_prefix(A, index)}The factorization could not be "
            "completed because the input is not positive-definite (the leading minor of "
            f"order {minor} is not positive-definite)."
        )
    L = run_op(OPS["linalg_cholesky_ex"], (A,), (upper,))[0]  # noqa: N806
    from nbgrad.autograd.tensor import Tensor

    return CholeskyExResult(L, Tensor._make(info))


def _cholesky_failure(a):
    """(batch index, order of the first leading minor that is not positive definite), or None."""
    flat = matrix_batch(a)
    for index, matrix in enumerate(flat):
        try:
            np.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            for order in range(1, matrix.shape[-1] + 1):
                try:
                    np.linalg.cholesky(matrix[:order, :order])
                except np.linalg.LinAlgError:
                    return index, order
    return None


def cholesky(A, *, upper=False):  # noqa: N803
    """``torch.linalg.cholesky``: L with A = L L^T (LinalgCholeskyExBackward0)."""
    return cholesky_ex(A, upper=upper).L


def qr(A, mode="reduced"):  # noqa: N803
    """``torch.linalg.qr``: Q, R (LinalgQrBackward0); mode "reduced", "complete" or "r"."""
    if A.dim() < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    _check_matrices(A, "linalg.qr", square=False)
    q, r = run_op(OPS["linalg_qr"], (A,), (mode,))
    return QRResult(q, r)


def eigh(A, UPLO="L"):  # noqa: N803
    """``torch.linalg.eigh``: ascending eigenvalues and orthonormal eigenvectors of a symmetric
    matrix (its lower triangle, or upper with ``UPLO="U"``)."""
    _check_matrices(A, "linalg.eigh")
    values, vectors = run_op(OPS["linalg_eigh"], (A,), (UPLO,))
    return EighResult(values, vectors)


def eigvalsh(A, UPLO="L"):  # noqa: N803
    """``torch.linalg.eigvalsh``: the eigenvalues; with a graph, the same node as eigh."""
    _check_matrices(A, "linalg.eigh")
    return run_op(OPS["linalg_eigh"], (A,), (UPLO,))[0]


def svd(A, full_matrices=True):  # noqa: N803
    """``torch.linalg.svd``: U, S, Vh (LinalgSvdBackward0)."""
    _check_matrices(A, "linalg.svd", square=False)
    u, s, vh = run_op(OPS["linalg_svd"], (A,), (full_matrices, min(A.shape[-2:])))
    return SVDResult(u, s, vh)


def svdvals(A):  # noqa: N803
    """``torch.linalg.svdvals``: S, output 1 of LinalgSvdBackward0 when a graph is recorded."""
    _check_matrices(A, "linalg.svd", square=False)
    return run_op(OPS["linalg_svd"], (A,), (False, min(A.shape[-2:])))[1]


def pinv(A, *, atol=None, rtol=None, hermitian=False):  # noqa: N803
    """``torch.linalg.pinv`` with the default tolerances (LinalgPinvBackward0)."""
    if A.dim() < 2 or not A._dtype.is_floating_point:
        name = dtypes.LEGACY_TYPE_NAMES[A._dtype][:-6]
        shape = ", ".join(str(s) for s in A.shape)
        raise RuntimeError(
            f"linalg.pinv({name}{{[{shape}]}}): expected a tensor with 2 or more dimensions of "
            "float, double, cfloat or cdouble types"
        )
    if atol is not None or rtol is not None or hermitian:
        raise NotImplementedError("nbgrad's linalg.pinv takes the default tolerances only")
    return run_op(OPS["linalg_pinv"], (A,))


@public(function=True, method=True)
def pinverse(input, rcond=1e-15):  # noqa: A002
    return pinv(input)


def matrix_exp(A):  # noqa: N803
    """``torch.linalg.matrix_exp`` (LinalgMatrixExpBackward0)."""
    _check_matrices(A, "linalg.matrix_exp")
    return run_op(OPS["linalg_matrix_exp"], (A,))


@public(function="matrix_exp", method="matrix_exp")
def matrix_exp_function(input):  # noqa: A002
    return matrix_exp(input)


@public(function=True, method=True)
def cholesky_solve(input, input2, upper=False):  # noqa: A002
    """``torch.cholesky_solve``: X with (L L^T) X = B, L = ``input2`` (CholeskySolveBackward0)."""
    if input.shape[-2] != input2.shape[-1] or input2.shape[-1] != input2.shape[-2]:
        raise RuntimeError(
            "Incompatible matrix sizes for cholesky_solve: each A matrix is "
            f"{input2.shape[-2]} by {input2.shape[-1]} but each b matrix is "
            f"{input.shape[-2]} by {input.shape[-1]}"
        )
    return run_op(OPS["cholesky_solve"], (input, input2), (upper,))


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):  # noqa: N803
    """``torch.linalg.solve_triangular``: X with AX = B (XA = B), A read as triangular."""
    _check_matrices(A, "linalg.solve_triangular")
    n = A.shape[-1]
    rows = B.shape[-2] if left else B.shape[-1]
    if B.dim() < 2 or rows != n:
        equation = "AX = B" if left else "XA = B"
        b_shape = f"{B.shape[-2]}x{B.shape[-1]}" if B.dim() >= 2 else f"{B.shape[-1]}"
        raise RuntimeError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
            f"{equation} ({n}x{n} and {b_shape})"
        )
    return run_op(OPS["linalg_solve_triangular"], (A, B), (upper, left, unitriangular))


@public(function=True, method=True)
def cholesky_inverse(input, upper=False):  # noqa: A002
    """``torch.cholesky_inverse``: (L L^T)^{-1} from the factor L (CholeskyInverseBackward0)."""
    _check_matrices(input, "cholesky_inverse")
    return run_op(OPS["cholesky_inverse"], (input,), (upper,))


def singular_value_norm(A, ord, dim, keepdim):  # noqa: A002, N803
    """matrix_norm of order 2, -2 or "nuc" as ATen builds it: the two dims moved last (a
    permute, always), svdvals, then amax / amin / sum over them."""
    from nbgrad.ops.functions import amax, amin

    dim0, dim1 = dim
    permutation = [d for d in range(A.dim()) if d not in (dim0, dim1)] + [dim0, dim1]
    s = svdvals(A.permute(permutation))
    if ord == "nuc":
        result = s.sum(-1, keepdim=keepdim)
    else:
        result = (amax if ord == 2 else amin)(s, -1, keepdim=keepdim)
    if keepdim:
        reverse = [permutation.index(d) for d in range(A.dim())]
        result = result.unsqueeze(-1).permute(reverse)
    return result


def cond(A, p=None):  # noqa: N803
    """``torch.linalg.cond`` for p None or 2 (largest over smallest singular value), -2."""
    if p not in (None, 2, -2):
        raise NotImplementedError(f"nbgrad's linalg.cond takes p None, 2 or -2, not {p}")
    _check_matrices(A, "linalg.cond", square=False)
    s = svdvals(A)
    big, small = s.narrow(-1, 0, 1), s.narrow(-1, s.shape[-1] - 1, 1)
    return (big / small if p != -2 else small / big).squeeze(-1)
