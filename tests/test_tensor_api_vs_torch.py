"""What a learner sees of a tensor, compared with PyTorch: repr(), the dtype that creation
functions and binary operations give, and the small Tensor API (.shape, .item(), .to(), ...).

Each case is an expression evaluated twice, with ``T`` bound to nbgrad and to PyTorch.
"""

import itertools
import math
import operator
import re
import warnings

import numpy as np
import pytest

import nbgrad


def both(torch, expression, **names):
    """The expression's value under nbgrad and under PyTorch (or the exception it raised)."""
    results = []
    for T in (nbgrad, torch):
        scope = {"T": T, "np": np, "math": math, **{k: v(T) for k, v in names.items()}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                results.append(eval(expression, scope))  # noqa: S307 - our own test table
            except Exception as error:  # noqa: BLE001 - the exception is the result compared
                results.append(error)
    return results


def assert_same_exception(mine, real):
    assert isinstance(real, Exception), f"PyTorch succeeded where nbgrad raised {mine!r}"
    assert isinstance(mine, Exception), f"nbgrad succeeded where PyTorch raised {real!r}"
    assert type(mine).__name__ == type(real).__name__
    assert str(mine) == str(real)


# --- repr -----------------------------------------------------------------------------------------

REPR_CASES = [
    # scalars
    "T.tensor(3.)",
    "T.tensor(3.5)",
    "T.tensor(-0.)",
    "T.tensor(1e-5)",
    "T.tensor(1e10)",
    "T.tensor(123456789.)",
    "T.tensor(-1234567.)",
    "T.tensor(5)",
    "T.tensor(True)",
    "T.tensor(float('nan'))",
    "T.tensor(float('-inf'))",
    # vectors and matrices, fixed, whole-number and scientific formats
    "T.tensor([1., 2., 3.])",
    "T.tensor([1.5, 2.25, -3.])",
    "T.tensor([-1., -2.])",
    "T.tensor([-1.5, 2.])",
    "T.tensor([0., 0.])",
    "T.tensor([1e-5, 1.])",
    "T.tensor([1e-3, 10.])",
    "T.tensor([0.1, 1000.])",
    "T.tensor([0.1, 100.])",
    "T.tensor([1e9, 1.])",
    "T.tensor([1., 2e8])",
    "T.tensor([1e8])",
    "T.tensor([1.1e8])",
    "T.tensor([1e-10, 1.])",
    "T.tensor([1.0e-4, 1.])",
    "T.tensor([0.00011, 0.5])",
    "T.tensor([123.456, 0.001])",
    "T.tensor([12345.678])",
    "T.tensor([99999.5])",
    "T.tensor([-1e-5, 3.])",
    "T.tensor([2., 1e20])",
    "T.tensor([1e-5, 1., 1e5])",
    "T.tensor([[1., 2.], [3., 4.]])",
    "T.tensor([[1.5, 2.], [3., -4.]])",
    "T.tensor([[1e-5, 3.], [1., 2.]])",
    "T.tensor([[-1e-5, 2.], [3., 4.]])",
    "T.arange(81.).reshape(9, 9) / 1000",
    # 3-D and 4-D
    "T.arange(24.).reshape(2, 3, 4)",
    "T.arange(24).reshape(2, 3, 4)",
    "T.arange(48.).reshape(2, 2, 3, 4) / 7",
    "T.ones(1, 1, 1)",
    # integers and bools
    "T.tensor([1, 2, 3])",
    "T.tensor([-1, 200, 3])",
    "T.arange(5) - 2",
    "T.tensor([2**40, 1])",
    "T.tensor([True, False])",
    "T.tensor([[True, False]] * 3)",
    "T.tensor([[1, 2], [3, 4]], dtype=T.int32)",
    "T.tensor([1, 2], dtype=T.uint8)",
    "T.tensor([1, 2], dtype=T.int8)",
    "T.tensor([1, 2], dtype=T.int16)",
    # dtype suffixes
    "T.tensor([1., 2.], dtype=T.float64)",
    "T.tensor(2., dtype=T.float64)",
    "T.tensor([0.1, 0.2], dtype=T.float64)",
    "T.tensor([1 / 3, 2 / 3], dtype=T.float64)",
    "T.tensor([1e-100, 1e100], dtype=T.float64)",
    "T.tensor([1.5, 2.], dtype=T.float16)",
    "T.tensor([0.1, 0.2], dtype=T.float16)",
    "T.tensor([1.5, 2.], dtype=T.float16) * 1000",
    "T.tensor([65504.], dtype=T.float16)",
    "T.tensor([1e-3], dtype=T.float16)",
    # requires_grad and grad_fn suffixes
    "T.tensor([1., 2.], requires_grad=True)",
    "T.tensor(1e-5, requires_grad=True)",
    "T.tensor(2., dtype=T.float64, requires_grad=True)",
    "T.tensor([1., 2.], requires_grad=True) * 2",
    "T.tensor([1., 2.], dtype=T.float64, requires_grad=True) * 2",
    "T.ones(2, 3, requires_grad=True).sum(0)",
    "T.ones(2, 3, requires_grad=True).sum()",
    "T.ones(2, 3, requires_grad=True).t()",
    "T.ones(2, 3, requires_grad=True)[0]",
    "T.ones(2, 3, requires_grad=True).detach()",
    "T.ones(40, requires_grad=True) / 3",
    # nan and inf
    "T.tensor([float('nan'), 1.])",
    "T.tensor([float('inf'), 1.])",
    "T.tensor([float('nan'), 1.5])",
    "T.tensor([float('inf'), 1e-5])",
    "T.tensor([float('inf'), -float('inf'), float('nan')])",
    # empty tensors
    "T.tensor([])",
    "T.zeros(0, 3)",
    "T.zeros(2, 0)",
    "T.zeros(0, 0)",
    "T.ones(1, 0, 2)",
    "T.zeros(0, dtype=T.int64)",
    "T.zeros(0, dtype=T.float64)",
    "T.zeros(0, dtype=T.bool)",
    "T.zeros(3, 0, dtype=T.int32)",
    "T.zeros(0, 3, requires_grad=True)",
    # more than 1000 elements: summarised with ...
    "T.arange(2000.)",
    "T.arange(2000)",
    "T.arange(2000, dtype=T.int32)",
    "T.arange(1001.) / 7",
    "T.arange(2000.).reshape(40, 50)",
    "T.arange(3000.).reshape(10, 10, 30)",
    "T.arange(1500.).reshape(1500, 1)",
    "T.tensor([True, False] * 600)",
    "T.arange(2000., requires_grad=True) * 2",
    # long rows wrap at 80 columns
    "T.arange(30.) / 7",
    "T.arange(100.)",
    "T.arange(100)",
    "T.arange(100) * 1000000",
    "T.arange(40.).reshape(2, 20) / 3",
    "T.arange(60.).reshape(3, 20) * 1e-6",
    "T.arange(30., dtype=T.float64) / 7",
    "T.arange(24.).reshape(2, 12) / 7 * 1e6",
    # views keep their values
    "T.arange(12.).reshape(3, 4).T",
    "T.arange(12.).reshape(3, 4)[:, 1:3]",
]


@pytest.mark.parametrize("expression", REPR_CASES)
def test_repr_matches_pytorch(torch, expression):
    mine, real = both(torch, expression)
    assert repr(mine) == repr(real)


def _random_array(rng):
    """Arrays of every dtype and several magnitudes, shapes from 0-d to summarised."""
    ndim = int(rng.integers(0, 4))
    shape = tuple(int(s) for s in rng.integers(1, 13 if ndim <= 2 else 6, size=ndim))
    if rng.random() < 0.05:
        shape = (int(rng.integers(900, 1200)),)
    dtype = rng.choice(["float32", "float64", "float16", "int64", "int32", "bool", "uint8"])
    kind = int(rng.integers(4))
    if kind == 0:
        data = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-9, 12))
    elif kind == 1:
        data = np.round(rng.standard_normal(shape) * 100)
    elif kind == 2:
        data = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 9, shape)
    else:
        data = np.asarray(rng.standard_normal(shape))
        if data.size and dtype.startswith("float"):
            data.flat[int(rng.integers(data.size))] = rng.choice([np.nan, np.inf, -np.inf, -0.0])
    if dtype == "bool":
        return np.asarray(data > 0)
    with np.errstate(all="ignore"):
        return np.asarray(data).astype(dtype)


