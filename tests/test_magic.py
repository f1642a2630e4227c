"""``%%autograd`` in a real IPython shell (IPython.testing.globalipapp): the cell runs as a plain
cell would, the trace is recorded and shown, bad input and faults leave nothing behind."""

import gc
import tracemalloc
import warnings

import pytest

import nbgrad
from nbgrad.autograd import observe

pytest.importorskip("IPython")

PROGRAM = """\
import nbgrad as torch
a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
c = a + b
d = torch.tensor(4.0, requires_grad=True)
e = c * d
e.backward()
"""


@pytest.fixture(scope="module")
def shell():
    from IPython.testing.globalipapp import get_ipython

    ip = get_ipython()  # starts the test shell, or gives the one another module started
    ip.run_cell("%load_ext nbgrad", store_history=False)
    return ip


@pytest.fixture(autouse=True)
def _clean(shell):
    shell.user_ns.pop("trace", None)
    yield
    assert not observe.op_listeners and not observe.node_listeners
    assert not observe.accumulate_listeners, "a cell left a listener behind"
    assert nbgrad.is_grad_enabled()


def run(shell, cell):
    return shell.run_cell(cell, store_history=False)


def test_the_cell_runs_in_the_users_namespace_and_is_recorded(shell, capsys):
    result = run(shell, "%%autograd\n" + PROGRAM + "e\n")
    assert result.success
    assert result.result.item() == 20.0  # the last expression is the cell's value
    assert shell.user_ns["c"].item() == 5.0  # variables remain
    shown = capsys.readouterr().out
    assert "MulBackward0" in shown and "e = c * d" in shown  # the text summary
    trace = nbgrad.last_trace()
    assert list(trace.tensors) == ["a", "b", "c", "d", "e"]
    # Line numbers are the cell's own: line 1 is "%%autograd".
    assert trace.node("MulBackward0").line == 7
    assert trace.passes[0].line == 8


def test_intermediates_keep_their_grad_after_the_cell(shell):
    run(shell, "%%autograd --no-show\n" + PROGRAM)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(shell.user_ns["c"].grad) == 4.0


def test_backward_order_and_accumulations(shell):
    run(shell, "%%autograd --no-show\n" + PROGRAM)
    trace = nbgrad.last_trace()
    assert [s.node.name for s in trace.backward_steps][:3] == [
        "MulBackward0",
        "AccumulateGrad",
        "AddBackward0",
    ]
    assert {
        name: [float(c.total) for c in items] for name, items in trace.accumulations.items()
    } == {
        "a": [4.0],
        "b": [4.0],
        "d": [5.0],
    }


def test_a_tensor_used_twice_and_two_backward_calls(shell):
    cell = """%%autograd --no-show
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
y.backward(retain_graph=True)
y.backward()
"""
    run(shell, "import nbgrad as torch")
    assert run(shell, cell).success
    trace = nbgrad.last_trace()
    assert [[list(c.grad), list(c.total)] for c in trace.accumulations["x"]] == [
        [[2.0, 4.0], [2.0, 4.0]],
        [[2.0, 4.0], [4.0, 8.0]],
    ]
    assert [len(p.steps) for p in trace.passes] == [3, 3]


def test_options_no_show_name_and_backward(shell, capsys):
    result = run(
        shell,
        "%%autograd --no-show --name trace --backward loss\n"
        "import nbgrad as torch\n"
        "w = torch.tensor(3.0, requires_grad=True)\n"
        "loss = w * w\n",
    )
    assert result.success
    assert capsys.readouterr().out == ""
    assert shell.user_ns["trace"] is nbgrad.last_trace()
    assert float(shell.user_ns["w"].grad) == 6.0
    assert len(shell.user_ns["trace"].passes) == 1


