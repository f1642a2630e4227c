"""The distributions added after the first set (HalfNormal, HalfCauchy, Gumbel, Binomial,
Geometric, AbsTransform) against torch.distributions: values, gradients and graphs of what they
compute, their shapes, reprs and validation errors, and the statistics of their draws."""

import math

import numpy as np
import pytest
from graph_compare import structure

import nbgrad

torch = pytest.importorskip("torch")

from distribution_validation import validation_on_in_both_libraries  # noqa: E402, F401

SCALE = np.array([[0.7, 1.3, 2.1], [0.4, 1.0, 0.9]])
NUMBERS = {  # float leaves that require grad
    "loc": np.array([[0.3, -1.2, 0.5], [2.0, 0.1, -0.4]]),
    "loc2": np.array([[-0.2, 0.05, 1.0], [0.25, -0.6, 0.15]]),
    "scale": SCALE,
    "scale2": SCALE[::-1].copy() + 0.2,
    "value": np.array([[0.1, -0.5, 1.7], [1.1, 0.3, -2.0]]),
    "rate": np.array([[1.5, 0.3, 0.8], [2.2, 1.1, 0.6]]),
    "positive_value": np.array([[0.2, 0.6, 1.8], [1.2, 0.4, 2.1]]),
    "unit": np.array([[0.1, 0.45, 0.7], [0.93, 0.2, 0.55]]),
    "unit2": np.array([[0.55, 0.2, 0.93], [0.7, 0.45, 0.1]]),
    "logits": np.array([[0.2, -1.0, 2.3, 0.4], [1.5, 1.4, -0.3, 0.0]]),
    "probs": np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.05, 0.5, 0.2]]),
    "probs2": np.array([[0.3, 0.3, 0.2, 0.2], [0.05, 0.15, 0.7, 0.1]]),
    "logits2": np.array([[-0.3, 0.8, 0.1, 1.2], [0.0, -2.0, 0.6, 0.9]]),
    "temperature": np.array([[0.3], [1.7]]),
    "probs_with_zero": np.array([[0.5, 0.0, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4]]),
    "factor": np.array([[1.0, 0.5], [0.2, -0.3], [0.4, 0.8]]),
    "factor_batch": np.array(
        [[[1.0, 0.5], [0.2, -0.3], [0.4, 0.8]], [[0.1, 0.0], [0.7, 0.2], [-0.5, 0.3]]]
    ),
}
CONSTANTS = {  # tensors that never require grad: counts, outcomes
    "counts": np.array([[0.0, 1.0, 3.0], [2.0, 5.0, 4.0]]),
    "total": np.array([[5.0, 5.0, 6.0], [2.0, 7.0, 4.0]]),
    "count_vectors": np.array([[1.0, 0.0, 5.0, 2.0], [3.0, 3.0, 0.0, 2.0]]),
    "count_vectors_with_zero": np.array([[4.0, 0.0, 2.0, 2.0], [1.0, 2.0, 3.0, 2.0]]),
    "vector_batch": np.array([[[0.1, -0.5, 1.7], [1.1, 0.3, -2.0]]] * 4)
    * np.arange(1, 5)[:, None, None],
    "with_negative": np.array([[0.5, -0.1, 1.0], [0.0, 2.0, -3.0]]),
}

