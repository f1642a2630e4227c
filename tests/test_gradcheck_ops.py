"""Finite-difference checks, in float64, of every operation in the op table.

Each case is a small function of float64 leaves, reaching table entries through the public API.
It is checked three ways:

- ``fd_check``, written here: one vector-Jacobian product, for a random cotangent, against central
  differences of ``<cotangent, f(x)>``. It shares nothing with ``nbgrad.autograd.gradcheck``, so
  a bug in the checker cannot hide a bug in an op;
- ``nbgrad.autograd.gradcheck`` (the whole Jacobian);
- for second derivatives, both again on the function ``(x, v) -> vjp(f, x, v)`` built with
  ``create_graph=True``, which also checks the derivative with respect to the incoming gradient
  ``v`` (what the ``*_backward`` entries of the table are for), plus ``gradgradcheck``.

Inputs stay away from kinks (relu, abs, clamp bounds, ties of max) and outside forbidden domains
(log and sqrt of positives); the behaviour *at* kinks and ties is pinned by exact-value tests.
"""

import dataclasses
import warnings

import numpy as np
import pytest

import nbgrad as torch
from nbgrad.autograd import gradcheck, gradgradcheck, observe
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops.derivatives import OPS

# --- inputs --------------------------------------------------------------------------------------

RNG = np.random.default_rng(20240611)


def normal(*shape):
    return RNG.standard_normal(shape)


def positive(*shape):
    """Inside the domain of log, sqrt, rsqrt and of a tensor base of pow."""
    return RNG.uniform(0.5, 2.0, shape)


def away(*shape):
    """At least 0.2 away from zero, where relu, abs and sign have a kink and 1/x a pole."""
    return RNG.choice([-1.0, 1.0], shape) * RNG.uniform(0.2, 1.5, shape)


def distinct(*shape):
    """Values at least 0.2 apart, so that max and min have no ties, even within eps."""
    n = int(np.prod(shape))
    values = RNG.permutation(n) * 0.25 - 0.1 * n + RNG.uniform(0, 0.05, n)
    return values.reshape(shape)


def mask(*shape):
    return RNG.random(shape) < 0.5


# --- an independent finite-difference check ------------------------------------------------------


def _tensors(value):
    """A function's floating-point tensor outputs, as a tuple."""
    values = value if isinstance(value, (tuple, list)) else (value,)
    return tuple(v for v in values if isinstance(v, torch.Tensor) and v.is_floating_point())


def _leaves(arrays):
    return [torch.tensor(np.array(a, dtype=np.float64), requires_grad=True) for a in arrays]


def _vjp(outputs, leaves, cotangents):
    """autograd's ``sum_k <cotangent_k, d output_k / d leaf>`` for every leaf, as arrays."""
    # One scalar root, sum_k <cotangent_k, output_k>: the same as seeding every output.
    terms = [(o * torch.tensor(c)).sum() for o, c in zip(outputs, cotangents) if o.requires_grad]
    grads = [None] * len(leaves)
    if terms:
        grads = torch.autograd.grad(sum(terms), leaves, allow_unused=True)
    results = []
    for g, leaf in zip(grads, leaves):
        if g is None:  # not reached from the outputs: a zero derivative
            results.append(np.zeros(leaf.shape))
            continue
        assert g.shape == leaf.shape and g.dtype == torch.float64
        results.append(g.numpy())
    return results


