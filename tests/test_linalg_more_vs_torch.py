"""The LU family, the legacy solvers (triangular_solve, cholesky), and the distance and bilinear
ops against PyTorch: graph (node names, edges), values, strides, saved values, gradients,
second derivatives, errors and warnings."""

import re
import warnings

import numpy as np
import pytest
from graph_compare import saved_names, structure, to_numpy

import nbgrad


def inputs(T):
    rng = np.random.default_rng(12)
    spd = rng.standard_normal((3, 3))
    values = {
        "A": rng.standard_normal((3, 3)) * 0.3 + 2 * np.eye(3),
        "Ab": rng.standard_normal((2, 3, 3)) * 0.3 + 2 * np.eye(3),
        "B": rng.standard_normal((3, 2)),
        "Bb": rng.standard_normal((2, 3, 2)),
        "R": rng.standard_normal((4, 3)),  # tall
        "W": rng.standard_normal((3, 5)),  # wide
        "S": spd @ spd.T + 3 * np.eye(3),
        "X1": rng.standard_normal((2, 3)),
        "X2": rng.standard_normal((4, 3)),
        "Xb": rng.standard_normal((2, 2, 3)),
        "Y": rng.standard_normal((27, 3)),  # more than 25 rows: cdist takes the mm path
        "V": rng.standard_normal((2, 4)),
        "Wb": rng.standard_normal((5, 3, 4)),
        "b5": rng.standard_normal(5),
    }
    # Householder reflectors and their scales, as geqrf packs them (NumPy's LAPACK geqrf)
    reflectors, scales = np.linalg.qr(rng.standard_normal((2, 4, 3)), mode="raw")
    values["H"], values["tau"] = np.swapaxes(reflectors, -1, -2), scales
    return {k: T.tensor(v, dtype=T.float64, requires_grad=True) for k, v in values.items()}


def _leaves_in(expression, values):
    names = set(re.findall(r"\b\w+\b", expression))
    return [v for k, v in values.items() if k in names]


def _quiet(expression, T, values):
    with warnings.catch_warnings():  # the deprecation warnings are compared apart
        warnings.simplefilter("ignore")
        return eval(expression, {"T": T, **values})  # noqa: S307 - our own test table


