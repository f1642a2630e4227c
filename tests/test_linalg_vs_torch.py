"""torch.linalg's determinants, inverses, solvers and decompositions against PyTorch: graph
(node names, edges), values, saved values, gradients, second derivatives, and errors.

Eigenvectors and singular vectors are defined up to sign: the expressions use quantities that do
not depend on it (``U @ Vh``, ``V * V``), as PyTorch's own tests do, and the saved vectors of
those nodes are compared up to sign.
"""

import numpy as np
import pytest
from graph_compare import saved_names, structure, to_numpy

import nbgrad


def inputs(T):
    rng = np.random.default_rng(11)
    spd = rng.standard_normal((3, 3))
    values = {
        "A": rng.standard_normal((3, 3)) * 0.3 + 2 * np.eye(3),
        "N": rng.standard_normal((3, 3)) * 0.3 - 2 * np.eye(3),  # negative determinant
        "Ab": rng.standard_normal((2, 3, 3)) * 0.3 + 2 * np.eye(3),
        "B": rng.standard_normal((3, 2)),
        "v": rng.standard_normal(3),
        "S": spd @ spd.T + 3 * np.eye(3),
        "R": rng.standard_normal((4, 3)),
        "W": rng.standard_normal((2, 4)),
        "L": np.linalg.cholesky(spd @ spd.T + 3 * np.eye(3)),
    }
    return {k: T.tensor(v, dtype=T.float64, requires_grad=True) for k, v in values.items()}


EXPRESSIONS = [
    "T.linalg.det(A)",
    "T.det(Ab)",
    "A.det()",
    "T.linalg.slogdet(N).logabsdet",
    "T.linalg.slogdet(Ab)[1]",
    "T.linalg.slogdet(N).sign",
    "T.slogdet(A)[1]",
    "T.logdet(A)",
    "A.logdet()",
    "T.linalg.inv(A)",
    "T.inverse(Ab)",
    "A.inverse()",
    "T.linalg.inv_ex(A).inverse",
    "T.linalg.solve(A, B)",
    "T.linalg.solve(A, v)",
    "T.linalg.solve(Ab, B)",
    "T.linalg.solve(Ab, v)",
    "T.linalg.solve(A, B.mT, left=False)",
    "T.linalg.cholesky(S)",
    "T.linalg.cholesky(S, upper=True)",
    "T.linalg.qr(R).R.abs()",
    "(lambda q, r: q @ r)(*T.linalg.qr(R))",
    "(lambda q, r: q * r.diagonal())(*T.linalg.qr(R))",
    "(lambda q, r: q @ r * r[:, :1])(*T.linalg.qr(W))",
    "T.linalg.qr(W).Q.abs()",
    "T.linalg.eigh(S).eigenvalues",
    "(lambda w, v: v * v * w)(*T.linalg.eigh(S))",
    "T.linalg.eigh(S, UPLO='U').eigenvalues",
    "T.linalg.eigvalsh(S)",
    "T.linalg.svd(R, full_matrices=False).S",
    "(lambda u, s, vh: u @ vh)(*T.linalg.svd(R, full_matrices=False))",
    "(lambda u, s, vh: (u[:, :3] * s) @ vh)(*T.linalg.svd(R))",
    "(lambda u, s, vh: u @ vh[:2] * s.sum())(*T.linalg.svd(W))",
    "T.linalg.svdvals(W)",
    "T.linalg.matrix_norm(R, 2)",
    "T.linalg.matrix_norm(R, -2)",
    "T.linalg.matrix_norm(Ab, 'nuc')",
    "T.linalg.matrix_norm(Ab, 2, keepdim=True)",
    "T.linalg.norm(A, 2)",
    "T.linalg.cond(A)",
    "T.linalg.pinv(R)",
    "T.linalg.pinv(W)",
    "T.pinverse(R)",
    "T.linalg.matrix_exp(A * 0.3)",
    "T.matrix_exp(Ab * 0.3)",
    "T.cholesky_solve(B, L)",
    "T.cholesky_solve(B, L.mT, upper=True)",
    "B.cholesky_solve(L)",
    "A.trace()",
    "T.linalg.solve_triangular(A, B, upper=True)",
    "T.linalg.solve_triangular(Ab, B, upper=False, unitriangular=True)",
    "T.linalg.solve_triangular(A, B.mT, upper=True, left=False)",
    "T.cholesky_inverse(L)",
    "T.cholesky_inverse(L.mT, upper=True)",
    "L.cholesky_inverse()",
]

