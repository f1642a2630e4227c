"""Kernels and derivative helpers of the LU family and the legacy solvers: ``linalg.lu_factor``,
``linalg.lu``, ``lu_unpack``, ``linalg.lu_solve``, ``torch.triangular_solve`` and
``torch.cholesky``.

The forwards follow LAPACK: ``getrf`` (partial pivoting, 1-based int32 pivots, ``info`` the first
zero pivot), ``getrs`` (triangular substitutions with L and U) and ``trtrs``. Triangular systems
are solved by substitution here, so that a zero on the diagonal gives inf and nan as LAPACK does,
not NumPy's LinAlgError.

As in ``formula_linalg``, each backward helper is written once over a backend (NumPy arrays for
a plain backward, nbgrad tensors for ``create_graph=True``). The formulas are derived for real
inputs from A = P L U (see ``_lu_backward``).
"""

import functools
import math

import numpy as np

from nbgrad.ops.formula_linalg import _Arrays, _Tensors, column_major, matrix_batch

# --- forwards ------------------------------------------------------------------------------------


def lu_factor(a):
    """LAPACK getrf on a batch of m x n matrices: ``(LU, pivots, info)``; LU column-major as
    ATen returns it, pivots (1-based, int32) and info per matrix."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    lu = matrix_batch(np.array(a, dtype=a.dtype, copy=True))
    count = lu.shape[0]
    pivots = np.zeros((count, k), np.int32)
    info = np.zeros(count, np.int32)
    rows = np.arange(count)
    for j in range(k):
        p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1) if m > j else np.full(count, j)
        pivots[:, j] = p + 1
        row_j = lu[rows, j].copy()
        lu[rows, j] = lu[rows, p]
        lu[rows, p] = row_j
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        # LAPACK leaves the column below a zero pivot as it is, and goes on.
        lu[:, j + 1 :, j] /= np.where(zero, 1, pivot)[:, None]
        lu[:, j + 1 :, j + 1 :] -= lu[:, j + 1 :, j, None] * lu[:, j, None, j + 1 :]
    return column_major(lu.reshape(a.shape)), pivots.reshape(*batch, k), info.reshape(batch)


def row_order(pivots, m):
    """The rows of A in the order P^T A = L U takes them: the pivots' swaps applied in turn."""
    flat = pivots.reshape(math.prod(pivots.shape[:-1]), pivots.shape[-1])  # (see matrix_batch)
    order = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[-1]):
        target = flat[:, j] - 1
        here = order[:, j].copy()
        order[:, j] = order[rows, target]
        order[rows, target] = here
    return order.reshape(*pivots.shape[:-1], m)


def permutation(pivots, m, dtype):
    """P, with A = P L U: column j of P is the unit vector of the row that became row j."""
    order = row_order(pivots, m)
    p = np.zeros((*order.shape, m), dtype)
    np.put_along_axis(p, order[..., :, None], 1, axis=-1)  # P^T[j, order[j]] = 1
    return np.ascontiguousarray(np.swapaxes(p, -1, -2))


def unpack(lu):
    """L (unit lower, m x k) and U (upper, k x n) packed in LU, both row-major."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = np.tril(lu, -1)[..., :, :k] + np.eye(m, k, dtype=lu.dtype)
    upper = np.triu(lu)[..., :k, :]
    return np.ascontiguousarray(lower), np.ascontiguousarray(upper)


def lu(a):
    """``linalg.lu``: ``P, L, U``, row-major, as ATen unpacks them."""
    factors, pivots, _ = lu_factor(a)
    lower, upper = unpack(factors)
    return permutation(pivots, a.shape[-2], a.dtype), lower, upper


def lu_unpack(lu_data, unpack_data):
    """``torch.lu_unpack``'s ``[L, U]``; empty tensors if not ``unpack_data``."""
    if not unpack_data:
        return [np.zeros(0, lu_data.dtype), np.zeros(0, lu_data.dtype)]
    return list(unpack(lu_data))


