"""``torch.linalg``: vector norms of any order, matrix norms (Frobenius; 2, -2 and nuclear from
singular values), ``norm`` built from them as PyTorch builds it, ``cross``, and the determinants,
inverses, solvers and decompositions (det, slogdet, inv, solve, cholesky, qr, eigh, svd, pinv,
matrix_exp, cond, solve_triangular)."""

from nbgrad.ops.functions import vector_norm
from nbgrad.ops.functions.linalg_decompositions import (
    LinAlgError,
    cholesky,
    cholesky_ex,
    cond,
    det,
    eigh,
    eigvalsh,
    inv,
    inv_ex,
    matrix_exp,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    svdvals,
)
from nbgrad.ops.functions.everyday import matrix_power, multi_dot, vecdot
from nbgrad.ops.functions.linalg_more import cross, matrix_norm, norm

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "inv_ex",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "vecdot",
    "vector_norm",
]