EXPRESSIONS = [
    # matrix norms of orders 1 and inf: the extreme of the vector 1-norms along a dim
    "T.linalg.matrix_norm(Wb, 1)",
    "T.linalg.matrix_norm(Wb, -1, keepdim=True)",
    "T.linalg.matrix_norm(Wb, float('inf'), dim=(2, 0))",
    "T.linalg.matrix_norm(Wb, -float('inf'), dim=(-1, 0), keepdim=True)",
    "T.linalg.norm(R, -float('inf'))",
    "T.linalg.norm(R, 1)",
    "T.linalg.norm(Wb, 1, (0, 2))",
    "T.linalg.lu_factor(A).LU",
    "T.linalg.lu_factor(Ab).LU",
    "T.linalg.lu_factor(R).LU",
    "T.linalg.lu_factor(W).LU",
    "T.linalg.lu_factor_ex(A).LU * 2",
    "T.lu(A)[0]",
    "T.lu(Ab, get_infos=True).LU",
    "A.lu()[0]",
    "T.linalg.lu(A).L",
    "T.linalg.lu(A).U",
    "(lambda P, L, U: L @ U)(*T.linalg.lu(R))",
    "(lambda P, L, U: L @ U)(*T.linalg.lu(W))",
    "(lambda P, L, U: P @ L @ U)(*T.linalg.lu(Ab))",
    "T.lu_unpack(*T.linalg.lu_factor(A)).L",
    "(lambda P, L, U: L @ U)(*T.lu_unpack(*T.linalg.lu_factor(R)))",
    "(lambda P, L, U: L @ U)(*T.lu_unpack(*T.linalg.lu_factor(W)))",
    "T.lu_unpack(*T.linalg.lu_factor(A), unpack_pivots=False).U",
    "T.linalg.lu_solve(*T.linalg.lu_factor(A), B)",
    "T.linalg.lu_solve(*T.linalg.lu_factor(A), Bb)",
    "T.linalg.lu_solve(*T.linalg.lu_factor(Ab), B)",
    "T.linalg.lu_solve(*T.linalg.lu_factor(A), B, adjoint=True)",
    "T.linalg.lu_solve(*T.linalg.lu_factor(A), B.mT, left=False)",
    "T.linalg.lu_solve(*T.linalg.lu_factor(A), B.mT, left=False, adjoint=True)",
    "T.lu_solve(B, *T.lu(A))",
    "B.lu_solve(*T.lu(A))",
    "T.triangular_solve(B, A).solution",
    "T.triangular_solve(B, A).cloned_coefficient",
    "(lambda x, c: x.sum() * c)(*T.triangular_solve(B, A, upper=False, transpose=True))",
    "T.triangular_solve(Bb, A, unitriangular=True).solution",
    "B.triangular_solve(Ab, transpose=True).solution",
    "T.cholesky(S)",
    "T.cholesky(S, upper=True)",
    "S.cholesky()",
    # distances: p = 0, 1, 2, inf and others; the matrix-product path of p = 2
    "T.cdist(X1, X2)",
    "T.cdist(X1, X2, p=0)",
    "T.cdist(X1, X2, p=1)",
    "T.cdist(X1, X2, p=0.5)",
    "T.cdist(X1, X2, p=1.5)",
    "T.cdist(X1, X2, p=3)",
    "T.cdist(X1, X2, p=float('inf'))",
    "T.cdist(Xb, X2, p=1)",
    "T.cdist(X1, X2, compute_mode='donot_use_mm_for_euclid_dist')",
    "T.cdist(X1, X2, compute_mode='use_mm_for_euclid_dist')",
    "T.cdist(Xb, X2, compute_mode='use_mm_for_euclid_dist')",
    "T.cdist(Xb, Xb[:1], compute_mode='use_mm_for_euclid_dist')",
    "T.cdist(X1, Y)",
    "T.cdist(Y, X2, p=1)",
    "T.pdist(X2)",
    "T.nn.functional.pdist(X2, 1)",
    "T.nn.functional.pdist(X2, 0)",
    "T.nn.functional.pdist(X2, 0.5)",
    "T.nn.functional.pdist(X2, 3)",
    "T.nn.functional.pdist(X2, float('inf'))",
    "T.pdist(X2.mT.mT * 1)",
    "T.pdist(R.mT)",
    # bilinear: _trilinear between two reshapes
    "T.nn.functional.bilinear(X1, V, Wb, b5)",
    "T.nn.functional.bilinear(X1, V, Wb)",
    "T.bilinear(Xb, T.stack([V, V]), Wb, b5)",
    "T.nn.functional.bilinear(X1[0], V[0], Wb)",
    "T._trilinear(X1, Wb, V, [1, 3], [0], [1, 2], [2, 3])",
    # composites: matrix_power, vecdot, multi_dot
    "T.linalg.matrix_power(A, 0)",
    "T.linalg.matrix_power(A.mT, 1)",
    "T.linalg.matrix_power(A, 2)",
    "T.linalg.matrix_power(Ab, 3)",
    "T.linalg.matrix_power(A, 6)",
    "T.linalg.matrix_power(A, -1)",
    "T.matrix_power(A, -3)",
    "A.matrix_power(7)",
    "T.linalg.vecdot(X1, X2[0])",
    "T.linalg.vecdot(X1[0], X2[0])",
    "T.linalg.vecdot(Xb, X1, dim=-2)",
    "T.linalg.multi_dot([X1, A])",
    "T.linalg.multi_dot([X2[0], A, X1.mT])",
    "T.linalg.multi_dot([X2, A, W, W.mT, X2[0]])",
    "T.linalg.multi_dot([B[:, 0], A, A])",
    # Householder reflectors
    "T.linalg.householder_product(H, tau)",
    "T.linalg.householder_product(H[0], tau[0, :2])",
    "T.orgqr(H[1, :, :2], tau[1, :2])",
    "H.orgqr(tau)",
    "T.ormqr(H[0], tau[0], X2)",
    "T.ormqr(H, tau, T.stack([X2, X2]), transpose=True)",
    "T.ormqr(H[0], tau[0], X2.mT, left=False)",
    "H[1].ormqr(tau[1], R.mT, left=False, transpose=True)",
    # least squares
    "T.linalg.lstsq(R, X2[:, :2]).solution",
    "T.linalg.lstsq(R, X2[:, :2], driver='gelsd').residuals",
    "(lambda x, r, *_: x.sum() * r)(*T.linalg.lstsq(R, X2[:, :2], driver='gels'))",
    "T.linalg.lstsq(W, B, driver='gelss').solution",
    "T.linalg.lstsq(R, X2[:, 0]).solution",
    "T.linalg.lstsq(R, X2[:, 0], driver='gelsd').residuals",
    "T.linalg.lstsq(Ab, Bb, rcond=1e-3).solution",
]

