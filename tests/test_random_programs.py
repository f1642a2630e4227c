"""Random programs run on nbgrad and on PyTorch from the same float64 inputs give the same results.

Hypothesis draws a program: a few leaves (shapes that broadcast against each other, some not
requiring grad), then a sequence of operations drawn from a list (element-wise ops with
broadcasting and Python numbers, unary ops on their safe domains, reductions, matrix products,
views, indexing, cat/stack), each taking its operands from everything computed so far, so that
tensors are used more than once. Every step runs in both libraries in lockstep and must agree:
the value, ``requires_grad``, ``is_leaf``, the ``grad_fn`` class and the whole graph below it
(``next_functions``, node sharing, which leaf each ``AccumulateGrad`` holds), or the exception
raised (type and message). At the end the last value is backpropagated with a random upstream
gradient (sometimes twice with ``retain_graph=True``, sometimes through ``autograd.grad``) and
every leaf's ``.grad`` must agree, as must the ``.grad`` of intermediates that ``retain_grad()``.
"""

import itertools
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbgrad

# NBGRAD_RANDOM_PROGRAMS=5000 runs the long version (thousands of programs) before a release.
SETTINGS = settings(
    max_examples=int(os.environ.get("NBGRAD_RANDOM_PROGRAMS", 500)),
    deadline=None,
    derandomize=True,
    database=None,
    # The torch fixture is the module itself: nothing to reset between examples.
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

RTOL, ATOL = 1e-9, 1e-11
# After a float32 kernel that rounds otherwise than NumPy (oneDNN's LSTM), for the whole program.
FLOAT32_KERNEL_RTOL, FLOAT32_KERNEL_ATOL = 1e-5, 1e-6


def _array(t):
    return t.detach().numpy(force=True)  # (force: PyTorch's efficient zero gradients)


class Program:
    """The values computed so far, each a pair (nbgrad tensor, PyTorch tensor)."""

    def __init__(self, torch, data):
        self.torch, self.data = torch, data
        self.values = []
        self.leaves = []
        self.log = []
        self.tolerance = (RTOL, ATOL)

    def allow_float32_rounding(self):
        """From now on, values may differ by float32 rounding (a kernel that is not NumPy's)."""
        self.tolerance = (FLOAT32_KERNEL_RTOL, FLOAT32_KERNEL_ATOL)

    def draw(self, strategy, label):
        return self.data.draw(strategy, label=label)

    def choice(self, items, label):
        return items[self.draw(st.integers(0, len(items) - 1), label)]

    # --- making values ------------------------------------------------------------------------

    def leaf(self, shape, requires_grad=None, low=None):
        seed = self.draw(st.integers(0, 2**32 - 1), "seed")
        array = np.random.default_rng(seed).standard_normal(shape)
        if low is not None:
            array = low + np.abs(array)
        if requires_grad is None:
            requires_grad = self.draw(st.booleans(), "requires_grad")
        pair = (
            nbgrad.tensor(array, requires_grad=requires_grad),
            self.torch.tensor(array, requires_grad=requires_grad),
        )
        name = f"leaf{len(self.leaves)}"
        self.leaves.append(pair)
        self.values.append(pair)
        self.log.append(f"{name} = tensor(shape={shape}, requires_grad={requires_grad})")
        return pair

    def step(self, text, fn, *operands):
        """Run ``fn(T, *tensors)`` in both libraries; keep the result, or check the errors."""
        names = [f"v{next(k for k, v in enumerate(self.values) if v is o)}" for o in operands]
        self.log.append(f"v{len(self.values)} = " + text.format(*names))
        real, real_error = self._run(fn, 1, operands)
        mine, my_error = self._run(fn, 0, operands)
        context = "\n".join(self.log)
        if real_error is not None:
            assert my_error is not None, f"PyTorch raised {real_error!r}; nbgrad did not\n{context}"
            assert (type(my_error).__name__, str(my_error)) == (
                type(real_error).__name__,
                str(real_error),
            )
            self.log.append("  (both raised)")
            return None
        assert my_error is None, f"nbgrad raised {my_error!r}; PyTorch did not\n{context}"
        pair = (mine, real)
        check_same_tensor(pair, self)
        self.values.append(pair)
        return pair

    def _run(self, fn, which, operands):
        T = (nbgrad, self.torch)[which]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return fn(T, *(o[which] for o in operands)), None
            except Exception as error:  # noqa: BLE001 - compared with PyTorch's
                return None, error

    # --- choosing operands ----------------------------------------------------------------------

    def pick(self, label, where=lambda a: True):
        """A value whose nbgrad array satisfies ``where``, or None if there is none."""
        candidates = [v for v in self.values if where(_array(v[0]))]
        if not candidates:
            return None
        return self.choice(candidates, label)

    def pick_pair(self, label, fits):
        """Two values (possibly the same one twice) whose arrays satisfy ``fits(a, b)``."""
        first = self.pick(label + " a")
        candidates = [v for v in self.values if fits(_array(first[0]), _array(v[0]))]
        return first, self.choice(candidates, label + " b") if candidates else None


def check_same_tensor(pair, program):
    mine, real = pair
    context = "\n".join(program.log)
    assert tuple(mine.shape) == tuple(real.shape), context
    assert str(mine.dtype) == str(real.dtype), context
    np.testing.assert_allclose(_array(mine), _array(real), *program.tolerance, err_msg=context)
    assert mine.requires_grad == real.requires_grad, context
    assert mine.is_leaf == real.is_leaf, context
    assert mine._version == real._version, context
    if real.numel():  # views of empty tensors keep NumPy's strides (README)
        # (so may a dim of size 1, where the stride never moves to another element: README)
        sized = [d for d, n in enumerate(real.shape) if n > 1]
        assert [mine.stride(d) for d in sized] == [real.stride(d) for d in sized], context
    assert graph(mine.grad_fn, program, 0) == graph(real.grad_fn, program, 1), context
    check_same_saved(mine.grad_fn, real.grad_fn, context, program.tolerance)


def saved_values(fn):
    """``name -> value`` of what a node shows as ``_saved_*``: arrays for tensors, the value
    itself for numbers and tuples, and ("raises", type, message) where reading it raises."""
    values = {}
    for name in sorted(a for a in dir(fn) if a.startswith("_saved_")):
        try:
            value = getattr(fn, name)
        except Exception as error:  # noqa: BLE001 - compared with PyTorch's
            values[name] = ("raises", type(error).__name__, str(error))
            continue
        if hasattr(value, "detach"):
            value = ("tensor", _array(value))
        elif isinstance(value, list | tuple) and any(hasattr(v, "detach") for v in value):
            value = ("tensors", [None if v is None else _array(v) for v in value])
        values[name] = _signed(value)
    return values


def _signed(value):
    """A saved negative dim as a signed number: PyTorch shows -1 as 2**64 - 1 (README: a
    difference left on purpose)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2**63:
        return value - 2**64
    if isinstance(value, tuple) and value[:1] not in (("tensor",), ("tensors",), ("raises",)):
        return tuple(_signed(v) for v in value)
    return value


# Saved buffers whose bytes are another library's own (README): present in both, not compared.
OPAQUE_SAVES = {("MkldnnRnnLayerBackward0", "_saved_result3")}  # oneDNN's workspace


def check_same_saved(mine, real, context, tolerance=(RTOL, ATOL)):
    if real is None or mine is None:
        return
    ours, theirs = saved_values(mine), saved_values(real)
    assert sorted(ours) == sorted(theirs), f"{type(real).__name__} saves\n{context}"
    for name, value in theirs.items():
        if (type(real).__name__, name) in OPAQUE_SAVES:
            continue
        if name == "_saved_storage_offset" and 0 in theirs.get("_saved_size", ()):
            continue  # where an empty view starts is NumPy's: it keeps no offset (README)
        if isinstance(value, tuple) and value[:1] == ("tensor",):
            assert isinstance(ours[name], tuple) and ours[name][0] == "tensor", f"{name}\n{context}"
            np.testing.assert_allclose(ours[name][1], value[1], *tolerance, err_msg=context)
        elif isinstance(value, tuple) and value[:1] == ("tensors",):
            assert isinstance(ours[name], tuple) and ours[name][0] == "tensors", (
                f"{name}\n{context}"
            )
            assert len(ours[name][1]) == len(value[1]), context
            for a, b in zip(ours[name][1], value[1]):
                assert (a is None) == (b is None), f"{name}\n{context}"
                if b is not None:
                    np.testing.assert_allclose(a, b, *tolerance, err_msg=context)
        elif name.endswith("_sym_strides") and isinstance(value, tuple):
            # strides along dims of size 2 or more (a dim of size 1 is never stepped along: README)
            sizes = theirs.get(name.replace("_sym_strides", "_sym_sizes"), ())
            sized = [d for d in range(len(value)) if len(sizes) != len(value) or sizes[d] > 1]
            mine = ours[name]
            assert len(mine) == len(value), f"{name}\n{context}"
            assert [mine[d] for d in sized] == [value[d] for d in sized], f"{name}\n{context}"
        else:
            assert same_saved_number(ours[name], value), f"{type(real).__name__}.{name}\n{context}"


def same_saved_number(ours, theirs):
    """Equal, but for a dim PyTorch keeps negative where nbgrad made it non-negative (README)."""
    if isinstance(ours, tuple) and isinstance(theirs, tuple) and len(ours) == len(theirs):
        return all(same_saved_number(a, b) for a, b in zip(ours, theirs))
    if isinstance(theirs, int) and isinstance(ours, int) and theirs < 0 <= ours:
        return True
    return ours == theirs


def graph(fn, program, which):
    """The graph below ``fn``, node by node in breadth-first order of discovery: the class name,
    the edges as (node number, input_nr), and for AccumulateGrad the leaf it accumulates into.
    Equal lists mean equal graphs, shared nodes included."""
    if fn is None:
        return None
    numbers, order, rows = {fn: 0}, [fn], []
    for node in order:
        edges = []
        for child, nr in node.next_functions:
            if child is not None and child not in numbers:
                numbers[child] = len(order)
                order.append(child)
            edges.append((None if child is None else numbers[child], nr))
        leaf = None
        if type(node).__name__ == "AccumulateGrad":
            leaf = next(i for i, p in enumerate(program.leaves) if p[which] is node.variable)
        name = type(node).__name__
        rows.append((name, tuple(edges), leaf))
    return rows


# --- the operations -------------------------------------------------------------------------------
# Each takes the program, draws its operands and parameters, and runs one step (or does nothing
# when no value fits). Unary functions only see values inside their safe domain.


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return False
    return True


def binary(p):
    name = p.choice(["add", "sub", "mul", "div", "maximum", "minimum", "add_alpha"], "binary")
    fits = _broadcastable
    if name == "div":
        fits = lambda a, b: _broadcastable(a, b) and np.all(np.abs(b) > 0.2)  # noqa: E731
    if name in ("maximum", "minimum"):
        # Ties between different values are avoided; a value against itself ties everywhere.
        fits = lambda a, b: _broadcastable(a, b) and (a is b or not np.isin(a, b).any())  # noqa: E731
    a, b = p.pick_pair(name, fits)
    if b is None:
        return
    functions = {
        "add": ("{} + {}", lambda T, x, y: x + y),
        "sub": ("{} - {}", lambda T, x, y: x - y),
        "mul": ("{} * {}", lambda T, x, y: x * y),
        "div": ("{} / {}", lambda T, x, y: x / y),
        "maximum": ("T.maximum({}, {})", lambda T, x, y: T.maximum(x, y)),
        "minimum": ("{}.minimum({})", lambda T, x, y: x.minimum(y)),
        "add_alpha": ("T.add({}, {}, alpha=2)", lambda T, x, y: T.add(x, y, alpha=2)),
    }
    text, fn = functions[name]
    p.step(text, fn, a, b)


def scalar(p):
    number = p.choice([2, -1.5, 0.5, 3.0], "number")
    forms = [
        ("{} + " + repr(number), lambda T, x: x + number, None),
        (repr(number) + " + {}", lambda T, x: number + x, None),
        ("{} - " + repr(number), lambda T, x: x - number, None),
        (repr(number) + " - {}", lambda T, x: number - x, None),
        ("{} * " + repr(number), lambda T, x: x * number, None),
        (repr(number) + " * {}", lambda T, x: number * x, None),
        ("{} / " + repr(number), lambda T, x: x / number, None),
        (repr(number) + " / {}", lambda T, x: number / x, lambda a: np.all(np.abs(a) > 0.2)),
        ("{} ** 2", lambda T, x: x**2, lambda a: np.all(np.abs(a) < 1e3)),
        ("{} ** 3", lambda T, x: x**3, lambda a: np.all(np.abs(a) < 1e2)),
        ("{} ** 0.5", lambda T, x: x**0.5, lambda a: np.all(a > 0.1)),
        ("2 ** {}", lambda T, x: 2**x, lambda a: np.all(np.abs(a) < 20)),
    ]
    text, fn, domain = p.choice(forms, "scalar form")
    x = p.pick("operand", domain or (lambda a: True))
    if x is not None:
        p.step(text, fn, x)


def power(p):
    """A positive base to a tensor power: ``x ** y``, or ``x ** x`` (one tensor used twice)."""
    x = p.pick("base", lambda a: np.all(a > 0.1) and np.all(a < 20))
    if x is None:
        return
    y = p.pick("exponent", lambda b: _broadcastable(_array(x[0]), b) and np.all(np.abs(b) < 5))
    if y is not None:
        p.step("{} ** {}", lambda T, a, b: a**b, x, y)


UNARY = [
    ("{}.neg()", lambda T, x: x.neg(), None),
    ("-{}", lambda T, x: -x, None),
    ("{}.exp()", lambda T, x: x.exp(), lambda a: np.all(np.abs(a) < 5)),
    ("T.exp({})", lambda T, x: T.exp(x), lambda a: np.all(np.abs(a) < 5)),
    ("{}.log()", lambda T, x: x.log(), lambda a: np.all(a > 0.1)),
    ("{}.sqrt()", lambda T, x: x.sqrt(), lambda a: np.all(a > 0.1)),
    ("{}.rsqrt()", lambda T, x: x.rsqrt(), lambda a: np.all(a > 0.1)),
    ("{}.reciprocal()", lambda T, x: x.reciprocal(), lambda a: np.all(np.abs(a) > 0.2)),
    ("{}.log1p()", lambda T, x: x.log1p(), lambda a: np.all(a > -0.8)),
    ("{}.expm1()", lambda T, x: x.expm1(), lambda a: np.all(np.abs(a) < 5)),
    ("{}.erf()", lambda T, x: x.erf(), None),
    ("T.erf({})", lambda T, x: T.erf(x), None),
    ("{}.sin()", lambda T, x: x.sin(), None),
    ("{}.cos()", lambda T, x: x.cos(), None),
    ("{}.tan()", lambda T, x: x.tan(), lambda a: np.all(np.abs(a) < 1.2)),
    ("{}.tanh()", lambda T, x: x.tanh(), None),
    ("T.tanh({})", lambda T, x: T.tanh(x), None),
    ("{}.sigmoid()", lambda T, x: x.sigmoid(), None),
    ("{}.relu()", lambda T, x: x.relu(), lambda a: np.all(np.abs(a) > 1e-6)),
    ("T.relu({})", lambda T, x: T.relu(x), lambda a: np.all(np.abs(a) > 1e-6)),
    ("{}.abs()", lambda T, x: x.abs(), lambda a: np.all(np.abs(a) > 1e-6)),
    ("{}.square()", lambda T, x: x.square(), None),
    ("{}.pow(2)", lambda T, x: x.pow(2), lambda a: np.all(np.abs(a) < 1e3)),
    ("{} ** 3", lambda T, x: x**3, lambda a: np.all(np.abs(a) < 1e2)),
    ("{}.pow(5)", lambda T, x: x.pow(5), lambda a: np.all(np.abs(a) < 10)),
    ("{} ** -2", lambda T, x: x**-2, lambda a: np.all(np.abs(a) > 0.3)),
    ("{}.clamp(-0.5, 0.7)", lambda T, x: x.clamp(-0.5, 0.7), None),
    ("{}.clamp(min=0.1)", lambda T, x: x.clamp(min=0.1), None),
    ("{}.sign()", lambda T, x: x.sign(), None),
    ("{}.clone()", lambda T, x: x.clone(), None),
    ("{}.contiguous()", lambda T, x: x.contiguous(), None),
    ("{}.detach()", lambda T, x: x.detach(), None),
    ("{}.float().double()", lambda T, x: x.float().double(), None),
]

# Element-wise functions, more (logarithms, trigonometric, hyperbolic, activations).
_F = "T.nn.functional."
UNARY_MORE = [
    ("{}.log2()", lambda T, x: x.log2(), lambda a: np.all(a > 0.1)),
    ("T.log10({})", lambda T, x: T.log10(x), lambda a: np.all(a > 0.1)),
    ("{}.asin()", lambda T, x: x.asin(), lambda a: np.all(np.abs(a) < 0.9)),
    ("T.acos({})", lambda T, x: T.acos(x), lambda a: np.all(np.abs(a) < 0.9)),
    ("{}.atan()", lambda T, x: x.atan(), None),
    ("{}.sinh()", lambda T, x: x.sinh(), lambda a: np.all(np.abs(a) < 5)),
    ("{}.cosh()", lambda T, x: x.cosh(), lambda a: np.all(np.abs(a) < 5)),
    ("{}.asinh()", lambda T, x: x.asinh(), None),
    ("{}.acosh()", lambda T, x: x.acosh(), lambda a: np.all(a > 1.1)),
    ("{}.atanh()", lambda T, x: x.atanh(), lambda a: np.all(np.abs(a) < 0.9)),
    ("{}.exp2()", lambda T, x: x.exp2(), lambda a: np.all(np.abs(a) < 5)),
    ("{}.erfc()", lambda T, x: x.erfc(), None),
    ("{}.erfinv()", lambda T, x: x.erfinv(), lambda a: np.all(np.abs(a) < 0.9)),
    ("T.logsumexp({}, -1)", lambda T, x: T.logsumexp(x, -1), lambda a: np.all(np.abs(a) < 50)),
    ("{}.logsumexp(0, True)", lambda T, x: x.logsumexp(0, True), lambda a: np.all(np.abs(a) < 50)),
    ("T.selu({})", lambda T, x: T.selu(x), lambda a: np.all(np.abs(a) > 1e-6)),
    ("T.celu({}, 0.5)", lambda T, x: T.celu(x, 0.5), lambda a: np.all(np.abs(a) > 1e-6)),
    ("T.hardshrink({}, 0.3)", lambda T, x: T.hardshrink(x, 0.3), lambda a: _away(a, 0.3, -0.3)),
    ("T.threshold({}, 0.2, 3.)", lambda T, x: T.threshold(x, 0.2, 3.0), lambda a: _away(a, 0.2)),
    (_F + "softplus({})", lambda T, x: T.nn.functional.softplus(x), None),
    (
        _F + "softplus({}, 2, 3)",
        lambda T, x: T.nn.functional.softplus(x, 2, 3),
        lambda a: _away(a, 1.5),
    ),
    (_F + "hardtanh({})", lambda T, x: T.nn.functional.hardtanh(x), lambda a: _away(a, 1, -1)),
    (_F + "relu6({})", lambda T, x: T.nn.functional.relu6(x), lambda a: _away(a, 0, 6)),
    (_F + "logsigmoid({})", lambda T, x: T.nn.functional.logsigmoid(x), None),
    (_F + "silu({})", lambda T, x: T.nn.functional.silu(x), None),
    (_F + "mish({})", lambda T, x: T.nn.functional.mish(x), None),
    (_F + "hardswish({})", lambda T, x: T.nn.functional.hardswish(x), lambda a: _away(a, 3, -3)),
    (
        _F + "hardsigmoid({})",
        lambda T, x: T.nn.functional.hardsigmoid(x),
        lambda a: _away(a, 3, -3),
    ),
    (_F + "elu({})", lambda T, x: T.nn.functional.elu(x), lambda a: _away(a, 0)),
    (
        _F + "softshrink({})",
        lambda T, x: T.nn.functional.softshrink(x),
        lambda a: _away(a, 0.5, -0.5),
    ),
    (_F + "softsign({})", lambda T, x: T.nn.functional.softsign(x), lambda a: _away(a, 0)),
    (_F + "tanhshrink({})", lambda T, x: T.nn.functional.tanhshrink(x), None),
    ("{}.frac()", lambda T, x: x.frac(), None),
    ("T.deg2rad({})", lambda T, x: T.deg2rad(x), None),
    ("{}.rad2deg()", lambda T, x: x.rad2deg(), None),
    ("T.sinc({})", lambda T, x: T.sinc(x), None),
    ("{}.logit()", lambda T, x: x.logit(), lambda a: np.all((a > 0.1) & (a < 0.9))),
    ("T.nan_to_num({})", lambda T, x: T.nan_to_num(x), None),
    ("{}.float_power(2)", lambda T, x: x.float_power(2), lambda a: np.all(np.abs(a) < 1e3)),
    (
        _F + "softmin({}, -1)",
        lambda T, x: T.nn.functional.softmin(x, -1),
        lambda a: a.ndim >= 1 and np.all(np.abs(a) < 50),
    ),
    (
        _F + "glu({})",
        lambda T, x: T.nn.functional.glu(x),
        lambda a: a.ndim >= 1 and a.shape[-1] % 2 == 0 and np.all(np.abs(a) < 50),
    ),
    (
        _F + "normalize({}, dim=-1)",
        lambda T, x: T.nn.functional.normalize(x, dim=-1),
        lambda a: a.ndim >= 1 and np.all(np.abs(a) > 1e-3),
    ),
    # losses, against a target made from the operand without its graph
    (
        _F + "smooth_l1_loss({0}, {0}.detach() * 0.5)",
        lambda T, x: T.nn.functional.smooth_l1_loss(x, x.detach() * 0.5),
        lambda a: _away(a, 2, -2),
    ),
    (
        _F + "huber_loss({0}, {0}.detach() * 0, delta=0.5, reduction='sum')",
        lambda T, x: T.nn.functional.huber_loss(x, x.detach() * 0, delta=0.5, reduction="sum"),
        lambda a: _away(a, 0.5, -0.5),
    ),
    (
        _F + "soft_margin_loss({0}, {0}.detach().sign())",
        lambda T, x: T.nn.functional.soft_margin_loss(x, x.detach().sign()),
        None,
    ),
    (
        _F + "kl_div({0}, {0}.detach().exp(), reduction='batchmean')",
        lambda T, x: T.nn.functional.kl_div(x, x.detach().exp(), reduction="batchmean"),
        lambda a: np.all(np.abs(a) < 20),
    ),
    (
        _F + "poisson_nll_loss({0}, {0}.detach().abs(), reduction='none')",
        lambda T, x: T.nn.functional.poisson_nll_loss(x, x.detach().abs(), reduction="none"),
        lambda a: np.all(np.abs(a) < 20),
    ),
    (
        _F + "hinge_embedding_loss({0}, {0}.detach().sign(), margin=0.5)",
        lambda T, x: T.nn.functional.hinge_embedding_loss(x, x.detach().sign(), margin=0.5),
        lambda a: _away(a, 0.5, -0.5),
    ),
]


def _away(a, *kinks):
    return all(np.all(np.abs(a - k) > 1e-6) for k in kinks)


UNARY += UNARY_MORE


def _fits_away(a, b):
    return _broadcastable(a, b) and np.all(np.abs(b) > 0.2)


def _fits_positive(a, b):
    return _broadcastable(a, b) and np.all(b > 0.1)


def _fits_small(a, b):
    return _broadcastable(a, b) and np.all(np.abs(a) < 30) and np.all(np.abs(b) < 30)


BINARY_MORE = [
    ("T.atan2({}, {})", lambda T, x, y: T.atan2(x, y), _fits_away),
    ("{}.arctan2({})", lambda T, x, y: x.arctan2(y), _fits_away),
    ("T.xlogy({}, {})", lambda T, x, y: T.xlogy(x, y), _fits_positive),
    ("T.hypot({}, {})", lambda T, x, y: T.hypot(x, y), lambda a, b: _fits_away(b, a)),
    ("{}.copysign({})", lambda T, x, y: x.copysign(y), lambda a, b: _fits_away(b, a)),
    ("T.logaddexp({}, {})", lambda T, x, y: T.logaddexp(x, y), _fits_small),
    ("{}.logaddexp2({})", lambda T, x, y: x.logaddexp2(y), _fits_small),
    ("T.lerp({}, {}, 0.3)", lambda T, x, y: T.lerp(x, y, 0.3), _broadcastable),
    (
        "T.addcmul({0}, {1}, {1}, value=2)",
        lambda T, x, y: T.addcmul(x, y, y, value=2),
        _broadcastable,
    ),
    ("T.addcdiv({0}, {0}, {1})", lambda T, x, y: T.addcdiv(x, x, y), _fits_away),
    (
        "T.float_power({}, {})",
        lambda T, x, y: T.float_power(x, y),
        lambda a, b: _fits_positive(b, a) and np.all(np.abs(b) < 5),
    ),
]

BINARY_MORE.append(
    (
        "T.nn.functional.margin_ranking_loss({0}, {1}, {0}.detach().sign(), margin=0.1)",
        lambda T, x, y: T.nn.functional.margin_ranking_loss(x, y, x.detach().sign(), margin=0.1),
        lambda a, b: a.shape == b.shape and np.all(np.abs(np.sign(a) * (b - a) + 0.1) > 1e-6),
    )
)
BINARY_MORE.append(
    (
        "T.nn.functional.pairwise_distance({}, {})",
        lambda T, x, y: T.nn.functional.pairwise_distance(x, y),
        lambda a, b: _broadcastable(a, b) and a.ndim >= 1 and b.ndim >= 1,
    )
)


# fmax, fmin, nextafter, ldexp, rsub (branch special)
BINARY_FLOAT_PARTS = [
    ("T.fmax({}, {})", lambda T, x, y: T.fmax(x, y), _broadcastable),
    ("{}.fmin({})", lambda T, x, y: x.fmin(y), _broadcastable),
    ("T.nextafter({}, {})", lambda T, x, y: T.nextafter(x, y), _broadcastable),
    ("T.ldexp({}, {})", lambda T, x, y: T.ldexp(x, y), _fits_small),
    ("T.rsub({}, {}, alpha=2)", lambda T, x, y: T.rsub(x, y, alpha=2), _broadcastable),
    (
        "T.div({}, {}, rounding_mode=None)",
        lambda T, x, y: T.div(x, y, rounding_mode=None),
        _fits_away,
    ),
]
BINARY_MORE += BINARY_FLOAT_PARTS


def binary_more(p):
    text, fn, fits = p.choice(BINARY_MORE, "binary more")
    a, b = p.pick_pair("operands", fits)
    if b is not None:
        p.step(text, fn, a, b)


def _nonzero(a):
    return np.all(np.abs(a) > 1e-3)


def _unique_magnitudes(a):
    return np.unique(np.abs(a)).size == a.size


def _distinct_sums(dim):
    """Matrix norms of order 1 and inf pick the largest sum of magnitudes along ``dim``: away
    from zeros (where abs has its kink) and from ties among those sums."""

    def predicate(a):
        if a.ndim < -dim:  # no such dim: not an operand for it (the sum would raise)
            return False
        sums = np.abs(a).sum(dim)
        return _nonzero(a) and np.unique(sums.round(4)).size == sums.size

    return predicate


# Reductions, scans and reorderings, more: composed with everything else like UNARY's.
UNARY_REDUCTIONS_MORE = [
    ("{}.cumsum(0)", lambda T, x: x.cumsum(0), None),
    ("T.cumsum({}, -1)", lambda T, x: T.cumsum(x, -1), None),
    ("{}.cumprod(-1)", lambda T, x: x.cumprod(-1), lambda a: np.all(np.abs(a) < 3)),
    ("{}.logcumsumexp(0)", lambda T, x: x.logcumsumexp(0), lambda a: np.all(np.abs(a) < 50)),
    ("{}.cummax(0).values", lambda T, x: x.cummax(0).values, lambda a: np.unique(a).size == a.size),
    ("{}.cummin(-1)[0]", lambda T, x: x.cummin(-1)[0], lambda a: np.unique(a).size == a.size),
    ("{}.prod(0)", lambda T, x: x.prod(0), lambda a: np.all(np.abs(a) < 3)),
    ("{}.prod()", lambda T, x: x.prod(), lambda a: a.size <= 12 and np.all(np.abs(a) < 2)),
    ("{}.var(0)", lambda T, x: x.var(0), lambda a: np.all(np.abs(a) < 1e3)),
    ("{}.var(unbiased=False)", lambda T, x: x.var(unbiased=False), None),
    (
        "{}.std(-1)",
        lambda T, x: x.std(-1),
        lambda a: a.ndim and a.shape[-1] > 1 and np.all(np.std(a, -1) > 1e-2),
    ),
    ("{}.flip(0)", lambda T, x: x.flip(0), None),
    ("{}.roll(1)", lambda T, x: x.roll(1), None),
    ("{}.roll(-1, 0)", lambda T, x: x.roll(-1, 0), None),
    ("{}.repeat(1, 2, 1, 1)", lambda T, x: x.repeat(1, 2, 1, 1), None),
    ("T.tile({}, (2,))", lambda T, x: T.tile(x, (2,)), None),
    ("{}.tril()", lambda T, x: x.tril(), None),
    ("{}.triu(-1)", lambda T, x: x.triu(-1), None),
    (
        "{}.index_select(0, T.tensor([0, 0]))",
        lambda T, x: x.index_select(0, T.tensor([0, 0])),
        None,
    ),
    ("{0}.masked_select({0} > 0)", lambda T, x: x.masked_select(x > 0), None),
    ("{}.movedim(0, -1)", lambda T, x: x.movedim(0, -1), None),
    ("{}.split(2)[0]", lambda T, x: x.split(2)[0], None),
    ("{}.split(1, -1)[-1]", lambda T, x: x.split(1, -1)[-1], None),
    ("{}.chunk(2)[-1]", lambda T, x: x.chunk(2)[-1], None),
    ("{}.unbind()[0]", lambda T, x: x.unbind()[0], None),
    ("T.stack({}.unbind(-1), 0)", lambda T, x: T.stack(x.unbind(-1), 0), None),
    ("T.var_mean({}, 0)[0]", lambda T, x: T.var_mean(x, 0)[0], None),
    ("T.std_mean({})[1]", lambda T, x: T.std_mean(x)[1], None),
    ("{}.sort()[0]", lambda T, x: x.sort()[0], lambda a: np.unique(a).size == a.size),
    ("{}.topk(1, 0)[0]", lambda T, x: x.topk(1, 0)[0], lambda a: np.unique(a).size == a.size),
    ("{}.kthvalue(1)[0]", lambda T, x: x.kthvalue(1)[0], lambda a: np.unique(a).size == a.size),
    ("{}.median()", lambda T, x: x.median(), lambda a: np.unique(a).size == a.size),
    ("{}.median(0)[0]", lambda T, x: x.median(0)[0], lambda a: np.unique(a).size == a.size),
    ("{}.diagonal()", lambda T, x: x.diagonal(), None),
    ("{}.diagonal(1, -1, 0)", lambda T, x: x.diagonal(1, -1, 0), None),
    ("T.diag({})", lambda T, x: T.diag(x), None),
    ("T.diag_embed({})", lambda T, x: T.diag_embed(x), None),
    ("{}.trace()", lambda T, x: x.trace(), None),
    ("T.take({}, T.tensor([0, -1]))", lambda T, x: T.take(x, T.tensor([0, -1])), None),
    ("{}.norm(3)", lambda T, x: x.norm(3), lambda a: np.all(np.abs(a) > 1e-3)),
    ("{}.norm(float('inf'), 0)", lambda T, x: x.norm(float("inf"), 0), _unique_magnitudes),
    ("T.linalg.vector_norm({}, 0.5)", lambda T, x: T.linalg.vector_norm(x, 0.5), _nonzero),
    ("T.linalg.norm({}, dim=-1)", lambda T, x: T.linalg.norm(x, dim=-1), _nonzero),
    ("T.linalg.matrix_norm({}, 1)", lambda T, x: T.linalg.matrix_norm(x, 1), _distinct_sums(-2)),
    (
        "T.linalg.norm({}, -float('inf'))",
        lambda T, x: T.linalg.norm(x, -float("inf")),
        _distinct_sums(-1),
    ),
    ("T.dist({0}, {0} * 0.5 + 1)", lambda T, x: T.dist(x, x * 0.5 + 1), _nonzero),
    ("T.hstack([{0}, {0}])", lambda T, x: T.hstack([x, x]), None),
    ("T.vstack([{0}, {0}])", lambda T, x: T.vstack([x, x]), None),
    ("T.column_stack([{0}, {0}])", lambda T, x: T.column_stack([x, x]), None),
    ("T.atleast_2d({})", lambda T, x: T.atleast_2d(x), None),
    (
        "{}.index_fill(0, T.tensor([0]), 2.0)",
        lambda T, x: x.index_fill(0, T.tensor([0]), 2.0),
        None,
    ),
    (
        "{0}.index_add(-1, T.tensor([0]), {0}[..., :1])",
        lambda T, x: x.index_add(-1, T.tensor([0]), x[..., :1]),
        lambda a: a.ndim >= 1,
    ),
    (
        "{0}.scatter_add(0, T.zeros_like({0}, dtype=T.int64), {0})",
        lambda T, x: x.scatter_add(0, T.zeros_like(x, dtype=T.int64), x),
        None,
    ),
    (
        "({} * 1).scatter_(0, T.zeros(1, dtype=T.int64), 1.5)",
        lambda T, x: (x * 1).scatter_(0, T.zeros(1, dtype=T.int64), 1.5),
        lambda a: a.ndim == 1,
    ),
    ("{}.rot90()", lambda T, x: x.rot90(), None),
    ("{}.repeat_interleave(2)", lambda T, x: x.repeat_interleave(2), None),
    ("{}.repeat_interleave(2, 0)", lambda T, x: x.repeat_interleave(2, 0), None),
    ("T.kron({0}, {0})", lambda T, x: T.kron(x, x), lambda a: a.size <= 12),
    ("T.block_diag({0}, {0})", lambda T, x: T.block_diag(x, x), lambda a: a.ndim <= 2),
    ("T.cartesian_prod({0}, {0})", lambda T, x: T.cartesian_prod(x, x), lambda a: a.ndim == 1),
]
UNARY += UNARY_REDUCTIONS_MORE

# einsum and tensordot (PyTorch's permute/reshape/bmm decompositions), composed like UNARY's.
UNARY_EINSUM = [
    (
        "T.einsum('...ij->...ji', {})",
        lambda T, x: T.einsum("...ij->...ji", x),
        lambda a: a.ndim >= 2,
    ),
    (
        "T.einsum('...ij,...kj->...ik', {0}, {0})",
        lambda T, x: T.einsum("...ij,...kj->...ik", x, x),
        lambda a: a.ndim >= 2,
    ),
    ("T.einsum('i...,i...->...', {0}, {0})", lambda T, x: T.einsum("i...,i...->...", x, x), None),
    ("T.einsum('i...->', {})", lambda T, x: T.einsum("i...->", x), lambda a: a.ndim >= 1),
    (
        "T.tensordot({0}, {0}, ([0], [0]))",
        lambda T, x: T.tensordot(x, x, ([0], [0])),
        lambda a: a.ndim >= 1,
    ),
    ("T.tensordot({0}, {0}, {0}.dim())", lambda T, x: T.tensordot(x, x, x.dim()), None),
]


# Linear algebra on well-conditioned square matrices made from the operand: X X^T + I (its
# eigenvalues are at least 1), so that det, inv, solve and cholesky compare at full precision.
def _gram(T, x):
    return x @ x.mT + T.eye(x.shape[-2], dtype=x.dtype)


def _small_matrix(a):
    return a.ndim >= 2 and a.shape[-2] <= 4 and np.all(np.abs(a) < 3)


UNARY_LINALG = [
    ("T.linalg.det(gram({}))", lambda T, x: T.linalg.det(_gram(T, x)), _small_matrix),
    ("T.logdet(gram({}))", lambda T, x: T.logdet(_gram(T, x)), _small_matrix),
    ("T.linalg.inv(gram({}))", lambda T, x: T.linalg.inv(_gram(T, x)), _small_matrix),
    ("T.linalg.solve(gram({0}), {0})", lambda T, x: T.linalg.solve(_gram(T, x), x), _small_matrix),
    ("T.linalg.cholesky(gram({}))", lambda T, x: T.linalg.cholesky(_gram(T, x)), _small_matrix),
]
UNARY += UNARY_LINALG

# The LU family (branch linalg2), on the same well-conditioned matrices.
UNARY_LINALG2 = [
    (
        "T.linalg.lu_factor(gram({})).LU",
        lambda T, x: T.linalg.lu_factor(_gram(T, x)).LU,
        _small_matrix,
    ),
    ("T.linalg.lu(gram({})).U", lambda T, x: T.linalg.lu(_gram(T, x)).U, _small_matrix),
    (
        "(lambda P, L, U: L @ U)(*T.linalg.lu(gram({})))",
        lambda T, x: (lambda P, L, U: L @ U)(*T.linalg.lu(_gram(T, x))),
        _small_matrix,
    ),
    (
        "T.linalg.lu_solve(*T.linalg.lu_factor(gram({0})), {0})",
        lambda T, x: T.linalg.lu_solve(*T.linalg.lu_factor(_gram(T, x)), x),
        _small_matrix,
    ),
    (
        "T.lu_unpack(*T.linalg.lu_factor(gram({}))).L",
        lambda T, x: T.lu_unpack(*T.linalg.lu_factor(_gram(T, x))).L,
        _small_matrix,
    ),
]
UNARY += UNARY_LINALG2

# Distances between rows and a bilinear form of the operand with itself (branch linalg2).
UNARY_DISTANCES = [
    ("T.cdist({0}, {0})", lambda T, x: T.cdist(x, x), lambda a: a.ndim >= 2),
    ("T.cdist({0}, {0}, p=1)", lambda T, x: T.cdist(x, x, p=1), lambda a: a.ndim >= 2),
    ("T.pdist({})", lambda T, x: T.pdist(x), lambda a: a.ndim == 2),
    (
        "F.bilinear({0}, {0}, ones(2, n, n))",
        lambda T, x: T.nn.functional.bilinear(
            x, x, T.ones(2, x.shape[-1], x.shape[-1], dtype=x.dtype)
        ),
        lambda a: a.ndim >= 1,
    ),
]
UNARY += UNARY_DISTANCES

# matrix_power, vecdot and multi_dot (PyTorch composes them of clone, inv, mm, mul, sum).
UNARY_LINALG_COMPOSITES = [
    (
        "T.linalg.matrix_power(gram({}), 3)",
        lambda T, x: T.linalg.matrix_power(_gram(T, x), 3),
        _small_matrix,
    ),
    (
        "T.linalg.matrix_power(gram({}), -2)",
        lambda T, x: T.linalg.matrix_power(_gram(T, x), -2),
        _small_matrix,
    ),
    (
        "{}.matrix_power(1)",
        lambda T, x: x.matrix_power(1),
        lambda a: a.ndim >= 2 and a.shape[-1] == a.shape[-2],
    ),
    ("T.linalg.vecdot({0}, {0})", lambda T, x: T.linalg.vecdot(x, x), lambda a: a.ndim >= 1),
    (
        "T.linalg.multi_dot([{0}, {0}.mT, {0}])",
        lambda T, x: T.linalg.multi_dot([x, x.mT, x]),
        lambda a: a.ndim == 2,
    ),
]
UNARY += UNARY_LINALG_COMPOSITES

# Householder reflectors: the operand as packed reflectors (m >= n), scales made from it.
_TALL = lambda a: a.ndim >= 2 and a.shape[-2] >= a.shape[-1]  # noqa: E731
UNARY_HOUSEHOLDER = [
    (
        "T.linalg.householder_product({0}, {0}[..., 0, :].tanh())",
        lambda T, x: T.linalg.householder_product(x, x[..., 0, :].tanh()),
        _TALL,
    ),
    (
        "T.ormqr({0}, {0}[..., 0, :].tanh(), {0})",
        lambda T, x: T.ormqr(x, x[..., 0, :].tanh(), x),
        _TALL,
    ),
]
UNARY += UNARY_HOUSEHOLDER
UNARY += [
    (
        "T.linalg.lstsq(gram({0}), {0}).solution",
        lambda T, x: T.linalg.lstsq(_gram(T, x), x).solution,
        _small_matrix,
    ),
]

# torch.distributions: the calls whose results are deterministic (log_prob, entropy, KL), with
# their parameters drawn from the program; validation is off where a drawn value could fall
# outside a support (PyTorch and nbgrad would both raise, which says nothing about the graph).
_D = "T.distributions."
UNARY_DISTRIBUTIONS = [
    (
        _D + "Normal({0}, 1.5).log_prob({0}.detach() * 0.5)",
        lambda T, x: T.distributions.Normal(x, 1.5).log_prob(x.detach() * 0.5),
        None,
    ),
    (
        _D + "Normal(0.0, {}.exp()).entropy()",
        lambda T, x: T.distributions.Normal(0.0, x.exp()).entropy(),
        lambda a: np.all(np.abs(a) < 5),
    ),
    (
        _D + "Categorical(logits={}).entropy()",
        lambda T, x: T.distributions.Categorical(logits=x).entropy(),
        lambda a: a.ndim >= 1 and a.shape[-1] >= 1 and np.all(np.abs(a) < 30),
    ),
    (
        _D + "Categorical(logits={}).log_prob(T.tensor(0))",
        lambda T, x: T.distributions.Categorical(logits=x).log_prob(T.tensor(0)),
        lambda a: a.ndim >= 1 and a.shape[-1] >= 1 and np.all(np.abs(a) < 30),
    ),
    (
        _D + "Bernoulli(logits={0}).log_prob({0}.detach().sign().clamp(min=0))",
        lambda T, x: T.distributions.Bernoulli(logits=x).log_prob(x.detach().sign().clamp(min=0)),
        None,
    ),
    (
        _D + "Bernoulli(logits={}).entropy()",
        lambda T, x: T.distributions.Bernoulli(logits=x).entropy(),
        None,
    ),
    (
        _D + "kl_divergence(D.Normal({}, 1.0), D.Normal(0.0, 2.0))",
        lambda T, x: T.distributions.kl_divergence(
            T.distributions.Normal(x, 1.0), T.distributions.Normal(0.0, 2.0)
        ),
        None,
    ),
]
UNARY += UNARY_DISTRIBUTIONS
BINARY_MORE += [
    (
        _D + "Normal({}, {}.exp()).log_prob(T.zeros(()))",
        lambda T, x, y: T.distributions.Normal(x, y.exp()).log_prob(T.zeros(())),
        lambda a, b: _broadcastable(a, b) and np.all(np.abs(b) < 5),
    ),
    (
        _D + "kl_divergence(D.Normal({0}, {1}.exp()), D.Normal({1}, 1.0))",
        lambda T, x, y: T.distributions.kl_divergence(
            T.distributions.Normal(x, y.exp()), T.distributions.Normal(y, 1.0)
        ),
        lambda a, b: _broadcastable(a, b) and np.all(np.abs(b) < 5),
    ),
    (
        _D + "Laplace({}, {}.exp()).log_prob(T.zeros(()))",
        lambda T, x, y: T.distributions.Laplace(x, y.exp()).log_prob(T.zeros(())),
        lambda a, b: _broadcastable(a, b) and np.all(np.abs(b) < 5) and np.all(np.abs(a) > 1e-6),
    ),
    (
        _D + "kl_divergence(D.Categorical(logits={}), D.Categorical(logits={}))",
        lambda T, x, y: T.distributions.kl_divergence(
            T.distributions.Categorical(logits=x), T.distributions.Categorical(logits=y)
        ),
        lambda a, b: a.shape == b.shape and a.ndim >= 1 and a.shape[-1] >= 1,
    ),
]


# Layers of issue 14's last pieces on the operand read as (steps, batch, ...): packed sequences.
def _lengths(a):
    """Lengths for a (T, B, ...) operand, longest first: T, T - 1, ..., at least 1."""
    return [max(a.shape[0] - i, 1) for i in range(a.shape[1])]


def _pack(T, x):
    return T.nn.utils.rnn.pack_padded_sequence(x, _lengths(x))


UNARY_NN14 = [
    (
        "pack_padded_sequence({}, lengths).data",
        lambda T, x: _pack(T, x).data,
        lambda a: a.ndim >= 2 and a.size > 0,
    ),
    (
        "pad_packed_sequence(pack_padded_sequence({}, lengths))[0]",
        lambda T, x: T.nn.utils.rnn.pad_packed_sequence(_pack(T, x), batch_first=True)[0],
        lambda a: a.ndim >= 2 and a.size > 0,
    ),
    (
        "T.channel_shuffle({}, 2)",
        lambda T, x: T.channel_shuffle(x, 2),
        lambda a: a.ndim >= 3 and a.shape[1] % 2 == 0 and a.size > 0,
    ),
    (
        "F.max_unpool1d(*F.max_pool1d({}, 2, return_indices=True), 2)",
        lambda T, x: T.nn.functional.max_unpool1d(
            *T.nn.functional.max_pool1d(x, 2, return_indices=True), 2
        ),
        lambda a: a.ndim == 3 and a.shape[-1] >= 2 and a.size > 0,
    ),
    (
        "F.conv3d({}[None], weight 2x1x2x1x1 of 0.5)",
        lambda T, x: T.nn.functional.conv3d(x[None], T.full((2, 1, 2, 1, 1), 0.5, dtype=x.dtype)),
        lambda a: a.ndim == 3 and a.shape[0] >= 2 and a.size > 0,
    ),
    (
        "F.interpolate({}[None], scale_factor=2, mode='bicubic')",
        lambda T, x: T.nn.functional.interpolate(x[None], scale_factor=2, mode="bicubic"),
        lambda a: a.ndim == 3 and a.size > 0,
    ),
    (
        "F.interpolate({}[None, None], size=(3, 2, 4), mode='trilinear')",
        lambda T, x: T.nn.functional.interpolate(x[None, None], (3, 2, 4), mode="trilinear"),
        lambda a: a.ndim == 3 and a.size > 0,
    ),
    (
        "F.conv_transpose3d({}[None], weight 1x2x2x1x2 of 0.5, stride=2)",
        lambda T, x: T.nn.functional.conv_transpose3d(
            x[None], T.full((1, 2, 2, 1, 2), 0.5, dtype=x.dtype), stride=2
        ),
        lambda a: a.ndim == 3 and a.size > 0,
    ),
]
UNARY += UNARY_NN14


# nn functions, more: margin losses against class 0, conv_tbc, weight norm (not rrelu: in eval
# PyTorch saves an uninitialised noise buffer, which no comparison can match).
def _margins_away(a):
    """2-d and not empty (PyTorch returns garbage for an empty batch), and every margin
    1 - x[i, 0] + x[i, j] (j > 0) away from the loss's kink at 0."""
    return (
        a.ndim == 2
        and a.shape[0] > 0
        and a.shape[1] > 1
        and np.all(np.abs(1 - a[:, :1] + a[:, 1:]) > 1e-4)
    )


UNARY_NN_EXTRA = [
    (
        "F.multi_margin_loss({0}, T.zeros({0}.shape[0], dtype=T.long))",
        lambda T, x: T.nn.functional.multi_margin_loss(x, T.zeros(x.shape[0], dtype=T.long)),
        _margins_away,
    ),
    (
        "F.multilabel_margin_loss({0}, T.zeros_like({0}, dtype=T.long), reduction='none')",
        lambda T, x: T.nn.functional.multilabel_margin_loss(
            x, T.zeros_like(x, dtype=T.long), reduction="none"
        ),
        _margins_away,
    ),
    (
        "T.conv_tbc({0}, T.ones(2, {0}.shape[2], 3), T.ones(3), 1)",
        lambda T, x: T.conv_tbc(
            x, T.ones(2, x.shape[2], 3, dtype=x.dtype), T.ones(3, dtype=x.dtype), 1
        ),
        lambda a: a.ndim == 3,
    ),
    (
        "T._weight_norm({0}, {0}.sum(-1, keepdim=True), 0)",
        lambda T, x: T._weight_norm(x, x.sum(-1, keepdim=True), 0),
        lambda a: a.ndim == 2 and np.all(np.linalg.norm(a, axis=1) > 0.1),
    ),
    (
        "F.affine_grid({0}[:1].reshape(-1)[:6].reshape(1, 2, 3), (1, 1, 2, 3), "
        "align_corners=False)",
        lambda T, x: T.nn.functional.affine_grid(
            x[:1].reshape(-1)[:6].reshape(1, 2, 3), (1, 1, 2, 3), align_corners=False
        ),
        lambda a: a.ndim >= 1 and a[:1].size >= 6,
    ),
    (
        "F.embedding_bag(T.tensor([[0, 1], [1, 0]]), {}, mode='mean')",
        lambda T, x: T.nn.functional.embedding_bag(T.tensor([[0, 1], [1, 0]]), x, mode="mean"),
        lambda a: a.ndim == 2 and a.shape[0] >= 2,
    ),
    (
        "F.fractional_max_pool2d({0}, (1, 2), output_size=({0}.shape[1], {0}.shape[2] - 1), "
        "_random_samples=T.full((1, {0}.shape[0], 2), 0.4))",
        lambda T, x: T.nn.functional.fractional_max_pool2d(
            x,
            (1, 2),
            output_size=(x.shape[1], x.shape[2] - 1),
            _random_samples=T.full((1, x.shape[0], 2), 0.4, dtype=x.dtype),
        ),
        lambda a: a.ndim == 3 and a.shape[2] >= 2 and a.size > 0 and np.all(np.isfinite(a)),
    ),
    (
        "T._masked_softmax({0}, {0} < {0}.amax(-1, keepdim=True) - 1)",
        lambda T, x: T._masked_softmax(x, x.detach() < x.detach().amax(-1, keepdim=True) - 1),
        # (contiguous only: PyTorch 2.13's CPU kernel reads a permuted input wrongly, README)
        lambda a: a.ndim >= 1 and a.size > 0 and np.all(np.abs(a) < 50) and a.flags.c_contiguous,
    ),
    (
        "F.ctc_loss({0}.log_softmax(2), T.ones({0}.shape[1], 1, dtype=T.long), "
        "[{0}.shape[0]] * {0}.shape[1], [1] * {0}.shape[1])",
        lambda T, x: T.nn.functional.ctc_loss(
            x.log_softmax(2),
            T.ones(x.shape[1], 1, dtype=T.long),
            [x.shape[0]] * x.shape[1],
            [1] * x.shape[1],
        ),
        lambda a: a.ndim == 3 and a.shape[2] >= 2 and a.size > 0 and np.all(np.abs(a) < 30),
    ),
]
UNARY += UNARY_NN_EXTRA


# Special functions (lgamma, digamma, polygamma, Bessel, torch.special), inside their domains.
def _unique_values(a):
    return np.unique(a).size == a.size


def _within(low, high):
    return lambda a: np.all(a > low) and np.all(a < high)


UNARY_SPECIAL = [
    ("{}.lgamma()", lambda T, x: x.lgamma(), _within(0.1, 30)),
    ("T.digamma({})", lambda T, x: T.digamma(x), _within(0.2, 30)),
    ("T.polygamma(2, {})", lambda T, x: T.polygamma(2, x), _within(0.3, 30)),
    ("T.mvlgamma({}, 2)", lambda T, x: T.mvlgamma(x, 2), _within(0.8, 30)),
    ("T.i0({})", lambda T, x: T.i0(x), _within(-20, 20)),
    ("T.special.i1e({})", lambda T, x: T.special.i1e(x), _within(-20, 20)),
    ("T.special.entr({})", lambda T, x: T.special.entr(x), _within(0.05, 1e3)),
    ("T.special.ndtri({})", lambda T, x: T.special.ndtri(x), _within(0.05, 0.95)),
    ("T.special.log_ndtr({})", lambda T, x: T.special.log_ndtr(x), _within(-20, 20)),
    ("T.special.erfcx({})", lambda T, x: T.special.erfcx(x), _within(-3, 20)),
    ("T.special.xlog1py({0}, {0})", lambda T, x: T.special.xlog1py(x, x), _within(-0.8, 1e3)),
    ("T.special.zeta(3.0, {})", lambda T, x: T.special.zeta(3.0, x), _within(0.2, 30)),
    ("T.angle({})", lambda T, x: T.angle(x), lambda a: np.all(a != 0)),
    ("{}.frexp().mantissa", lambda T, x: x.frexp().mantissa, None),
    ("({0} * 1).lt_(0.3) * {0}", lambda T, x: (x * 1).lt_(0.3) * x, lambda a: _away(a, 0.3)),
    ("({} * 1).ne_(0.5)", lambda T, x: (x * 1).ne_(0.5), None),
    ("({} * 1).unsqueeze_(-1)", lambda T, x: (x * 1).unsqueeze_(-1), None),
    ("({} * 1).unsqueeze(0).squeeze_(0)", lambda T, x: (x * 1).unsqueeze(0).squeeze_(0), None),
    ("{}.unsqueeze(-1).squeeze((0, -1))", lambda T, x: x.unsqueeze(-1).squeeze((0, -1)), None),
    ("({} * 1).t_()", lambda T, x: (x * 1).t_(), lambda a: a.ndim <= 2),
    ("T.fill({}, 1.5)", lambda T, x: T.fill(x, 1.5), None),
    ("T.nansum({})", lambda T, x: T.nansum(x), None),
    ("{}.nansum(-1, keepdim=True)", lambda T, x: x.nansum(-1, keepdim=True), lambda a: a.ndim),
    ("T.nanmedian({})", lambda T, x: T.nanmedian(x), _unique_values),
    ("{}.nanmedian(0).values", lambda T, x: x.nanmedian(0).values, _unique_values),
    ("T.aminmax({}).max", lambda T, x: T.aminmax(x).max, _unique_values),
    (
        "sum(T.aminmax({}, dim=-1))",
        lambda T, x: sum(T.aminmax(x, dim=-1)),
        lambda a: a.ndim and _unique_values(a),
    ),
    (
        "T.slice_scatter({0}, {0}[:1] * 2)",
        lambda T, x: T.slice_scatter(x, x[:1] * 2),
        lambda a: a.ndim,
    ),
    (
        "{0}.select_scatter({0}[0], 0, -1)",
        lambda T, x: x.select_scatter(x[0], 0, -1),
        lambda a: a.ndim,
    ),
    (
        "T.diagonal_scatter({0}, {0}.diagonal() ** 2)",
        lambda T, x: T.diagonal_scatter(x, x.diagonal() ** 2),
        lambda a: a.ndim >= 2,
    ),
    ("{}.narrow_copy(0, 0, 1)", lambda T, x: x.narrow_copy(0, 0, 1), lambda a: a.ndim),
    (
        "T.unsafe_split_with_sizes({}, [1, 1])[1]",
        lambda T, x: T.unsafe_split_with_sizes(x, [1, 1])[1],
        lambda a: a.ndim and len(a) == 2,
    ),
    ("T._safe_softmax({}, -1)", lambda T, x: T._safe_softmax(x, -1), lambda a: a.ndim),
    (
        "{0}.index_fill(0, T.tensor([0]), {0}.sum())",
        lambda T, x: x.index_fill(0, T.tensor([0]), x.sum()),
        lambda a: a.ndim,
    ),
    (
        "T.put({0}, T.tensor([0, -1]), {0}.reshape(-1)[:2] * 2, True)",
        lambda T, x: T.put(x, T.tensor([0, -1]), x.reshape(-1)[:2] * 2, True),
        lambda a: a.size >= 2,
    ),
]
UNARY += UNARY_SPECIAL

# branch everyday: grouped query attention, key and value made of every other head of the query
UNARY_EVERYDAY2 = [
    (
        "F.scaled_dot_product_attention({0}, {0}[..., ::2, :, :], {0}[..., ::2, :, :], "
        "enable_gqa=True)",
        lambda T, x: T.nn.functional.scaled_dot_product_attention(
            x, x[..., ::2, :, :], x[..., ::2, :, :], enable_gqa=True
        ),
        lambda a: a.ndim >= 3 and a.shape[-3] % 2 == 0 and a.size > 0 and np.all(np.abs(a) < 10),
    ),
]
UNARY += UNARY_EVERYDAY2


def _mha_self_attention(T, x):
    """F.multi_head_attention_forward on a (length, batch, embed) value, one head, with fixed
    projection weights (the same numbers in both libraries)."""
    embed = x.shape[-1]
    w = T.linspace(-0.5, 0.6, 3 * embed * embed, dtype=x.dtype).reshape(3 * embed, embed)
    out_w = T.linspace(0.4, -0.3, embed * embed, dtype=x.dtype).reshape(embed, embed)
    return T.nn.functional.multi_head_attention_forward(
        x, x, x, embed, 1, w, None, None, None, False, 0.0, out_w, None
    )[0]


# The attention calls: in-place transposes, renorm, quantile, nanquantile,
# scaled_dot_product_attention's composite path, multi_head_attention_forward.
UNARY_ATTENTION = [
    ("({} * 1).transpose_(0, -1)", lambda T, x: (x * 1).transpose_(0, -1), lambda a: a.ndim),
    ("({} * 1).swapdims_(-1, 0)", lambda T, x: (x * 1).swapdims_(-1, 0), lambda a: a.ndim),
    ("{}.swapaxes_(0, -1) (in place)", lambda T, x: x.swapaxes_(0, -1), lambda a: a.ndim),
    ("T.renorm({}, 2, 0, 1.0)", lambda T, x: T.renorm(x, 2, 0, 1.0), lambda a: a.ndim >= 2),
    ("{}.renorm(1, -1, 0.5)", lambda T, x: x.renorm(1, -1, 0.5), lambda a: a.ndim >= 2),
    ("({} * 1).renorm_(2, 0, 1.0)", lambda T, x: (x * 1).renorm_(2, 0, 1.0), lambda a: a.ndim >= 2),
    (
        "{}.renorm_(2, -1, 0.5) (in place)",
        lambda T, x: x.renorm_(2, -1, 0.5),
        lambda a: a.ndim >= 2,
    ),
    ("T.quantile({}, 0.3)", lambda T, x: T.quantile(x, 0.3), _unique_values),
    (
        "{}.nanquantile(T.tensor([0.2, 0.9], dtype=T.float64), dim=-1)",
        lambda T, x: x.nanquantile(T.tensor([0.2, 0.9], dtype=T.float64), dim=-1),
        lambda a: a.ndim and _unique_values(a),
    ),
    (
        "F.scaled_dot_product_attention({0}, {0}, {0})",
        lambda T, x: T.nn.functional.scaled_dot_product_attention(x, x, x),
        lambda a: a.ndim >= 2 and np.all(np.abs(a) < 20),
    ),
    (
        "F.multi_head_attention_forward({0}, {0}, {0}, ...)[0]",
        _mha_self_attention,
        lambda a: a.ndim == 3 and np.all(np.abs(a) < 20),
    ),
]
UNARY += UNARY_ATTENTION


# Convolution, layer norm and batch norm with weights cut from the operand itself (so the double
# backward reaches input and weight): ConvolutionBackwardBackward0, NativeLayerNormBackward-
# Backward0 and NativeBatchNormBackwardBackward0 under create_graph.
UNARY_NORM_CONV = [
    (
        "F.conv1d({0}, {0}[:2], {0}[0, :2, 0], padding=1)",
        lambda T, x: T.nn.functional.conv1d(x, x[:2], x[0, :2, 0], padding=1),
        lambda a: a.ndim == 3 and a.shape[0] >= 2 and a.shape[1] >= 2,
    ),
    (
        "F.conv2d({0}[None], {0}[None, :, :2, :2], stride=2, padding=1)",
        lambda T, x: T.nn.functional.conv2d(x[None], x[None, :, :2, :2], stride=2, padding=1),
        lambda a: a.ndim == 3 and a.shape[1] >= 2 and a.shape[2] >= 2,
    ),
    (
        "F.conv_transpose1d({0}, {0}.transpose(0, 1)[:, :2, :2], stride=2, output_padding=1)",
        lambda T, x: T.nn.functional.conv_transpose1d(
            x, x.transpose(0, 1)[:, :2, :2], stride=2, output_padding=1
        ),
        lambda a: a.ndim == 3 and a.shape[0] >= 2 and a.shape[2] >= 2,
    ),
    (
        "F.layer_norm({0}, {0}.shape[-1:], {0}.reshape(-1, n)[0], {0}.reshape(-1, n)[-1])",
        lambda T, x: T.nn.functional.layer_norm(
            x, x.shape[-1:], x.reshape(-1, x.shape[-1])[0], x.reshape(-1, x.shape[-1])[-1]
        ),
        lambda a: a.ndim >= 2 and a.shape[-1] >= 3 and a.size // a.shape[-1] >= 2,
    ),
    (
        "F.layer_norm({0}, {0}.shape[-2:])",
        lambda T, x: T.nn.functional.layer_norm(x, x.shape[-2:]),
        lambda a: a.ndim >= 2 and a.shape[-1] * a.shape[-2] >= 3,
    ),
    (
        "F.batch_norm({0}, None, None, {0}[0, :, 0], {0}[-1, :, 0], training=True)",
        lambda T, x: T.nn.functional.batch_norm(
            x, None, None, x[0, :, 0], x[-1, :, 0], training=True
        ),
        lambda a: a.ndim == 3 and a.shape[0] >= 2 and a.shape[0] * a.shape[2] >= 3,
    ),
    (
        "F.batch_norm({0}, zeros(C) + 0.5, ones(C) * 2, {0}[0, :, 0], training=False)",
        lambda T, x: T.nn.functional.batch_norm(
            x,
            T.zeros(x.shape[1], dtype=x.dtype) + 0.5,
            T.ones(x.shape[1], dtype=x.dtype) * 2,
            x[0, :, 0],
            training=False,
        ),
        lambda a: a.ndim == 3,
    ),
]
UNARY += UNARY_NORM_CONV

# slice_inverse and as_strided_scatter (the private indexing ops are not composed: their
# indices depend on shapes)
UNARY_IDX = [
    (
        "T.slice_inverse({0}[1:], {0}, 0, 1)",
        lambda T, x: T.slice_inverse(x[1:], x, 0, 1),
        lambda a: a.ndim and a.shape[0] >= 2,
    ),
    (
        # (self detached: PyTorch 2.13's gradient for it is not the derivative, README)
        "T.as_strided_scatter({0}.detach().contiguous(), {0}.reshape(-1)[:2] * 2, (2,), (1,))",
        lambda T, x: T.as_strided_scatter(
            x.detach().contiguous(), x.reshape(-1)[:2] * 2, (2,), (1,)
        ),
        lambda a: a.size >= 2,
    ),
]
UNARY += UNARY_IDX


def unary(p):
    text, fn, domain = p.choice(UNARY, "unary")
    x = p.pick("operand", domain or (lambda a: True))
    if x is not None:
        p.step(text, fn, x)


def attention(p):
    """One of the attention calls, drawn more often than its share of UNARY gives it."""
    text, fn, domain = p.choice(UNARY_ATTENTION, "attention call")
    x = p.pick("operand", domain)
    if x is not None:
        p.step(text, fn, x)


def norm_conv(p):
    """One of the convolution and norm calls, drawn more often than its share of UNARY gives."""
    text, fn, domain = p.choice(UNARY_NORM_CONV, "convolution or norm call")
    x = p.pick("operand", domain)
    if x is not None:
        p.step(text, fn, x)


def _lstm_layer(T, x):
    """One float32 nn.LSTM layer over the operand read as (steps, batch, features): oneDNN's
    kernel in PyTorch (MkldnnRnnLayerBackward0), with weights of the matching shapes drawn from
    the operand's size (the same numbers in both libraries; they need no grad)."""
    model = T.nn.LSTM(x.shape[-1], 2)
    model.requires_grad_(False)
    with T.no_grad():
        for i, weight in enumerate(model.parameters()):
            values = T.linspace(-0.6, 0.5, weight.numel()) * (1 - 0.3 * i)
            weight.copy_(values.reshape(weight.shape))
    return model(x.float())[0]


def lstm(p):
    """A float32 LSTM layer on a 3-d value; the rest of the program then compares within float32
    rounding (oneDNN's kernel does not round as NumPy does)."""
    x = p.pick("operand", lambda a: a.ndim == 3 and a.size > 0 and np.all(np.abs(a) < 20))
    if x is not None:
        p.allow_float32_rounding()
        p.step("nn.LSTM({0}.shape[-1], 2)({0}.float())[0]", _lstm_layer, x)


def einsum_like(p):
    text, fn, domain = p.choice(UNARY_EINSUM, "einsum")
    x = p.pick("operand", domain or (lambda a: True))
    if x is not None:
        p.step(text, fn, x)


def softmax(p):
    x = p.pick("operand", lambda a: a.ndim >= 1 and np.all(np.abs(a) < 50))
    if x is None:
        return
    dim = p.draw(st.integers(-x[0].dim(), x[0].dim() - 1), "dim")
    name = p.choice(["softmax", "log_softmax"], "which")
    p.step(f"{{}}.{name}({dim})", lambda T, t: getattr(t, name)(dim), x)


def reduction(p):
    x = p.pick("operand")
    ndim = x[0].dim()
    name = p.choice(["sum", "mean", "max", "min", "amax", "amin"], "reduction")
    if name in ("max", "min", "amax", "amin") and np.unique(_array(x[0])).size != x[0].numel():
        return  # ties: which element gets the gradient is a tie-break, not a formula
    if ndim == 0 or p.draw(st.booleans(), "over everything"):
        if name in ("amax", "amin"):
            p.step(f"{{}}.{name}()", lambda T, t: getattr(t, name)(), x)
        else:
            p.step(f"{{}}.{name}()", lambda T, t: getattr(t, name)(), x)
        return
    keepdim = p.draw(st.booleans(), "keepdim")
    dim = p.draw(st.integers(-ndim, ndim - 1), "dim")
    if name in ("max", "min"):
        part = p.choice(["[0]", ".values"], "part")
        get = (lambda r: r[0]) if part == "[0]" else (lambda r: r.values)
        p.step(
            f"{{}}.{name}({dim}, keepdim={keepdim}){part}",
            lambda T, t: get(getattr(t, name)(dim, keepdim=keepdim)),
            x,
        )
        return
    if name in ("sum", "mean") and ndim >= 2 and p.draw(st.booleans(), "tuple of dims"):
        dim = (0, dim % ndim) if dim % ndim != 0 else (0,)
    p.step(
        f"{{}}.{name}({dim!r}, keepdim={keepdim})",
        lambda T, t: getattr(t, name)(dim, keepdim=keepdim),
        x,
    )


def _matmul_shape(a, b):
    try:
        return np.matmul(np.zeros(a.shape), np.zeros(b.shape)).shape
    except ValueError:
        return None


def matmul(p):
    form = p.choice(["@", "matmul", "mm", "mv", "dot", "bmm", "self", "new"], "matmul form")
    if form == "self":
        # A value times its own transpose: one tensor used twice.
        x = p.pick("operand", lambda a: a.ndim >= 2 and np.all(np.abs(a) < 1e3))
        if x is not None:
            p.step("{0} @ {0}.transpose(-1, -2)", lambda T, t: t @ t.transpose(-1, -2), x)
        return
    if form == "new":
        # A fresh weight of a fitting shape, as in x @ W.
        x = p.pick("operand", lambda a: a.ndim >= 1 and np.all(np.abs(a) < 1e3))
        if x is None:
            return
        columns = p.draw(st.integers(1, 3), "columns")
        shape = (x[0].shape[-1], columns) if p.draw(st.booleans(), "matrix") else (x[0].shape[-1],)
        w = p.leaf(shape)
        p.step("{} @ {}", lambda T, a, b: a @ b, x, w)
        return
    ranks = {"mm": (2, 2), "mv": (2, 1), "dot": (1, 1), "bmm": (3, 3)}.get(form)
    small = lambda a: np.all(np.abs(a) < 1e3)  # noqa: E731

    def fits(a, b):
        if ranks is not None and (a.ndim, b.ndim) != ranks:
            return False
        if ranks is None and (a.ndim == 0 or b.ndim == 0):
            return False
        return small(a) and small(b) and _matmul_shape(a, b) is not None

    a = p.pick("left", lambda t: small(t) and (ranks is None or t.ndim == ranks[0]))
    if a is None:
        return
    b = p.pick("right", lambda t: fits(_array(a[0]), t))
    if b is None:
        return
    texts = {
        "@": "{} @ {}",
        "matmul": "T.matmul({}, {})",
        "mm": "T.mm({}, {})",
        "mv": "{}.mv({})",
        "dot": "T.dot({}, {})",
        "bmm": "T.bmm({}, {})",
    }
    functions = {
        "@": lambda T, x, y: x @ y,
        "matmul": lambda T, x, y: T.matmul(x, y),
        "mm": lambda T, x, y: T.mm(x, y),
        "mv": lambda T, x, y: x.mv(y),
        "dot": lambda T, x, y: T.dot(x, y),
        "bmm": lambda T, x, y: T.bmm(x, y),
    }
    p.step(texts[form], functions[form], a, b)


def _factorisations(shape):
    n = int(np.prod(shape))
    options = [(n,), (-1,), (1, n), (n, 1)]
    for d in range(2, n):
        if n % d == 0:
            options.append((d, n // d))
            options.append((d, -1))
    return options


def view(p):
    x = p.pick("operand")
    t = x[0]
    ndim = t.dim()
    form = p.choice(
        [
            "reshape",
            "view",
            "transpose",
            "permute",
            "t",
            "T",
            "unsqueeze",
            "squeeze",
            "squeeze_dim",
            "expand",
            "flatten",
            "narrow",
            "view_as",
        ],
        "view form",
    )
    if form in ("reshape", "view"):
        shape = p.choice(_factorisations(tuple(t.shape)), "shape")
        p.step(f"{{}}.{form}{shape}", lambda T, a: getattr(a, form)(*shape), x)
    elif form == "transpose" and ndim >= 1:
        d0, d1 = (p.draw(st.integers(-ndim, ndim - 1), f"dim{i}") for i in range(2))
        p.step(f"{{}}.transpose({d0}, {d1})", lambda T, a: a.transpose(d0, d1), x)
    elif form == "permute":
        order = tuple(p.draw(st.permutations(range(ndim)), "order"))
        p.step(f"{{}}.permute{order}", lambda T, a: a.permute(*order), x)
    elif form == "t" and ndim <= 2:
        p.step("{}.t()", lambda T, a: a.t(), x)
    elif form == "T" and ndim != 3:
        p.step("{}.T", lambda T, a: a.T, x)
    elif form == "unsqueeze" and ndim < 4:
        dim = p.draw(st.integers(-ndim - 1, ndim), "dim")
        p.step(f"{{}}.unsqueeze({dim})", lambda T, a: a.unsqueeze(dim), x)
    elif form == "squeeze":
        p.step("{}.squeeze()", lambda T, a: a.squeeze(), x)
    elif form == "squeeze_dim" and ndim >= 1:
        dim = p.draw(st.integers(-ndim, ndim - 1), "dim")
        p.step(f"{{}}.squeeze({dim})", lambda T, a: a.squeeze(dim), x)
    elif form == "expand":
        lead = p.draw(st.integers(0, 1), "new dims")
        sizes = [2] * lead + [
            p.choice([s, -1, 3], "size") if s == 1 else p.choice([s, -1], "size") for s in t.shape
        ]
        p.step(f"{{}}.expand{tuple(sizes)}", lambda T, a: a.expand(*sizes), x)
    elif form == "flatten" and ndim >= 1:
        start = p.draw(st.integers(0, ndim - 1), "start")
        end = p.draw(st.integers(start, ndim - 1), "end")
        p.step(f"{{}}.flatten({start}, {end})", lambda T, a: a.flatten(start, end), x)
    elif form == "narrow" and ndim >= 1:
        dim = p.draw(st.integers(0, ndim - 1), "dim")
        size = t.shape[dim]
        start = p.draw(st.integers(0, max(size - 1, 0)), "start")
        length = p.draw(st.integers(0, size - start), "length")
        p.step(
            f"{{}}.narrow({dim}, {start}, {length})", lambda T, a: a.narrow(dim, start, length), x
        )
    elif form == "view_as":
        y = p.pick("target", lambda a: a.size == t.numel())
        p.step("{}.view_as({})", lambda T, a, b: a.view_as(b), x, y)


def index(p):
    x = p.pick("operand", lambda a: a.ndim >= 1 and a.size > 0)
    if x is None:
        return
    t = x[0]
    n0, j = t.shape[0], None
    i = p.draw(st.integers(-n0, n0 - 1), "int")
    keys = [
        ("[{i}]", lambda T, a: a[i]),
        ("[{i}:]", lambda T, a: a[i:]),
        ("[:{i}]", lambda T, a: a[:i]),
        ("[::2]", lambda T, a: a[::2]),
        ("[:]", lambda T, a: a[:]),
        ("[None]", lambda T, a: a[None]),
        ("[..., -1]", lambda T, a: a[..., -1]),
        ("[[{i}, 0]]", lambda T, a: a[[i, 0]]),
        ("[[0, 0]]", lambda T, a: a[[0, 0]]),
        ("[T.tensor([{i}])]", lambda T, a: a[T.tensor([i])]),
        ("[mask]", lambda T, a: a[a > 0.1]),
    ]
    if t.dim() >= 2:
        n1 = t.shape[1]
        j = p.draw(st.integers(-n1, n1 - 1), "second int")
        keys += [
            ("[{i}, {j}]", lambda T, a: a[i, j]),
            ("[:, {j}]", lambda T, a: a[:, j]),
            ("[{i}, :]", lambda T, a: a[i, :]),
            ("[0:{n0}, {j}]", lambda T, a: a[0:n0, j]),
            ("[1:, [{j}]]", lambda T, a: a[1:, [j]]),
            ("[:, [{j}, 0]]", lambda T, a: a[:, [j, 0]]),
            ("[[{i}], [{j}]]", lambda T, a: a[[i], [j]]),
            ("[{i}, None, {j}:]", lambda T, a: a[i, None, j:]),
            ("[:, :, None]", lambda T, a: a[:, :, None]),
        ]
    text, fn = p.choice(keys, "key")
    p.step("{}" + text.format(i=i, j=j, n0=n0), fn, x)


def join(p):
    x = p.pick("first")
    same = [v for v in p.values if tuple(v[0].shape) == tuple(x[0].shape)]
    others = [p.choice(same, f"other {k}") for k in range(p.draw(st.integers(0, 2), "count"))]
    operands = [x, *others]
    slots = ", ".join(["{}"] * len(operands))
    if p.draw(st.booleans(), "stack"):
        dim = p.draw(st.integers(-x[0].dim() - 1, x[0].dim()), "dim")
        p.step(f"T.stack([{slots}], {dim})", lambda T, *ts: T.stack(list(ts), dim), *operands)
    elif x[0].dim() >= 1:
        dim = p.draw(st.integers(-x[0].dim(), x[0].dim() - 1), "dim")
        p.step(f"T.cat([{slots}], {dim})", lambda T, *ts: T.cat(list(ts), dim), *operands)


def select_values(p):
    a, b = p.pick_pair("where", _broadcastable)
    if b is None:
        return
    form = p.choice(["where", "where_number", "masked_fill"], "form")
    if form == "where":
        p.step("T.where({0} > 0, {0}, {1})", lambda T, x, y: T.where(x > 0, x, y), a, b)
    elif form == "where_number":
        p.step("T.where({} > 0.2, {}, 0.5)", lambda T, x, y: T.where(x > 0.2, y, 0.5), a, b)
    else:
        p.step("{}.masked_fill({} < 0, 2.0)", lambda T, x, y: x.masked_fill(y < 0, 2.0), a, b)


def inplace(p):
    """An in-place op on a value computed so far: a leaf that requires grad gets PyTorch's error,
    a view rewrites its base's history (CopySlices), and a value some node saved makes a later
    backward raise PyTorch's version error (compared at the end)."""
    x = p.pick("target", lambda a: np.all(np.abs(a) < 20))
    if x is None:
        return
    forms = [
        ("{}.mul_(2)", lambda T, t: t.mul_(2)),
        ("{}.add_(1.5)", lambda T, t: t.add_(1.5)),
        ("{}.div_(-2)", lambda T, t: t.div_(-2)),
        ("{}.neg_()", lambda T, t: t.neg_()),
        ("{}.relu_()", lambda T, t: t.relu_()),
        ("{}.clamp_(-1, 1)", lambda T, t: t.clamp_(-1, 1)),
        ("{}.tanh_()", lambda T, t: t.tanh_()),
        ("{}.sigmoid_()", lambda T, t: t.sigmoid_()),
    ]
    expanded = any(n > 1 and step == 0 for n, step in zip(x[1].shape, x[1].stride()))
    if not (expanded and x[1].requires_grad):  # README: nbgrad raises at once, PyTorch later
        forms += [
            ("{}.zero_()", lambda T, t: t.zero_()),
            ("{}.fill_(0.5)", lambda T, t: t.fill_(0.5)),
        ]
    if x[0].dim() >= 1 and x[0].numel() > 0:
        forms.append(("{}[0] = 2.0", lambda T, t: _set_first(t, 2.0)))
    y = p.pick("other", lambda b: _broadcastable_into(_array(x[0]), b))
    if y is not None:
        forms.append(("{}.add_({})", lambda T, t, u: t.add_(u)))
        forms.append(("{}.mul_({})", lambda T, t, u: t.mul_(u)))
    text, fn = p.choice(forms, "in-place form")
    operands = (x, y) if text.count("{}") == 2 else (x,)
    p.step(text, fn, *operands)


def _set_first(t, value):
    t[0] = value
    return t


def _broadcastable_into(a, b):
    try:
        return np.broadcast_shapes(a.shape, b.shape) == a.shape
    except ValueError:
        return False


def without_grad(p):
    """Values made under ``no_grad`` or detached: they require no grad and have no history."""
    x = p.pick("operand")
    forms = [
        ("with no_grad: {} * 2", lambda T, t: _under_no_grad(T, lambda: t * 2)),
        ("with no_grad: {}.exp()", lambda T, t: _under_no_grad(T, lambda: t.clamp(-5, 5).exp())),
        ("{}.detach()", lambda T, t: t.detach()),
        ("{}.detach() * {}", None),
    ]
    text, fn = p.choice(forms, "form")
    if fn is None:
        y = p.pick("other", lambda b: _broadcastable(_array(x[0]), b))
        p.step(text, lambda T, a, b: a.detach() * b, x, y)
    else:
        p.step(text, fn, x)


def _under_no_grad(T, compute):
    with T.no_grad():
        return compute()


def hook(p):
    """A hook on a value that requires grad: it doubles the gradient that reaches the value."""
    # (not on views: PyTorch 2.13 crashes on a hook on a view regenerated after a write)
    candidates = [v for v in p.values if v[1].requires_grad and v[1]._base is None]
    if not candidates:
        return
    x = p.choice(candidates, "hooked")
    number = next(k for k, v in enumerate(p.values) if v is x)
    p.log.append(f"v{number}.register_hook(lambda g: g * 2)")
    for t in x:
        t.register_hook(lambda g: g * 2)


OPERATIONS = [
    inplace,
    inplace,
    without_grad,
    hook,
    binary,
    binary,
    scalar,
    scalar,
    power,
    unary,
    unary,
    unary,
    softmax,
    reduction,
    reduction,
    matmul,
    matmul,
    view,
    view,
    view,
    index,
    index,
    join,
    select_values,
]
OPERATIONS += [binary_more]
OPERATIONS += [einsum_like]
OPERATIONS += [attention]
OPERATIONS += [norm_conv]
OPERATIONS += [lstm]


# convs: torch.mkldnn_convolution (float32 only: oneDNN's kernel, so float32 rounding from then on)
# and F.interpolate's lanczos mode.
def _mkldnn_convolution(T, x):
    x = x[None].float()
    weight = (T.linspace(-0.5, 0.7, 2 * x.shape[1] * 2) * 1.0).reshape(2, x.shape[1], 1, 2)
    return T.mkldnn_convolution(x, weight, T.tensor([0.1, -0.2]), [0, 1], [1, 1], [1, 1], 1)


def mkldnn_convolution(p):
    x = p.pick("operand", lambda a: a.ndim == 3 and a.size > 0)
    if x is not None:
        p.allow_float32_rounding()
        p.step("T.mkldnn_convolution({0}[None].float(), weight 2xCx1x2, bias, ...)",
               _mkldnn_convolution, x)  # fmt: skip


def lanczos(p):
    x = p.pick("operand", lambda a: a.ndim == 3 and a.size > 0)
    if x is not None:
        p.step(
            "F.interpolate({}[None], size=(2, 3), mode='lanczos', antialias=True)",
            lambda T, v: T.nn.functional.interpolate(
                v[None], size=(2, 3), mode="lanczos", antialias=True
            ),
            x,
        )


OPERATIONS += [mkldnn_convolution, lanczos]

BASE_SHAPES = [(3,), (2, 3), (3, 2), (2, 3, 2), (4, 1, 3), (2, 2, 3)]


def leaf_shapes(p):
    """Shapes that broadcast against one base shape: suffixes of it, some sizes set to 1."""
    base = p.choice(BASE_SHAPES, "base shape")
    shapes = [base]
    for k in range(p.draw(st.integers(1, 3), "more leaves")):
        cut = p.draw(st.integers(0, len(base)), f"cut {k}")
        shape = list(base[cut:])
        for d in range(len(shape)):
            if p.draw(st.integers(0, 3), f"one {k} {d}") == 0:
                shape[d] = 1
        shapes.append(tuple(shape))
    return shapes


def build(torch, data):
    p = Program(torch, data)
    for n, shape in enumerate(leaf_shapes(p)):
        p.leaf(shape, requires_grad=True if n == 0 else None)
    for k in range(p.draw(st.integers(2, 12), "steps")):
        p.choice(OPERATIONS, f"operation {k}")(p)
    return p


def check_grads(p, label, zero_may_be_none=False):
    context = "\n".join(p.log) + f"\nafter {label}"
    for n, (mine, real) in enumerate(p.leaves):
        assert mine.is_leaf == real.is_leaf, f"leaf{n}\n{context}"
        if not real.is_leaf:
            continue  # written in place by an op that needs grad: it has a history now
        if zero_may_be_none and mine.grad is None and real.grad is not None:
            # PyTorch's gradient stays in the graph through piecewise formulas (relu's
            # ThresholdBackwardBackward0) whose own derivative is zero: README
            assert not np.any(_array(real.grad)), f"leaf{n}\n{context}"
            continue
        assert (mine.grad is None) == (real.grad is None), f"leaf{n}\n{context}"
        if real.grad is not None:
            np.testing.assert_allclose(
                _array(mine.grad), _array(real.grad), *p.tolerance, err_msg=f"leaf{n}\n{context}"
            )


def _is_leaf(pair):
    """``is_leaf`` of both tensors, equal; a view of a split whose base was written in place
    raises PyTorch's error on reading it, in both libraries (counted as a leaf: not retained)."""
    answers = []
    for t in pair:
        try:
            answers.append(t.is_leaf)
        except RuntimeError as error:
            answers.append(str(error))
    assert answers[0] == answers[1]
    return answers[1] is not False


def both(p, label, run):
    """``run(which, T)`` in both libraries: True when both succeeded; the same error otherwise."""
    errors = []
    for which, T in enumerate((nbgrad, p.torch)):
        try:
            run(which, T)
            errors.append(None)
        except Exception as error:  # noqa: BLE001 - compared with PyTorch's
            errors.append(error)
    mine, real = errors
    context = "\n".join(p.log) + f"\n{label}"
    if real is None:
        assert mine is None, f"nbgrad raised {mine!r}; PyTorch did not\n{context}"
        return True
    assert mine is not None, f"PyTorch raised {real!r}; nbgrad did not\n{context}"
    assert (type(mine).__name__, str(mine)) == (type(real).__name__, str(real)), context
    return False


# Calls whose double backward is not compared (README, "Differences from PyTorch you can see"):
# PyTorch 2.13's double backward of _weight_norm's fused kernel is wrong; the others' backward
# functions PyTorch cannot differentiate ("derivative for aten::... is not implemented").
NO_DOUBLE_BACKWARD = (
    "_weight_norm(",
    "hardsigmoid(",
    "cdist(",
    "pdist(",
    "multi_margin_loss(",
    "multilabel_margin_loss(",
    "_masked_softmax(",
    "ctc_loss(",
    "scaled_dot_product_attention(",
    "multi_head_attention_forward(",
)


@SETTINGS
@given(data=st.data())
def test_random_programs_match_pytorch(torch, data):
    p = build(torch, data)
    out = p.values[-1]
    if not out[1].requires_grad:
        assert not out[0].requires_grad
        return
    retained = [v for v in p.values[len(p.leaves) :] if v[1].requires_grad and not _is_leaf(v)]
    if retained and p.draw(st.booleans(), "retain_grad"):
        retained = [p.choice(retained, "retained")]
        for pair in retained[0]:
            pair.retain_grad()
    else:
        retained = []
    seed = p.draw(st.integers(0, 2**32 - 1), "upstream seed")
    upstream = np.random.default_rng(seed).standard_normal(tuple(out[1].shape))
    mode = p.draw(st.sampled_from(["backward", "twice", "autograd.grad", "create_graph"]), "mode")
    wanted = [k for k, leaf in enumerate(p.leaves) if leaf[1].requires_grad]
    if mode in ("autograd.grad", "create_graph"):
        create_graph = mode == "create_graph"
        results = [None, None]

        def grads(which, T):
            inputs = [p.leaves[k][which] for k in wanted]
            results[which] = T.autograd.grad(
                out[which], inputs, T.tensor(upstream), allow_unused=True, create_graph=create_graph
            )

        if not both(p, mode, grads):
            return
        for k, mine, real in zip(wanted, *results):
            assert (mine is None) == (real is None), f"leaf{k}\n" + "\n".join(p.log)
            if real is not None:
                np.testing.assert_allclose(
                    _array(mine),
                    _array(real),
                    *p.tolerance,
                    err_msg=f"leaf{k}\n" + "\n".join(p.log),
                )
                if mine.requires_grad != real.requires_grad:
                    # only where PyTorch's gradient is connected by a zero derivative: README
                    assert real.requires_grad and not mine.requires_grad, "\n".join(p.log)
        check_grads(p, f"{mode} (no .grad anywhere)")
        if create_graph and not any(call in line for call in NO_DOUBLE_BACKWARD for line in p.log):
            # The gradient's own graph, differentiated: d/dleaf of sum(g * g).
            def second(which, T):
                terms = [(g * g).sum() for g in results[which] if g is not None and g.requires_grad]
                if terms:
                    sum(terms).backward()

            if both(p, "backward of sum(g * g) (double backward)", second):
                check_grads(p, "double backward", zero_may_be_none=True)
        return
    twice = mode == "twice"
    if not both(
        p,
        "backward",
        lambda which, T: out[which].backward(T.tensor(upstream), retain_graph=twice),
    ):
        return
    check_grads(p, "backward")
    if twice:
        if not both(
            p, "a second backward", lambda which, T: out[which].backward(T.tensor(upstream * 0.5))
        ):
            return
        check_grads(p, "a second backward (grads accumulate)")
    for mine, real in retained:
        assert (mine.grad is None) == (real.grad is None)
        if real.grad is not None:
            np.testing.assert_allclose(_array(mine.grad), _array(real.grad), *p.tolerance)


# --- matmul of every pair of ranks ----------------------------------------------------------------

MATMUL_SHAPES = [
    (3,),
    (2, 3),
    (3, 2),
    (3, 3),
    (4, 2, 3),
    (4, 3, 2),
    (1, 2, 3),
    (1, 3, 2),
    (2, 1, 3, 2),
]


def _matmul_cases():
    for a, b in itertools.product(MATMUL_SHAPES, MATMUL_SHAPES):
        try:
            np.matmul(np.zeros(a), np.zeros(b))
        except ValueError:
            continue
        for grads in ((True, True), (True, False), (False, True)):
            for layouts in itertools.product(("contiguous", "transposed"), repeat=2):
                yield a, b, grads, layouts


@pytest.mark.parametrize("a, b, grads, layouts", list(_matmul_cases()))
def test_matmul_graph_matches_pytorch(torch, a, b, grads, layouts):
    """PyTorch folds the batch of the larger operand into mm/mv, or expands both for bmm,
    depending on ranks, on which operand requires grad and on strides: nbgrad chooses alike."""
    rows, values = [], []
    for which, T in enumerate((nbgrad, torch)):
        p = Program(torch, None)
        operands = []
        for k, (shape, requires_grad, layout) in enumerate(zip((a, b), grads, layouts)):
            if layout == "transposed" and len(shape) >= 2:
                stored = (*shape[:-2], shape[-1], shape[-2])
                leaf = T.tensor(
                    np.random.default_rng(k).standard_normal(stored), requires_grad=requires_grad
                )
                operands.append(leaf.transpose(-1, -2))
            else:
                leaf = T.tensor(
                    np.random.default_rng(k).standard_normal(shape), requires_grad=requires_grad
                )
                operands.append(leaf)
            p.leaves.append((leaf, leaf))
        out = operands[0] @ operands[1]
        rows.append(graph(out.grad_fn, p, which))
        values.append(_array(out))
    assert rows[0] == rows[1]
    np.testing.assert_allclose(values[0], values[1], RTOL, ATOL)


# --- differences these tests found, now fixed ---------------------------------------------


def test_softmax_over_an_empty_dim(torch):
    for T in (nbgrad, torch):
        x = T.ones(2, 0, 3, requires_grad=True)
        assert tuple(x.softmax(1).shape) == tuple(x.log_softmax(1).shape) == (2, 0, 3)


def test_reshape_of_a_non_contiguous_view_is_reshape_alias(torch):
    for T in (nbgrad, torch):
        x = T.ones(2, 3, 2, requires_grad=True)
        assert type(x[:, 1:].reshape(2, 4).grad_fn).__name__ == "ReshapeAliasBackward0"
        batched = x @ x.transpose(-1, -2)
        view = batched.grad_fn.next_functions[0][0].next_functions[1][0]
        assert type(view).__name__ == "ReshapeAliasBackward0"


def test_indexing_that_keeps_everything_is_an_alias(torch):
    for T in (nbgrad, torch):
        x = T.ones(2, 3, requires_grad=True)
        assert type(x[...].grad_fn).__name__ == "AliasBackward0"
        assert type(x[:, :].grad_fn).__name__ == "AliasBackward0"


def test_item_assignment_nodes_match_pytorch(torch):
    names = []
    for T in (nbgrad, torch):
        row = []
        for key in ([0], slice(None)):
            b = T.ones(2, 3, requires_grad=True) * 1
            b[key] = 5.0
            row.append(type(b.grad_fn).__name__)
        names.append(row)
    assert names[0] == names[1] == [["IndexPutBackward0", "FillBackward3"]][0]


def test_rounding_functions_are_recorded(torch):
    for T in (nbgrad, torch):
        x = T.tensor([0.4, 1.6], requires_grad=True)
        assert [type(f(x).grad_fn).__name__ for f in (T.round, T.floor, T.ceil)] == [
            "RoundBackward0",
            "FloorBackward0",
            "CeilBackward0",
        ]


# --- issue 13's entries: grid sampling (the image, the grid, or both from the program) ---------
_GRID_POINTS = [[[[-0.8, 0.3], [0.45, -1.2]], [[1.3, 0.7], [0.05, 0.9]]]]

UNARY_GRID_SAMPLE = [
    (
        "F.grid_sample({0}.reshape(1, 1, -1, {0}.shape[-1]), T.tensor(_GRID_POINTS), "
        "align_corners=False)",
        lambda T, x: T.nn.functional.grid_sample(
            x.reshape(1, 1, -1, x.shape[-1]),
            T.tensor(_GRID_POINTS, dtype=x.dtype),
            align_corners=False,
        ),
        lambda a: a.ndim >= 1 and a.size > 0,
    ),
    (
        "F.grid_sample(T.arange(9.).reshape(1, 1, 3, 3), {0}.reshape(1, 1, -1, 2), "
        "mode='bicubic', padding_mode='reflection', align_corners=True)",
        lambda T, x: T.nn.functional.grid_sample(
            T.arange(9.0, dtype=x.dtype).reshape(1, 1, 3, 3),
            x.reshape(1, 1, -1, 2),
            mode="bicubic",
            padding_mode="reflection",
            align_corners=True,
        ),
        lambda a: a.size > 0 and a.size % 2 == 0 and np.all(np.abs(a) < 50),
    ),
    (
        "F.grid_sample({0}.reshape(1, 1, -1, {0}.shape[-1]), "
        "{0}.reshape(1, 1, -1, {0}.shape[-1])[..., :2].tanh(), padding_mode='border', "
        "align_corners=False)",
        lambda T, x: T.nn.functional.grid_sample(
            x.reshape(1, 1, -1, x.shape[-1]),
            x.reshape(1, 1, -1, x.shape[-1])[..., :2].tanh(),
            padding_mode="border",
            align_corners=False,
        ),
        lambda a: a.ndim >= 1 and a.size > 0 and a.shape[-1] >= 2 and np.all(np.abs(a) < 50),
    ),
]
UNARY += UNARY_GRID_SAMPLE


# --- issue 13's entries: scatter_reduce and index_reduce, self and src from the program --------
def _reduce_rows(a):
    """2-d with at least 2 columns, values apart (no ties for amax/amin) and away from 0."""
    return (
        a.ndim == 2
        and a.shape[1] >= 2
        and a.size > 0
        and np.unique(a).size == a.size
        and np.all(np.abs(a) > 1e-3)
        and np.all(np.abs(a) < 50)
    )


UNARY_SCATTER_REDUCE = [
    (
        f"{{0}}.scatter_reduce(1, T.zeros_like({{0}}, dtype=T.long), {{0}}.flip(1), "
        f"'{reduce}', include_self={include_self})",
        lambda T, x, r=reduce, i=include_self: x.scatter_reduce(
            1, T.zeros_like(x, dtype=T.long), x.flip(1), r, include_self=i
        ),
        _reduce_rows,
    )
    for reduce, include_self in (("sum", True), ("prod", False), ("mean", True), ("amax", False))
]
UNARY += UNARY_SCATTER_REDUCE


# torch.segment_reduce (branch ddmore) along dim 0, one segment of the first row and one of the
# rest: values apart (no ties for amax) and bounded (prod). Its backward has no derivative, in
# PyTorch either: under create_graph both raise the same error, which ``both`` compares.
def _segment_rows(a):
    return a.ndim >= 1 and a.shape[0] >= 2 and _reduce_rows(a.reshape(a.shape[0], -1).T)


UNARY_SEGMENT_REDUCE = [
    (
        f"T.segment_reduce({{0}}, '{reduce}', lengths=T.tensor([1, {{0}}.shape[0] - 1]))",
        lambda T, x, r=reduce: T.segment_reduce(x, r, lengths=T.tensor([1, x.shape[0] - 1])),
        _segment_rows,
    )
    for reduce in ("sum", "mean", "amax", "prod")
]
UNARY += UNARY_SEGMENT_REDUCE


# --- fake quantization: a step function, so only values well away from its rounding ties (a value
# computed one ulp apart by an earlier op must round the same way on both engines) -------------
def _away_from_quantization_ties(a):
    steps = np.abs(a.astype(np.float64)) * 10  # the step is 0.1
    return (
        a.dtype.kind == "f"
        and a.size > 0
        and np.all(np.abs(steps - np.floor(steps) - 0.5) > 1e-3)
        and np.all(np.abs(a) < 1e3)
    )


UNARY_FAKE_QUANTIZE = [
    (
        "T.fake_quantize_per_tensor_affine({}, 0.1, 3, -60, 60)",
        lambda T, x: T.fake_quantize_per_tensor_affine(x, 0.1, 3, -60, 60),
        _away_from_quantization_ties,
    ),
    (
        "T.fake_quantize_per_tensor_affine({}, T.tensor([0.1]), T.tensor([-2]), -50, 50)",
        lambda T, x: T.fake_quantize_per_tensor_affine(x, T.tensor([0.1]), T.tensor([-2]), -50, 50),
        _away_from_quantization_ties,
    ),
]
UNARY += UNARY_FAKE_QUANTIZE
