"""``%%autograd`` in a real kernel: notebooks executed by nbclient (as ``nbconvert --execute``
and nbval do), with the python3 kernel."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parent.parent

PROGRAM = """\
%%autograd
import nbgrad as torch
a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
c = a + b
d = torch.tensor(4.0, requires_grad=True)
e = c * d
e.backward()
e"""

CHECKS = """\
import warnings
import nbgrad
warnings.simplefilter("error")  # c.grad of a non-leaf must not warn: the magic retained it
trace = nbgrad.last_trace()
assert list(trace.tensors) == ["a", "b", "c", "d", "e"], list(trace.tensors)
assert float(c.grad) == 4.0 and float(a.grad) == 4.0 and float(d.grad) == 5.0
steps = [s.node.name for s in trace.backward_steps]
assert steps[:3] == ["MulBackward0", "AccumulateGrad", "AddBackward0"], steps
assert trace.node("MulBackward0").line == 7
assert [float(x.grad) for x in trace.accumulations["d"]] == [5.0]
print("checks passed")"""

USED_TWICE = """\
%%autograd --no-show
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
y.backward(retain_graph=True)
y.backward()"""

USED_TWICE_CHECKS = """\
trace = nbgrad.last_trace()
totals = [[list(map(float, a.grad)), list(map(float, a.total))] for a in trace.accumulations["x"]]
assert totals == [[[2.0, 4.0], [2.0, 4.0]], [[2.0, 4.0], [4.0, 8.0]]], totals
sent = [float(g[0]) for _, _, g in trace.node("MulBackward0").steps[0].grads_out]
assert sent == [1.0, 1.0], sent
print("used twice: ok")"""

AWAITING = """\
%%autograd --no-show
import asyncio
w = torch.tensor(3.0, requires_grad=True)
v = w * w
await asyncio.sleep(0.01)
loss = v * 2
loss.backward()
await asyncio.sleep(0, result=loss)"""

AWAITING_CHECKS = """\
trace = nbgrad.last_trace()
assert [(op.op, op.line) for op in trace.ops] == [("mul", 4), ("mul", 6)], trace.ops
assert list(trace.tensors) == ["w", "v", "loss"], list(trace.tensors)
assert float(trace.tensors["w"].grad) == 12.0 and float(w.grad) == 12.0
print("awaited: ok")"""

FAILING = """\
%%autograd
import nbgrad as torch
t = torch.tensor(1.0, requires_grad=True) * 2
boom = 1 / 0"""

MEMORY_START = """\
import gc, tracemalloc
gc.collect()
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]"""

MEMORY_CELL = """\
%%autograd --no-show --full
w = torch.ones(100, 100, requires_grad=True)
(w * 2).sum().backward()"""

MEMORY_END = """\
gc.collect()
grown = tracemalloc.get_traced_memory()[0] - before
tracemalloc.stop()
print("grown", grown)
assert grown < 2_000_000, grown"""


def notebook(*sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def execute(nb, **options):
    resources = {"metadata": {"path": str(REPO)}}
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources=resources, **options
    )
    client.execute()
    return nb


def text_of(cell):
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.data.get("text/plain", ""))
        elif output.output_type == "error":
            parts.append("\n".join(output.traceback))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def executed():
    return execute(
        notebook(
            "%load_ext nbgrad",
            PROGRAM,
            CHECKS,
            USED_TWICE,
            USED_TWICE_CHECKS,
            AWAITING,
            AWAITING_CHECKS,
        )
    )


def test_the_cell_shows_its_value_and_the_trace(executed):
    cell = executed.cells[1]
    kinds = [o.output_type for o in cell.outputs]
    assert "execute_result" in kinds and "display_data" in kinds
    result = next(o for o in cell.outputs if o.output_type == "execute_result")
    assert result.data["text/plain"] == "tensor(20., grad_fn=<MulBackward0>)"
    assert result.execution_count == 2
    shown = text_of(cell)
    assert "MulBackward0" in shown and "line 7: e = c * d" in shown and "0x" not in shown


def test_names_grads_order_and_accumulations_in_the_kernel(executed):
    assert "checks passed" in text_of(executed.cells[2])
    assert "used twice: ok" in text_of(executed.cells[4])


def test_a_cell_with_top_level_await_in_the_kernel(executed):
    """The kernel awaits the cell on its running event loop, as it does a plain cell's."""
    result = next(o for o in executed.cells[5].outputs if o.output_type == "execute_result")
    assert result.data["text/plain"] == "tensor(18., grad_fn=<MulBackward0>)"
    assert "awaited: ok" in text_of(executed.cells[6])


def test_an_error_fails_the_notebook_with_one_clean_traceback():
    nb = notebook("%load_ext nbgrad", FAILING, "print('never')")
    with pytest.raises(nbclient.exceptions.CellExecutionError):
        execute(nb)
    failing = nb.cells[1]
    error = next(o for o in failing.outputs if o.output_type == "error")
    assert error.ename == "ZeroDivisionError"
    # Newer IPython colours the code in a traceback token by token: compare the plain text.
    traceback_text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert "boom = 1 / 0" in traceback_text
    assert "magic.py" not in traceback_text and "run_cell_magic" not in traceback_text
    assert "stopped by ZeroDivisionError" in text_of(failing)  # the partial trace
    assert not nb.cells[2].get("outputs")


def test_nbconvert_execute_fails_on_an_error(tmp_path):
    path = tmp_path / "failing.ipynb"
    nbformat.write(notebook("%load_ext nbgrad", FAILING), path)
    completed = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert completed.returncode != 0
    assert "ZeroDivisionError" in completed.stderr


def test_recording_200_cells_leaves_the_kernels_memory_flat():
    warm_up = [MEMORY_CELL] * 5
    cells = ["%load_ext nbgrad", "import nbgrad as torch", *warm_up, MEMORY_START]
    cells += [MEMORY_CELL] * 200 + [MEMORY_END]
    nb = execute(notebook(*cells))
    assert "grown" in text_of(nb.cells[-1])


def test_the_trace_json_travels(executed):
    """The trace JSON is plain JSON a front end can read (checked inside the kernel)."""
    nb = execute(
        notebook(
            "%load_ext nbgrad",
            PROGRAM,
            "import nbgrad; print(nbgrad.last_trace().to_json())",
        )
    )
    data = json.loads(text_of(nb.cells[2]))
    assert data["version"] == 2 and len(data["steps"]) == 5