NODES = {
    "LinalgLuFactorExBackward0",
    "LinalgLuBackward0",
    "LuUnpackBackward0",
    "LinalgLuSolveBackward0",
    "TriangularSolveBackward0",
    "CholeskyBackward0",
    "CdistBackward0",
    "PdistBackward0",
    "EuclideanDistBackward0",
    "TrilinearBackward0",
    "LinalgHouseholderProductBackward0",
    "OrmqrBackward0",
    "LinalgLstsqBackward0",
    "LinalgVectorNormBackward0",
    "AmaxBackward0",
    "AminBackward0",
}


def _nodes(fn, seen=None):
    seen = [] if seen is None else seen
    if fn is not None and fn not in seen:
        seen.append(fn)
        for child, _ in fn.next_functions:
            _nodes(child, seen)
    return seen


def _compare_saved(mine, real, torch):
    assert saved_names(real) <= saved_names(mine), type(real).__name__
    for name in saved_names(real):
        a, b = getattr(mine, name), getattr(real, name)
        if isinstance(b, torch.Tensor):
            a, b = to_numpy(a), to_numpy(b)
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)
            assert a.dtype == b.dtype, name
        elif type(real).__name__ in NODES:
            assert a == b, name


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_graph_values_saved_and_grads_match_pytorch(torch, expression):
    ours_in, theirs_in = inputs(nbgrad), inputs(torch)
    ours = _quiet(expression, nbgrad, ours_in)
    theirs = _quiet(expression, torch, theirs_in)

    assert structure(ours.grad_fn) == structure(theirs.grad_fn)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-10, atol=1e-12)
    assert ours.stride() == theirs.stride()
    for mine, real in zip(_nodes(ours.grad_fn), _nodes(theirs.grad_fn)):
        _compare_saved(mine, real, torch)

    seed = np.random.default_rng(3).standard_normal(tuple(theirs.shape))
    ours.backward(nbgrad.tensor(seed))
    theirs.backward(torch.tensor(seed))
    for name in ours_in:
        mine, real = ours_in[name].grad, theirs_in[name].grad
        assert (mine is None) == (real is None), name
        if real is not None:
            np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-8, atol=1e-10)


def test_every_output_matches_pytorch(torch):
    """All outputs of the functions returning several: values, dtypes, strides, requires_grad,
    and which node output each is (P of lu is not one: L and U are outputs 0 and 1)."""
    calls = [
        "T.linalg.lu_factor_ex(Ab)",
        "T.linalg.lu_factor(R)",
        "T.linalg.lu(W)",
        "T.linalg.lu(Ab)",
        "T.lu_unpack(*T.linalg.lu_factor(R))",
        "T.lu_unpack(*T.linalg.lu_factor(A), unpack_data=False)",
        "T.lu(A, get_infos=True)",
        "T.triangular_solve(Bb, A)",
        "T.geqrf(R)",
        "T.geqrf(Ab)",
        "T.linalg.lstsq(R, X2)",
        "T.linalg.lstsq(R, X2, driver='gels')",
        "T.linalg.lstsq(R, X2, driver='gelsd')",
        "T.linalg.lstsq(R, X2, driver='gelss')",
        "T.linalg.lstsq(W, B, driver='gelsd')",
        "T.linalg.lstsq(Ab, Bb[..., 0], driver='gelss')",
    ]
    for call in calls:
        ours = _quiet(call, nbgrad, inputs(nbgrad))
        theirs = _quiet(call, torch, inputs(torch))
        assert len(ours) == len(theirs), call
        for mine, real in zip(ours, theirs):
            np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-10, atol=1e-12)
            assert str(mine.dtype) == str(real.dtype), call
            assert mine.shape == tuple(real.shape), call
            assert mine.requires_grad == real.requires_grad, call
            if real.requires_grad:
                assert mine.output_nr == real.output_nr, call
            if real.numel():
                assert mine.stride() == real.stride(), call
        assert getattr(type(ours), "_fields", None) == tuple(
            getattr(type(theirs), "_fields", None) or _fields_of(theirs)
        ), call


