"""Kernels and derivative helpers of the linear-algebra ops (``torch.linalg``).

The forwards are NumPy's LAPACK-backed routines, plus an LU factorization with partial pivoting
(LAPACK's ``getrf``: the ``LU`` and ``pivots`` PyTorch saves) and a Padé matrix exponential.

Each backward helper is written once, over a small backend (``_Arrays`` or ``_Tensors``): NumPy
for a plain backward, nbgrad's differentiable operations for ``create_graph=True``, so that
second derivatives go through ``linalg.solve``, ``linalg.inv``, ``linalg.matrix_exp``, ... The
formulas are FunctionsManual.cpp's, for real inputs.
"""

import functools
import math

import numpy as np

# --- forwards ------------------------------------------------------------------------------------


def column_major(a):
    """Each matrix in LAPACK's column-major order, as ATen returns Q, R, U, Vh, inverses, ..."""
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)


def matrix_batch(a):
    """``a`` of shape (..., m, n) as one (count, m, n) array (a view when NumPy can make one).
    The count comes from the batch's shape: a reshape to -1 cannot infer it for a batch of
    empty matrices."""
    return a.reshape(math.prod(a.shape[:-2]), *a.shape[-2:])


def lu_factor(a):
    """LAPACK getrf on a batch: ``(LU, pivots, info)``, pivots 1-based int32, info the 1-based
    position of the first zero pivot (0 if none), per matrix."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    lu = matrix_batch(np.array(a, dtype=a.dtype, copy=True))
    count = lu.shape[0]
    pivots = np.zeros((count, n), np.int32)
    info = np.zeros(count, np.int32)
    rows = np.arange(count)
    for k in range(n):
        p = k + np.argmax(np.abs(lu[:, k:, k]), axis=1)
        pivots[:, k] = p + 1
        row_k = lu[rows, k].copy()
        lu[rows, k] = lu[rows, p]
        lu[rows, p] = row_k
        pivot = lu[:, k, k]
        zero = pivot == 0
        info[(info == 0) & zero] = k + 1
        lu[:, k + 1 :, k] /= np.where(zero, 1, pivot)[:, None]
        lu[:, k + 1 :, k + 1 :] -= lu[:, k + 1 :, k, None] * lu[:, k, None, k + 1 :]
    return lu.reshape(a.shape), pivots.reshape(*batch, n), info.reshape(batch)


def _det_lu(a):
    """The factorization ATen's det keeps: of A^T when A is contiguous (det A^T = det A, and
    A^T is then in LAPACK's column-major order), else of A."""
    return lu_factor(np.swapaxes(a, -1, -2) if a.flags.c_contiguous else a)[:2]


def det(a):
    lu, pivots = _det_lu(a)
    return np.linalg.det(a), lu, pivots


def slogdet(a):
    lu, pivots = _det_lu(a)
    sign, logabsdet = np.linalg.slogdet(a)
    return [np.asarray(sign), np.asarray(logabsdet)], lu, pivots


def inv(a):
    try:
        inverse = column_major(np.linalg.inv(a))
    except np.linalg.LinAlgError:  # inv_ex of a singular matrix: LAPACK's nan, not an error
        inverse = np.full_like(a, np.nan)
    return inverse, np.zeros(a.shape[:-2], np.int32)


