"""``torch.linalg.lstsq``: the least-squares solution X of A X = B, and the squared residuals.

The solution is the minimum-norm least-squares one (NumPy's lstsq, LAPACK's gelsd), which every
driver gives for a matrix of full rank; laid out as LAPACK leaves it (the first n rows of a
column-major max(m, n) x k buffer). The backward, over the backends of ``formula_linalg``:

- through X = pinv(A) B: gB = pinv(A)^T gX, and A's part through pinv's derivative;
- through the residuals r_j = ||A x_j - b_j||^2, at the optimum (where their derivative in x_j
  vanishes): gA = 2 (A X - B) diag(g_r) X^T and gB = -2 (A X - B) diag(g_r).
"""

import functools

import numpy as np

from nbgrad.ops.formula_linalg import _Arrays, _pinv_backward, _Tensors, matrix_batch

DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def default_rcond(a):
    return np.finfo(a.dtype).eps * max(a.shape[-2:])


def _lapack_layout(x, rows):
    """X (..., n, k) in the first n rows of a column-major (..., rows, k) buffer."""
    n, k = x.shape[-2:]
    buffer = np.zeros((*x.shape[:-2], k, rows), x.dtype)
    buffer[..., :n] = np.swapaxes(x, -1, -2)
    return np.swapaxes(buffer, -1, -2)[..., :n, :]


def solve_least_squares(a, b, rcond):
    """Per matrix: (X, rank, singular values), with singular values below rcond * the largest
    treated as zero."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    m, n = a.shape[-2:]
    flat_a, flat_b = matrix_batch(a), matrix_batch(b)
    solutions, ranks, values = [], [], []
    for matrix, rhs in zip(flat_a, flat_b):
        x, _, rank, s = np.linalg.lstsq(matrix, rhs, rcond=rcond)
        solutions.append(x)
        ranks.append(rank)
        values.append(s)
    k = min(m, n)
    x = np.array(solutions, a.dtype).reshape(*batch, n, b.shape[-1])
    ranks = np.array(ranks, np.int64).reshape(batch)
    values = np.array(values, a.dtype).reshape(*batch, k)
    return x, ranks, values


def lstsq(a, b, rcond, driver, vector):
    """``[solution, residuals]``: the residuals only where LAPACK computes them (m > n, a driver
    other than gelsy, every matrix of full rank), else an empty tensor."""
    m, n = a.shape[-2:]
    rhs = b[..., None] if vector else b
    x, ranks, _ = solve_least_squares(a, rhs, rcond)
    if driver != "gelsy" and m > n and np.all(ranks == n):
        residual = a @ x - rhs
        residuals = (residual * residual).sum(-2)  # (..., 1) for a vector, as LAPACK's
    else:
        residuals = np.zeros(0, a.dtype)
    solution = _lapack_layout(x, max(m, n))
    return [solution[..., 0] if vector else solution, residuals]


def _lstsq_backward(B, grad, self, b, solution, wrt_b):
    grad_x, grad_residuals = grad
    vector = solution.ndim < self.ndim
    x = B.unsqueeze(solution, -1) if vector else solution
    rhs = B.unsqueeze(b, -1) if vector else b
    result = None
    if grad_x is not None:
        g = B.unsqueeze(grad_x, -1) if vector else grad_x
        pinv = B.pinv(self)
        if wrt_b:
            result = B.mT(pinv) @ g
        else:
            result = _pinv_backward(B, g @ B.mT(rhs), pinv, self)
    if _has_values(grad_residuals):
        g_r = B.unsqueeze(grad_residuals, -2)
        scaled = (self @ x - rhs) * g_r * 2
        part = -scaled if wrt_b else scaled @ B.mT(x)
        result = part if result is None else result + part
    if result is None:
        return None
    return result[..., 0] if vector and wrt_b else result


def _has_values(grad):
    """A gradient for the residuals, which are empty where LAPACK does not compute them."""
    if grad is None:
        return False
    return (grad.size if isinstance(grad, np.ndarray) else grad.numel()) > 0


class _LstsqArrays(_Arrays):
    pinv = staticmethod(np.linalg.pinv)


class _LstsqTensors(_Tensors):
    @staticmethod
    def pinv(a):
        import nbgrad

        return nbgrad.linalg.pinv(a)


ARRAY_NAMESPACE = {"lstsq_backward": functools.partial(_lstsq_backward, _LstsqArrays)}


def tensor_namespace():
    return {"lstsq_backward": functools.partial(_lstsq_backward, _LstsqTensors)}