CASES = [
    # HalfNormal
    "D.HalfNormal(scale).log_prob(positive_value)",
    "D.HalfNormal(2.0).log_prob(positive_value)",
    "D.HalfNormal(scale, validate_args=False).log_prob(with_negative)",
    "D.HalfNormal(scale).entropy()",
    "D.HalfNormal(scale).cdf(positive_value)",
    "D.HalfNormal(scale).icdf(unit)",
    "D.HalfNormal(scale).mean",
    "D.HalfNormal(scale).mode",
    "D.HalfNormal(scale).variance",
    "D.HalfNormal(scale).stddev",
    "D.HalfNormal(scale).expand((4, 2, 3)).log_prob(positive_value)",
    # HalfCauchy
    "D.HalfCauchy(scale).log_prob(positive_value)",
    "D.HalfCauchy(scale, validate_args=False).log_prob(with_negative)",
    "D.HalfCauchy(scale).entropy()",
    "D.HalfCauchy(scale).cdf(positive_value)",
    "D.HalfCauchy(scale).icdf(unit)",
    "D.HalfCauchy(scale).mean",
    "D.HalfCauchy(scale).variance",
    "D.HalfCauchy(scale).mode",
    # Gumbel
    "D.Gumbel(loc, scale).log_prob(value)",
    "D.Gumbel(0.0, 1.0).log_prob(value)",
    "D.Gumbel(loc, 2.0).log_prob(value)",
    "D.Gumbel(loc, scale).entropy()",
    "D.Gumbel(loc, scale).cdf(value)",
    "D.Gumbel(loc, scale).icdf(unit)",
    "D.Gumbel(loc, scale).mean",
    "D.Gumbel(loc, scale).mode",
    "D.Gumbel(loc, scale).stddev",
    "D.Gumbel(loc, scale).variance",
    "D.Gumbel(loc, scale).expand((4, 2, 3)).log_prob(value)",
    # Binomial
    "D.Binomial(7, probs=unit).log_prob(counts)",
    "D.Binomial(total, probs=unit).log_prob(counts)",
    "D.Binomial(total, logits=value).log_prob(counts)",
    "D.Binomial(5, logits=value).log_prob(counts)",
    "D.Binomial(total, probs=unit).logits",
    "D.Binomial(5, logits=value).probs",
    "D.Binomial(7, probs=unit).entropy()",
    "D.Binomial(5, logits=value).entropy()",
    "D.Binomial(total, probs=unit).mean",
    "D.Binomial(total, probs=unit).variance",
    "D.Binomial(total, probs=unit).mode",
    "D.Binomial(total, probs=unit).total_count",
    "D.Binomial(7, probs=unit).enumerate_support()",
    "D.Binomial(7, probs=unit).enumerate_support(expand=False)",
    "D.Binomial(total, probs=unit).expand((4, 2, 3)).log_prob(counts)",
    # Geometric
    "D.Geometric(probs=unit).log_prob(counts)",
    "D.Geometric(logits=value).log_prob(counts)",
    "D.Geometric(probs=unit * 0 + 1).log_prob(counts)",
    "D.Geometric(probs=unit).entropy()",
    "D.Geometric(logits=value).entropy()",
    "D.Geometric(probs=unit).mean",
    "D.Geometric(probs=unit).variance",
    "D.Geometric(probs=unit).mode",
    "D.Geometric(logits=value).probs",
    "D.Geometric(probs=unit).logits",
    "D.Geometric(probs=unit).expand((4, 2, 3)).log_prob(counts)",
    # Multinomial
    "D.Multinomial(8, logits=logits).log_prob(count_vectors)",
    "D.Multinomial(8, probs=probs).log_prob(count_vectors)",
    "D.Multinomial(8, probs=probs_with_zero).log_prob(count_vectors_with_zero)",
    "D.Multinomial(8, logits=logits[0]).log_prob(count_vectors)",
    "D.Multinomial(8, probs=probs).mean",
    "D.Multinomial(8, logits=logits).variance",
    "D.Multinomial(8, probs=probs).entropy()",
    "D.Multinomial(3, logits=logits).entropy()",
    "D.Multinomial(8, probs=probs).probs",
    "D.Multinomial(8, probs=probs).logits",
    "D.Multinomial(8, logits=logits).expand((3, 2)).log_prob(count_vectors)",
    # RelaxedBernoulli and its logit
    "D.RelaxedBernoulli(T.tensor(0.5, dtype=unit.dtype), probs=unit).log_prob(unit2)",
    "D.RelaxedBernoulli(T.tensor(2.0, dtype=unit.dtype), logits=value).log_prob(unit2)",
    "D.RelaxedBernoulli(temperature, logits=value).log_prob(unit2)",
    "D.RelaxedBernoulli(temperature, probs=unit).logits",
    "D.RelaxedBernoulli(temperature, logits=value).probs",
    "D.RelaxedBernoulli(temperature, logits=value).temperature",
    "D.relaxed_bernoulli.LogitRelaxedBernoulli(temperature, probs=unit).log_prob(value)",
    "D.relaxed_bernoulli.LogitRelaxedBernoulli(temperature, logits=value).log_prob(loc)",
    "D.RelaxedBernoulli(temperature, probs=unit).expand((4, 2, 3)).log_prob(unit2)",
    # RelaxedOneHotCategorical and its log
    "D.RelaxedOneHotCategorical(T.tensor(0.5, dtype=probs.dtype), probs=probs).log_prob(probs2)",
    "D.RelaxedOneHotCategorical(temperature, logits=logits).log_prob(probs2)",
    "D.RelaxedOneHotCategorical(temperature[0], logits=logits[0]).log_prob(probs2)",
    "D.RelaxedOneHotCategorical(temperature, logits=logits).probs",
    "D.RelaxedOneHotCategorical(temperature, probs=probs).logits",
    "D.relaxed_categorical.ExpRelaxedCategorical(temperature, logits=logits).log_prob(logits2)",
    "D.RelaxedOneHotCategorical(temperature[1, 0], logits=logits).expand((3, 2)).log_prob(probs2)",
    # LowRankMultivariateNormal
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).log_prob(value)",
    "D.LowRankMultivariateNormal(loc, factor, scale).log_prob(value)",
    "D.LowRankMultivariateNormal(loc[0], factor_batch, scale[0]).log_prob(vector_batch)",
    "D.LowRankMultivariateNormal(loc, factor[:, :1], scale).log_prob(value[0])",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).entropy()",
    "D.LowRankMultivariateNormal(loc[0], factor, scale[0]).entropy()",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).variance",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).mean",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).covariance_matrix",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).precision_matrix",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).scale_tril",
    "D.LowRankMultivariateNormal(loc[0], factor_batch, scale).scale_tril",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).loc",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).cov_factor",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).cov_diag",
    "D.LowRankMultivariateNormal(loc, factor, scale[0]).expand((4, 2)).log_prob(value)",
    # MixtureSameFamily
    "D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(loc2.repeat(1, 2)[:, :4],"
    " scale2.repeat(1, 2)[:, :4])).log_prob(value[:, 0])",
    "D.MixtureSameFamily(D.Categorical(logits=logits[0]),"
    " D.Normal(loc.repeat(1, 2)[:, :4], scale.repeat(1, 2)[:, :4])).log_prob(vector_batch[..., 0])",
    "D.MixtureSameFamily(D.Categorical(probs=probs), D.Normal(logits, probs + 0.5)).mean",
    "D.MixtureSameFamily(D.Categorical(probs=probs), D.Normal(logits, probs + 0.5)).variance",
    "D.MixtureSameFamily(D.Categorical(probs=probs), D.Normal(logits, probs + 0.5)).stddev",
    "D.MixtureSameFamily(D.Categorical(probs=probs), D.Normal(logits, probs + 0.5))"
    ".cdf(value[:, 1])",
    "D.MixtureSameFamily(D.Categorical(logits=logits), D.Independent(D.Normal(logits.unsqueeze(-1)"
    ".expand(2, 4, 3), probs.unsqueeze(-1) + scale.unsqueeze(1)), 1)).log_prob(value)",
    "D.MixtureSameFamily(D.Categorical(logits=logits), D.Independent(D.Normal(logits.unsqueeze(-1)"
    ".expand(2, 4, 3), probs.unsqueeze(-1) + scale.unsqueeze(1)), 1)).mean",
    "D.MixtureSameFamily(D.Categorical(logits=logits), D.Independent(D.Normal(logits.unsqueeze(-1)"
    ".expand(2, 4, 3), probs.unsqueeze(-1) + scale.unsqueeze(1)), 1)).variance",
    "D.MixtureSameFamily(D.Categorical(logits=logits), D.Poisson(probs * 4))"
    ".log_prob(counts[:, 1])",
    "D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(logits, probs + 0.5))"
    ".expand((3, 2)).log_prob(value[:, 0])",
    # NegativeBinomial
    "D.NegativeBinomial(scale, probs=unit).log_prob(counts)",
    "D.NegativeBinomial(scale, logits=value).log_prob(counts)",
    "D.NegativeBinomial(3.0, probs=unit).log_prob(counts)",
    "D.NegativeBinomial(total * 0, probs=unit, validate_args=False).log_prob(counts)",
    "D.NegativeBinomial(scale, probs=unit).mean",
    "D.NegativeBinomial(scale, logits=value).mode",
    "D.NegativeBinomial(scale * 3, probs=unit).mode",
    "D.NegativeBinomial(scale, probs=unit).variance",
    "D.NegativeBinomial(scale, probs=unit).logits",
    "D.NegativeBinomial(scale, logits=value).probs",
    "D.NegativeBinomial(scale, logits=value).total_count",
    "D.NegativeBinomial(scale, probs=unit).expand((4, 2, 3)).log_prob(counts)",
    # Weibull and PowerTransform
    "D.Weibull(scale, scale2).log_prob(positive_value)",
    "D.Weibull(2.0, scale2).log_prob(positive_value)",
    "D.Weibull(scale, scale2).entropy()",
    "D.Weibull(scale, scale2).mean",
    "D.Weibull(scale, scale2).mode",
    "D.Weibull(scale, scale2).variance",
    "D.Weibull(scale, scale2).cdf(positive_value)",
    "D.Weibull(scale, scale2).icdf(unit)",
    "D.Weibull(scale, scale2).expand((4, 2, 3)).log_prob(positive_value)",
    "D.PowerTransform(scale)(positive_value)",
    "D.PowerTransform(scale).inv(positive_value)",
    "D.PowerTransform(scale).log_abs_det_jacobian(positive_value, positive_value ** scale)",
    "D.TransformedDistribution(D.Gamma(scale, scale2), D.PowerTransform(-scale))"
    ".log_prob(positive_value)",
    "D.TransformedDistribution(D.Exponential(scale), D.PowerTransform(-scale2))"
    ".cdf(positive_value)",
    # Pareto
    "D.Pareto(scale, scale2).log_prob(positive_value + 2.5)",
    "D.Pareto(1.0, scale2).log_prob(positive_value + 1.0)",
    "D.Pareto(scale, scale2).entropy()",
    "D.Pareto(scale, scale2 + 0.5).mean",
    "D.Pareto(scale, scale2 + 0.5).variance",
    "D.Pareto(scale, scale2).mode",
    "D.Pareto(scale, scale2).cdf(positive_value + 2.5)",
    "D.Pareto(scale, scale2).icdf(unit)",
    "D.Pareto(scale, scale2).expand((4, 2, 3)).log_prob(positive_value + 2.5)",
    # KL divergences
    "D.kl_divergence(D.HalfNormal(scale), D.HalfNormal(scale2))",
    "D.kl_divergence(D.Gumbel(loc, scale), D.Gumbel(loc2, scale2))",
    "D.kl_divergence(D.Gumbel(0.0, scale), D.Gumbel(loc2, 1.5))",
    "D.kl_divergence(D.Geometric(probs=unit), D.Geometric(probs=unit2))",
    "D.kl_divergence(D.Geometric(logits=value), D.Geometric(probs=unit))",
    "D.kl_divergence(D.Binomial(7, probs=unit), D.Binomial(7, logits=value))",
    "D.kl_divergence(D.Binomial(total, probs=unit), D.Binomial(total - counts.clamp(max=1),"
    " probs=unit2))",
    "D.kl_divergence(D.Binomial(5, probs=unit[0, 0]), D.Binomial(4, probs=unit2[0, 0]))",
    "D.kl_divergence(D.Poisson(scale), D.Binomial(5, probs=unit))",
    "D.kl_divergence(D.Poisson(scale[0]), D.Binomial(5, probs=unit))",
    "D.kl_divergence(D.TransformedDistribution(D.Normal(loc, scale), D.ExpTransform()),"
    " D.TransformedDistribution(D.Normal(loc2, scale2), D.ExpTransform()))",
    "D.kl_divergence(D.TransformedDistribution(D.Independent(D.Normal(loc, scale), 1),"
    " [D.ExpTransform()]), D.TransformedDistribution(D.Independent(D.Normal(loc2, scale2), 1),"
    " [D.ExpTransform()]))",
    "D.kl_divergence(D.LogNormal(loc, scale), D.TransformedDistribution(D.Normal(loc2, scale2),"
    " D.ExpTransform()))",
    # across families, finite
    "D.kl_divergence(D.Exponential(scale), D.Gamma(scale2, rate))",
    "D.kl_divergence(D.Exponential(scale), D.Normal(loc, scale2))",
    "D.kl_divergence(D.Exponential(scale), D.Gumbel(loc, scale2))",
    "D.kl_divergence(D.Gamma(scale, scale2), D.Exponential(rate))",
    "D.kl_divergence(D.Laplace(loc, scale), D.Normal(loc2, scale2))",
    "D.kl_divergence(D.Normal(loc, scale), D.Gumbel(loc2, scale2))",
    "D.kl_divergence(D.Gumbel(loc, scale), D.Normal(loc2, scale2))",
    "D.kl_divergence(D.Gumbel(loc[0], scale[0]), D.Normal(loc2, 2.0))",
    "D.kl_divergence(D.Gamma(scale, scale2), D.Normal(loc, rate))",
    "D.kl_divergence(D.Uniform(scale, scale + rate), D.Exponential(scale2))",
    "D.kl_divergence(D.Uniform(loc, loc + rate), D.Exponential(scale2))",
    "D.kl_divergence(D.Uniform(scale, scale + rate), D.Gamma(scale2, rate))",
    "D.kl_divergence(D.Uniform(loc, loc + rate), D.Gamma(scale2, rate))",
    "D.kl_divergence(D.Uniform(loc, loc + rate), D.Gumbel(loc2, scale2))",
    "D.kl_divergence(D.Uniform(loc[0, 0], loc[0, 0] + rate[0, 0]), D.Exponential(scale2[0, 0]))",
    "D.kl_divergence(D.Pareto(scale, rate), D.Pareto(scale2, scale))",
    "D.kl_divergence(D.Pareto(scale[0, 0], rate[0, 0]), D.Pareto(scale2[0, 0], scale[0, 0]))",
    "D.kl_divergence(D.Pareto(scale, rate + 0.5), D.Exponential(scale2))",
    "D.kl_divergence(D.Pareto(scale, rate + 0.5), D.Gamma(scale2, rate))",
    "D.kl_divergence(D.Pareto(scale, rate + 1.5), D.Normal(loc, scale2))",
    "D.kl_divergence(D.Uniform(scale + 0.5, scale + rate + 0.5), D.Pareto(scale2, rate))",
    "D.kl_divergence(D.Gamma(scale, scale2), D.Gumbel(loc, rate))",
    "D.kl_divergence(D.Beta(scale, scale2), D.Exponential(rate))",
    "D.kl_divergence(D.Beta(scale, scale2), D.Gamma(rate, scale))",
    "D.kl_divergence(D.Beta(scale, scale2), D.Normal(loc, rate))",
    "D.kl_divergence(D.Beta(scale, scale2), D.Uniform(unit - 0.2, unit + 0.5))",
    "D.kl_divergence(D.Beta(scale, scale2), D.Uniform(unit * 0 - 1, unit + 0.5))",
    "D.kl_divergence(D.Beta(scale[0, 0], 2.0), D.Uniform(unit[0, 0] - 0.2, 1.5))",
    "D.kl_divergence(D.Uniform(unit * 0.5, unit), D.Beta(scale, scale2))",
    "D.kl_divergence(D.Uniform(loc, loc + rate), D.Beta(scale, scale2))",
    # families whose supports do not nest: infinite, one number per distribution of p
    "D.kl_divergence(D.Normal(loc, scale), D.Beta(scale, 2.0))",
    "D.kl_divergence(D.Normal(loc[0], scale[0]), D.Exponential(scale))",
    "D.kl_divergence(D.Normal(loc, 1.0), D.Gamma(scale, scale2))",
    "D.kl_divergence(D.Normal(loc, scale), D.Uniform(loc - 1, loc + 1))",
    "D.kl_divergence(D.Laplace(loc, scale), D.Beta(scale, 2.0))",
    "D.kl_divergence(D.Laplace(loc, scale), D.Exponential(scale))",
    "D.kl_divergence(D.Laplace(loc, scale), D.Gamma(scale, scale2))",
    "D.kl_divergence(D.Laplace(loc, scale), D.Uniform(loc - 1, loc + 1))",
    "D.kl_divergence(D.Gumbel(loc, scale), D.Beta(scale, 2.0))",
    "D.kl_divergence(D.Gumbel(loc, scale), D.Exponential(scale))",
    "D.kl_divergence(D.Gumbel(loc, scale), D.Gamma(scale, scale2))",
    "D.kl_divergence(D.Gumbel(loc, scale), D.Uniform(loc - 1, loc + 1))",
    "D.kl_divergence(D.Exponential(scale), D.Beta(scale, 2.0))",
    "D.kl_divergence(D.Exponential(scale), D.Uniform(loc - 1, loc + 1))",
    "D.kl_divergence(D.Gamma(scale, scale2), D.Beta(scale, 2.0))",
    "D.kl_divergence(D.Gamma(scale, scale2), D.Uniform(loc - 1, loc + 1))",
    "D.kl_divergence(D.Normal(loc, scale), D.Pareto(scale2, 2.0))",
    "D.kl_divergence(D.Laplace(loc, scale), D.Pareto(scale2, 2.0))",
    "D.kl_divergence(D.Gumbel(loc, scale), D.Pareto(scale2, 2.0))",
    "D.kl_divergence(D.Exponential(scale), D.Pareto(scale2, 2.0))",
    "D.kl_divergence(D.Gamma(scale, scale2), D.Pareto(scale2, 2.0))",
    "D.kl_divergence(D.Beta(scale, scale2), D.Pareto(scale2, 2.0))",
    "D.kl_divergence(D.Pareto(scale, scale2), D.Beta(scale2, 2.0))",
    "D.kl_divergence(D.Pareto(scale, scale2), D.Uniform(loc - 1, loc + 1))",
    # AbsTransform
    "D.AbsTransform()(value)",
    "D.AbsTransform().inv(positive_value)",
    "D.TransformedDistribution(D.Normal(loc, scale), D.AbsTransform()).sample().shape",
]


