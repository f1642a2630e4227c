"""``torch._standard_gamma`` (StandardGammaBackward0) and its gradient ``_standard_gamma_grad``
(StandardGammaGradBackward0), which Gamma.rsample differentiates through.

The gradient of a draw x ~ Gamma(alpha, 1) with respect to alpha, at a fixed quantile, is
-(dP/dalpha)(alpha, x) / p(alpha, x). nbgrad's is checked against that quantity computed by mpmath
at 40 digits (a finite-difference check of the exact inverse CDF: gradcheck cannot perturb a
random draw), and against PyTorch's own approximation, which is accurate to about 1e-2 in the far
tails and much better in the bulk."""

import math

import numpy as np
import pytest
from graph_compare import structure

import nbgrad

torch = pytest.importorskip("torch")
mpmath = pytest.importorskip("mpmath")

ALPHAS = [0.01, 0.1, 0.5, 1.0, 1.7, 3.0, 8.0, 20.0, 150.0, 2000.0]
QUANTILES = [1e-6, 0.01, 0.2, 0.5, 0.8, 0.99, 1 - 1e-6]


def quantile(alpha, q):
    """The x with P(alpha, x) = q, by bisection in mpmath (geometric while the bracket is wide)."""
    lo, hi = mpmath.mpf(1e-300), mpmath.mpf(alpha * 10 + 100)
    for _ in range(200):
        mid = mpmath.sqrt(lo * hi) if hi / lo > 4 else (lo + hi) / 2
        if mpmath.gammainc(alpha, 0, mid, regularized=True) < q:
            lo = mid
        else:
            hi = mid
    return float((lo + hi) / 2)


def exact_grad(alpha, x):
    """-(dP/dalpha) / p, with dP/dalpha by mpmath's numerical differentiation at 40 digits."""
    with mpmath.workdps(40):
        a, x = mpmath.mpf(alpha), mpmath.mpf(x)
        dP = mpmath.diff(lambda t: mpmath.gammainc(t, 0, x, regularized=True), a)
        density = x ** (a - 1) * mpmath.exp(-x) / mpmath.gamma(a)
        return float(-dP / density)


@pytest.fixture(scope="module")
def grid():
    pairs = [(a, quantile(a, q), q) for a in ALPHAS for q in QUANTILES]
    alphas = np.array([p[0] for p in pairs])
    xs = np.array([p[1] for p in pairs])
    quantiles = np.array([p[2] for p in pairs])
    exact = np.array([exact_grad(a, x) for a, x, _ in pairs])
    return alphas, xs, quantiles, exact


def test_standard_gamma_grad_is_the_exact_quantile_derivative(grid):
    alphas, xs, _, exact = grid
    mine = nbgrad._standard_gamma_grad(
        nbgrad.tensor(alphas, dtype=nbgrad.float64), nbgrad.tensor(xs, dtype=nbgrad.float64)
    )
    np.testing.assert_allclose(mine.numpy(), exact, rtol=1e-10)


def test_standard_gamma_grad_agrees_with_torchs_approximation(grid):
    alphas, xs, quantiles, _ = grid
    args = [torch.tensor(alphas), torch.tensor(xs)]
    real = torch._standard_gamma_grad(*args).numpy()
    mine = nbgrad._standard_gamma_grad(*(nbgrad.tensor(a) for a in (alphas, xs))).numpy()
    np.testing.assert_allclose(mine, real, rtol=2e-2)
    bulk = (quantiles >= 0.01) & (quantiles <= 0.99)
    np.testing.assert_allclose(mine[bulk], real[bulk], rtol=1e-3)


def test_standard_gamma_grad_float32_matches_float64():
    alphas = np.array([0.3, 1.0, 4.0, 30.0])
    xs = np.array([0.05, 1.2, 3.5, 33.0])
    f64 = nbgrad._standard_gamma_grad(nbgrad.tensor(alphas), nbgrad.tensor(xs))
    f32 = nbgrad._standard_gamma_grad(nbgrad.tensor(alphas).float(), nbgrad.tensor(xs).float())
    assert f32.dtype == nbgrad.float32
    np.testing.assert_allclose(f32.numpy(), f64.numpy(), rtol=1e-6)


def graphs(T):
    alpha = T.tensor([0.5, 2.0, 5.0], dtype=T.float64, requires_grad=True)
    x = T._standard_gamma(alpha)
    (first,) = T.autograd.grad(x.sum(), alpha, create_graph=True)
    output = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    both = T._standard_gamma_grad(alpha, output)
    only_output = T._standard_gamma_grad(alpha.detach(), output)
    saved = (x.grad_fn._saved_self is alpha, T.equal(x.grad_fn._saved_result, x))
    shown = sorted(n for n in dir(x.grad_fn) if n.startswith("_saved_"))
    return x, first, both, only_output, saved, shown


def test_graphs_and_saved_values_match_torch():
    mine, real = graphs(nbgrad), graphs(torch)
    for a, b in zip(mine[:3], real[:3]):
        assert structure(a.grad_fn) == structure(b.grad_fn)
        assert a.dtype.__repr__() == b.dtype.__repr__()
    assert mine[3].grad_fn is None and real[3].grad_fn is None  # output: not differentiable
    assert mine[4] == real[4] == (True, True)
    assert mine[5] == real[5] == ["_saved_result", "_saved_self"]
    shown = [n for n in dir(mine[2].grad_fn) if n.startswith("_saved_")]
    assert shown == [n for n in dir(real[2].grad_fn) if n.startswith("_saved_")] == []


