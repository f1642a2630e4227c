"""optim.LBFGS steps as torch.optim.LBFGS does: the same parameters after every ``step(closure)``,
the same number of closure calls (``state["func_evals"]``) and iterations (``state["n_iter"]``),
the same state, the same errors. Problems: Rosenbrock's function, a small least-squares fit, a
small MLP; with and without the strong Wolfe line search."""

import numpy as np
import pytest
from graph_compare import to_numpy

import nbgrad


def rosenbrock_problem(T, dtype_name):
    x = T.tensor([-1.5, 2.0], dtype=getattr(T, dtype_name), requires_grad=True)

    def loss():
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2

    return [x], loss


def least_squares_problem(T, dtype_name):
    rng = np.random.default_rng(3)
    kind = getattr(T, dtype_name)
    a = T.tensor(rng.standard_normal((12, 5)), dtype=kind)
    b = T.tensor(rng.standard_normal(12), dtype=kind)
    w = T.zeros(5, dtype=kind, requires_grad=True)
    bias = T.zeros((), dtype=kind, requires_grad=True)

    def loss():
        return ((a @ w + bias - b) ** 2).mean() + 0.01 * (w * w).sum()

    return [w, bias], loss


def mlp_problem(T, dtype_name):
    rng = np.random.default_rng(5)
    kind = getattr(T, dtype_name)
    start = [rng.standard_normal(shape) * 0.5 for shape in ((6, 3), (6,), (2, 6), (2,))]
    model = T.nn.Sequential(T.nn.Linear(3, 6), T.nn.Tanh(), T.nn.Linear(6, 2)).to(kind)
    with T.no_grad():
        for param, values in zip(model.parameters(), start):
            param.copy_(T.tensor(values, dtype=kind))
    x = T.tensor(rng.standard_normal((16, 3)), dtype=kind)
    target = T.tensor(rng.integers(0, 2, 16))

    def loss():
        return T.nn.functional.cross_entropy(model(x), target)

    return list(model.parameters()), loss


PROBLEMS = {
    "rosenbrock": rosenbrock_problem,
    "least squares": least_squares_problem,
    "mlp": mlp_problem,
}
SETTINGS = {
    "fixed step": {"lr": 0.01, "max_iter": 7},
    "fixed step short history": {"lr": 0.1, "max_iter": 6, "history_size": 3},
    "strong wolfe": {"max_iter": 7, "line_search_fn": "strong_wolfe"},
    "strong wolfe short history": {
        "max_iter": 10,
        "history_size": 2,
        "line_search_fn": "strong_wolfe",
    },
    "strong wolfe few evaluations": {
        "max_iter": 8,
        "max_eval": 9,
        "line_search_fn": "strong_wolfe",
    },
    "loose tolerances": {
        "max_iter": 20,
        "tolerance_grad": 1e-3,
        "tolerance_change": 1e-4,
        "line_search_fn": "strong_wolfe",
    },
}


