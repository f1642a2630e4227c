"""Across training steps (issue 18, part 3): a recorded training loop keeps, for every backward
pass (past ``max_passes`` too), each parameter's grad norm, update size and value norm.

Expected numbers come from the same loop computed by hand in NumPy (forward, gradient and SGD
with momentum written out), never from the recorder's own output. Both engines: nbgrad's and
real PyTorch's, through ``nbgrad.record`` and through ``%%autograd``.
"""

import json
import math
import sys

import numpy as np
import pytest

import nbgrad
from nbgrad.autograd import observe
from nbgrad.trace.history import COLUMNS

torch = pytest.importorskip("torch")

STEPS = 7
MAX_PASSES = 2
LR, MOMENTUM = 0.05, 0.9
ENGINES = {"nbgrad": nbgrad, "torch": torch}


def data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    y = rng.standard_normal((6, 2)).astype(np.float32)
    w = rng.standard_normal((4, 2)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    return x, y, w, b


def by_hand():
    """The loop of ``train`` in float64 NumPy: per step, per parameter, (grad norm, update
    norm, value norm). Loss: mean((x @ w + b - y) ** 2); SGD with momentum as PyTorch
    writes it (the first buffer is the gradient itself)."""
    x, y, w, b = (a.astype(np.float64) for a in data())
    buffers = None
    rows = {"w": [], "b": []}
    for _ in range(STEPS):
        d = 2 * (x @ w + b - y) / y.size
        grads = {"w": x.T @ d, "b": d.sum(0)}
        values = {"w": w, "b": b}
        if buffers is None:
            buffers = {k: g.copy() for k, g in grads.items()}
        else:
            buffers = {k: MOMENTUM * buffers[k] + grads[k] for k in grads}
        new = {k: values[k] - LR * buffers[k] for k in values}
        for k in rows:
            rows[k].append(
                (
                    np.linalg.norm(grads[k]),
                    np.linalg.norm(new[k] - values[k]),
                    np.linalg.norm(values[k]),
                )
            )
        w, b = new["w"], new["b"]
    return rows


def train(T):
    x, y, w0, b0 = data()
    x, y = T.tensor(x), T.tensor(y)
    w = T.tensor(w0, requires_grad=True)
    b = T.tensor(b0, requires_grad=True)
    optimizer = T.optim.SGD([w, b], lr=LR, momentum=MOMENTUM)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    return locals()


def recorded(engine, program, **options):
    with nbgrad.record(engine=engine, max_passes=MAX_PASSES, **options) as trace:
        variables = program(ENGINES[engine])
    # (record() names tensors from the caller's variables: the program's are local to it)
    return trace, variables


@pytest.fixture(autouse=True)
def _history_as_lists(monkeypatch):
    """The history's rows as the list of dicts it is without pandas (the DataFrame it becomes
    with pandas has the same rows: tests/test_history_pandas.py)."""
    monkeypatch.setitem(sys.modules, "pandas", None)


@pytest.fixture(autouse=True)
def _no_listener_left():
    yield
    assert not observe.backward_listeners and not observe.accumulate_listeners


@pytest.mark.parametrize("engine", ENGINES)
def test_every_step_of_a_loop_is_kept_past_max_passes(engine):
    trace, _ = recorded(engine, train)
    assert len(trace.passes) == MAX_PASSES  # recorded in full: only the first two
    assert "max_passes" in trace.truncated
    rows = trace.history
    assert isinstance(rows, list)  # pandas hidden (_history_as_lists): the plain structure
    assert len(rows) == 2 * STEPS
    assert all(set(row) == set(COLUMNS) for row in rows)
    assert [row["step"] for row in rows] == sorted(list(range(STEPS)) * 2)
    expected = by_hand()
    leaf_ids = {t.id: t for t in trace.tensors.values()}
    for row in rows:
        # the tensor id names the parameter's newest record in the trace
        record = leaf_ids[row["tensor"]]
        assert record.is_leaf and record.name == row["parameter"]
    for name in ("w", "b"):
        # The records' names: "w" and "b" from the caller's variables when they are alive
        # there; here the program's locals are gone, so look the parameter up by shape.
        shape = (4, 2) if name == "w" else (2,)
        mine = [r for r in rows if tuple(leaf_ids[r["tensor"]].shape) == shape]
        got = np.array([(r["grad_norm"], r["update_norm"], r["value_norm"]) for r in mine])
        np.testing.assert_allclose(got, np.array(expected[name]), rtol=2e-5)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_json_carries_the_history_and_every_record_of_the_parameter(engine):
    trace, _ = recorded(engine, train)
    document = json.loads(trace.to_json())
    history = document["history"]
    assert "error" not in history
    assert len(history["parameters"]) == 2
    expected = by_hand()
    tensors = {t["id"]: t for t in document["tensors"]}
    for parameter in history["parameters"]:
        assert parameter["steps"] == list(range(STEPS))
        name = "w" if tensors[parameter["tensor"]]["shape"] == [4, 2] else "b"
        np.testing.assert_allclose(
            parameter["grad_norm"], [g for g, _, _ in expected[name]], rtol=1e-5
        )
        np.testing.assert_allclose(
            parameter["update_norm"], [u for _, u, _ in expected[name]], rtol=1e-5
        )
        np.testing.assert_allclose(
            parameter["value_norm"], [v for _, _, v in expected[name]], rtol=1e-5
        )
        # One record per value the trace kept: at least the value of each recorded forward
        # (PyTorch's recorder also keeps the one its optimizer's last recorded step wrote),
        # the newest last, the one named by "tensor".
        assert parameter["tensors"][-1] == parameter["tensor"]
        assert len(parameter["tensors"]) >= MAX_PASSES
        assert all(
            tensors[i]["shape"] == tensors[parameter["tensor"]]["shape"]
            for i in parameter["tensors"]
        )


@pytest.mark.parametrize("engine", ENGINES)
def test_no_history_when_asked_or_without_parameters(engine):
    trace, _ = recorded(engine, train, history=False)
    assert trace.history == []
    assert "history" not in trace.to_dict()

    def forward_only(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 3).sum()
        return locals()

    trace, _ = recorded(engine, forward_only)
    assert trace.history == []
    assert "history" not in trace.to_dict()

    def one_backward(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).sum().backward()
        return locals()

    # One step: kept for Python, but a line needs two steps: the JSON stays as it was.
    trace, _ = recorded(engine, one_backward)
    [row] = trace.history
    assert row["grad_norm"] == pytest.approx(math.sqrt(18))
    assert row["value_norm"] == pytest.approx(math.sqrt(5))
    assert row["update_norm"] == 0.0
    assert "history" not in trace.to_dict()


def grad_calls_and_plain_updates(T):
    """Two steps by hand: autograd.grad (fills no .grad) is no step; an update written into
    the values without the optimizer counts; a non-finite grad is kept as it is."""
    w = T.tensor([3.0, 4.0], requires_grad=True)
    (g,) = T.autograd.grad((w * w).sum(), [w])  # not a step
    (w * 2.0).sum().backward()  # step 0: grad (2, 2)
    with T.no_grad():
        w.mul_(0.5)  # (1.5, 2.0): changed by 2.5 in norm
    w.grad = None
    (w / 0.0).sum().backward()  # step 1: grad (inf, inf)
    return locals()


@pytest.mark.parametrize("engine", ENGINES)
def test_steps_updates_and_nonfinite_grads(engine):
    trace, _ = recorded(engine, grad_calls_and_plain_updates)
    rows = trace.history
    assert [r["step"] for r in rows] == [0, 1]
    first, second = rows
    assert first["grad_norm"] == pytest.approx(math.sqrt(8))
    assert first["value_norm"] == pytest.approx(5.0)
    assert first["update_norm"] == pytest.approx(2.5)
    assert second["grad_norm"] == math.inf
    assert second["value_norm"] == pytest.approx(2.5)
    assert second["update_norm"] == 0.0  # unchanged from then to the end
    entry = trace.to_dict()["history"]["parameters"][0]
    assert entry["grad_norm"] == [pytest.approx(math.sqrt(8), rel=1e-5), "Infinity"]


@pytest.fixture(scope="module")
def shell():
    from IPython.testing.globalipapp import get_ipython

    ip = get_ipython()
    ip.run_cell("%load_ext nbgrad", store_history=False)
    return ip


CELL = """\
%%autograd --no-show --max-passes 1
import {module} as T
model = T.nn.Linear(3, 2)
optimizer = T.optim.Adam(model.parameters(), lr=0.01)
x = T.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3))
before = [p.detach().numpy().copy() for p in model.parameters()]
grads = []
for step in range(5):
    optimizer.zero_grad()
    loss = (model(x) ** 2).sum()
    loss.backward()
    grads.append([p.grad.numpy().copy() for p in model.parameters()])
    optimizer.step()
after = [p.detach().numpy().copy() for p in model.parameters()]
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_recorded_cell_keeps_every_step(shell, engine):
    shell.run_cell("import numpy as np", store_history=False)
    result = shell.run_cell(CELL.format(module=engine), store_history=False)
    assert result.success, result.error_in_exec
    trace = nbgrad.last_trace()
    assert len(trace.passes) == 1
    rows = trace.history
    names = sorted({r["parameter"] for r in rows})
    assert names == ["model.bias", "model.weight"]
    assert len(rows) == 10
    ns = shell.user_ns
    for position, name in enumerate(["model.weight", "model.bias"]):
        mine = [r for r in rows if r["parameter"] == name]
        assert [r["step"] for r in mine] == list(range(5))
        expected = [np.linalg.norm(g[position]) for g in ns["grads"]]
        np.testing.assert_allclose([r["grad_norm"] for r in mine], expected, rtol=1e-5)
        # Adam's updates add up to the whole change from before to after
        total = ns["after"][position] - ns["before"][position]
        assert sum(r["update_norm"] for r in mine) >= np.linalg.norm(total) * (1 - 1e-5)
        assert mine[0]["value_norm"] == pytest.approx(np.linalg.norm(ns["before"][position]))
    if engine == "torch":  # the history's hooks are gone with the recording
        for parameter in ns["model"].parameters():
            assert not getattr(parameter, "_post_accumulate_grad_hooks", None)


def test_no_history_option_of_the_cell(shell):
    shell.run_cell("import numpy as np", store_history=False)
    cell = CELL.format(module="nbgrad").replace("--max-passes 1", "--max-passes 1 --no-history")
    result = shell.run_cell(cell, store_history=False)
    assert result.success, result.error_in_exec
    trace = nbgrad.last_trace()
    assert len(trace.passes) == 1 and trace.history == []


def exploding(T):
    """Values that become infinite, then NaN: the history says so with its numbers, and
    NumPy's warnings (inf - inf) do not reach the user."""
    w = T.tensor([1.0, 2.0], requires_grad=True)
    for then in ([math.inf, math.inf], [math.inf, math.inf], [math.nan, math.nan], None):
        (w * 1.0).sum().backward()
        if then is not None:
            with T.no_grad():
                w.copy_(T.tensor(then))
        w.grad = None
    return locals()


@pytest.mark.parametrize("engine", ENGINES)
def test_infinite_and_nan_values_give_numbers_not_warnings(engine):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace, _ = recorded(engine, exploding)
        rows = trace.history
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert rows[0]["value_norm"] == pytest.approx(math.sqrt(5))
    assert rows[0]["update_norm"] == math.inf  # from (1, 2) to (inf, inf)
    assert rows[1]["value_norm"] == math.inf
    assert math.isnan(rows[1]["update_norm"])  # inf - inf: not a number
    assert rows[2]["value_norm"] == math.inf
    assert math.isnan(rows[2]["update_norm"])  # from inf to NaN
    assert math.isnan(rows[3]["value_norm"]) and math.isnan(rows[3]["update_norm"])
    assert all(r["grad_norm"] == pytest.approx(math.sqrt(2)) for r in rows)
    entry = trace.to_dict()["history"]["parameters"][0]
    assert entry["value_norm"][1:] == ["Infinity", "Infinity", "NaN"]