def run_case(T, case, dtype_name):
    dtype = getattr(T, dtype_name)
    leaves = {name: T.tensor(a, dtype=dtype, requires_grad=True) for name, a in NUMBERS.items()}
    constants = {name: T.tensor(a, dtype=dtype) for name, a in CONSTANTS.items()}
    out = eval(case, {"T": T, "D": T.distributions, **leaves, **constants})  # noqa: S307
    if not isinstance(out, T.Tensor):
        return out, {}
    grads = {}
    if out.requires_grad:
        # a weighted sum, so that every entry's gradient counts separately
        spread = np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape))
        finite = T.where(T.isfinite(out), out, T.zeros_like(out))
        (finite * T.tensor(spread, dtype=dtype)).sum().backward()
        grads = {name: leaf.grad for name, leaf in leaves.items()}
    return out, grads


def numpy_of(t):
    return None if t is None else t.detach().numpy()


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES)
def test_values_grads_and_graph_match_torch(case, dtype_name):
    mine, my_grads = run_case(nbgrad, case, dtype_name)
    real, real_grads = run_case(torch, case, dtype_name)
    if not isinstance(real, torch.Tensor):
        assert tuple(mine) == tuple(real)
        return
    if dtype_name == "float64":
        # lgamma (Binomial) in nbgrad's kernels and PyTorch's agree to ~1e-9
        tolerance = {"rtol": 1e-8, "atol": 1e-10}
    else:
        tolerance = {"rtol": 2e-5, "atol": 2e-6}
    assert str(mine.dtype) == str(real.dtype)
    assert tuple(mine.shape) == tuple(real.shape)
    np.testing.assert_allclose(numpy_of(mine), numpy_of(real), equal_nan=True, **tolerance)
    assert mine.requires_grad == real.requires_grad
    assert structure(mine.grad_fn) == structure(real.grad_fn)
    for name in real_grads:
        assert (my_grads[name] is None) == (real_grads[name] is None), name
        if real_grads[name] is not None:
            np.testing.assert_allclose(
                numpy_of(my_grads[name]), numpy_of(real_grads[name]), err_msg=name, **tolerance
            )