@pytest.mark.parametrize("seed", range(8))
def test_repr_of_random_arrays_matches_pytorch(torch, seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        array = _random_array(rng)
        requires_grad = array.dtype.kind == "f" and rng.random() < 0.3
        mine = nbgrad.tensor(array, requires_grad=requires_grad)
        real = torch.tensor(array, requires_grad=requires_grad)
        if requires_grad and rng.random() < 0.5:
            mine, real = mine * 1, real * 1
        assert repr(mine) == repr(real), (array.dtype, array.shape)


def test_str_and_print_format_match_pytorch(torch):
    for T in (nbgrad, torch):
        T.manual_seed(0)
    for expression in ["T.tensor([1.5, 2.])", "T.tensor(3.25)", "T.ones(2, 2, requires_grad=True)"]:
        mine, real = both(torch, expression)
        assert str(mine) == str(real)
        assert f"{mine}" == f"{real}"
    mine, real = both(torch, "T.tensor(3.14159)")
    assert f"{mine:.2f}" == f"{real:.2f}"


def test_repr_with_float64_default_dtype_matches_pytorch(torch):
    cases = [
        "T.tensor([1., 2.])",
        "T.tensor([1., 2.], dtype=T.float32)",
        "T.tensor(np.array([1., 2.], dtype=np.float32))",
        "T.tensor([1, 2]) / 2",
        "T.zeros(2)",
        "T.tensor([])",
        "T.tensor([], dtype=T.float32)",
        "T.ones(2, requires_grad=True) * 2",
        "T.linspace(0, 1, 3)",
        "T.tensor([1, 2]).float()",
    ]
    try:
        nbgrad.set_default_dtype(nbgrad.float64)
        torch.set_default_dtype(torch.float64)
        for expression in cases:
            mine, real = both(torch, expression)
            assert repr(mine) == repr(real), expression
    finally:
        nbgrad.set_default_dtype(nbgrad.float32)
        torch.set_default_dtype(torch.float32)


# --- creation functions ---------------------------------------------------------------------------

CREATION_CASES = [
    "T.tensor(1.)",
    "T.tensor(1)",
    "T.tensor(True)",
    "T.tensor([1, 2.])",
    "T.tensor([1, True])",
    "T.tensor([True, 2.5])",
    "T.tensor([[1], [2]])",
    "T.tensor((1, 2.))",
    "T.tensor(range(3))",
    "T.tensor([])",
    "T.tensor([[], []])",
    "T.tensor(np.float64(1.))",
    "T.tensor(np.float32(1.))",
    "T.tensor(np.int32(1))",
    "T.tensor(np.bool_(True))",
    "T.tensor([np.float64(1.), 2.])",
    "T.tensor([np.float32(1.5), 2])",
    "T.tensor([np.float16(1.5), 2.])",
    "T.tensor([np.int32(1), 2])",
    "T.tensor([np.int32(1), True])",
    "T.tensor(np.array([1., 2.]))",
    "T.tensor(np.array([1, 2], dtype=np.int32))",
    "T.tensor(np.array([1, 2]))",
    "T.tensor(np.array([True]))",
    "T.tensor(np.array(3.))",
    "T.tensor(np.array([1., 2.], dtype=np.float16))",
    "T.tensor(np.array([1., 2.]), dtype=T.int32)",
    "T.tensor([np.array([1., 2.]), np.array([3., 4.])])",
    "T.tensor([T.tensor(1.), T.tensor(2.)])",
    "T.tensor([T.tensor(1., dtype=T.float64), 2.])",
    "T.tensor([T.tensor(1), 2.5])",
    "T.tensor([T.ones(1), T.ones(1)])",
    "T.tensor([1, 2], dtype=T.float64)",
    "T.tensor([1.7, -2.7], dtype=T.int64)",
    "T.tensor([0, 2], dtype=T.bool)",
    "T.tensor(3, dtype=T.float16)",
    "T.tensor([1e-100, 1e100], dtype=T.float64)",
    "T.as_tensor([1, 2])",
    "T.as_tensor(np.array([1., 2.]))",
    "T.as_tensor([1., 2.], dtype=T.float64)",
    "T.from_numpy(np.array([1, 2], dtype=np.int32))",
    "T.from_numpy(np.array([1., 2.]))",
    "T.zeros(2)",
    "T.zeros(2, dtype=T.int32)",
    "T.zeros((2, 3))",
    "T.zeros([2, 3])",
    "T.zeros(())",
    "T.ones(3)",
    "T.ones(2, dtype=T.bool)",
    "T.full((2,), 1.)",
    "T.full((2,), 1)",
    "T.full((2,), True)",
    "T.full((2, 2), 3, dtype=T.float32)",
    "T.full([2], 1.5)",
    "T.full((), 2)",
    "T.eye(3)",
    "T.eye(2, 3)",
    "T.eye(2, dtype=T.int64)",
    "T.arange(5)",
    "T.arange(5.)",
    "T.arange(0, 5, 2)",
    "T.arange(0, 1, 0.25)",
    "T.arange(1, 4, dtype=T.float64)",
    "T.arange(np.int64(3))",
    "T.arange(10, 0, -3)",
    "T.arange(-1.5, 2)",
    "T.linspace(0, 1, 5)",
    "T.linspace(0, 10, 3)",
    "T.linspace(0, 1, 5, dtype=T.float64)",
    "T.linspace(-1, 1, 1)",
    "T.linspace(0, 1, 0)",
    "T.zeros_like(T.tensor([1, 2]))",
    "T.ones_like(T.tensor([1., 2.], dtype=T.float64))",
    "T.full_like(T.tensor([1, 2]), 2.7)",
    "T.tensor([1, 2]).new_zeros(3)",
    "T.tensor([1., 2.]).new_tensor([1, 2])",
    "T.tensor([1., 2.]).new_ones((2, 2))",
    "T.zeros(2, 3, requires_grad=True)",
    "T.tensor([1., 2.], dtype=T.float64, requires_grad=True)",
]

# Random and uninitialised values differ from PyTorch's (README): compare dtype and shape only.
RANDOM_CREATION_CASES = [
    "T.randn(2, 3)",
    "T.rand(2)",
    "T.randn(2, dtype=T.float64)",
    "T.randint(0, 5, (3,))",
    "T.randint(5, (3,))",
    "T.randint(3, 10, (2, 2))",
    "T.randperm(4)",
    "T.empty(3)",
    "T.empty(2, 3, dtype=T.int32)",
    "T.empty_like(T.ones(2, dtype=T.int32))",
    "T.rand_like(T.ones(2, dtype=T.float64))",
    "T.randn_like(T.ones(2, 3))",
    "T.randn(2, 3, requires_grad=True)",
]


def describe(value, torch):
    """A comparable summary: dtype name, shape, values, requires_grad, grad_fn name. Float values
    are rounded to 6 significant digits: NumPy's float32 exp or sigmoid may differ from
    PyTorch's vectorised kernels in the last bit."""
    if isinstance(value, (nbgrad.Tensor, torch.Tensor)):
        grad_fn = value.grad_fn
        return (
            "tensor",
            str(value.dtype),
            tuple(value.shape),
            _plain_values(value.tolist()),
            value.requires_grad,
            value.is_leaf,
            None if grad_fn is None else type(grad_fn).__name__,
        )
    if isinstance(value, (nbgrad.dtype, torch.dtype)):
        return ("dtype", str(value))
    if isinstance(value, (nbgrad.Size, torch.Size)):
        return ("Size", repr(value), tuple(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [describe(v, torch) for v in value])
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.name, value.shape, _plain_values(value.tolist()))
    return (type(value).__name__, _plain_values(value))


def _plain_values(value):
    """Nested lists of numbers, with NaN equal to itself and floats to 6 significant digits."""
    if isinstance(value, (list, tuple)):
        return [_plain_values(v) for v in value]
    if isinstance(value, float):
        return "nan" if math.isnan(value) else float(f"{value:.6g}")
    return value


@pytest.mark.parametrize("expression", CREATION_CASES)
def test_creation_dtype_shape_and_values_match_pytorch(torch, expression):
    mine, real = both(torch, expression)
    assert describe(mine, torch) == describe(real, torch)


@pytest.mark.parametrize("expression", RANDOM_CREATION_CASES)
def test_random_creation_dtype_and_shape_match_pytorch(torch, expression):
    mine, real = both(torch, expression)
    assert str(mine.dtype) == str(real.dtype)
    assert tuple(mine.shape) == tuple(real.shape)
    assert mine.requires_grad == real.requires_grad


def test_default_dtype_float64_changes_inference_like_pytorch(torch):
    cases = ["T.tensor([1., 2.])", "T.tensor([1, 2.])", "T.zeros(2)", "T.arange(3.)", "T.eye(2)"]
    try:
        nbgrad.set_default_dtype(nbgrad.float64)
        torch.set_default_dtype(torch.float64)
        for expression in cases:
            mine, real = both(torch, expression)
            assert describe(mine, torch) == describe(real, torch), expression
            assert nbgrad.get_default_dtype() is nbgrad.float64
    finally:
        nbgrad.set_default_dtype(nbgrad.float32)
        torch.set_default_dtype(torch.float32)


# --- type promotion of binary operations ----------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]

# An operand: a 1-d tensor ("t"), a 0-dim tensor ("z") of a dtype, or a Python number ("s").
OPERANDS = (
    [("t", d) for d in DTYPES] + [("z", d) for d in DTYPES] + [("s", v) for v in (3, 2.5, True)]
)

BINARY_OPS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "eq": operator.eq,
    "lt": operator.lt,
    "ge": operator.ge,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
}


