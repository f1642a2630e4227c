"""kl_divergence(p, q) = E_p[log p(x) - log q(x)], in closed form for pairs of families.

The formulas sit in ONE table, _KL_REGISTRY: {(class of p, class of q): function}. A pair of
distributions is looked up by their classes' ancestries: of all registered pairs (P, Q) with p an
instance of P and q of Q, the one nearest to the actual classes wins (the fewest steps up both
ancestries together, then the fewest up p's). The answer is remembered per pair of classes in
_KL_MEMOIZE, forgotten whenever a formula is registered."""

import math

import numpy as np

import nbgrad

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal, _squared_norms_of_solves
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import sum_rightmost

_EULER_GAMMA = 0.57721566490153286061

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY = {}
_KL_MEMOIZE = {}


def register_kl(type_p, type_q):
    """Decorator: the function it wraps computes KL(p || q) for p of type_p and q of type_q."""
    for cls in (type_p, type_q):
        if not issubclass(cls, Distribution):
            raise TypeError(f"Expected a subclass of Distribution, got {cls}")

    def register(function):
        _KL_REGISTRY[type_p, type_q] = function
        _KL_MEMOIZE.clear()
        return function

    return register


def _steps_up(cls, ancestor):
    return cls.__mro__.index(ancestor)


def _lookup(type_p, type_q):
    if (type_p, type_q) not in _KL_MEMOIZE:
        matches = [
            (_steps_up(type_p, P) + _steps_up(type_q, Q), _steps_up(type_p, P), function)
            for (P, Q), function in _KL_REGISTRY.items()
            if issubclass(type_p, P) and issubclass(type_q, Q)
        ]
        nearest = min(matches, key=lambda m: m[:2])[2] if matches else None
        _KL_MEMOIZE[type_p, type_q] = nearest
    return _KL_MEMOIZE[type_p, type_q]


def kl_divergence(p, q):
    function = _lookup(type(p), type(q))
    if function is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
            f"{q.__class__.__name__}"
        )
    return function(p, q)


def _infinite_where(t, mask):
    """t with +inf written where mask holds (q gives no mass where p does)."""
    t[mask.expand_as(t)] = math.inf
    return t


def _zero_where(t, mask):
    """t with 0 written where mask holds (p gives no mass: 0 log 0 counts as 0)."""
    t[mask.expand_as(t)] = 0
    return t