NODES = {
    "LinalgDetBackward0",
    "LinalgSlogdetBackward0",
    "LinalgInvExBackward0",
    "LinalgSolveExBackward0",
    "LinalgCholeskyExBackward0",
    "LinalgQrBackward0",
    "LinalgEighBackward0",
    "LinalgSvdBackward0",
    "LinalgPinvBackward0",
    "LinalgMatrixExpBackward0",
    "CholeskySolveBackward0",
    "LinalgSolveTriangularBackward0",
    "CholeskyInverseBackward0",
}
GAUGE = {"LinalgSvdBackward0", "LinalgEighBackward0", "LinalgQrBackward0"}


def _nodes(fn, seen=None):
    seen = [] if seen is None else seen
    if fn is not None and fn not in seen:
        seen.append(fn)
        for child, _ in fn.next_functions:
            _nodes(child, seen)
    return seen


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_graph_values_saved_and_grads_match_pytorch(torch, expression):
    ours_in, theirs_in = inputs(nbgrad), inputs(torch)
    ours = eval(expression, {"T": nbgrad, **ours_in})  # noqa: S307 - our own test table
    theirs = eval(expression, {"T": torch, **theirs_in})  # noqa: S307

    assert structure(ours.grad_fn) == structure(theirs.grad_fn)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-10, atol=1e-12)
    assert ours.stride() == theirs.stride()

    # Signs of singular vectors and eigenvectors reach the nodes after them too.
    gauge = any(type(n).__name__ in GAUGE for n in _nodes(theirs.grad_fn))
    for mine, real in zip(_nodes(ours.grad_fn), _nodes(theirs.grad_fn)):
        assert saved_names(real) <= saved_names(mine), type(real).__name__
        for name in saved_names(real):
            a, b = getattr(mine, name), getattr(real, name)
            if isinstance(b, torch.Tensor):
                a, b = to_numpy(a), to_numpy(b)
                if gauge:
                    a, b = np.abs(a), np.abs(b)
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)
                assert a.dtype == b.dtype, name
            elif type(real).__name__ in NODES:  # (other nodes: nbgrad may wrap a saved dim)
                assert a == _signed(b), name

    seed = np.random.default_rng(3).standard_normal(tuple(theirs.shape))
    ours.backward(nbgrad.tensor(seed))
    theirs.backward(torch.tensor(seed))
    for name in ours_in:
        mine, real = ours_in[name].grad, theirs_in[name].grad
        assert (mine is None) == (real is None), name
        if real is not None:
            np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-8, atol=1e-10)


def _signed(value):
    """PyTorch shows a saved negative dim as its unsigned 64-bit wrap-around (2**64 - 1 for -1)."""
    if isinstance(value, int) and value >= 2**63:
        return value - 2**64
    if isinstance(value, tuple):
        return tuple(_signed(v) for v in value)
    return value


SECOND = [
    "T.linalg.det(A)",
    "T.logdet(A)",
    "T.linalg.inv(A)",
    "T.linalg.solve(A, B)",
    "T.linalg.cholesky(S)",
    "T.linalg.eigvalsh(S)",
    "T.linalg.svdvals(R)",
    "T.linalg.pinv(R)",
    "T.linalg.matrix_exp(A * 0.3)",
    "T.cholesky_solve(B, L)",
    "T.linalg.solve_triangular(A, B, upper=True)",
    "T.cholesky_inverse(L)",
]


@pytest.mark.parametrize("expression", SECOND)
def test_second_derivatives_match_pytorch(torch, expression):
    results = []
    for T in (nbgrad, torch):
        values = inputs(T)
        out = eval(expression, {"T": T, **values})  # noqa: S307
        leaves = [v for k, v in values.items() if k in expression.split("(", 1)[1]]
        seed = T.tensor(np.random.default_rng(5).standard_normal(tuple(out.shape)))
        grads = T.autograd.grad(out, leaves, seed, create_graph=True)
        total = sum((g * g).sum() for g in grads)
        results.append([to_numpy(g) for g in T.autograd.grad(total, leaves)])
    for mine, real in zip(*results):
        np.testing.assert_allclose(mine, real, rtol=1e-7, atol=1e-9)