# --- shapes, attributes, reprs ----------------------------------------------------------------

LOC = [[0.3, -1.2, 0.5], [2.0, 0.1, -0.4]]
SCALES = [[0.7, 1.3, 2.1], [0.4, 1.0, 0.9]]
DISTRIBUTIONS = {
    "half_normal": "D.HalfNormal(T.tensor(SCALES))",
    "half_normal_scalar": "D.HalfNormal(1.5)",
    "half_cauchy": "D.HalfCauchy(T.tensor(SCALES))",
    "gumbel": "D.Gumbel(T.tensor(LOC), T.tensor(SCALES))",
    "gumbel_scalar": "D.Gumbel(0.0, 2.0)",
    "binomial": "D.Binomial(T.tensor([[3.0], [8.0]]), probs=T.tensor(SCALES) / 3)",
    "binomial_logits": "D.Binomial(4, logits=T.tensor(LOC))",
    "binomial_scalar": "D.Binomial(5, probs=0.3)",
    "binomial_int_count": "D.Binomial(T.tensor([2, 3]), probs=T.tensor([0.2, 0.9]))",
    "geometric": "D.Geometric(probs=T.tensor(SCALES) / 3)",
    "geometric_logits": "D.Geometric(logits=T.tensor(LOC))",
    "geometric_scalar": "D.Geometric(0.25)",
    "relaxed_bernoulli": "D.RelaxedBernoulli(T.tensor(0.5), probs=T.tensor(SCALES) / 3)",
    "relaxed_bernoulli_logits": "D.RelaxedBernoulli(T.tensor([[0.2], [2.0]]),"
    " logits=T.tensor(LOC))",
    "logit_relaxed_bernoulli": "D.relaxed_bernoulli.LogitRelaxedBernoulli(T.tensor(0.5),"
    " logits=T.tensor(LOC))",
    "relaxed_one_hot": "D.RelaxedOneHotCategorical(T.tensor(0.5), logits=T.tensor(LOC))",
    "relaxed_one_hot_probs": "D.RelaxedOneHotCategorical(T.tensor(1.5),"
    " probs=T.tensor(SCALES).softmax(-1)[0])",
    "exp_relaxed_categorical": "D.relaxed_categorical.ExpRelaxedCategorical(T.tensor(0.5),"
    " logits=T.tensor(LOC))",
    "low_rank": "D.LowRankMultivariateNormal(T.tensor(LOC), T.ones(3, 2), T.tensor(SCALES[0]))",
    "low_rank_batch_factor": "D.LowRankMultivariateNormal(T.tensor(LOC[0]),"
    " T.ones(4, 1, 3, 2), T.tensor(SCALES))",
    "mixture": "D.MixtureSameFamily(D.Categorical(logits=T.tensor(LOC)),"
    " D.Normal(T.tensor(LOC), T.tensor(SCALES)))",
    "mixture_of_vectors": "D.MixtureSameFamily(D.Categorical(logits=T.tensor(LOC)),"
    " D.Independent(D.Normal(T.zeros(2, 3, 4), 1.0), 1))",
    "mixture_of_counts": "D.MixtureSameFamily(D.Categorical(logits=T.tensor(LOC)),"
    " D.Poisson(T.tensor(SCALES)))",
    "negative_binomial": "D.NegativeBinomial(T.tensor(SCALES), probs=T.tensor(SCALES) / 3)",
    "negative_binomial_logits": "D.NegativeBinomial(4, logits=T.tensor(LOC))",
    "negative_binomial_scalar": "D.NegativeBinomial(2.5, probs=0.3)",
    "weibull": "D.Weibull(T.tensor(SCALES), T.tensor(SCALES) + 0.5)",
    "weibull_scalar": "D.Weibull(1.0, 2.0)",
    "pareto": "D.Pareto(T.tensor(SCALES), T.tensor(SCALES) + 0.5)",
    "pareto_scalar": "D.Pareto(1.0, 3.0)",
    "multinomial": "D.Multinomial(6, probs=T.tensor(SCALES) / 3)",
    "multinomial_1d": "D.Multinomial(10, logits=T.tensor(LOC[0]))",
}


def make(T, key):
    names = {"T": T, "D": T.distributions, "LOC": LOC, "SCALES": SCALES}
    return eval(DISTRIBUTIONS[key], names)  # noqa: S307


