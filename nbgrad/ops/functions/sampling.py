"""Sampling: ``normal``, ``bernoulli``, ``poisson``, ``multinomial`` and the in-place samplers
(``x.uniform_()``, ``x.normal_()``, ``x.random_()``, ...), each with ``generator=``.

They draw from an ``nbgrad.Generator`` (the default one unless given; see ``nbgrad/random.py``):
the distributions are PyTorch's, the numbers are not. Their table entries have PyTorch's nodes,
whose gradients are zeros (``NormalBackward1``, ``UniformBackward0``, ...); the in-place ones run
through ``run_inplace``, so they refuse a leaf that requires grad and bump the version.
"""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.node import not_implemented_history
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops import gamma_kernels
from nbgrad.ops.derivatives import OPS as _OPS
from nbgrad.ops.derivatives import op
from nbgrad.ops.public import public
from nbgrad.random import rng_of

_ZERO = {"self": "zeros_like(grad)"}


def _drawn(values, like):
    return np.asarray(values).astype(like.dtype, copy=False)


def _normal_arrays(mean, std, rng):
    shape = np.broadcast_shapes(np.shape(mean), np.shape(std))
    return mean + std * rng.standard_normal(shape)


op(
    "normal_tensor_tensor",
    "NormalBackward3",
    ("mean", "std"),
    {
        "mean": "sum_to(zeros_like(grad), mean_sym_sizes)",
        "std": "sum_to(zeros_like(grad), std_sym_sizes)",
    },
    lambda mean, std, rng: _drawn(_normal_arrays(mean, std, rng), mean),
    attrs=("generator",),
    saves=("mean_sym_sizes", "std_sym_sizes"),
    promote=True,
)
op(
    "normal_tensor_float",
    "NormalBackward1",
    ("mean",),
    {"mean": "zeros_like(grad)"},
    lambda mean, std, rng: _drawn(_normal_arrays(mean, std, rng), mean),
    attrs=("std", "generator"),
    saves=("mean_sym_sizes",),
)
op(
    "normal_float_tensor",
    "NormalBackward2",
    ("std",),
    {"std": "zeros_like(grad)"},
    lambda std, mean, rng: _drawn(_normal_arrays(mean, std, rng), std),
    attrs=("mean", "generator"),
    saves=("std_sym_sizes",),
)
op(
    "bernoulli",
    "BernoulliBackward0",
    ("self",),
    _ZERO,
    lambda p, rng: _drawn(rng.random(p.shape) < p, p),
    attrs=("generator",),
)
op(
    "poisson",
    "PoissonBackward0",
    ("self",),
    _ZERO,
    lambda rates, rng: _drawn(rng.poisson(rates), rates),
    attrs=("generator",),
)

# In place: ``self`` is the tensor written into (only its shape and dtype are read).
op(
    "normal",
    "NormalBackward0",
    ("self",),
    _ZERO,
    lambda self, mean, std, rng: _drawn(rng.normal(mean, std, self.shape), self),
    attrs=("mean", "std", "generator"),
)
op(
    "uniform",
    "UniformBackward0",
    ("self",),
    _ZERO,
    lambda self, low, high, rng: _drawn(rng.uniform(low, high, self.shape), self),
    attrs=("from", "to", "generator"),
)
op(
    "bernoulli_float",
    "BernoulliBackward2",
    ("self",),
    _ZERO,
    lambda self, p, rng: _drawn(rng.random(self.shape) < p, self),
    attrs=("p", "generator"),
)
op(
    "bernoulli_tensor",
    "BernoulliBackward1",
    ("self", "p"),
    {"self": "zeros_like(grad)", "p": "sum_to(zeros_like(grad), p_sym_sizes)"},
    lambda self, p, rng: _drawn(rng.random(self.shape) < p, self),
    attrs=("generator",),
    saves=("p_sym_sizes",),
    hidden=("p_sym_sizes",),
)
op(
    "random",
    "RandomBackward0",
    ("self",),
    _ZERO,
    lambda self, low, high, rng: _drawn(rng.integers(low, high, self.shape), self),
    attrs=("from", "to", "generator"),
)
op(
    "random_to",
    "RandomBackward1",
    ("self",),
    _ZERO,
    lambda self, high, rng: _drawn(rng.integers(0, high, self.shape), self),
    attrs=("to", "generator"),
)
op(
    "random_full",
    "RandomBackward2",
    ("self",),
    _ZERO,
    lambda self, high, rng: _drawn(rng.integers(0, high, self.shape), self),
    attrs=("to", "generator"),
)
op(
    "exponential",
    "ExponentialBackward0",
    ("self",),
    _ZERO,
    lambda self, lambd, rng: _drawn(rng.exponential(1 / lambd, self.shape), self),
    attrs=("lambd", "generator"),
)
op(
    "geometric",
    "GeometricBackward0",
    ("self",),
    _ZERO,
    lambda self, p, rng: _drawn(rng.geometric(p, self.shape), self),
    attrs=("p", "generator"),
)
op(
    "cauchy",
    "CauchyBackward0",
    ("self",),
    _ZERO,
    lambda self, median, sigma, rng: _drawn(median + sigma * rng.standard_cauchy(self.shape), self),
    attrs=("median", "sigma", "generator"),
)
op("log_normal", "LogNormalBackward0", ("self",), _ZERO,
   lambda self, mean, std, rng: _drawn(rng.lognormal(mean, std, self.shape), self),
   attrs=("mean", "std", "generator"))  # fmt: skip


