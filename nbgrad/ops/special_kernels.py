"""Special functions in float64, on NumPy arrays: gamma and its logarithm's derivatives, the
Hurwitz zeta function, modified Bessel functions of order 0 and 1, the normal distribution's
tails and inverse, and the regularized incomplete gamma functions.

nbgrad depends on NumPy only (no SciPy), so these are written here from their textbook series,
recurrences and asymptotic expansions (Abramowitz and Stegun, DLMF), each chosen where it keeps
float64 accuracy. They return float64; the table casts to the input's dtype. Edge values (poles,
zeros, infinities, nan) follow PyTorch's CPU kernels, which the tests compare against.
"""

import math

import numpy as np

import nbgrad as nb  # half-loaded while this module loads: used only inside functions

SQRT_2 = math.sqrt(2.0)
SQRT_2PI = math.sqrt(2.0 * math.pi)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

# Bernoulli numbers B_2, B_4, ..., B_26 (exact fractions written as floats).
BERNOULLI_EVEN = (
    1 / 6,
    -1 / 30,
    1 / 42,
    -1 / 30,
    5 / 66,
    -691 / 2730,
    7 / 6,
    -3617 / 510,
    43867 / 798,
    -174611 / 330,
    854513 / 138,
    -236364091 / 2730,
    8553103 / 6,
)


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def _lgamma_one(x):
    try:
        return math.lgamma(x)
    except ValueError:  # a pole: 0 or a negative integer
        return math.inf


_lgamma_vectorized = np.frompyfunc(_lgamma_one, 1, 1)


def lgamma(x):
    """log |Gamma(x)|: the standard library's, per element; +inf at the poles."""
    x = _f64(x)
    return np.asarray(_lgamma_vectorized(x), dtype=np.float64) if x.size else x.copy()


def digamma(x):
    """psi(x) = d/dx log Gamma(x): the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then
    the asymptotic series in 1/x^2; reflection for negative x. As PyTorch: -inf at +0, +inf at
    -0, nan at negative integers and -inf."""
    x = _f64(x)
    out = np.full(x.shape, np.nan)
    positive = x > 0
    out[positive] = _digamma_positive(x[positive])
    negative = (x < 0) & (x != np.floor(x)) & np.isfinite(x)
    if negative.any():
        xn = x[negative]
        # tan of pi times the fractional part: exact argument reduction, as PyTorch does
        fraction = xn - np.trunc(xn)
        out[negative] = _digamma_positive(1 - xn) - math.pi / np.tan(math.pi * fraction)
    zero = x == 0
    out[zero] = np.copysign(np.inf, -x[zero])
    return out


def _digamma_positive(x):
    shift = np.zeros_like(x)
    x = x.copy()
    small = x < 10
    while small.any():
        shift[small] -= 1 / x[small]
        x[small] += 1
        small = x < 10
    inv2 = 1 / (x * x)
    series = np.zeros_like(x)
    for k in range(7, 0, -1):  # sum of B_2k / (2k x^2k), Horner in 1/x^2
        series = (series + BERNOULLI_EVEN[k - 1] / (2 * k)) * inv2
    with np.errstate(invalid="ignore"):
        return shift + np.log(x) - 0.5 / x - series


def trigamma(x):
    """psi'(x): reflection below 1/2 (with sin(pi x) as PyTorch computes it, so that a negative
    integer gives a huge finite value as there), the recurrence up to x >= 10, then the
    asymptotic series."""
    x = _f64(x)
    reflect = x < 0.5
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        result = _trigamma_positive(np.where(reflect, 1 - x, x))
        sin_pi_x = np.sin(math.pi * x)
        reflected = math.pi**2 / (sin_pi_x * sin_pi_x) - result
    return np.where(reflect, reflected, result)


def _trigamma_positive(z):
    z = z.copy()
    shift = np.zeros_like(z)
    small = z < 10
    while small.any():
        shift[small] += 1 / (z[small] * z[small])
        z[small] += 1
        small = z < 10
    inv2 = 1 / (z * z)
    series = np.zeros_like(z)
    for k in range(7, 0, -1):  # sum of B_2k / x^(2k+1), Horner in 1/x^2
        series = (series + BERNOULLI_EVEN[k - 1]) * inv2
    return shift + 1 / z + 0.5 * inv2 + series / z