def describe(d):
    # the distribution classes it is one of (nbgrad's mixins for shared code are left out)
    base = d.__class__.__mro__[-2]
    seen = {
        "type": type(d).__name__,
        "bases": [c.__name__ for c in type(d).__mro__ if issubclass(c, base)],
        "batch_shape": tuple(d.batch_shape),
        "event_shape": tuple(d.event_shape),
        "has_rsample": d.has_rsample,
        "has_enumerate_support": d.has_enumerate_support,
        "repr": repr(d),
        "arg_constraints": {k: repr(v) for k, v in d.arg_constraints.items()},
        "support": repr(d.support),
        "support_event_dim": d.support.event_dim,
        "support_is_discrete": d.support.is_discrete,
        "validate_args": d._validate_args,
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


@pytest.mark.parametrize("key", DISTRIBUTIONS)
def test_expand_matches_torch(key):
    mine, real = make(nbgrad, key), make(torch, key)
    new_batch = (3,) + tuple(real.batch_shape)
    a, b = mine.expand(new_batch), real.expand(new_batch)
    assert describe(a) == describe(b)
    assert tuple(a.sample((2,)).shape) == tuple(b.sample((2,)).shape)


@pytest.mark.parametrize(
    ("make_d", "rsample_shape"),
    [
        ("D.HalfNormal(scale)", (3,)),
        ("D.Gumbel(0.0, scale)", ()),
        ("D.HalfCauchy(scale)", (2,)),
        ("D.Gumbel(loc, scale)", (3,)),
        ("D.Gumbel(loc, 2.0)", ()),
        ("D.LowRankMultivariateNormal(loc, T.ones(3, 2), scale[0])", (3,)),
        ("D.LowRankMultivariateNormal(loc[0], T.ones(3, 1), scale)", ()),
        ("D.Weibull(scale, scale + 1)", (3,)),
        ("D.Weibull(1.0, scale)", ()),
        ("D.Pareto(scale, scale + 1)", (2,)),
        ("D.Pareto(scale, 2.0)", ()),
        ("D.RelaxedBernoulli(T.tensor(0.5), logits=loc)", (3,)),
        ("D.RelaxedBernoulli(T.tensor(0.5), probs=scale / 3)", ()),
        ("D.relaxed_bernoulli.LogitRelaxedBernoulli(T.tensor(0.5), logits=loc)", (2,)),
        ("D.RelaxedOneHotCategorical(T.tensor(0.5), logits=loc)", (3,)),
        ("D.RelaxedOneHotCategorical(T.tensor(0.5), probs=scale / scale.sum(-1, True))", ()),
    ],
)
def test_rsample_graph_matches_torch(make_d, rsample_shape):
    def run(T):
        loc = T.tensor(LOC, requires_grad=True)
        scale = T.tensor(SCALES, requires_grad=True)
        d = eval(make_d, {"T": T, "D": T.distributions, "loc": loc, "scale": scale})  # noqa: S307
        x = d.rsample(rsample_shape)
        x.sum().backward()
        return x, {"loc": loc.grad, "scale": scale.grad}

    (mine, my_grads), (real, real_grads) = run(nbgrad), run(torch)
    assert structure(mine.grad_fn) == structure(real.grad_fn)
    assert {k: g is None for k, g in my_grads.items()} == {
        k: g is None for k, g in real_grads.items()
    }


# --- validation ------------------------------------------------------------------------------

ERRORS = [
    "D.HalfNormal(-1.0)",
    "D.HalfNormal(T.tensor([1.0, 0.0]))",
    "D.HalfNormal(1.0).log_prob(T.tensor([-1.0]))",
    "D.HalfNormal(1.0).cdf(T.tensor([-1.0]))",
    "D.HalfCauchy(-1.0)",
    "D.HalfCauchy(1.0).log_prob(T.tensor([-1.0, 2.0]))",
    "D.Gumbel(0.0, -1.0)",
    "D.Gumbel(T.tensor([0.0, float('nan')]), 1.0)",
    "D.Gumbel(0.0, 1.0).log_prob(T.tensor([float('nan')]))",
    "D.Binomial(-1, probs=T.tensor([0.2, 0.5]))",
    "D.Binomial(T.tensor([2.5, 5.5]), probs=T.tensor([0.2, 0.5]))",
    "D.Binomial(5, probs=T.tensor([0.2, 1.5]))",
    "D.Binomial(5, probs=T.tensor([0.2]), logits=T.tensor([0.2]))",
    "D.Binomial(5)",
    "D.Binomial(5, probs=T.tensor([0.2, 0.5])).log_prob(T.tensor([6.0, 1.0]))",
    "D.Binomial(5, probs=T.tensor([0.2, 0.5])).log_prob(T.tensor([1.5, 1.0]))",
    "D.Binomial(T.tensor([2.0, 3.0]), probs=T.tensor([0.2, 0.5])).entropy()",
    "D.Binomial(T.tensor([2.0, 3.0]), probs=T.tensor([0.2, 0.5])).enumerate_support()",
    "D.Binomial(5, probs=0.5).rsample()",
    "D.Geometric(probs=T.tensor([-0.5, 1.0]))",
    "D.Geometric(probs=T.tensor([0.0, 1.0]))",
    "D.Geometric(probs=0.0)",
    "D.Geometric(probs=T.tensor([[0.5, 0.0], [0.0, 0.2]]))",
    "D.Geometric()",
    "D.Geometric(probs=0.5).log_prob(T.tensor([-1.0]))",
    "D.Geometric(probs=0.5).log_prob(T.tensor([0.5]))",
    "D.Geometric(probs=0.5).enumerate_support()",
    "D.Multinomial(T.tensor(4), probs=T.tensor([0.5, 0.5]))",
    "D.Multinomial(4, probs=T.tensor(0.5))",
    "D.Multinomial(4, probs=T.tensor([0.5, -0.5]))",
    "D.Multinomial(4)",
    "D.Multinomial(4, probs=T.tensor([0.5, 0.5])).log_prob(T.tensor([3.0, 2.0]))",
    "D.Multinomial(4, probs=T.tensor([0.5, 0.5])).log_prob(T.tensor([-1.0, 2.0]))",
    "D.Multinomial(4, probs=T.tensor([0.5, 0.5])).log_prob(T.tensor([1.0, 2.0, 1.0]))",
    "D.Multinomial(4, probs=T.tensor([0.5, 0.5])).mode",
    "D.RelaxedBernoulli(T.tensor(0.5), probs=T.tensor([0.5, 1.5]))",
    "D.RelaxedBernoulli(T.tensor(0.5))",
    "D.RelaxedBernoulli(T.tensor(0.5), probs=T.tensor([0.5])).log_prob(T.tensor([1.5]))",
    "D.RelaxedBernoulli(T.tensor(0.5), probs=T.tensor([0.5])).mean",
    "D.RelaxedOneHotCategorical(T.tensor(0.5), probs=T.tensor([0.5, -0.5]))",
    "D.RelaxedOneHotCategorical(T.tensor(0.5), probs=T.tensor(0.5))",
    "D.RelaxedOneHotCategorical(T.tensor(0.5), logits=T.zeros(3))"
    ".log_prob(T.tensor([0.5, 0.6, 0.1]))",
    "D.RelaxedOneHotCategorical(T.tensor(0.5), logits=T.zeros(3)).log_prob(T.tensor([0.5, 0.5]))",
    "D.LowRankMultivariateNormal(T.tensor(0.0), T.ones(3, 2), T.ones(3))",
    "D.LowRankMultivariateNormal(T.zeros(3), T.ones(3), T.ones(3))",
    "D.LowRankMultivariateNormal(T.zeros(3), T.ones(2, 2), T.ones(3))",
    "D.LowRankMultivariateNormal(T.zeros(3), T.ones(3, 2), T.ones(2))",
    "D.LowRankMultivariateNormal(T.zeros(3), T.ones(3, 2), T.ones(3)).log_prob(T.zeros(2))",
    "D.MixtureSameFamily(D.Normal(T.zeros(3), 1.0), D.Normal(T.zeros(3), 1.0))",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(3)), 3)",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(2, 3)), D.Normal(T.zeros(2, 2), 1.0))",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(4, 3)), D.Normal(T.zeros(2, 3), 1.0))",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(2, 3)), D.Normal(T.zeros(2, 3), 1.0))"
    ".log_prob(T.tensor([0.1, float('nan')]))",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(2, 3)), D.Normal(T.zeros(2, 3), 1.0))"
    ".log_prob(T.zeros(3))",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(2, 3)), D.Poisson(T.ones(2, 3)))"
    ".log_prob(T.tensor([0.5, 1.0]))",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(2, 3)), D.Normal(T.zeros(2, 3), 1.0))"
    ".rsample()",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(2, 3)), D.Normal(T.zeros(2, 3), 1.0))"
    ".entropy()",
    "D.MixtureSameFamily(D.Categorical(logits=T.zeros(2, 3)),"
    " D.Independent(D.Normal(T.zeros(2, 3, 4), 1.0), 1)).cdf(T.zeros(2, 4))",
    "D.NegativeBinomial(T.tensor([1.0, 2.0]), probs=T.tensor([0.0, 1.0]))",
    "D.NegativeBinomial(T.tensor([-1.0, 2.0]), probs=T.tensor([0.5, 0.5]))",
    "D.NegativeBinomial(2.0, probs=0.5, logits=0.0)",
    "D.NegativeBinomial(2.0, probs=0.5).log_prob(T.tensor([1.5]))",
    "D.NegativeBinomial(2.0, probs=0.5).entropy()",
    "D.NegativeBinomial(2.0, probs=0.5).rsample()",
    "D.Weibull(-1.0, 1.0)",
    "D.Weibull(1.0, T.tensor([1.0, 0.0]))",
    "D.Weibull(1.0, 1.0).log_prob(T.tensor([-1.0]))",
    "D.Pareto(1.0, -1.0)",
    "D.Pareto(T.tensor([1.0, 2.0]), 1.0).log_prob(T.tensor([1.5, 1.5]))",
    "D.Pareto(2.0, 1.0).cdf(T.tensor([1.0]))",
    "D.AbsTransform().sign",
    "D.AbsTransform().log_abs_det_jacobian(T.ones(1), T.ones(1))",
    "D.kl_divergence(D.HalfNormal(1.0), D.Normal(0.0, 1.0))",
    "D.kl_divergence(D.Gumbel(0.0, 1.0), D.Laplace(0.0, 1.0))",
    "D.kl_divergence(D.Binomial(3, probs=0.5), D.Binomial(5, probs=0.5))",
    "D.kl_divergence(D.TransformedDistribution(D.Normal(0.0, 1.0), D.ExpTransform()),"
    " D.TransformedDistribution(D.Normal(0.0, 1.0), D.TanhTransform()))",
    "D.kl_divergence(D.TransformedDistribution(D.Normal(T.zeros(3), 1.0), D.ExpTransform()),"
    " D.TransformedDistribution(D.Independent(D.Normal(T.zeros(3), 1.0), 1), D.ExpTransform()))",
]