def substitute(t, b, lower, unit):
    """Solve T X = B for triangular T (its lower or upper triangle) by substitution, batched and
    broadcast; a zero on the diagonal gives inf and nan, as LAPACK's trtrs does."""
    n = t.shape[-1]
    batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = np.broadcast_to(t, (*batch, n, n))
    x = np.array(np.broadcast_to(b, (*batch, *b.shape[-2:])), dtype=np.result_type(t, b))
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            x[..., i, :] -= np.einsum("...j,...jk->...k", t[..., i, done], x[..., done, :])
            if not unit:
                x[..., i, :] /= t[..., i, i, None]
    return x


def lu_solve(lu_data, pivots, b, left, adjoint):
    """``linalg.lu_solve``: X with A X = B (A^T X = B if ``adjoint``; X A = B, X A^T = B for
    ``left=False``), A = P L U given as LAPACK's packed LU and pivots."""
    if not left:  # X A = B is A^T X^T = B^T
        x_t = lu_solve(lu_data, pivots, np.swapaxes(b, -1, -2), True, not adjoint)
        return np.ascontiguousarray(np.swapaxes(x_t, -1, -2))
    order = row_order(pivots, lu_data.shape[-1])
    if not adjoint:  # U^{-1} L^{-1} P^T B
        y = substitute(lu_data, _take_rows(b, order), lower=True, unit=True)
        return column_major(substitute(lu_data, y, lower=False, unit=False))
    # A^T = U^T L^T P^T: X = P L^{-T} U^{-T} B
    lu_t = np.swapaxes(lu_data, -1, -2)
    y = substitute(lu_t, b, lower=True, unit=False)
    y = substitute(lu_t, y, lower=False, unit=True)
    x = np.empty_like(y)
    np.put_along_axis(x, np.broadcast_to(order[..., :, None], y.shape), y, axis=-2)
    return column_major(x)


def _take_rows(b, order):
    """B's rows in ``order``, B and order broadcast over their batch dims."""
    batch = np.broadcast_shapes(order.shape[:-1], b.shape[:-2])
    b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    order = np.broadcast_to(order, (*batch, order.shape[-1]))
    return np.take_along_axis(b, order[..., :, None], axis=-2)


def triangular_solve(b, a, upper, transpose, unitriangular):
    """``torch.triangular_solve``: ``[X, copy of A]`` with op(A) X = B, op the transpose if
    ``transpose``; both broadcast to the common batch shape, column-major."""
    t = np.swapaxes(a, -1, -2) if transpose else a
    lower = upper == transpose  # the transpose of an upper triangle is lower
    x = substitute(t, b, lower=lower, unit=unitriangular)
    batch = x.shape[:-2]
    clone = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    return [column_major(x), column_major(clone)]


def cholesky(a, upper):
    """``torch.cholesky``: the factor, column-major as ATen returns it."""
    return column_major(np.linalg.cholesky(a, upper=upper))


# --- backward helpers, over a backend ------------------------------------------------------------


class _LuArrays(_Arrays):
    zeros = staticmethod(lambda shape, like: np.zeros(shape, like.dtype))

    @staticmethod
    def triangular(t, b, upper, left, unitriangular):
        """Solve T X = B (X T = B if not ``left``) for the given triangle of T."""
        if left:
            return substitute(t, b, lower=not upper, unit=unitriangular)
        x_t = substitute(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), upper, unitriangular)
        return np.swapaxes(x_t, -1, -2)

    lu_solve = staticmethod(lu_solve)
    unpack = staticmethod(unpack)
    constant = staticmethod(lambda array, like: array.astype(like.dtype, copy=False))


