"""``trace.history``: a pandas DataFrame when pandas is installed, else a list of dicts; the same
rows either way, and the numbers those of the loop worked out by hand in NumPy.

pandas is in the test extra of the main run (requirements/lock.txt); the runs on the other
Pythons and with the oldest dependencies do without it, so both ways are tested there too: the
list by hiding pandas, the DataFrame where it is installed.
"""

import sys

import numpy as np
import pytest

import nbgrad
from nbgrad.trace.history import COLUMNS

STEPS = 4
LR = 0.1
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.0, 1.0]])
W0 = np.array([[0.5, -1.0], [2.0, 0.25]])


def loop(T):
    x = T.tensor(X)
    w = T.tensor(W0, requires_grad=True)
    optimizer = T.optim.SGD([w], lr=LR)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = ((x @ w) ** 2).sum()
        loss.backward()
        optimizer.step()
    return w  # alive when the recording ends: the update after the last step is measured then


def by_hand():
    """Per step: (|grad|, |update|, |w|) of ``loop``, in NumPy: d/dw sum((x w)^2) = 2 x^T x w."""
    w, rows = W0.copy(), []
    for _ in range(STEPS):
        grad = 2 * X.T @ (X @ w)
        new = w - LR * grad
        rows.append((np.linalg.norm(grad), np.linalg.norm(new - w), np.linalg.norm(w)))
        w = new
    return np.array(rows)


def engines():
    found = {"nbgrad": nbgrad}
    try:
        import torch
    except ImportError:
        pass
    else:
        found["torch"] = torch
    return found


def recorded(engine):
    with nbgrad.record(engine=engine, max_passes=1) as trace:
        w = loop(engines()[engine])  # noqa: F841 - kept alive until the recording ends
    return trace


def numbers(rows):
    return np.array([(r["grad_norm"], r["update_norm"], r["value_norm"]) for r in rows])


@pytest.mark.parametrize("engine", engines())
def test_without_pandas_the_history_is_a_list_of_dicts(engine, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    rows = recorded(engine).history
    assert isinstance(rows, list) and all(isinstance(row, dict) for row in rows)
    assert [row["step"] for row in rows] == list(range(STEPS))
    assert all(list(row) == list(COLUMNS) for row in rows)
    np.testing.assert_allclose(numbers(rows), by_hand(), rtol=1e-6)


@pytest.mark.parametrize("engine", engines())
def test_with_pandas_the_history_is_a_dataframe_of_the_same_rows(engine, monkeypatch):
    # (ImportError too: a pandas too new for the oldest NumPy nbgrad allows refuses to import)
    pandas = pytest.importorskip("pandas", exc_type=ImportError)
    trace = recorded(engine)
    frame = trace.history
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == list(COLUMNS)
    assert frame["step"].tolist() == list(range(STEPS))
    np.testing.assert_allclose(
        frame[["grad_norm", "update_norm", "value_norm"]].to_numpy(), by_hand(), rtol=1e-6
    )
    monkeypatch.setitem(sys.modules, "pandas", None)
    assert frame.to_dict("records") == trace.history  # the same rows as without pandas
