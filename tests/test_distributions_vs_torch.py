"""nbgrad.distributions against torch.distributions: values, gradients and graphs (grad_fn names
and next_functions) of log_prob / entropy / cdf / icdf / moments / kl_divergence, for the same
code run with T bound to each library on the same numbers."""

import numpy as np
import pytest
from graph_compare import structure

import nbgrad

torch = pytest.importorskip("torch")

from distribution_validation import validation_on_in_both_libraries  # noqa: E402, F401

RNG = np.random.default_rng(7)

# The numbers every case reads, by name. Float arrays become leaves that require grad.
LOC = np.array([[0.3, -1.2, 0.5], [2.0, 0.1, -0.4]])
SCALE = np.array([[0.7, 1.3, 2.1], [0.4, 1.0, 0.9]])
VALUE = np.array([[0.1, -0.5, 1.7], [1.1, 0.3, -2.0]])
UNIT = np.array([[0.1, 0.45, 0.7], [0.93, 0.2, 0.55]])  # strictly inside (0, 1)
LOGITS = np.array([[0.2, -1.0, 2.3, 0.4], [1.5, 1.4, -0.3, 0.0]])
WEIGHTS = np.array([[1.0, 2.0, 0.5, 0.5], [0.2, 0.3, 3.0, 1.5]])  # unnormalized probabilities
PROBS = WEIGHTS / WEIGHTS.sum(-1, keepdims=True)
PROBS_WITH_ZERO = np.array([[0.5, 0.0, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4]])
ONE_HOT = np.array([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
UNIT_WITH_EDGES = np.array([[0.0, 0.3, 1.0], [0.6, 0.2, 0.5]])
BITS = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])

TRIL = np.array([[1.2, 0.0, 0.0], [0.3, 0.8, 0.0], [-0.5, 0.4, 1.5]])
COV = TRIL @ TRIL.T
OTHER_TRIL = np.array([[0.9, 0.0, 0.0], [-0.2, 1.1, 0.0], [0.6, 0.1, 0.7]])
COV_BATCH = np.stack([COV, OTHER_TRIL @ OTHER_TRIL.T + 0.1 * np.eye(3)])

NUMBERS = {
    "loc": LOC,
    "loc2": LOC[::-1].copy() * 0.5,
    "scale": SCALE,
    "scale2": SCALE[::-1].copy() + 0.2,
    "value": VALUE,
    "unit": UNIT,
    "unit2": UNIT[::-1].copy(),
    "logits": LOGITS,
    "logits2": LOGITS[::-1].copy() * 0.7,
    "weights": WEIGHTS,
    "probs": PROBS,
    "probs2": PROBS[::-1].copy(),
    "probs_with_zero": PROBS_WITH_ZERO,
    "one_hot": ONE_HOT,
    "unit_with_edges": UNIT_WITH_EDGES,
    "bits": BITS,
    "low": LOC - 1.0,
    "high": LOC + SCALE,
    "rate": SCALE,
    "rate2": SCALE[::-1].copy() + 0.2,
    "positive_value": np.abs(VALUE) + 0.1,
    "tril": TRIL,
    "tril2": OTHER_TRIL,
    "cov": COV,
    "cov_batch": COV_BATCH,
    "mvn_value": RNG.normal(size=(4, 2, 3)),
}
INDICES = {  # integer tensors: never require grad
    "index": np.array([2, 0]),
    "index_batch": np.array([[2, 0], [1, 3], [3, 3], [0, 1], [1, 2]]),
}

