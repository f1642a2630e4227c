"""nbgrad.distributions against torch.distributions: shapes (batch, event, sample, expand),
attributes (has_rsample, support, arg_constraints, repr), validation errors (type and message),
rsample graphs, and the statistics of samples (nbgrad draws its own numbers)."""

import math

import numpy as np
import pytest
from graph_compare import structure

import nbgrad

torch = pytest.importorskip("torch")

from distribution_validation import validation_on_in_both_libraries  # noqa: E402, F401

LOC = [[0.3, -1.2, 0.5], [2.0, 0.1, -0.4]]
SCALE = [[0.7, 1.3, 2.1], [0.4, 1.0, 0.9]]
LOGITS = [[0.2, -1.0, 2.3, 0.4], [1.5, 1.4, -0.3, 0.0]]
PROBS = [[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]]

DISTRIBUTIONS = {
    "normal": "D.Normal(T.tensor(LOC), T.tensor(SCALE))",
    "normal_scalar": "D.Normal(0.0, 1.0)",
    "normal_mixed": "D.Normal(T.tensor(LOC), 2.0)",
    "categorical_probs": "D.Categorical(probs=T.tensor(PROBS))",
    "categorical_logits": "D.Categorical(logits=T.tensor(LOGITS))",
    "categorical_1d": "D.Categorical(logits=T.tensor(LOGITS[0]))",
    "bernoulli_probs": "D.Bernoulli(probs=T.tensor([0.2, 0.7]))",
    "bernoulli_logits": "D.Bernoulli(logits=T.tensor(LOC))",
    "bernoulli_scalar": "D.Bernoulli(0.3)",
    "uniform": "D.Uniform(T.tensor(LOC), T.tensor(LOC) + T.tensor(SCALE))",
    "uniform_scalar": "D.Uniform(0.0, 2.0)",
    "independent_1": "D.Independent(D.Normal(T.tensor(LOC), T.tensor(SCALE)), 1)",
    "independent_2": "D.Independent(D.Normal(T.tensor(LOC), T.tensor(SCALE)), 2)",
    "independent_0": "D.Independent(D.Normal(T.tensor(LOC), T.tensor(SCALE)), 0)",
    "one_hot": "D.OneHotCategorical(logits=T.tensor(LOGITS))",
    "one_hot_st": "D.OneHotCategoricalStraightThrough(probs=T.tensor(PROBS))",
    "laplace": "D.Laplace(T.tensor(LOC), T.tensor(SCALE))",
    "exponential": "D.Exponential(T.tensor(SCALE))",
    "exponential_scalar": "D.Exponential(1.5)",
    "gamma": "D.Gamma(T.tensor(SCALE), T.tensor(SCALE) + 1)",
    "gamma_scalar": "D.Gamma(2.0, 0.5)",
    "dirichlet": "D.Dirichlet(T.tensor(PROBS) * 4)",
    "dirichlet_1d": "D.Dirichlet(T.tensor([0.5, 1.0, 2.0]))",
    "beta": "D.Beta(T.tensor(SCALE), T.tensor(SCALE) + 1)",
    "beta_scalar": "D.Beta(0.5, 2.0)",
    "log_normal": "D.LogNormal(T.tensor(LOC), T.tensor(SCALE))",
    "log_normal_scalar": "D.LogNormal(0.0, 1.0)",
    "tanh_normal": "D.TransformedDistribution(D.Normal(T.tensor(LOC), T.tensor(SCALE)),"
    " [D.TanhTransform(cache_size=1)])",
    "affine_broadcast": "D.TransformedDistribution(D.Normal(0.0, 1.0),"
    " [D.AffineTransform(T.tensor(LOC), T.tensor(SCALE)), D.ExpTransform()])",
    "affine_event": "D.TransformedDistribution(D.Normal(T.tensor(LOC), 1.0),"
    " D.AffineTransform(0.0, T.tensor(SCALE), event_dim=1))",
    "poisson": "D.Poisson(T.tensor(SCALE))",
    "student_t": "D.StudentT(T.tensor(SCALE) * 3, T.tensor(LOC))",
    "student_t_scalar": "D.StudentT(4.0)",
    "cauchy": "D.Cauchy(T.tensor(LOC), T.tensor(SCALE))",
    "chi2": "D.Chi2(T.tensor(SCALE))",
    "chi2_scalar": "D.Chi2(3.0)",
    "mvn_cov": "D.MultivariateNormal(T.tensor(LOC), covariance_matrix=T.eye(3) * 2)",
    "mvn_tril": "D.MultivariateNormal(T.tensor(LOC[0]), scale_tril=T.eye(3).expand(4, 3, 3))",
    "mvn_precision": "D.MultivariateNormal(T.zeros(3), precision_matrix=T.eye(3))",
}