def zeta(s, q):
    """The Hurwitz zeta function sum_k (q + k)^-s: the first terms summed until q + k >= 10
    (at least 9 of them), the rest by the Euler-Maclaurin formula. Domain as PyTorch's: inf at
    s == 1 and at non-positive integer q, nan for s < 1 and for negative q with non-integer s."""
    s, q = np.broadcast_arrays(_f64(s), _f64(q))
    out = np.full(s.shape, np.nan)
    pole = (s == 1) | ((q <= 0) & (q == np.floor(q)) & (s > 1))
    out[pole] = np.inf
    good = (s > 1) & ~pole & ~np.isnan(q) & ~((q < 0) & (s != np.floor(s)))
    good &= np.isfinite(q) & np.isfinite(s)
    if good.any():
        out[good] = _zeta_euler_maclaurin(s[good], q[good])
    return out


def _zeta_euler_maclaurin(s, q):
    total = np.zeros_like(q)
    w = q.copy()
    count = np.zeros(q.shape, dtype=np.int64)
    active = np.arange(q.size)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        while active.size:
            wa, sa = w[active], s[active]
            total[active] += np.power(wa, -sa)  # s is an integer where wa < 0
            w[active] = wa + 1
            count[active] += 1
            active = active[(w[active] < 10) | (count[active] < 9)]
        # integral of (w + t)^-s, half the first term, then the Bernoulli corrections
        tail = np.power(w, 1 - s) / (s - 1) + 0.5 * np.power(w, -s)
        factor = s * np.power(w, -s - 1)  # s (s+1) ... (s+2j-2) w^(-s-2j+1) / (2j)!
        fact = 1.0
        for j in range(1, len(BERNOULLI_EVEN) + 1):
            fact = fact * (2 * j) * (2 * j - 1) if j > 1 else 2.0
            term = BERNOULLI_EVEN[j - 1] * factor / fact
            tail = tail + term
            factor = factor * (s + 2 * j - 1) * (s + 2 * j) / (w * w)
        return total + tail