def fd_check(fn, arrays, *, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """Assert that autograd's vector-Jacobian product of ``fn`` agrees with central differences."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    leaves = _leaves(arrays)
    outputs = _tensors(fn(*leaves))
    rng = np.random.default_rng(seed)
    cotangents = [rng.standard_normal(o.shape) for o in outputs]
    analytic = _vjp(outputs, leaves, cotangents)

    def projected(shifted):
        outs = _tensors(fn(*_leaves(shifted)))
        return sum(float(np.sum(o.detach().numpy() * c)) for o, c in zip(outs, cotangents))

    for i, array in enumerate(arrays):
        numeric = np.zeros_like(array)
        for j in np.ndindex(array.shape):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[i][j] += eps
            minus[i][j] -= eps
            numeric[j] = (projected(plus) - projected(minus)) / (2 * eps)
        np.testing.assert_allclose(analytic[i], numeric, rtol=rtol, atol=atol, err_msg=f"input {i}")


def first_derivative(fn, arrays, seed=1):
    """``(x..., v...) -> vjp of fn at x for cotangents v``, built with create_graph=True.

    Returns the function and its inputs (``arrays`` followed by random cotangents); checking this
    function's own derivatives checks fn's second derivatives, and its derivatives in ``v``.
    """
    n = len(arrays)
    outputs = [o for o in _tensors(fn(*_leaves(arrays))) if o.requires_grad]
    rng = np.random.default_rng(seed)
    cotangents = [rng.standard_normal(o.shape) for o in outputs]

    def vjp(*args):
        xs, vs = args[:n], args[n:]
        outs = [o for o in _tensors(fn(*xs)) if o.requires_grad]
        grads = torch.autograd.grad(outs, xs, vs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return vjp, list(arrays) + cotangents


# --- the cases -----------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    id: str
    fn: object
    arrays: list
    second: bool = True  # whether to check second derivatives too
    tol: dict = dataclasses.field(default_factory=dict)  # fd_check eps/rtol/atol overrides


CASES = []


def case(id, fn, *arrays, second=True, **tol):
    CASES.append(Case(id, fn, list(arrays), second, tol))


def clone_of(fn):
    """In-place ops are run on a clone of the leaf (a leaf itself may not be written in place)."""
    return lambda x, *rest: fn(x.clone(), *rest)


# Arithmetic, with broadcasting in both directions and Python numbers.
for shape in [(2, 3), (3,), (1, 3), (2, 1), ()]:
    label = "x".join(map(str, shape)) or "0d"
    case(f"add-{label}", lambda x, y: x + y, normal(2, 3), normal(*shape))
    case(f"add-reversed-{label}", lambda x, y: y + x, normal(2, 3), normal(*shape))
    case(f"sub-{label}", lambda x, y: x - y, normal(2, 3), normal(*shape))
    case(f"sub-reversed-{label}", lambda x, y: y - x, normal(2, 3), normal(*shape))
    case(f"mul-{label}", lambda x, y: x * y, normal(2, 3), normal(*shape))
    case(f"mul-reversed-{label}", lambda x, y: y * x, normal(2, 3), normal(*shape))
    case(f"div-{label}", lambda x, y: x / y, normal(2, 3), away(*shape))
    case(f"div-reversed-{label}", lambda x, y: y / x, away(2, 3), normal(*shape))
    case(f"maximum-{label}", torch.maximum, distinct(2, 3), distinct(*shape) + 0.1)
    case(f"minimum-{label}", lambda x, y: torch.minimum(y, x), distinct(2, 3), distinct(*shape))
case("add-outer", lambda x, y: x + y, normal(2, 1), normal(1, 3))
case("add-number", lambda x: x + 2.5, normal(2, 3))
case("radd-number", lambda x: 2.5 + x, normal(2, 3))
case("add-alpha", lambda x, y: torch.add(x, y, alpha=2.5), normal(2, 3), normal(3))
case("add-alpha-method", lambda x, y: y.add(x, alpha=-3), normal(2, 3), normal(2, 1))
case("sub-number", lambda x: x - 2.5, normal(2, 3))
case("sub-alpha", lambda x, y: torch.sub(x, y, alpha=2.5), normal(2, 3), normal(3))
case("rsub-number", lambda x: 2 - x, normal(2, 3))
case("rsub-alpha", lambda x: torch.rsub(x, 2.0, alpha=3), normal(2, 3))
case("rsub-tensor", lambda x, y: torch.rsub(x, y, alpha=2), normal(2, 3), normal(3))
case("mul-number", lambda x: x * 1.5, normal(2, 3))
case("rmul-number", lambda x: -1.5 * x, normal(2, 3))
case("div-number", lambda x: x / 4.0, normal(2, 3))
case("rdiv-number", lambda x: 2.0 / x, away(2, 3))
case("neg", lambda x: -x, normal(2, 3))
case("neg-function", torch.neg, normal(3))
case("mul-self", lambda x: x * x, normal(2, 3))

for exponent in [3, 2, 1, 0, -2, 0.5, -1.5, 2.5]:
    case(f"pow-{exponent}", lambda x, e=exponent: x**e, positive(2, 3))
case("pow-3-negative-base", lambda x: x**3, normal(2, 3))
# integer powers computed as products (formula_math.power), both signs of base and exponent
for exponent in [4, 5, 7, 8, -3, -5, 9]:
    case(
        f"pow-{exponent}-negative-base",
        lambda x, e=exponent: x**e,
        np.array([[-1.3, -0.7, 0.6], [0.9, 1.2, -1.1]]),
    )
case("square", torch.square, normal(2, 3))
case("pow-tensor", lambda x, y: x**y, positive(2, 3), normal(2, 3))
case("pow-tensor-broadcast", lambda x, y: torch.pow(x, y), positive(2, 3), normal(3))
case("pow-tensor-broadcast-base", lambda x, y: x**y, positive(3), normal(2, 3))
case("rpow-2", lambda x: 2**x, normal(2, 3))
case("rpow-half", lambda x: 0.5**x, normal(2, 3))
case("rpow-function", lambda x: torch.pow(3, x), normal(3))
# Its second derivative is nan, in PyTorch too: where's untaken branch, times log(0) = -inf.
case("rpow-zero-base", lambda x: torch.pow(0.0, x), positive(3), second=False)

# Element-wise functions.
case("exp", torch.exp, normal(2, 3))
case("log", torch.log, positive(2, 3))
case("sin", torch.sin, normal(2, 3))
case("cos", lambda x: x.cos(), normal(2, 3))
case("tan", torch.tan, RNG.uniform(-1.2, 1.2, (2, 3)))
case("tanh", torch.tanh, normal(2, 3))
case("sigmoid", torch.sigmoid, normal(2, 3))
case("relu", torch.relu, away(2, 3))
case("sqrt", torch.sqrt, positive(2, 3))
case("rsqrt", torch.rsqrt, positive(2, 3))
case("reciprocal", torch.reciprocal, away(2, 3))
case("abs", torch.abs, away(2, 3))
case("abs-operator", lambda x: abs(x), away(3))
case("sign", lambda x: torch.sign(x) * x, away(2, 3))
case("log1p", torch.log1p, positive(2, 3) - 0.4)
case("expm1", torch.expm1, normal(2, 3))
case("erf", torch.erf, normal(2, 3))
# Clamp bounds at +-0.5; inputs at least 0.1 from either bound.
BOUNDED = np.array([[-1.2, -0.3, 0.1], [0.4, 0.7, 1.5]])
case("clamp-both", lambda x: torch.clamp(x, -0.5, 0.5), BOUNDED)
case("clamp-min", lambda x: x.clamp(min=-0.5), BOUNDED)
case("clamp-max", lambda x: x.clamp(max=0.5), BOUNDED)
case("clamp_min", lambda x: x.clamp_min(0.0), BOUNDED)
case("clamp_max", lambda x: x.clamp_max(0.0), BOUNDED)
case("clamp_min-tensor", lambda x, lo: x.clamp_min(lo), BOUNDED, np.full(3, -0.5))
case("clamp_max-tensor", lambda x, hi: torch.clamp_max(x, hi), BOUNDED, np.full((2, 1), 0.5))
case("fill-tensor", lambda x, v: (x * 1).fill_(v) * x, normal(2, 3), normal())
case("clip", lambda x: torch.clip(x, min=-0.5, max=0.5), BOUNDED)
case(
    "clamp-tensor-bounds",  # tensor bounds get gradients too (ClampBackward0)
    lambda x, lo, hi: x.clamp(min=lo, max=hi),
    BOUNDED,
    np.full(3, -0.5),
    np.full((2, 1), 0.5),
)
case("clamp-tensor-min", lambda x, lo: torch.clamp(x, min=lo), BOUNDED, np.full((2, 3), -0.5))
case("div-floor", lambda x, y: torch.div(x, y, rounding_mode="floor"), normal(2, 3), away(2, 3))
case("div-trunc", lambda x, y: torch.div(x, y, rounding_mode="trunc"), normal(2, 3), away(3))
# remainder and fmod: inputs keep self / other away from integers, where they jump.
case("remainder", lambda x: x % 0.7, np.array([0.3, 1.1, -0.5, -1.2]))
case("remainder-tensor", torch.remainder, np.array([0.3, 1.9, -0.5]), np.array([0.7, -0.8, 0.4]))
case("fmod", lambda x: torch.fmod(x, 0.7), np.array([0.3, 1.1, -0.5, -1.2]))
case("fmod-tensor", torch.fmod, np.array([0.3, 1.9, -0.5]), np.array([0.7, -0.8, 0.4]))
# A 0-d tensor accepts dim 0 and -1, as in PyTorch.
for label, fn in {
    "sum": lambda s: s.sum(0),
    "mean": lambda s: s.mean(-1),
    "max": lambda s: s.max(0).values,
    "amin": lambda s: s.amin(0),
    "squeeze": lambda s: s.squeeze(0) * s,
    "transpose": lambda s: s.transpose(0, -1) * s,
    "softmax": lambda s: s.log_softmax(0) + s.softmax(-1) * s,
}.items():
    case(f"{label}-0d-dim", fn, normal())
COND = np.array([[True, False, True], [False, False, True]])
case("where", lambda x, y: torch.where(torch.tensor(COND), x, y), normal(2, 3), normal(2, 3))
case("where-broadcast", lambda x, y: torch.where(torch.tensor(COND), x, y), normal(3), normal(2, 1))
case(
    "where-cond-broadcast",
    lambda x, y: torch.where(torch.tensor(COND[0]), x, y),
    normal(2, 3),
    normal(2, 3),
)
case("where-number-other", lambda x: torch.where(torch.tensor(COND), x, 0.0), normal(2, 3))
case("where-number-self", lambda y: torch.where(torch.tensor(COND), 2.0, y), normal(2, 3))
case("masked_fill", lambda x: x.masked_fill(torch.tensor(COND), 3.0), normal(2, 3))
case(
    "masked_fill-tensor-value",  # the fill value gets the gradient of every place it filled
    lambda x, v: x.masked_fill(torch.tensor(COND), v),
    normal(2, 3),
    normal(),
)
case(
    "masked_fill-broadcast",
    lambda x: torch.masked_fill(x, torch.tensor(COND[1]), -1.0),
    normal(2, 3),
)
for dim in [0, 1, 2, -1]:
    case(f"softmax-{dim}", lambda x, d=dim: torch.softmax(x, d), normal(2, 3, 2))
    case(f"log_softmax-{dim}", lambda x, d=dim: x.log_softmax(d), normal(2, 3, 2))
case("softmax-1d", lambda x: x.softmax(0), normal(4))

# The same functions on 0-d tensors, times their input: the gradient reaching them then comes out
# of 0-d NumPy arithmetic as a NumPy scalar rather than an array.
for label, fn, domain in [
    ("exp", torch.exp, normal),
    ("log", torch.log, positive),
    ("sin", torch.sin, normal),
    ("sigmoid", torch.sigmoid, normal),
    ("relu", torch.relu, positive),
    ("abs", torch.abs, away),
    ("sqrt", torch.sqrt, positive),
    ("clamp", lambda x: x.clamp(-0.5, 2.5), positive),
    ("where", lambda x: torch.where(torch.tensor(True), x, 0.0), normal),
    ("masked_fill", lambda x: x.masked_fill(torch.tensor(False), 1.0), normal),
    ("maximum", lambda x: torch.maximum(x, torch.tensor(0.1)), positive),
    ("minimum", lambda x: torch.minimum(torch.tensor(0.1), x), positive),
    ("setitem", lambda x: setitem(Ellipsis)(x * 2, x.exp()), normal),
]:
    case(f"{label}-0d-product", lambda x, f=fn: f(x) * x, domain())

# Matrix products: mm, mv, dot, bmm, addmm directly and through matmul's decompositions.
case("mm", torch.mm, normal(2, 3), normal(3, 4))
case("matmul-2d-2d", lambda a, b: a @ b, normal(2, 3), normal(3, 4))
case("mv", torch.mv, normal(2, 3), normal(3))
case("matmul-2d-1d", lambda a, b: a @ b, normal(2, 3), normal(3))
case("dot", torch.dot, normal(3), normal(3))
case("matmul-1d-1d", lambda a, b: a @ b, normal(3), normal(3))
case("matmul-1d-2d", lambda a, b: a @ b, normal(3), normal(3, 2))  # squeeze_dims(mm(v[None], m))
case("bmm", torch.bmm, normal(2, 2, 3), normal(2, 3, 2))
case("matmul-3d-3d", lambda a, b: a @ b, normal(2, 2, 3), normal(2, 3, 2))
case("matmul-3d-2d", lambda a, b: a @ b, normal(2, 2, 3), normal(3, 2))  # unsafe_view(mm(...))
case("matmul-3d-1d", lambda a, b: a @ b, normal(2, 2, 3), normal(3))
case("matmul-1d-3d", lambda a, b: a @ b, normal(3), normal(2, 3, 2))
case("matmul-2d-3d", lambda a, b: a @ b, normal(2, 3), normal(2, 3, 2))
case("matmul-4d-3d-broadcast", lambda a, b: a @ b, normal(2, 1, 2, 3), normal(2, 3, 2))
case("addmm", torch.addmm, normal(2, 4), normal(2, 3), normal(3, 4))
case("addmm-broadcast-bias", torch.addmm, normal(4), normal(2, 3), normal(3, 4))
case(
    "addmm-beta-alpha",
    lambda b, m1, m2: torch.addmm(b, m1, m2, beta=0.5, alpha=-2.0),
    normal(1, 4),
    normal(2, 3),
    normal(3, 4),
)

# Reductions: everything, one dim, negative dims, tuples of dims, keepdim.
for label, reduce in {
    "all": lambda x: x.sum(),
    "0": lambda x: x.sum(0),
    "1": lambda x: x.sum(dim=1),
    "neg": lambda x: x.sum(-1),
    "tuple": lambda x: x.sum((0, 2)),
    "tuple-neg": lambda x: x.sum((-1, 1)),
    "keepdim": lambda x: x.sum(1, keepdim=True),
    "tuple-keepdim": lambda x: torch.sum(x, (0, -1), keepdim=True),
    "empty-tuple": lambda x: x.sum(()),  # PyTorch reduces over every dim
}.items():
    case(f"sum-{label}", reduce, normal(2, 3, 2))
for label, reduce in {
    "all": lambda x: x.mean(),
    "0": lambda x: x.mean(0),
    "neg": lambda x: x.mean(-1),
    "tuple": lambda x: x.mean((0, 2)),
    "keepdim": lambda x: torch.mean(x, 1, keepdim=True),
    "tuple-keepdim": lambda x: x.mean((-1, 0), keepdim=True),
    "empty-tuple": lambda x: x.mean(()),
}.items():
    case(f"mean-{label}", reduce, normal(2, 3, 2))
case("sum-1d", lambda x: x.sum(0), normal(4))
# A 0-d input, reduced whole (nbgrad rejects dim=0 / dim=-1 on 0-d tensors, which PyTorch allows).
case("reductions-0d", lambda x: x.sum() + x.mean() * x.amax() + x.max() * x.amin(), normal())
case("max", lambda x: x.max(), distinct(2, 3))
case("min", torch.min, distinct(2, 3))
case("max-dim", lambda x: x.max(1).values, distinct(2, 3))
case("max-dim-keepdim", lambda x: x.max(dim=0, keepdim=True)[0], distinct(2, 3))
case("max-dim-neg", lambda x: torch.max(x, -1).values, distinct(2, 3, 2))
case("min-dim", lambda x: x.min(0).values, distinct(2, 3))
case("min-dim-keepdim", lambda x: x.min(-1, keepdim=True).values, distinct(2, 3, 2))
case("amax", lambda x: x.amax(), distinct(2, 3))
case("amax-dim", lambda x: x.amax(1), distinct(2, 3))
case("amax-tuple", lambda x: torch.amax(x, (0, 2)), distinct(2, 3, 2))
case("amax-neg-keepdim", lambda x: x.amax(-1, keepdim=True), distinct(2, 3, 2))
case("amin", lambda x: torch.amin(x, 0), distinct(2, 3))
case("amin-tuple-keepdim", lambda x: x.amin((-1, 0), keepdim=True), distinct(2, 3, 2))

# Shapes and views.
case("view", lambda x: x.view(3, 2), normal(2, 3))
case("view-infer", lambda x: x.view(-1), normal(2, 3))
case("reshape-contiguous", lambda x: x.reshape(3, 2), normal(2, 3))
case("reshape-copy", lambda x: x.t().reshape(6), normal(2, 3))  # clone then unsafe_view
case("flatten", lambda x: torch.flatten(x, 1), normal(2, 3, 2))
case("t", lambda x: x.t(), normal(2, 3))
case("t-function", torch.t, normal(3))


def _reversed_by_T(x):
    """x.T on 3 dims: deprecated, PyTorch warns (once); the derivative is still checked."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return x.T


case("T", _reversed_by_T, normal(2, 3, 2))
case("mT", lambda x: x.mT, normal(2, 3, 2))
case("transpose", lambda x: x.transpose(0, 2), normal(2, 3, 2))
case("transpose-neg", lambda x: torch.transpose(x, -1, 0), normal(2, 3))
case("permute", lambda x: x.permute(2, 0, 1), normal(2, 3, 2))
case("permute-neg", lambda x: torch.permute(x, (-1, -3, -2)), normal(2, 3, 2))
case("unsqueeze", lambda x: x.unsqueeze(0), normal(2, 3))
case("unsqueeze-neg", lambda x: torch.unsqueeze(x, -1), normal(2, 3))
case("squeeze", lambda x: x.squeeze(), normal(1, 3, 1))
case("squeeze-dim", lambda x: x.squeeze(2), normal(1, 3, 1))
case("squeeze-dim-not-one", lambda x: x.squeeze(1), normal(1, 3, 1))
case("squeeze-dims", lambda x: x.squeeze((0, -1)), normal(1, 3, 1))
case("expand", lambda x: x.expand(2, 3), normal(1, 3))
case("expand-new-dims", lambda x: x.expand(2, -1, 3), normal(2, 1))
case("expand_as", lambda x, y: x.expand_as(y) * y, normal(3), normal(2, 3))
case("sum_to_size", lambda x: x.sum_to_size(2, 1), normal(2, 3))
case("narrow", lambda x: x.narrow(1, 1, 2), normal(2, 3))
case("select", lambda x: x.select(1, -1), normal(2, 3))
case("select-neg-dim", lambda x: torch.select(x, -1, 0), normal(2, 3, 2))
case("narrow-neg-dim", lambda x: torch.narrow(x, -2, 0, 2), normal(2, 3, 2))
case("gather", lambda x: x.gather(1, torch.tensor([[2, 0, 0], [1, 1, 2]])), normal(2, 3))
case("gather-neg-dim", lambda x: x.gather(-1, torch.tensor([[[1], [0], [1]]] * 2)), normal(2, 3, 2))
case("gather-dim0", lambda x: torch.gather(x, 0, torch.tensor([[1, 0, 1]])), normal(2, 3))
case("cat-0", lambda a, b: torch.cat([a, b]), normal(2, 3), normal(1, 3))
case("cat-1", lambda a, b, c: torch.cat((a, b, c), 1), normal(2, 3), normal(2, 1), normal(2, 2))
case("cat-neg", lambda a, b: torch.cat([a, b], dim=-1), normal(2, 2, 1), normal(2, 2, 2))
case("cat-repeated", lambda a: torch.cat([a, a * 2]), normal(2))
for dim in [0, 1, 2, -1]:
    case(f"stack-{dim}", lambda a, b, d=dim: torch.stack([a, b], d), normal(2, 3), normal(2, 3))
case("clone", lambda x: x.clone(), normal(2, 3))
case("contiguous", lambda x: x.t().contiguous(), normal(2, 3))
case("to-same-dtype", lambda x: x.to(torch.float64), normal(2, 3))
# A round trip through float32, on inputs and steps that float32 holds exactly.
case(
    "to-float32-and-back",
    lambda x: x.float().double() ** 2,
    RNG.integers(-64, 64, (2, 3)) / 32,
    eps=2**-10,
    rtol=1e-4,
    atol=1e-4,
)

# Indexing: ints, slices with steps, None, Ellipsis, index lists, boolean masks, mixed.
INDEX_KEYS = {
    "int": 1,
    "neg-int": -1,
    "two-ints": (0, 2),
    "slice": slice(1, None),
    "slice-step": (slice(None), slice(None, None, 2)),
    "slice-neg-start": slice(-2, None),
    "slice-stop-step": (slice(None), slice(0, 3, 2), 1),
    "none": (None, 0),
    "ellipsis": (Ellipsis, 1),
    "ellipsis-none": (0, Ellipsis, None),
    "full": slice(None),
    "list": [0, 2],
    "list-negative": [-1, 0],
    "index-2d": torch.tensor([[0, 1], [2, 0]]),
    "slice-negative-stop": (slice(None, -1), slice(1, -1, 2)),
    "slice-past-end": slice(1, 10, 2),
    "list-repeated": [1, 1, 0, 1],
    "list-second-dim": (slice(None), [2, 0]),
    "two-lists": ([0, 1, 1], [2, 0, 2]),
    "lists-apart": ([1, 0], slice(None), [1, 0]),
    "tensor": torch.tensor([2, 0]),
    "mask": torch.tensor(np.array([True, False, True])),
    "mask-2d": torch.tensor(np.array([[True, False, True], [False, True, True], [True] * 3])),
    "numpy-mask": np.array([[False, True, True], [True] * 3, [False] * 3]),
    "int-and-list": (1, [0, 2]),
    "slice-none-list": (slice(1, None), None, [0, 2]),
    "mask-and-int": (torch.tensor(np.array([True, False, True])), 1),
}
for label, key in INDEX_KEYS.items():
    case(f"getitem-{label}", lambda x, k=key: x[k], normal(3, 3, 2))

# In-place ops, on a clone of a leaf.
case("add_", clone_of(lambda c, y: c.add_(y)), normal(2, 3), normal(3))
case("add_-alpha", clone_of(lambda c, y: c.add_(y, alpha=-2)), normal(2, 3), normal(2, 1))
case("add_-number", clone_of(lambda c: c.add_(1.5) * c), normal(2, 3))
case("iadd", clone_of(lambda c, y: c.__iadd__(y)), normal(2, 3), normal(2, 3))
case("sub_", clone_of(lambda c, y: c.sub_(y)), normal(2, 3), normal(3))
case("sub_-alpha", clone_of(lambda c, y: c.sub_(y, alpha=0.5)), normal(2, 3), normal(3))
case("mul_", clone_of(lambda c, y: c.mul_(y)), normal(2, 3), normal(2, 3))
case("mul_-twice", lambda x, y: x.clone().mul_(y).mul_(x), normal(2, 3), normal(3))
case("div_", clone_of(lambda c, y: c.div_(y)), normal(2, 3), away(2, 1))
case("div_-number", clone_of(lambda c: c.div_(4.0)), normal(2, 3))
case("zero_", clone_of(lambda c, y: c.zero_() + y * c), normal(2, 3), normal(2, 3))
case("fill_", clone_of(lambda c, y: c.fill_(2.0) * y), normal(2, 3), normal(2, 3))
case("copy_", clone_of(lambda c, y: c.copy_(y) * 2), normal(2, 3), normal(3))
case("copy_-then-use", clone_of(lambda c, y: c.copy_(y.exp()) * c), normal(2, 3), normal(2, 3))
case("clamp_", clone_of(lambda c: c.clamp_(-0.5, 0.5)), BOUNDED)
case("clamp_-min", clone_of(lambda c: c.clamp_(min=0.0) * c), BOUNDED)
case("masked_fill_", clone_of(lambda c: c.masked_fill_(torch.tensor(COND), -2.0)), normal(2, 3))
case("relu_", clone_of(lambda c: c.relu_()), away(2, 3))


def setitem(key):
    def assign(x, y):
        c = x.clone()
        c[key] = y
        return c

    return assign


SET_KEYS = {
    "int": (1, normal(3)),
    "int-broadcast": (1, normal(1)),
    "slice-step": ((slice(None), slice(None, None, 2)), normal(3, 2)),
    "ellipsis": ((Ellipsis, 0), normal(3)),
    "list": ([2, 0], normal(2, 3)),
    "mask": (torch.tensor(np.array([[True, False, True]] * 3)), normal(6)),
    "mask-0d": (torch.tensor(np.array([[False, True, True]] * 3)), normal()),
    "mixed": ((slice(1, None), [0, 2]), normal(2, 2)),
}
for label, (key, value) in SET_KEYS.items():
    case(f"setitem-{label}", setitem(key), normal(3, 3), value)
case("setitem-number", clone_of(lambda c: c.__setitem__((0, 1), 5.0) or c * c), normal(2, 3))
case("setitem-whole", lambda x, y: setitem(slice(None))(x, 2.0) * y, normal(2, 3), normal(2, 3))
case("alias", lambda x: x[...] * x, normal(2, 3))
# In-place element-wise functions: sin_ saves the value before the write, exp_ the result.
case("sin_", clone_of(lambda c: c.sin_() * 2), normal(2, 3))
case("exp_", clone_of(lambda c: c.exp_()), normal(2, 3))
case("sigmoid_", clone_of(torch.sigmoid_), normal(3))
case("sqrt_", clone_of(lambda c: c.sqrt_()), positive(2, 3))
case("erf_", clone_of(lambda c: c.erf_()), normal(2, 3))
case("norm", lambda x: x.norm(), normal(2, 3))
case("norm-dim", lambda x: x.norm(dim=1, keepdim=True) * x, normal(2, 3))
case("norm-1", lambda x: torch.linalg.vector_norm(x, 1, dim=0), away(2, 3))
# Step functions: zero gradient away from their jumps (normal values are far from them).
case("floor", lambda x: x.floor() * x, normal(2, 3))
case("ceil", lambda x: torch.ceil(x) * x, normal(2, 3))
case("trunc", lambda x: torch.trunc(x) + x, normal(2, 3))
case("round", lambda x: x.round() * x, normal(2, 3))
case("round-decimals", lambda x: torch.round(x, decimals=1) * x, normal(2, 3))
case("setitem-then-read", lambda x, y: setitem(0)(x, y)[0] * x, normal(2, 3), normal(3))

# as_strided, and in-place writes through views: the base's history becomes CopySlices around
# the op's node, and views of it (the one written, and any made before) AsStridedBackward0.
case("as_strided", lambda x: torch.as_strided(x, (2, 2), (1, 3), 1) * 2, normal(2, 3))
case("as_strided-overlapping", lambda x: x.clone().as_strided((2, 3), (1, 1)), normal(2, 3))
case("as_strided-of-view", lambda x: (x * 2)[1:].as_strided((2, 2), (1, 3)), normal(3, 3))
case("as_strided-transposed-layout", lambda x: (x.t() * 2).as_strided((3,), (2,)), normal(2, 3))


def through_view(write):
    """``write(base, view, *rest)`` into a view of a clone; both base and view are outputs."""

    def fn(x, *rest):
        base = x * 1.5
        sibling = base[1:, 1]  # made before the write, read after it
        view = write(base, *rest)
        return base, view, sibling * sibling

    return fn


case("mul_-row-view", through_view(lambda b, y: b[0].mul_(y)), normal(3, 4), normal(4))
case("exp_-column-view", through_view(lambda b: b[:, 2].exp_()), normal(3, 4))
case("div_-t-view", through_view(lambda b, y: b.t().div_(y)), normal(3, 4), away(3))
case(
    "add_-view-of-view",
    through_view(lambda b, y: b[1:].view(8)[2:5].add_(y)),
    normal(3, 4),
    normal(3),
)
case(
    "copy_-unsqueeze-view",
    through_view(lambda b, y: b.unsqueeze(0)[0, 2].copy_(y.sin())),
    normal(3, 4),
    normal(4),
)
case(
    "setitem-into-view",
    through_view(lambda b, y: b[1:].__setitem__(0, y) or b),
    normal(3, 4),
    normal(4),
)


def into_zeros(fn, shape=(3, 3)):
    """Write a tensor that requires grad into one that does not: only ``src`` gets a gradient."""
    return lambda y: fn(torch.zeros(*shape, dtype=torch.float64), y)


case(
    "setitem-into-constant",
    into_zeros(lambda z, y: z.__setitem__((1, [0, 2]), y) or z * z),
    normal(2),
)
case("add_-into-constant", into_zeros(lambda z, y: z.add_(y, alpha=2) * y), normal(3))
case("mul_-into-constant", into_zeros(lambda z, y: z.add_(1.5).mul_(y)), normal(3, 1))
case("copy_-into-constant", into_zeros(lambda z, y: z.copy_(y).sin()), normal(3))


# Layers of nbgrad.nn.functional, each on its own table entry (or two).
F = torch.nn.functional


def double(values):
    """A float64 constant: PyTorch wants a layer's weights and statistics in the input's dtype."""
    return torch.tensor(values, dtype=torch.float64)


TARGETS = torch.tensor([2, 0, 1])
case("conv2d", F.conv2d, normal(1, 2, 3, 3), normal(2, 2, 2, 2), normal(2))
case(
    "conv2d-stride-padding-dilation",
    lambda x, w: F.conv2d(x, w, stride=2, padding=1, dilation=(1, 2)),
    normal(1, 1, 4, 4),
    normal(2, 1, 2, 2),
)
case(
    "conv1d-groups",
    lambda x, w, b: F.conv1d(x, w, b, padding=1, groups=2),
    normal(2, 2, 4),
    normal(2, 1, 3),
    normal(2),
)
case("unfold", lambda x: F.unfold(x, kernel_size=2), normal(1, 2, 3, 3))  # im2col
case(
    "unfold-options", lambda x: F.unfold(x, 2, dilation=1, padding=1, stride=2), normal(1, 1, 3, 3)
)
case("fold", lambda c: F.fold(c, (3, 3), kernel_size=2), normal(1, 4, 4))  # col2im
case("max_pool2d", lambda x: F.max_pool2d(x, 2), distinct(1, 1, 4, 4))
case(
    "max_pool2d-overlapping",
    lambda x: F.max_pool2d(x, 2, stride=1, padding=1),
    distinct(1, 2, 3, 3),
)
case("avg_pool2d", lambda x: F.avg_pool2d(x, 2), normal(1, 1, 4, 4))
case(
    "avg_pool2d-options",
    lambda x: F.avg_pool2d(x, 2, stride=1, padding=1, count_include_pad=False),
    normal(2, 3, 3),
)
case(
    "avg_pool2d-divisor",
    lambda x: F.avg_pool2d(x, 3, stride=2, ceil_mode=True, divisor_override=2),
    normal(1, 1, 4, 4),
)
# Adaptive pooling, transposed convolution, interpolation, batch_first recurrent output.
case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), normal(1, 2, 5, 4))
case("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (2, 2)), distinct(1, 2, 5, 4))
case(
    "conv_transpose2d",
    lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
    normal(1, 2, 3, 3),
    normal(2, 2, 3, 3),
    normal(2),
)
case(
    "conv_transpose1d-groups-dilation",
    lambda x, w: F.conv_transpose1d(x, w, groups=2, dilation=2, output_padding=1, stride=2),
    normal(1, 2, 4),
    normal(2, 1, 3),
)
for _mode, _shape, _options in [
    ("nearest", (1, 2, 3, 4), {"scale_factor": 1.5}),
    ("nearest", (1, 2, 4), {"scale_factor": 2}),
    ("nearest-exact", (1, 2, 3, 4), {"size": (5, 2)}),
    ("nearest-exact", (1, 2, 4), {"size": 7}),
    ("bilinear", (1, 2, 3, 4), {"size": (5, 3)}),
    ("linear", (1, 2, 4), {"size": 6, "align_corners": True}),
]:
    case(
        f"interpolate-{_mode}-{len(_shape) - 2}d",
        lambda x, m=_mode, o=_options: F.interpolate(x, mode=m, **o),
        normal(*_shape),
    )
case("max_pool3d", lambda x: F.max_pool3d(x, 2, 1, 1), distinct(1, 1, 3, 3, 4))
case(
    "avg_pool3d",
    lambda x: F.avg_pool3d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False),
    normal(1, 1, 3, 3, 4),
)
case("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), normal(1, 1, 3, 4, 5))
case("adaptive_max_pool3d", lambda x: F.adaptive_max_pool3d(x, 2), distinct(1, 1, 3, 4, 5))
case(
    "unsafe_split",  # the gates of an LSTM cell (ATen's unsafe_chunk)
    lambda x: run_op(OPS["unsafe_split"], (x,), (2, 1))[1] * 2.0,
    normal(2, 6),
)
case(
    "transpose_inplace",  # a batch_first RNN's output (ATen's output.transpose_(0, 1))
    lambda x: run_op(OPS["transpose_inplace"], (x,), (0, 1)),
    normal(3, 2, 4),
)
case(
    "mkldnn_rnn_layer",  # a float32 LSTM layer as PyTorch runs it (oneDNN), here in float64
    lambda x, w_ih, w_hh, b_ih, b_hh, h, c: run_op(
        OPS["mkldnn_rnn_layer"], (x, w_ih, w_hh, b_ih, b_hh, h, c),
        (False, (), 2, 3, 1, True, False, False, True),
    )[0].sum(-1) + run_op(
        OPS["mkldnn_rnn_layer"], (x, w_ih, w_hh, b_ih, b_hh, h, c),
        (True, (), 2, 3, 1, True, True, False, True),
    )[2].sum(),
    normal(4, 2, 2), normal(12, 2), normal(12, 3), normal(12), normal(12), normal(2, 3),
    normal(2, 3),
)  # fmt: skip
case("pad-constant", lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), normal(2, 3))
case("pad-constant-crop", lambda x: F.pad(x, (-1, 1)), normal(2, 3))
for label, shape, amounts in [
    ("1d", (2, 4), (2, 1)),
    ("2d", (1, 3, 3), (1, 0, 2, 1)),
    ("3d", (1, 2, 2, 3), (1, 1, 0, 1, 1, 0)),
]:
    for mode in ("reflect", "replicate", "circular"):
        case(f"pad-{mode}{label}", lambda x, p=amounts, m=mode: F.pad(x, p, mode=m), normal(*shape))