def make(T, key):
    names = {
        "T": T,
        "D": T.distributions,
        "LOC": LOC,
        "SCALE": SCALE,
        "LOGITS": LOGITS,
        "PROBS": PROBS,
    }
    return eval(DISTRIBUTIONS[key], names)  # noqa: S307


def describe(d):
    """What a user can see of a distribution without drawing from it."""
    seen = {
        "type": type(d).__name__,
        "batch_shape": tuple(d.batch_shape),
        "event_shape": tuple(d.event_shape),
        "has_rsample": d.has_rsample,
        "has_enumerate_support": d.has_enumerate_support,
        "repr": repr(d),
        "arg_constraints": {k: repr(v) for k, v in d.arg_constraints.items()},
        "support": repr(d.support),
        "support_event_dim": d.support.event_dim,
        "support_is_discrete": d.support.is_discrete,
    }
    for shape in [(), (5,), (4, 3)]:
        seen[f"extended {shape}"] = tuple(d._extended_shape(shape))
    return seen


@pytest.mark.parametrize("key", DISTRIBUTIONS)
def test_shapes_attributes_and_repr_match_torch(key):
    assert describe(make(nbgrad, key)) == describe(make(torch, key))


@pytest.mark.parametrize("key", DISTRIBUTIONS)
@pytest.mark.parametrize("sample_shape", [(), (5,), (4, 3)])
def test_sample_shape_dtype_and_graph_match_torch(key, sample_shape):
    mine, real = make(nbgrad, key), make(torch, key)
    for method in ["sample"] + (["rsample"] if real.has_rsample else []):
        a = getattr(mine, method)(sample_shape)
        b = getattr(real, method)(sample_shape)
        assert tuple(a.shape) == tuple(b.shape), method
        assert str(a.dtype) == str(b.dtype), method
        assert a.requires_grad == b.requires_grad
    # the same without the keyword default: a torch.Size
    assert tuple(mine.sample(nbgrad.Size(sample_shape)).shape) == tuple(
        real.sample(torch.Size(sample_shape)).shape
    )


EXPANDABLE = [
    "student_t",
    "poisson",
    "cauchy",
    "chi2",
    "log_normal",
    "tanh_normal",
    "affine_event",
    "dirichlet",
    "beta",
    "gamma",
    "mvn_cov",
    "mvn_precision",
    "normal",
    "normal_scalar",
    "categorical_logits",
    "categorical_probs",
    "bernoulli_probs",
    "uniform",
    "independent_1",
    "one_hot",
    "laplace",
    "exponential",
]


@pytest.mark.parametrize("key", EXPANDABLE)
def test_expand_matches_torch(key):
    mine, real = make(nbgrad, key), make(torch, key)
    new_batch = (3,) + tuple(real.batch_shape)
    a, b = mine.expand(new_batch), real.expand(new_batch)
    assert describe(a) == describe(b)
    assert tuple(a.sample((2,)).shape) == tuple(b.sample((2,)).shape)
    assert a._validate_args == b._validate_args


@pytest.mark.parametrize(
    ("make_d", "rsample_shape"),
    [
        ("D.Normal(loc, scale)", (5,)),
        ("D.Normal(loc, 2.0)", ()),
        ("D.Uniform(loc, loc + scale)", (4,)),
        ("D.Laplace(loc, scale)", (3,)),
        ("D.Exponential(scale)", (3,)),
        ("D.Independent(D.Normal(loc, scale), 1)", (2,)),
        ("D.Gamma(scale, scale + 1)", (3,)),
        ("D.Gamma(scale, 2.0)", ()),
        ("D.LogNormal(loc, scale)", (2,)),
        ("D.Cauchy(loc, scale)", (2,)),
        ("D.Chi2(scale)", (2,)),
        ("D.StudentT(scale + 2, loc, scale)", (2,)),
        ("D.TransformedDistribution(D.Normal(loc, scale), [D.TanhTransform()])", (2,)),
        (
            "D.TransformedDistribution(D.Normal(loc, scale),"
            " [D.AffineTransform(1.0, scale), D.SigmoidTransform()])",
            (),
        ),
        ("D.Dirichlet(scale)", (3,)),
        ("D.Beta(scale, scale + 1)", (2,)),
        ("D.Beta(2.0, scale)", ()),
        ("D.MultivariateNormal(loc, scale_tril=T.diag_embed(scale))", (2,)),
        ("D.MultivariateNormal(loc[0], covariance_matrix=T.diag_embed(scale))", ()),
        ("D.OneHotCategoricalStraightThrough(logits=logits)", (3,)),
    ],
)
def test_rsample_graph_matches_torch(make_d, rsample_shape):
    def run(T):
        loc = T.tensor(LOC, requires_grad=True)
        scale = T.tensor(SCALE, requires_grad=True)
        logits = T.tensor(LOGITS, requires_grad=True)
        names = {"T": T, "D": T.distributions, "loc": loc, "scale": scale, "logits": logits}
        d = eval(make_d, names)  # noqa: S307
        x = d.rsample(rsample_shape)
        x.sum().backward()
        return x, {"loc": loc.grad, "scale": scale.grad, "logits": logits.grad}

    mine, my_grads = run(nbgrad)
    real, real_grads = run(torch)
    assert structure(mine.grad_fn) == structure(real.grad_fn)
    assert {k: g is None for k, g in my_grads.items()} == {
        k: g is None for k, g in real_grads.items()
    }