def _operand(T, spec):
    kind, value = spec
    if kind == "s":
        return value
    data = [True, False] if value == "bool" else [3, 2]
    return T.tensor(data[0] if kind == "z" else data, dtype=getattr(T, value))


def _promotion_cases():
    for name, (a, b) in itertools.product(BINARY_OPS, itertools.product(OPERANDS, OPERANDS)):
        if a[0] == "s" and b[0] == "s":
            continue
        yield name, a, b


def _apply(T, name, a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return BINARY_OPS[name](_operand(T, a), _operand(T, b))
        except Exception as error:  # noqa: BLE001 - the exception is the result compared
            return error


@pytest.mark.parametrize("name", list(BINARY_OPS))
def test_binary_op_result_dtype_matches_pytorch(torch, name):
    """Every pair of operand kinds (1-d tensor, 0-dim tensor, Python number) and dtypes."""
    failures = []
    for op, a, b in _promotion_cases():
        if op != name:
            continue
        mine, real = _apply(nbgrad, op, a, b), _apply(torch, op, a, b)
        if isinstance(mine, Exception) or isinstance(real, Exception):
            same = (
                isinstance(mine, Exception)
                and isinstance(real, Exception)
                and (type(mine).__name__, str(mine)) == (type(real).__name__, str(real))
            )
        else:
            same = describe(mine, torch) == describe(real, torch)
        if not same:
            failures.append((a, b, mine, real))
    assert not failures, failures[:5]


PROMOTION_EXAMPLES = [
    "T.tensor([1, 2]) + 1.5",
    "T.tensor([1, 2]) * 2",
    "T.tensor([1., 2.]) + T.tensor(1., dtype=T.float64)",
    "T.tensor([1., 2.], dtype=T.float16) + 1.",
    "T.tensor([1., 2.], dtype=T.float16) + T.tensor(1.)",
    "T.tensor([1., 2.], dtype=T.float16) + T.tensor([1.])",
    "T.tensor([1, 2]) + T.tensor([True, False])",
    "T.tensor([1, 2]) / T.tensor([2, 4])",
    "T.tensor([1, 2]) / 2",
    "T.tensor(3) / 2",
    "T.tensor([True, False]) + True",
    "T.tensor([True, False]) * 2",
    "T.tensor([True, False]) + 1.5",
    "T.tensor([1, 2], dtype=T.int32) + T.tensor(1)",
    "T.tensor([1, 2], dtype=T.int32) + T.tensor([1])",
    "T.tensor([1, 2], dtype=T.uint8) + T.tensor([1], dtype=T.int8)",
    "2.5 - T.tensor([1, 2], dtype=T.uint8)",
    "2.5 ** T.tensor([1, 2])",
    "2 ** T.tensor([1, 2])",
    "T.tensor([1, 2]) ** 2",
    "T.tensor([1, 2]) ** 0.5",
    "T.tensor([4, 9]).sqrt()",
    "T.tensor([1, 2]).exp()",
    "T.tensor([True]).float()",
    "T.tensor([1, 2]).clamp(0.5, 1)",
    "T.tensor([1, 2]).clamp(0, 1)",
    "T.tensor([1, 2]).sum()",
    "T.tensor([1, 2], dtype=T.int8).sum()",
    "T.tensor([True, True]).sum()",
    "T.tensor([1., 2.]) @ T.tensor([1., 2.])",
    "T.tensor([[1, 2]]) @ T.tensor([[1], [2]])",
    "T.where(T.tensor([True, False]), 1, 0.5)",
    "T.where(T.tensor([True, False]), T.tensor([1, 2]), 0.5)",
    "T.tensor([1, 2]).maximum(T.tensor([1.5, 0.]))",
    "T.tensor([0.1]) == 0.1",
    "T.tensor([0.1]) == T.tensor(0.1, dtype=T.float64)",
    "7 // T.tensor([2, 3])",
    "7 % T.tensor([2, 3])",
    "T.tensor([-7, 7]) // 2",
    "T.tensor([-7., 7.]) % 3",
    "True & T.tensor([True, False])",
    "T.tensor([1, 2]) // 0",
]


@pytest.mark.parametrize("expression", PROMOTION_EXAMPLES)
def test_promotion_examples_match_pytorch(torch, expression):
    mine, real = both(torch, expression)
    if isinstance(real, Exception) or isinstance(mine, Exception):
        assert_same_exception(mine, real)
    else:
        assert describe(mine, torch) == describe(real, torch)


# --- the Tensor API -------------------------------------------------------------------------------

API_NAMES = {
    "x": lambda T: T.tensor([[0.5, -1.25, 2.0], [3.5, 0.75, -2.5]], requires_grad=True),
    "v": lambda T: T.tensor([1.0, 2.0, 3.0]),
    "s": lambda T: T.tensor(2.5),
    "b": lambda T: T.ones(2, 3, 4),
    "i": lambda T: T.tensor([3, -1, 4]),
    "i8": lambda T: T.tensor([1, 2], dtype=T.int8),
    "bo": lambda T: T.tensor([True, False, True]),
    "h": lambda T: T.tensor([0.1, 0.2], dtype=T.float16),
}

API_CASES = [
    "x.shape",
    "x.size()",
    "x.size(0)",
    "x.size(-1)",
    "x.dim()",
    "x.ndim",
    "x.numel()",
    "x.ndimension()",
    "x.nelement()",
    "s.shape",
    "s.dim()",
    "x.shape == (2, 3)",
    "x.shape[1]",
    "x.size() == T.Size([2, 3])",
    "str(x.shape)",
    "repr(x.size())",
    "x.shape.numel()",
    "x.T",
    "x.mT",
    "v.T",
    "s.T",
    "b.T.shape",
    "x.t()",
    "v.t()",
    "s.item()",
    "v[0].item()",
    "i[1].item()",
    "bo[0].item()",
    "h[0].item()",
    "T.tensor([7]).item()",
    "x.sum().item()",
    "x.tolist()",
    "s.tolist()",
    "i.tolist()",
    "bo.tolist()",
    "h.tolist()",
    "b.tolist()",
    "x.to(T.float64)",
    "x.to(T.int64)",
    "x.to('cpu')",
    "x.to(i)",
    "x.to('cpu', T.float16)",
    "x.to(dtype=T.float64)",
    "x.to(T.float32) is x",
    "x.float()",
    "x.double()",
    "x.long()",
    "x.int()",
    "x.half()",
    "x.bool()",
    "x.float() is x",
    "x.double().double()",
    "i.float()",
    "i.double()",
    "i.long() is i",
    "h.float()",
    "bo.long()",
    "x.type()",
    "i.type()",
    "x.type(T.float64)",
    "x.dtype",
    "i.dtype",
    "x.is_floating_point()",
    "i.is_floating_point()",
    "x.element_size()",
    "i.element_size()",
    "x.requires_grad",
    "x.is_leaf",
    "(x * 2).is_leaf",
    "(x * 2).requires_grad",
    "x.detach().requires_grad",
    "x.detach().is_leaf",
    "x.data.requires_grad",
    "x.clone().is_leaf",
    "x.contiguous() is x",
    "x.t().is_contiguous()",
    "x.t().contiguous().is_contiguous()",
    "x.t().contiguous().view(6)",
    "x.t().clone().is_contiguous()",
    "len(x)",
    "len(v)",
    "list(v)",
    "float(s)",
    "int(i[0])",
    "bool(bo[0])",
    "x.exp().dtype",
    "i.exp().dtype",
    "i.sum()",
    "bo.sum()",
    "i.sum(0)",
    "i8.sum().dtype",
    "i.float().mean()",
    "i.max()",
    "i.argmax()",
    "x.argmax()",
    "x.argmax(1)",
    "x.argmin()",
    "T.argmax(x, dim=0, keepdim=True)",
    "x.max(1)",
    "x.min(0)",
    "x.max(1, keepdim=True)",
    "x.max(1).indices",
    "i.abs()",
    "i.neg()",
    "i.relu()",
    "i.clamp(0, 1)",
    "i / 2",
    "i // 2",
    "i * 1.5",
    "i + True",
    "i / i",
    "i ** 2",
    "x.pow(2).dtype",
    "x.view(-1).shape",
    "x.reshape(3, -1).shape",
    "x.unsqueeze(0).shape",
    "x.flatten()",
    "x.sum(dim=(0, 1))",
    "x.mean(dim=[0])",
    "x.new_zeros(2)",
    "x.new_tensor([1, 2])",
    "x.eq(x).all()",
    "x.all()",
    "x.any()",
    "(x > 1).sum()",
    "(x > 1).float()",
    "x.sign()",
    "i.sign()",
    "x.max().item()",
    "x.requires_grad_(False).requires_grad",
    "x.grad",
    "x.is_cuda",
    "x.cpu() is x",
    "x.detach().numpy()",
    "i.numpy()",
    # Memory layout decides what view() and reshape() do: results PyTorch allocates afresh are
    # C-contiguous whatever the layout of their input.
    "b.permute(2, 0, 1).sum(1).is_contiguous()",
    "b.permute(2, 0, 1).sum(1).view(-1).shape",
    "b.permute(2, 0, 1).mean(2, keepdim=True).is_contiguous()",
    "b.permute(2, 0, 1).amax(1).is_contiguous()",
    "b.permute(2, 0, 1).max(1).values.is_contiguous()",
    "b.permute(2, 0, 1).softmax(0).is_contiguous()",
    "b.permute(2, 0, 1).log_softmax(2).view(-1).shape",
    "T.cat([b.permute(2, 0, 1)] * 2).is_contiguous()",
    "T.stack([b.permute(2, 0, 1)], 1).is_contiguous()",
    "b.permute(2, 0, 1).masked_fill(b.permute(2, 0, 1) > 0, 0.).is_contiguous()",
    "(2 ** b.permute(2, 0, 1)).is_contiguous()",
    "(b.permute(2, 0, 1) * 2).is_contiguous()",
    "b.permute(2, 0, 1).exp().is_contiguous()",
    "b[:, [0, 1]].is_contiguous()",
    "b.permute(2, 0, 1)[[0, 1]].is_contiguous()",
    "b.permute(2, 0, 1).flatten(1).shape",
    "T.ones(0, 2, 3).flatten(1).shape",
    "T.is_tensor(x)",
    "T.numel(b)",
    "T.is_floating_point(i)",
    "T.sign(T.tensor([float('nan'), -0.0, 2.0, -3.0]))",
    "T.tensor([float('nan'), 1.0]).sign_()",
    # element-wise results keep the memory layout of their first operand, as in PyTorch
    "((x.t() * 1) + T.ones(3, 2)).is_contiguous()",
    "(T.ones(3, 2) + x.t()).is_contiguous()",
    "T.where(x.t() > 0, 1.0, x.t()).is_contiguous()",
    "(T.ones(2, 3, 4).permute(2, 0, 1) * T.ones(4, 2, 3)).is_contiguous()",
]


@pytest.mark.parametrize("expression", API_CASES)
def test_tensor_api_matches_pytorch(torch, expression):
    mine, real = both(torch, expression, **API_NAMES)
    if isinstance(real, Exception) or isinstance(mine, Exception):
        assert_same_exception(mine, real)
    else:
        assert describe(mine, torch) == describe(real, torch)


# --- grad_fn nodes as printed -------------------------------------------------------------------


def _without_addresses(value):
    return re.sub(r"0x[0-9a-f]+", "0x...", repr(value))


def _nodes(T):
    a = T.ones(2, requires_grad=True)
    b = a * 2
    c = b.sum()
    return {
        "grad_fn": b.grad_fn,
        "next_functions": b.grad_fn.next_functions,
        "nested next_functions": c.grad_fn.next_functions[0][0].next_functions,
        "str": str(b.grad_fn),
        "class": type(b.grad_fn),
        "name()": b.grad_fn.name(),
        "sum name()": c.grad_fn.name(),
    }


def test_grad_fn_reprs_match_pytorch_up_to_addresses(torch):
    mine, real = _nodes(nbgrad), _nodes(torch)
    for key in real:
        assert _without_addresses(mine[key]) == _without_addresses(real[key]), key


def _custom_node(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return 2 * grad

    return Square.apply(T.ones(2, requires_grad=True)).grad_fn


def test_custom_function_node_repr_matches_pytorch(torch):
    assert _without_addresses(_custom_node(nbgrad)) == _without_addresses(_custom_node(torch))


def test_accumulate_grad_name_matches_pytorch(torch):
    names = []
    for T in (nbgrad, torch):
        a = T.ones(2, requires_grad=True)
        names.append((a * 2).grad_fn.next_functions[0][0].name())
    assert names[0] == names[1]


def test_numpy_with_force_shares_memory_also_when_grad_is_required(torch):
    for T in (nbgrad, torch):
        x = T.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Use tensor.detach"):
            x.numpy()
        array = x.numpy(force=True)
        array[0] = 5.0
        assert x.tolist() == [5.0, 1.0]
        assert x.stride() == (1,) and T.ones(2, 3).t().stride() == (1, 3)


CONVERSIONS_SCRIPT = """
import warnings
import {engine} as T
warnings.simplefilter("always")
t = T.tensor(2.5, requires_grad=True) * 1
seen = []
def run(label, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    seen.append((label, [str(w.message).split(" (Triggered internally")[0] for w in caught]))
with T.no_grad():
    run("float under no_grad", lambda: float(t))
run("int", lambda: int(t))
run("item", lambda: t.item())
run("format", lambda: f"{{t:.2f}}")
run("float", lambda: float(t))
run("float again", lambda: float(t))
run("percent", lambda: "%f" % t)
print(repr(seen))
"""


def test_converting_a_tensor_that_requires_grad_to_a_number_warns_once_as_pytorch(torch):
    """PyTorch warns once per process (TORCH_WARN_ONCE), and only with grad mode on and for the
    conversions that go through ``__float__``: each engine in a fresh process."""
    import subprocess
    import sys

    def seen(engine):
        script = CONVERSIONS_SCRIPT.format(engine=engine)
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
        return done.stdout

    assert seen("nbgrad") == seen("torch")


# --- iteration --------------------------------------------------------------------------------


def iterate_rows(T):
    x = T.tensor(np.arange(6, dtype=np.float32).reshape(3, 2), requires_grad=True)
    rows = list(x)
    seen = [
        (type(r.grad_fn).__name__, [type(n).__name__ for n, _ in r.grad_fn.next_functions])
        for r in rows
    ]
    (rows[0].sum() + rows[2].sum() * 2).backward()
    return seen, rows[1].grad_fn is rows[0].grad_fn, x.grad.tolist(), [r.tolist() for r in rows]


def test_iterating_a_tensor_unbinds_it_as_pytorch_does(torch):
    # PyTorch's Tensor.__iter__ is unbind(0): one UnbindBackward0 node shared by every row
    assert iterate_rows(nbgrad) == iterate_rows(torch)
    assert iterate_rows(nbgrad)[0][0] == ("UnbindBackward0", ["AccumulateGrad"])
