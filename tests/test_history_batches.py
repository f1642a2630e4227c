"""The history's numbers however it reads them (nbgrad/trace/history.py): small parameters
copied in one batch per pass and measured many passes at once, large ones read alone, the
batch made again when a pass reaches other parameters, and its passes measured in several
rounds when a loop is longer than ``ROWS``.

Expected numbers: the test's own loop copies every parameter's values and ``.grad`` after each
backward pass (NumPy copies, float64) and takes their norms with ``np.linalg.norm``; nothing
comes from the history's code. Both engines: nbgrad's and real PyTorch's.
"""

import math

import numpy as np
import pytest

import nbgrad
from nbgrad.autograd import observe
from nbgrad.trace import history

torch = pytest.importorskip("torch")

ENGINES = {"nbgrad": nbgrad, "torch": torch}


@pytest.fixture(autouse=True)
def _no_listener_left():
    yield
    assert not observe.backward_listeners and not observe.accumulate_listeners


def as_rows(table):
    """``trace.history`` as a list of dicts, with or without pandas."""
    return table if isinstance(table, list) else table.to_dict("records")


def array(tensor):
    return np.array(tensor.detach().numpy(), dtype=np.float64)


def expected_rows(snapshots, final):
    """From ``snapshots`` (per pass: {name: (values, grad)} of the parameters it reached) and
    ``final`` ({name: values at the end}): per name, rows (step, grad, update, value norms)."""
    rows = {}
    for step, reached in enumerate(snapshots):
        for name, (values, grad) in reached.items():
            rows.setdefault(name, []).append([step, np.linalg.norm(grad), None, values])
    for name, mine in rows.items():
        later = [row[3] for row in mine[1:]] + [final[name]]
        for row, after in zip(mine, later, strict=True):
            row[2] = np.linalg.norm(after - row[3])
            row[3] = np.linalg.norm(row[3])
    return rows


def check(trace, names, snapshots, final):
    """The trace's history against the norms taken by hand; ``names`` maps the trace's
    parameter names to the test's."""
    expected = expected_rows(snapshots, final)
    got = {}
    for row in as_rows(trace.history):
        got.setdefault(names[row["parameter"]], []).append(
            [row["step"], row["grad_norm"], row["update_norm"], row["value_norm"]]
        )
    assert sorted(got) == sorted(expected)
    for name in expected:
        mine, theirs = np.array(got[name]), np.array(expected[name], dtype=np.float64)
        np.testing.assert_array_equal(mine[:, 0], theirs[:, 0])  # the steps
        np.testing.assert_allclose(mine[:, 1:], theirs[:, 1:], rtol=1e-5, atol=1e-12)


def mlp_loop(T, steps, sizes, dtype):
    """A two-layer MLP trained by SGD with momentum: its first weight has ``sizes[0] *
    sizes[1]`` elements (over ``BATCH_LIMIT``: read alone), the rest are small (a batch)."""
    n_in, n_hidden, n_out = sizes
    rng = np.random.default_rng(5)
    x = T.tensor(rng.standard_normal((7, n_in)).astype(dtype))
    y = T.tensor(rng.standard_normal((7, n_out)).astype(dtype))
    model = T.nn.Sequential(T.nn.Linear(n_in, n_hidden), T.nn.Tanh(), T.nn.Linear(n_hidden, n_out))
    if dtype == np.float64:
        model = model.double()
    optimizer = T.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    names = ["weight 1", "bias 1", "weight 2", "bias 2"]
    snapshots = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        snapshots.append(
            {
                name: (array(p), array(p.grad))
                for name, p in zip(names, model.parameters(), strict=True)
            }
        )
        optimizer.step()
    final = {name: array(p) for name, p in zip(names, model.parameters(), strict=True)}
    return model, names, snapshots, final


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_long_loop_with_large_and_small_parameters(engine, dtype):
    """More passes than a batch keeps (measured in rounds), a weight read alone (its grad is
    transposed in memory on nbgrad's engine), float32 and float64."""
    steps = history.ROWS + 9
    sizes = (70, 60, 3)
    assert sizes[0] * sizes[1] > history.BATCH_LIMIT >= sizes[1] * sizes[2]
    with nbgrad.record(engine=engine, max_passes=1) as trace:
        model, names, snapshots, final = mlp_loop(ENGINES[engine], steps, sizes, dtype)
    assert trace.history_log.error is None
    assert len(trace.history_log.parameters) == 4
    # The trace's parameters named by their shapes (the model's are distinct)
    shapes = {tuple(p.shape): name for name, p in zip(names, model.parameters(), strict=True)}
    tensors = {t.id: t for t in trace.tensors.values()}
    names_of = {
        p.name: shapes[tuple(tensors[p.record.id].shape)] for p in trace.history_log.parameters
    }
    check(trace, names_of, snapshots, final)