def test_normal_rsample_gradients_are_the_draws_noise():
    """d(sum x)/d loc counts the draws; d(sum x)/d scale sums the standard-normal noise
    eps = (x - loc) / scale of each draw (the reparameterization x = loc + eps * scale)."""
    loc = nbgrad.tensor([0.5, -1.0], dtype=nbgrad.float64, requires_grad=True)
    scale = nbgrad.tensor([2.0, 0.5], dtype=nbgrad.float64, requires_grad=True)
    x = nbgrad.distributions.Normal(loc, scale).rsample((7,))
    x.sum().backward()
    eps = (x.detach().numpy() - np.array([0.5, -1.0])) / np.array([2.0, 0.5])
    np.testing.assert_allclose(loc.grad.numpy(), [7.0, 7.0])
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-12)


# --- validation ------------------------------------------------------------------------------

ERRORS = [
    "D.Normal(T.tensor([0.0, 1.0]), T.tensor([1.0, -1.0]))",
    "D.Normal(T.tensor([0.0, float('nan')]), T.tensor([1.0, 1.0]))",
    "D.Normal(0.0, 0.0)",
    "D.Normal(0.0, 1.0).log_prob(T.tensor([float('nan')]))",
    "D.Normal(T.zeros(2, 3), 1.0).log_prob(T.zeros(4))",
    "D.Normal(0.0, 1.0).log_prob(0.5)",
    "D.Normal('a', 1.0)",
    "D.Categorical(probs=T.tensor([0.5, -0.1, 0.6]))",
    "D.Categorical(probs=T.tensor(0.5))",
    "D.Categorical(logits=T.tensor(0.5))",
    "D.Categorical(probs=T.tensor([0.5, 0.5]), logits=T.tensor([0.0, 0.0]))",
    "D.Categorical()",
    "D.Categorical(logits=T.tensor([0.0, float('nan')]))",
    "D.Categorical(logits=T.zeros(3)).log_prob(T.tensor([3]))",
    "D.Categorical(logits=T.zeros(3)).log_prob(T.tensor([0.5]))",
    "D.Categorical(logits=T.zeros(2, 3)).log_prob(T.tensor([0, 1, 2]))",
    "D.Bernoulli(probs=T.tensor([0.5, 1.5]))",
    "D.Bernoulli(probs=T.tensor([0.5]), logits=T.tensor([0.5]))",
    "D.Bernoulli(logits=T.zeros(2)).log_prob(T.tensor([0.5, 1.0]))",
    "D.Uniform(T.tensor([0.0, 2.0]), T.tensor([1.0, 1.0]))",
    "D.Uniform(0.0, 1.0).log_prob(T.tensor([1.5]))",
    "D.Uniform(0.0, 1.0).cdf(T.tensor([-0.5]))",
    "D.Independent(D.Normal(T.zeros(3), 1.0), 2)",
    "D.Independent(D.Normal(T.zeros(2, 3), 1.0), 1).log_prob(T.zeros(2, 4))",
    "D.Independent(D.Bernoulli(logits=T.zeros(2, 3)), 1).log_prob(T.full((2, 3), 0.5))",
    "D.OneHotCategorical(logits=T.zeros(3)).log_prob(T.tensor([1.0, 1.0, 0.0]))",
    "D.OneHotCategorical(logits=T.zeros(3)).log_prob(T.tensor([1.0, 0.0]))",
    "D.Laplace(0.0, -1.0)",
    "D.ExponentialFamily.entropy(D.Poisson(T.ones(2)))",
    "D.Poisson(T.ones(2)).entropy()",
    "D.Poisson(T.tensor([1.0, -1.0]))",
    "D.Poisson(2.0).log_prob(T.tensor([0.5]))",
    "D.Poisson(2.0).log_prob(T.tensor([-1.0]))",
    "D.Poisson(2.0).rsample()",
    "D.Cauchy(0.0, -1.0)",
    "D.StudentT(-1.0)",
    "D.StudentT(2.0, 0.0, -1.0)",
    "D.Chi2(T.tensor([1.0, -1.0]))",
    "D.kl_divergence(D.Poisson(2.0), D.Normal(0.0, 1.0))",
    "D.LogNormal(0.0, 1.0).log_prob(T.tensor([-1.0]))",
    "D.LogNormal(0.0, -1.0)",
    "D.TransformedDistribution(D.Normal(0.0, 1.0), 3)",
    "D.TransformedDistribution(D.Normal(0.0, 1.0), [3])",
    "D.TransformedDistribution(D.Normal(0.0, 1.0), D.AffineTransform(0.0, 1.0, event_dim=1))",
    "D.TransformedDistribution(D.Normal(0.0, 1.0), D.TanhTransform()).log_prob(T.tensor(2.0))",
    "D.TransformedDistribution(D.Normal(0.0, 1.0), D.ExpTransform()).entropy()",
    "D.ExpTransform(cache_size=2)",
    "D.AffineTransform(0.0, 1.0).with_cache(1).inv.with_cache(2)",
    "D.Transform().inv(T.zeros(1))",
    "D.Transform().sign",
    "D.Transform().with_cache(1).event_dim",
    "D.kl_divergence(D.LogNormal(0.0, 1.0),"
    " D.TransformedDistribution(D.Normal(0.0, 1.0), D.TanhTransform()))",
    "D.ExponentialFamily.entropy(D.Dirichlet(T.ones(3)))",
    "D.ExponentialFamily.entropy(D.Beta(1.0, 2.0))",
    "D.Dirichlet(T.tensor([1.0, -1.0]))",
    "D.Dirichlet(T.tensor(1.0))",
    "D.Dirichlet(T.ones(3)).log_prob(T.tensor([0.5, 0.5, 0.5]))",
    "D.Dirichlet(T.ones(3)).log_prob(T.tensor([0.5, 0.5]))",
    "D.Beta(T.tensor([1.0, -1.0]), 1.0)",
    "D.Beta(1.0, 2.0).log_prob(T.tensor([1.5]))",
    "D.kl_divergence(D.Beta(1.0, 2.0), D.Dirichlet(T.ones(2)))",
    "T._sample_dirichlet(T.tensor([1, 2]))",
    "T._sample_dirichlet(T.ones(3, requires_grad=True)).sum().backward()",
    "T._dirichlet_grad(T.tensor([0.2]), T.tensor([1.0]), T.tensor([2.0], dtype=T.float64))",
    "D.Gamma(T.tensor([1.0, -1.0]), 1.0)",
    "D.Gamma(1.0, 0.0)",
    "D.Gamma(2.0, 1.0).log_prob(T.tensor([-1.0]))",
    "D.Gamma(2.0, 1.0).icdf(T.tensor([0.5]))",
    "D.Exponential(T.tensor([1.0, -2.0]))",
    "D.Exponential(1.0).log_prob(T.tensor([-1.0]))",
    "D.kl_divergence(D.Bernoulli(0.5), D.Normal(0.0, 1.0))",
    "D.kl_divergence(D.Independent(D.Normal(T.zeros(2, 3), 1.0), 1),"
    " D.Independent(D.Normal(T.zeros(2, 3), 1.0), 2))",
    "D.kl._kl_expfamily_expfamily(D.Normal(0.0, 1.0), D.Exponential(1.0))",
    "D.Distribution.set_default_validate_args(2)",
    "D.MultivariateNormal(T.zeros(2), covariance_matrix=T.tensor([[1.0, 2.0], [2.0, 1.0]]))",
    "D.MultivariateNormal(T.zeros(2), covariance_matrix=T.tensor([[1.0, 0.5], [0.0, 1.0]]))",
    "D.MultivariateNormal(T.zeros(2), precision_matrix=T.tensor([[1.0, 2.0], [2.0, 1.0]]))",
    "D.MultivariateNormal(T.zeros(2), scale_tril=T.tensor([[1.0, 0.5], [0.0, 1.0]]))",
    "D.MultivariateNormal(T.zeros(2), scale_tril=T.tensor([[1.0, 0.0], [0.5, -1.0]]))",
    "D.MultivariateNormal(T.zeros(2), T.eye(2), scale_tril=T.eye(2))",
    "D.MultivariateNormal(T.zeros(2))",
    "D.MultivariateNormal(T.tensor(0.0), T.eye(2))",
    "D.MultivariateNormal(T.zeros(2), T.ones(2))",
    "D.MultivariateNormal(T.zeros(2), scale_tril=T.ones(2))",
    "D.MultivariateNormal(T.zeros(2), precision_matrix=T.ones(2))",
    "D.MultivariateNormal(T.zeros(2), T.eye(2)).log_prob(T.zeros(3))",
    "D.MultivariateNormal(T.zeros(2), T.eye(2)).log_prob(T.tensor([0.0, float('nan')]))",
    "D.kl_divergence(D.MultivariateNormal(T.zeros(2), T.eye(2)),"
    " D.MultivariateNormal(T.zeros(3), T.eye(3)))",
    "D.Laplace(0.0, 1.0).enumerate_support()",
    "D.Normal(0.0, 1.0).enumerate_support()",
    "D.Independent(D.Normal(T.zeros(2, 3), 1.0), 1).enumerate_support()",
    "D.constraints.dependent.check(T.zeros(1))",
    "D.constraints.dependent.event_dim",
    "D.register_kl(3, D.Normal)",
    "D.register_kl(D.Normal, 3)",
    "D.Distribution(validate_args=False).mode",
    "D.Distribution(validate_args=False).mean",
    "D.Distribution(validate_args=False).stddev",
]