def outcome(T, expression):
    try:
        eval(expression, {"T": T, "D": T.distributions})  # noqa: S307
    except Exception as error:  # noqa: BLE001 - compared as type and message
        return type(error).__name__, str(error)
    return "no error", ""


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_match_torch(expression):
    mine, real = outcome(nbgrad, expression), outcome(torch, expression)
    assert mine[0] != "no error"
    assert mine == (real[0], real[1].replace("torch.distributions", "nbgrad.distributions"))


def test_validate_args_false_lets_p_zero_through_as_torch_does():
    for T in (nbgrad, torch):
        d = T.distributions.Geometric(probs=T.tensor([0.0, 0.5]), validate_args=False)
        assert math.isinf(float(d.mean[0]))


def test_abs_transform_attributes_match_torch():
    mine, real = nbgrad.distributions.AbsTransform(), torch.distributions.AbsTransform()
    for t in (mine, real):
        assert t == type(t)()
    assert repr(mine) == repr(real)
    assert (repr(mine.domain), repr(mine.codomain)) == (repr(real.domain), repr(real.codomain))
    assert mine.bijective == real.bijective is False


def test_module_paths_match_torch():
    for name in [
        "half_normal.HalfNormal",
        "half_cauchy.HalfCauchy",
        "gumbel.Gumbel",
        "binomial.Binomial",
        "geometric.Geometric",
        "multinomial.Multinomial",
        "lowrank_multivariate_normal.LowRankMultivariateNormal",
        "mixture_same_family.MixtureSameFamily",
        "negative_binomial.NegativeBinomial",
        "weibull.Weibull",
        "pareto.Pareto",
        "transforms.PowerTransform",
        "constraints.half_open_interval",
        "constraints.multinomial",
        "transforms.AbsTransform",
        "relaxed_bernoulli.RelaxedBernoulli",
        "relaxed_bernoulli.LogitRelaxedBernoulli",
        "relaxed_categorical.RelaxedOneHotCategorical",
        "relaxed_categorical.ExpRelaxedCategorical",
    ]:
        module, attr = name.split(".")
        assert hasattr(getattr(torch.distributions, module), attr)
        assert hasattr(getattr(nbgrad.distributions, module), attr), name


# --- statistics of samples (nbgrad draws its own numbers; the moments are the textbook ones) ---

N = 40_000
EULER_GAMMA = 0.5772156649015329


def within(sample_mean, mean, std, n=N, sigmas=5.0):
    """A sample mean within 5 standard errors of the true mean."""
    return abs(sample_mean - mean) < sigmas * std / math.sqrt(n)


def test_half_normal_and_half_cauchy_samples_are_folded():
    nbgrad.manual_seed(3)
    D = nbgrad.distributions
    for method in ("sample", "rsample"):
        x = getattr(D.HalfNormal(nbgrad.tensor([0.5, 2.0])), method)((N,)).numpy()
        assert (x >= 0).all()
        for j, s in enumerate([0.5, 2.0]):
            # E|X| = s sqrt(2/pi), Var|X| = s^2 (1 - 2/pi)
            assert within(
                x[:, j].mean(), s * math.sqrt(2 / math.pi), s * math.sqrt(1 - 2 / math.pi)
            )
        y = getattr(D.HalfCauchy(nbgrad.tensor(3.0)), method)((N,)).numpy()
        # the median of |X| is the scale: P(|X| <= s) = 2 atan(1) / pi = 1/2
        assert (y >= 0).all() and within((y <= 3.0).mean(), 0.5, 0.5)


