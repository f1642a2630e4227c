"""Tensor.scatter_reduce and Tensor.index_reduce against PyTorch 2.13: ScatterReduceBackward0 and
IndexReduceBackward0 (also in place), their saved values, the values, first and second
derivatives for every reduction with and without self, with zeros (prod) and ties (amax, amin);
PyTorch's errors and index_reduce's beta warning."""

import itertools
import warnings

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

DATASETS = {
    "plain": ([[1.0, 3.0, 2.0], [4.0, 0.5, 2.0]], [[5.0, 1.0, 2.0], [0.5, 3.0, 7.0]]),
    "zeros": ([[1.0, 0.0, 2.0], [4.0, 0.5, 0.0]], [[0.0, 1.0, 2.0], [0.5, 0.0, 7.0]]),
    "ties": ([[5.0, 3.0, 2.0], [7.0, 0.5, 2.0]], [[5.0, 3.0, 5.0], [7.0, 7.0, 7.0]]),
}
SCATTER = list(
    itertools.product(
        ("sum", "prod", "mean", "amax", "amin"), (True, False), (False, True), sorted(DATASETS)
    )
)
INDEX = list(
    itertools.product(
        ("prod", "mean", "amax", "amin"), (True, False), (False, True), sorted(DATASETS)
    )
)


def describe(node):
    saved = {}
    for name in sorted(a for a in dir(node) if a.startswith("_saved_")):
        value = getattr(node, name)
        saved[name] = np.asarray(value.detach()).tolist() if hasattr(value, "detach") else value
    return node.name(), saved, [type(n).__name__ for n, _ in node.next_functions]


def run(T, which, reduce, include_self, inplace, data):
    x = T.tensor(data[0], requires_grad=True)
    src = T.tensor(data[1], requires_grad=True)
    base = x * 1 if inplace else x
    if which == "scatter":
        index = T.tensor([[0, 1, 0], [1, 1, 1]])
        method = base.scatter_reduce_ if inplace else base.scatter_reduce
    else:
        index = T.tensor([0, 2, 0])
        method = base.index_reduce_ if inplace else base.index_reduce
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # index_reduce's beta warning: its own test below
        y = method(1, index, src, reduce, include_self=include_self)
    seen = describe(y.grad_fn)
    weights = T.tensor(np.cos(np.arange(6.0)).reshape(2, 3))
    grad_x, grad_src = T.autograd.grad((y * y * weights).sum(), (x, src), create_graph=True)
    second = T.autograd.grad((grad_x * grad_x).sum() + (grad_src * grad_src).sum(), (x, src))
    arrays = [y.detach(), grad_x.detach(), grad_src.detach(), *second]
    return seen, [a.numpy() for a in arrays]


def _compare(which, reduce, include_self, inplace, dataset):
    ours = run(nbgrad, which, reduce, include_self, inplace, DATASETS[dataset])
    theirs = run(torch, which, reduce, include_self, inplace, DATASETS[dataset])
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", SCATTER, ids=["-".join(map(str, c)) for c in SCATTER])
def test_scatter_reduce_matches_pytorch(case):
    _compare("scatter", *case)


@pytest.mark.parametrize("case", INDEX, ids=["-".join(map(str, c)) for c in INDEX])
def test_index_reduce_matches_pytorch(case):
    _compare("index", *case)


def test_values_by_hand():
    x = nbgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    src = nbgrad.tensor([4.0, 5.0, 6.0], requires_grad=True)
    index = nbgrad.tensor([0, 0, 2])
    y = x.scatter_reduce(0, index, src, "prod")
    assert y.tolist() == [20.0, 2.0, 18.0]
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 1.0, 6.0]  # the product of the others at each place
    assert src.grad.tolist() == [5.0, 4.0, 3.0]
    mean = nbgrad.tensor([1.0, 2.0, 3.0]).scatter_reduce(
        0, index, src.detach(), "mean", include_self=False
    )
    assert mean.tolist() == [4.5, 2.0, 6.0]