def outcome(T, expression):
    try:
        eval(expression, {"T": T, "D": T.distributions})  # noqa: S307
    except Exception as error:  # noqa: BLE001 - compared as type and message
        return type(error).__name__, str(error)
    return "no error", ""


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_match_torch(expression):
    mine = outcome(nbgrad, expression)
    real = outcome(torch, expression)
    assert mine[0] != "no error"
    # PyTorch names its classes in the messages it builds from them ("<class
    # 'torch.distributions....'>"); nbgrad's are nbgrad's.
    assert mine == (real[0], real[1].replace("torch.distributions", "nbgrad.distributions"))


def test_missing_arg_constraints_warns_as_torch_does():
    messages = []
    for T in (nbgrad, torch):
        with pytest.warns(UserWarning, match="does not define `arg_constraints`") as caught:
            T.distributions.Distribution()
        messages.append(str(caught[0].message).replace("torch.", "nbgrad."))
    assert messages[0] == messages[1]


def test_validate_args_false_skips_the_checks():
    for T in (nbgrad, torch):
        d = T.distributions.Normal(0.0, -1.0, validate_args=False)
        assert math.isnan(float(d.log_prob(T.tensor(0.0))))
        u = T.distributions.Uniform(0.0, 1.0, validate_args=False)
        assert float(u.log_prob(T.tensor(2.0))) == -math.inf