def test_limits_from_options(shell):
    cell = """%%autograd --no-show --max-passes 1 --max-elements 2 --full
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
for _ in range(3):
    (w * w).sum().backward()
"""
    run(shell, "import nbgrad as torch")
    assert run(shell, cell).success
    trace = nbgrad.last_trace()
    assert len(trace.passes) == 1 and "max_passes" in trace.truncated
    assert trace.policy.max_elements == 2 and trace.policy.full
    assert list(trace.tensors["w"].value) == [1.0, 2.0, 3.0]  # kept whole: --full


def test_the_line_magic(shell):
    run(shell, "import nbgrad as torch; p = torch.tensor(2.0, requires_grad=True)")
    assert run(shell, "%autograd --no-show q = (p * p).exp()").success
    assert shell.user_ns["q"].grad_fn.name() == "ExpBackward0"
    assert [op.op for op in nbgrad.last_trace().ops] == ["mul", "exp"]


def test_a_trailing_semicolon_hides_the_value(shell):
    result = run(shell, "%%autograd --no-show\n1 + 1;\n")
    assert result.success and result.result is None
    result = run(shell, "%%autograd --no-show\n1 + 1\n")
    assert result.result == 2


def test_unknown_options_show_the_usage(shell, capsys):
    from IPython.core.error import UsageError

    result = run(shell, "%%autograd --bogus\nnot_run = 1\n")
    assert not result.success and isinstance(result.error_in_exec, UsageError)
    message = str(result.error_in_exec)
    assert message.startswith("usage: %autograd") and "--bogus" in message
    assert "not_run" not in shell.user_ns


def test_help_is_argparse_style(shell):
    doc = shell.find_cell_magic("autograd").__doc__
    for option in ("--no-show", "--backward NAME", "--full", "--max-nodes N", "--name NAME"):
        assert option in doc
    assert doc.startswith("usage: %autograd")


def assert_stopped_by_zero_division(result, capsys, failing_line):
    """The cell failed at ``boom = 1 / 0``: one clean traceback with the cell's own line, and the
    partial trace (one op) shown and kept with the error."""
    assert not result.success
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    out = capsys.readouterr().out
    assert "stopped by ZeroDivisionError" in out  # the partial trace, shown with the error
    traceback_text = out[out.index("ZeroDivisionError") :]
    assert f"----> {failing_line} boom = 1 / 0" in traceback_text
    assert "magic.py" not in traceback_text and "run_cell_magic" not in traceback_text
    trace = nbgrad.last_trace()
    assert trace.error.startswith("ZeroDivisionError") and len(trace.ops) == 1


def test_an_exception_shows_one_clean_traceback_and_keeps_the_partial_trace(shell, capsys):
    cell = "%%autograd\nimport nbgrad as torch\nt = torch.tensor(1.0, requires_grad=True) * 2\n"
    cell += "boom = 1 / 0\n"
    assert_stopped_by_zero_division(run(shell, cell), capsys, failing_line=4)


def test_a_cell_run_again_is_recorded_and_reported_as_the_first_time(shell, capsys):
    # The second run reuses the first one's parse; its filename (execution count) is new.
    cell = (
        "%%autograd --no-show\nimport nbgrad as torch\nt = torch.tensor(1.0, requires_grad=True)\n"
    )
    cell += "u = t * 2\nboom = u * 0 + [][1]\n"
    seen = []
    for _ in range(2):
        result = shell.run_cell(cell, store_history=True)
        assert isinstance(result.error_in_exec, IndexError)
        trace = nbgrad.last_trace()
        seen.append([(op.op, op.line, op.span, op.code) for op in trace.ops] + list(trace.tensors))
        out = capsys.readouterr().out
        assert "----> 5 boom = u * 0 + [][1]" in out[out.index("IndexError") :]
    assert seen[0] == seen[1]
    assert seen[0][:2] == [
        ("mul", 4, (4, 4, 4, 9), "u = t * 2"),
        ("mul", 5, (5, 7, 5, 12), "boom = u * 0 + [][1]"),
    ]
    assert seen[0][2:] == ["t", "u", "u * 0"]


