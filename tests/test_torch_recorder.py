"""Recording real PyTorch (nbgrad.trace.torch_recorder): the same programs recorded through
nbgrad's engine and through PyTorch give traces with the same node names, the same edges and
the same numbers; recording changes nothing; faults leave no mode or hook behind."""

import json
import subprocess
import sys

import numpy as np
import pytest

import nbgrad
from nbgrad.trace.recorder import Recorder
from nbgrad.trace.source import source_for

torch = pytest.importorskip("torch")

from nbgrad.trace.torch_bridge import trace_of_torch_tensor  # noqa: E402
from nbgrad.trace.torch_recorder import TorchRecorder  # noqa: E402


def record(program, T, **options):
    """Run ``program(T)`` (T: nbgrad or torch) while recording the engine of T; the program
    returns its variables (``locals()``), which name the tensors."""
    recorder_class = TorchRecorder if T is torch else Recorder
    recorder = recorder_class(
        source_for(__file__), base_frame=sys._getframe(), source_kind="file", **options
    )
    recorder.start()
    error, variables = None, {}
    try:
        variables = program(T)
    except BaseException as raised:
        error = raised
    trace = recorder.finish([variables], error=error)
    if error is not None:
        raise error
    return trace, variables


# --- the programs, written once for both engines ------------------------------------------------


def readme_example(T):
    a = T.tensor(2.0, requires_grad=True)
    b = T.tensor(3.0, requires_grad=True)
    c = a + b
    d = T.tensor(4.0, requires_grad=True)
    e = c * d
    e.backward()
    return locals()


def used_twice_and_two_passes(T):
    x = T.tensor([1.0, 2.0, -0.5], requires_grad=True)
    w = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = (x * w).tanh()
    y = (h * h + x).sum()
    y.backward(retain_graph=True)
    z = (h.exp() * 3).mean()
    z.backward()
    return locals()


def mlp_with_modules(T):
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(4, 3), T.nn.Tanh(), T.nn.Linear(3, 2))
    with T.no_grad():  # the same weights in both engines
        for i, p in enumerate(model.parameters()):
            p.copy_(T.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1)))
    x = T.tensor(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)
    target = T.tensor([[0.5, -0.5], [1.0, 0.0]])
    out = model(x)
    loss = ((out - target) ** 2).mean()
    loss.backward()
    return locals()


def softmax_and_reductions(T):
    logits = T.tensor([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], requires_grad=True)
    scale = T.tensor(2.0, requires_grad=True)
    probs = T.log_softmax(logits * scale, 1)
    loss = -(probs[:, 0]).sum() + logits.pow(2).mean()
    loss.backward()
    return locals()