CASES = [
    # Normal
    "D.Normal(loc, scale).log_prob(value)",
    "D.Normal(loc, 2.0).log_prob(value)",
    "D.Normal(0.0, 1.0).log_prob(value)",
    "D.Normal(loc[0], scale[0]).log_prob(value)",
    "D.Normal(loc, scale).expand((4, 2, 3)).log_prob(value)",
    "D.Normal(loc, scale).entropy()",
    "D.Normal(loc, scale).perplexity()",
    "D.Normal(loc, scale).cdf(value)",
    "D.Normal(loc, scale).icdf(unit)",
    "D.Normal(loc, scale).mean",
    "D.Normal(loc, scale).mode",
    "D.Normal(loc, scale).stddev",
    "D.Normal(loc, scale).variance",
    "D.ExponentialFamily.entropy(D.Normal(loc, scale))",
    "D.kl_divergence(D.Normal(loc, scale), D.Normal(loc2, scale2))",
    "D.kl_divergence(D.Normal(loc, scale), D.Normal(0.0, 1.0))",
    "D.kl_divergence(D.Normal(loc, scale), D.Normal(T.zeros_like(loc), T.ones_like(scale)))",
    # Categorical
    "D.Categorical(probs=probs).log_prob(index)",
    "D.Categorical(probs=weights).log_prob(index)",
    "D.Categorical(logits=logits).log_prob(index)",
    "D.Categorical(logits=logits).log_prob(index_batch)",
    "D.Categorical(logits=logits[0]).log_prob(index)",
    "D.Categorical(logits=logits).expand((3, 2)).log_prob(index)",
    "D.Categorical(logits=logits).entropy()",
    "D.Categorical(probs=probs).entropy()",
    "D.Categorical(probs=probs_with_zero, validate_args=False).entropy()",
    "D.Categorical(logits=logits).probs",
    "D.Categorical(logits=logits).logits",
    "D.Categorical(probs=weights).probs",
    "D.Categorical(probs=probs).logits",
    "D.Categorical(logits=logits).mean",
    "D.Categorical(logits=logits).variance",
    "D.Categorical(logits=logits).mode",
    "D.Categorical(logits=logits).enumerate_support()",
    "D.Categorical(logits=logits).enumerate_support(expand=False)",
    "D.kl_divergence(D.Categorical(logits=logits), D.Categorical(logits=logits2))",
    "D.kl_divergence(D.Categorical(probs=probs), D.Categorical(logits=logits))",
    "D.kl_divergence(D.Categorical(probs=probs_with_zero), D.Categorical(probs=probs))",
    "D.kl_divergence(D.Categorical(probs=probs), D.Categorical(probs=probs_with_zero))",
    # Bernoulli
    "D.Bernoulli(probs=unit).log_prob(bits)",
    "D.Bernoulli(logits=value).log_prob(bits)",
    "D.Bernoulli(0.3).log_prob(bits.float())",
    "D.Bernoulli(probs=unit).entropy()",
    "D.Bernoulli(logits=value).entropy()",
    "D.Bernoulli(probs=unit).logits",
    "D.Bernoulli(logits=value).probs",
    "D.Bernoulli(logits=value).mean",
    "D.Bernoulli(probs=unit).variance",
    "D.Bernoulli(probs=unit).mode",
    "D.Bernoulli(probs=unit).enumerate_support()",
    "D.ExponentialFamily.entropy(D.Bernoulli(probs=unit))",
    "D.kl_divergence(D.Bernoulli(probs=unit), D.Bernoulli(probs=unit2))",
    "D.kl_divergence(D.Bernoulli(logits=value), D.Bernoulli(logits=loc))",
    "D.kl_divergence(D.Bernoulli(probs=unit_with_edges), D.Bernoulli(probs=unit))",
    "D.kl_divergence(D.Bernoulli(probs=unit), D.Bernoulli(probs=unit_with_edges))",
    # Uniform
    "D.Uniform(low, high).log_prob(loc)",
    "D.Uniform(low, high, validate_args=False).log_prob(value)",
    "D.Uniform(0.0, 1.0).log_prob(unit)",
    "D.Uniform(low, high).entropy()",
    "D.Uniform(low, high).cdf(loc)",
    "D.Uniform(low, high, validate_args=False).cdf(value)",
    "D.Uniform(low, high).icdf(unit)",
    "D.Uniform(low, high).mean",
    "D.Uniform(low, high).stddev",
    "D.Uniform(low, high).variance",
    "D.Uniform(low, high).mode",
    "D.kl_divergence(D.Uniform(low, high), D.Uniform(low - 0.5, high + 0.5))",
    "D.kl_divergence(D.Uniform(low, high), D.Uniform(low + 0.1, high))",
    "D.kl_divergence(D.Uniform(low, high), D.Normal(loc, scale))",
    # Independent
    "D.Independent(D.Normal(loc, scale), 1).log_prob(value)",
    "D.Independent(D.Normal(loc, scale), 2).log_prob(value)",
    "D.Independent(D.Normal(loc, scale), 1).entropy()",
    "D.Independent(D.Normal(loc, scale), 1).mean",
    "D.Independent(D.Normal(loc, scale), 1).variance",
    "D.Independent(D.Bernoulli(logits=value), 1).log_prob(bits)",
    "D.Independent(D.Normal(loc, scale), 1).expand((5, 2)).log_prob(value)",
    "D.kl_divergence(D.Independent(D.Normal(loc, scale), 1),"
    " D.Independent(D.Normal(loc2, scale2), 1))",
    "D.kl_divergence(D.Independent(D.Normal(loc, scale), 2),"
    " D.Independent(D.Normal(0.0, 1.0).expand((2, 3)), 2))",
    # OneHotCategorical
    "D.OneHotCategorical(logits=logits).log_prob(one_hot)",
    "D.OneHotCategorical(probs=probs).log_prob(one_hot)",
    "D.OneHotCategorical(logits=logits).entropy()",
    "D.OneHotCategorical(logits=logits).mean",
    "D.OneHotCategorical(logits=logits).variance",
    "D.OneHotCategorical(logits=logits).mode",
    "D.OneHotCategorical(logits=logits).enumerate_support()",
    "D.kl_divergence(D.OneHotCategorical(logits=logits), D.OneHotCategorical(probs=probs))",
    # Laplace
    "D.Laplace(loc, scale).log_prob(value)",
    "D.Laplace(loc, scale).entropy()",
    "D.Laplace(loc, scale).cdf(value)",
    "D.Laplace(loc, scale).icdf(unit)",
    "D.Laplace(loc, scale).mean",
    "D.Laplace(loc, scale).stddev",
    "D.Laplace(loc, scale).variance",
    "D.Laplace(loc, scale).mode",
    "D.Laplace(loc, scale).perplexity()",
    "D.kl_divergence(D.Laplace(loc, scale), D.Laplace(loc2, scale2))",
    "D.kl_divergence(D.Normal(loc, scale), D.Laplace(loc2, scale2))",
    # Exponential
    "D.Exponential(rate).log_prob(positive_value)",
    "D.Exponential(2.0).log_prob(positive_value)",
    "D.Exponential(rate).entropy()",
    "D.Exponential(rate).cdf(positive_value)",
    "D.Exponential(rate).icdf(unit)",
    "D.Exponential(rate).mean",
    "D.Exponential(rate).stddev",
    "D.Exponential(rate).variance",
    "D.Exponential(rate).mode",
    "D.ExponentialFamily.entropy(D.Exponential(rate))",
    "D.kl_divergence(D.Exponential(rate), D.Exponential(rate2))",
    "D.kl._kl_expfamily_expfamily(D.Exponential(rate), D.Exponential(rate2))",
    "D.kl._kl_expfamily_expfamily(D.Normal(loc, scale), D.Normal(loc2, scale2))",
    # Gamma
    "D.Gamma(rate, rate2).log_prob(positive_value)",
    "D.Gamma(rate, 2.0).log_prob(positive_value)",
    "D.Gamma(2.0, 3.0).log_prob(positive_value)",
    "D.Gamma(rate, rate2).entropy()",
    "D.Gamma(rate, rate2).cdf(positive_value)",
    "D.Gamma(rate, rate2).mean",
    "D.Gamma(rate, rate2).mode",
    "D.Gamma(rate, rate2).variance",
    "D.Gamma(rate, rate2).stddev",
    "D.ExponentialFamily.entropy(D.Gamma(rate, rate2))",
    "D.kl_divergence(D.Gamma(rate, rate2), D.Gamma(rate2, rate))",
    "D.kl._kl_expfamily_expfamily(D.Gamma(rate, rate2), D.Gamma(rate2, rate))",
    # Dirichlet and Beta
    "D.Dirichlet(weights).log_prob(probs)",
    "D.Dirichlet(weights[0]).log_prob(probs)",
    "D.Dirichlet(weights).mean",
    "D.Dirichlet(weights).mode",
    "D.Dirichlet(weights + 1).mode",
    "D.Dirichlet(weights).variance",
    "D.Dirichlet(weights).entropy()",
    "D.Dirichlet(weights).expand((3, 2)).log_prob(probs)",
    "D.kl_divergence(D.Dirichlet(weights), D.Dirichlet(weights.flip(-1)))",
    "D.Beta(rate, rate2).log_prob(unit)",
    "D.Beta(2.0, 3.0).log_prob(unit)",
    "D.Beta(rate, 0.5).log_prob(unit)",
    "D.Beta(rate, rate2).entropy()",
    "D.Beta(rate, rate2).mean",
    "D.Beta(rate, rate2).mode",
    "D.Beta(rate, rate2).variance",
    "D.Beta(rate, rate2).concentration1",
    "D.kl_divergence(D.Beta(rate, rate2), D.Beta(rate2, rate))",
    # LogNormal and TransformedDistribution
    "D.LogNormal(loc, scale).log_prob(positive_value)",
    "D.LogNormal(0.0, 1.0).log_prob(positive_value)",
    "D.LogNormal(loc, scale).entropy()",
    "D.LogNormal(loc, scale).mean",
    "D.LogNormal(loc, scale).mode",
    "D.LogNormal(loc, scale).variance",
    "D.LogNormal(loc, scale).cdf(positive_value)",
    "D.LogNormal(loc, scale).icdf(unit)",
    "D.LogNormal(loc, scale).expand((4, 2, 3)).log_prob(positive_value)",
    "D.kl_divergence(D.LogNormal(loc, scale), D.LogNormal(loc2, scale2))",
    "D.TransformedDistribution(D.Normal(loc, scale), [D.TanhTransform()]).log_prob(unit)",
    "D.TransformedDistribution(D.Normal(loc, scale),"
    " [D.AffineTransform(loc2, scale2), D.SigmoidTransform()]).log_prob(unit)",
    "D.TransformedDistribution(D.Normal(loc, scale),"
    " [D.AffineTransform(loc2, scale2), D.SigmoidTransform()]).cdf(unit)",
    "D.TransformedDistribution(D.Normal(loc, scale),"
    " [D.AffineTransform(loc2, -2.0), D.ExpTransform()]).cdf(positive_value)",
    "D.TransformedDistribution(D.Normal(loc, scale),"
    " [D.AffineTransform(loc2, -2.0), D.ExpTransform()]).icdf(unit)",
    "D.TransformedDistribution(D.Normal(loc[0], scale[0]),"
    " D.AffineTransform(loc2, scale2)).log_prob(value)",
    "D.TransformedDistribution(D.Independent(D.Normal(loc, scale), 1),"
    " D.AffineTransform(loc2[0], scale2[0], event_dim=1)).log_prob(value)",
    "D.TransformedDistribution(D.Normal(loc, scale),"
    " D.AffineTransform(1.0, scale2, event_dim=1)).log_prob(value)",
    "D.ComposeTransform([D.AffineTransform(loc, scale), D.ExpTransform()])"
    ".log_abs_det_jacobian(value, (loc + scale * value).exp())",
    "D.ExpTransform().inv(positive_value)",
    "D.TanhTransform().inv.log_abs_det_jacobian(unit, unit.atanh())",
    # Poisson, Cauchy, Chi2
    "D.Poisson(rate).log_prob(bits * 3)",
    "D.Poisson(T.tensor(2.5, dtype=rate.dtype)).log_prob(bits * 3)",
    "D.Poisson(rate).mean",
    "D.Poisson(rate).mode",
    "D.Poisson(rate).variance",
    "D.kl_divergence(D.Poisson(rate), D.Poisson(rate2))",
    "D.kl_divergence(D.Bernoulli(probs=unit), D.Poisson(rate))",
    "D.kl_divergence(D.Poisson(rate), D.Bernoulli(probs=unit))",
    "D.Cauchy(loc, scale).log_prob(value)",
    "D.Cauchy(loc, scale).entropy()",
    "D.Cauchy(loc, scale).cdf(value)",
    "D.Cauchy(loc, scale).icdf(unit)",
    "D.Cauchy(loc, scale).mean",
    "D.Cauchy(loc, scale).variance",
    "D.Cauchy(loc, scale).mode",
    "D.kl_divergence(D.Cauchy(loc, scale), D.Cauchy(loc2, scale2))",
    "D.Chi2(rate).log_prob(positive_value)",
    "D.Chi2(rate).entropy()",
    "D.Chi2(rate).df",
    "D.Chi2(rate).mean",
    "D.kl_divergence(D.Chi2(rate), D.Chi2(rate2))",
    # StudentT
    "D.StudentT(rate, loc, scale).log_prob(value)",
    "D.StudentT(3.0).log_prob(value)",
    "D.StudentT(rate, loc, scale).entropy()",
    "D.StudentT(rate * 2, loc, scale).mean",
    "D.StudentT(rate * 2, loc, scale).variance",
    "D.StudentT(rate, loc, scale).mode",
    # MultivariateNormal
    "D.MultivariateNormal(loc, scale_tril=tril).log_prob(mvn_value)",
    "D.MultivariateNormal(loc, covariance_matrix=cov).log_prob(mvn_value)",
    "D.MultivariateNormal(loc, precision_matrix=cov).log_prob(mvn_value)",
    "D.MultivariateNormal(loc, covariance_matrix=cov_batch).log_prob(mvn_value)",
    "D.MultivariateNormal(loc[0], covariance_matrix=cov_batch).log_prob(mvn_value)",
    "D.MultivariateNormal(loc[0], scale_tril=tril).log_prob(mvn_value)",
    "D.MultivariateNormal(loc[0], scale_tril=tril).log_prob(value[0])",
    "D.MultivariateNormal(loc, scale_tril=tril).expand((4, 2)).log_prob(mvn_value)",
    "D.MultivariateNormal(loc[0], scale_tril=tril).entropy()",
    "D.MultivariateNormal(loc, covariance_matrix=cov).entropy()",
    "D.MultivariateNormal(loc, precision_matrix=cov_batch).entropy()",
    "D.MultivariateNormal(loc, scale_tril=tril).covariance_matrix",
    "D.MultivariateNormal(loc, scale_tril=tril).precision_matrix",
    "D.MultivariateNormal(loc, covariance_matrix=cov_batch).scale_tril",
    "D.MultivariateNormal(loc, precision_matrix=cov).covariance_matrix",
    "D.MultivariateNormal(loc, covariance_matrix=cov).variance",
    "D.MultivariateNormal(loc, covariance_matrix=cov).stddev",
    "D.MultivariateNormal(loc, covariance_matrix=cov).mean",
    "D.kl_divergence(D.MultivariateNormal(loc, covariance_matrix=cov),"
    " D.MultivariateNormal(loc2, scale_tril=tril2))",
    "D.kl_divergence(D.MultivariateNormal(loc[0], scale_tril=tril),"
    " D.MultivariateNormal(loc2, covariance_matrix=cov_batch))",
    "D.kl_divergence(D.MultivariateNormal(loc, scale_tril=tril),"
    " D.MultivariateNormal(T.zeros(3, dtype=loc.dtype), T.eye(3, dtype=loc.dtype)))",
]