case("pad-circular-crop", lambda x: F.pad(x, (2, -1, -1, 1), mode="circular"), normal(1, 3, 3))
case("embedding", lambda w: F.embedding(torch.tensor([[0, 2], [2, 3]]), w), normal(4, 3))
case("layer_norm", lambda x, w, b: F.layer_norm(x, (3,), w, b), normal(2, 3), normal(3), normal(3))
case("layer_norm-2d", lambda x: F.layer_norm(x, (2, 3)), normal(2, 2, 3))
case(
    "batch_norm-training",
    lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
    normal(3, 2),
    normal(2),
    normal(2),
)
case(
    "batch_norm-training-3d",
    lambda x: F.batch_norm(x, double([0.0, 0.0]), double([1.0, 1.0]), training=True),
    normal(2, 2, 3),
)
case(
    "batch_norm-eval",
    lambda x, w, b: F.batch_norm(x, double([0.5, -1.0]), double([2.0, 0.5]), w, b),
    normal(3, 2),
    normal(2),
    normal(2),
)
case("gelu", F.gelu, normal(2, 3))  # its differentiable backward runs erf
case("gelu-tanh", lambda x: F.gelu(x, approximate="tanh"), normal(2, 3))
case("leaky_relu", lambda x: F.leaky_relu(x, 0.1), away(2, 3))
case("leaky_relu-inplace", clone_of(lambda c: F.leaky_relu(c, 0.1, inplace=True)), away(2, 3))
case("cosine_similarity", F.cosine_similarity, normal(2, 3), normal(2, 3))  # vector norms
case("mse_loss", F.mse_loss, normal(2, 3), normal(2, 3))
case("mse_loss-sum", lambda x, t: F.mse_loss(x, t, reduction="sum"), normal(2, 3), normal(2, 3))
case("mse_loss-none", lambda x, t: F.mse_loss(x, t, reduction="none"), normal(3), normal(3))
case("nll_loss", lambda x: F.nll_loss(x, TARGETS), normal(3, 4))
case(
    "nll_loss-weight-ignore",
    lambda x: F.nll_loss(
        x, torch.tensor([2, 0, 1]), weight=double([0.5, 2.0, 1.0]), ignore_index=0
    ),
    normal(3, 3),
)
case("nll_loss-none", lambda x: F.nll_loss(x, TARGETS, reduction="none"), normal(3, 3))
case("nll_loss2d", lambda x: F.nll_loss(x, torch.tensor([[[0, 2], [1, 1]]])), normal(1, 3, 2, 2))
case("cross_entropy", lambda x: F.cross_entropy(x, TARGETS), normal(3, 3))
case(
    "cross_entropy-label-smoothing",
    lambda x: F.cross_entropy(x, TARGETS, label_smoothing=0.2),
    normal(3, 3),
)  # mul_scalar
case(
    "cross_entropy-probabilities", F.cross_entropy, normal(2, 3), RNG.dirichlet(np.ones(3), 2)
)  # div_scalar
case(
    "binary_cross_entropy",
    F.binary_cross_entropy,
    RNG.uniform(0.1, 0.9, (2, 3)),
    RNG.uniform(0, 1, (2, 3)),
)
case(
    "binary_cross_entropy-weight-sum",
    lambda p, t: F.binary_cross_entropy(p, t, weight=double([1.0, 2.0, 0.5]), reduction="sum"),
    RNG.uniform(0.1, 0.9, (2, 3)),
    RNG.uniform(0, 1, (2, 3)),
)
case(
    "binary_cross_entropy_with_logits",
    F.binary_cross_entropy_with_logits,
    normal(2, 3),
    RNG.uniform(0, 1, (2, 3)),
)
case(
    "binary_cross_entropy_with_logits-weights",
    lambda x, t: F.binary_cross_entropy_with_logits(
        x,
        t,
        weight=torch.tensor([1.0, 2.0, 0.5]),
        pos_weight=torch.tensor([2.0, 1.0, 0.5]),
        reduction="none",
    ),
    normal(2, 3),
    RNG.uniform(0, 1, (2, 3)),
)

# Reductions, scans and reorderings, more (var/std, prod, cumsum..., roll, flip, repeat, ...).
case("var", torch.var, normal(2, 3))
case("var-dim", lambda x: x.var(1, keepdim=True), normal(2, 3))
case("var-dims-correction", lambda x: x.var((0, 2), correction=0), normal(2, 3, 2))
case("var-0d", lambda x: x.var(correction=0), normal())
case("std", lambda x: x.std(), normal(2, 3))
case("std-dim", lambda x: torch.std(x, -1, unbiased=False), normal(2, 3))
case("prod", lambda x: x.prod(), away(2, 3))
case("prod-with-a-zero", lambda x: (x * torch.tensor([1.0, 0.0, 1.0])).prod(), away(3))
case("prod-dim", lambda x: x.prod(1), away(2, 3))
case("prod-dim-keepdim", lambda x: x.prod(0, keepdim=True), away(2, 3))
case("prod-dim-with-a-zero", lambda x: (x * torch.tensor([0.0, 1.0, 1.0])).prod(-1), away(2, 3))
case("cumsum", lambda x: x.cumsum(1), normal(2, 3))
case("cumsum-0d", lambda x: torch.cumsum(x, 0), normal())
case("cumprod", lambda x: x.cumprod(-1), away(2, 3))
case("cumprod-with-a-zero", lambda x: (x * torch.tensor([1.0, 0.0, 1.0])).cumprod(0), away(3))
case("logcumsumexp", lambda x: x.logcumsumexp(0), normal(3, 2))
case("cummax", lambda x: x.cummax(1).values, distinct(2, 4))
case("cummin", lambda x: torch.cummin(x, 0)[0], distinct(3, 2))
case("roll", lambda x: x.roll(1), normal(2, 3))
case("roll-dims", lambda x: torch.roll(x, (1, -1), (0, 1)), normal(2, 3))
case("flip", lambda x: x.flip(0, 1), normal(2, 3))
case("fliplr", torch.fliplr, normal(2, 3))
case("repeat", lambda x: x.repeat(2, 1, 2), normal(2, 3))
case("tile", lambda x: torch.tile(x, (2,)), normal(3))
case("tril", lambda x: x.tril(), normal(3, 3))
case("triu", lambda x: torch.triu(x, -1), normal(2, 3, 3))
case("index_select", lambda x: x.index_select(1, torch.tensor([2, 0, 2])), normal(2, 3))
case("masked_select", lambda x: x.masked_select(torch.tensor([True, False, True])), normal(2, 3))
case("outer", torch.outer, normal(3), normal(2))
case("addmv", torch.addmv, normal(2), normal(2, 3), normal(3))
case(
    "addmv-scaled",
    lambda b, m, v: b.addmv(m, v, beta=0.5, alpha=2),
    normal(1),
    normal(2, 3),
    normal(3),
)
case("addr", torch.addr, normal(2, 3), normal(2), normal(3))
case(
    "addr-scaled",
    lambda b, u, v: torch.addr(b, u, v, beta=2, alpha=-1),
    normal(3),
    normal(2),
    normal(3),
)
case("baddbmm", torch.baddbmm, normal(2, 2), normal(3, 2, 4), normal(3, 4, 2))
case(
    "baddbmm-scaled",
    lambda b, x, y: b.baddbmm(x, y, beta=-1, alpha=0.5),
    normal(3, 2, 2),
    normal(3, 2, 4),
    normal(3, 4, 2),
)
case("addmm-method", lambda b, x, y: b.addmm(x, y), normal(2, 2), normal(2, 3), normal(3, 2))
case("movedim", lambda x: x.movedim(0, -1), normal(2, 3, 4))
case("unflatten", lambda x: x.unflatten(1, (2, -1)), normal(3, 4))
case("split", lambda x: x.split(2), normal(5, 2))
case("split-one-piece-used", lambda x: x.split(2, 1)[1], normal(2, 3))
case("split_with_sizes", lambda x: torch.split(x, [1, 3], -1), normal(2, 4))
case("chunk", lambda x: x.chunk(3), normal(4, 2))
case("unbind", lambda x: x.unbind(1), normal(2, 3))
case("unbind-one-used", lambda x: torch.unbind(x)[1] * 2, normal(3, 2))
case("var_mean", lambda x: torch.var_mean(x, 1), normal(2, 3))
case("var_mean-mean-only", lambda x: torch.var_mean(x)[1], normal(2, 3))
case("std_mean", lambda x: torch.std_mean(x, 0, keepdim=True, correction=0), normal(3, 2))
case("sort", lambda x: x.sort()[0], distinct(2, 4))
case(
    "sort-stable-descending",
    lambda x: torch.sort(x, dim=0, descending=True, stable=True).values,
    distinct(3, 2),
)
case("topk", lambda x: x.topk(2)[0], distinct(2, 4))
case("kthvalue", lambda x: x.kthvalue(2, 0)[0], distinct(3, 2))
case("median", lambda x: x.median(), distinct(2, 3))
case("median-dim", lambda x: x.median(1, keepdim=True)[0], distinct(2, 3))
case("mode", lambda x: x.mode(1)[0], distinct(2, 3))
case("diagonal", lambda x: x.diagonal(1), normal(3, 4))
case("diagonal-dims", lambda x: torch.diagonal(x, -1, 2, 0), normal(3, 2, 4))
case("diag-of-matrix", lambda x: torch.diag(x), normal(3, 4))
case("diag-of-vector", lambda x: torch.diag(x, -1), normal(3))
case("diag_embed", lambda x: torch.diag_embed(x, 1, 0, 2), normal(2, 3))
case("trace", lambda x: x.trace(), normal(3, 4))
case("take", lambda x: torch.take(x, torch.tensor([[0, 5], [5, -1]])), normal(2, 3))
case("take_along_dim", lambda x: torch.take_along_dim(x, torch.tensor([[2], [0]]), 1), normal(2, 3))
case("vector_norm-inf", lambda x: torch.linalg.vector_norm(x, float("inf"), 1), distinct(2, 3))
case("vector_norm--inf", lambda x: x.norm(-float("inf")), distinct(2, 3))
case("vector_norm-3", lambda x: torch.linalg.vector_norm(x, 3, 0, True), away(2, 3))
case("vector_norm-0.5", lambda x: x.norm(0.5), away(2, 3))
case("vector_norm-0", lambda x: x.norm(0) + x.sum(), away(2, 3))
case("linalg_norm", lambda x: torch.linalg.norm(x, dim=1), normal(2, 3))
case("matrix_norm", torch.linalg.matrix_norm, normal(2, 2, 3))
case("dist", torch.dist, normal(2, 3), normal(3))
case("dist-3", lambda x, y: torch.dist(x, y, 3), normal(2, 3), normal(2, 3))
case("dist-inf", lambda x, y: x.dist(y, float("inf")), distinct(2, 3), distinct(2, 3) * 0.01)
case("linalg_cross", torch.linalg.cross, normal(2, 3), normal(2, 3))
case("cross-dim0", lambda x, y: torch.cross(x, y, dim=0), normal(3, 2), normal(3, 1))
case("hstack", lambda x, y: torch.hstack([x, y]), normal(2, 3), normal(2, 1))
case("vstack", lambda x, y: torch.vstack([x, y]), normal(3), normal(2, 3))
case("dstack", lambda x, y: torch.dstack((x, y)), normal(3), normal(3))
case("column_stack", lambda x, y: torch.column_stack([x, y]), normal(2), normal(2, 2))
case("atleast_3d", lambda x: torch.atleast_3d(x), normal(3))
SCATTER_INDEX = torch.tensor([[0, 1, 0], [1, 0, 1]])  # no element written twice
case("scatter", lambda x, y: x.scatter(0, SCATTER_INDEX, y), normal(2, 3), normal(2, 3))
case("scatter-value", lambda x: torch.scatter(x, 1, torch.tensor([[2], [0]]), 1.5), normal(2, 3))
case("scatter_", clone_of(lambda c, y: c.scatter_(0, SCATTER_INDEX, y)), normal(2, 3), normal(2, 3))
case(
    "scatter_add",
    lambda x, y: x.scatter_add(0, torch.tensor([[0, 1, 0], [0, 0, 0]]), y),
    normal(2, 3),
    normal(2, 3),
)
case(
    "scatter_add_",
    clone_of(lambda c, y: c.scatter_add_(1, torch.tensor([[0, 0, 2]]), y)),
    normal(2, 3),
    normal(1, 3),
)
case("index_add", lambda x, y: x.index_add(0, torch.tensor([1, 1]), y), normal(2, 3), normal(2, 3))
case(
    "index_add_-alpha",
    clone_of(lambda c, y: c.index_add_(1, torch.tensor([2, 0]), y, alpha=-2)),
    normal(2, 3),
    normal(2, 2),
)
case("index_fill", lambda x: x.index_fill(1, torch.tensor([0, 2]), -1.0), normal(2, 3))
case("index_fill_", clone_of(lambda c: c.index_fill_(0, torch.tensor([1]), 2.0)), normal(2, 3))
case(
    "index_copy", lambda x, y: x.index_copy(0, torch.tensor([1, 0]), y), normal(2, 3), normal(2, 3)
)
case(
    "index_copy_",
    clone_of(lambda c, y: c.index_copy_(1, torch.tensor([2]), y)),
    normal(2, 3),
    normal(2, 1),
)


