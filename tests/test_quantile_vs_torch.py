"""torch.quantile / nanquantile (functions and methods) against PyTorch 2.13: values, the whole
graph (Sort, View, Gather, in-place Lerp, Squeeze / Unsqueeze / Transpose nodes with their saves),
gradients, errors; and finite-difference checks of first and second order."""

import numpy as np
import pytest
from test_misc_ops_vs_torch import run_both

import nbgrad
from nbgrad.autograd.gradcheck import gradcheck, gradgradcheck

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]
SHAPES_AND_DIMS = [
    ((3, 4), {}),
    ((3, 4), {"dim": 1}),
    ((3, 4), {"dim": 0, "keepdim": True}),
    ((2, 3, 4), {"dim": -2}),
    ((3, 4), {"keepdim": True}),
    ((5,), {"dim": 0}),
    ((), {}),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("shape", "kwargs"), SHAPES_AND_DIMS)
@pytest.mark.parametrize("function", ["quantile", "nanquantile"])
def test_quantile_scalar_q(torch, function, mode, shape, kwargs):
    run_both(
        torch,
        lambda T, x: getattr(T, function)(x, 0.3, interpolation=mode, **kwargs),
        [shape],
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("shape", "kwargs"), SHAPES_AND_DIMS[:4])
def test_quantile_tensor_q(torch, mode, shape, kwargs):
    def build(T, x):
        q = T.tensor([0.0, 0.25, 0.5, 1.0], dtype=x.dtype)
        return x.quantile(q, interpolation=mode, **kwargs)

    run_both(torch, build, [shape])


@pytest.mark.parametrize("function", ["quantile", "nanquantile"])
def test_quantile_with_nan(torch, function):
    def build(T, x):
        x = x * T.tensor([[1.0, float("nan"), 1.0, 1.0], [1.0] * 4, [float("nan")] * 4],
                         dtype=x.dtype)  # fmt: skip
        return getattr(T, function)(x, T.tensor([0.2, 0.9], dtype=x.dtype), dim=1)

    run_both(torch, build, [(3, 4)])


def test_quantile_float32(torch):
    run_both(torch, lambda T, x: T.quantile(x, 0.7, dim=0), [(3, 4)], dtype="float32")


def test_quantile_value_by_hand():
    x = nbgrad.tensor([4.0, 1.0, 3.0, 2.0])
    # sorted 1, 2, 3, 4; q = 0.5 is rank 1.5: halfway between 2 and 3
    assert float(nbgrad.quantile(x, 0.5)) == 2.5
    assert float(nbgrad.quantile(x, 0.5, interpolation="lower")) == 2.0
    assert float(nbgrad.quantile(x, 0.5, interpolation="higher")) == 3.0


def _error_messages(T):
    x = T.tensor(np.ones((3, 4)))
    calls = [
        lambda: T.quantile(x, 1.5),
        lambda: T.quantile(x, T.tensor([0.1, 2.0], dtype=T.float64)),
        lambda: T.quantile(x, 0.5, interpolation="foo"),
        lambda: T.quantile(x.float(), T.tensor(0.5, dtype=T.float64)),
        lambda: T.quantile(T.ones(3, dtype=T.int64), 0.5),
        lambda: T.quantile(T.ones(0), 0.5),
        lambda: T.quantile(x, T.ones(2, 2, dtype=T.float64)),
        lambda: T.quantile(x, 0.5, dim=3),
        lambda: T.nanquantile(x, -0.5),
        lambda: T.nanquantile(T.ones(0), 0.5),
        lambda: T.nanquantile(x, 0.5, interpolation="x"),
    ]
    messages = []
    for call in calls:
        with pytest.raises((RuntimeError, IndexError)) as caught:
            call()
        messages.append((type(caught.value).__name__, str(caught.value)))
    return messages


def test_quantile_errors(torch):
    assert _error_messages(nbgrad) == _error_messages(torch)


@pytest.mark.parametrize("mode", ["linear", "midpoint", "nearest"])
def test_gradcheck_quantile(mode):
    x = nbgrad.tensor(np.random.default_rng(3).standard_normal((3, 5)), requires_grad=True)
    q = nbgrad.tensor([0.1, 0.55, 0.8], dtype=nbgrad.float64)

    def quantiles(x):
        return nbgrad.quantile(x, q, dim=1, interpolation=mode)

    assert gradcheck(quantiles, [x])
    assert gradgradcheck(quantiles, [x])
    assert gradcheck(lambda x: nbgrad.nanquantile(x, 0.4), [x])
    assert gradgradcheck(lambda x: nbgrad.nanquantile(x, 0.4), [x])