def test_set_default_validate_args_turns_checking_off_and_on():
    for T in (nbgrad, torch):
        D = T.distributions
        try:
            D.Distribution.set_default_validate_args(False)
            assert D.Normal(0.0, -1.0).scale.item() == -1.0
            assert D.Normal(0.0, 1.0, validate_args=True)._validate_args
        finally:
            D.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError, match="GreaterThan"):
            D.Normal(0.0, -1.0)


def test_register_kl_dispatches_to_the_most_specific_pair():
    """A subclass with its own registered formula wins over its parent's; PyTorch's rule."""

    class Wide(nbgrad.distributions.Normal):
        pass

    @nbgrad.distributions.register_kl(Wide, nbgrad.distributions.Normal)
    def _kl_wide_normal(p, q):
        return nbgrad.tensor(42.0)

    D = nbgrad.distributions
    assert D.kl_divergence(Wide(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
    # Normal-Normal is untouched: KL(N(0,1) || N(1,2)) = log 2 + (1 + 1) / 8 - 1/2
    expected = math.log(2.0) + 2.0 / 8.0 - 0.5
    assert D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 2.0)).item() == pytest.approx(expected)
    del D.kl._KL_REGISTRY[Wide, D.Normal]
    D.kl._KL_MEMOIZE.clear()


def test_lazy_probs_keep_their_graph_when_first_read_under_no_grad():
    for T in (nbgrad, torch):
        logits = T.tensor([0.0, 1.0, 2.0], requires_grad=True)
        d = T.distributions.Categorical(logits=logits)
        with T.no_grad():
            probs = d.probs
        assert probs.grad_fn is not None
        assert type(probs.grad_fn).__name__ == "SoftmaxBackward0"


