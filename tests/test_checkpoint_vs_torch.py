"""torch.utils.checkpoint.checkpoint against real PyTorch 2.13: the graph a learner sees, how
many times the function runs, what ``grad_fn._saved_*`` gives, gradients (first and second
order), warnings and errors, in both variants (use_reentrant False and True)."""

import importlib
import re
import warnings

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch

from graph_compare import structure  # noqa: E402

VALUES = [[0.3, -0.7, 1.2], [0.4, 0.5, -1.1]]
# PyTorch warns once per process about the reference cycle .grad makes with create_graph
pytestmark = pytest.mark.filterwarnings(
    "ignore:Using backward\\(\\) with create_graph=True:UserWarning"
)


def _checkpoint_module(T):
    return importlib.import_module(T.__name__ + ".utils.checkpoint")


def _outcome(fn):
    try:
        return ("value", fn())
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return ("raises", type(error).__name__, str(error))


def _both(program):
    return program(nbgrad), program(torch)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reentrant", [False, True])
def test_graph_calls_and_gradients(reentrant):
    def program(T):
        cp = _checkpoint_module(T)
        x = T.tensor(VALUES, requires_grad=True)
        calls = []

        def f(v):
            calls.append(len(calls))
            return v.exp() * 2

        y = cp.checkpoint(f, x, use_reentrant=reentrant)
        seen = [structure(y.grad_fn), y._version, y.requires_grad, len(calls)]
        y.sum().backward(retain_graph=True)
        seen.append(len(calls))
        first = x.grad.clone()
        if not reentrant:  # a second pass recomputes once more
            y.sum().backward()
            seen.append(len(calls))
        return seen, first.tolist(), x.grad.tolist()

    (ours, our_first, our_grad), (theirs, their_first, their_grad) = _both(program)
    assert ours == theirs
    top = "CheckpointFunctionBackward" if reentrant else "MulBackward0"
    assert theirs[0][0] == top
    _close(our_first, their_first)
    _close(our_grad, their_grad)
    _close(their_first, 2 * np.exp(np.array(VALUES, np.float32)))


def test_reading_saved_values_runs_the_function_again():
    def program(T):
        cp = _checkpoint_module(T)
        x = T.tensor(VALUES, requires_grad=True)
        calls = []

        def f(v):
            calls.append(1)
            return v.exp() * 2

        y = cp.checkpoint(f, x, use_reentrant=False)
        seen = [len(calls), y.grad_fn._saved_other.tolist(), len(calls)]
        exp_node = y.grad_fn.next_functions[0][0]
        result = exp_node._saved_result  # recomputed: a second call
        seen += [type(exp_node).__name__, result.requires_grad, type(result.grad_fn).__name__]
        seen += [result._version, len(calls)]
        again = exp_node._saved_result  # outside backward: every read recomputes
        seen.append(len(calls))
        np.testing.assert_array_equal(again.detach().numpy(), result.detach().numpy())
        return seen, result.detach().numpy()

    (ours, our_result), (theirs, their_result) = _both(program)
    assert ours == theirs == [1, 2, 1, "ExpBackward0", True, "ExpBackward0", 0, 2, 3]
    _close(our_result, np.exp(np.array(VALUES, np.float32)))
    _close(our_result, their_result)


def test_errors_after_the_forward():
    def program(T):
        cp = _checkpoint_module(T)
        f = lambda v: v.exp() * 2  # noqa: E731
        x = T.tensor(VALUES, requires_grad=True)
        y = cp.checkpoint(f, x, use_reentrant=False)
        y.sum().backward()
        twice = _outcome(lambda: y.sum().backward())  # the graph was freed
        z = T.tensor(VALUES, requires_grad=True)
        y = cp.checkpoint(f, z, use_reentrant=False)
        with T.no_grad():
            z.mul_(2)  # an input written in place: its saved version no longer holds
        written = _outcome(lambda: y.sum().backward())
        y = cp.checkpoint(f, z, use_reentrant=True)
        grad = _outcome(lambda: T.autograd.grad(y.sum(), z))
        chosen = _outcome(lambda: y.sum().backward(inputs=[z]))
        return twice, written, grad, chosen

    ours, theirs = _both(program)
    assert ours == theirs
    assert theirs[1][2].startswith("one of the variables needed for gradient computation")
    assert theirs[2][2].startswith("When use_reentrant=True, torch.utils.checkpoint is")


def test_arguments_checked_as_pytorch_does():
    def program(T):
        cp = _checkpoint_module(T)
        x = T.tensor(VALUES, requires_grad=True)
        f = lambda v, k=1.0: v * k  # noqa: E731
        return [
            _outcome(lambda: cp.checkpoint(f, x, use_reentrant=True, k=2.0)),
            _outcome(lambda: cp.checkpoint(f, x, use_reentrant=False, determinism_check="x")),
            _outcome(lambda: cp.checkpoint(f, x, use_reentrant=True, debug=True)),
            _outcome(lambda: cp.checkpoint(f, x, use_reentrant=False, k=2.0).tolist()),
        ]

    ours, theirs = _both(program)
    assert ours == theirs
    assert theirs[0] == ("raises", "ValueError", "Unexpected keyword arguments: k")


