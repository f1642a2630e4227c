"""A ``%%autograd`` cell that raises: its trace names the call that raised (``failure``,
docs/trace-schema.md), on nbgrad's engine and on real PyTorch, for a forward op that raised
before producing anything and for a backward step.

The expected facts come from PyTorch's own behaviour, read independently here: the message of
the error real PyTorch raises, and which node raised, known from the graph's structure (the
node that saved the tensor; a sum's node saves no tensor and runs first without failing)."""

import json

import pytest

import nbgrad  # noqa: F401 - the magic's extension
from tests.test_trace_schema import problems

pytest.importorskip("IPython")

ENGINES = ["nbgrad", "torch"]


@pytest.fixture(scope="module")
def shell():
    from IPython.testing.globalipapp import get_ipython

    ip = get_ipython()
    ip.run_cell("%load_ext nbgrad", store_history=False)
    return ip


def use_engine(shell, engine):
    """``import <engine> as torch`` in the shell (real PyTorch's tests need it installed)."""
    if engine == "torch":
        pytest.importorskip("torch")
    shell.run_cell(f"import {engine} as torch", store_history=False)


def recorded(shell, engine, body):
    """Run ``body`` as a ``%%autograd`` cell on ``engine``: (the trace's JSON, the exception)."""
    use_engine(shell, engine)
    result = shell.run_cell("%%autograd --no-show\n" + body, store_history=False)
    assert not result.success, "the cell was meant to raise"
    data = json.loads(nbgrad.last_trace().to_json())
    assert data["producer"]["engine"] == engine
    assert problems(data) == []  # nbgrad/trace/schema.json, with its failure record
    return data, result.error_in_exec


def torch_error(body):
    """The exception real PyTorch raises on ``body`` (outside any recording)."""
    namespace = {"torch": pytest.importorskip("torch")}
    with pytest.raises(Exception) as raised:
        exec(body, namespace)
    return raised.value


MATMUL = """\
a = torch.ones(2, 3, requires_grad=True)
b = torch.ones(4, 5)
c = a * 2
d = c @ b
e = d.sum()
"""

SECOND_BACKWARD = """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * 2).exp().sum()
y.backward()
y.backward()
"""

