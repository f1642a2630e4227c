"""The cheap paths of the classifier loss, against PyTorch and against the general paths.

Softmax reductions over short rows (10 classes for a batch of at least 16) go down the columns
of a transposed copy, and ``nll_loss`` without class weights or ignored targets skips the
weights; both must give what the general code and PyTorch give, on the shapes that take them.
"""

import numpy as np
import pytest

import nbgrad
from nbgrad.ops import nn_kernels
from nbgrad.ops.formula_math import reduce_keeping

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("shape", [(64, 10), (1000, 3), (16, 16), (15, 10), (64, 17), (64, 1)])
@pytest.mark.parametrize("axis", [1, -1, (1,), 0])
def test_reduce_keeping_matches_numpy(shape, axis):
    x = RNG.standard_normal(shape).astype(np.float32)
    expected_max = np.maximum.reduce(x, axis=axis, keepdims=True)
    got_max = reduce_keeping(np.maximum, x, axis)
    np.testing.assert_array_equal(got_max, expected_max)  # a max is exact in any order
    expected_sum = np.add.reduce(x, axis=axis, keepdims=True)
    got_sum = reduce_keeping(np.add, x, axis)
    assert got_sum.shape == expected_sum.shape
    np.testing.assert_allclose(got_sum, expected_sum, rtol=1e-6, atol=1e-6)


def _targets(batch, classes, ignored=()):
    labels = RNG.integers(0, classes, batch)
    labels[list(ignored)] = -100
    return labels


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignored", [(), (3, 20)])
def test_cross_entropy_over_a_batch_matches_pytorch(torch, reduction, ignored):
    logits = RNG.standard_normal((32, 10)).astype(np.float32) * 3
    labels = _targets(32, 10, ignored)
    results = {}
    for name, T in (("nbgrad", nbgrad), ("torch", torch)):
        x = T.tensor(logits, requires_grad=True)
        loss = T.nn.functional.cross_entropy(x, T.tensor(labels), reduction=reduction)
        loss.backward(T.ones_like(loss))
        results[name] = (loss.detach().numpy(), x.grad.numpy())
    np.testing.assert_allclose(results["nbgrad"][0], results["torch"][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results["nbgrad"][1], results["torch"][1], rtol=1e-6, atol=1e-7)
    if ignored:
        assert np.all(results["nbgrad"][1][list(ignored)] == 0)


@pytest.mark.parametrize("function", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dim", [((64, 10), 1), ((64, 10), -1), ((10, 64), 0)])
def test_softmax_over_a_batch_matches_pytorch(torch, function, shape, dim):
    values = RNG.standard_normal(shape).astype(np.float32) * 5
    cotangent = RNG.standard_normal(shape).astype(np.float32)
    results = {}
    for name, T in (("nbgrad", nbgrad), ("torch", torch)):
        x = T.tensor(values, requires_grad=True)
        y = getattr(T, function)(x, dim)
        y.backward(T.tensor(cotangent))
        results[name] = (y.detach().numpy(), x.grad.numpy())
    for ours, theirs in zip(results["nbgrad"], results["torch"]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", [nn_kernels.REDUCTION_MEAN, nn_kernels.REDUCTION_SUM])
def test_unweighted_nll_gives_the_general_paths_numbers(reduction):
    log_probs = np.log(RNG.dirichlet(np.ones(10), 50)).astype(np.float32)
    labels = _targets(50, 10)
    fast = nn_kernels.nll_loss(log_probs, labels, None, reduction, -100)
    # A weight of ones takes the general path and must give the same sums.
    general = nn_kernels.nll_loss(log_probs, labels, np.ones(10, np.float32), reduction, -100)
    assert nn_kernels._unweighted_batch_key(labels, None, -100) is not None
    for a, b in zip(fast, general):
        np.testing.assert_array_equal(a, b)
    grad = np.float32(0.7)
    fast_grad = nn_kernels.nll_loss_backward(
        grad, log_probs, labels, None, reduction, -100, fast[1]
    )
    general_grad = nn_kernels.nll_loss_backward(
        grad, log_probs, labels, np.ones(10, np.float32), reduction, -100, general[1]
    )
    np.testing.assert_allclose(fast_grad, general_grad, rtol=1e-6)


def test_ignored_or_weighted_targets_take_the_general_path():
    labels = _targets(20, 10, ignored=(4,))
    assert nn_kernels._unweighted_batch_key(labels, None, -100) is None
    assert nn_kernels._unweighted_batch_key(_targets(20, 10), None, 3) is None
    assert nn_kernels._unweighted_batch_key(_targets(20, 10), np.ones(10), -100) is None
