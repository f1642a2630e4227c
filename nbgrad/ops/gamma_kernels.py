"""The Gamma sampler and its reparameterization gradient, on NumPy arrays (float64 inside).

``torch._standard_gamma(alpha)`` draws x ~ Gamma(alpha, 1). Its gradient holds the draw's
quantile fixed (implicit reparameterization): with P(alpha, x) the regularized lower incomplete
gamma function, P(alpha, x) = u fixed gives

    dx/dalpha = -(dP/dalpha)(alpha, x) / p(alpha, x),    p = x^(alpha-1) e^-x / Gamma(alpha).

PyTorch evaluates this with its own approximations (a series, an asymptotic expansion, a fitted
rational function). nbgrad evaluates the same quantity from two exact representations, each
where it keeps float64 accuracy (see the tests, which compare with mpmath and with PyTorch):

- below and around the bulk (x <= alpha + 3 sqrt(alpha) + 3), the series of P differentiated
  term by term: dx/dalpha = -sum_n r_n (log x - psi(alpha + n + 1)), where
  r_n = x^(n+1) Gamma(alpha) / Gamma(alpha + n + 1): positive terms with no e^-x to underflow;
- in the upper tail, P = 1 - Q and Q's integral, shifted to start at x:
  dx/dalpha = integral_0^inf e^-s (1 + s/x)^(alpha-1) (log(x + s) - psi(alpha)) ds,
  by Gauss-Laguerre quadrature after scaling s so that the integrand decays like e^-s.
"""

import numpy as np

from nbgrad.ops.special_kernels import digamma

_LAGUERRE_NODES, _LAGUERRE_WEIGHTS = np.polynomial.laguerre.laggauss(80)


def standard_gamma(alpha, rng):
    """Draws of Gamma(alpha, 1), as alpha's dtype. PyTorch returns the dtype's smallest normal
    number for a draw that underflows to 0, and for alpha <= 0."""
    alpha64 = np.asarray(alpha, dtype=np.float64)
    draws = np.zeros(alpha64.shape)
    valid = alpha64 > 0
    draws[valid] = rng.standard_gamma(alpha64[valid])
    tiny = np.finfo(np.asarray(alpha).dtype).tiny
    return np.maximum(draws, tiny).astype(np.asarray(alpha).dtype)


def standard_gamma_grad(alpha, x):
    """dx/dalpha of a Gamma(alpha, 1) draw x (``torch._standard_gamma_grad``), as alpha's dtype."""
    dtype = np.result_type(np.asarray(alpha).dtype, np.asarray(x).dtype)
    a, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    inside = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    lower = inside & (x <= a + 3 * np.sqrt(a) + 3)
    upper = inside & ~lower
    out[lower] = _by_series(a[lower], x[lower])
    out[upper] = _by_quadrature(a[upper], x[upper])
    return out.astype(dtype)


def _by_series(a, x):
    if a.size == 0:
        return a.copy()
    log_x = np.log(x)
    log_r = log_x - np.log(a)  # log r_0 = log(x / a)
    psi = digamma(a) + 1 / a  # psi(a + 1)
    total = np.zeros_like(a)
    n = 0
    # The ratio r_n / r_(n-1) = x / (a + n) falls below 1 once n > x - a; past the peak the terms
    # shrink at least geometrically. Stop when every element's term is negligible.
    limit = int(np.max(x - a + 12 * np.sqrt(a + 1) + 60))
    while True:
        term = np.exp(log_r) * (log_x - psi)
        total += term
        n += 1
        past_peak = a + n > x
        if n > limit or (past_peak.all() and np.all(np.abs(term) <= 1e-17 * np.abs(total))):
            break
        log_r += log_x - np.log(a + n)
        psi += 1 / (a + n)
    return -total


def _by_quadrature(a, x):
    if a.size == 0:
        return a.copy()
    # Scale s = u / rate so that e^-s (1 + s/x)^(a-1) decays like e^-u: the factor
    # (1 + s/x)^(a-1) grows at most like e^((a-1) s / x).
    rate = np.where(a > 1, (x - a + 1) / x, 1.0)
    u = _LAGUERRE_NODES[:, None]
    s = u / rate
    shape_factor = (a - 1) * np.log1p(s / x) - s + u  # log of the rest beyond e^-u
    integrand = np.exp(shape_factor) * (np.log(x + s) - digamma(a))
    return (_LAGUERRE_WEIGHTS[:, None] * integrand).sum(0) / rate