def test_second_derivative_is_not_implemented_as_in_torch():
    messages = []
    for T in (nbgrad, torch):
        alpha = T.tensor([0.5, 2.0], dtype=T.float64, requires_grad=True)
        (first,) = T.autograd.grad(T._standard_gamma(alpha).sum(), alpha, create_graph=True)
        with pytest.raises(NotImplementedError) as caught:
            first.sum().backward()
        messages.append(str(caught.value))
    assert (
        messages[0]
        == messages[1]
        == ("the derivative for '_standard_gamma_grad' is not implemented.")
    )


@pytest.mark.parametrize(
    "expression",
    [
        "T._standard_gamma(T.tensor([1, 2]))",
        "T._standard_gamma(T.tensor([-1.0, 0.0]))",
        "T._standard_gamma(T.tensor([-1.0, 0.0], dtype=T.float64))",
        "T._standard_gamma(T.ones(2, 3)).shape",
        "T._standard_gamma(T.ones(2, dtype=T.float64)).dtype",
    ],
)
def test_edges_match_torch(expression):
    def outcome(T):
        try:
            return repr(eval(expression, {"T": T}))  # noqa: S307
        except Exception as error:  # noqa: BLE001 - compared as type and message
            return type(error).__name__, str(error)

    assert outcome(nbgrad) == outcome(torch)


@pytest.mark.parametrize("alpha", [0.1, 1.0, 3.5, 50.0])
def test_draws_have_gammas_mean_and_variance(alpha):
    n = 40_000
    nbgrad.manual_seed(int(alpha * 10))
    x = nbgrad._standard_gamma(nbgrad.full((n,), alpha, dtype=nbgrad.float64)).numpy()
    assert (x > 0).all()
    assert abs(x.mean() - alpha) < 5 * math.sqrt(alpha / n)
    # the variance's standard error: sqrt((mu4 - sigma^4) / n), mu4 = 3 alpha^2 + 6 alpha
    assert abs(x.var() - alpha) < 5 * math.sqrt((2 * alpha**2 + 6 * alpha) / n)


@pytest.mark.parametrize("alpha", [0.3, 2.0, 12.0])
def test_gradient_is_unbiased_for_the_moments(alpha):
    """E[dx/dalpha] = dE[x]/dalpha = 1 and E[d(x^2)/dalpha] = d(alpha + alpha^2)/dalpha."""
    n = 40_000
    nbgrad.manual_seed(3)
    a = nbgrad.full((n,), alpha, dtype=nbgrad.float64, requires_grad=True)
    x = nbgrad._standard_gamma(a)
    (dx,) = nbgrad.autograd.grad(x.sum(), a)
    (dx2,) = nbgrad.autograd.grad(nbgrad._standard_gamma(a).pow(2).sum(), a)
    dx, dx2 = dx.numpy(), dx2.numpy()
    assert abs(dx.mean() - 1.0) < 5 * dx.std() / math.sqrt(n)
    assert abs(dx2.mean() - (1 + 2 * alpha)) < 5 * dx2.std() / math.sqrt(n)


def test_generator_makes_draws_reproducible():
    alpha = nbgrad.tensor([0.5, 2.0, 7.0])
    first = nbgrad._standard_gamma(alpha, generator=nbgrad.Generator().manual_seed(5))
    again = nbgrad._standard_gamma(alpha, generator=nbgrad.Generator().manual_seed(5))
    assert nbgrad.equal(first, again)


# --- gradcheck of the distributions' deterministic functions, first and second order -----------

GRADCHECKED = [
    ("Gamma.log_prob", lambda D, a, b: D.Gamma(a, b).log_prob(a + b)),
    ("Gamma.entropy", lambda D, a, b: D.Gamma(a, b).entropy()),
    ("KL(Gamma || Gamma)", lambda D, a, b: D.kl_divergence(D.Gamma(a, b), D.Gamma(b, a))),
    ("Beta.log_prob", lambda D, a, b: D.Beta(a, b).log_prob(a / (a + b))),
    ("KL(Beta || Beta)", lambda D, a, b: D.kl_divergence(D.Beta(a, b), D.Beta(b, a))),
    ("Dirichlet.entropy", lambda D, a, b: D.Dirichlet(a * b).entropy()),
    ("StudentT.log_prob", lambda D, a, b: D.StudentT(a, b, a).log_prob(b)),
    ("Normal.log_prob", lambda D, a, b: D.Normal(a, b).log_prob(a * b)),
    ("Categorical.entropy", lambda D, a, b: D.Categorical(logits=a * b).entropy()),
    (
        "KL(MVN || MVN)",
        lambda D, a, b: D.kl_divergence(
            D.MultivariateNormal(a, scale_tril=_diagonal_factor(a, b)),
            D.MultivariateNormal(b, scale_tril=_diagonal_factor(b, a)),
        ),
    ),
]


def _diagonal_factor(a, b):
    """A lower-triangular factor with a positive diagonal (a * b)."""
    return (a * b).diag_embed()


@pytest.mark.parametrize("name", [name for name, _ in GRADCHECKED])
def test_gradcheck_and_gradgradcheck_in_float64(name):
    fn = dict(GRADCHECKED)[name]
    a = nbgrad.tensor([0.7, 1.9, 3.2], dtype=nbgrad.float64, requires_grad=True)
    b = nbgrad.tensor([1.3, 0.6, 2.4], dtype=nbgrad.float64, requires_grad=True)
    D = nbgrad.distributions
    assert nbgrad.autograd.gradcheck(lambda x, y: fn(D, x, y), (a, b))
    assert nbgrad.autograd.gradgradcheck(lambda x, y: fn(D, x, y), (a, b))