case("vdot", torch.vdot, normal(3), normal(3))
case("rot90", lambda x: x.rot90(), normal(2, 3))
case("rot90-back", lambda x: torch.rot90(x, -1, (2, 0)), normal(2, 3, 2))
case("repeat_interleave", lambda x: x.repeat_interleave(2, 1), normal(2, 3))
case("repeat_interleave-tensor", lambda x: x.repeat_interleave(torch.tensor([2, 0])), normal(2))
case("kron", torch.kron, normal(2, 3), normal(2, 2))
case("meshgrid", lambda x, y: torch.meshgrid(x, y, indexing="xy"), normal(3), normal(2))
case("cartesian_prod", torch.cartesian_prod, normal(3), normal(2))
case("block_diag", torch.block_diag, normal(2, 3), normal(2), normal())
case("addbmm", torch.addbmm, normal(2, 4), normal(3, 2, 5), normal(3, 5, 4))
case(
    "addbmm-scaled",
    lambda b, x, y: b.addbmm(x, y, beta=0.5, alpha=-2),
    normal(4),
    normal(3, 2, 5),
    normal(3, 5, 4),
)


# --- element-wise functions, more (logarithms, trigonometric, hyperbolic, activations) ---------
UNIT = RNG.uniform(-0.8, 0.8, (2, 3))  # inside (-1, 1): asin, acos, atanh, erfinv
case("log2", torch.log2, positive(2, 3))
case("log10", lambda x: x.log10(), positive(2, 3))
case("log2_", clone_of(lambda c: c.log2_()), positive(2, 3))
case("asin", torch.asin, UNIT)
case("arcsin", lambda x: x.arcsin(), UNIT)
case("acos", torch.acos, UNIT)
case("atan", torch.atan, normal(2, 3))
case("atan_", clone_of(lambda c: c.atan_()), normal(2, 3))
case("atan2", torch.atan2, normal(2, 3), away(2, 3))
case("atan2-broadcast", lambda y, x: y.arctan2(x), normal(2, 3), away(3))
case("atan2_", clone_of(lambda c, x: c.atan2_(x)), normal(2, 3), away(2, 3))
case("sinh", torch.sinh, normal(2, 3))
case("cosh", torch.cosh, normal(2, 3))
case("asinh", torch.asinh, normal(2, 3))
case("acosh", torch.acosh, positive(2, 3) + 1)
case("atanh", torch.atanh, UNIT)
# In place, asinh_, acosh_ and atanh_ have no backward (in PyTorch either): recorded, not reached.
case(
    "asinh_-acosh_-atanh_",
    lambda x: x * 1 + 0 * (x.clone().asinh_() + (x * 0.1).atanh_() + (x * x + 1).acosh_()).detach(),
    UNIT,
)
case("exp2", torch.exp2, normal(2, 3))
case("erfc", torch.erfc, normal(2, 3))
case("erfinv", torch.erfinv, UNIT)
case("erfinv_", clone_of(lambda c: c.erfinv_()), UNIT)
case("logsumexp", lambda x: torch.logsumexp(x, 1), normal(2, 3, 2))
case("logsumexp-dims-keepdim", lambda x: x.logsumexp((0, -1), keepdim=True), normal(2, 3, 2))
case("logsumexp-0d", lambda x: x.logsumexp(0) * x, normal())
case("softplus", F.softplus, normal(2, 3))
case("softplus-beta-threshold", lambda x: F.softplus(x, 2, 1.5), away(2, 3) * 2)
case("hardtanh", F.hardtanh, BOUNDED * 2)
case("hardtanh_", clone_of(lambda c: F.hardtanh_(c, -0.5, 0.5)), BOUNDED)
case("relu6", lambda x: F.relu6(x * 4), BOUNDED + 0.02)
case("logsigmoid", F.logsigmoid, normal(2, 3) * 3)
case("silu", F.silu, normal(2, 3))
case("silu-inplace", clone_of(lambda c: F.silu(c, inplace=True)), normal(2, 3))
case("mish", F.mish, normal(2, 3))
case("hardswish", F.hardswish, np.array([[-4.0, -2.5, -0.5], [0.7, 2.5, 3.5]]))
case("hardsigmoid", F.hardsigmoid, np.array([[-4.0, -2.5, -0.5], [0.7, 2.5, 3.5]]))
case("elu", lambda x: F.elu(x, 0.7), away(2, 3))
case("elu-inplace", clone_of(lambda c: F.elu(c, 1.3, inplace=True)), away(2, 3))
case("selu", torch.selu, away(2, 3))
case("selu_", clone_of(torch.selu_), away(2, 3))
case("celu", lambda x: F.celu(x, 2.0), away(2, 3))
case("celu_", clone_of(lambda c: torch.celu_(c, 0.5)), away(2, 3))
case("threshold", lambda x: F.threshold(x, 0.1, 2.0), away(2, 3) + 0.1)
case("threshold_", clone_of(lambda c: torch.threshold_(c, 0.1, -1.0)), away(2, 3) + 0.1)
case("softshrink", lambda x: F.softshrink(x, 0.1), away(2, 3) + 0.1)
case("hardshrink", torch.hardshrink, away(2, 3) * 2)
case("softsign", F.softsign, away(2, 3))
case("tanhshrink", F.tanhshrink, normal(2, 3))


# --- element-wise functions, more (binary and ternary, powers, in place) -----------------------
case("log1p_", clone_of(lambda c: c.log1p_()), positive(2, 3))
case("expm1_", clone_of(torch.expm1_), normal(2, 3))
case("frac", torch.frac, away(2, 3) * 2 + 0.05)
case("deg2rad", torch.deg2rad, normal(2, 3))
case("rad2deg_", clone_of(lambda c: c.rad2deg_()), normal(2, 3))
case("sinc", torch.sinc, away(2, 3))
case("sgn", lambda x: torch.sgn(x) * x, away(2, 3))
case("logit", torch.logit, RNG.uniform(0.2, 0.8, (2, 3)))
case("logit-eps", lambda x: x.logit(0.3), np.array([[0.1, 0.4, 0.5], [0.6, 0.9, 0.35]]))
case("logit_", clone_of(lambda c: torch.logit_(c)), RNG.uniform(0.2, 0.8, (2, 3)))
case("nan_to_num", torch.nan_to_num, normal(2, 3))
case("xlogy", torch.xlogy, normal(2, 3), positive(2, 3))
case("xlogy-broadcast", lambda x, y: x.xlogy(y), normal(3), positive(2, 1))
case("xlogy-number-other", lambda x: torch.xlogy(x, 2.5), normal(2, 3))
case("xlogy-number-self", lambda y: torch.xlogy(2.5, y), positive(2, 3))
case("xlogy_", clone_of(lambda c, y: c.xlogy_(y)), normal(2, 3), positive(3))
case("hypot", torch.hypot, away(2, 3), away(3))
case("copysign", torch.copysign, away(2, 3), away(2, 3))
case("copysign-number", lambda x: x.copysign(-1.0), away(2, 3))
case("logaddexp", torch.logaddexp, normal(2, 3), normal(3))
case("logaddexp2", torch.logaddexp2, normal(2, 3), normal(2, 1))
case("lerp", lambda a, b: torch.lerp(a, b, 0.3), normal(2, 3), normal(3))
case("lerp-tensor", torch.lerp, normal(2, 3), normal(2, 3), RNG.uniform(0, 1, (3,)))
case("lerp_", clone_of(lambda c, b, w: c.lerp_(b, w)), normal(2, 3), normal(3), normal(2, 3))
case(
    "addcmul",
    lambda a, b, c: torch.addcmul(a, b, c, value=-1.5),
    normal(2, 3),
    normal(3),
    normal(2, 1),
)
case("addcmul_", clone_of(lambda a, b, c: a.addcmul_(b, c)), normal(2, 3), normal(3), normal(2, 3))
case(
    "addcdiv", lambda a, b, c: torch.addcdiv(a, b, c, value=2), normal(2, 3), normal(3), away(2, 1)
)
case(
    "addcdiv_", clone_of(lambda a, b, c: a.addcdiv_(b, c, value=0.5)), normal(3), normal(3), away(3)
)
case("pow_", clone_of(lambda c: c.pow_(3)), normal(2, 3))
case("pow_-tensor", clone_of(lambda c, e: c.pow_(e)), positive(2, 3), normal(2, 3))
case("square_", clone_of(torch.square_), normal(2, 3))
case("float_power", lambda x, y: torch.float_power(x, y), positive(2, 3), normal(3))
case("float_power-number", lambda x: x.float_power(2.5), positive(2, 3))


# --- losses, more ------------------------------------------------------------------------------
# Differences kept away from the kinks at +-beta / +-delta.
DIFF = np.array([[-1.7, -0.8, -0.2], [0.3, 0.7, 1.9]])
case("smooth_l1_loss", lambda x, t: F.smooth_l1_loss(x + t, t), DIFF, normal(2, 3))
case(
    "smooth_l1_loss-beta-sum",
    lambda x: F.smooth_l1_loss(
        x, torch.zeros(2, 3, dtype=torch.float64), reduction="sum", beta=0.5
    ),
    DIFF,
)
case(
    "huber_loss",
    lambda x, t: F.huber_loss(x + t, t, delta=0.5, reduction="none"),
    DIFF,
    normal(2, 3),
)
case(
    "huber_loss-weight",
    lambda x, w: F.huber_loss(x, torch.zeros(2, 3, dtype=torch.float64), weight=w),
    DIFF,
    positive(2, 3),
)
case(
    "soft_margin_loss",
    lambda x: F.soft_margin_loss(
        x, torch.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], dtype=torch.float64)
    ),
    normal(2, 3),
)
case(
    "kl_div-batchmean",
    lambda x, t: F.kl_div(x, t, reduction="batchmean"),
    normal(2, 3),
    positive(2, 3),
)
case(
    "kl_div-log-target",
    lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
    normal(2, 3),
    normal(2, 3),
)
case("poisson_nll_loss", F.poisson_nll_loss, normal(2, 3), positive(2, 3))
case(
    "poisson_nll_loss-full",
    lambda x, t: F.poisson_nll_loss(x, t, log_input=False, full=True),
    positive(2, 3),
    positive(2, 3) + 1,
)
case("gaussian_nll_loss", F.gaussian_nll_loss, normal(2, 3), normal(2, 3), positive(2, 3))
case(
    "gaussian_nll_loss-homoscedastic",
    lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=True, reduction="sum"),
    normal(2, 3),
    normal(2, 3),
    positive(2),
)


# --- distances and margin losses ---------------------------------------------------------------
SIGNS = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
case("normalize", F.normalize, normal(4, 3))
case("normalize-1-norm", lambda x: F.normalize(x, p=1, dim=0), away(4, 3))
case("pairwise_distance", F.pairwise_distance, normal(4, 3), normal(4, 3))
case(
    "margin_ranking_loss",
    lambda a, b: F.margin_ranking_loss(a, b, SIGNS, margin=0.1),
    np.array([0.5, 0.3, -1.0, 0.9]),
    np.array([0.1, 0.8, 0.2, -0.4]),
)
case(
    "hinge_embedding_loss",
    lambda x: F.hinge_embedding_loss(
        x, torch.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], dtype=torch.float64)
    ),
    np.array([[0.3, 0.4, -0.5], [1.6, 0.2, 2.0]]),
)
case(
    "cosine_embedding_loss",
    lambda a, b: F.cosine_embedding_loss(a, b, SIGNS, margin=-0.5),
    normal(4, 3),
    normal(4, 3),
)
case(
    "triplet_margin_loss",
    lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=3.0),
    normal(4, 3),
    normal(4, 3),
    normal(4, 3),
)


# --- activations, more: softmin, glu, prelu, multilabel soft margin ------------------------------
case("softmin", lambda x: F.softmin(x, 1), normal(2, 3))
case("glu", F.glu, normal(2, 4))
case("glu-dim-0", lambda x: F.glu(x, 0), normal(4, 3))
case("prelu", F.prelu, away(2, 3, 2), normal(3))
case("prelu-one-weight", F.prelu, away(2, 3), normal(1))
case("relu_-function", clone_of(F.relu_), away(2, 3))
case("leaky_relu_-function", clone_of(lambda c: F.leaky_relu_(c, 0.2)), away(2, 3))
case(
    "multilabel_soft_margin_loss",
    lambda x: F.multilabel_soft_margin_loss(
        x, torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    ),
    normal(2, 3),
)


# --- the tests -----------------------------------------------------------------------------------


def _ids(cases):
    return [c.id for c in cases]


# Sampling: a fresh generator with one seed makes each a function of its inputs; PyTorch's
# gradients of samples are zeros (the samples are multiplied by 0 where they move with the input).
def seeded():
    return torch.Generator().manual_seed(0)