def polygamma(n, x):
    """The n-th derivative of digamma: digamma, trigamma, and (-1)^(n+1) n! zeta(n + 1, x)."""
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    x = _f64(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return (-1.0) ** (n + 1) * math.factorial(n) * zeta(np.float64(n + 1), x)


def mvlgamma(x, p):
    """The multivariate log-gamma: p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2)."""
    x = _f64(x)
    out = np.full(x.shape, p * (p - 1) / 4 * math.log(math.pi))
    for j in range(p):
        out = out + lgamma(x - j / 2)
    return out


def mvlgamma_digamma_sum(x, p):
    """d/dx mvlgamma(x, p): the sum of digamma(x - j / 2)."""
    x = _f64(x)
    return sum(digamma(x - j / 2) for j in range(p))


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is nan)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _f64(x) * np.log1p(_f64(y))
    return np.where((_f64(x) == 0) & ~np.isnan(y), 0.0, out)


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below."""
    x = _f64(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -x * np.log(np.where(x > 0, x, 1.0))
    out = np.where(x < 0, -np.inf, np.where(x == 0, 0.0, out))
    return np.where(np.isnan(x), np.nan, out)


# --- the normal distribution -------------------------------------------------------------------

_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def erfcx(x):
    """exp(x^2) erfc(x). For 0 <= x < 26, erfc times exp(x^2) with x^2 split into an exact
    high part and a small rest (so exp's argument carries no rounding error); beyond, the
    asymptotic series; for x < 0, 2 exp(x^2) - erfcx(-x)."""
    x = _f64(x)
    out = np.empty(x.shape)
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        middle = a < 26
        am = a[middle]
        out[middle] = _exp_square(am) * _erfc(am) if am.size else am
        far = ~middle & ~np.isnan(a)
        af = a[far]
        inv2 = 1 / (2 * af * af)
        series, term = np.ones_like(af), np.ones_like(af)
        for k in range(1, 12):  # 1 - 1/(2x^2) + 1*3/(2x^2)^2 - ...
            term = -term * (2 * k - 1) * inv2
            series = series + term
        out[far] = series / (af * math.sqrt(math.pi))
        out[np.isnan(a)] = np.nan
        negative = x < 0
        out[negative] = 2 * _exp_square(a[negative]) - out[negative]
    return out


def _exp_square(a):
    """exp(a^2) with a^2 = high^2 + (2 high + low) low, high having 26 bits: high^2 is exact."""
    high = np.ldexp(np.round(np.ldexp(a, 26 - _exponent(a))), _exponent(a) - 26)
    low = a - high
    with np.errstate(over="ignore", invalid="ignore"):
        split = np.exp(high * high) * np.exp((2 * high + low) * low)
        return np.where(np.isfinite(a), split, np.exp(a * a))


def _exponent(a):
    return np.frexp(np.where(np.isfinite(a) & (a != 0), a, 1.0))[1]


def ndtr(x):
    return 0.5 * _erfc(-_f64(x) / SQRT_2)


def log_ndtr(x):
    """log of the standard normal CDF: log1p(-upper tail) above 0; below, log(erfcx / 2) - x^2/2,
    which does not underflow in the far tail."""
    x = _f64(x)
    out = np.empty(x.shape)
    upper = x >= 0
    out[upper] = np.log1p(-0.5 * _erfc(x[upper] / SQRT_2)) if upper.any() else 0
    lower = ~upper
    xl = x[lower]
    with np.errstate(over="ignore", invalid="ignore"):
        out[lower] = np.log(0.5 * erfcx(-xl / SQRT_2)) - 0.5 * xl * xl
    out[x == -np.inf] = -np.inf
    return out


def ndtri(p):
    """The inverse of the standard normal CDF. In the middle (0.25 <= p <= 0.75, where 2p - 1 is
    exact) sqrt(2) erfinv(2p - 1); in the lower tail Newton's method on log ndtr (whose steps
    are well scaled however far out), the upper tail by symmetry (1 - p is exact there)."""
    from nbgrad.ops.formula_math import erfinv

    p = _f64(p)
    out = np.full(p.shape, np.nan)
    middle = (p >= 0.25) & (p <= 0.75)
    out[middle] = SQRT_2 * erfinv(2 * p[middle] - 1)
    lower = (p > 0) & (p < 0.25)
    out[lower] = _ndtri_lower(p[lower])
    upper = (p > 0.75) & (p < 1)
    out[upper] = -_ndtri_lower(1 - p[upper])
    out[p == 0] = -np.inf
    out[p == 1] = np.inf
    return out


def _ndtri_lower(q):
    if not q.size:
        return q
    from nbgrad.ops.formula_math import erfinv

    log_q = np.log(q)
    # start: erfinv where 2q - 1 still resolves q, else the tail's leading behaviour
    t = np.sqrt(-2 * log_q)
    x = np.where(q > 1e-15, SQRT_2 * erfinv(2 * q - 1), -(t - np.log(t * SQRT_2PI) / t))
    for _ in range(6):
        # d/dx log ndtr(x) = 1 / mills(x), mills = ndtr / pdf = sqrt(pi/2) erfcx(-x / sqrt 2)
        mills = math.sqrt(math.pi / 2) * erfcx(-x / SQRT_2)
        x = x - (log_ndtr(x) - log_q) * mills
    return x


# --- modified Bessel functions of order 0 and 1 -----------------------------------------------


def _bessel_scaled(x, order):
    """exp(-|x|) I_order(|x|) for |x| > 30, from the asymptotic expansion."""
    total, term = np.ones_like(x), np.ones_like(x)
    nu4 = 4.0 * order * order
    for k in range(1, 40):
        term = -term * (nu4 - (2 * k - 1) ** 2) / (8 * k * x)
        total = total + term
    return total / np.sqrt(2 * math.pi * x)


def _bessel_series(x, order):
    """I_order(x) for |x| <= 30: the power series, whose terms are all positive."""
    quarter = x * x / 4
    term = np.ones_like(x) if order == 0 else x / 2
    total = term.copy()
    for k in range(1, 110):
        term = term * quarter / (k * (k + order))
        total = total + term
    return total


def _bessel(x, order, scaled, dtype=np.float64):
    """I_order(x), or exp(-|x|) I_order(x) when ``scaled``. Unscaled, the value overflows where
    exp(|x|) overflows in ``dtype`` (PyTorch computes exp(|x|) times the scaled value)."""
    overflow_at = math.log(np.finfo(dtype).max)
    x = _f64(x)
    out = np.full(x.shape, np.nan)
    a = np.abs(x)
    near = a <= 30
    xn = x[near]
    series = _bessel_series(xn, order)
    out[near] = series * np.exp(-np.abs(xn)) if scaled else series
    far = (a > 30) & ~np.isnan(x)
    af = a[far]
    with np.errstate(over="ignore", invalid="ignore"):
        if scaled:
            values = np.where(np.isinf(af), 0.0, _bessel_scaled(af, order))
        else:
            # exp(|x|) times the scaled value: inf once exp(|x|) overflows, as in PyTorch
            values = np.exp(af) * _bessel_scaled(af, order)
            values = np.where(af > overflow_at, np.inf, values)
            values = np.where(np.isinf(af), np.nan, values)  # PyTorch's I0(inf) is nan
    sign = np.sign(x[far]) if order == 1 else 1.0
    out[far] = values * sign
    return out


def i0(x, dtype=np.float64):
    return _bessel(x, 0, False, dtype)


def i0e(x):
    return _bessel(x, 0, True)


def i1(x, dtype=np.float64):
    return _bessel(x, 1, False, dtype)


def i1e(x):
    return _bessel(x, 1, True)


# --- regularized incomplete gamma functions ----------------------------------------------------


def igamma(a, x):
    """P(a, x) = gamma(a, x) / Gamma(a), the regularized lower incomplete gamma function."""
    return _incomplete_gamma(a, x)[0]


def igammac(a, x):
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function."""
    return _incomplete_gamma(a, x)[1]