def test_module_paths_match_torch():
    import nbgrad.distributions as D

    assert D is nbgrad.distributions
    for name in [
        "normal.Normal",
        "categorical.Categorical",
        "bernoulli.Bernoulli",
        "uniform.Uniform",
        "independent.Independent",
        "kl.kl_divergence",
        "one_hot_categorical.OneHotCategorical",
        "laplace.Laplace",
        "exponential.Exponential",
        "constraints.real",
        "utils.logits_to_probs",
        "distribution.Distribution",
        "exp_family.ExponentialFamily",
        "studentT.StudentT",
        "transforms.ExpTransform",
        "log_normal.LogNormal",
        "dirichlet.Dirichlet",
        "gamma.Gamma",
        "beta.Beta",
        "multivariate_normal.MultivariateNormal",
        "transformed_distribution.TransformedDistribution",
        "poisson.Poisson",
        "cauchy.Cauchy",
        "chi2.Chi2",
    ]:
        module, attr = name.split(".")
        assert hasattr(getattr(torch.distributions, module), attr)
        assert hasattr(getattr(D, module), attr), name


# --- statistics of samples ---------------------------------------------------------------------

N = 40_000


def within(sample_mean, mean, std, n=N, sigmas=5.0):
    """A sample mean within 5 standard errors of the true mean."""
    return abs(sample_mean - mean) < sigmas * std / math.sqrt(n)


def test_normal_samples_have_its_mean_and_std():
    nbgrad.manual_seed(0)
    loc, scale = nbgrad.tensor([1.0, -3.0]), nbgrad.tensor([0.5, 2.0])
    for method in ("sample", "rsample"):
        x = getattr(nbgrad.distributions.Normal(loc, scale), method)((N,)).numpy().astype(float)
        for j, (m, s) in enumerate([(1.0, 0.5), (-3.0, 2.0)]):
            assert within(x[:, j].mean(), m, s)
            assert abs(x[:, j].std() / s - 1) < 0.03
            # the fraction below the mean plus one std: Phi(1)
            assert within((x[:, j] < m + s).mean(), 0.841344746, 0.3655)


@pytest.mark.parametrize("given", ["probs", "logits"])
def test_categorical_samples_follow_its_probabilities(given):
    nbgrad.manual_seed(1)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]])
    param = nbgrad.tensor(probs if given == "probs" else np.log(probs + 1e-30))
    d = nbgrad.distributions.Categorical(**{given: param})
    x = d.sample((N,)).numpy()
    assert x.shape == (N, 2) and x.dtype == np.int64
    for row in range(2):
        for k in range(3):
            p = probs[row, k]
            assert within((x[:, row] == k).mean(), p, math.sqrt(p * (1 - p)) + 1e-12)


def test_one_hot_categorical_samples_are_one_hot_with_its_frequencies():
    nbgrad.manual_seed(2)
    d = nbgrad.distributions.OneHotCategorical(probs=nbgrad.tensor([0.2, 0.3, 0.5]))
    x = d.sample((N,)).numpy()
    assert set(np.unique(x)) == {0.0, 1.0} and (x.sum(-1) == 1).all()
    for k, p in enumerate([0.2, 0.3, 0.5]):
        assert within(x[:, k].mean(), p, math.sqrt(p * (1 - p)))


def test_bernoulli_samples_have_its_probability():
    nbgrad.manual_seed(3)
    x = nbgrad.distributions.Bernoulli(logits=nbgrad.tensor([0.0, 2.0])).sample((N,)).numpy()
    assert set(np.unique(x)) == {0.0, 1.0}
    for j, p in enumerate([0.5, 1 / (1 + math.exp(-2.0))]):
        assert within(x[:, j].mean(), p, math.sqrt(p * (1 - p)))


def test_uniform_samples_cover_its_interval_evenly():
    nbgrad.manual_seed(4)
    x = nbgrad.distributions.Uniform(-2.0, 3.0).rsample((N,)).numpy()
    assert x.min() >= -2.0 and x.max() < 3.0
    assert within(x.mean(), 0.5, 5 / math.sqrt(12))
    counts, _ = np.histogram(x, bins=5, range=(-2.0, 3.0))
    assert np.all(np.abs(counts / N - 0.2) < 5 * math.sqrt(0.2 * 0.8 / N))


def test_laplace_samples_have_its_mean_and_mean_absolute_deviation():
    nbgrad.manual_seed(5)
    x = nbgrad.distributions.Laplace(1.0, 2.0).rsample((N,)).numpy().astype(float)
    assert within(x.mean(), 1.0, math.sqrt(2) * 2.0)
    assert within(np.abs(x - 1.0).mean(), 2.0, 2.0)  # |x - loc| is Exponential(1/scale)


def test_exponential_samples_have_its_mean_and_no_negatives():
    nbgrad.manual_seed(6)
    x = nbgrad.distributions.Exponential(nbgrad.tensor([0.5, 4.0])).rsample((N,)).numpy()
    assert (x >= 0).all()
    for j, rate in enumerate([0.5, 4.0]):
        assert within(x[:, j].astype(float).mean(), 1 / rate, 1 / rate)