def run_case(T, case, dtype_name):
    dtype = getattr(T, dtype_name)
    leaves = {name: T.tensor(a, dtype=dtype, requires_grad=True) for name, a in NUMBERS.items()}
    names = {**leaves, **{name: T.tensor(a) for name, a in INDICES.items()}}
    out = eval(case, {"T": T, "D": T.distributions, **names})  # noqa: S307
    grads = {}
    if out.requires_grad:
        # A weighted sum, so that every entry's gradient counts separately.
        spread = np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape))
        weights = T.tensor(spread, dtype=dtype)
        finite = T.isfinite(out)
        try:
            (T.where(finite, out, T.zeros_like(out)) * weights).sum().backward()
        except Exception as error:  # noqa: BLE001 - compared as type and message
            return out, {"raised": (type(error).__name__, str(error))}
        grads = {name: leaf.grad for name, leaf in leaves.items()}
    return out, grads


def as_array(t):
    return None if t is None else t.detach().numpy()


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES)
def test_values_grads_and_graph_match_torch(case, dtype_name):
    mine, my_grads = run_case(nbgrad, case, dtype_name)
    real, real_grads = run_case(torch, case, dtype_name)
    if dtype_name == "float64" and any(
        name in case for name in ("Gamma", "Dirichlet", "Beta", "Chi2", "Poisson", "StudentT")
    ):
        # lgamma, digamma and their derivatives: nbgrad's kernels and PyTorch's agree to ~1e-9
        tolerance = {"rtol": 1e-8, "atol": 1e-10}
    elif dtype_name == "float64":
        tolerance = {"rtol": 1e-10, "atol": 1e-12}
    else:
        tolerance = {"rtol": 2e-5, "atol": 2e-6}
    assert str(mine.dtype) == str(real.dtype)
    assert tuple(mine.shape) == tuple(real.shape)
    np.testing.assert_allclose(as_array(mine), as_array(real), equal_nan=True, **tolerance)
    assert mine.requires_grad == real.requires_grad
    assert structure(mine.grad_fn) == structure(real.grad_fn)
    assert my_grads.keys() == real_grads.keys()
    for name in real_grads:
        if name == "raised":  # no derivative: the same error
            assert my_grads[name] == real_grads[name]
        elif real_grads[name] is None:
            assert my_grads[name] is None, name
        else:
            assert my_grads[name] is not None, name
            np.testing.assert_allclose(
                as_array(my_grads[name]), as_array(real_grads[name]), err_msg=name, **tolerance
            )


