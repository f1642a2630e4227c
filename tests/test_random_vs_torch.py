"""Generators and sampling, against PyTorch: shapes, dtypes, nodes and errors are PyTorch's; the
numbers are nbgrad's own (NumPy's PCG64), checked for reproducibility and their distribution."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch


def both(expression):
    """Evaluate ``expression`` with T bound to nbgrad and to PyTorch."""
    return [eval(expression, {"T": T, "np": np}) for T in (nbgrad, torch)]  # noqa: S307


def outcome(T, expression):
    try:
        value = eval(expression, {"T": T})  # noqa: S307
    except Exception as error:  # noqa: BLE001 - compared as type and message
        return ("raised", type(error), str(error))
    return ("value", tuple(value.shape), str(value.dtype), type(value.grad_fn).__name__)


SHAPES = [
    "T.rand(2, 3, generator=T.Generator().manual_seed(1))",
    "T.randn(4, generator=T.Generator(), dtype=T.float64)",
    "T.randint(5, (2, 3))",
    "T.randint(2, 5, (4,), dtype=T.int32)",
    "T.randint(5, (2,), dtype=T.float32)",
    "T.randint(low=1, high=4, size=(3,))",
    "T.randint_like(T.zeros(2, 2), 5)",
    "T.randint_like(T.zeros(2, dtype=T.int32), 3, 5)",
    "T.rand_like(T.zeros(3), generator=T.Generator())",
    "T.randperm(5, generator=T.Generator())",
    "T.normal(T.zeros(3, requires_grad=True), T.ones(3, requires_grad=True))",
    "T.normal(T.zeros(2, 1, requires_grad=True), T.ones(3))",
    "T.normal(T.zeros(3, requires_grad=True), 2.0)",
    "T.normal(1.0, T.ones(3, requires_grad=True))",
    "T.normal(0.0, 1.0, (2, 3))",
    "T.normal(0.0, 1.0, (2,), dtype=T.float64)",
    "T.bernoulli(T.full((3,), 0.5, requires_grad=True))",
    "T.bernoulli(T.full((3,), 0.5, dtype=T.float64))",
    "T.bernoulli(T.zeros(3, requires_grad=True), 0.3)",
    "T.zeros(2).bernoulli(0.3)",
    "T.poisson(T.ones(3, requires_grad=True))",
    "T.multinomial(T.tensor([1.0, 2.0, 3.0]), 2)",
    "T.multinomial(T.tensor([[1.0, 2.0], [3.0, 0.0]]), 5, replacement=True)",
    "T.tensor([1.0, 2.0]).multinomial(2)",
    "(T.zeros(3, requires_grad=True) * 1).uniform_(-1, 1)",
    "(T.zeros(3, requires_grad=True) * 1).normal_()",
    "(T.zeros(3, requires_grad=True) * 1).bernoulli_(0.5)",
    "(T.zeros(3, requires_grad=True) * 1).bernoulli_(T.full((3,), 0.5))",
    "(T.zeros(3, requires_grad=True) * 1).random_()",
    "(T.zeros(3, requires_grad=True) * 1).random_(5)",
    "(T.zeros(3, requires_grad=True) * 1).random_(2, 5)",
    "(T.zeros(3, requires_grad=True) * 1).exponential_()",
    "(T.zeros(3, requires_grad=True) * 1).geometric_(0.5)",
    "(T.zeros(3, requires_grad=True) * 1).cauchy_()",
    "(T.zeros(3, requires_grad=True) * 1).log_normal_()",
    "T.zeros(3, dtype=T.int64).random_(10)",
    "T.zeros(3, dtype=T.int64).geometric_(0.5)",
    "T.zeros(3, dtype=T.int64).bernoulli_(0.5)",
    "T.get_rng_state()",
]

ERRORS = [
    "T.multinomial(T.tensor([1.0, 2.0]), 3)",
    "T.multinomial(T.tensor([-1.0, 2.0]), 1)",
    "T.multinomial(T.tensor([0.0, 0.0]), 1)",
    "T.multinomial(T.tensor([1.0, float('nan')]), 1)",
    "T.multinomial(T.tensor([1.0, float('inf')]), 1)",
    "T.multinomial(T.tensor(1.0), 1)",
    "T.multinomial(T.ones(2, 2, 2), 1)",
    "T.multinomial(T.tensor([1, 2]), 1)",
    "T.multinomial(T.tensor([1.0, 2.0]), 0)",
    "T.bernoulli(T.tensor([1.5]))",
    "T.bernoulli(T.tensor([1, 0]))",
    "T.poisson(T.tensor([-1.0]))",
    "T.poisson(T.tensor([1, 2]))",
    "T.normal(T.zeros(2), T.tensor([-1.0, 1.0]))",
    "T.normal(0.0, -1.0, (2,))",
    "T.normal(T.zeros(2), -1.0)",
    "T.normal(T.zeros(2), T.ones(3))",
    "T.normal(T.tensor([1, 2]), 1.0)",
    "T.randint(5, 3, (2,))",
    "T.randint(3, 3, (2,))",
    "T.randint(5, (2,), requires_grad=True)",
    "T.randperm(-1)",
    "T.zeros(2, requires_grad=True).uniform_()",
    "T.zeros(2, requires_grad=True).normal_()",
    "T.zeros(2, requires_grad=True).random_()",
    "T.zeros(2, requires_grad=True).bernoulli_()",
    "T.zeros(2, requires_grad=True).exponential_()",
    "T.zeros(2).uniform_(2, 1)",
    "T.zeros(2).normal_(0, -1)",
    "T.zeros(2).exponential_(-1)",
    "T.zeros(2).bernoulli_(1.5)",
    "T.zeros(2).geometric_(1.5)",
    "T.zeros(2).random_(5, 3)",
    "T.zeros(2).cauchy_(0, -1)",
    "T.zeros(2).log_normal_(0, -1)",
    "T.zeros(2, dtype=T.int64).uniform_()",
    "T.zeros(2, dtype=T.int64).normal_()",
    "T.zeros(2, dtype=T.int64).exponential_()",
    "T.zeros(2, dtype=T.uint8).random_(0, 300)",
    "T.Generator().set_state(T.zeros(3))",
    "T.zeros(2, requires_grad=True).normal_().sum().backward()",
    "T.bernoulli(T.zeros(2, requires_grad=True), 0.3).sum().backward()",
]


@pytest.mark.parametrize("expression", SHAPES + ERRORS)
def test_shapes_dtypes_nodes_and_errors_are_pytorchs(expression):
    mine, theirs = (outcome(T, expression) for T in (nbgrad, torch))
    if expression == "T.get_rng_state()":  # nbgrad's state is NumPy's, serialized
        assert mine[2:] == theirs[2:]
        return
    assert mine == theirs


def test_wrong_state_size_is_refused_as_pytorch_does():
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 37 but"):
        nbgrad.Generator().set_state(nbgrad.zeros(3, dtype=nbgrad.uint8))


def test_generator_api():
    g = nbgrad.Generator()
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert g.device == nbgrad.device("cpu") and str(g.device) == str(torch.Generator().device)
    assert g.manual_seed(-1).initial_seed() == torch.Generator().manual_seed(-1).initial_seed()
    assert nbgrad.manual_seed(4) is nbgrad.default_generator
    assert nbgrad.initial_seed() == 4
    seed = g.seed()
    assert 0 <= seed < 2**64 and g.initial_seed() == seed
    assert repr(g).startswith("<torch._C.Generator object at 0x")
    with pytest.raises(RuntimeError, match="Cannot get CUDA generator"):
        nbgrad.Generator(device="cuda")


def test_same_seed_same_numbers_and_independent_generators():
    a, b = nbgrad.Generator().manual_seed(7), nbgrad.Generator().manual_seed(7)
    first = nbgrad.randn(5, generator=a)
    nbgrad.randn(100)  # the default generator moves; the others do not care
    assert nbgrad.equal(first, nbgrad.randn(5, generator=b))
    assert not nbgrad.equal(nbgrad.randn(5, generator=a), first)
    nbgrad.manual_seed(11)
    values = [nbgrad.rand(3), nbgrad.randint(9, (3,)), nbgrad.zeros(3).normal_()]
    nbgrad.manual_seed(11)
    again = [nbgrad.rand(3), nbgrad.randint(9, (3,)), nbgrad.zeros(3).normal_()]
    assert all(nbgrad.equal(x, y) for x, y in zip(values, again))


def test_states_round_trip_and_fork_rng():
    g = nbgrad.Generator().manual_seed(2)
    state = g.get_state()
    assert state.dtype == nbgrad.uint8 and state.shape == (37,)
    first = nbgrad.rand(4, generator=g)
    g.set_state(state)
    assert nbgrad.equal(nbgrad.rand(4, generator=g), first)
    state = nbgrad.get_rng_state()
    expected = nbgrad.rand(3)
    nbgrad.set_rng_state(state)
    with nbgrad.random.fork_rng():
        nbgrad.rand(10)
    assert nbgrad.equal(nbgrad.rand(3), expected)


def test_the_default_generator_is_shared_by_every_function():
    nbgrad.manual_seed(5)
    nbgrad.rand(1)
    after_rand = nbgrad.get_rng_state()
    nbgrad.manual_seed(5)
    nbgrad.rand(1, generator=nbgrad.default_generator)
    assert nbgrad.equal(nbgrad.get_rng_state(), after_rand)
    for draw in (
        lambda: nbgrad.normal(0.0, 1.0, (2,)),
        lambda: nbgrad.bernoulli(nbgrad.full((2,), 0.5)),
        lambda: nbgrad.multinomial(nbgrad.ones(3), 2),
        lambda: nbgrad.zeros(2).uniform_(),
        lambda: nbgrad.nn.functional.dropout(nbgrad.ones(4)),
    ):
        before = nbgrad.get_rng_state()
        draw()
        assert not nbgrad.equal(nbgrad.get_rng_state(), before)


def test_in_place_samplers_bump_the_version_and_work_under_no_grad():
    x = nbgrad.zeros(3, requires_grad=True)
    with nbgrad.no_grad():
        x.uniform_()
    assert x._version == 1 and x.grad_fn is None
    y = nbgrad.zeros(2)
    y.normal_()
    y.random_(3)
    y.exponential_()
    assert y._version == 3


def test_data_utils_take_a_generator():
    from nbgrad.utils.data import RandomSampler, random_split

    order = list(RandomSampler(range(10), generator=nbgrad.Generator().manual_seed(1)))
    assert order == list(RandomSampler(range(10), generator=nbgrad.Generator().manual_seed(1)))
    parts = random_split(range(10), [3, 7], generator=nbgrad.Generator().manual_seed(1))
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))


STATISTICS = [
    # expression, expected mean, expected std
    ("T.rand(N, generator=g)", 0.5, (1 / 12) ** 0.5),
    ("T.randn(N, generator=g)", 0.0, 1.0),
    ("T.normal(2.0, 3.0, (N,), generator=g)", 2.0, 3.0),
    ("T.normal(T.full((N,), 1.0), T.full((N,), 2.0), generator=g)", 1.0, 2.0),
    ("T.bernoulli(T.full((N,), 0.3), generator=g)", 0.3, (0.3 * 0.7) ** 0.5),
    ("T.poisson(T.full((N,), 4.0), generator=g)", 4.0, 2.0),
    ("T.zeros(N).uniform_(-1, 3, generator=g)", 1.0, (16 / 12) ** 0.5),
    ("T.zeros(N).exponential_(2.0, generator=g)", 0.5, 0.5),
    ("T.zeros(N).geometric_(0.25, generator=g)", 4.0, (0.75 / 0.25**2) ** 0.5),
    ("T.zeros(N).random_(10, generator=g)", 4.5, (99 / 12) ** 0.5),
    ("T.randint(3, 7, (N,), generator=g).double()", 4.5, (15 / 12) ** 0.5),
    ("T.multinomial(T.tensor([1.0, 3.0]), N, True, generator=g).double()", 0.75, 0.75**0.5 / 2),
]


@pytest.mark.parametrize("expression, mean, std", STATISTICS)
def test_distributions(expression, mean, std):
    n = 40000
    for T, g in ((nbgrad, nbgrad.Generator().manual_seed(0)), (torch, torch.Generator())):
        values = eval(expression, {"T": T, "N": n, "g": g}).numpy()  # noqa: S307
        assert abs(values.mean() - mean) < 5 * std / n**0.5
        assert abs(values.std() - std) < 0.05 * std


def test_multinomial_without_replacement_draws_distinct_categories_by_weight():
    g = nbgrad.Generator().manual_seed(0)
    probs = nbgrad.tensor([0.0, 1.0, 3.0, 6.0])
    firsts = [nbgrad.multinomial(probs, 3, generator=g).tolist() for _ in range(2000)]
    assert all(len(set(row)) == 3 and 0 not in row for row in firsts)
    share = np.mean([row[0] == 3 for row in firsts])
    assert abs(share - 0.6) < 0.05