# --- the same family on both sides ------------------------------------------------------------


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    # log(sq/sp) + (sp^2 + (mp - mq)^2) / (2 sq^2) - 1/2, with r = (sp/sq)^2
    ratio = (p.scale / q.scale).pow(2)
    shift = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (ratio + shift - 1 - ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _infinite_where(t, q.probs == 0)
    t = _zero_where(t, p.probs == 0)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # log p = -softplus(-logit), log(1 - p) = -softplus(logit)
    ones = p.probs * (
        nbgrad.nn.functional.softplus(-q.logits) - nbgrad.nn.functional.softplus(-p.logits)
    )
    ones = _zero_where(_infinite_where(ones, q.probs == 0), p.probs == 0)
    zeros = (1 - p.probs) * (
        nbgrad.nn.functional.softplus(q.logits) - nbgrad.nn.functional.softplus(p.logits)
    )
    zeros = _zero_where(_infinite_where(zeros, q.probs == 1), p.probs == 1)
    return ones + zeros


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    result[(q.low > p.low) | (q.high < p.high)] = math.inf
    return result


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    # with r = sp/sq and d = |mp - mq|: -log r + d / sq + r exp(-d / sp) - 1
    ratio = p.scale / q.scale
    distance = (p.loc - q.loc).abs()
    return -ratio.log() + distance / q.scale + ratio * nbgrad.exp(-distance / p.scale) - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # log(((sp + sq)^2 + (mp - mq)^2) / (4 sp sq))
    spread = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return spread.log() - (4 * p.scale * q.scale).log()


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return -ratio.log() + ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a, b, c, d = p.concentration, p.rate, q.concentration, q.rate
    scale_term = c * nbgrad.log(b / d)
    normalizers = nbgrad.lgamma(c) - nbgrad.lgamma(a)
    shape_term = (a - c) * nbgrad.digamma(a)
    rate_term = (d - b) * (a / b)
    return scale_term + normalizers + shape_term + rate_term


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    total_a = a.sum(-1)
    normalizers = nbgrad.lgamma(total_a) - nbgrad.lgamma(b.sum(-1))
    normalizers = normalizers - (nbgrad.lgamma(a) - nbgrad.lgamma(b)).sum(-1)
    # E_p[log x_i] = digamma(a_i) - digamma(sum a)
    expected_logs = nbgrad.digamma(a) - nbgrad.digamma(total_a).unsqueeze(-1)
    return normalizers + ((a - b) * expected_logs).sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    # log B(q) - log B(p) + sum over the two concentrations of (a - b) digamma(a), and the
    # digamma of the total: each concentration read from the distribution where it is used
    total_p = p.concentration1 + p.concentration0
    total_q = q.concentration1 + q.concentration0
    log_beta_q = (
        nbgrad.lgamma(q.concentration1) + nbgrad.lgamma(q.concentration0) + nbgrad.lgamma(total_p)
    )
    log_beta_p = (
        nbgrad.lgamma(p.concentration1) + nbgrad.lgamma(p.concentration0) + nbgrad.lgamma(total_q)
    )
    heads = (p.concentration1 - q.concentration1) * nbgrad.digamma(p.concentration1)
    tails = (p.concentration0 - q.concentration0) * nbgrad.digamma(p.concentration0)
    totals = (total_q - total_p) * nbgrad.digamma(total_p)
    return log_beta_q - log_beta_p + heads + tails + totals


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    # exp is one-to-one: the divergence of the underlying normals
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    # (log det Sq - log det Sp) / 2 + (tr(Sq^-1 Sp) + |Lq^-1 (mq - mp)|^2 - n) / 2
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with                         "
            " different event shapes cannot be computed"
        )
    lower_p, lower_q = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    n = p.event_shape[0]
    both = np.broadcast_shapes(tuple(lower_p.shape[:-2]), tuple(lower_q.shape[:-2]))
    # tr(Sq^-1 Sp) = |Lq^-1 Lp|^2, the sum of the squares of all entries
    solved = nbgrad.linalg.solve_triangular(
        lower_q.expand(both + (n, n)), lower_p.expand(both + (n, n)), upper=False
    )
    trace = solved.reshape(solved.shape[:-2] + (-1,)).pow(2).sum(-1).reshape(both)
    distance = _squared_norms_of_solves(lower_q, q.loc - p.loc)
    return q._half_log_det() - p._half_log_det() + 0.5 * (trace + distance - n)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    # |x| is one-to-one on each half and both fold the same way: the normals' divergence
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    # the same one-to-one transforms on both sides leave the divergence of the bases unchanged
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return sum_rightmost(
        kl_divergence(p.base_dist, q.base_dist),
        len(p.event_shape) - len(p.base_dist.event_shape),
    )


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    # with r = sp/sq: log(1/r) + (mp - mq)/sq + gamma r + Gamma(1 + r) exp((mq - mp)/sq)
    # - 1 - gamma; the locations are read in units of q's scale
    ratio = p.scale / q.scale
    q_loc, p_loc = q.loc / q.scale, p.loc / q.scale
    shift_and_log = -ratio.log() - q_loc + p_loc
    gamma_term = ratio * _EULER_GAMMA
    moment = nbgrad.exp(q_loc + nbgrad.lgamma(1 + ratio) - p_loc)
    return shift_and_log + gamma_term + moment - (1 + _EULER_GAMMA)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    # -H(p) - E_p[k] log(1 - q) - log q, with E_p[k] = 1/p - 1: the log(1 - q) terms
    # combine into -log(1 - q)/p - logit(q)
    return -p.entropy() - nbgrad.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    # for one count n: n (p (logit p - logit q) + log(1 - p) - log(1 - q)). A larger count for
    # p gives mass where q has none; a larger one for q has no closed form here.
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    per_trial = p.probs * (p.logits - q.logits) + nbgrad.log1p(-p.probs)
    result = p.total_count * (per_trial - nbgrad.log1p(-q.probs))
    return _infinite_where(result, p.total_count > q.total_count)