case(
    "normal_tensor_tensor",
    lambda m, s: torch.normal(m, s, generator=seeded()) * 0,
    normal(2, 3),
    positive(2, 3),
)
case("normal_tensor_float", lambda m: torch.normal(m, 2.0, generator=seeded()) * 0, normal(2, 3))
case("normal_float_tensor", lambda s: torch.normal(1.0, s, generator=seeded()) * 0, positive(2, 3))
case(
    "bernoulli", lambda p: torch.bernoulli(p, generator=seeded()) * p, RNG.uniform(0.2, 0.8, (2, 3))
)
case("poisson", lambda r: torch.poisson(r, generator=seeded()) * r, positive(2, 3))
# The Gamma sampler's gradient holds the draw's quantile fixed, which perturbing alpha under one
# seed does not (NumPy's sampler is not an inverse CDF): checked exactly against mpmath in
# tests/test_distributions_gamma_vs_torch.py. Here, the entry and its gradient function (whose own
# derivative PyTorch does not implement: no second derivatives) run with a zero cotangent.
case(
    "_standard_gamma",
    lambda a: torch._standard_gamma(a, generator=seeded()) * 0,
    positive(2, 3),
    second=False,
)
for _name, _fn in [
    ("normal_", lambda c: c.normal_(generator=seeded())),
    ("uniform_", lambda c: c.uniform_(generator=seeded())),
    ("bernoulli_float_", lambda c: c.bernoulli_(0.5, generator=seeded())),
    ("random_", lambda c: c.random_(1, 5, generator=seeded())),
    ("random_to_", lambda c: c.random_(5, generator=seeded())),
    ("random_full_", lambda c: c.random_(generator=seeded())),
    ("exponential_", lambda c: c.exponential_(generator=seeded())),
    ("geometric_", lambda c: c.geometric_(0.5, generator=seeded())),
    ("cauchy_", lambda c: c.cauchy_(generator=seeded())),
    ("log_normal_", lambda c: c.log_normal_(generator=seeded())),
]:
    case(_name, lambda x, fn=_fn: fn(x.clone()) * x, normal(2, 3))
case(
    "bernoulli_tensor_",
    lambda x, p: (x * 1).bernoulli_(p, generator=seeded()) * x,
    normal(2, 3),
    RNG.uniform(0.2, 0.8, (2, 3)),
)


# --- linear algebra (torch.linalg) ---------------------------------------------------------------
# Well-conditioned matrices: a multiple of the identity plus noise; symmetric positive definite
# ones built from the leaf (X X^T + 3 I); eigenvectors and singular vectors through quantities
# that do not depend on their signs.


def well_conditioned(*shape):
    return normal(*shape) * 0.3 + 2.0 * np.eye(shape[-1])


def _spd(x):
    return x @ x.mT + 3 * torch.eye(x.shape[-1], dtype=x.dtype)


case("linalg_det", torch.linalg.det, well_conditioned(3, 3))
case("linalg_det-batched", torch.linalg.det, well_conditioned(2, 3, 3))
case("det-negative", torch.det, normal(3, 3) * 0.3 - 2.0 * np.eye(3))
case("linalg_slogdet", lambda a: torch.linalg.slogdet(a).logabsdet, well_conditioned(2, 3, 3))
case("logdet", torch.logdet, well_conditioned(3, 3))
case("linalg_inv", torch.linalg.inv, well_conditioned(3, 3))
case("inverse-batched", torch.inverse, well_conditioned(2, 3, 3))
case("linalg_solve", torch.linalg.solve, well_conditioned(3, 3), normal(3, 2))
case("linalg_solve-vector", torch.linalg.solve, well_conditioned(3, 3), normal(3))
case("linalg_solve-broadcast", torch.linalg.solve, well_conditioned(3, 3), normal(2, 3, 2))
case(
    "linalg_solve-right",
    lambda a, b: torch.linalg.solve(a, b, left=False),
    well_conditioned(3, 3),
    normal(2, 3),
)
case("linalg_cholesky", lambda x: torch.linalg.cholesky(_spd(x)), normal(3, 3))
case("linalg_cholesky-upper", lambda x: torch.linalg.cholesky(_spd(x), upper=True), normal(3, 3))
case("linalg_qr", lambda a: tuple(torch.linalg.qr(a)), normal(4, 3))
case("linalg_qr-wide", lambda a: tuple(torch.linalg.qr(a)), normal(3, 5))
case("linalg_qr-square", lambda a: tuple(torch.linalg.qr(a, mode="complete")), normal(3, 3))
case("linalg_eigh", lambda x: (lambda w, v: (w, v * v))(*torch.linalg.eigh(x + x.mT)), normal(3, 3))
case("linalg_eigvalsh", lambda x: torch.linalg.eigvalsh(x + x.mT), normal(2, 3, 3))
case(
    "linalg_svd",
    lambda a: (lambda u, s, vh: (u @ vh, s, u * u))(*torch.linalg.svd(a, full_matrices=False)),
    normal(4, 3),
)
case(
    "linalg_svd-wide",
    lambda a: (lambda u, s, vh: (u @ vh[:2], vh[:2] * vh[:2]))(*torch.linalg.svd(a)),
    normal(2, 4),
)
case("linalg_svdvals", torch.linalg.svdvals, normal(3, 4))
case("matrix_norm-2", lambda a: torch.linalg.matrix_norm(a, 2), normal(3, 3))
case("matrix_norm-nuc", lambda a: torch.linalg.matrix_norm(a, "nuc"), normal(2, 3, 4))
# Orders 1 and inf take the largest column or row sum of magnitudes; normal() draws have no ties
case("matrix_norm-1", lambda a: torch.linalg.matrix_norm(a, 1), normal(2, 3, 4))
case("matrix_norm-inf", lambda a: torch.linalg.matrix_norm(a, float("inf")), normal(3, 4))
case("matrix_norm--1", lambda a: torch.linalg.norm(a, -1, (0, 2), keepdim=True), normal(3, 2, 4))
case("matrix_norm--inf", lambda a: torch.linalg.norm(a, -float("inf")), normal(4, 3))
case("linalg_cond", torch.linalg.cond, well_conditioned(3, 3))
case("linalg_pinv", torch.linalg.pinv, normal(3, 2))
case("linalg_pinv-wide", torch.linalg.pinv, normal(2, 3))
case("linalg_matrix_exp", torch.linalg.matrix_exp, normal(3, 3) * 0.5)
case("matrix_exp-batched", torch.matrix_exp, normal(2, 2, 2))
case(
    "cholesky_solve",
    lambda b, x: torch.cholesky_solve(b, torch.linalg.cholesky(_spd(x))),
    normal(3, 2),
    normal(3, 3),
)
case(
    "cholesky_solve-upper",
    lambda b, x: torch.cholesky_solve(b, torch.linalg.cholesky(_spd(x), upper=True), upper=True),
    normal(3, 2),
    normal(3, 3),
)

case(
    "linalg_solve_triangular",
    lambda a, b: torch.linalg.solve_triangular(a, b, upper=True),
    well_conditioned(3, 3),
    normal(3, 2),
)
case(
    "linalg_solve_triangular-right-unit",
    lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
    normal(3, 3),
    normal(2, 3),
)
case(
    "cholesky_inverse",
    lambda x: torch.cholesky_inverse(torch.linalg.cholesky(_spd(x))),
    normal(3, 3),
)
case(
    "cholesky_inverse-upper",
    lambda u: torch.cholesky_inverse(u.triu(), upper=True),
    well_conditioned(3, 3),
)


# --- einsum, normalisation layers, folding ------------------------------------------------------
for _eq, _shapes in [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 2), (1, 2, 2, 2)]),
    ("ij->", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
]:
    case(f"einsum-{_eq}", lambda *ts, eq=_eq: torch.einsum(eq, *ts), *[normal(*s) for s in _shapes])
case("tensordot-2", lambda a, b: torch.tensordot(a, b, 2), normal(2, 3, 2), normal(3, 2, 2))
case("tensordot-dims", lambda a, b: torch.tensordot(a, b, ([0], [1])), normal(3, 2), normal(2, 3))
case(
    "tensordot-full",
    lambda a, b: torch.tensordot(a, b, ([0, 1], [1, 0])),
    normal(2, 3),
    normal(3, 2),
)

case("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), normal(2, 4, 3), normal(4), normal(4))
case("group_norm-plain", lambda x: F.group_norm(x, 3, eps=1e-3), normal(2, 6, 2))
case(
    "instance_norm",
    lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
    normal(2, 3, 4),
    normal(3),
    normal(3),
)
case("rms_norm", lambda x, w: F.rms_norm(x, (3,), w), normal(2, 3), normal(3))
case("local_response_norm", lambda x: F.local_response_norm(x, 3, alpha=0.1), normal(2, 4, 3))

case("unfold", lambda x: x.unfold(1, 3, 1), normal(2, 5))
case("unfold-step", lambda x: x.unfold(0, 2, 3), normal(7))
case("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), normal(1, 8, 2, 3))
case("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), normal(1, 2, 4, 2))
case(
    "masked_scatter",
    lambda x, s: x.masked_scatter(torch.tensor([[True, False, True], [False, True, True]]), s),
    normal(2, 3),
    normal(5),
)

case(
    "index_put-accumulate",
    lambda x, v: torch.index_put(x, (torch.tensor([0, 2, 0]),), v, accumulate=True),
    normal(3, 2),
    normal(3, 2),
)
case(
    "index_put-values",
    lambda x, v: torch.index_put(x, (torch.tensor([0, 2]),), v),
    normal(3, 2),
    normal(2),
)

case(
    "scaled_dot_product_attention",
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    normal(1, 2, 3, 2),
    normal(1, 2, 4, 2),
    normal(1, 2, 4, 2),
)
# branch attention: renorm (slices above maxnorm scaled down), the composite attention paths
case("renorm", lambda x: torch.renorm(x, 2, 0, 1.0), normal(3, 4))
case("renorm-p3-last-dim", lambda x: x.renorm(3, -1, 0.5), normal(3, 4))
case("renorm_", clone_of(lambda c: c.renorm_(2, 0, 1.0)), normal(3, 4))
case(
    "scaled_dot_product_attention-3d",
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
    normal(2, 3, 2),
    normal(2, 4, 2),
    normal(2, 4, 3),
)
# everyday calls (no NaN here: finite differences need numbers;
# tests/test_everyday_fixes_vs_torch.py compares NaN inputs with PyTorch)
case("nanmean-dim", lambda x: torch.nanmean(x, 1), normal(2, 3))

# nn functions, more (nbgrad/ops/nn_extra_kernels.py). Margins kept away from their kinks.
_TARGETS = torch.tensor([1, 0, 3])
for _p, _w in ((1, None), (2, torch.tensor([0.5, 1.0, 2.0, 1.5], dtype=torch.float64))):
    for _red in ("mean", "sum", "none"):
        case(
            f"multi_margin_loss-p{_p}-{_red}{'-weight' if _w is not None else ''}",
            lambda x, p=_p, w=_w, red=_red: F.multi_margin_loss(
                x, _TARGETS, p=p, margin=0.5, weight=w, reduction=red
            ),
            distinct(3, 4) / 4,
        )
for _red in ("mean", "none"):
    case(
        f"multilabel_margin_loss-{_red}",
        lambda x, red=_red: F.multilabel_margin_loss(
            x, torch.tensor([[1, 2, -1, 0], [3, 3, -1, 0], [-1, 0, 0, 0]]), reduction=red
        ),
        distinct(3, 4) / 4,
    )
case(
    "multilabel_margin_loss-1d",
    lambda x: F.multilabel_margin_loss(x, torch.tensor([2, 0, -1, 1])),
    distinct(4) / 2,
)
case("rrelu-eval", lambda x: F.rrelu(x), away(2, 3))
case("rrelu_-eval", clone_of(lambda x: F.rrelu(x, inplace=True)), away(2, 3))
case(
    "rrelu-training",
    lambda x: torch.rrelu(x, training=True, generator=torch.Generator().manual_seed(1)),
    away(2, 3),
)
case(
    "rrelu_-training",
    clone_of(lambda x: torch.rrelu_(x, training=True, generator=torch.Generator().manual_seed(1))),
    away(2, 3),
)
case(
    "_weight_norm-dim0", lambda v, g: torch._weight_norm(v, g, 0), normal(3, 2, 2), normal(3, 1, 1)
)
case("_weight_norm-last", lambda v, g: torch._weight_norm(v, g, 1), normal(2, 3), normal(3))
case(
    "conv_tbc",
    lambda x, w, b: torch.conv_tbc(x, w, b, 1),
    normal(4, 2, 3),
    normal(2, 3, 2),
    normal(2),
)
case(
    "_weight_norm-middle",
    lambda v, g: torch._weight_norm(v, g, 1),
    normal(2, 3, 2),
    normal(1, 3, 1),
)
case("_weight_norm-all", lambda v, g: torch._weight_norm(v, g, -1), normal(2, 3), normal())
case(
    "_ctc_loss-tensor-lengths",
    lambda x: torch._ctc_loss(
        x.log_softmax(2), torch.tensor([[1, 2], [2, 0]]), torch.tensor([4, 3]), torch.tensor([2, 1])
    )[0],
    normal(4, 2, 3),
)
# ctc_loss's gradient is ATen's, the true one once it passes the log_softmax that made log_probs.
for _zi, _targets, _lengths in (
    (False, [[1, 2], [2, 0]], (2, 1)),
    (True, [[1, 1], [2, 2]], (2, 2)),
):
    case(
        f"ctc_loss-zero_infinity={_zi}",
        lambda x, t=_targets, n=_lengths, zi=_zi: F.ctc_loss(
            x.log_softmax(2), torch.tensor(t), (4, 3), n, reduction="sum", zero_infinity=zi
        ),
        normal(4, 2, 3),
    )
for _mode in ("sum", "mean", "max"):
    case(
        f"embedding_bag-{_mode}",
        lambda w, mode=_mode: F.embedding_bag(
            torch.tensor([1, 2, 4, 0, 4, 3]), w, torch.tensor([0, 2, 2]), mode=mode, padding_idx=0
        ),
        distinct(5, 3),
        second=False,  # no derivative of _embedding_bag_backward, in PyTorch either
    )
case(
    "embedding_bag-per_sample_weights",
    lambda w, p: F.embedding_bag(
        torch.tensor([[1, 2, 4], [0, 4, 3]]), w, mode="sum", per_sample_weights=p
    ),
    normal(5, 3),
    normal(2, 3),
    second=False,  # (as above)
)
case(
    "fractional_max_pool2d",
    lambda x: F.fractional_max_pool2d(
        x,
        2,
        output_size=(3, 2),
        _random_samples=torch.tensor([[[0.3, 0.8], [0.6, 0.1]]], dtype=torch.float64),
    ),
    distinct(1, 2, 5, 4),
)
case(
    "fractional_max_pool3d",
    lambda x: F.fractional_max_pool3d(
        x, 2, output_size=2, _random_samples=torch.tensor([[[0.3, 0.8, 0.5]]], dtype=torch.float64)
    ),
    distinct(1, 1, 4, 3, 4),
)
case(
    "_masked_softmax",
    lambda x: torch._masked_softmax(x, torch.tensor([[True, False, False], [False, False, True]])),
    normal(2, 3),
)
# embedding_renorm_ has no backward (in PyTorch either): recorded, not reached.
case(
    "embedding_renorm_",
    lambda x: x * 1 + 0 * torch.embedding_renorm_(x * 1, torch.tensor([0, 2]), 1.0, 2.0).detach(),
    normal(3, 2),
)
case(
    "affine_grid-2d", lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False), normal(2, 2, 3)
)
case(
    "affine_grid-3d",
    lambda t: F.affine_grid(t, (1, 1, 2, 3, 2), align_corners=True),
    normal(1, 3, 4),
)


# --- linear algebra, more: the LU family, legacy solvers (branch linalg2) ---------------------
# Well-conditioned matrices (see well_conditioned above), square, tall and wide; the deprecated
# triangular_solve and cholesky under their warnings.


def _diagonal_heavy(*shape):
    """Like well_conditioned, for m x n too: pivots stay put under finite differences."""
    return normal(*shape) * 0.3 + 2.0 * np.eye(*shape[-2:])


def _lu_product(a):
    p, lower, upper = torch.linalg.lu(a)
    return lower @ upper


def _deprecated(fn):
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)

    return run


case("linalg_lu_factor", lambda a: torch.linalg.lu_factor(a).LU, well_conditioned(3, 3))
case("linalg_lu_factor-tall", lambda a: torch.linalg.lu_factor(a).LU, _diagonal_heavy(4, 3))
case("linalg_lu_factor-wide", lambda a: torch.linalg.lu_factor_ex(a).LU, _diagonal_heavy(2, 4))
case("linalg_lu", lambda a: tuple(torch.linalg.lu(a)[1:]), well_conditioned(2, 3, 3))
case("linalg_lu-tall", _lu_product, _diagonal_heavy(4, 3))
case("linalg_lu-wide", _lu_product, _diagonal_heavy(3, 5))
case(
    "lu_unpack",
    lambda a: tuple(torch.lu_unpack(a, torch.tensor([2, 3, 3], dtype=torch.int32))[1:]),
    normal(3, 3),
)
case(
    "lu_unpack-tall",
    lambda a: tuple(torch.lu_unpack(a, torch.tensor([3, 2], dtype=torch.int32))[1:]),
    normal(4, 2),
)
case(
    "lu_unpack-wide",
    lambda a: tuple(torch.lu_unpack(a, torch.tensor([2, 2], dtype=torch.int32))[1:]),
    normal(2, 4),
)
case(
    "linalg_lu_solve",
    lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b),
    well_conditioned(3, 3),
    normal(3, 2),
)
case(
    "linalg_lu_solve-adjoint-batched",
    lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, adjoint=True),
    well_conditioned(2, 3, 3),
    normal(3, 2),
)
case(
    "linalg_lu_solve-right",
    lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, left=False),
    well_conditioned(3, 3),
    normal(2, 3),
)
case(
    "linalg_lu_solve-right-adjoint",
    lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, left=False, adjoint=True),
    well_conditioned(3, 3),
    normal(2, 3),
)
case(
    "lu_solve-packed",
    lambda lu, b: torch.linalg.lu_solve(lu, torch.tensor([3, 2, 3], dtype=torch.int32), b),
    well_conditioned(3, 3),
    normal(3, 2),
)
case(
    "triangular_solve",
    _deprecated(lambda b, a: tuple(torch.triangular_solve(b, a))),
    normal(3, 2),
    well_conditioned(3, 3),
)
case(
    "triangular_solve-lower-transpose-unit",
    _deprecated(
        lambda b, a: tuple(
            torch.triangular_solve(b, a, upper=False, transpose=True, unitriangular=True)
        )
    ),
    normal(2, 3, 2),
    normal(3, 3),
)
case("cholesky-legacy", _deprecated(lambda x: torch.cholesky(_spd(x))), normal(3, 3))
case(
    "cholesky-legacy-upper",
    _deprecated(lambda x: torch.cholesky(_spd(x), upper=True)),
    normal(2, 3, 3),
)