def _incomplete_gamma(a, x):
    """(P, Q): the series of P below x = a + 1, the continued fraction of Q above (Numerical
    Recipes' split), each giving the other as its complement. Edge values as PyTorch's."""
    a, x = np.broadcast_arrays(_f64(a), _f64(x))
    lower, upper = np.full(a.shape, np.nan), np.full(a.shape, np.nan)
    valid = (a >= 0) & (x >= 0)
    lower[valid & (a == 0) & (x > 0)], upper[valid & (a == 0) & (x > 0)] = 1.0, 0.0
    lower[valid & (a > 0) & (x == 0)], upper[valid & (a > 0) & (x == 0)] = 0.0, 1.0
    lower[valid & (a > 0) & np.isposinf(x)] = 1.0
    upper[valid & (a > 0) & np.isposinf(x)] = 0.0
    lower[np.isposinf(a) & (x > 0) & np.isfinite(x)] = 0.0
    upper[np.isposinf(a) & (x > 0) & np.isfinite(x)] = 1.0
    finite = valid & (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    series = finite & (x < a + 1)
    fraction = finite & ~series
    if series.any():
        p = _lower_series(a[series], x[series])
        lower[series], upper[series] = p, 1 - p
    if fraction.any():
        q = _upper_fraction(a[fraction], x[fraction])
        lower[fraction], upper[fraction] = 1 - q, q
    return lower, upper


def _prefactor(a, x, lgamma_of):
    return np.exp(a * np.log(x) - x - lgamma(lgamma_of))


def _lower_series(a, x):
    term = np.ones_like(a)
    total = term.copy()
    denominator = a.copy()
    active = np.arange(a.size)
    for _ in range(100000):
        if not active.size:
            break
        denominator[active] += 1
        term[active] = term[active] * x[active] / denominator[active]
        total[active] += term[active]
        active = active[term[active] > total[active] * 1e-17]
    return total * _prefactor(a, x, a + 1)


def _upper_fraction(a, x):
    """Modified Lentz evaluation of Q's continued fraction
    1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))."""
    tiny = 1e-300
    b = x + 1 - a
    c = np.full(a.shape, 1 / tiny)
    d = 1 / b
    h = d.copy()
    active = np.arange(a.size)
    for i in range(1, 100000):
        if not active.size:
            break
        an = -i * (i - a[active])
        b[active] += 2
        dd = an * d[active] + b[active]
        dd = np.where(np.abs(dd) < tiny, tiny, dd)
        cc = b[active] + an / c[active]
        cc = np.where(np.abs(cc) < tiny, tiny, cc)
        dd = 1 / dd
        delta = dd * cc
        d[active], c[active] = dd, cc
        h[active] *= delta
        active = active[np.abs(delta - 1) > 1e-16]
    return h * _prefactor(a, x, a)


# --- the helpers derivatives.py's formulas call ------------------------------------------------


def _like(kernel):
    """A kernel whose result keeps its first input's dtype (float32 stays float32)."""

    def function(x, *rest):
        x = np.asarray(x)
        return kernel(x, *rest).astype(x.dtype if x.dtype.kind == "f" else np.float64, copy=False)

    return function


def _i1_backward(grad, self, result):
    """d/dx I1(x) = I0(x) - I1(x) / x, which is 1/2 at 0."""
    safe = np.where(self == 0, 1, self)
    return grad * np.where(self == 0, 0.5, i0(self) - result / safe).astype(self.dtype)


def _i1e_backward(grad, self, result):
    """d/dx exp(-|x|) I1(x) = I0e(x) - I1e(x) (sign(x) + 1 / x), 1/2 at 0."""
    safe = np.where(self == 0, 1, self)
    value = np.where(self == 0, 0.5, i0e(self) - result * (np.sign(self) + 1 / safe))
    return grad * value.astype(self.dtype)


def _mvlgamma_backward(grad, self, p):
    return grad * mvlgamma_digamma_sum(self, p).astype(self.dtype)


def slice_key(ndim, dim, start, end, step):
    """The index of ``x.slice(dim, start, end, step)``, for arrays and Tensors alike."""
    return (slice(None),) * (dim % ndim) + (slice(start, end, step),)


def select_key(ndim, dim, index):
    return (slice(None),) * (dim % ndim) + (index,)


def laid_out_like(self, out):
    """``out`` in ``self``'s memory layout: PyTorch's scatters, index_fill and put start from
    ``self.clone()``, which keeps a transposed input's strides."""
    result = np.empty_like(self)
    result[...] = out
    return result


def scatter_into(self, src, key):
    out = self.copy(order="K")  # self's layout, as PyTorch's clone keeps it
    out[key] = src
    return out


def diagonal_scatter(self, src, offset, dim1, dim2):
    """``self`` with its diagonal (as ``self.diagonal(offset, dim1, dim2)`` lays it out: the
    diagonal last) replaced by ``src``."""
    out = self.copy(order="K")  # self's layout, as PyTorch's clone keeps it
    moved = np.moveaxis(out, (dim1, dim2), (-2, -1))  # a view of out
    n = np.diagonal(moved, offset, -2, -1).shape[-1]
    rows = np.arange(n) + max(-offset, 0)
    moved[..., rows, rows + offset] = src
    return out


def put(self, index, source, accumulate):
    """``self`` with ``source`` written (or added) at the flat positions ``index``."""
    out = self.copy()
    flat = out.reshape(-1)  # a view: out is contiguous
    if accumulate:
        np.add.at(flat, index.reshape(-1), source.reshape(-1))
    else:
        flat[index.reshape(-1)] = source.reshape(-1)
    return laid_out_like(self, out)


def _nansum_backward(grad, self, dim, keepdim):
    """nansum's gradient: the incoming gradient spread over the reduced dims, 0 at nan."""
    if not keepdim and dim is not None and self.ndim:
        grad = np.expand_dims(grad, tuple(d % self.ndim for d in dim))
    spread = np.broadcast_to(grad, self.shape)
    return np.where(np.isnan(self), 0, spread).astype(grad.dtype, copy=False)


def _power_of_two(other):
    """2 ** other in other's dtype, as PyTorch's ``pow(2, other)``: an integer power (0 for a
    negative exponent) when other is an integer tensor."""
    if other.dtype.kind in "iu":
        return np.where(other < 0, 0, np.exp2(np.maximum(other, 0))).astype(other.dtype)
    return np.exp2(other)


ARRAY_FUNCTIONS = {
    "lgamma": _like(lgamma),
    "digamma": _like(digamma),
    "polygamma": lambda n, x: _like(lambda v: polygamma(n, v))(x),
    "special_i1": _like(i1),
    "special_i1e": _like(i1e),
    "special_zeta": lambda s, q: zeta(s, q).astype(np.result_type(s, q), copy=False),
    "xlog1py": lambda x, y: xlog1py(x, y).astype(np.result_type(x, y), copy=False),
    "i1_backward": _i1_backward,
    "i1e_backward": _i1e_backward,
    "mvlgamma_backward": _mvlgamma_backward,
    "isnan": np.isnan,
    "exp2": np.exp2,
    "angle_backward": lambda grad, self: np.zeros_like(grad),  # real input: a flat function
    "power_of_two": lambda other: _power_of_two(np.asarray(other)),
    "nansum_backward": lambda grad, self, dim, keepdim: _nansum_backward(grad, self, dim, keepdim),
    "aminmax_dims": lambda dim: () if dim is None else (dim,),
    "slice_key": slice_key,
    "select_key": select_key,
    "slice_scatter": lambda grad, src, dim, start, end, step: scatter_into(
        grad, src, slice_key(grad.ndim, dim, start, end, step)
    ),
    "select_scatter": lambda grad, src, dim, index: scatter_into(
        grad, src, select_key(grad.ndim, dim, index)
    ),
    "diagonal_scatter": diagonal_scatter,
    "put_zero": lambda grad, index: put(
        grad, np.asarray(index), np.zeros(np.size(index), grad.dtype), False
    ),
    "take_flat": lambda grad, index: grad.reshape(-1)[np.asarray(index).reshape(-1)],
    "index_filled_sum": lambda grad, dim, index: np.take(
        grad, np.unique(np.asarray(index)), axis=dim
    ).sum(),
}


# --- Tensor versions (backward with create_graph=True) -----------------------------------------
# The same helpers over nbgrad Tensors, built from differentiable operations: NAME_tensor is the
# Tensor version of the formula function NAME. ``nb`` is complete by the time they run; run_op and
# the op table, which load after this module, they import inside their bodies.


def i1_backward_tensor(grad, self, result):
    zero = self == 0
    safe = nb.where(zero, 1.0, self)
    return grad * nb.where(zero, 0.5, nb.i0(self) - result / safe)


def i1e_backward_tensor(grad, self, result):
    zero = self == 0
    safe = nb.where(zero, 1.0, self)
    return grad * nb.where(zero, 0.5, nb.special.i0e(self) - result * (self.sign() + 1 / safe))


def nansum_backward_tensor(grad, self, dim, keepdim):
    if not keepdim and dim is not None and self.dim():
        for d in sorted(d % self.dim() for d in dim):
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(self.shape)).masked_fill(self.isnan(), 0.0)