# --- across families --------------------------------------------------------------------------


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    # -H(p) - E_p[log q]: E_p[(x - m)^2] = width^2 / 12 + (center - m)^2
    width = p.high - p.low
    spread = width.pow(2) / 12 + ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return (q.scale * math.sqrt(2 * math.pi) / width).log() + spread * 0.5 / q.scale.pow(2)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # -H(p) + log(2 sq) + E_p|x - mq| / sq, with E|x - mq| the folded normal's mean
    shift = p.loc - q.loc
    ratio = p.scale / q.scale
    folded_mean = p.scale * math.sqrt(2 / math.pi) * nbgrad.exp(
        (shift / p.scale).pow(2) * -0.5
    ) + shift * nbgrad.erf(shift / p.scale * (1 / math.sqrt(2)))
    return -ratio.log() + folded_mean / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Poisson, Bernoulli)
def _kl_poisson_bernoulli(p, q):
    # a Poisson puts mass on 2, 3, ... where a Bernoulli puts none
    shape = nbgrad.broadcast_tensors(p.rate, q.probs)[0].shape
    return nbgrad.full(shape, math.inf, dtype=p.rate.dtype)


# q gives no mass to part of what p reaches (a Beta's or a Uniform's bounded support, an
# Exponential's or a Gamma's half line, against a p spread over more): KL is infinite, one
# number per distribution of p's batch, without a graph


def _infinite_over(parameter):
    return nbgrad.full_like(parameter.detach(), math.inf)


def _register_infinite(type_p, types_q, parameter_name):
    for type_q in types_q:
        register_kl(type_p, type_q)(lambda p, q: _infinite_over(getattr(p, parameter_name)))


_register_infinite(Normal, (Beta, Exponential, Gamma, Uniform, Pareto), "loc")
_register_infinite(Laplace, (Beta, Exponential, Gamma, Uniform, Pareto), "loc")
_register_infinite(Gumbel, (Beta, Exponential, Gamma, Uniform, Pareto), "loc")
_register_infinite(Exponential, (Beta, Uniform, Pareto), "rate")
_register_infinite(Gamma, (Beta, Uniform, Pareto), "concentration")
_register_infinite(Beta, (Pareto,), "concentration1")
_register_infinite(Pareto, (Beta, Uniform), "scale")