# Not here: distributions whose first derivatives, taken with create_graph=True, are built from
# other nodes than PyTorch's by ops outside nbgrad.distributions (their values agree): abs's
# gradient uses sign (PyTorch: sgn, so Laplace), logsumexp's adds a view (Categorical from
# logits), binary_cross_entropy_with_logits's (Bernoulli), xlogy/stack's (Beta, Dirichlet's
# log_prob) and digamma/lgamma sums' (Dirichlet's entropy).
SECOND_ORDER = [
    "D.Normal(loc, scale).log_prob(value)",
    "D.Normal(loc, scale).entropy()",
    "D.kl_divergence(D.Normal(loc, scale), D.Normal(loc2, scale2))",
    "D.Exponential(rate).log_prob(positive_value)",
    "D.Gamma(rate, rate2).log_prob(positive_value)",
    "D.LogNormal(loc, scale).log_prob(positive_value)",
    "D.MultivariateNormal(loc, scale_tril=tril).log_prob(mvn_value)",
]


@pytest.mark.parametrize("case", SECOND_ORDER)
def test_gradients_taken_with_create_graph_match_torch(case):
    """The first derivatives as graphs (create_graph=True): their values and nodes, and the
    second derivatives through them."""

    def run(T):
        leaves = {k: T.tensor(a, requires_grad=True) for k, a in NUMBERS.items()}
        names = {**leaves, **{k: T.tensor(a) for k, a in INDICES.items()}}
        out = eval(case, {"T": T, "D": T.distributions, **names})  # noqa: S307
        used = list(leaves)
        inputs = [leaves[k] for k in used]
        firsts = T.autograd.grad(out.sum(), inputs, create_graph=True, allow_unused=True)
        pairs = [(k, g) for k, g in zip(used, firsts) if g is not None]
        total = sum((g * g).sum() for _, g in pairs)
        seconds = T.autograd.grad(total, inputs, allow_unused=True)
        return pairs, [s for s in seconds]

    (mine, my_seconds), (real, real_seconds) = run(nbgrad), run(torch)
    assert [k for k, _ in mine] == [k for k, _ in real]
    for (name, a), (_, b) in zip(mine, real):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-8, err_msg=name)
        assert structure(a.grad_fn) == structure(b.grad_fn), name
    for a, b in zip(my_seconds, real_seconds):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-12)