def run(T, problem, dtype_name, options, steps):
    params, loss_of = PROBLEMS[problem](T, dtype_name)
    optimizer = T.optim.LBFGS(params, **options)
    calls = []

    def closure():
        optimizer.zero_grad()
        loss = loss_of()
        loss.backward()
        calls.append(loss.item())
        return loss

    history = []
    for _ in range(steps):
        returned = optimizer.step(closure)
        state = optimizer.state[params[0]]
        history.append(
            {
                "returned": returned.item(),
                "params": [to_numpy(p).copy() for p in params],
                "func_evals": state["func_evals"],
                "n_iter": state["n_iter"],
                "calls": len(calls),
            }
        )
    return history, optimizer, calls


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_steps_match_torch_in_float64(torch, problem, setting):
    """PyTorch's float64 add with alpha is a fused multiply-add, which NumPy cannot round as;
    Rosenbrock's valley magnifies those last bits over a few dozen iterations to ~1e-8."""
    ours, our_optimizer, our_calls = run(nbgrad, problem, "float64", SETTINGS[setting], 4)
    theirs, their_optimizer, their_calls = run(torch, problem, "float64", SETTINGS[setting], 4)
    for step, (mine, real) in enumerate(zip(ours, theirs)):
        for key in ("func_evals", "n_iter", "calls"):
            assert mine[key] == real[key], (step, key)
        np.testing.assert_allclose(mine["returned"], real["returned"], rtol=1e-6)
        for got, want in zip(mine["params"], real["params"]):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=f"step {step}")
    np.testing.assert_allclose(our_calls, their_calls, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("problem", PROBLEMS)
def test_steps_match_torch_in_float32(torch, problem, line_search_fn):
    """float32 rounds as PyTorch's where the optimizer itself computes (its fused add with
    alpha), but dot products of more than a few entries sum in BLAS's order and the losses'
    own ops round their own way, so iterates drift apart by rounding as they go on: compared
    one iteration per step, over the first six."""
    options = {"max_iter": 1, "max_eval": 10, "line_search_fn": line_search_fn}
    options["lr"] = 1 if line_search_fn else 0.1
    ours, *_ = run(nbgrad, problem, "float32", options, 6)
    theirs, *_ = run(torch, problem, "float32", options, 6)
    for step, (mine, real) in enumerate(zip(ours, theirs)):
        assert (mine["func_evals"], mine["n_iter"]) == (real["func_evals"], real["n_iter"])
        for got, want in zip(mine["params"], real["params"]):
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5, err_msg=f"step {step}")


def test_rosenbrock_float32_rounds_as_torch(torch):
    """On two parameters the dot products are PyTorch's exactly: the first ten iterates are the
    same float32 numbers (later ones part by the last bit of the loss's own rounding)."""
    options = {"max_iter": 1, "max_eval": 10, "line_search_fn": "strong_wolfe"}
    ours, *_ = run(nbgrad, "rosenbrock", "float32", options, 10)
    theirs, *_ = run(torch, "rosenbrock", "float32", options, 10)
    for mine, real in zip(ours, theirs):
        np.testing.assert_array_equal(mine["params"][0], real["params"][0])


def test_converges_and_state_matches_torch(torch):
    """A run to convergence stops on the same test after the same evaluations, and every state
    entry PyTorch keeps (func_evals, n_iter, d, t, old_dirs, old_stps, ro, H_diag,
    prev_flat_grad, prev_loss, al) reads the same."""
    options = {"max_iter": 50, "history_size": 4, "line_search_fn": "strong_wolfe"}
    ours, our_optimizer, _ = run(nbgrad, "least squares", "float64", options, 2)
    theirs, their_optimizer, _ = run(torch, "least squares", "float64", options, 2)
    assert [h["func_evals"] for h in ours] == [h["func_evals"] for h in theirs]
    assert theirs[0]["n_iter"] < 50  # it did stop early
    mine = our_optimizer.state_dict()
    real = their_optimizer.state_dict()
    assert mine["param_groups"] == real["param_groups"]
    assert list(mine["state"]) == list(real["state"]) == [0]
    assert list(mine["state"][0]) == list(real["state"][0])
    for key, want in real["state"][0].items():
        got = mine["state"][0][key]
        if isinstance(want, list):
            assert len(got) == len(want), key
            pairs = zip(got, want)
        else:
            pairs = [(got, want)]
        for got_item, want_item in pairs:
            assert isinstance(got_item, nbgrad.Tensor) == isinstance(want_item, torch.Tensor), key
            np.testing.assert_allclose(
                to_numpy(got_item), to_numpy(want_item), rtol=1e-6, atol=1e-9, err_msg=key
            )