def _warnings_of(T):
    cp = _checkpoint_module(T)
    x = T.tensor(VALUES, requires_grad=True)
    plain = T.tensor(VALUES)
    seen = []
    for call in (
        lambda: cp.checkpoint(lambda v: v.exp(), x),  # no use_reentrant: warns, means True
        lambda: cp.checkpoint(lambda v: v.exp(), plain, use_reentrant=True),
        lambda: cp.checkpoint(lambda v: v.exp(), plain, use_reentrant=False),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = call()
        messages = [re.sub(r" \(Triggered internally.*", "", str(w.message)) for w in caught]
        seen.append((messages, type(y.grad_fn).__name__, y.requires_grad))
    return seen


def test_warnings_as_pytorchs():
    ours, theirs = _both(_warnings_of)
    assert ours == theirs
    assert theirs[0][1] == "CheckpointFunctionBackward"
    assert theirs[1][0] == ["None of the inputs have requires_grad=True. Gradients will be None"]


def test_the_warning_points_at_the_users_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nbgrad.utils.checkpoint.checkpoint(lambda v: v * 2, nbgrad.ones(2, requires_grad=True))
    assert [w.filename for w in caught] == [__file__]


def test_dropout_draws_the_same_mask_when_recomputed():
    def program(T):
        cp = _checkpoint_module(T)
        T.manual_seed(3)
        x = T.tensor(VALUES, requires_grad=True)
        f = lambda v: T.nn.functional.dropout(v.sin(), 0.5) * v  # noqa: E731
        y = cp.checkpoint(f, x, use_reentrant=False)
        y.sum().backward()
        kept = (y != 0).numpy()
        return kept, x.grad.numpy()

    for T in (nbgrad, torch):
        kept, grad = program(T)
        x = np.array(VALUES, np.float32)
        # where dropout kept sin(x) (scaled by 2): d/dx 2 sin(x) x = 2 (cos(x) x + sin(x))
        expected = np.where(kept, 2 * (np.cos(x) * x + np.sin(x)), 0.0)
        _close(grad, expected)


@pytest.mark.parametrize("reentrant", [False, True])
def test_second_order_through_a_checkpoint(reentrant):
    def program(T):
        cp = _checkpoint_module(T)
        x = T.tensor([0.3, -0.7, 1.2], dtype=T.float64, requires_grad=True)
        f = lambda v: v.exp() * v.sin()  # noqa: E731
        y = cp.checkpoint(f, x, use_reentrant=reentrant)
        first = _outcome(lambda: T.autograd.grad(y.sum(), x, create_graph=True)[0])
        if first[0] == "raises":
            return first, None
        (second,) = T.autograd.grad(first[1].sum(), x)
        return type(first[1].grad_fn).__name__, (first[1].detach().numpy(), second.numpy())

    ours, theirs = _both(program)
    if reentrant:
        assert ours == theirs and theirs[0][0] == "raises"
        return
    assert ours[0] == theirs[0]
    x = np.array([0.3, -0.7, 1.2])
    _close(ours[1][0], np.exp(x) * (np.sin(x) + np.cos(x)))
    _close(ours[1][1], 2 * np.exp(x) * np.cos(x))
    _close(ours[1][1], theirs[1][1])


def test_backward_with_create_graph_through_a_reentrant_checkpoint_builds_no_graph():
    def program(T):
        cp = _checkpoint_module(T)
        x = T.tensor([0.3, -0.7, 1.2], dtype=T.float64, requires_grad=True)
        y = cp.checkpoint(lambda v: v.exp() * v.sin(), x, use_reentrant=True)
        y.sum().backward(create_graph=True)
        return x.grad.requires_grad, x.grad.detach().numpy()

    (ours, our_grad), (theirs, their_grad) = _both(program)
    assert ours == theirs is False
    _close(our_grad, their_grad)


def test_gradcheck_through_a_checkpoint():
    x = nbgrad.tensor([0.3, -0.7, 1.2], dtype=nbgrad.float64, requires_grad=True)

    def f(v):
        return nbgrad.utils.checkpoint.checkpoint(
            lambda u: u.exp() * u.sin(), v, use_reentrant=False
        )

    assert nbgrad.autograd.gradcheck(f, (x,))
    assert nbgrad.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
@pytest.mark.parametrize("reentrant", [False, True])
def test_a_checkpointed_program_is_recorded(engine, reentrant):
    T = nbgrad if engine == "nbgrad" else torch
    cp = _checkpoint_module(T)
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor([0.5, -1.25, 2.0], requires_grad=True)
        y = cp.checkpoint(lambda v: v.exp() * v.sin(), x, use_reentrant=reentrant)
        y.sum().backward()
    data = trace.to_dict()
    assert data["status"] == {"complete": True, "truncated": None, "error": None}
    names = {node["name"] for node in data["nodes"]}
    top = "CheckpointFunctionBackward" if reentrant else "MulBackward0"
    assert {top, "SumBackward0", "AccumulateGrad"} <= names
    grad = np.exp([0.5, -1.25, 2.0]) * (np.sin([0.5, -1.25, 2.0]) + np.cos([0.5, -1.25, 2.0]))
    _close(x.grad.numpy(), grad.astype(np.float32))