# --- Dirichlet --------------------------------------------------------------------------------
# A Dirichlet draw is independent Gamma draws G_i divided by their sum. Coordinate i moves with
# alpha_i through G_i alone; the others held fixed, x_i is a Beta(alpha_i, total - alpha_i) draw
# whose second parameter stays put, differentiated at a fixed quantile: with I the regularized
# incomplete beta function, dx_i/dalpha_i = -(dI_x/da)(a, b) / beta_pdf(x) at fixed b. PyTorch's
# _dirichlet_grad(x, alpha, total) returns that divided by (1 - x): the common factor
# (dG_i/dalpha_i) / sum(G) of every coordinate's derivative, which its backward then spreads
# (x_j = G_j / sum(G) moves by (delta_ij - x_j) times it).


def sample_dirichlet(concentration, rng):
    """Draws along the last dim: Gamma(concentration_i, 1) draws over their sum, each at least
    the dtype's smallest normal number (as PyTorch); a row whose draws all underflow to 0 is
    spread evenly."""
    alpha = np.asarray(concentration, dtype=np.float64)
    gammas = np.zeros(alpha.shape)
    positive = alpha > 0
    gammas[positive] = rng.standard_gamma(alpha[positive])
    totals = gammas.sum(-1, keepdims=True)
    even = 1.0 / alpha.shape[-1]
    x = np.where(totals > 0, gammas / np.where(totals > 0, totals, 1.0), even)
    dtype = np.asarray(concentration).dtype
    return np.maximum(x, np.finfo(dtype).tiny).astype(dtype)


def dirichlet_grad(x, alpha, total):
    """``torch._dirichlet_grad``: (dx/dalpha at a fixed Beta(alpha, total - alpha) quantile, the
    second parameter fixed) / (1 - x)."""
    dtype = np.result_type(*(np.asarray(v).dtype for v in (x, alpha, total)))
    x, a, t = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (x, alpha, total)))
    b = t - a
    out = np.full(x.shape, np.nan)
    inside = (x > 0) & (x < 1) & (a > 0) & (b > 0)
    # The series converges fastest below the mean; above it, 1 - x is a Beta(b, a) draw.
    lower = inside & (x <= (a + 1) / (t + 2))
    upper = inside & ~lower
    xl, al, bl = x[lower], a[lower], b[lower]
    s, ds_dp, _ = _beta_series(xl, al, bl)
    log_ratio = np.log(xl) - 1 / al - digamma(al) + digamma(al + bl)
    out[lower] = -(xl / al) * (s * log_ratio + ds_dp)
    y, au, bu = 1 - x[upper], a[upper], b[upper]
    s, _, ds_dq = _beta_series(y, bu, au)
    log_ratio = np.log1p(-y) - digamma(au) + digamma(au + bu)
    out[upper] = ((1 - y) / bu) * (s * log_ratio + ds_dq)  # y (1 - y) / b, over 1 - x = y
    return out.astype(dtype)


def _beta_series(x, p, q):
    """S = sum_n (p + q)_n / (p + 1)_n x^n, with I_x(p, q) = x^p (1 - x)^q S / (p B(p, q)), and
    its derivatives in p and in q (term by term: the log-derivatives of the rising factorials)."""
    term = np.ones_like(x)
    by_p = np.zeros_like(x)  # d log(term) / dp
    by_q = np.zeros_like(x)  # d log(term) / dq
    s, ds_dp, ds_dq = np.ones_like(x), np.zeros_like(x), np.zeros_like(x)
    n = 0
    while x.size and n < 200_000:
        term = term * (p + q + n) / (p + 1 + n) * x
        by_p = by_p + 1 / (p + q + n) - 1 / (p + 1 + n)
        by_q = by_q + 1 / (p + q + n)
        n += 1
        s += term
        ds_dp += term * by_p
        ds_dq += term * by_q
        small = term * (1 + np.abs(by_p) + by_q) <= 1e-17 * (s + np.abs(ds_dp) + ds_dq)
        if np.all(small):
            break
    return s, ds_dp, ds_dq