def solve_vector_case(a_shape, b_shape):
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-d, or when its shape is A's
    without the last dim."""
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])


def solve(a, b, left):
    lu, pivots, info = lu_factor(a)
    if not left:  # X A = B: A^T X^T = B^T
        a_t, b_t = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
        result = np.ascontiguousarray(np.swapaxes(np.linalg.solve(a_t, b_t), -1, -2))
    elif solve_vector_case(a.shape, b.shape):
        result = np.linalg.solve(a, b[..., None])[..., 0]
        result = column_major(result) if result.ndim > 1 else result
    else:
        result = column_major(np.linalg.solve(a, b))
    return result, lu, pivots, info


def cholesky(a, upper):
    return column_major(np.linalg.cholesky(a, upper=upper)), np.zeros(a.shape[:-2], np.int32)


def qr(a, mode):
    if mode == "r":
        return [np.zeros(0, a.dtype), column_major(np.linalg.qr(a, mode="r"))]
    q, r = np.linalg.qr(a, mode=mode)
    return [column_major(q), column_major(r)]


def eigh(a, uplo):
    values, vectors = np.linalg.eigh(a, UPLO=uplo)
    return [values, column_major(vectors)]


def svd(a, full_matrices, k):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return [column_major(u), s, column_major(vh)]


def pinv(a):
    return np.linalg.pinv(a)


_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip


def matrix_exp(a):
    """exp(A) by scaling and squaring with the [13/13] Padé approximant (Higham 2005)."""
    norm = np.abs(a).sum(axis=-2).max(axis=-1, initial=0.0) if a.size else np.zeros(a.shape[:-2])
    squarings = np.maximum(0, np.ceil(np.log2(np.maximum(norm, 1e-300) / 5.37))).astype(int)
    squarings = int(squarings.max(initial=0))
    x = a / (2.0**squarings)
    b = _PADE13
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (
        x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2)
        + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye
    )  # fmt: skip
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye
    result = np.linalg.solve(v - u, v + u)
    for _ in range(squarings):
        result = result @ result
    return result.astype(a.dtype, copy=False)


def cholesky_solve(b, factor, upper):
    lower = np.swapaxes(factor, -1, -2) if upper else factor
    y = np.linalg.solve(lower, b)
    return column_major(np.linalg.solve(np.swapaxes(lower, -1, -2), y))


def solve_triangular(a, b, upper, left, unitriangular):
    # by substitution: a zero on the diagonal gives inf and nan, as LAPACK's trtrs does
    from nbgrad.ops.formula_linalg_lu import substitute

    if left:
        return column_major(substitute(a, b, lower=not upper, unit=unitriangular))
    x_t = substitute(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), upper, unitriangular)
    return column_major(np.swapaxes(x_t, -1, -2))


def cholesky_inverse(factor, upper):
    t = np.triu(factor) if upper else np.tril(factor)
    product = np.swapaxes(t, -1, -2) @ t if upper else t @ np.swapaxes(t, -1, -2)
    return column_major(np.linalg.inv(product))


# --- backward helpers, over a backend ------------------------------------------------------------


class _Arrays:
    mT = staticmethod(lambda a: np.swapaxes(a, -1, -2))  # noqa: N815
    tril = staticmethod(np.tril)
    triu = staticmethod(np.triu)
    diag_embed = staticmethod(lambda d: d[..., None] * np.eye(d.shape[-1], dtype=d.dtype))
    diagonal = staticmethod(lambda a: np.diagonal(a, 0, -2, -1))
    zeros_like = staticmethod(np.zeros_like)
    inv = staticmethod(np.linalg.inv)
    solve = staticmethod(np.linalg.solve)
    matrix_exp = staticmethod(matrix_exp)
    cholesky_solve = staticmethod(cholesky_solve)
    solve_triangular = staticmethod(solve_triangular)
    cat = staticmethod(lambda pieces, dim: np.concatenate(pieces, axis=dim))
    expand = staticmethod(np.broadcast_to)
    unsqueeze = staticmethod(np.expand_dims)


class _Tensors:
    @staticmethod
    def mT(a):  # noqa: N802
        return a.transpose(-1, -2)

    tril = staticmethod(lambda a, k=0: a.tril(k))
    triu = staticmethod(lambda a, k=0: a.triu(k))
    diag_embed = staticmethod(lambda d: d.diag_embed())
    diagonal = staticmethod(lambda a: a.diagonal(0, -2, -1))
    zeros_like = staticmethod(lambda a: a.new_zeros(a.shape))
    expand = staticmethod(lambda a, shape: a.expand(tuple(shape)))
    unsqueeze = staticmethod(lambda a, dim: a.unsqueeze(dim))

    @staticmethod
    def inv(a):
        import nbgrad

        return nbgrad.linalg.inv(a)

    @staticmethod
    def solve(a, b):
        import nbgrad

        return nbgrad.linalg.solve(a, b)

    @staticmethod
    def matrix_exp(a):
        import nbgrad

        return nbgrad.linalg.matrix_exp(a)

    @staticmethod
    def cholesky_solve(b, factor, upper):
        import nbgrad

        return nbgrad.cholesky_solve(b, factor, upper)

    @staticmethod
    def solve_triangular(a, b, upper, left, unitriangular):
        import nbgrad

        return nbgrad.linalg.solve_triangular(
            a, b, upper=upper, left=left, unitriangular=unitriangular
        )

    @staticmethod
    def cat(pieces, dim):
        import nbgrad

        return nbgrad.cat(pieces, dim)


def _det_backward(B, grad, result, A):
    """grad * det(A) A^{-T}; where A is (nearly) singular, |det| < 100 eps, the cofactor matrix
    from an SVD, as PyTorch (for the whole batch here: it is the same matrix elsewhere)."""
    eps = np.finfo(_dtype_of(A)).eps
    if np.any(np.abs(_array_of(result)) < 100 * eps):
        u, s, vh = np.linalg.svd(A) if B is _Arrays else _tensor_svd(A)
        sign = np.linalg.det(_array_of(u)) * np.linalg.det(_array_of(vh))
        n = s.shape[-1]
        others = B.cat(
            [_product(B, B.cat([s[..., :i], s[..., i + 1 :]], -1)) for i in range(n)], -1
        )
        scale = B.unsqueeze(grad, -1) * others * _constant(B, sign[..., None], s)
        return (u * B.unsqueeze(scale, -2)) @ vh
    return (grad * result)[..., None, None] * B.mT(B.inv(A))


def _array_of(x):
    return x if isinstance(x, np.ndarray) else x.detach().numpy()


def _dtype_of(x):
    return x.dtype if isinstance(x, np.ndarray) else x.dtype.numpy


def _tensor_svd(a):
    import nbgrad

    return nbgrad.linalg.svd(a)


def _product(B, x):
    if B is _Arrays:
        return np.prod(x, axis=-1, keepdims=True)
    return x.prod(-1, keepdim=True)


def _constant(B, values, like):
    if B is _Arrays:
        return values.astype(like.dtype)
    import nbgrad

    return nbgrad.tensor(values.astype(like.dtype.numpy))


def _slogdet_backward(B, grad, A):
    g = grad[1]
    if g is None:  # the sign alone: no gradient at all (PyTorch leaves A.grad None)
        return None
    return g[..., None, None] * B.mT(B.inv(A))


def _inv_backward(B, grad, inverse):
    t = B.mT(inverse)
    return -(t @ grad @ t)


def _solve_backward(B, grad, result, A, left, wrt_A):
    vector = result.ndim < A.ndim
    if not left:
        g_b = B.mT(B.solve(A, B.mT(grad)))  # grad A^{-T}
        return -(B.mT(result) @ g_b) if wrt_A else g_b
    if vector:
        g_b = B.solve(B.mT(A), B.unsqueeze(grad, -1))[..., 0]
        if not wrt_A:
            return g_b
        return -(B.unsqueeze(g_b, -1) * B.unsqueeze(result, -2))
    g_b = B.solve(B.mT(A), grad)
    return -(g_b @ B.mT(result)) if wrt_A else g_b


def _cholesky_backward(B, grad, L, upper):
    if upper:
        L, grad = B.mT(L), B.mT(grad)
    g = B.tril(B.mT(L) @ grad)
    g = 0.5 * (g + B.mT(B.tril(g, -1)))
    l_inv = B.inv(L)
    return B.mT(l_inv) @ g @ l_inv


def _syminvadj(B, x):
    return x + B.mT(x) - B.diag_embed(B.diagonal(x))


def _qr_backward(B, grad, Q, R, mode):
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
            "through linalg.qr."
        )
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        )
    g_q, g_r = grad
    if m < n:  # A = Q [R1 | R2]: Y = Q R2 moves Q too; then the square case for X = Q R1
        g_r1 = None if g_r is None else g_r[..., :, :m]
        g_y = B.zeros_like(R[..., :, m:]) if g_r is None else Q @ g_r[..., :, m:]
        if g_r is not None:
            extra = Q @ (R[..., :, m:] @ B.mT(g_r[..., :, m:]))
            g_q = extra if g_q is None else g_q + extra
        g_x = _qr_backward(B, (g_q, g_r1), Q, R[..., :, :m], mode)
        return B.cat([g_x, g_y], -1)
    inner = 0
    if g_r is not None:
        inner = g_r @ B.mT(R)
    if g_q is not None:
        inner = inner - B.mT(Q) @ g_q
    g_a = Q @ _syminvadj(B, B.triu(inner)) if not isinstance(inner, int) else 0
    if g_q is not None:
        g_a = g_a + g_q
    # g_a R^{-T}
    return B.mT(B.solve(R, B.mT(g_a)))


def _eigh_backward(B, grad, eigenvalues, eigenvectors):
    g_l, g_v = grad
    V = eigenvectors
    if g_v is None:
        if g_l is None:
            return B.zeros_like(V)
        return V @ (B.unsqueeze(g_l, -1) * B.mT(V))
    vhgv = B.mT(V) @ g_v
    vhgv = 0.5 * (vhgv - B.mT(vhgv))
    gaps = B.unsqueeze(eigenvalues, -2) - B.unsqueeze(eigenvalues, -1)  # L_j - L_i
    eye = np.eye(V.shape[-1], dtype=bool)
    inner = vhgv / (gaps + _as_like(B, eye, gaps))
    inner = inner * _as_like(B, ~eye, gaps)
    if g_l is not None:
        inner = inner + B.diag_embed(g_l)
    return V @ inner @ B.mT(V)


def _as_like(B, mask, like):
    if B is _Arrays:
        return mask.astype(like.dtype)
    import nbgrad

    return nbgrad.tensor(mask.astype(like.dtype.numpy))


def _svd_backward(B, grad, U, S, Vh, full_matrices):
    g_u, g_s, g_vh = grad
    k = S.shape[-1]
    if full_matrices:
        U, Vh = U[..., :, :k], Vh[..., :k, :]
        g_u = None if g_u is None else g_u[..., :, :k]
        g_vh = None if g_vh is None else g_vh[..., :k, :]
    m, n = U.shape[-2], Vh.shape[-1]
    if g_u is None and g_vh is None:
        if g_s is None:
            return B.zeros_like(U @ Vh)
        return U @ (B.unsqueeze(g_s, -1) * Vh)
    s2 = S * S
    eye = np.eye(k, dtype=bool)
    gaps = B.unsqueeze(s2, -2) - B.unsqueeze(s2, -1) + _as_like(B, eye, S)
    g_a = 0
    if g_u is not None:
        uhgu = B.mT(U) @ g_u
        uhgu = uhgu - B.mT(uhgu)
        g_a = uhgu * B.unsqueeze(S, -2)
    if g_vh is not None:
        vhgv = Vh @ B.mT(g_vh)
        vhgv = vhgv - B.mT(vhgv)
        g_a = g_a + B.unsqueeze(S, -1) * vhgv
    g_a = g_a / gaps
    if g_s is not None:
        g_a = g_a + B.diag_embed(g_s)
    if m > n and g_u is not None:
        g_a = U @ g_a
        g_u_s = g_u / B.unsqueeze(S, -2)
        g_a = g_a + g_u_s - U @ (B.mT(U) @ g_u_s)
        return g_a @ Vh
    if m < n and g_vh is not None:
        g_a = g_a @ Vh
        g_v_s = B.mT(g_vh) / B.unsqueeze(S, -2)
        g_a = g_a + B.mT(g_v_s) - (B.mT(g_v_s) @ B.mT(Vh)) @ Vh
        return U @ g_a
    return U @ g_a @ Vh


def _pinv_backward(B, grad, result, A):
    m, n = A.shape[-2], A.shape[-1]
    pinv_h = B.mT(result)
    grad_h = B.mT(grad)
    if m <= n:
        K = grad_h @ result
        k_pinv_h = K @ pinv_h
        return (
            -B.mT(result @ K)
            + k_pinv_h
            - (A @ result) @ k_pinv_h
            + (pinv_h @ result) @ (grad_h - K @ A)
        )
    K = result @ grad_h
    pinv_h_k = pinv_h @ K
    return -B.mT(K @ result) + (grad_h - A @ K) @ result @ pinv_h + pinv_h_k - pinv_h_k @ result @ A


def _matrix_exp_backward(B, grad, A):
    # the upper-right block of exp([[A^T, G], [0, A^T]])
    n = A.shape[-1]
    a_t = B.mT(A)
    top = B.cat([a_t, grad], -1)
    bottom = B.cat([B.zeros_like(grad), a_t], -1)
    return B.matrix_exp(B.cat([top, bottom], -2))[..., :n, n:]


def _cholesky_solve_self(B, grad, self, input2, upper):  # PyTorch's reads (and saves) self
    return B.cholesky_solve(grad, input2, upper)


def _cholesky_solve_input2(B, grad, self, input2, result, upper):
    g_self = B.cholesky_solve(grad, input2, upper)
    common = g_self @ B.mT(result)
    common = common + B.mT(common)
    return -(input2 @ common) if upper else -(common @ input2)


def _solve_triangular_backward(B, grad, self, result, upper, left, unitriangular, wrt_self):
    g_b = B.solve_triangular(B.mT(self), grad, not upper, left, unitriangular)
    if not wrt_self:
        return g_b
    g_a = -(g_b @ B.mT(result)) if left else -(B.mT(result) @ g_b)
    return B.triu(g_a, int(unitriangular)) if upper else B.tril(g_a, -int(unitriangular))


def _cholesky_inverse_backward(B, grad, self, result, upper):
    common = result @ ((grad + B.mT(grad)) @ result)
    return -(self @ common) if upper else -(common @ self)


_HELPERS = {
    "solve_triangular_backward": _solve_triangular_backward,
    "cholesky_inverse_backward": _cholesky_inverse_backward,
    "det_backward": _det_backward,
    "slogdet_backward": _slogdet_backward,
    "inv_backward": _inv_backward,
    "solve_backward": _solve_backward,
    "cholesky_backward": _cholesky_backward,
    "qr_backward": _qr_backward,
    "eigh_backward": _eigh_backward,
    "svd_backward": _svd_backward,
    "pinv_backward": _pinv_backward,
    "matrix_exp_backward": _matrix_exp_backward,
    "cholesky_solve_self_backward": _cholesky_solve_self,
    "cholesky_solve_input2_backward": _cholesky_solve_input2,
}


def _quietly(f):
    """Repeated eigenvalues or singular values divide by zero: inf and nan, as in PyTorch,
    without NumPy's warnings."""

    @functools.wraps(f)
    def run(*args):
        with np.errstate(divide="ignore", invalid="ignore"):
            return f(_Arrays, *args)

    return run


ARRAY_NAMESPACE = {name: functools.partial(f, _Arrays) for name, f in _HELPERS.items()}
ARRAY_NAMESPACE["eigh_backward"] = _quietly(_eigh_backward)
ARRAY_NAMESPACE["svd_backward"] = _quietly(_svd_backward)


def tensor_namespace():
    return {name: functools.partial(f, _Tensors) for name, f in _HELPERS.items()}