# The finite cross-family pairs: -H(p) - E_p[log q], with E_p[log q] from p's moments.


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    # E[log x] = -gamma - log(rate), E[x] = 1 / rate; with r = (q's rate) / (p's rate)
    a, ratio = q.concentration, q.rate / p.rate
    return -a * nbgrad.log(ratio) + ratio + nbgrad.lgamma(a) + a * _EULER_GAMMA - (1 + _EULER_GAMMA)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    # E[(x - m)^2] = 2 / rate^2 - 2 m / rate + m^2
    variance, rate_squared = q.scale.pow(2), p.rate.pow(2)
    log_term = 0.5 * nbgrad.log(rate_squared * variance * 2 * math.pi)
    spread = rate_squared.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5
    return log_term - 1 + spread / variance


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    # with c = (q's scale)(p's rate): E[exp(-(x - m) / s)] = exp(m / s) c / (c + 1)
    c, shift = q.scale * p.rate, q.loc / q.scale
    moment = nbgrad.exp(shift) * c / (c + 1)
    return c.log() - 1 - shift + moment + c.reciprocal()


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    # E[(x - m)^2] = 2 b^2 + (mu - m)^2; with r = b^2 / sigma^2
    variance = q.scale.pow(2)
    ratio = p.scale.pow(2) / variance
    log_term = 0.5 * nbgrad.log(2 * ratio / math.pi)
    shift = 0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)
    return -log_term + ratio + shift / variance - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    # E[exp(-(x - m) / s)] = exp(-(mu - m) / s + sigma^2 / (2 s^2)), the normal's moment function
    ratio = p.scale / q.scale
    log_term = 0.5 * nbgrad.log(ratio.pow(2))
    mean_term = p.loc / q.scale - q.loc / q.scale
    moment = nbgrad.exp(-(p.loc / q.scale) + 0.5 * ratio.pow(2) + q.loc / q.scale)
    return -log_term + mean_term + moment - (0.5 * math.log(2 * math.pi) + 0.5)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    # the Gumbel's mean mu + gamma b and variance pi^2 b^2 / 6
    ratio = p.scale / q.scale
    log_term = (ratio / math.sqrt(2 * math.pi)).log()
    variance_term = (math.pi * ratio * 0.5).pow(2) / 3
    mean_term = ((p.loc + p.scale * _EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
    return -log_term + variance_term + mean_term - (1 + _EULER_GAMMA)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    # E[x] = a / b, E[x^2] = (a^2 + a) / b^2
    a, b = p.concentration, p.rate
    variance, rate_squared = q.scale.pow(2), b.pow(2)
    normalizers = 0.5 * nbgrad.log(rate_squared * variance * 2 * math.pi) - a - nbgrad.lgamma(a)
    shape_term = (a - 1) * nbgrad.digamma(a)
    spread = 0.5 * (a.pow(2) + a) / rate_squared - a * q.loc / b + 0.5 * q.loc.pow(2)
    return normalizers + shape_term + spread / variance


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    # -log(width) - log(rate) + rate E[x]; infinite where the uniform reaches below 0
    width = p.high - p.low
    kl = q.rate * (p.high + p.low) / 2 - (width * q.rate).log()
    return _infinite_where(kl, p.low < 0)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    # E[log x] over [l, h] = (h log h - l log l - (h - l)) / (h - l)
    a, b, width = q.concentration, q.rate, p.high - p.low
    width_times_mean_log = nbgrad.xlogy(p.high, p.high) - nbgrad.xlogy(p.low, p.low) - width
    normalizers = nbgrad.lgamma(a) - a * b.log()
    log_term = (1 - a) * width_times_mean_log / width
    kl = -width.log() + normalizers + log_term + b * (p.high + p.low) / 2
    return _infinite_where(kl, p.low < 0)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    # with the ends in q's units, u = (h - m) / s and v = (l - m) / s:
    # E[z] = (u + v) / 2 and E[exp(-z)] = s / (h - l) (exp(-v) - exp(-u))
    scale_over_width = q.scale / (p.high - p.low)
    upper, lower = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    mean_term = scale_over_width.log() + 0.5 * (upper + lower)
    moment = scale_over_width * (nbgrad.exp(-upper) - nbgrad.exp(-lower))
    return mean_term - moment


# Pareto(s, alpha): E[log x] = log s + 1/alpha, E[x] = alpha s / (alpha - 1) (infinite for
# alpha <= 1), Var x = alpha s^2 / ((alpha - 1)^2 (alpha - 2)) (infinite for alpha <= 2).


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    # log(a / a') + a' log(s / s') + a' / a - 1; infinite where p starts below q
    alpha_ratio = q.alpha / p.alpha
    minus_log_alpha_ratio = -alpha_ratio.log()
    kl = q.alpha * (p.scale / q.scale).log() + minus_log_alpha_ratio + alpha_ratio - 1
    return _infinite_where(kl, p.scale < q.scale)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_times_rate = p.scale * q.rate
    log_term = (p.alpha / scale_times_rate).log() - p.alpha.reciprocal()
    kl = log_term + p.alpha * scale_times_rate / (p.alpha - 1) - 1
    return _infinite_where(kl, p.alpha <= 1)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    a = q.concentration
    mean_log = p.scale.log() + p.alpha.reciprocal()
    kl = p.alpha.log() - mean_log + (nbgrad.lgamma(a) - a * q.rate.log()) + (1 - a) * mean_log
    kl = kl + q.rate * p.alpha * p.scale / (p.alpha - 1) - 1
    return _infinite_where(kl, p.alpha <= 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    twice_variance = 2 * q.scale.pow(2)
    mean_over_alpha = p.scale / (p.alpha - 1)
    log_term = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    spread = p.alpha * mean_over_alpha.pow(2) / (p.alpha - 2)
    shift = (p.alpha * mean_over_alpha - q.loc).pow(2)
    kl = log_term - p.alpha.reciprocal() + (spread + shift) / twice_variance - 1
    return _infinite_where(kl, p.alpha <= 2)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    mean_log = (nbgrad.xlogy(p.high, p.high) - nbgrad.xlogy(p.low, p.low) - width) / width
    kl = mean_log * (q.alpha + 1) - (q.alpha * q.scale.pow(q.alpha) * width).log()
    return _infinite_where(kl, p.low < q.scale)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    # E[z] = (a / b - m) / s, E[exp(-z)] = exp(m / s) (1 + 1 / (b s))^-a, the Gamma's Laplace
    # transform at 1/s
    a, rate_times_scale = p.concentration, p.rate * q.scale
    shift = q.loc / q.scale
    gamma_part = (a - 1) * nbgrad.digamma(a) - nbgrad.lgamma(a) - a
    mean_part = rate_times_scale.log() + a / rate_times_scale
    moment = nbgrad.exp(shift) * (rate_times_scale.reciprocal() + 1).pow(-a) - shift
    return gamma_part + mean_part + moment


# Beta(c1, c0): E[x] = c1 / (c1 + c0), Var x = E (1 - E) / (c1 + c0 + 1),
# E[log x] = digamma(c1) - digamma(c1 + c0)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    a, b = q.concentration, q.rate
    heads, total = p.concentration1, p.concentration1 + p.concentration0
    normalizers = nbgrad.lgamma(a) - a * b.log()
    log_term = (a - 1) * (nbgrad.digamma(heads) - nbgrad.digamma(total))
    return -p.entropy() + normalizers - log_term + b * heads / total


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    heads, tails = p.concentration1, p.concentration0
    mean = heads / (heads + tails)
    variance = q.scale.pow(2)
    log_term = 0.5 * nbgrad.log(variance * 2 * math.pi)
    half_second_moment = (mean * (1 - mean) / (heads + tails + 1) + mean.pow(2)) * 0.5
    spread = half_second_moment - q.loc * mean + q.loc.pow(2) * 0.5
    return -p.entropy() + log_term + spread / variance


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    kl = -p.entropy() + (q.high - q.low).log()
    return _infinite_where(kl, (q.low > 0) | (q.high < 1))


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    # over [l, h]: (h - l) E[log x] = h log h - l log l - (h - l), and with 1 - x for log(1 - x)
    low, high, width = p.low, p.high, p.high - p.low
    heads, tails = q.concentration1, q.concentration0
    minus_width_log_tails = (
        nbgrad.xlogy(1 - high, 1 - high) - nbgrad.xlogy(1 - low, 1 - low) + width
    )
    log_beta = nbgrad.lgamma(heads) + nbgrad.lgamma(tails) - nbgrad.lgamma(heads + tails)
    tails_term = (tails - 1) * minus_width_log_tails / width
    width_log_heads = nbgrad.xlogy(high, high) - nbgrad.xlogy(low, low) - width
    kl = tails_term + log_beta - width.log() - (heads - 1) * width_log_heads / width
    return _infinite_where(kl, (low < 0) | (high > 1))


@register_kl(Poisson, Binomial)
def _kl_poisson_binomial(p, q):
    # a Poisson gives mass to counts above any total_count
    return nbgrad.full_like(p.rate, math.inf)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log-normalizer (see exp_family.py), for two members of one
    family."""
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot"
            "                             be computed using Bregman divergences"
        )
    leaves, log_normalizer_p, means = p._log_normalizer_and_means()
    q_params = q._natural_params
    result = q._log_normalizer(*q_params) - log_normalizer_p
    for theta_p, theta_q, mean in zip(leaves, q_params, means):
        result = result - sum_rightmost((theta_q - theta_p) * mean, len(q.event_shape))
    return result