def test_gumbel_samples_have_its_mean_and_std():
    nbgrad.manual_seed(4)
    loc, scale = nbgrad.tensor([1.0, -2.0]), nbgrad.tensor([0.5, 3.0])
    x = nbgrad.distributions.Gumbel(loc, scale).rsample((N,)).numpy().astype(float)
    for j, (m, s) in enumerate([(1.0, 0.5), (-2.0, 3.0)]):
        std = math.pi / math.sqrt(6) * s
        assert within(x[:, j].mean(), m + EULER_GAMMA * s, std)
        assert abs(x[:, j].std() / std - 1) < 0.05
        # the cdf exp(-exp(-z)) at the mode (z = 0) is 1/e
        assert within((x[:, j] <= m).mean(), math.exp(-1), 0.5)


def test_binomial_samples_count_successes_up_to_each_total():
    nbgrad.manual_seed(5)
    total, p = np.array([3.0, 10.0, 0.0]), np.array([0.3, 0.75, 0.5])
    d = nbgrad.distributions.Binomial(nbgrad.tensor(total), probs=nbgrad.tensor(p))
    x = d.sample((N,)).numpy()
    assert x.shape == (N, 3) and (x % 1 == 0).all() and (x >= 0).all() and (x <= total).all()
    for j in range(3):
        std = math.sqrt(total[j] * p[j] * (1 - p[j])) + 1e-12  # a zero count never varies
        assert within(x[:, j].mean(), total[j] * p[j], std)


def test_geometric_samples_count_failures_before_a_success():
    nbgrad.manual_seed(6)
    p = np.array([0.2, 0.9])
    x = nbgrad.distributions.Geometric(probs=nbgrad.tensor(p)).sample((N,)).numpy()
    assert (x % 1 == 0).all() and (x >= 0).all()
    for j in range(2):
        assert within(x[:, j].mean(), (1 - p[j]) / p[j], math.sqrt(1 - p[j]) / p[j])
        assert within((x[:, j] == 0).mean(), p[j], math.sqrt(p[j] * (1 - p[j])))


def test_multinomial_samples_add_up_to_the_total_count():
    nbgrad.manual_seed(7)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]])
    x = nbgrad.distributions.Multinomial(5, probs=nbgrad.tensor(probs)).sample((N,)).numpy()
    assert x.shape == (N, 2, 3) and (x.sum(-1) == 5).all()
    for row in range(2):
        for k in range(3):
            p = probs[row, k]
            assert within(x[:, row, k].mean(), 5 * p, math.sqrt(5 * p * (1 - p)) + 1e-12)


def test_relaxed_bernoulli_draws_exceed_one_half_with_probability_p():
    # sigmoid((logit p + L) / t) > 1/2 exactly when L > -logit p, which has probability p
    nbgrad.manual_seed(8)
    p = np.array([0.2, 0.9])
    d = nbgrad.distributions.RelaxedBernoulli(nbgrad.tensor(0.3), probs=nbgrad.tensor(p))
    x = d.rsample((N,)).numpy()
    assert ((x > 0) & (x < 1)).all()
    for j in range(2):
        assert within((x[:, j] > 0.5).mean(), p[j], math.sqrt(p[j] * (1 - p[j])))


def test_relaxed_one_hot_draws_lie_on_the_simplex_and_peak_as_the_categorical():
    # the largest coordinate is the Gumbel-max draw: outcome k with probability p_k
    nbgrad.manual_seed(9)
    probs = np.array([0.1, 0.3, 0.6])
    d = nbgrad.distributions.RelaxedOneHotCategorical(
        nbgrad.tensor(0.5), probs=nbgrad.tensor(probs)
    )
    x = d.rsample((N,)).numpy().astype(float)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    for k in range(3):
        assert within((x.argmax(-1) == k).mean(), probs[k], math.sqrt(probs[k] * (1 - probs[k])))


def test_low_rank_normal_samples_have_its_mean_and_covariance():
    nbgrad.manual_seed(10)
    loc = np.array([1.0, -1.0, 0.5])
    factor = np.array([[1.0, 0.5], [0.2, -0.3], [0.4, 0.8]])
    diag = np.array([0.7, 1.3, 0.2])
    d = nbgrad.distributions.LowRankMultivariateNormal(
        nbgrad.tensor(loc), nbgrad.tensor(factor), nbgrad.tensor(diag)
    )
    x = d.rsample((N,)).numpy().astype(float)
    covariance = factor @ factor.T + np.diag(diag)
    for j in range(3):
        assert within(x[:, j].mean(), loc[j], math.sqrt(covariance[j, j]))
    np.testing.assert_allclose(np.cov(x.T), covariance, atol=0.05)


def test_adding_into_a_strided_slice_of_width_one_in_place_matches_torch():
    """LowRankMultivariateNormal with a rank-1 factor adds 1 to the diagonal of 1 x 1 matrices
    through `flat[:, ::2] += 1`: the slice is written back onto itself (its size-1 dimension's
    stride differs from the flat view's, which does not make it a partial overlap)."""
    results = []
    for T in (nbgrad, torch):
        w = T.tensor([[[2.0]], [[3.0]]], requires_grad=True)
        square = w * 1
        square.view(-1, 1)[:, ::2] += 1
        square.sum().backward()
        results.append((square.detach().numpy(), structure(square.grad_fn), w.grad.numpy()))
    np.testing.assert_array_equal(results[0][0], [[[3.0]], [[4.0]]])
    assert results[0][1] == results[1][1]
    np.testing.assert_array_equal(results[0][2], results[1][2])


@pytest.mark.parametrize("shared_weights", [False, True])
def test_mixture_samples_follow_the_mixture(shared_weights):
    # two well-separated components per mixture: the share of draws near each is its weight
    nbgrad.manual_seed(11)
    weights = np.array([0.3, 0.7])
    mix_probs = weights if shared_weights else np.stack([weights, weights[::-1]])
    means = np.array([[-10.0, 10.0], [-10.0, 10.0]])
    D = nbgrad.distributions
    d = D.MixtureSameFamily(
        D.Categorical(probs=nbgrad.tensor(mix_probs)),
        D.Normal(nbgrad.tensor(means), nbgrad.tensor(0.5)),
    )
    x = d.sample((N,)).numpy()
    assert x.shape == (N, 2)
    expected = [weights[1], weights[1] if shared_weights else weights[0]]
    for j in range(2):
        assert within((x[:, j] > 0).mean(), expected[j], 0.5)
        assert abs(np.abs(x[:, j]).mean() - 10.0) < 0.05


def test_negative_binomial_samples_have_its_mean_and_variance():
    nbgrad.manual_seed(12)
    r, p = np.array([2.5, 6.0]), np.array([0.3, 0.6])
    d = nbgrad.distributions.NegativeBinomial(nbgrad.tensor(r), probs=nbgrad.tensor(p))
    x = d.sample((N,)).numpy()
    assert (x % 1 == 0).all() and (x >= 0).all()
    for j in range(2):
        mean, variance = r[j] * p[j] / (1 - p[j]), r[j] * p[j] / (1 - p[j]) ** 2
        assert within(x[:, j].mean(), mean, math.sqrt(variance))
        assert abs(x[:, j].var() / variance - 1) < 0.05


def test_power_transform_attributes_match_torch():
    for exponent in (2.0, [0.5, -1.0]):
        mine = nbgrad.distributions.PowerTransform(nbgrad.tensor(exponent))
        real = torch.distributions.PowerTransform(torch.tensor(exponent))
        assert repr(mine) == repr(real)
        assert (repr(mine.domain), repr(mine.codomain)) == (repr(real.domain), repr(real.codomain))
        assert mine.bijective == real.bijective
        np.testing.assert_array_equal(mine.sign.numpy(), real.sign.numpy())
        assert mine == nbgrad.distributions.PowerTransform(nbgrad.tensor(exponent))
        assert tuple(mine.forward_shape((3, 1))) == tuple(real.forward_shape((3, 1)))
        assert tuple(mine.inverse_shape((3, 1))) == tuple(real.inverse_shape((3, 1)))