def test_labels_follow_the_cells_text_when_it_changes(shell):
    # Labels are kept by the text of the statement they come from: moved lines keep them, an
    # edited statement gets new ones, and statements sharing a line are labelled as well.
    head = "%%autograd --no-show\nimport nbgrad as torch\nq = torch.tensor([1.0, 2.0])\n"
    cells = [
        head + "r = (q * 3).sum() + 1\n",
        head + "# moved one line down\nr = (q * 3).sum() + 1\n",
        head + "r = (q * 4).sum() + 1\n",
        head + "r = (q * 3).sum() + 1; s = q + 0\n",
    ]
    labels = []
    for cell in cells:
        assert run(shell, cell).success
        trace = nbgrad.last_trace()
        ops = {name: record.op for name, record in trace.tensors.items()}
        labels.append([(name, op.line if op else None) for name, op in ops.items()])
    assert labels[0] == [("q", None), ("q * 3", 4), ("(q * 3).sum()", 4), ("r", 4)]
    assert labels[1] == [("q", None), ("q * 3", 5), ("(q * 3).sum()", 5), ("r", 5)]
    assert labels[2] == [("q", None), ("q * 4", 4), ("(q * 4).sum()", 4), ("r", 4)]
    assert labels[3] == [("q", None), ("q * 3", 4), ("(q * 3).sum()", 4), ("r", 4), ("s", 4)]


def test_keyboard_interrupt_stops_recording_cleanly(shell):
    result = run(
        shell,
        "%%autograd --no-show\nk = torch.tensor(1.0, requires_grad=True) * 3\n"
        "raise KeyboardInterrupt\n",
    )
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert nbgrad.last_trace().error.startswith("KeyboardInterrupt")


def test_nested_recording_is_refused_with_a_clear_message(shell):
    result = run(shell, "%%autograd --no-show\nimport nbgrad\nwith nbgrad.record():\n    pass\n")
    assert not result.success
    assert "do not nest" in str(result.error_in_exec)
    # The next cell records normally: nothing leaked.
    assert run(shell, "%%autograd --no-show\n" + PROGRAM).success
    assert len(nbgrad.last_trace().tensors) == 5


def test_no_state_leaks_from_one_cell_into_the_next(shell):
    run(shell, "%%autograd --no-show\n" + PROGRAM)
    first = nbgrad.last_trace()
    run(shell, "%%autograd --no-show\nz = torch.tensor(1.0, requires_grad=True) + 1\n")
    second = nbgrad.last_trace()
    assert second is not first
    assert list(second.tensors) == ["torch.tensor(1.0, requires_grad=True)", "z"]


def test_recording_a_cell_200_times_leaves_memory_flat(shell):
    """A dropped trace releases its arrays: only the newest trace stays (last_trace)."""
    cell = """%%autograd --no-show --full
w = torch.ones(100, 100, requires_grad=True)
loss = (w * 2).sum()
loss.backward()
"""
    run(shell, "import nbgrad as torch")
    for _ in range(5):
        run(shell, cell)
    gc.collect()
    tracemalloc.start()
    try:
        run(shell, cell)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            assert run(shell, cell).success
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # Each trace holds ~200 KB of arrays (w, w * 2, grads: --full keeps them whole); a leak of
    # one per cell would be 40 MB. IPython's own history per cell is a few hundred bytes.
    assert after - before < 1_000_000, f"grew by {after - before} bytes over 200 cells"


AWAITING = """\
import asyncio
import nbgrad as torch
x = torch.tensor(2.0, requires_grad=True)
y = x * 3
await asyncio.sleep(0)
z = y * y
z.backward()
await asyncio.sleep(0, result=z)
"""