class _LuTensors(_Tensors):
    @staticmethod
    def zeros(shape, like):
        return like.new_zeros(tuple(shape))

    @staticmethod
    def triangular(t, b, upper, left, unitriangular):
        import nbgrad

        return nbgrad.linalg.solve_triangular(
            t, b, upper=upper, left=left, unitriangular=unitriangular
        )

    @staticmethod
    def lu_solve(lu_data, pivots, b, left, adjoint):
        import nbgrad

        return nbgrad.linalg.lu_solve(
            lu_data, _pivots_tensor(pivots), b, left=left, adjoint=adjoint
        )

    @staticmethod
    def unpack(lu_data):
        import nbgrad

        m, n = lu_data.shape[-2:]
        pivots = np.broadcast_to(np.arange(1, min(m, n) + 1, dtype=np.int32),
                                 (*lu_data.shape[:-2], min(m, n)))  # fmt: skip
        _, lower, upper = nbgrad.lu_unpack(lu_data, _pivots_tensor(pivots), unpack_pivots=False)
        return lower, upper

    @staticmethod
    def constant(array, like):
        import nbgrad

        return nbgrad.tensor(array.astype(like.dtype.numpy, copy=False))


def _pivots_tensor(pivots):
    from nbgrad.autograd.tensor import Tensor

    return pivots if isinstance(pivots, Tensor) else Tensor._make(np.ascontiguousarray(pivots))


def _pivots_array(pivots):
    return pivots if isinstance(pivots, np.ndarray) else pivots.numpy()


def _lu_backward(B, grad_L, grad_U, P, L, U):  # noqa: N803
    """The gradient of A = P L U from those of L (unit lower, m x k) and U (upper, k x n).

    Square: with X = L^{-1} P^T dA U^{-1}, dL = L tril(X, -1) and dU = triu(X) U, so
    gA = P L^{-T} (tril(L^T gL, -1) + triu(gU U^T)) U^{-T}. A wide A = P L [U1 | U2] is the square
    case for U1, with gL less L^{-T} gU2 U2^T, and gA2 = P L^{-T} gU2; a tall one, by symmetry.
    """
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if grad_L is None:
        grad_L = B.zeros_like(L)
    if grad_U is None:
        grad_U = B.zeros_like(U)
    if m <= n:
        U1, grad_U1 = U[..., :, :k], grad_U[..., :, :k]
        inner = B.mT(L) @ grad_L
        if m < n:
            inner = inner - grad_U[..., :, k:] @ B.mT(U[..., :, k:])
        M = B.tril(inner, -1) + B.triu(grad_U1 @ B.mT(U1))  # noqa: N806
        left = B.triangular(B.mT(U1), M, False, False, False)  # M U1^{-T}
        if m < n:
            left = B.cat([left, grad_U[..., :, k:]], -1)
        grad_A = B.triangular(B.mT(L), left, True, True, True)  # L^{-T} (...)
    else:
        L1, grad_L1 = L[..., :k, :], grad_L[..., :k, :]  # noqa: N806
        inner = grad_U @ B.mT(U) - B.mT(L[..., k:, :]) @ grad_L[..., k:, :]
        M = B.tril(B.mT(L1) @ grad_L1, -1) + B.triu(inner)  # noqa: N806
        top = B.triangular(B.mT(L1), M, True, True, True)  # L1^{-T} M
        stacked = B.cat([top, grad_L[..., k:, :]], -2)
        grad_A = B.triangular(B.mT(U), stacked, False, False, False)  # (...) U^{-T}
    return B.constant(_array(P), grad_A) @ grad_A


def _array(x):
    return x if isinstance(x, np.ndarray) else x.detach().numpy()


def _linalg_lu_backward(B, grad, P, L, U):  # noqa: N803
    grad_L, grad_U = grad
    if grad_L is None and grad_U is None:
        return None
    return _lu_backward(B, grad_L, grad_U, P, L, U)


