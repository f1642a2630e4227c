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