INPLACE = """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()
y.add_(1)
y.sum().backward()
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_matmul_of_shapes_that_do_not_fit(shell, engine):
    data, error = recorded(shell, engine, MATMUL)
    expected = torch_error(MATMUL)
    failure = data["failure"]
    assert failure["where"] == "forward"
    assert failure["call"] == "matmul"
    assert failure["line"] == 5  # line 1 is %%autograd
    assert data["source"]["lines"]["5"] == "d = c @ b"
    assert failure["type"] == "RuntimeError" == type(expected).__name__
    assert failure["message"] == str(expected) == str(error)
    assert "node" not in failure and "pass" not in failure
    # its inputs: c (made by the recorded mul) and b, in the call's order
    names = {t["id"]: t["name"] for t in data["tensors"]}
    assert [names[i] for i in failure["inputs"]] == ["c", "b"]
    # the graph up to it: the mul ran, the matmul and the sum did not
    assert [op["op"] for op in data["ops"]] == ["mul"]
    assert data["status"]["error"] == f"RuntimeError: {expected}"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_second_backward_without_retain_graph(shell, engine):
    data, _ = recorded(shell, engine, SECOND_BACKWARD)
    expected = torch_error(SECOND_BACKWARD)
    failure = data["failure"]
    nodes = {n["id"]: n for n in data["nodes"]}
    assert failure["where"] == "backward"
    # SumBackward0 saved no tensor and runs again; ExpBackward0 needs its freed result
    assert failure["call"] == "ExpBackward0" == nodes[failure["node"]]["name"]
    assert failure["line"] == 5
    assert failure["pass"] == 1
    assert failure["message"] == str(expected)
    second = [nodes[s["node"]]["name"] for s in data["steps"] if s["pass"] == 1]
    assert second == ["SumBackward0"]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_inplace_change_of_a_saved_tensor(shell, engine):
    data, _ = recorded(shell, engine, INPLACE)
    expected = torch_error(INPLACE)
    failure = data["failure"]
    nodes = {n["id"]: n for n in data["nodes"]}
    assert failure["where"] == "backward"
    assert failure["call"] == "ExpBackward0" == nodes[failure["node"]]["name"]
    assert failure["line"] == 5 and failure["pass"] == 0
    assert failure["type"] == "RuntimeError"
    assert failure["message"] == str(expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_error_of_the_users_own_names_no_call(shell, engine):
    body = "x = torch.tensor(1.0, requires_grad=True)\ny = x * 2\nraise ValueError('mine')\n"
    data, _ = recorded(shell, engine, body)
    assert data["status"]["error"] == "ValueError: mine"
    assert "failure" not in data


@pytest.mark.parametrize("engine", ENGINES)
def test_a_trace_that_did_not_fail_has_no_failure(shell, engine):
    use_engine(shell, engine)
    shell.run_cell(
        "%%autograd --no-show\nx = torch.tensor(1.0, requires_grad=True)\n(x * 2).backward()\n",
        store_history=False,
    )
    assert "failure" not in json.loads(nbgrad.last_trace().to_json())


@pytest.mark.parametrize("engine", ENGINES)
def test_a_call_inside_a_module_is_named_as_pytorch_names_it(shell, engine):
    body = "layer = torch.nn.Linear(3, 2)\nx = torch.ones(4, 5)\ny = layer(x).sum()\n"
    data, _ = recorded(shell, engine, body)
    failure = data["failure"]
    # nn.Linear's forward calls F.linear, the call PyTorch's function mode sees
    assert (failure["where"], failure["call"], failure["line"]) == ("forward", "linear", 4)
    assert failure["message"] == str(torch_error(body))
    names = {t["id"]: t["name"] for t in data["tensors"]}
    assert [names[i] for i in failure["inputs"]] == ["x", "layer.weight", "layer.bias"]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_error_the_program_caught_leaves_no_trace(shell, engine):
    use_engine(shell, engine)
    body = (
        "a = torch.ones(2, 3, requires_grad=True)\nb = torch.ones(4, 5)\n"
        "try:\n    a @ b\nexcept RuntimeError:\n    pass\ny = (a * 2).sum()\ny.backward()\n"
    )
    assert shell.run_cell("%%autograd --no-show\n" + body, store_history=False).success
    data = json.loads(nbgrad.last_trace().to_json())
    assert data["status"]["error"] is None and "failure" not in data
    # b, given only to the call that raised, is not in it: the trace is the one of the cell
    # without the try
    without = body.replace("try:\n    a @ b\nexcept RuntimeError:\n    pass\n", "")
    assert shell.run_cell("%%autograd --no-show\n" + without, store_history=False).success
    plain = json.loads(nbgrad.last_trace().to_json())
    names = sorted(t["name"] for t in data["tensors"])
    assert names == sorted(t["name"] for t in plain["tensors"]) and "b" not in names


# Calls that raise, and the name PyTorch's function mode gives each (what the user called).
NAMED_CALLS = {
    "view": ("b = a.view(5)", "view", 1),
    "add": ("b = a + torch.ones(4)", "add", 2),
    "cat": ("b = torch.cat([a, torch.ones(2, 4)])", "cat", 2),
    "cross_entropy": (
        "b = torch.nn.functional.cross_entropy(a, torch.tensor([0, 5]))",
        "cross_entropy",
        2,
    ),
    "getitem": ("b = a[5]", "getitem", 1),
    "mm": ("b = a.exp().mm(a)", "mm", 2),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(NAMED_CALLS))
def test_the_failing_call_is_named_as_pytorch_names_it(shell, engine, case):
    line, call, inputs = NAMED_CALLS[case]
    body = f"a = torch.ones(2, 3, requires_grad=True)\n{line}\n"
    data, error = recorded(shell, engine, body)
    failure = data["failure"]
    assert (failure["where"], failure["call"], failure["line"]) == ("forward", call, 3)
    assert len(failure["inputs"]) == inputs
    assert failure["type"] == type(torch_error(body)).__name__ == type(error).__name__


@pytest.mark.parametrize("engine", ENGINES)
def test_a_call_that_raised_after_recording_stopped_is_not_named(shell, engine):
    use_engine(shell, engine)
    cell = "%%autograd --no-show --max-passes 1\n" + SECOND_BACKWARD
    assert not shell.run_cell(cell, store_history=False).success
    data = json.loads(nbgrad.last_trace().to_json())
    assert data["status"]["truncated"] == "stopped after 1 backward passes (max_passes)"
    assert data["status"]["error"].startswith("RuntimeError: Trying to backward")
    assert "failure" not in data and len(data["passes"]) == 1