def _fields_of(structseq):
    """The field names of a torch.return_types structseq."""
    names = [n for n in dir(type(structseq)) if not n.startswith("_") and n not in (
        "count", "index", "n_fields", "n_sequence_fields", "n_unnamed_fields")]  # fmt: skip
    return sorted(names, key=lambda n: [getattr(structseq, n) is v for v in structseq].index(True))


SECOND = [
    "T.linalg.lu_factor(A).LU",
    "T.linalg.lu_factor(R).LU",
    "T.linalg.lu_factor(W).LU",
    "(lambda P, L, U: L * U.sum())(*T.linalg.lu(A))",
    "(lambda P, L, U: L @ U)(*T.linalg.lu(R))",
    "(lambda P, L, U: L @ U)(*T.linalg.lu(W))",
    "(lambda P, L, U: L @ U)(*T.lu_unpack(*T.linalg.lu_factor(A)))",
    "T.linalg.lu_solve(*T.linalg.lu_factor(A), B)",
    "T.linalg.lu_solve(*T.linalg.lu_factor(A), B.mT, left=False, adjoint=True)",
    "(lambda x, c: x * c.sum())(*T.triangular_solve(B, A))",
    "T.triangular_solve(B, A, upper=False, transpose=True, unitriangular=True).solution",
    "T.cholesky(S)",
    "T.cdist(X1, Y)",
    "T.cdist(Xb, X2, compute_mode='use_mm_for_euclid_dist')",
    "T.nn.functional.bilinear(X1, V, Wb, b5) ** 2",
    "T.linalg.householder_product(H, tau)",
    "T.ormqr(H[0], tau[0], X2.mT, left=False, transpose=True)",
    "T.linalg.lstsq(R, X2[:, :2]).solution",
    "(lambda x, r, *_: x * r)(*T.linalg.lstsq(R, X2[:, :2], driver='gelsd'))",
    "T.linalg.lstsq(W, B).solution",
]


@pytest.mark.parametrize("expression", SECOND)
def test_second_derivatives_match_pytorch(torch, expression):
    results = []
    for T in (nbgrad, torch):
        values = inputs(T)
        out = _quiet(expression, T, values)
        leaves = _leaves_in(expression, values)
        seed = T.tensor(np.random.default_rng(5).standard_normal(tuple(out.shape)))
        grads = T.autograd.grad(out, leaves, seed, create_graph=True)
        total = sum((g * g).sum() for g in grads)
        results.append([to_numpy(g) for g in T.autograd.grad(total, leaves)])
    for mine, real in zip(*results):
        np.testing.assert_allclose(mine, real, rtol=1e-7, atol=1e-9)