def test_weibull_and_pareto_samples_have_their_medians():
    # Weibull: P(X <= s (log 2)^(1/k)) = 1/2; Pareto: P(X <= s 2^(1/alpha)) = 1/2
    nbgrad.manual_seed(13)
    D = nbgrad.distributions
    s, k = np.array([0.5, 2.0]), np.array([0.7, 3.0])
    x = D.Weibull(nbgrad.tensor(s), nbgrad.tensor(k)).rsample((N,)).numpy()
    y = D.Pareto(nbgrad.tensor(s), nbgrad.tensor(k)).rsample((N,)).numpy()
    assert (x > 0).all() and (y >= s).all()
    for j in range(2):
        assert within((x[:, j] <= s[j] * math.log(2) ** (1 / k[j])).mean(), 0.5, 0.5)
        assert within((y[:, j] <= s[j] * 2 ** (1 / k[j])).mean(), 0.5, 0.5)


# --- biject_to and transform_to --------------------------------------------------------------

CONSTRAINTS = [
    "C.real",
    "C.real_vector",
    "C.positive",
    "C.nonnegative",
    "C.greater_than(T.tensor(1.5))",
    "C.greater_than_eq(2.0)",
    "C.less_than(3.0)",
    "C.interval(-1.0, 2.0)",
    "C.interval(0.0, 1.0)",
    "C.interval(T.tensor([-1.0, 0.0, 1.0]), 4.0)",
    "C.unit_interval",
    "C.half_open_interval(0.0, 1.0)",
    "C.simplex",
    "C.lower_cholesky",
    "C.positive_definite",
    "C.independent(C.positive, 1)",
    "C.independent(C.interval(-1.0, 2.0), 2)",
    "C.boolean",
    "C.nonnegative_integer",
    "C.integer_interval(0, 3)",
    "C.one_hot",
    "C.multinomial(3)",
]


def transform_for(T, registry, constraint):
    names = {"T": T, "C": T.distributions.constraints}
    return getattr(T.distributions, registry)(eval(constraint, names))  # noqa: S307


def describe_transform(t):
    parts = getattr(t, "parts", [])
    return {
        "repr": repr(t),
        "domain": repr(t.domain),
        "codomain": repr(t.codomain),
        "bijective": t.bijective,
        "parts": [
            (type(p).__name__, repr(getattr(p, "loc", None)), repr(getattr(p, "scale", None)))
            for p in parts
        ],
        "reinterpreted": getattr(t, "reinterpreted_batch_ndims", None),
    }


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("constraint", CONSTRAINTS)
def test_transform_for_each_constraint_matches_torch(registry, constraint):
    found = {}
    for T in (nbgrad, torch):
        try:
            found[T] = describe_transform(transform_for(T, registry, constraint))
        except NotImplementedError as error:
            found[T] = ("NotImplementedError", str(error))
    assert found[nbgrad] == found[torch]


def unconstrained_input(T, constraint):
    """Reals of the shape the constraint's transform takes: a 2 x 3 batch of entries, vectors
    or 3 x 3 matrices."""
    if constraint in ("C.lower_cholesky", "C.positive_definite"):
        values = [[0.3, -1.2, 0.5], [2.0, 0.1, -0.4], [0.2, 0.6, -0.9]]
    else:
        values = [[0.3, -1.2, 0.5], [2.0, 0.1, -0.4]]
    return T.tensor(values, dtype=T.float64, requires_grad=True)


@pytest.mark.parametrize(
    ("registry", "constraint"),
    [
        (registry, constraint)
        for registry in ("biject_to", "transform_to")
        for constraint in CONSTRAINTS[:17]
        # PyTorch has no bijection onto these two (tested above): transform_to only
        if registry == "transform_to"
        or constraint not in ("C.lower_cholesky", "C.positive_definite")
    ],
)
def test_constrained_values_graphs_and_jacobians_match_torch(registry, constraint):
    """y = t(x) lands in the set, x comes back from y, and log|det J| (for a bijection) agree
    with PyTorch's in value, graph and gradient."""
    outputs = {}
    for T in (nbgrad, torch):
        t = transform_for(T, registry, constraint)
        x = unconstrained_input(T, constraint)
        y = t(x)
        computed = {"y": y, "x back": t.inv(y)}
        if t.bijective:
            computed["log|det J|"] = t.log_abs_det_jacobian(x, y)
        in_set = t.codomain.check(y)
        outputs[T] = (computed, bool(in_set.all()), x)
    mine, real = outputs[nbgrad], outputs[torch]
    assert mine[1] and real[1]
    assert mine[0].keys() == real[0].keys()
    for name in real[0]:
        a, b = mine[0][name], real[0][name]
        np.testing.assert_allclose(numpy_of(a), numpy_of(b), rtol=1e-10, atol=1e-12, err_msg=name)
        assert structure(a.grad_fn) == structure(b.grad_fn), name
    for computed, _, _ in (mine, real):
        sum(v.sum() for v in computed.values()).backward()
    np.testing.assert_allclose(mine[2].grad.numpy(), real[2].grad.numpy(), rtol=1e-10, atol=1e-12)


def test_stick_breaking_and_softmax_shapes_and_errors_match_torch():
    for T in (nbgrad, torch):
        D = T.distributions
        t = D.StickBreakingTransform()
        assert tuple(t.forward_shape((2, 3))) == (2, 4)
        assert tuple(t.inverse_shape((2, 4))) == (2, 3)
        with pytest.raises(ValueError, match="Too few dimensions on input"):
            t.forward_shape(())
        with pytest.raises(NotImplementedError):
            D.SoftmaxTransform().log_abs_det_jacobian(T.zeros(3), T.zeros(3))
        with pytest.raises(NotImplementedError):
            D.LowerCholeskyTransform().log_abs_det_jacobian(T.zeros(3, 3), T.zeros(3, 3))


def test_a_density_moved_through_stick_breaking_matches_torch():
    """A Dirichlet's log-density read on the unconstrained reals: the use biject_to exists for."""
    results = []
    for T in (nbgrad, torch):
        D = T.distributions
        concentration = T.tensor([0.5, 1.5, 2.0, 3.0], dtype=T.float64, requires_grad=True)
        t = D.biject_to(D.Dirichlet(concentration).support)
        x = T.tensor([[0.3, -1.2, 0.5], [2.0, 0.1, -0.4]], dtype=T.float64)
        y = t(x)
        log_density = D.Dirichlet(concentration).log_prob(y) + t.log_abs_det_jacobian(x, y)
        log_density.sum().backward()
        results.append((log_density.detach().numpy(), concentration.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_registering_a_transform_for_a_constraint():
    D = nbgrad.distributions

    @D.transform_to.register(D.constraints.boolean)
    def _to_booleans(constraint):
        return D.SigmoidTransform()

    try:
        assert isinstance(D.transform_to(D.constraints.boolean), D.SigmoidTransform)
    finally:
        del D.transform_to._factories["Boolean"]
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.transform_to(D.constraints.boolean)