def _type(tensor):
    return dtypes.name_of(tensor._data.dtype)


def _floating_kernel(tensor, kernel):
    if not tensor._dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type(tensor)}'")


def _check_std(std):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")


def _number(value):
    """A number as PyTorch's C++ prints it in these messages (``-1``, ``1.5``)."""
    return f"{value:g}"


# --- functions --------------------------------------------------------------------------------


@public(function=True, out=True)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):  # fmt: skip
    """The four overloads: tensor/tensor, tensor/float, float/tensor, and float/float/size."""
    from nbgrad.ops import creation

    rng = rng_of(generator)
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_t and not std_t:
        if size is None:
            raise TypeError("normal() missing required argument 'size'")
        _check_std(std)
        values = creation.randn(size, generator=generator, dtype=dtype, device=device)
        values._data = (values._data * std + mean).astype(values._data.dtype, copy=False)
        return values.requires_grad_(True) if requires_grad else values
    for t in (mean, std):
        if isinstance(t, Tensor):
            _floating_kernel(t, "normal_kernel_cpu")
    if std_t:
        if std._data.size and std._data.min() < 0:
            raise RuntimeError("normal expects all elements of std >= 0.0")
        if mean_t:
            from nbgrad.ops.functions._common import _broadcast_error

            try:
                np.broadcast_shapes(mean._data.shape, std._data.shape)
            except ValueError:
                raise _broadcast_error(mean, std) from None
            return run_op(_OPS["normal_tensor_tensor"], (mean, std), (rng,))
        return run_op(_OPS["normal_float_tensor"], (std,), (float(mean), rng))
    _check_std(std)
    return run_op(_OPS["normal_tensor_float"], (mean,), (float(std), rng))


@public(function=True, method=True, out=True)
def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    rng = rng_of(generator)
    if p is not None:  # bernoulli.p: PyTorch has no derivative for it (grad_fn NotImplemented)
        result = Tensor._make(_drawn(rng.random(input._data.shape) < p, input._data))
        not_implemented_history(result, "bernoulli", (input,))
        return result
    _floating_kernel(input, "bernoulli_tensor_cpu_p_")
    data = input._data
    if data.size and not ((data >= 0) & (data <= 1)).all():
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
            "message be improved?  If so, please report an enhancement request to PyTorch.)"
        )
    return run_op(_OPS["bernoulli"], (input,), (rng,))


@public(function=True)
def _standard_gamma(input, generator=None):  # noqa: A002
    """Draws of Gamma(input, 1), differentiable (StandardGammaBackward0, see derivatives.py)."""
    _floating_kernel(input, "gamma_cpu")
    return run_op(_OPS["_standard_gamma"], (input,), (rng_of(generator),))


@public(function=True)
def _standard_gamma_grad(input, output):  # noqa: A002
    """d output / d input for draws ``output`` of Gamma(input, 1) (ops/gamma_kernels.py)."""
    return run_op(_OPS["_standard_gamma_grad"], (input,), (output,))


@public(function=True)
def _sample_dirichlet(input, generator=None):  # noqa: A002
    """Dirichlet draws along the last dim (ops/gamma_kernels.py); PyTorch has no derivative for
    it (Dirichlet.rsample differentiates through its own Function)."""
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"dirichlet\" not implemented for '{_type(input)}'")
    drawn = gamma_kernels.sample_dirichlet(input._data, rng_of(generator))
    return not_implemented_history(Tensor._make(drawn), "_sample_dirichlet", (input,))