BAD_CALLS = {
    "reduce": lambda T: T.ones(2, 3).scatter_reduce(
        1, T.zeros(2, 3, dtype=T.long), T.ones(2, 3), "foo"
    ),
    "index-dtype": lambda T: T.ones(2, 3).scatter_reduce(1, T.zeros(2, 3), T.ones(2, 3), "sum"),
    "src-dtype": lambda T: T.ones(2, 3).scatter_reduce(
        1, T.zeros(2, 3, dtype=T.long), T.ones(2, 3, dtype=T.float64), "sum"
    ),
    "out-of-bounds": lambda T: T.ones(2, 3).scatter_reduce(
        1, T.full((2, 3), 5), T.ones(2, 3), "sum"
    ),
    "dim": lambda T: T.ones(2, 3).scatter_reduce(
        3, T.zeros(2, 3, dtype=T.long), T.ones(2, 3), "sum"
    ),
    "index-dims": lambda T: T.ones(2, 3).scatter_reduce(
        1, T.zeros(3, dtype=T.long), T.ones(2, 3), "sum"
    ),
    "index_reduce-sum": lambda T: T.ones(2, 3).index_reduce(
        1, T.tensor([0, 2, 0]), T.ones(2, 3), "sum"
    ),
    "index_reduce-index-dtype": lambda T: T.ones(2, 3).index_reduce(
        1, T.tensor([0.0, 2.0, 0.0]), T.ones(2, 3), "prod"
    ),
    "index_reduce-out-of-range": lambda T: T.ones(2, 3).index_reduce(
        1, T.tensor([0, 7, 0]), T.ones(2, 3), "prod"
    ),
    "index_reduce-source-dtype": lambda T: T.ones(2, 3).index_reduce(
        1, T.tensor([0, 2, 0]), T.ones(2, 3, dtype=T.float64), "prod"
    ),
    "index_reduce-count": lambda T: T.ones(2, 3).index_reduce(
        1, T.tensor([0, 2]), T.ones(2, 3), "prod"
    ),
    "index_reduce-matrix-index": lambda T: T.ones(2, 3).index_reduce(
        1, T.tensor([[0], [2], [0]]), T.ones(2, 3), "prod"
    ),
}


def _error(T, make):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make(T)
    except Exception as error:  # noqa: BLE001 - compared by type and message
        return type(error).__name__, str(error).splitlines()[0]
    return None


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_arguments_raise_pytorchs_errors(name):
    theirs = _error(torch, BAD_CALLS[name])
    assert theirs is not None
    assert _error(nbgrad, BAD_CALLS[name]) == theirs


def test_index_reduce_warns_that_it_is_in_beta_once(monkeypatch):
    import importlib

    monkeypatch.setattr(importlib.import_module("nbgrad.warn_once"), "given", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            nbgrad.ones(3).index_reduce(0, nbgrad.tensor([0, 1]), nbgrad.ones(2), "amax")
    assert [str(w.message) for w in caught] == [
        "index_reduce() is in beta and the API may change at any time."
    ]


def _zero_dim(T):
    x = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    src = T.tensor(3.0, dtype=T.float64, requires_grad=True)
    y = x.scatter_reduce(0, T.tensor(0), src, "prod")
    grad_x, grad_src = T.autograd.grad(y * y, (x, src), create_graph=True)
    second = T.autograd.grad(grad_x * grad_src, (x, src))
    return y.grad_fn.name(), [t.item() for t in (y, grad_x, grad_src, *second)]


def test_a_0d_tensor():
    assert _zero_dim(nbgrad) == _zero_dim(torch)


def _index_smaller_than_src(T):
    x = T.ones(2, 3, requires_grad=True)
    src = T.full((2, 3), 2.0, requires_grad=True)
    y = x.scatter_reduce(1, T.tensor([[0, 1], [1, 1]]), src, "sum")
    try:
        y.sum().backward()
    except RuntimeError as error:  # PyTorch's engine refuses src's gradient of index's shape
        return y.tolist(), str(error)
    return y.tolist(), None


def test_an_index_smaller_than_src():
    assert _index_smaller_than_src(nbgrad) == _index_smaller_than_src(torch)


def _mean_gradient_graphs(T):
    """Under create_graph, the mean's gradients hold no graph: its counts are constants."""
    x = T.tensor([1.0, 2.0, 3.0, 4.0], dtype=T.float64, requires_grad=True)
    src = T.tensor([5.0, 6.0, 7.0], dtype=T.float64, requires_grad=True)
    seen = []
    for include_self in (True, False):
        y = x.scatter_reduce(0, T.tensor([0, 1, 0]), src, "mean", include_self=include_self)
        grads = T.autograd.grad(y.sum(), (x, src), create_graph=True)
        seen.append([(g.requires_grad, g.tolist()) for g in grads])
    return seen


def test_mean_gradients_hold_no_graph():
    assert _mean_gradient_graphs(nbgrad) == [
        [(False, [1 / 3, 1 / 2, 1.0, 1.0]), (False, [1 / 3, 1 / 2, 1 / 3])],
        [(False, [0.0, 0.0, 1.0, 1.0]), (False, [1 / 2, 1.0, 1 / 2])],
    ]


def test_mean_gradients_hold_no_graph_as_pytorchs(torch):
    assert _mean_gradient_graphs(nbgrad) == _mean_gradient_graphs(torch)