# --- distances and bilinear (branch linalg2) ---------------------------------------------------
# PyTorch does not differentiate cdist's and pdist's backwards (second=False; that a second
# derivative raises is checked against PyTorch in test_linalg_more_vs_torch.py). Distinct rows:
# no distance is 0, and no difference is 0 for p < 1 or ties for p = inf.

for _p in (0, 1, 2, 3, 0.5, 1.5, float("inf")):
    case(
        f"cdist-p{_p}",
        lambda a, b, p=_p: torch.cdist(a, b, p=p),
        distinct(2, 3),
        normal(4, 3),
        second=False,
    )
    case(f"pdist-p{_p}", lambda a, p=_p: F.pdist(a, p), distinct(4, 3), second=False)
case(
    "cdist-batched",
    lambda a, b: torch.cdist(a, b, p=1),
    normal(2, 2, 3),
    normal(4, 3),
    second=False,
)
case(
    "cdist-mm",
    lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
    normal(2, 3),
    normal(4, 3),
)
case(
    "cdist-mm-batched",
    lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
    normal(2, 2, 3),
    normal(3, 3),
)
case("bilinear", F.bilinear, normal(2, 3), normal(2, 4), normal(5, 3, 4), normal(5))
case("bilinear-batched", F.bilinear, normal(2, 2, 3), normal(2, 2, 4), normal(5, 3, 4))


# --- matrix_power, vecdot, multi_dot (branch linalg2): compositions of clone, copy_, inv, mm --
for _n in (0, 1, 2, 3, 5, -1, -2):
    case(
        f"matrix_power-{_n}",
        lambda a, n=_n: torch.linalg.matrix_power(a, n),
        well_conditioned(3, 3),
    )
case("matrix_power-batched", lambda a: a.matrix_power(4), well_conditioned(2, 2, 2) * 0.5)
case("vecdot", torch.linalg.vecdot, normal(2, 3), normal(3))
case("vecdot-vectors", torch.linalg.vecdot, normal(3), normal(3))
case("vecdot-dim", lambda x, y: torch.linalg.vecdot(x, y, dim=0), normal(2, 3), normal(2, 1))
case("multi_dot", lambda *ts: torch.linalg.multi_dot(ts), normal(3), normal(3, 4), normal(4))
case(
    "multi_dot-4",
    lambda *ts: torch.linalg.multi_dot(ts),
    normal(5, 2),
    normal(2, 4),
    normal(4, 3),
    normal(3, 1),
)


# --- Householder reflectors (branch linalg2): geqrf's packing of a QR factorization -------------
_reflectors, _scales = np.linalg.qr(normal(2, 4, 3), mode="raw")
_packed = np.swapaxes(_reflectors, -1, -2)
case("householder_product", torch.linalg.householder_product, _packed, _scales)
case("householder_product-fewer", lambda a, t: torch.orgqr(a, t[..., :2]), _packed[0], _scales[0])
case("ormqr", torch.ormqr, _packed[0], _scales[0], normal(4, 2))
case(
    "ormqr-transpose",
    lambda a, t, c: torch.ormqr(a, t, c, transpose=True),
    _packed,
    _scales,
    normal(2, 4, 2),
)
case(
    "ormqr-right",
    lambda a, t, c: torch.ormqr(a, t, c, left=False),
    _packed[1],
    _scales[1],
    normal(2, 4),
)
case(
    "ormqr-right-transpose",
    lambda a, t, c: torch.ormqr(a, t, c, left=False, transpose=True),
    _packed[1],
    _scales[1],
    normal(2, 4),
)
# --- least squares (branch linalg2) ---------------------------------------------------------------
case("lstsq", lambda a, b: torch.linalg.lstsq(a, b).solution, _diagonal_heavy(4, 3), normal(4, 2))
case(
    "lstsq-wide",
    lambda a, b: torch.linalg.lstsq(a, b).solution,
    _diagonal_heavy(2, 3),
    normal(2, 2),
)
case(
    "lstsq-vector", lambda a, b: torch.linalg.lstsq(a, b).solution, _diagonal_heavy(4, 3), normal(4)
)
case(
    "lstsq-residuals",
    lambda a, b: tuple(torch.linalg.lstsq(a, b, driver="gelsd")[:2]),
    _diagonal_heavy(2, 4, 3),
    normal(2, 4, 2),
)
# geqrf has no derivative (PyTorch raises, as test_linalg_more_vs_torch.py checks); this case
# only runs its entry, for test_every_table_entry_is_exercised.
case("geqrf", lambda a: torch.geqrf(torch.tensor(_packed[0])).a * a, normal(4, 3))


# --- packed sequences, 3-d convolution, unpooling, channel shuffle, more upsampling --------------
case(
    "pack_padded_sequence",
    lambda x: torch.nn.utils.rnn.pack_padded_sequence(x, [3, 3, 1]).data,
    normal(3, 3, 2),
)
case(
    "pack_padded_sequence-batch_first",
    lambda x: torch.nn.utils.rnn.pack_padded_sequence(x, [2, 3], True, False).data,
    normal(2, 3, 2),
)
case("channel_shuffle", lambda x: torch.channel_shuffle(x, 2), normal(2, 4, 3))
case(
    "max_unpool2d",
    lambda x: F.max_unpool2d(x, torch.tensor([[[[0, 3], [9, 14]]]]), 2, output_size=(4, 4)),
    normal(1, 1, 2, 2),
)
case(
    "max_unpool3d",
    lambda x: F.max_unpool3d(x, torch.tensor([[[[[0, 7]]]]]), (1, 2, 2), output_size=(1, 2, 4)),
    normal(1, 1, 1, 1, 2),
)
case(
    "convolution3d",
    lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1), groups=2),
    normal(1, 2, 2, 3, 2),
    normal(2, 1, 2, 2, 1),
    normal(2),
)
case("upsample_trilinear3d", lambda x: F.interpolate(x, scale_factor=2, mode="trilinear"),
     normal(1, 1, 2, 2, 3))  # fmt: skip
case("upsample_nearest3d", lambda x: F.interpolate(x, size=(3, 2, 4)), normal(1, 1, 2, 2, 3))
case("upsample_nearest_exact3d", lambda x: F.interpolate(x, size=(3, 2, 4), mode="nearest-exact"),
     normal(1, 1, 2, 2, 3))  # fmt: skip
case("upsample_bicubic2d", lambda x: F.interpolate(x, size=(5, 3), mode="bicubic"),
     normal(1, 2, 3, 4))  # fmt: skip
case(
    "convolution_transposed3d",
    lambda x, w, b: F.conv_transpose3d(x, w, b, stride=(2, 1, 1), padding=(0, 1, 0), groups=2),
    normal(1, 2, 2, 2, 1),
    normal(2, 1, 2, 2, 2),
    normal(2),
)
case(
    "_upsample_bilinear2d_aa",
    lambda x: F.interpolate(x, size=(2, 5), mode="bilinear", antialias=True),
    normal(1, 1, 5, 3),
)
case(
    "_upsample_bicubic2d_aa",
    lambda x: F.interpolate(x, scale_factor=0.6, mode="bicubic", antialias=True),
    normal(1, 1, 5, 4),
)
case(
    "max_unpool1d-unbatched",
    lambda x: F.max_unpool1d(x, torch.tensor([[1, 2, 5]]), 2, stride=2),
    normal(1, 3),
)

# --- special functions (branch special) ---
S = torch.special
GAMMA_ARGS = RNG.uniform(0.6, 3.0, (2, 3))  # away from the poles of digamma and polygamma
case("lgamma", torch.lgamma, GAMMA_ARGS)
case("lgamma-negative", torch.lgamma, -GAMMA_ARGS + 0.05 * (GAMMA_ARGS % 1 < 0.5))
case("lgamma_", clone_of(lambda c: c.lgamma_()), GAMMA_ARGS)
case("digamma", torch.digamma, GAMMA_ARGS)
case("digamma-negative", lambda x: x.digamma(), np.array([-0.4, -1.3, -2.6]))
case("polygamma-1", lambda x: torch.polygamma(1, x), GAMMA_ARGS)
case("polygamma-3", lambda x: x.polygamma(3), GAMMA_ARGS)
case("polygamma_", clone_of(lambda c: c.polygamma_(2)), GAMMA_ARGS)
case("mvlgamma", lambda x: torch.mvlgamma(x, 3), GAMMA_ARGS + 1.5)
case("mvlgamma_", clone_of(lambda c: c.mvlgamma_(2)), GAMMA_ARGS + 1)
case("i0", torch.i0, normal(2, 3) * 3)
case("i0_", clone_of(lambda c: c.i0_()), normal(2, 3))
case("special.i0e", S.i0e, away(2, 3) * 3)
case("special.i1", S.i1, normal(2, 3) * 3)
case("special.i1-at-0", S.i1, np.array([0.0, 0.3]), second=False)
case("special.i1e", S.i1e, away(2, 3) * 3)
case("special.entr", S.entr, positive(2, 3))
case("special.ndtri", S.ndtri, RNG.uniform(0.05, 0.95, (2, 3)))
case("special.log_ndtr", S.log_ndtr, normal(2, 3) * 4)
case("special.erfcx", S.erfcx, RNG.uniform(-1.5, 3.0, (2, 3)))
case("special.xlog1py", S.xlog1py, normal(2, 3), positive(2, 3))
case("special.xlog1py-number-self", lambda y: S.xlog1py(2.5, y), positive(2, 3))
case("special.xlog1py-number-other", lambda x: S.xlog1py(x, 0.5), normal(2, 3))
case("igamma", lambda x: torch.igamma(torch.tensor(GAMMA_ARGS), x), positive(2, 3))
case("igamma_", lambda x: torch.tensor(GAMMA_ARGS).igamma_(x), positive(2, 3))
case("igammac", lambda x: torch.igammac(torch.tensor(GAMMA_ARGS), x), positive(2, 3))
case("special.zeta", lambda q: S.zeta(torch.tensor(GAMMA_ARGS + 1.5), q), positive(2, 3))
case("special.zeta-number-self", lambda q: S.zeta(3.0, q), positive(2, 3))
# zeta's derivative in s is not implemented (PyTorch's neither): the entry runs on a constant
case(
    "special.zeta-number-other",
    lambda q: q * S.zeta(torch.tensor(GAMMA_ARGS + 1), 2.0),
    positive(2, 3),
)

# --- element-wise, more (branch special) ---
case("fmax", torch.fmax, distinct(2, 3), distinct(2, 3) + 0.1)
case("fmax-nan", lambda x: x.fmax(torch.tensor([1.0, float("nan"), 1.0])), normal(2, 3))
case("fmin", torch.fmin, distinct(2, 3), distinct(3) + 0.1)
case("nextafter", torch.nextafter, normal(2, 3), normal(2, 3))
case("nextafter_", clone_of(lambda c, y: c.nextafter_(y)), normal(2, 3), normal(3))
# (non-negative: for a negative integer exponent PyTorch's gradient is 0, see the entry)
case("ldexp-int", lambda x: torch.ldexp(x, torch.tensor([[1, 2, 0], [3, 0, 1]])), normal(2, 3))
case("ldexp-float", torch.ldexp, normal(2, 3), normal(2, 3))
case("ldexp_", clone_of(lambda c, y: c.ldexp_(y)), normal(2, 3), normal(3))
case("frexp", lambda x: torch.frexp(x).mantissa, away(2, 3) * 3)
case("angle", torch.angle, away(2, 3))
case("rsub-tensor", lambda x, y: torch.rsub(x, y, alpha=2), normal(2, 3), normal(3))
case("div-rounding-None", lambda x, y: torch.div(x, y, rounding_mode=None), normal(2, 3), away(3))
case(
    "div_-floor",
    clone_of(lambda c, y: c.div_(y, rounding_mode="floor") * y),
    normal(2, 3) + 0.5,
    np.array([0.7, 1.3, 2.1]),
)

# --- in place: comparisons, squeeze_, unsqueeze_, t_; fill (branch special) ---
for _cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
    case(f"{_cmp}_", clone_of(lambda c, cmp=_cmp: getattr(c, cmp + "_")(0.3) * c), normal(2, 3))
    case(
        f"{_cmp}_-tensor",
        lambda x, y, cmp=_cmp: getattr(x * 1, cmp + "_")(y) + x * y,
        normal(2, 3),
        normal(3),
    )
case("squeeze_", lambda x: (x * 1).unsqueeze(0).squeeze_() * x, normal(2, 3))
case("squeeze_-dim", lambda x: (x * 2).squeeze_(1), normal(2, 1, 3))
case("squeeze_-dims", lambda x: (x * 2).squeeze_((0, 2)), normal(1, 3, 1))
case("squeeze-dims", lambda x: x.squeeze((0, -1)), normal(1, 3, 1))
case("unsqueeze_", lambda x: (x * 2).unsqueeze_(-1), normal(2, 3))
case("t_", lambda x: (x * 2).t_(), normal(2, 3))
case("fill", lambda x: torch.fill(x, 2.0) * x, normal(2, 3))
case("fill-tensor", lambda x, v: torch.fill(x, v.sum()) * x, normal(2, 3), normal(2))