def test_a_cell_with_top_level_await_runs_as_a_plain_cell_and_is_recorded(shell):
    plain = run(shell, AWAITING)  # IPython runs a plain cell with ``await`` as a coroutine
    assert plain.success and plain.result.item() == 36.0
    result = run(shell, "%%autograd --no-show\n" + AWAITING)
    assert result.success
    assert result.result.item() == 36.0  # the awaited last expression is the cell's value
    assert float(shell.user_ns["x"].grad) == 36.0  # z = 9 x**2: 18 x, one backward in the cell
    trace = nbgrad.last_trace()
    assert trace.error is None and trace.truncated is None
    assert list(trace.tensors) == ["x", "y", "z"]
    # The ops on both sides of the await, at the cell's own lines (line 1 is "%%autograd").
    assert [(op.op, op.line, op.code) for op in trace.ops] == [
        ("mul", 5, "y = x * 3"),
        ("mul", 7, "z = y * y"),
    ]
    assert [step.node.name for step in trace.backward_steps] == [
        "MulBackward0",
        "MulBackward0",
        "AccumulateGrad",
    ]
    assert trace.passes[0].line == 8
    assert float(trace.tensors["x"].grad) == 36.0


def test_async_for_and_async_with_at_the_top_of_a_recorded_cell(shell):
    run(shell, "import nbgrad as torch")
    run(
        shell,
        "import contextlib\n"
        "async def scales():\n    for k in (1.0, 2.0):\n        yield k\n"
        "@contextlib.asynccontextmanager\nasync def opened():\n    yield 10.0\n",
    )
    cell = """%%autograd --no-show
w = torch.tensor(1.5, requires_grad=True)
total = w * 0
async for k in scales():
    total = total + w * k
async with opened() as ten:
    loss = total * ten
loss.backward()
"""
    assert run(shell, cell).success
    trace = nbgrad.last_trace()
    assert float(trace.tensors["loss"].value) == 45.0
    assert float(trace.tensors["w"].grad) == 30.0
    assert [op.line for op in trace.ops] == [3, 5, 5, 5, 5, 7]


def test_an_error_after_an_await_shows_one_clean_traceback(shell, capsys):
    cell = "%%autograd\nimport asyncio\nimport nbgrad as torch\n"
    cell += "t = torch.tensor(1.0, requires_grad=True) * 2\nawait asyncio.sleep(0)\nboom = 1 / 0\n"
    assert_stopped_by_zero_division(run(shell, cell), capsys, failing_line=6)


def test_only_cells_with_a_top_level_await_are_awaited(shell):
    transform = shell.transform_cell
    assert transform("%%autograd --no-show\nx = 1\n") == (
        "get_ipython().run_cell_magic('autograd', '--no-show', 'x = 1\\n')\n"
    )
    assert transform("%%autograd\nawait f()\n") == (
        "await get_ipython().run_cell_magic('autograd', '', 'await f()\\n')\n"
    )
    # An await inside a function, or only in a string, is no top-level await.
    for body in ("async def f():\n    await g()\n", "text = 'await'\n"):
        assert transform("%%autograd\n" + body).startswith("get_ipython()")
    assert transform("%%autogradx\nawait f()\n").startswith("get_ipython()")  # another magic


def test_help_in_a_cell_with_await(shell, capsys):
    result = run(shell, "%%autograd -h\nimport asyncio\nawait asyncio.sleep(0)\n")
    assert result.success
    assert capsys.readouterr().out.startswith("usage: %autograd")


def test_without_autoawait_await_fails_as_in_a_plain_cell(shell):
    run(shell, "import asyncio")
    run(shell, "%autoawait False")
    try:
        plain = run(shell, "await asyncio.sleep(0)\n")
        recorded = run(shell, "%%autograd --no-show\nawait asyncio.sleep(0)\n")
    finally:
        run(shell, "%autoawait True")
    assert "'await' outside function" in str(plain.error_before_exec)
    assert isinstance(recorded.error_in_exec, SyntaxError)
    assert "'await' outside function" in str(recorded.error_in_exec)
    # Nothing was left recording: the next cell records.
    assert run(shell, "%%autograd --no-show\n" + PROGRAM).success
    assert list(nbgrad.last_trace().tensors) == ["a", "b", "c", "d", "e"]