def _lu_factor_ex_backward(B, grad, LU, pivots):  # noqa: N803
    """The packed LU's gradient is L's below the diagonal and U's on and above it."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    L, U = B.unpack(LU)  # noqa: N806
    P = permutation(_pivots_array(pivots), m, _array(L).dtype)  # noqa: N806
    grad_L = B.tril(grad, -1)[..., :, :k]
    grad_U = B.triu(grad)[..., :k, :]
    return _lu_backward(B, grad_L, grad_U, P, L, U)


def _lu_unpack_backward(B, grad, rows, columns):
    """L's strict lower triangle and U's upper one, put back where LU packs them."""
    grad_L, grad_U = grad
    k = min(rows, columns)
    parts = []
    if grad_L is not None:
        lower = B.tril(grad_L, -1)
        if columns > k:  # a wide LU: L is square, m x m
            pad = B.zeros((*lower.shape[:-1], columns - k), lower)
            lower = B.cat([lower, pad], -1)
        parts.append(lower)
    if grad_U is not None:
        upper = B.triu(grad_U)
        if rows > k:  # a tall LU: U is n x n
            pad = B.zeros((*upper.shape[:-2], rows - k, columns), upper)
            upper = B.cat([upper, pad], -2)
        parts.append(upper)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else parts[0] + parts[1]


def _lu_solve_lu_backward(B, grad, LU, pivots, result, left, adjoint):  # noqa: N803
    """dX = -A^{-1} dA X (for A X = B) gives gA = -A^{-T} gX X^T; the other three systems
    likewise. Then gA -> the packed LU through A = P L U, as above."""
    X = result  # noqa: N806
    if left and not adjoint:
        grad_A = -(B.lu_solve(LU, pivots, grad, True, True) @ B.mT(X))
    elif left:
        grad_A = -(X @ B.mT(B.lu_solve(LU, pivots, grad, True, False)))
    elif not adjoint:
        grad_A = -(B.mT(X) @ B.lu_solve(LU, pivots, grad, False, True))
    else:
        grad_A = -(B.mT(B.lu_solve(LU, pivots, grad, False, False)) @ X)
    L, U = B.unpack(LU)  # noqa: N806
    P = permutation(_pivots_array(pivots), LU.shape[-1], _array(L).dtype)  # noqa: N806
    permuted = B.constant(np.swapaxes(P, -1, -2), grad_A) @ grad_A  # P^T gA
    return B.tril(permuted @ B.mT(U), -1) + B.triu(B.mT(L) @ permuted)


def _lu_solve_b_backward(B, grad, LU, pivots, left, adjoint):  # noqa: N803
    return B.lu_solve(LU, pivots, grad, left, not adjoint)


def _triangular_solve_backward(B, grad, A, solution, upper, transpose, unitriangular, wrt_A):  # noqa: N803
    """X = op(A)^{-1} B: gB = op(A)^{-T} gX, gA = -gB X^T (its transpose when ``transpose``) on
    A's triangle, plus the gradient of the returned copy of A."""
    grad_x, grad_clone = grad
    grad_b = None
    if grad_x is not None:
        t = A if transpose else B.mT(A)  # op(A)^T
        t_upper = upper if transpose else not upper
        grad_b = B.triangular(t, grad_x, t_upper, True, unitriangular)
    if not wrt_A:  # PyTorch's B gets zeros when only the copy of A had a gradient
        return grad_b if grad_b is not None else B.zeros_like(solution)
    grad_a = None
    if grad_b is not None:
        grad_a = -(solution @ B.mT(grad_b)) if transpose else -(grad_b @ B.mT(solution))
        shift = int(unitriangular)
        grad_a = B.triu(grad_a, shift) if upper else B.tril(grad_a, -shift)
    if grad_clone is not None:
        grad_a = grad_clone if grad_a is None else grad_a + grad_clone
    return grad_a


_HELPERS = {
    "linalg_lu_backward": _linalg_lu_backward,
    "lu_factor_ex_backward": _lu_factor_ex_backward,
    "lu_unpack_backward": _lu_unpack_backward,
    "lu_solve_LU_backward": _lu_solve_lu_backward,
    "lu_solve_B_backward": _lu_solve_b_backward,
    "triangular_solve_backward": _triangular_solve_backward,
}


def _quietly(f):
    """A singular factor divides by zero: inf and nan, as in PyTorch, without NumPy's warnings."""

    @functools.wraps(f)
    def run(*args):
        with np.errstate(divide="ignore", invalid="ignore"):
            return f(_LuArrays, *args)

    return run


ARRAY_NAMESPACE = {name: _quietly(f) for name, f in _HELPERS.items()}


def tensor_namespace():
    return {name: functools.partial(f, _LuTensors) for name, f in _HELPERS.items()}
