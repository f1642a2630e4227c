"""Practice mode's Python side: ``%%autograd --practice`` shows the widget in practice mode, on
nbgrad's and on real PyTorch's traces; ``GraphWidget.practice_results`` takes what the browser
sends (the comm's state update) and refuses a malformed entry; a saved page carries both.
The answering itself is tested by vitest (js/test/practice.test.js) and in a real browser
(tests/test_widget_browser_practice.py)."""

import base64
import json
import re

import pytest
import traitlets

import nbgrad
from nbgrad.widget import GraphWidget

pytest.importorskip("IPython")

SIMPLE = """\
a = T.tensor(2.0, requires_grad=True)
b = T.tensor(3.0, requires_grad=True)
c = a + b
d = T.tensor(4.0, requires_grad=True)
e = c * d
e.backward()
"""


@pytest.fixture(scope="module")
def shell():
    from IPython.testing.globalipapp import get_ipython

    ip = get_ipython()
    ip.run_cell("%load_ext nbgrad", store_history=False)
    return ip


@pytest.fixture
def shown(monkeypatch):
    widgets = []
    monkeypatch.setattr("IPython.display.display", lambda obj: widgets.append(obj))
    return widgets


def _sent_grads(widget):
    """What each recorded step sent, by node name, from the trace the widget draws."""
    data = json.loads(widget.trace_json)
    names = {n["id"]: n["name"] for n in data["nodes"]}
    return [(names[s["node"]], s["grads_out"]) for s in data["steps"]]


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_the_practice_option_shows_the_widget_in_practice_mode(shell, shown, engine):
    if engine == "torch":
        pytest.importorskip("torch")
    imports = "import torch as T\n" if engine == "torch" else "import nbgrad as T\n"
    result = shell.run_cell(f"%%autograd --practice\n{imports}{SIMPLE}", store_history=False)
    assert result.success
    assert len(shown) == 1 and isinstance(shown[0], GraphWidget)
    widget = shown[0]
    assert widget.practice is True and widget.practice_results == []
    assert json.loads(widget.trace_json)["producer"]["engine"] == engine
    # the values the learner is checked against, by hand: e = (a + b) * d sends d = 4 to c
    # and c = a + b = 5 to d; c's AddBackward0 sends its 4 on to a and to b
    sent = [(name, grads) for name, grads in _sent_grads(widget) if grads]
    assert sent == [("MulBackward0", [4.0, 5.0]), ("AddBackward0", [4.0, 4.0])]
    # where the widget cannot run, its text says nothing of the gradients
    data, _ = widget._repr_mimebundle_()
    assert data["text/plain"].endswith("(practice mode)")
    assert not re.search(r"\d\.", data["text/plain"])  # no value at all, so no gradient


def test_without_the_option_the_widget_is_not_in_practice_mode(shell, shown):
    assert shell.run_cell(f"%%autograd\nimport nbgrad as T\n{SIMPLE}", store_history=False).success
    assert shown[0].practice is False


def test_the_option_is_in_the_help(shell, capsys):
    shell.run_cell("%%autograd --help\npass", store_history=False)
    assert re.search(r"--practice\s+practice mode", capsys.readouterr().out)


def _record():
    with nbgrad.record() as trace:
        a = nbgrad.tensor(2.0, requires_grad=True)
        b = nbgrad.tensor(3.0, requires_grad=True)
        d = nbgrad.tensor(4.0, requires_grad=True)
        e = (a + b) * d
        e.backward()
    return trace


# what js/src/practice.js sends after the learner typed 4 (right) and 9 (wrong) at step 1
FROM_THE_BROWSER = [
    {"step": 1, "node": "MulBackward0", "node_id": "n3", "edge": 0, "target": "AddBackward0",
     "input": "a + b", "answer": "4", "expected": 4.0, "right": True},
    {"step": 1, "node": "MulBackward0", "node_id": "n3", "edge": 1, "target": "AccumulateGrad (d)",
     "input": "d", "answer": "9", "expected": 5.0, "right": False},
]  # fmt: skip


def test_practice_results_arrive_from_the_browser_and_are_checked():
    widget = GraphWidget(_record(), practice=True)
    assert widget.get_state()["practice"] is True
    # what the comm does with the browser's {"method": "update", "state": {...}}
    widget.set_state({"practice_results": FROM_THE_BROWSER})
    assert widget.practice_results == FROM_THE_BROWSER
    assert widget.practice_score == (1, 2)
    with pytest.raises(traitlets.TraitError, match="this one has no expected, right"):
        widget.set_state({"practice_results": [{"step": 1, "node": "x", "edge": 0, "answer": "1"}]})
    assert widget.practice_results == FROM_THE_BROWSER  # a bad update loses nothing
    # another trace: the answers belonged to the first one
    widget.set_trace(_record())
    assert widget.practice_results == [] and widget.practice_score == (0, 0)


def test_a_saved_page_carries_practice_mode_and_the_answers(tmp_path):
    widget = GraphWidget(_record(), practice=True)
    widget.set_state({"practice_results": FROM_THE_BROWSER})
    page = widget.save_html(tmp_path / "practice.html").read_text(encoding="utf-8")
    state_text = re.search(r'id="nbgrad-state">(.*?)</script>', page).group(1)
    state = json.loads(state_text)
    assert state["practice"] is True
    assert state["practice_results"] == FROM_THE_BROWSER
    assert base64.b64decode(state["trace"])[:2] == b"\x1f\x8b"