def test_the_line_magic_does_not_await(shell):
    # IPython awaits a whole cell, not a line magic's statement: a SyntaxError, as before.
    result = run(shell, "import asyncio\n%autograd --no-show await asyncio.sleep(0)\n")
    assert isinstance(result.error_in_exec, SyntaxError)


def test_a_no_show_trace_read_later_has_the_names_the_cell_ended_with(shell):
    assert run(shell, "%%autograd --no-show\n" + PROGRAM).success
    run(shell, "renamed = e\ndel e\nc = None\n")  # the notebook goes on before the trace is read
    trace = nbgrad.last_trace()
    assert list(trace.tensors) == ["a", "b", "c", "d", "e"]
    assert trace.tensors["e"].role == "output" and float(trace.tensors["c"].grad) == 4.0
    assert [op.code for op in trace.ops] == ["c = a + b", "e = c * d"]


def test_the_cell_goes_through_ipythons_own_steps_ast_transformers_included(shell):
    """As IPython's %%time does: input transformations, then the user's AST transformers
    (here one that doubles every integer literal, as in IPython's documentation)."""
    import ast

    class DoubleIntegers(ast.NodeTransformer):
        def visit_Constant(self, node):
            if type(node.value) is int:
                return ast.copy_location(ast.Constant(node.value * 2), node)
            return node

    transformer = DoubleIntegers()
    shell.ast_transformers.append(transformer)
    try:
        plain = run(shell, "plain_value = 3\n")
        recorded = run(
            shell,
            "%%autograd --no-show\nimport nbgrad as torch\n"
            "w = torch.tensor(float(3), requires_grad=True)\n"
            "y = w * 5\ny.backward()\n",
        )
    finally:
        shell.ast_transformers.remove(transformer)
    assert plain.success and recorded.success
    assert shell.user_ns["plain_value"] == 6
    assert shell.user_ns["w"].item() == 6.0  # the literal 3 became 6 in the recorded cell too
    assert float(shell.user_ns["w"].grad) == 10.0  # and 5 became 10
    assert nbgrad.last_trace().node("MulBackward0").line == 4  # positions are the cell's own


def test_ipython_syntax_and_indented_cells_run_recorded(shell, capsys):
    result = run(
        shell,
        "%%autograd --no-show\n    import nbgrad as torch\n"
        "    v = torch.ones(2, requires_grad=True)\n"
        "    total = (v * 2).sum()\n    %time total.backward()\n",
    )
    assert result.success
    assert shell.user_ns["v"].grad.tolist() == [2.0, 2.0]
    assert "Wall time" in capsys.readouterr().out


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_a_cell_that_only_runs_backward_on_an_earlier_graph_names_everything(shell, engine):
    if engine == "torch":
        pytest.importorskip("torch")
    setup = PROGRAM.replace("import nbgrad as torch", f"import {engine} as torch")
    setup = setup.replace("e.backward()\n", "")
    assert run(shell, setup).success  # the graph is made before anything is recorded
    assert run(shell, "%%autograd\ne.backward()\n").success
    trace = nbgrad.last_trace()
    tensors = trace.tensors
    assert sorted(tensors) == ["a", "b", "c", "d", "e"]
    assert {name: t.role for name, t in tensors.items()} == {
        "a": "leaf",
        "b": "leaf",
        "c": "intermediate",
        "d": "leaf",
        "e": "output",
    }
    assert tensors["e"].grad_fn.name == "MulBackward0"
    accumulated = {
        step.node.variable.name: float(step.grads_in[0])
        for step in trace.backward_steps
        if step.node.name == "AccumulateGrad"
    }
    assert accumulated == {"a": 4.0, "b": 4.0, "d": 5.0}  # de/da = de/db = d = 4, de/dd = c = 5