def test_multivariate_normal_samples_have_its_mean_and_covariance():
    nbgrad.manual_seed(7)
    tril = np.array([[1.0, 0.0, 0.0], [0.5, 0.8, 0.0], [-0.3, 0.2, 0.6]])
    cov = tril @ tril.T
    loc = np.array([1.0, -2.0, 0.5])
    d = nbgrad.distributions.MultivariateNormal(
        nbgrad.tensor(loc), covariance_matrix=nbgrad.tensor(cov)
    )
    x = d.rsample((N,)).numpy().astype(float)
    for j in range(3):
        assert within(x[:, j].mean(), loc[j], math.sqrt(cov[j, j]))
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.03)


def test_gamma_samples_have_its_mean_and_variance():
    nbgrad.manual_seed(8)
    concentration, rate = nbgrad.tensor([0.5, 4.0]), nbgrad.tensor([2.0, 0.5])
    x = nbgrad.distributions.Gamma(concentration, rate).rsample((N,)).numpy().astype(float)
    assert (x > 0).all()
    for j, (a, b) in enumerate([(0.5, 2.0), (4.0, 0.5)]):
        assert within(x[:, j].mean(), a / b, math.sqrt(a) / b)
        assert abs(x[:, j].var() / (a / b**2) - 1) < 0.06


def test_gamma_rsample_gradients_match_the_mean_on_average():
    """d E[x] / d concentration = 1 / rate and d E[x] / d rate = -concentration / rate^2, the
    averages of the per-draw gradients of rsample."""
    nbgrad.manual_seed(9)
    concentration = nbgrad.tensor(3.0, dtype=nbgrad.float64, requires_grad=True)
    rate = nbgrad.tensor(2.0, dtype=nbgrad.float64, requires_grad=True)
    x = nbgrad.distributions.Gamma(concentration, rate).rsample((N,))
    x.mean().backward()
    assert abs(concentration.grad.item() - 1 / 2.0) < 0.01
    assert abs(rate.grad.item() + 3.0 / 4.0) < 0.01


def test_dirichlet_samples_have_its_mean_and_variance():
    nbgrad.manual_seed(10)
    alpha = np.array([0.5, 1.0, 3.0])
    x = nbgrad.distributions.Dirichlet(nbgrad.tensor(alpha)).rsample((N,)).numpy()
    x = x.astype(float)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-6)
    total = alpha.sum()
    for j, a in enumerate(alpha):
        mean = a / total
        var = a * (total - a) / (total**2 * (total + 1))
        assert within(x[:, j].mean(), mean, math.sqrt(var))
        assert abs(x[:, j].var() / var - 1) < 0.05


def test_beta_samples_have_its_mean():
    nbgrad.manual_seed(12)
    x = nbgrad.distributions.Beta(2.0, 5.0).sample((N,)).numpy().astype(float)
    assert ((x > 0) & (x < 1)).all()
    assert within(x.mean(), 2 / 7, math.sqrt(2 * 5 / (49 * 8)))


def test_dirichlet_rsample_gradients_match_the_mean_on_average():
    """The average over draws of d x_j / d alpha_i is d E[x_j] / d alpha_i
    = (delta_ij - E[x_j]) / sum(alpha): the Jacobian of the mean."""
    nbgrad.manual_seed(13)
    alpha_values = np.array([0.7, 2.0, 4.0])
    total = alpha_values.sum()
    expected = (np.eye(3) - alpha_values / total) / total  # [i, j]
    for j in range(3):
        alpha = nbgrad.tensor(alpha_values, dtype=nbgrad.float64, requires_grad=True)
        x = nbgrad.distributions.Dirichlet(alpha).rsample((N,))
        x[:, j].mean().backward()
        np.testing.assert_allclose(alpha.grad.numpy(), expected[:, j], atol=0.006)