ERRORS = [
    "T.linalg.lu_factor(T.tensor([[1.0, 2.0], [2.0, 4.0]]))",
    "T.linalg.lu_factor(T.stack([T.eye(2), T.zeros(2, 2)]))",
    "T.linalg.lu_factor(T.ones(2, 3))",
    "T.linalg.lu_factor(T.ones(3))",
    "T.linalg.lu_factor(T.eye(2), pivot=False)",
    "T.linalg.lu_factor_ex(T.zeros(2, 2), check_errors=True)",
    "T.linalg.lu_factor_ex(T.ones(3))",
    "T.linalg.lu(T.ones(3))",
    "T.linalg.lu(T.eye(2), pivot=False)",
    "T.lu_unpack(T.ones(3), T.ones(3, dtype=T.int32))",
    "T.lu_unpack(T.eye(3), T.tensor([1, 2, 3]))",
    "T.lu_unpack(T.eye(3), T.tensor([1, 2, 4], dtype=T.int32))",
    "T.linalg.lu_solve(*T.linalg.lu_factor(T.eye(3)), T.ones(2, 3))",
    "T.linalg.lu_solve(*T.linalg.lu_factor(T.eye(3)), T.ones(2, 2), left=False)",
    "T.linalg.lu_solve(*T.linalg.lu_factor(T.eye(3)), T.ones(3))",
    "T.linalg.lu_solve(*T.linalg.lu_factor(T.eye(3)), T.ones(3, 2, dtype=T.float64))",
    "T.linalg.lu_solve(*T.linalg.lu_factor_ex(T.ones(3, 4))[:2], T.ones(3, 2))",
    "T.linalg.lu_solve(T.ones(3), T.ones(3, dtype=T.int32), T.ones(3, 2))",
    "T.linalg.lu_solve(T.eye(3), T.ones(3), T.ones(3, 2))",
    "T.linalg.lu_solve(T.eye(3), T.ones(2, dtype=T.int32), T.ones(3, 2))",
    "T.triangular_solve(T.ones(3, 2), T.ones(2, 2))",
    "T.triangular_solve(T.ones(3), T.ones(3, 3))",
    "T.triangular_solve(T.ones(3, 2), T.ones(3))",
    "T.triangular_solve(T.ones(3, 2), T.ones(3, 3, dtype=T.float64))",
    "T.triangular_solve(T.ones(3, 2), T.ones(2, 3))",
    "T.cholesky(T.tensor([[1.0, 2.0], [2.0, 1.0]]))",
    "T.cholesky(T.stack([T.eye(2), T.tensor([[1.0, 2.0], [2.0, 1.0]])]))",
    "T.cholesky(T.ones(2, 3))",
    "T.cholesky(T.ones(3))",
    "T.cdist(T.ones(3), T.ones(2, 3))",
    "T.cdist(T.ones(2, 3), T.ones(3))",
    "T.cdist(T.ones(2, 3), T.ones(2, 4))",
    "T.cdist(T.ones(2, 3, dtype=T.int64), T.ones(2, 3, dtype=T.int64))",
    "T.cdist(T.ones(2, 3), T.ones(2, 3, dtype=T.int32))",
    "T.cdist(T.ones(2, 3), T.ones(2, 3), p=-1)",
    "T.cdist(T.ones(2, 3), T.ones(2, 3), compute_mode='x')",
    "T.cdist(T.ones(2, 3), T.ones(2, 3, dtype=T.float64))",
    "T.cdist(T.ones(30, 3), T.ones(2, 3, dtype=T.float64))",
    "T.cdist(T.ones(2, 2, 3), T.ones(3, 2, 3))",
    "T.nn.functional.pdist(T.ones(3))",
    "T.nn.functional.pdist(T.ones(3, 2, dtype=T.int64))",
    "T.nn.functional.pdist(T.ones(3, 2), p=-1)",
    "T.nn.functional.bilinear(T.ones(2, 3), T.ones(3, 4), T.ones(5, 3, 4))",
    "T.nn.functional.bilinear(T.ones(2, 3), T.ones(2, 4), T.ones(5, 3, 3))",
    "T.nn.functional.bilinear(T.ones(2, 3), T.ones(2, 4), T.ones(5, 3, 4), T.ones(4))",
    "T.nn.functional.bilinear(T.ones(2, 3), T.ones(2, 4), T.ones(3, 4))",
    "T.nn.functional.bilinear(T.ones(2, 3), T.ones(4), T.ones(5, 3, 4))",
    "T.nn.functional.bilinear(T.ones(2, 3), T.ones(2, 4, dtype=T.float64), T.ones(5, 3, 4))",
    "T.linalg.matrix_power(T.ones(2, 3), 2)",
    "T.linalg.matrix_power(T.ones(3), 2)",
    "T.linalg.matrix_power(T.ones(2, 2, dtype=T.int64), -1)",
    "T.linalg.vecdot(T.ones(3), T.ones(3, dtype=T.float64))",
    "T.linalg.vecdot(T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64))",
    "T.linalg.multi_dot([T.ones(3)])",
    "T.linalg.multi_dot([T.ones(2, 3, 1), T.ones(3)])",
    "T.linalg.multi_dot([T.ones(2, 3), T.ones(3, 2, 1)])",
    "T.linalg.multi_dot([T.ones(2, 3), T.ones(4, 2)])",
    "T.linalg.multi_dot([T.ones(2, 3), T.ones(3, 2, 1), T.ones(2)])",
    "T.linalg.multi_dot([T.ones(2, 3), T.ones(3, 2, dtype=T.float64)])",
    "T.linalg.matrix_rank(T.ones(3))",
    "T.linalg.matrix_rank(T.ones(3, 3, dtype=T.int64))",
    "T.geqrf(T.ones(3))",
    "T.linalg.householder_product(T.ones(3, 4), T.ones(2))",
    "T.linalg.householder_product(T.ones(4, 3), T.ones(4))",
    "T.linalg.householder_product(T.ones(3), T.ones(1))",
    "T.linalg.householder_product(T.ones(4, 3), T.ones(2, dtype=T.float64))",
    "T.linalg.householder_product(T.ones(2, 4, 3), T.ones(3, 2))",
    "T.ormqr(T.ones(4, 3), T.ones(3), T.ones(3, 2))",
    "T.ormqr(T.ones(4, 3), T.ones(5), T.ones(4, 2))",
    "T.ormqr(T.ones(4, 3), T.ones(3), T.ones(2, 3), left=False)",
    "T.ormqr(T.ones(3), T.ones(3), T.ones(3, 2))",
    "T.ormqr(T.ones(2, 4, 3), T.ones(2, 3), T.ones(4, 2))",
    "T.geqrf(T.ones(4, 3, requires_grad=True)).tau.sum().backward()",
    "T.linalg.lstsq(T.ones(3), T.ones(3))",
    "T.linalg.lstsq(T.ones(4, 3), T.ones(3, 2))",
    "T.linalg.lstsq(T.ones(4, 3), T.ones(4, 2), driver='x')",
    "T.linalg.lstsq(T.ones(4, 3), T.ones(4, 2, dtype=T.float64))",
    "T.linalg.lstsq(T.ones(4, 3, dtype=T.int64), T.ones(4, 2, dtype=T.int64))",
    "T.linalg.lstsq(T.ones(4, 3), T.ones(2, 4, 2))",
    "T.linalg.lstsq(T.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]), T.ones(3, 1), driver='gels')",
    "T.linalg.matrix_norm(T.ones(2, 3), ord=3)",
    "T.linalg.matrix_norm(T.ones(2, 3), ord='abc')",
    "T.linalg.norm(T.ones(2, 3), ord=3)",
    "T.linalg.norm(T.ones(2, 2, 3), ord=1)",
    "T.linalg.matrix_norm(T.ones(2, 2, 3), ord=1, dim=(0, -3))",
    "T.linalg.matrix_norm(T.ones(2, 3, dtype=T.int32), ord=1)",
    "T.linalg.matrix_norm(T.ones(3), ord=1)",
    "T.linalg.matrix_norm(T.ones(3, 0), ord=-1)",
]


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_match_pytorch(torch, expression):
    caught = []
    for T in (nbgrad, torch):
        with pytest.raises(Exception) as info:
            _quiet(expression, T, {})
        caught.append(info.value)
    ours, theirs = caught
    assert str(ours) == str(theirs)
    assert isinstance(ours, RuntimeError) == isinstance(theirs, RuntimeError)
    assert isinstance(ours, nbgrad.linalg.LinAlgError) == isinstance(
        theirs, torch.linalg.LinAlgError
    )