@public(function=True)
def _dirichlet_grad(x, alpha, total):
    """Dirichlet.rsample's gradient factor (ops/gamma_kernels.py); no derivative of its own."""
    values = (x, alpha, total)
    if len({v._dtype for v in values}) > 1:
        raise RuntimeError(f"Found dtype {dtypes.name_of(total)} but expected {dtypes.name_of(x)}")
    grad = gamma_kernels.dirichlet_grad(*(v._data for v in values))
    return not_implemented_history(Tensor._make(grad), "_dirichlet_grad", values)


@public(function=True)
def poisson(input, generator=None):  # noqa: A002
    _floating_kernel(input, "poisson_cpu")
    if input._data.size and not (input._data >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return run_op(_OPS["poisson"], (input,), (rng_of(generator),))


@public(function=True, method=True, out=True)
def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    rng = rng_of(generator)
    data = input._data
    if data.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input._dtype.is_floating_point:
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {_type(input)}"
        )
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = data.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    rows = data.reshape(-1, categories).astype(np.float64)
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    sums = rows.sum(axis=1)
    if (sums <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    out = np.empty((rows.shape[0], num_samples), np.int64)
    for i, (row, total) in enumerate(zip(rows, sums)):
        if replacement:
            out[i] = rng.choice(categories, num_samples, p=row / total)
        else:
            # Without replacement: the categories in the order of exponential races
            # (Gumbel top-k), PyTorch's own method; zero-probability ones come last.
            with np.errstate(divide="ignore"):
                keys = rng.exponential(size=categories) / row
            out[i] = np.argsort(keys, kind="stable")[:num_samples]
    return Tensor._make(out.reshape(*data.shape[:-1], num_samples))


# --- in place -----------------------------------------------------------------------------------


def _inplace(name, target, attrs, others=()):
    return run_inplace(_OPS[name], target, others, attrs)


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **keywords):
    if keywords:  # ``from`` is a Python keyword: PyTorch's name, only passed as **{"from": a}
        if set(keywords) != {"from"}:
            raise TypeError(
                f"uniform_() got an unexpected keyword argument {next(iter(keywords))!r}"
            )
        from_ = keywords["from"]
    _floating_kernel(self, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={_number(from_)} "
            f"> to={_number(to)}"
        )
    return _inplace("uniform", self, (from_, to, rng_of(generator)))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _floating_kernel(self, "normal_kernel_cpu")
    _check_std(std)
    return _inplace("normal", self, (mean, std, rng_of(generator)))


def bernoulli_(self, p=0.5, *, generator=None):
    rng = rng_of(generator)
    if isinstance(p, Tensor):
        return _inplace("bernoulli_tensor", self, (rng,), (p,))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_number(p)}")
    return _inplace("bernoulli_float", self, (p, rng))


_FLOAT_DIGITS = {"float16": 11, "float32": 24, "float64": 53}


def _full_range(tensor):
    """Where ``random_()`` draws from: ``[0, 2**mantissa]`` for floats, ``[0, max]`` for ints."""
    name = tensor._data.dtype.name
    if name in _FLOAT_DIGITS:
        return 2 ** _FLOAT_DIGITS[name] + 1
    if name == "bool":
        return 2
    return int(np.iinfo(tensor._data.dtype).max) + 1


def random_(self, from_=None, to=None, *, generator=None):
    rng = rng_of(generator)
    if from_ is None and to is None:
        return _inplace("random_full", self, (_full_range(self), rng))
    if to is None:
        from_, to = 0, from_
        name, attrs = "random_to", (to,)
    else:
        name, attrs = "random", (from_, to)
    if from_ >= to:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}"
        )
    if not self._dtype.is_floating_point and to - 1 >= _full_range(self):
        raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES[self._data.dtype.name]}")
    return _inplace(name, self, (*attrs, rng))


_C_NAMES = {
    "uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
    "int64": "long", "bool": "bool",
}  # fmt: skip


def exponential_(self, lambd=1.0, *, generator=None):
    if not self._dtype.is_floating_point:
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {_type(self)}"
        )
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_number(lambd)}")
    return _inplace("exponential", self, (lambd, rng_of(generator)))


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_number(p)}")
    return _inplace("geometric", self, (p, rng_of(generator)))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    _floating_kernel(self, "cauchy_cpu")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_number(sigma)}")
    return _inplace("cauchy", self, (median, sigma, rng_of(generator)))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    _floating_kernel(self, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_number(std)}")
    return _inplace("log_normal", self, (mean, std, rng_of(generator)))


for _method in (uniform_, normal_, bernoulli_, random_, exponential_, geometric_, cauchy_,
                log_normal_):  # fmt: skip
    public(method=True)(_method)