def custom_function(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    x = T.tensor([1.0, 3.0], requires_grad=True)
    y = Square.apply(x)
    z = (y * 2).sum()
    z.backward()
    return {"x": x, "y": y, "z": z}


PROGRAMS = [readme_example, used_twice_and_two_passes, mlp_with_modules, softmax_and_reductions]


# --- what must agree ------------------------------------------------------------------------------


def graph_of(trace, root_name):
    """The backward graph below a tensor, walked in a fixed order: per node its name and its
    edges (child position in this walk, input_nr); AccumulateGrad nodes carry their leaf's name."""
    order, edges = [], []
    position = {}
    pending = [trace.tensors[root_name].grad_fn]
    while pending:
        node = pending.pop(0)
        if id(node) in position:
            continue
        position[id(node)] = len(order)
        order.append(node)
        pending.extend(child for child, _ in node.next if child is not None)
    for node in order:
        label = node.name if node.variable is None else f"AccumulateGrad({node.variable.name})"
        edges.append((label, [None if c is None else (position[id(c)], nr) for c, nr in node.next]))
    return edges


def numbers(value):
    return np.asarray(value, dtype=np.float64)


def assert_same_numbers(a, b, what):
    assert (a is None) == (b is None), what
    if a is not None:
        np.testing.assert_allclose(numbers(a), numbers(b), rtol=1e-5, atol=1e-6, err_msg=what)


def step_labels(trace):
    return [
        s.node.name if s.node.variable is None else f"AccumulateGrad({s.node.variable.name})"
        for s in trace.backward_steps
    ]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_the_same_program_gives_the_same_trace_in_both_engines(program):
    mine, _ = record(program, nbgrad)
    theirs, _ = record(program, torch)
    assert theirs.engine[0] == "torch" and mine.engine is None
    roots = [p.roots[0][0] for p in mine.passes]
    root_names = [next(t.name for t in r.outputs) for r in roots]
    for name in root_names:
        assert graph_of(mine, name) == graph_of(theirs, name), name
    variables = [n for n, t in mine.tensors.items() if t.named_by == "variable"]
    assert variables and set(variables) <= set(theirs.tensors)
    for name in variables:
        ours, real = mine.tensors[name], theirs.tensors[name]
        assert (ours.role, ours.shape) == (real.role, real.shape), name
        assert_same_numbers(ours.value, real.value, f"value of {name}")
        assert_same_numbers(ours.grad, real.grad, f"grad of {name}")
    assert step_labels(mine) == step_labels(theirs)
    for ours, real in zip(mine.backward_steps, theirs.backward_steps):
        for g, h in zip(ours.grads_in, real.grads_in):
            assert_same_numbers(g, h, f"grad into {ours.node.name}")
        for (_, nr, g), (_, nr2, h) in zip(ours.grads_out, real.grads_out):
            assert nr == nr2
            assert_same_numbers(g, h, f"grad sent by {ours.node.name}")
    assert set(mine.accumulations) == set(theirs.accumulations)
    for name, contributions in mine.accumulations.items():
        real = theirs.accumulations[name]
        assert len(contributions) == len(real), name
        for ours, other in zip(contributions, real):
            assert ours.pass_index == other.pass_index
            assert_same_numbers(ours.grad, other.grad, f"into {name}")
            assert_same_numbers(ours.total, other.total, f"total of {name}")
    assert [(p.kind, p.retain_graph) for p in mine.passes] == [
        (p.kind, p.retain_graph) for p in theirs.passes
    ]


def test_saved_values_read_from_pytorchs_nodes():
    trace, _ = record(readme_example, torch)
    mul = trace.node("MulBackward0")
    assert mul.saved_tensors == {"self": trace.tensors["c"], "other": trace.tensors["d"]}
    assert list(mul.saved) == ["other", "self"]  # the table's order (PyTorch's: by name)
    assert mul.formulas == {"self": "grad * other", "other": "grad * self"}  # nbgrad's table
    assert trace.node("AddBackward0").saved == {"alpha": 1}
    assert mul.op.code == "e = c * d" and mul.freed_at == mul.steps[0].index
    data = json.loads(trace.to_json())
    assert data["producer"] == {"engine": "torch", "engine_version": torch.__version__}


def test_modules_group_the_ops_as_in_nbgrad():
    mine, _ = record(mlp_with_modules, nbgrad)
    theirs, _ = record(mlp_with_modules, torch)
    assert (
        mine.modules
        == theirs.modules
        == {
            "model": "Sequential",
            "model.0": "Linear",
            "model.1": "Tanh",
            "model.2": "Linear",
        }
    )

    def grouped(trace):
        return [(op.node.name, op.module) for op in trace.ops if op.node is not None]

    # PyTorch's mode sees ``linear``, nbgrad's engine its ``t`` and ``addmm``: compare by node
    assert [g for g in grouped(theirs) if g[1]] == [
        g for g in grouped(mine) if g[1] and g[0] != "TBackward0"
    ]


def test_a_custom_function_is_an_op_with_its_node_and_the_ops_its_forward_ran():
    mine, _ = record(custom_function, nbgrad)
    theirs, _ = record(custom_function, torch)
    for trace in (mine, theirs):
        (call,) = [op for op in trace.ops if op.op == "Square"]
        assert call.node.name == "SquareBackward" and call.outputs[0].name == "y"
        assert [op.op for op in trace.ops if op.function is call] == ["mul"]
        assert call.node.saved_tensors == {"tensors[0]": trace.tensors["x"]}
        assert list(trace.tensors["x"].grad) == [4.0, 12.0]
    assert step_labels(mine) == step_labels(theirs)


def test_recording_changes_no_value_and_no_grad():
    def program(T):
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = torch.randn(6, 5)
        labels = torch.tensor([0, 1, 2, 0, 1, 2])
        for _ in range(3):
            loss = torch.nn.functional.cross_entropy(model(x), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return locals()

    plain = program(torch)
    _, recorded = record(program, torch, max_passes=2)
    assert torch.equal(plain["loss"], recorded["loss"])
    for p, q in zip(plain["model"].parameters(), recorded["model"].parameters()):
        assert torch.equal(p, q) and torch.equal(p.grad, q.grad)


def test_an_exception_removes_the_mode_and_every_hook():
    import torch.nn.modules.module as home

    def failing(T):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        (a * 2).sum()
        layer = T.nn.Linear(2, 1)
        layer(a)
        raise ValueError("in the cell")

    with pytest.raises(ValueError):
        record(failing, torch)
    assert not torch.overrides._get_current_function_mode_stack()
    assert not home._global_forward_hooks and not home._global_forward_pre_hooks
    # A graph made while recording, run after it: no hook of the recorder fires or fails.
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    made = {}

    def failing_later(T):
        made["b"] = (a * 3).sum()
        return 1 / 0

    with pytest.raises(ZeroDivisionError):
        record(failing_later, torch)
    made["b"].backward()
    assert a.grad.tolist() == [3.0, 3.0]
    assert not torch.overrides._get_current_function_mode_stack()


def test_a_limit_reached_inside_an_op_leaves_no_mode_behind():
    def program(T):
        x = T.tensor(1.0, requires_grad=True)
        for _ in range(10):
            x = x * 1.5
        return locals()

    trace, variables = record(program, torch, max_nodes=4)
    assert "max_nodes" in trace.truncated and variables["x"].item() == pytest.approx(1.5**10)
    assert not torch.overrides._get_current_function_mode_stack()


def test_opaque_regions_are_nodes_never_errors():
    def program(T):
        compiled = torch.compile(lambda u: (u.sin() * 2).sum(), backend="aot_eager")
        w = torch.tensor([0.5, 1.0], requires_grad=True)
        out = compiled(w)
        out.backward()
        return locals()

    trace, variables = record(program, torch)
    assert trace.error is None and trace.truncated is None
    assert [s.node.name for s in trace.backward_steps] == [
        "CompiledFunctionBackward",
        "AccumulateGrad",
    ]
    expected = 2 * torch.cos(torch.tensor([0.5, 1.0]))
    assert torch.allclose(variables["w"].grad, expected)
    np.testing.assert_allclose(trace.tensors["w"].grad, expected.numpy(), rtol=1e-6)


def test_a_training_loop_records_its_first_passes():
    def program(T):
        w = T.tensor([1.0, -2.0], requires_grad=True)
        for _ in range(5):
            loss = (w * w).sum()
            loss.backward()
            with T.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
        return locals()

    mine, _ = record(program, nbgrad, max_passes=2)
    theirs, ran = record(program, torch, max_passes=2)
    assert len(theirs.passes) == 2 and "max_passes" in theirs.truncated
    assert [t for t in theirs.tensors if t.startswith("loss")] == ["loss#1", "loss#2"]
    assert [t for t in mine.tensors if t.startswith("w")] == [
        t for t in theirs.tensors if t.startswith("w")
    ]
    assert ran["w"].tolist() == pytest.approx([1.0 * 0.8**5, -2.0 * 0.8**5])


def test_the_graph_behind_any_tensor():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    loss = (b * a).sum()
    trace = trace_of_torch_tensor(loss, {"a": a, "b": b, "loss": loss})
    assert trace.engine[0] == "torch" and trace.tensors["loss"].role == "output"
    assert sorted(n.name for n in trace.nodes) == [
        "AccumulateGrad",
        "ExpBackward0",
        "MulBackward0",
        "SumBackward0",
    ]
    mul = trace.node("MulBackward0")
    assert mul.saved_tensors["other"] is trace.tensors["a"]
    assert mul.saved_tensors["self"] is trace.tensors["b"]
    assert trace.node("ExpBackward0").saved_tensors["result"] is trace.tensors["b"]
    assert trace.node("ExpBackward0").formulas == {"self": "grad * result"}
    loss.backward()
    after = trace_of_torch_tensor(loss, {"a": a, "loss": loss})
    assert after.node("MulBackward0").freed_at == -1  # freed by backward: nothing to read
    np.testing.assert_allclose(after.tensors["a"].grad, (a.exp() * (1 + a)).detach().numpy())
    json.loads(after.to_json())


def test_nbgrad_alone_never_imports_torch():
    code = """
import sys
from IPython.testing.globalipapp import start_ipython
import nbgrad
shell = start_ipython()
shell.run_cell("%load_ext nbgrad")
result = shell.run_cell('''%%autograd --no-show
import nbgrad as torch
a = torch.tensor(2.0, requires_grad=True)
(a * 3).backward()
''')
assert result.success and nbgrad.last_trace().backward_steps
nbgrad.last_trace().to_json()
print("torch" in sys.modules)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout + out.stderr


# --- the magic on PyTorch cells -------------------------------------------------------------------


@pytest.fixture(scope="module")
def shell():
    from IPython.testing.globalipapp import get_ipython

    ip = get_ipython()  # starts the test shell, or gives the one another module started
    ip.run_cell("%load_ext nbgrad")
    return ip


def test_a_cell_that_imports_torch_records_pytorch(shell):
    result = shell.run_cell(
        "%%autograd --no-show\n"
        "import torch\n"
        "a = torch.tensor(2.0, requires_grad=True)\n"
        "b = torch.tensor(3.0, requires_grad=True)\n"
        "c = a + b\n"
        "d = torch.tensor(4.0, requires_grad=True)\n"
        "e = c * d\n"
        "e.backward()\n"
    )
    assert result.success
    trace = nbgrad.last_trace()
    assert trace.engine[0] == "torch"
    assert list(trace.tensors) == ["a", "b", "c", "d", "e"]
    assert float(shell.user_ns["c"].grad) == 4.0  # retained
    assert trace.node("MulBackward0").op.line == 7 and trace.passes[0].code == "e.backward()"


def test_the_engine_is_detected_from_the_variables_a_cell_uses(shell):
    shell.run_cell("import torch as real_torch\nw = real_torch.ones(2, requires_grad=True)")
    shell.run_cell("%%autograd --no-show\nloss = (w * 3).sum()\nloss.backward()")
    assert nbgrad.last_trace().engine[0] == "torch"
    shell.run_cell("import nbgrad as torch\nv = torch.ones(2, requires_grad=True)")
    shell.run_cell("%%autograd --no-show\nloss = (v * 3).sum()\nloss.backward()")
    assert nbgrad.last_trace().engine is None  # nbgrad's own
    assert list(nbgrad.last_trace().tensors["v"].grad) == [3.0, 3.0]


def test_a_cell_importing_nbgrad_as_torch_records_nbgrad(shell):
    shell.run_cell("import torch")  # the real one, in the namespace
    result = shell.run_cell(
        "%%autograd --no-show\n"
        "import nbgrad as torch\n"
        "u = torch.tensor(2.0, requires_grad=True)\n"
        "(u * u).backward()\n"
    )
    assert result.success and nbgrad.last_trace().engine is None
    assert float(nbgrad.last_trace().tensors["u"].grad) == 4.0


def test_engine_option_forces_pytorch(shell):
    shell.run_cell("import torch as real_torch\nq = real_torch.ones(2, requires_grad=True)")
    shell.run_cell("holder = {'q': q}")
    result = shell.run_cell(
        "%%autograd --no-show --engine torch\nout = (holder['q'] * 2).sum()\nout.backward()"
    )
    assert result.success and nbgrad.last_trace().engine[0] == "torch"
    assert [s.node.name for s in nbgrad.last_trace().backward_steps][0] == "SumBackward0"


def test_an_error_in_a_torch_cell_fails_it_and_removes_the_mode(shell):
    result = shell.run_cell(
        "%%autograd --no-show\nimport torch\nz = torch.ones(2, requires_grad=True) * 2\n1 / 0"
    )
    assert not result.success and isinstance(result.error_in_exec, ZeroDivisionError)
    assert nbgrad.last_trace().error.startswith("ZeroDivisionError")
    assert not torch.overrides._get_current_function_mode_stack()