@pytest.mark.parametrize(
    "expression",
    [
        "T.linalg.lu_factor(T.ones(2, 2, dtype=T.int64))",
        "T.linalg.lu(T.ones(2, 2, dtype=T.float16))",
        "T.cholesky(T.ones(2, 2, dtype=T.int64))",
        "T.triangular_solve(T.ones(3, 2, dtype=T.int64), T.ones(3, 3, dtype=T.int64))",
        "T.geqrf(T.ones(2, 2, dtype=T.int64))",
    ],
)
def test_dtype_errors_match_pytorch(torch, expression):
    messages = []
    for T in (nbgrad, torch):
        with pytest.raises(NotImplementedError) as info:
            _quiet(expression, T, {})
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_singular_factors_give_pytorch_infs_and_nans(torch):
    for T in (nbgrad, torch):
        result = T.linalg.lu_factor_ex(T.zeros(2, 2))
        assert result.info.item() == 1 and result.pivots.tolist() == [1, 2]
    results = []
    for T in (nbgrad, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solution = T.triangular_solve(T.ones(3, 2), T.zeros(3, 3)).solution
        singular = T.eye(3) - T.diag(T.tensor([0.0, 1.0, 0.0]))
        right = T.linalg.solve_triangular(singular, T.ones(2, 3), upper=False, left=False)
        results.append([to_numpy(solution), to_numpy(right)])
    for mine, real in zip(*results):
        np.testing.assert_array_equal(mine, real)


def test_deprecation_warnings_match_pytorch(torch, monkeypatch):
    """torch.triangular_solve and torch.cholesky warn once per process (TORCH_WARN_ONCE), with
    PyTorch's message less its "(Triggered internally at ...)" suffix."""
    from nbgrad import warn_once

    monkeypatch.setattr(warn_once, "given", set())
    for call in ("T.triangular_solve(T.ones(2, 1), T.eye(2))", "T.cholesky(T.eye(2))"):
        messages = []
        for T in (nbgrad, torch):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                eval(call, {"T": T})  # noqa: S307
            messages.append([(str(w.message), w.category, w.filename) for w in caught])
        ours, theirs = messages
        if theirs:  # PyTorch warns only the first time in a process
            assert len(ours) == len(theirs) == 1
            assert theirs[0][0].startswith(ours[0][0] + " (Triggered internally at ")
            # (both attributed to the caller's frame: eval's "<string>" here)
            assert ours[0][1:] == theirs[0][1:] == (UserWarning, "<string>")
        with warnings.catch_warnings(record=True) as again:
            warnings.simplefilter("always")
            eval(call, {"T": nbgrad})  # noqa: S307
        assert not again


@pytest.mark.parametrize(
    "expression",
    [
        "T.cdist(X1, X2)",
        "T.cdist(X1, X2, p=1)",
        "T.cdist(Xb, X2, p=float('inf'))",
        "T.pdist(X2)",
        "T.nn.functional.pdist(X2, 0.5)",
    ],
)
def test_second_derivatives_of_distances_raise_as_in_pytorch(torch, expression):
    """PyTorch does not implement the derivatives of _cdist_backward and _pdist_backward: the
    gradient made with create_graph has their node, and differentiating it raises."""
    caught = []
    for T in (nbgrad, torch):
        values = inputs(T)
        out = _quiet(expression, T, values)
        leaves = _leaves_in(expression, values)
        grads = T.autograd.grad(out.sum(), leaves, create_graph=True)
        caught.append([structure(g.grad_fn) for g in grads])
        with pytest.raises(NotImplementedError) as info:
            T.autograd.grad(sum((g * g).sum() for g in grads), leaves)
        caught[-1].append(str(info.value))
    assert caught[0] == caught[1]


def test_distances_of_empty_inputs_match_pytorch(torch):
    for call in ("T.cdist(T.ones(0, 3), T.ones(2, 3))", "T.cdist(T.ones(2, 0), T.ones(3, 0))",
                 "T.pdist(T.ones(1, 2))", "T.pdist(T.ones(3, 0))"):  # fmt: skip
        ours, theirs = (eval(call, {"T": T}) for T in (nbgrad, torch))  # noqa: S307
        assert ours.shape == tuple(theirs.shape), call
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


def test_bilinear_module_matches_pytorch(torch):
    ours = nbgrad.nn.Bilinear(3, 4, 5, dtype=nbgrad.float64)
    theirs = torch.nn.Bilinear(3, 4, 5, dtype=torch.float64)
    assert repr(ours) == repr(theirs)
    bound = 1 / np.sqrt(3)
    for p in (ours.weight, ours.bias):
        assert np.all(np.abs(to_numpy(p)) <= bound)
    ours.load_state_dict(theirs.state_dict())
    x1, x2 = np.random.default_rng(4).standard_normal((2, 2, 7))
    results = []
    for module, T in ((ours, nbgrad), (theirs, torch)):
        y = module(T.tensor(x1[:, :3]), T.tensor(x2[:, :4]))
        y.sum().backward()
        results.append([to_numpy(y), to_numpy(module.weight.grad), to_numpy(module.bias.grad)])
        results[-1].append(structure(y.grad_fn))
    for mine, real in zip(*results):
        if isinstance(real, np.ndarray):
            np.testing.assert_allclose(mine, real, rtol=1e-10, atol=1e-12)
        else:
            assert mine == real
    no_bias = nbgrad.nn.Bilinear(3, 4, 5, bias=False)
    assert no_bias.bias is None and "bias=False" in repr(no_bias)


def test_matrix_rank_matches_pytorch(torch):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 4, 3)) @ np.diag([1.0, 1e-9, 1.0]) @ rng.standard_normal((3, 3))
    calls = [
        "T.linalg.matrix_rank(A)",
        "T.linalg.matrix_rank(A, atol=0.5)",
        "T.linalg.matrix_rank(A, rtol=1e-6)",
        "T.linalg.matrix_rank(A, atol=1e-3, rtol=0.5)",
        "T.linalg.matrix_rank(A, 1e-6)",
        "T.linalg.matrix_rank(A @ A.mT, hermitian=True)",
        "T.linalg.matrix_rank(A.float())",
        "T.linalg.matrix_rank(T.ones(0, 3))",
    ]
    for call in calls:
        results = []
        for T in (nbgrad, torch):
            A = T.tensor(a, requires_grad=True)
            rank = eval(call, {"T": T, "A": A})  # noqa: S307
            results.append((rank.tolist(), str(rank.dtype), rank.requires_grad, rank.grad_fn))
        assert results[0] == results[1], call