ERRORS = [
    "T.linalg.inv(T.tensor([[1.0, 2.0], [2.0, 4.0]]))",
    "T.linalg.inv(T.stack([T.eye(2), T.tensor([[1.0, 2.0], [2.0, 4.0]])]))",
    "T.inverse(T.tensor([[1.0, 2.0], [2.0, 4.0]]))",
    "T.linalg.inv(T.ones(2, 3))",
    "T.linalg.inv(T.ones(3))",
    "T.linalg.inv(T.ones(2, 2, dtype=T.int64))",
    "T.linalg.det(T.ones(2, 3))",
    "T.linalg.det(T.ones(3))",
    "T.det(T.ones(2, 3))",
    "T.linalg.det(T.ones(2, 2, dtype=T.int64))",
    "T.linalg.slogdet(T.ones(2, 3))",
    "T.logdet(T.ones(2, 3))",
    "T.linalg.solve(T.tensor([[1.0, 2.0], [2.0, 4.0]]), T.ones(2, 1))",
    "T.linalg.solve(T.ones(2, 3), T.ones(2, 1))",
    "T.linalg.solve(T.eye(2), T.ones(3, 1))",
    "T.linalg.cholesky(T.tensor([[1.0, 2.0], [2.0, 4.0]]))",
    "T.linalg.cholesky(-T.eye(2))",
    "T.linalg.cholesky(T.stack([T.eye(2), -T.eye(2)]))",
    "T.linalg.cholesky(T.ones(2, 3))",
    "T.linalg.eigh(T.ones(2, 3))",
    "T.linalg.eigvalsh(T.ones(2, 3))",
    "T.linalg.svd(T.ones(3))",
    "T.linalg.svdvals(T.ones(3))",
    "T.linalg.qr(T.ones(3))",
    "T.linalg.qr(T.ones(3, 3), mode='x')",
    "T.linalg.pinv(T.ones(3))",
    "T.linalg.matrix_exp(T.ones(2, 3))",
    "T.linalg.matrix_exp(T.ones(3))",
    "T.cholesky_solve(T.ones(2, 1), T.ones(3, 3))",
    "T.ones(2, 2, 2).trace()",
    "T.linalg.solve_triangular(T.eye(3), T.ones(2, 2), upper=True)",
    "T.linalg.solve_triangular(T.ones(2, 3), T.ones(2, 2), upper=True)",
    "T.cholesky_inverse(T.ones(3))",
    "T.cholesky_inverse(T.ones(2, 3))",
    "T.linalg.qr(T.randn(4, 3, requires_grad=True), mode='r')[1].sum().backward()",
    "(lambda q, r: (q.sum() + r.sum()).backward())"
    "(*T.linalg.qr(T.randn(4, 3, requires_grad=True), mode='complete'))",
]


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_match_pytorch(torch, expression):
    caught = []
    for T in (nbgrad, torch):
        with pytest.raises(RuntimeError) as info:
            eval(expression, {"T": T})  # noqa: S307
        caught.append(info.value)
    ours, theirs = caught
    assert str(ours) == str(theirs)
    linalg_error = isinstance(theirs, torch.linalg.LinAlgError)
    assert isinstance(ours, nbgrad.linalg.LinAlgError) == linalg_error


def test_linalg_error_is_a_runtime_error():
    assert issubclass(nbgrad.linalg.LinAlgError, RuntimeError)


def test_named_tuples_match_pytorch(torch):
    fields = {
        "slogdet": ("sign", "logabsdet"),
        "qr": ("Q", "R"),
        "eigh": ("eigenvalues", "eigenvectors"),
        "svd": ("U", "S", "Vh"),
        "inv_ex": ("inverse", "info"),
        "cholesky_ex": ("L", "info"),
    }
    for T in (nbgrad, torch):
        A = T.eye(3, dtype=T.float64) * 2
        for name, names in fields.items():
            result = getattr(T.linalg, name)(A)
            assert len(result) == len(names)
            for i, field in enumerate(names):
                assert getattr(result, field) is result[i]
        assert T.linalg.inv_ex(A).info.dtype == T.int32


def test_outputs_of_one_decomposition_share_its_node(torch):
    for T in (nbgrad, torch):
        A = T.tensor(np.eye(3) * 2 + 0.1, requires_grad=True)
        u, s, vh = T.linalg.svd(A)
        assert u.grad_fn is s.grad_fn is vh.grad_fn
        assert (u.output_nr, s.output_nr, vh.output_nr) == (0, 1, 2)
        w = T.linalg.svdvals(A)
        assert w.output_nr == 1
        assert T.linalg.eigvalsh(A + A.mT).output_nr == 0


def test_values_in_float32_match_pytorch(torch):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((3, 3)) * 0.3 + 2 * np.eye(3)).astype(np.float32)
    for name in ("det", "inv", "matrix_exp", "pinv", "svdvals"):
        mine = getattr(nbgrad.linalg, name)(nbgrad.tensor(a))
        real = getattr(torch.linalg, name)(torch.tensor(a))
        assert str(mine.dtype) == str(real.dtype)
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("create_graph", [False, True])
def test_det_gradient_of_a_singular_matrix_matches_pytorch(torch, create_graph):
    """Rank-deficient: the gradient is the cofactor matrix, from an SVD (det A^{-T} has none)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 2)) @ rng.standard_normal((2, 3))
    batch = np.stack([a, 2 * np.eye(3)])
    results = []
    for T in (nbgrad, torch):
        A = T.tensor(batch, requires_grad=True)
        (g,) = T.autograd.grad(T.linalg.det(A).sum(), A, create_graph=create_graph)
        results.append(to_numpy(g))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-8, atol=1e-12)
