"""Householder reflectors: ``torch.geqrf``, ``linalg.householder_product`` and ``torch.ormqr``.

LAPACK's geqrf packs a QR factorization as reflectors H_i = I - tau_i v_i v_i^T, v_i = (0, ..., 0,
1, A[i+1:, i]); Q = H_1 H_2 ... H_k. householder_product returns Q's first n columns, ormqr
multiplies a matrix by Q (or Q^T). Their backward runs the product of reflectors backwards
(``_reflectors_backward``), over the backends of ``formula_linalg_lu`` so that it is
differentiable again; geqrf's derivative is not implemented in PyTorch, nor here.
"""

import functools

import numpy as np

from nbgrad.ops.formula_linalg import column_major
from nbgrad.ops.formula_linalg_lu import _LuArrays, _LuTensors

# --- forwards ------------------------------------------------------------------------------------


def geqrf(a):
    """LAPACK geqrf: ``[a, tau]``, a column-major as ATen returns it."""
    h, tau = np.linalg.qr(a, mode="raw")  # h holds the reflectors transposed
    return [column_major(np.swapaxes(h, -1, -2)), np.ascontiguousarray(tau)]


def _reflector(B, a, i):
    """v_i: zeros above row i, 1 at row i, A's column i below it."""
    m = a.shape[-2]
    batch = tuple(a.shape[:-2])
    below = a[..., i + 1 :, i]
    head = np.zeros((*batch, i + 1), _dtype(a))
    head[..., i] = 1
    return B.cat([B.constant(head, a), below], -1) if i + 1 < m else B.constant(head, a)


def _dtype(x):
    return x.dtype if isinstance(x, np.ndarray) else x.dtype.numpy


def _apply_reflectors(B, a, tau, identity_columns):
    """H_1 ... H_k times the first ``identity_columns`` columns of the identity; also returns
    every partial product X_i = H_i ... H_k E (backward reads them)."""
    m = a.shape[-2]
    k = tau.shape[-1]
    eye = np.broadcast_to(
        np.eye(m, identity_columns, dtype=_dtype(a)), (*a.shape[:-2], m, identity_columns)
    )
    partial = [None] * (k + 1)
    partial[k] = B.constant(np.array(eye), a)
    for i in reversed(range(k)):
        v = B.unsqueeze(_reflector(B, a, i), -1)
        t = B.unsqueeze(B.unsqueeze(tau[..., i], -1), -1)
        x = partial[i + 1]
        partial[i] = x - (t * v) @ (B.mT(v) @ x)
    return partial


def householder_product(a, tau):
    return column_major(_apply_reflectors(_LuArrays, a, tau, a.shape[-1])[0])


def _op_product(q, c, left, transpose):
    q = np.swapaxes(q, -1, -2) if transpose else q
    return q @ c if left else c @ q


def ormqr(a, tau, c, left, transpose):
    q = _apply_reflectors(_LuArrays, a, tau, a.shape[-2])[0]
    return column_major(_op_product(q, c, left, transpose))


# --- backward helpers, over a backend ------------------------------------------------------------


def _reflectors_backward(B, grad_q, a, tau, identity_columns, wrt_a):
    """The gradient for A (``wrt_a``) or tau of Q = H_1 ... H_k E from Q's gradient: X_i =
    X_{i+1} - tau_i v_i (v_i^T X_{i+1}) gives, with G_i the gradient of X_i and w = X_{i+1}^T v_i,
    d tau_i = -(G_i^T v_i) . w, d v_i = -tau_i (G_i w + X_{i+1} G_i^T v_i), and
    G_{i+1} = H_i G_i; v_i's entries below row i are A's."""
    m, n = a.shape[-2:]
    k = tau.shape[-1]
    partial = _apply_reflectors(B, a, tau, identity_columns)
    g = grad_q
    columns, taus = [], []
    for i in range(k):
        v = B.unsqueeze(_reflector(B, a, i), -1)
        t = B.unsqueeze(B.unsqueeze(tau[..., i], -1), -1)
        x = partial[i + 1]
        g_v = B.mT(g) @ v
        x_v = B.mT(x) @ v
        taus.append((B.mT(g_v) @ x_v)[..., 0, 0] * -1)
        dv = -(t * (g @ x_v + x @ g_v))[..., 0]
        zeros = B.constant(np.zeros((*a.shape[:-2], i + 1), _dtype(a)), a)
        columns.append(B.cat([zeros, dv[..., i + 1 :]], -1) if i + 1 < m else zeros)
        g = g - (t * v) @ (B.mT(v) @ g)
    if not wrt_a:
        return B.cat([B.unsqueeze(d, -1) for d in taus], -1)
    empty = np.zeros((*a.shape[:-2], m), _dtype(a))
    columns += [B.constant(empty, a)] * (n - k)
    return B.cat([B.unsqueeze(c, -1) for c in columns], -1)


def _householder_product_backward(B, grad, input, tau, wrt_input):  # noqa: A002
    return _reflectors_backward(B, grad, input, tau, input.shape[-1], wrt_input)


def _ormqr_backward(B, grad, self, input2, input3, left, transpose, wrt):
    """self and input2 are geqrf's a and tau, input3 the matrix C multiplied by Q."""
    q = _apply_reflectors(B, self, input2, self.shape[-2])[0]
    c = input3
    if wrt == "input3":  # op(Q)^T g on the left, g op(Q)^T on the right
        q_t = q if transpose else B.mT(q)
        return q_t @ grad if left else grad @ q_t
    if left:
        grad_q = c @ B.mT(grad) if transpose else grad @ B.mT(c)
    else:
        grad_q = B.mT(grad) @ c if transpose else B.mT(c) @ grad
    return _reflectors_backward(B, grad_q, self, input2, self.shape[-2], wrt == "self")


_HELPERS = {
    "householder_product_backward": _householder_product_backward,
    "ormqr_backward": _ormqr_backward,
}

ARRAY_NAMESPACE = {name: functools.partial(f, _LuArrays) for name, f in _HELPERS.items()}


def tensor_namespace():
    return {name: functools.partial(f, _LuTensors) for name, f in _HELPERS.items()}