def two_losses(T):
    """Passes that reach different parameters: ``a`` and ``b`` (small) on even steps, ``a``
    alone on odd ones, ``c`` (large) every third step; updates by hand in between."""
    rng = np.random.default_rng(11)
    tensors = {
        "a": T.tensor(rng.standard_normal(5).astype(np.float32), requires_grad=True),
        "b": T.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True),
        "c": T.tensor(rng.standard_normal(5000).astype(np.float32), requires_grad=True),
    }
    snapshots = []
    for step in range(10):
        reached = ["a", "b"] if step % 2 == 0 else ["a"]
        if step % 3 == 0:
            reached.append("c")
        loss = sum((tensors[name] ** 2).sum() * (step + 1) for name in reached)
        loss.backward()
        snapshots.append(
            {name: (array(tensors[name]), array(tensors[name].grad)) for name in reached}
        )
        with T.no_grad():
            for name in reached:
                tensors[name] -= 0.01 * tensors[name].grad
                tensors[name].grad = None
    final = {name: array(t) for name, t in tensors.items()}
    return tensors, snapshots, final


@pytest.mark.parametrize("engine", ENGINES)
def test_passes_reaching_other_parameters(engine):
    with nbgrad.record(engine=engine, max_passes=1) as trace:
        tensors, snapshots, final = two_losses(ENGINES[engine])
    assert trace.history_log.error is None
    sizes = {t.numel(): name for name, t in tensors.items()}
    records = {t.id: t for t in trace.tensors.values()}
    names_of = {
        p.name: sizes[int(np.prod(records[p.record.id].shape))]
        for p in trace.history_log.parameters
    }
    check(trace, names_of, snapshots, final)


@pytest.mark.parametrize("engine", ENGINES)
def test_steps_of_a_batch_and_of_a_large_parameter_stay_in_order(engine):
    """A small parameter that grows past BATCH_LIMIT: read in the batch, then alone; its
    steps stay in order and the update across the resize is NaN (no meaningful difference)."""
    T = ENGINES[engine]
    w = T.tensor(np.ones(4, dtype=np.float32), requires_grad=True)
    with nbgrad.record(engine=engine, max_passes=1) as trace:
        for step in range(4):
            if step == 2:
                bigger = np.full(history.BATCH_LIMIT + 1, 2.0, dtype=np.float32)
                with T.no_grad():
                    if engine == "torch":
                        w.set_(torch.tensor(bigger))  # (PyTorch keeps .data's old shape)
                    else:
                        w.data = T.tensor(bigger)
            (w * 3.0).sum().backward()
            w.grad = None
    rows = as_rows(trace.history)
    assert [row["step"] for row in rows] == [0, 1, 2, 3]
    assert [row["grad_norm"] for row in rows] == pytest.approx(
        [6.0, 6.0, 3 * math.sqrt(history.BATCH_LIMIT + 1), 3 * math.sqrt(history.BATCH_LIMIT + 1)]
    )
    assert [row["value_norm"] for row in rows] == pytest.approx(
        [2.0, 2.0, 2 * math.sqrt(history.BATCH_LIMIT + 1), 2 * math.sqrt(history.BATCH_LIMIT + 1)]
    )
    updates = [row["update_norm"] for row in rows]
    assert updates[0] == 0.0 and math.isnan(updates[1]) and updates[2:] == [0.0, 0.0]