EMPTY_BATCH_CALLS = [
    "det",
    "slogdet",
    "inv",
    "cholesky",
    "eigh",
    "qr",
    "svd",
    "solve",
    "matrix_exp",
    "lu_factor",
    "pinv",
    "matrix_norm",
    "lstsq",
]


def _empty_batches(T):
    """Each call on a batch of two 0x0 matrices and on an empty batch of 3x3 ones: output
    shapes, and the gradient of their sum."""
    seen = {}
    for shape in ((2, 0, 0), (0, 3, 3)):
        for name in EMPTY_BATCH_CALLS:
            x = T.zeros(shape, dtype=T.float64, requires_grad=True)
            function = getattr(T.linalg, name)
            outputs = function(x, x) if name in ("solve", "lstsq") else function(x)
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            floating = [o for o in outputs if o.is_floating_point() and o.requires_grad]
            sum(o.sum() for o in floating).backward()
            seen[name, shape] = ([tuple(o.shape) for o in outputs], tuple(x.grad.shape))
    return seen


def test_linalg_on_empty_batches():
    seen = _empty_batches(nbgrad)
    assert seen["det", (2, 0, 0)] == ([(2,)], (2, 0, 0))
    assert seen["inv", (0, 3, 3)] == ([(0, 3, 3)], (0, 3, 3))


def test_linalg_on_empty_batches_as_pytorchs(torch):
    assert _empty_batches(nbgrad) == _empty_batches(torch)