# --- reductions, more: nansum, nanmedian, aminmax (branch special) ---
AT_1 = torch.tensor([[False, True, False], [False, False, False]])
case("nansum", lambda x: torch.nansum(x.masked_fill(AT_1, float("nan"))), normal(2, 3))
case("nansum-dim", lambda x: x.nansum((0,), keepdim=True), normal(2, 3))
case("nansum-dim-1", lambda x: torch.nansum(x, 1, dtype=torch.float64), normal(2, 3))
case("nanmedian", lambda x: torch.nanmedian(x), distinct(2, 3))
case("nanmedian-dim", lambda x: x.nanmedian(1).values, distinct(2, 3))
case("aminmax", lambda x: torch.aminmax(x), distinct(2, 3))
case("aminmax-dim", lambda x: x.aminmax(dim=0, keepdim=True), distinct(2, 3))

# --- scatters into a view's place, copies of views (branch special) ---
case(
    "slice_scatter", lambda x, s: torch.slice_scatter(x, s, 1, 0, 3, 2), normal(2, 4), normal(2, 2)
)
case("select_scatter", lambda x, s: x.select_scatter(s, 0, -1), normal(2, 3), normal(3))
case("diagonal_scatter", lambda x, s: torch.diagonal_scatter(x, s, 1), normal(3, 4), normal(3))
case(
    "diagonal_scatter-dims",
    lambda x, s: x.diagonal_scatter(s, -1, 2, 0),
    normal(3, 2, 4),
    normal(2, 3),
)
case("narrow_copy", lambda x: x.narrow_copy(1, -3, 2), normal(2, 4))
case("unsafe_split_with_sizes", lambda x: torch.unsafe_split_with_sizes(x, [1, 3], 1), normal(2, 4))
case("_safe_softmax", lambda x: torch._safe_softmax(x, 1), normal(2, 3))

# --- index_fill with a tensor value, put (branch special) ---
case(
    "index_fill-tensor",
    lambda x, v: x.index_fill(1, torch.tensor([0, 2, 0]), v.sum()),
    normal(2, 3),
    normal(2),
)
case(
    "index_fill_-tensor",
    clone_of(lambda c, v: c.index_fill_(0, torch.tensor([1]), v.sum())),
    normal(2, 3),
    normal(1),
)
case(
    "put", lambda x, s: torch.put(x, torch.tensor([[0, -1], [3, 2]]), s), normal(2, 3), normal(2, 2)
)
case(
    "put-accumulate",
    lambda x, s: x.put(torch.tensor([0, 4, 0]), s, accumulate=True),
    normal(2, 3),
    normal(3),
)
case("put_", clone_of(lambda c, s: c.put_(torch.tensor([1, 5]), s)), normal(2, 3), normal(2))
# branch everyday: grouped query attention, the fused node (4-d, as many key as value heads) and
# the composite path (key and value with different numbers of heads; 3-d)
case(
    "scaled_dot_product_attention-gqa",
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
    normal(1, 4, 3, 2),
    normal(1, 2, 4, 2),
    normal(1, 2, 4, 2),
)
case(
    "scaled_dot_product_attention-gqa-causal-scale",
    lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.7, enable_gqa=True
    ),
    normal(2, 4, 3, 2),
    normal(2, 1, 4, 2),
    normal(2, 1, 4, 3),
)
case(
    "scaled_dot_product_attention-gqa-composite",
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
    normal(1, 4, 3, 2),
    normal(1, 2, 4, 2),
    normal(1, 4, 4, 2),
)
case(
    "scaled_dot_product_attention-gqa-3d",
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
    normal(4, 3, 2),
    normal(2, 4, 2),
    normal(2, 4, 2),
)


# --- grid sampling (issue 13): every mode and padding, grid points inside and outside ---
for _mode, _padding, _corners in [
    ("bilinear", "zeros", False),
    ("bilinear", "border", True),
    ("bilinear", "reflection", True),
    ("nearest", "zeros", False),
    ("bicubic", "zeros", True),
    ("bicubic", "reflection", False),
]:
    case(
        f"grid_sample-{_mode}-{_padding}-{'corners' if _corners else 'edges'}",
        lambda x, g, m=_mode, p=_padding, a=_corners: F.grid_sample(
            x, g, mode=m, padding_mode=p, align_corners=a
        ),
        normal(1, 2, 3, 4),
        RNG.uniform(-1.4, 1.4, (1, 2, 2, 2)),
    )
case(
    "grid_sample-3d",
    lambda x, g: F.grid_sample(x, g, padding_mode="border", align_corners=False),
    normal(1, 1, 2, 3, 2),
    RNG.uniform(-1.3, 1.3, (1, 1, 1, 2, 3)),
)
case(
    "grid_sample-affine_grid",
    lambda x, t: F.grid_sample(
        x, F.affine_grid(t, (1, 1, 2, 2), align_corners=False), align_corners=False
    ),
    normal(1, 1, 3, 3),
    np.array([[[0.9, 0.2, 0.1], [-0.15, 1.1, -0.05]]]),
)


# unique's values have no derivative (in PyTorch either: backward raises, as
# test_unique_vs_torch.py checks): recorded, not reached.
case(
    "unique-recorded",
    lambda x: (
        x * 1
        + 0
        * (
            torch.unique(x * 1).sum()
            + torch.unique(x * 1, dim=1).sum()
            + torch.unique_consecutive(x * 1).sum()
            + torch._unique(x * 1)[0].sum()
        ).detach()
    ),
    normal(2, 3),
)


# --- scatter_reduce, index_reduce (issue 13): distinct values, so no ties for amax/amin ---
_REDUCE_INDEX = torch.tensor([[0, 1, 0], [1, 1, 1]])
for _reduce in ("sum", "prod", "mean", "amax", "amin"):
    for _include in (True, False):
        case(
            f"scatter_reduce-{_reduce}-{'with' if _include else 'without'}-self",
            lambda x, s, r=_reduce, i=_include: x.scatter_reduce(
                1, _REDUCE_INDEX, s, r, include_self=i
            ),
            distinct(2, 3),
            distinct(2, 3) + 0.05,
        )


def _index_reduce(x, s, reduce, include_self):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's beta warning)
        return x.index_reduce(1, torch.tensor([0, 2, 0]), s, reduce, include_self=include_self)


for _reduce in ("prod", "mean", "amax", "amin"):
    case(
        f"index_reduce-{_reduce}",
        lambda x, s, r=_reduce, i=_reduce != "mean": _index_reduce(x, s, r, i),
        distinct(2, 3),
        distinct(2, 3) + 0.05,
    )


# native_dropout without randomness: p = 0 keeps everything; train=False is the identity.
case("native_dropout-p0", lambda x: torch.native_dropout(x, 0.0, True)[0] * x, normal(2, 3))
case("native_dropout-eval", lambda x: torch.native_dropout(x * x, 0.4, False)[0], normal(2, 3))


case("as_strided_", lambda x: (x * 1).as_strided_((2, 2), (1, 2), 1), normal(2, 3))
case("as_strided_-overlapping", lambda x: (x * 1).as_strided_((2, 2), (1, 1)), normal(2, 3))


# --- batch norm's legit entry points (branch bnlegit): fresh running statistics per call -------
def _legit(x, w, b, training):
    stats = double([0.5, -1.0]), double([2.0, 0.5])
    return torch._native_batch_norm_legit(x, w, b, *stats, training, 0.1, 1e-5)[0]


case("_native_batch_norm_legit-training", lambda x, w, b: _legit(x, w, b, True),
     normal(3, 2, 2), normal(2), normal(2))  # fmt: skip
case("_native_batch_norm_legit-eval", lambda x, w, b: _legit(x, w, b, False),
     normal(3, 2), normal(2), normal(2))  # fmt: skip
case(
    "_native_batch_norm_legit-no_stats",
    lambda x, w, b: torch._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5)[0],
    normal(4, 2),
    normal(2),
    normal(2),
)
case(
    "_native_batch_norm_legit_no_training",
    lambda x, w, b: torch._native_batch_norm_legit_no_training(
        x, w, b, double([0.5, -1.0]), double([2.0, 0.5]), 0.1, 1e-5
    ),
    normal(3, 2, 2),
    normal(2),
    normal(2),
)
# --- double backwards of pooling and masked_scatter; segment_reduce (branch ddmore) -------------
# fractional_max_pool2d/3d and masked_scatter above reach their *_backward entries through their
# second derivatives; these add an unbatched pool and a broadcast mask. segment_reduce's backward
# has no derivative (in PyTorch either: tests/test_ddmore_vs_torch.py): first order only, with
# distinct values, so no ties for max and min, and no empty segments (mean, max and min are
# nan or infinite there; tests/test_ddmore_vs_torch.py compares those with PyTorch).
case(
    "fractional_max_pool2d-unbatched",
    lambda x: F.fractional_max_pool2d(
        x,
        (2, 3),
        output_size=(2, 2),
        _random_samples=torch.tensor([[[0.7, 0.2]]], dtype=torch.float64),
    ),
    distinct(1, 4, 5),
)
case(
    "masked_scatter-broadcast-mask",
    lambda x, s: x.masked_scatter(torch.tensor([True, False, True]), s),
    normal(2, 3),
    normal(5),
)
_SEGMENT_LENGTHS = torch.tensor([2, 1, 2, 1])  # no empty segment: its max is -inf
for _reduce in ("sum", "mean", "max", "min", "prod"):
    case(
        f"segment_reduce-{_reduce}",
        lambda d, r=_reduce: torch.segment_reduce(d, r, lengths=_SEGMENT_LENGTHS),
        distinct(6, 2),
        second=False,
    )
    case(
        f"segment_reduce-{_reduce}-offsets-axis1-initial",
        lambda d, r=_reduce: torch.segment_reduce(
            d, r, offsets=torch.tensor([[0, 1, 4], [0, 3, 4]]), axis=1, initial=0.5
        ),
        distinct(2, 4, 2),
        second=False,
    )
# --- private convolutions, grid sampler fallback, lanczos, grouped mm (convs) -------------------
# torch._convolution takes any dtype; the others are float32 only in PyTorch (float16 too for
# _grouped_mm), so their cases run nbgrad's table entry in float64, as mkldnn_rnn_layer's does.
case(
    "_convolution",
    lambda x, w, b: torch._convolution(
        x, w, b, [2, 1], [1, 0], [1, 2], False, [0, 0], 1, False, False, True, True
    ),
    normal(1, 2, 4, 5),
    normal(3, 2, 2, 2),
    normal(3),
)
case(
    "_convolution-transposed-groups-1d",
    lambda x, w: torch._convolution(
        x, w, None, [2], [1], [1], True, [1], 2, False, False, True, True
    ),
    normal(1, 4, 3),
    normal(4, 1, 3),
)
case(
    "_convolution-3d",
    lambda x, w: torch._convolution(
        x, w, None, [1, 1, 2], [0, 1, 0], [1, 1, 1], False, [0, 0, 0], 1, False, False, True, True
    ),
    normal(1, 1, 2, 3, 3),
    normal(2, 1, 2, 2, 2),
)
case(
    "mkldnn_convolution",
    lambda x, w, b: run_op(
        OPS["mkldnn_convolution"], (x, w, b), ((1, 0), (1, 2), (2, 1), 1, (3,), False, (0, 0))
    ),
    normal(1, 2, 4, 5),
    normal(3, 2, 2, 2),
    normal(3),
)
case(
    "_nnpack_spatial_convolution",
    lambda x, w, b: run_op(
        OPS["_nnpack_spatial_convolution"],
        (x, w, b),
        ((1, 0), (2, 1), (3,), (1, 1), False, (0, 0), 1),
    ),
    normal(2, 2, 3, 4),
    normal(3, 2, 2, 2),
    normal(3),
)
for _mode in (0, 2):  # bilinear, bicubic (nearest has no gradient for the grid)
    case(
        f"_grid_sampler_2d_cpu_fallback-{_mode}",
        lambda x, g, m=_mode: run_op(OPS["_grid_sampler_2d_cpu_fallback"], (x, g), (m, 1, False)),
        normal(1, 2, 3, 4),
        RNG.uniform(-1.1, 1.1, (1, 2, 2, 2)),
    )
case(
    "_upsample_lanczos2d_aa",
    lambda x: F.interpolate(x, size=(3, 4), mode="lanczos", antialias=True),
    normal(1, 2, 5, 3),
)
case(
    "_upsample_lanczos2d_aa-scale",
    lambda x: F.interpolate(x, scale_factor=(0.7, 1.6), mode="lanczos", antialias=True),
    normal(1, 1, 4, 3),
)


def _grouped_mm(a, b, offs=None):
    """_grouped_mm's entry in float64, with the attributes its function passes."""
    attrs = (offs, tuple(a.shape), a.stride(), tuple(b.shape), b.stride())
    return run_op(OPS["_grouped_mm"], (a, b), attrs)


_OFFS = np.array([1, 3], dtype=np.int32)
case("_grouped_mm-3d-3d", _grouped_mm, normal(2, 2, 3), normal(2, 3, 2))
case("_grouped_mm-2d-3d", lambda a, b: _grouped_mm(a, b, _OFFS), normal(3, 2), normal(2, 2, 3))
case("_grouped_mm-3d-2d", lambda a, b: _grouped_mm(a, b, _OFFS), normal(2, 2, 3), normal(3, 3))
case("_grouped_mm-2d-2d", lambda a, b: _grouped_mm(a, b, _OFFS), normal(2, 3), normal(3, 2))
# --- PyTorch's private indexing ops, as_strided_scatter, slice_inverse, _lazy_clone, _neg_view ---
_ROWS = torch.tensor([0, 2, 1])
_REPEATED_ROWS = torch.tensor([0, 0, 2])
_ROW_MASK = torch.tensor([[True], [False], [True]])
case("_unsafe_index", lambda x: torch._unsafe_index(x, [_ROWS]) * x, normal(3, 4))
case(
    "_unsafe_index-two",
    lambda x: torch._unsafe_index(x, (_REPEATED_ROWS, torch.tensor([3, 1, 0]))),
    normal(3, 4),
)
case(
    "_unsafe_index_put",
    lambda x, v: torch._unsafe_index_put(x, [_ROWS], v),
    normal(3, 4),
    normal(4),
)
case(
    "_unsafe_index_put-accumulate",
    lambda x, v: torch._unsafe_index_put(x * x, [_REPEATED_ROWS], v, True),
    normal(3, 4),
    normal(3, 4),
)
case(
    "_index_put_impl_",
    clone_of(lambda x, v: torch._index_put_impl_(x, (_ROWS,), v * v)),
    normal(3, 4),
    normal(3, 4),
)
case(
    "_index_put_impl_-accumulate",
    clone_of(lambda x, v: torch._index_put_impl_(x, [_REPEATED_ROWS], v, True, True)),
    normal(3, 4),
    normal(4),
)
case(
    "_unsafe_masked_index",
    lambda x: torch._unsafe_masked_index(x * x, _ROW_MASK, [torch.tensor([0, 9, 1])], 0.5),
    normal(3, 4),
)
case(
    "_unsafe_masked_index_put_accumulate",
    lambda x, v: torch._unsafe_masked_index_put_accumulate(
        x, _ROW_MASK, [torch.tensor([1, -7, 1])], v * v
    ),
    normal(3, 4),
    normal(3, 4),
)
case(
    "as_strided_scatter",
    lambda x, s: torch.as_strided_scatter(x, s, (2, 2), (1, 4), 3) * 2,
    normal(3, 4),
    normal(2, 2),
)
case(
    "as_strided_scatter-method",
    lambda s: torch.zeros(3, 4, dtype=torch.float64).as_strided_scatter(s * s, (2, 3), (4, 1)),
    normal(2, 3),
)
# slice_inverse(b[1:3], b) reads b's own memory, and its formulas give b its whole gradient.
case("slice_inverse", lambda b: torch.slice_inverse(b[1:3], b, 0, 1, 3) * b, normal(4, 3))
case("slice_inverse-method", lambda b: (b * 1)[:, 1:].slice_inverse(b * 1, 1, 1), normal(2, 4))
case("_lazy_clone", lambda x: torch._lazy_clone(x) * x, normal(2, 3))
case("_neg_view", lambda x: x.t()._neg_view() * 2, normal(2, 3))
# Fake quantization rounds: its result is flat between rounding steps, and PyTorch's gradient for
# the input is the straight-through one (1 inside the range, 0 where the value is clamped), not
# the derivative of a step function. Finite differences can check it only where the two agree:
# on clamped values (every input below lies beyond the range, at least 0.3 from its edge), where
# the result is constant and the gradient 0; the x * x beside it keeps the check meaningful. The
# scale's gradient there is (quant_min or quant_max) - zero_point, the true derivative of the
# clamped value. The zero point's gradient (-scale, with the zero point rounded in the forward)
# is no derivative at all, nor is the gradients' grad_factor (1 here): both are compared with
# PyTorch in tests/test_fake_quantize_vs_torch.py. The
# learnable variants' backward takes float32 only (as PyTorch's), hence the casts, the larger
# eps and tolerances, and second=False: PyTorch does not differentiate that backward (a
# gradient taken with create_graph has a NotImplemented grad_fn, compared with PyTorch there).