def test_dirichlet_grad_is_the_exact_quantile_derivative():
    """_dirichlet_grad(x, a, total) = (dx/da at a fixed Beta(a, total - a) quantile, b fixed)
    / (1 - x): against mpmath at 30 digits, and PyTorch's approximation to 1e-3."""
    mpmath = pytest.importorskip("mpmath")

    def exact(x, a, b):
        with mpmath.workdps(30):
            x, a, b = (mpmath.mpf(v) for v in (x, a, b))
            dI = mpmath.diff(lambda s: mpmath.betainc(s, b, 0, x, regularized=True), a)
            pdf = x ** (a - 1) * (1 - x) ** (b - 1) / mpmath.beta(a, b)
            return float(-dI / pdf / (1 - x))

    cases = [
        (0.3, 0.5, 2.0),
        (0.05, 2.0, 5.0),
        (0.6, 2.0, 5.0),
        (0.9, 1.0, 1.0),
        (0.45, 10.0, 20.0),
        (0.95, 50.0, 5.0),
        (0.4, 200.0, 300.0),
        (0.99, 3.0, 0.3),
    ]
    x, a, b = (np.array(v) for v in zip(*cases))
    mine = nbgrad._dirichlet_grad(*(nbgrad.tensor(v) for v in (x, a, a + b))).numpy()
    real = torch._dirichlet_grad(*(torch.tensor(v) for v in (x, a, a + b))).numpy()
    np.testing.assert_allclose(mine, [exact(*c) for c in cases], rtol=1e-10)
    np.testing.assert_allclose(mine, real, rtol=1e-3)


def test_transform_reprs_equality_and_domains_match_torch():
    def seen(T):
        D = T.distributions
        affine = D.AffineTransform(T.zeros(2), T.ones(2), event_dim=1)
        compose = D.ComposeTransform([D.ExpTransform(), affine, D.TanhTransform()])
        return [
            repr(compose),
            repr(compose.inv),
            repr(D.ExpTransform().inv),
            repr(compose.domain),
            repr(compose.codomain),
            repr(compose.inv.domain),
            repr(compose.sign),
            compose.bijective,
            D.ExpTransform() == D.ExpTransform(),
            D.ExpTransform().inv == D.ExpTransform().inv,
            affine == D.AffineTransform(T.zeros(2), T.ones(2)),
            D.AffineTransform(0.0, -2.0).sign,
            repr(D.TanhTransform().codomain),
            repr(D.SigmoidTransform().codomain),
            tuple(affine.forward_shape((3, 1))),
            compose.with_cache(1)._cache_size,
        ]

    assert seen(nbgrad) == seen(torch)


def test_cached_transform_inverts_to_the_same_tensor():
    """With cache_size=1, log_prob of a value the transform produced reads the x it came from
    (the same tensor object) instead of atanh(tanh(x)): PyTorch's SAC-style policies rely on it."""
    for T in (nbgrad, torch):
        loc = T.tensor([0.3, 8.0], dtype=T.float64, requires_grad=True)
        d = T.distributions.TransformedDistribution(
            T.distributions.Normal(loc, 1.0), [T.distributions.TanhTransform(cache_size=1)]
        )
        x = T.tensor([0.1, 9.0], dtype=T.float64)
        y = d.transforms[0](x)  # tanh(9) rounds to 1.0: atanh would give inf
        assert d.transforms[0].inv(y) is x
        assert T.isfinite(d.log_prob(y)).all()


def test_log_normal_samples_have_its_median_and_log_moments():
    nbgrad.manual_seed(14)
    x = nbgrad.distributions.LogNormal(1.0, 0.5).rsample((N,)).numpy().astype(float)
    assert (x > 0).all()
    assert within(np.log(x).mean(), 1.0, 0.5)
    assert within((x < math.e).mean(), 0.5, 0.5)


def test_poisson_cauchy_and_chi2_samples_follow_their_distributions():
    nbgrad.manual_seed(15)
    counts = nbgrad.distributions.Poisson(nbgrad.tensor([0.5, 7.0])).sample((N,)).numpy()
    assert (counts == np.round(counts)).all() and (counts >= 0).all()
    for j, rate in enumerate([0.5, 7.0]):
        assert within(counts[:, j].mean(), rate, math.sqrt(rate))
    x = nbgrad.distributions.Cauchy(1.0, 2.0).rsample((N,)).numpy().astype(float)
    # quartiles of Cauchy(1, 2): 1 -/+ 2
    assert within((x < -1.0).mean(), 0.25, math.sqrt(0.25 * 0.75))
    assert within((x < 3.0).mean(), 0.75, math.sqrt(0.25 * 0.75))
    t = nbgrad.distributions.StudentT(5.0, 1.0, 2.0).rsample((N,)).numpy().astype(float)
    assert within(t.mean(), 1.0, 2.0 * math.sqrt(5.0 / 3.0))
    assert within((t < 1.0).mean(), 0.5, 0.5)
    y = nbgrad.distributions.Chi2(4.0).rsample((N,)).numpy().astype(float)
    assert within(y.mean(), 4.0, math.sqrt(8.0))


def test_sampling_follows_nbgrads_seed():
    d = nbgrad.distributions.Normal(nbgrad.zeros(3), 1.0)
    nbgrad.manual_seed(11)
    first = d.sample((4,))
    nbgrad.manual_seed(11)
    assert nbgrad.equal(first, d.sample((4,)))