def test_state_continues_across_load_state_dict(torch):
    """A new optimizer loaded with the state of one that has stepped goes on as it would."""
    options = {"max_iter": 4, "line_search_fn": "strong_wolfe"}
    straight, *_ = run(nbgrad, "rosenbrock", "float64", options, 3)
    params, loss_of = rosenbrock_problem(nbgrad, "float64")
    first = nbgrad.optim.LBFGS(params, **options)

    def closure():
        first.zero_grad()
        loss = loss_of()
        loss.backward()
        return loss

    first.step(closure)
    first.step(closure)
    second = nbgrad.optim.LBFGS(params, **options)
    second.load_state_dict(first.state_dict())

    def closure_second():
        second.zero_grad()
        loss = loss_of()
        loss.backward()
        return loss

    second.step(closure_second)
    np.testing.assert_allclose(to_numpy(params[0]), straight[2]["params"][0], rtol=1e-12)
    assert second.state[params[0]]["func_evals"] == straight[2]["func_evals"]


def test_returns_the_first_loss_and_stops_at_once_at_an_optimum(torch):
    for T in (nbgrad, torch):
        x = T.tensor([1.0, 1.0], requires_grad=True)
        optimizer = T.optim.LBFGS([x])
        calls = []

        def closure(x=x, optimizer=optimizer, calls=calls):
            optimizer.zero_grad()
            loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
            loss.backward()
            calls.append(1)
            return loss

        returned = optimizer.step(closure)
        assert returned.item() == 0.0
        assert len(calls) == 1
        assert optimizer.state[x] == {"func_evals": 1, "n_iter": 0}


def test_closure_runs_with_grad_enabled_and_the_step_records_no_graph(torch):
    x = nbgrad.tensor([0.5, -0.3], requires_grad=True)
    optimizer = nbgrad.optim.LBFGS([x], max_iter=3, line_search_fn="strong_wolfe")
    seen = []

    def closure():
        seen.append(nbgrad.is_grad_enabled())
        optimizer.zero_grad()
        loss = (x**2).sum()
        loss.backward()
        return loss

    with nbgrad.no_grad():
        optimizer.step(closure)
    assert seen and all(seen)
    assert x.grad_fn is None and x.is_leaf


def test_defaults_and_repr_match_torch(torch):
    for options in (
        {},
        {"max_iter": 9},
        {"lr": 0.5, "max_eval": 3, "line_search_fn": "strong_wolfe"},
    ):
        mine = nbgrad.optim.LBFGS([nbgrad.zeros(2, requires_grad=True)], **options)
        real = torch.optim.LBFGS([torch.zeros(2, requires_grad=True)], **options)
        assert mine.defaults == real.defaults
        assert repr(mine) == repr(real)


ERRORS = {
    "two parameter groups": lambda T, a, b: T.optim.LBFGS([{"params": [a]}, {"params": [b]}]),
    "negative lr": lambda T, a, b: T.optim.LBFGS([a], lr=-1),
    "lr tensor of two": lambda T, a, b: T.optim.LBFGS([a], lr=T.tensor([1.0, 2.0])),
    "no closure": lambda T, a, b: T.optim.LBFGS([a]).step(),
    "unknown line search": lambda T, a, b: T.optim.LBFGS([a], line_search_fn="armijo").step(
        lambda: _backward_of((a - 1).pow(2).sum())
    ),
    "no parameters": lambda T, a, b: T.optim.LBFGS([]),
    "group added later": lambda T, a, b: _with_added_group(T, a, b),
}


def _backward_of(loss):
    loss.backward()
    return loss


def _with_added_group(T, a, b):
    optimizer = T.optim.LBFGS([a])
    optimizer.add_param_group({"params": [b]})
    optimizer.step(lambda: _backward_of((a * b).sum()))


@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_torch(torch, case):
    raised = []
    for T in (nbgrad, torch):
        a = T.zeros(2, requires_grad=True)
        b = T.zeros(2, requires_grad=True)
        with pytest.raises(Exception) as info:
            ERRORS[case](T, a, b)
        raised.append((type(info.value), str(info.value)))
    assert raised[0] == raised[1]