def _clamped(*shape):
    return RNG.choice([-1.0, 1.0], shape) * RNG.uniform(1.0, 2.0, shape)


_FQ_INT_ZERO = torch.tensor([1], dtype=torch.int32)
case(
    "fake_quantize_per_tensor_affine-clamped",
    lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 1, -6, 6) + x * x,
    _clamped(2, 3),
)
case(
    "fake_quantize_per_tensor_affine-tensor_qparams-clamped",
    lambda x: (
        torch.fake_quantize_per_tensor_affine(x, torch.tensor([0.1]), _FQ_INT_ZERO, -6, 6) + x * x
    ),
    _clamped(2, 3),
)
case(
    "fake_quantize_per_channel_affine-clamped",
    lambda x: (
        torch.fake_quantize_per_channel_affine(
            x, torch.tensor([0.1, 0.05, 0.1]), torch.tensor([0, 1, -1], dtype=torch.int32), 1, -6, 6
        )
        + x * x
    ),
    _clamped(2, 3),
)
case(
    "_fake_quantize_learnable_per_tensor_affine-clamped",
    lambda x, s: (
        torch._fake_quantize_learnable_per_tensor_affine(
            x.float(), s.float(), torch.tensor([1.2]), -6, 6, 1.0
        ).double()
        + x * x
    ),
    _clamped(2, 3),
    np.array([0.1]),
    second=False,
    eps=1e-3,
    rtol=1e-3,
    atol=1e-3,
)
case(
    "_fake_quantize_learnable_per_channel_affine-clamped",
    lambda x, s: (
        torch._fake_quantize_learnable_per_channel_affine(
            x.float(), s.float(), torch.tensor([0.0, -1.0]), 0, -6, 6
        ).double()
        + x * x
    ),
    _clamped(2, 3),
    np.array([0.1, 0.05]),
    second=False,
    eps=1e-3,
    rtol=1e-3,
    atol=1e-3,
)


def _fused_observer(x, observer_on, fake_quant_on, low, high):
    return torch._fused_moving_avg_obs_fq_helper(
        x,
        torch.tensor([observer_on]),
        torch.tensor([fake_quant_on]),
        torch.tensor([low]),
        torch.tensor([high]),
        torch.ones(1),
        torch.zeros(1, dtype=torch.int32),
        0.01,
        0,
        255,
        0,
    )[0]


# The fused observer with fake quantization off is the identity (mask all True); on, with a
# running range of [-0.1, 0.1] fixed (observer off), it clamps these inputs.
case(
    "_fused_moving_avg_obs_fq_helper-off",
    lambda x: _fused_observer(x, 0, 0, 0.0, 1.0) * x,
    normal(2, 3),
)
case(
    "_fused_moving_avg_obs_fq_helper-clamped",
    lambda x: _fused_observer(x, 0, 1, -0.1, 0.1) + x * x,
    _clamped(2, 3),
)


@pytest.mark.parametrize("c", CASES, ids=_ids(CASES))
def test_first_derivatives(c):
    fd_check(c.fn, c.arrays, **c.tol)
    eps = c.tol.get("eps", 1e-6)
    assert gradcheck(c.fn, _leaves(c.arrays), eps=eps, atol=max(1e-5, c.tol.get("atol", 0)))


SECOND = [c for c in CASES if c.second]


@pytest.mark.parametrize("c", SECOND, ids=_ids(SECOND))
def test_second_derivatives(c):
    vjp, arrays = first_derivative(c.fn, c.arrays)
    # The differentiable backward (formulas compiled against nbgrad) computes the same gradient
    # as the plain one (compiled against NumPy).
    leaves = _leaves(arrays)
    n = len(c.arrays)
    outputs = [o for o in _tensors(c.fn(*leaves[:n])) if o.requires_grad]
    plain = torch.autograd.grad(outputs, leaves[:n], leaves[n:], allow_unused=True)
    differentiable = [g for g in plain if g is not None]
    for a, b in zip(differentiable, vjp(*leaves)):
        np.testing.assert_allclose(b.detach().numpy(), a.numpy(), rtol=1e-12, atol=1e-14)

    fd_check(vjp, arrays, **c.tol)
    eps = c.tol.get("eps", 1e-6)
    atol = max(1e-5, c.tol.get("atol", 0))
    assert gradcheck(vjp, _leaves(arrays), eps=eps, atol=atol)
    assert gradgradcheck(c.fn, _leaves(c.arrays), eps=eps, atol=atol)


# The norms' double backwards are PyTorch's formulas (NativeLayerNormBackwardBackward0, ...),
# which hold the saved mean and 1/std fixed: PyTorch's third derivative is not the exact one, and
# nbgrad gives PyTorch's (tests/test_double_backward_norm_conv.py compares them).
THIRD_ORDER_AS_PYTORCH = {
    "layer_norm",
    "layer_norm-2d",
    "batch_norm-training",
    "batch_norm-training-3d",
    "instance_norm",
    "_native_batch_norm_legit-training",
    "_native_batch_norm_legit-no_stats",
}
THIRD = [c for c in SECOND if c.id not in THIRD_ORDER_AS_PYTORCH]


@pytest.mark.parametrize("c", THIRD, ids=_ids(THIRD))
def test_third_derivatives(c):
    vjp, arrays = first_derivative(c.fn, c.arrays)
    vjp2, arrays2 = first_derivative(vjp, arrays, seed=2)
    fd_check(vjp2, arrays2, **c.tol)


def _with_constant(c, i):
    """Case ``c`` with input ``i`` a constant: the op then saves and runs only what the other
    inputs' formulas need (and an in-place target may not require grad at all)."""
    constant = torch.tensor(c.arrays[i])

    def fn(*xs):
        return c.fn(*xs[:i], constant, *xs[i:])

    return fn, c.arrays[:i] + c.arrays[i + 1 :]


PARTIAL = [(c, i) for c in CASES if len(c.arrays) > 1 for i in range(len(c.arrays))]


@pytest.mark.parametrize("c, i", PARTIAL, ids=[f"{c.id}-constant{i}" for c, i in PARTIAL])
def test_derivatives_with_a_constant_input(c, i):
    fn, arrays = _with_constant(c, i)
    fd_check(fn, arrays, **c.tol)
    if c.second:
        fd_check(*first_derivative(fn, arrays), **c.tol)


# --- every table entry is exercised ----------------------------------------------------------

# Run only as in-place operations (``run_inplace`` reports them with a trailing "_").
INPLACE_RUNS = {
    "add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_", "clamp_", "masked_fill_", "relu_",
    "copy_slices_",
}  # fmt: skip


def test_every_table_entry_is_exercised():
    """The cases above reach every entry of the op table (the *_backward entries through
    create_graph). Runs the cases itself, so it does not depend on which other tests ran."""
    seen = set()

    def record(node, name, inputs, outputs):
        seen.add(name)

    observe.op_listeners.append(record)
    try:
        for c in CASES:
            vjp, arrays = first_derivative(c.fn, c.arrays)
            vjp(*_leaves(arrays))
    finally:
        observe.op_listeners.remove(record)
    # In-place runs are announced with a trailing "_" added to the entry's name.
    missing = set(OPS) - {name if name in OPS else name[:-1] for name in seen}
    assert not missing, f"table entries without a case in this file: {sorted(missing)}"
    assert INPLACE_RUNS - seen == set()


# --- values at kinks and ties, where finite differences do not apply ----------------------------
# The expected gradients are what PyTorch 2.13 gives; both backward implementations must agree.

TIES = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]
OTHER = torch.tensor([2.0, 3.0, 1.0], dtype=torch.float64)


@pytest.mark.parametrize(
    "fn, data, expected",
    [
        # amax/amin and full max/min split the gradient evenly between tied elements.
        (lambda x: x.amax(1), TIES, [[0, 0.5, 0.5], [0.5, 0.5, 0]]),
        (lambda x: x.amax(), TIES, [[0, 0.5, 0.5], [0, 0, 0]]),
        (lambda x: x.amax((0, 1), keepdim=True), TIES, [[0, 0.5, 0.5], [0, 0, 0]]),
        (lambda x: x.amin(0), [[1.0, 0.0, 3.0], [1.0, 2.0, 3.0]], [[0.5, 1, 0.5], [0.5, 0, 0.5]]),
        (lambda x: x.max(), TIES, [[0, 0.5, 0.5], [0, 0, 0]]),
        (lambda x: x.min(), [[0.0, 3.0, 0.0], [2.0, 0.0, 5.0]], [[1 / 3, 0, 1 / 3], [0, 1 / 3, 0]]),
        # max/min along a dim send it all to the index they return (the first of the tied).
        (lambda x: x.max(1).values, TIES, [[0, 1, 0], [1, 0, 0]]),
        (lambda x: x.min(0).values, TIES, [[1, 0, 0], [0, 1, 1]]),
        # maximum/minimum halve it between equal elements.
        (lambda x: torch.maximum(x, OTHER), TIES, [[0, 0.5, 1], [0.5, 0, 0]]),
        (lambda x: torch.minimum(OTHER, x), TIES, [[1, 0.5, 0], [0.5, 1, 1]]),
        # Kinks: relu and abs have derivative 0 at 0; clamp passes the gradient at its bounds.
        (torch.relu, [-1.0, 0.0, 1.0], [0, 0, 1]),
        (torch.abs, [-1.0, 0.0, 1.0], [-1, 0, 1]),
        (torch.sign, [-1.0, 0.0, 1.0], [0, 0, 0]),
        (lambda x: x.clamp(-1, 1), [-2.0, -1.0, 0.0, 1.0, 2.0], [0, 1, 1, 1, 0]),
        (lambda x: x.clamp(min=0), [-2.0, 0.0, 2.0], [0, 1, 1]),
        # Powers at 0: x**0 is constant, and 0**x has derivative 0 (not 0 * log 0 = nan).
        (lambda x: x**0, [-1.0, 0.0, 2.0], [0, 0, 0]),
        (lambda x: x**2, [-1.0, 0.0, 2.0], [-2, 0, 4]),
        (lambda x: 0**x, [1.0, 0.5, 0.0], [0, 0, 0]),
        # sum and mean over dim=() reduce every dim.
        (lambda x: x.sum(()), TIES, [[1, 1, 1], [1, 1, 1]]),
        (lambda x: x.mean(()) * 6, TIES, [[1, 1, 1], [1, 1, 1]]),
    ],
)
def test_gradient_at_kinks_and_ties(fn, data, expected):
    x = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    (plain,) = torch.autograd.grad(fn(x).sum(), x)
    (differentiable,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    assert plain.tolist() == expected
    assert differentiable.tolist() == expected


INF = float("inf")


@pytest.mark.parametrize(
    "fn, expected",
    [
        # d/dx 0**x is 0 where x >= 0 (not 0 * log 0 = nan), -inf below.
        (lambda b, e: torch.pow(0, e), {"e": [-INF, 0, 0, 0]}),
        # A tensor base of 0: d/db is 0 at exponent 0 (not 0 * 0**-1 = nan), and d/de is 0 where
        # e >= 0; the rest follows the formulas (inf where they are infinite).
        (lambda b, e: b**e, {"b": [-INF, 0, INF, 0], "e": [-INF, 0, 0, 0]}),
        (lambda b, e: b ** torch.zeros(4, dtype=torch.float64), {"b": [0, 0, 0, 0]}),
    ],
)
def test_powers_of_zero(fn, expected):
    """What PyTorch 2.13 gives at a base of 0 (pow_backward_self / pow_backward_exponent)."""
    b = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    e = torch.tensor([-1.0, 0.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    for create_graph in (False, True):
        y = fn(b, e)
        grads = torch.autograd.grad(y.sum(), (b, e), allow_unused=True, create_graph=create_graph)
        got = {name: g.tolist() for name, g in zip("be", grads) if g is not None}
        assert got == expected


def test_addmm_ignores_the_bias_when_beta_is_0():
    """As PyTorch documents: with beta=0 a nan or inf in the bias does not reach the result."""
    bias = torch.tensor([[float("nan"), INF]], dtype=torch.float64, requires_grad=True)
    m1 = torch.ones(2, 2, dtype=torch.float64, requires_grad=True)
    out = torch.addmm(bias, m1, m1, beta=0)
    assert out.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    out.sum().backward()
    assert bias.grad.tolist() == [[0.0, 0.0]]
    assert m1.grad.tolist() == [[4.0, 4.0], [4.0, 4.0]]


def test_embedding_gradient_skips_padding_and_scales_by_frequency():
    """Not the derivative, on purpose (PyTorch's numbers): the padding row gets none, and with
    scale_grad_by_freq each row's gradient is divided by how often its index occurs."""
    w = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], requires_grad=True)
    y = F.embedding(torch.tensor([0, 2, 2, 1]), w, padding_idx=1, scale_grad_by_freq=True)
    y.backward(torch.tensor([[1.0, 1.0], [1.0, 10.0], [100.0, 1000.0], [5.0, 5.0]]))
    assert w.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [50.5, 505.0], [0.0, 0.0]]


def test_to_dtype_casts_the_gradient_back():
    """``.double()`` on a float32 leaf: its gradients come back as float32, to every order."""
    data, w = np.array([0.5, -1.25, 2.0]), np.array([1.5, -2.0, 0.25])  # exact in float32
    x = torch.tensor(data, dtype=torch.float32, requires_grad=True)
    y = x.double()
    assert y.dtype == torch.float64 and y.grad_fn.name() == "ToCopyBackward0"
    (g,) = torch.autograd.grad((y * y * torch.tensor(w)).sum(), x, create_graph=True)
    assert g.dtype == torch.float32
    assert g.tolist() == (2 * data * w).tolist()
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert gg.dtype == torch.float32
    assert gg.tolist() == (2 * w).tolist()


def test_reductions_of_an_empty_tensor():
    fd_check(lambda x, y: (x.sum(0) + y) * y + x.sum(1).sum(), [np.zeros((0, 3)), normal(1)])
    x = torch.zeros(0, 3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(x.sum(), x)
    assert g.shape == (0, 3)


def test_power_of_a_negative_number_has_a_nan_gradient():
    """``(-2) ** x`` is real at integer x, but its derivative ``result * log(-2)`` is nan in
    PyTorch; the backward must say so rather than raise."""
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.pow(-2, x)
    assert y.tolist() == [-2.0, 4.0]
    for create_graph in (False, True):
        (g,) = torch.autograd.grad(y.sum(), x, retain_graph=True, create_graph=create_graph)
        assert np.isnan(g.detach().numpy()).all()


# --- engine bugs found by these checks, fixed since ----------------------------------------------


def test_grad_of_outputs_that_feed_each_other():
    """autograd.grad once lost the gradient of an output on the graph of an earlier output."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y1 = x * 2
    y2 = y1 * 3
    ones = torch.ones(2)
    # retain_graph: y1 and y2 saved the numbers 2 and 3, freed after a backward as in PyTorch
    grads = torch.autograd.grad([y1, y2], x, [ones, ones], retain_graph=True)
    assert grads[0].tolist() == [8.0, 8.0]
    assert torch.autograd.grad([y2, y1], x, [ones, ones])[0].tolist() == [8.0, 8.0]  # gave [2, 2]
    v = torch.tensor([1.0, 2.0], requires_grad=True)  # a leaf among the outputs
    assert torch.autograd.grad([-v, v], v, [ones, 3 * ones])[0].tolist() == [2.0, 2.0]