def mvlgamma_backward_tensor(grad, self, p):
    return grad * sum(nb.digamma(self - j / 2) for j in range(p))


def put_zero_tensor(grad, index):
    return grad.put(nb.as_tensor(np.asarray(index)), nb.zeros(np.size(index), dtype=grad.dtype))


def index_filled_sum_tensor(grad, dim, index):
    return grad.index_select(dim, nb.tensor(np.unique(np.asarray(index)))).sum()


def power_of_two_tensor(other):
    if not other.is_floating_point():
        return nb.as_tensor(_power_of_two(other.numpy()))
    return nb.exp2(other)


def tensor_namespace():
    """The same helpers over nbgrad Tensors, so that a backward through them is differentiable."""
    return {
        "lgamma": nb.lgamma,
        "digamma": nb.digamma,
        "polygamma": nb.polygamma,
        "special_i1": nb.special.i1,
        "special_i1e": nb.special.i1e,
        "special_zeta": nb.special.zeta,
        "xlog1py": nb.special.xlog1py,
        "i1_backward": i1_backward_tensor,
        "i1e_backward": i1e_backward_tensor,
        "mvlgamma_backward": mvlgamma_backward_tensor,
        "isnan": nb.isnan,
        # (frexp's saved exponent reaches the formula as an array)
        "exp2": lambda v: nb.exp2(v if isinstance(v, nb.Tensor) else nb.as_tensor(v)),
        "angle_backward": lambda grad, self: nb.zeros_like(grad),
        "nansum_backward": nansum_backward_tensor,
        "aminmax_dims": lambda dim: () if dim is None else (dim,),
        "slice_key": slice_key,
        "select_key": select_key,
        "slice_scatter": nb.slice_scatter,
        "select_scatter": nb.select_scatter,
        "diagonal_scatter": nb.diagonal_scatter,
        "put_zero": put_zero_tensor,
        "take_flat": lambda grad, index: grad.take(nb.as_tensor(np.asarray(index))).reshape(-1),
        "index_filled_sum": index_filled_sum_tensor,
        "power_of_two": power_of_two_tensor,
    }
