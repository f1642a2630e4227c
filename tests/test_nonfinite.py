"""Debugging gradients (nbgrad/trace/nonfinite.py): ``trace.first_nonfinite`` finds where the first
NaN or Inf appeared, on nbgrad's engine and on real PyTorch alike; ``trace.grad_table()`` and the
JSON's ``grad_norms`` give gradient sizes. Expected values are worked out by hand in the comments
(log(0) = -inf, d/dx log x = 1/x, d sqrt(x)/dx = 1/(2 sqrt x)) or computed by NumPy."""

import inspect
import json
import math

import numpy as np
import pytest

import nbgrad
from nbgrad.trace.nonfinite import (
    NonfiniteError,
    NonfiniteRecord,
    grad_norms,
    grad_table,
    nonfinite_kinds,
    norm,
)
from nbgrad.trace.values import ArraySummary

torch = pytest.importorskip("torch")

ENGINES = ["nbgrad", "torch"]


def module_of(engine):
    return torch if engine == "torch" else nbgrad


def line_of(text, function):
    """The line (in this file) of the first line of ``function`` containing ``text``."""
    lines, first = inspect.getsourcelines(function)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(f"{text!r} not in {function.__name__}")


def accumulator(trace, name):
    return next(n for n in trace.nodes if n.variable is trace.tensors[name])


# --- the programs -------------------------------------------------------------------------------


def log_of_zero(T, engine):
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor([0.0, 1.0, 2.0], requires_grad=True)
        w = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = T.log(x)
        z = y * w
        loss = z.sum()
        loss.backward()
    return trace


def sqrt_of_zero(T, engine):
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor([0.0, 4.0], requires_grad=True)
        y = T.sqrt(x)
        loss = y.sum()
        loss.backward()
    return trace


def overflow_then_zero_times_inf(T, engine):
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor([1000.0, 1.0], requires_grad=True)
        big = T.exp(x)
        product = big * 0.0
        loss = product.sum()
        loss.backward()
    return trace


def bad_leaf(T, engine):
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor([float("nan"), 1.0], requires_grad=True)
        y = x * 2.0
        loss = y.sum()
        loss.backward()
    return trace


def bad_incoming_gradient(T, engine):
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor(3.0, requires_grad=True)
        y = x * 2.0
        y.backward(T.tensor(float("nan")))
    return trace


def all_finite(T, engine):
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor([3.0, 4.0], requires_grad=True)
        w = T.tensor([6.0, 8.0], requires_grad=True)
        loss = (w * x).sum()
        loss.backward()
    return trace


# --- first_nonfinite ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_log_of_zero_is_found_in_the_forward_op_that_made_it(engine):
    trace = log_of_zero(module_of(engine), engine)
    found = trace.first_nonfinite
    assert isinstance(found, NonfiniteRecord)
    assert found.phase == "forward"
    assert found.op.op == "log" and found.node.name == "LogBackward0"
    assert found.tensor.name == "y"
    assert found.kinds == ("-inf",)  # log(0) = -inf; log(1), log(2) finite
    assert found.line == line_of("y = T.log(x)", log_of_zero)
    assert found.code.strip() == "y = T.log(x)"
    assert found.already_bad == () and found.made_here
    # forward: z = y * w and loss = sum(z) hold -inf too
    assert [op.op for op in found.spread_ops] == ["mul", "sum"]
    # backward: MulBackward0 sends grad * y = [-inf, 0, log 2] to w (bad) and grad * w to y
    # (finite); LogBackward0 sends w / x = [1/0, 2, 1.5] = [inf, ...] to x (bad)
    mul, log = trace.node("MulBackward0"), trace.node("LogBackward0")
    acc_w, acc_x = accumulator(trace, "w"), accumulator(trace, "x")
    assert set(found.spread_edges) == {(mul, acc_w), (log, acc_x)}
    assert set(found.spread) == {mul, acc_w, log, acc_x}
    text = found.describe()
    assert text.startswith("first -inf in forward op log (LogBackward0) -> y at line ")
    assert text.endswith("y = T.log(x); made here (every input was finite)")
    assert repr(found) == f"<NonfiniteRecord: {text}>"


@pytest.mark.parametrize("engine", ENGINES)
def test_sqrt_at_zero_is_found_in_the_backward_step_that_made_it(engine):
    trace = sqrt_of_zero(module_of(engine), engine)
    found = trace.first_nonfinite
    # forward: sqrt([0, 4]) = [0, 2], finite; backward: 1 / (2 sqrt 0) = inf
    assert found.phase == "backward"
    assert found.node.name == "SqrtBackward0"
    assert found.kinds == ("inf",)
    assert found.already_bad == ()  # SumBackward0 sent ones: finite
    engine_order = [s.node.name for s in trace.backward_steps]
    assert found.step.index == engine_order.index("SqrtBackward0")
    assert found.line == line_of("y = T.sqrt(x)", sqrt_of_zero)
    assert found.spread[0] is found.node
    assert found.spread_edges == ((found.node, accumulator(trace, "x")),)
    assert "made here (the gradient it received was finite)" in found.describe()
    assert found.describe().startswith(f"first inf in backward step {found.step.index + 1}: ")


@pytest.mark.parametrize("engine", ENGINES)
def test_overflow_is_the_first_and_zero_times_inf_follows(engine):
    trace = overflow_then_zero_times_inf(module_of(engine), engine)
    found = trace.first_nonfinite
    # exp(1000) overflows float32 to inf; then inf * 0 = nan
    assert found.op.op == "exp" and found.kinds == ("inf",) and found.made_here
    assert [op.op for op in found.spread_ops] == ["mul", "sum"]
    product_op = found.spread_ops[0]
    assert nonfinite_kinds(product_op.outputs[0].value) == ("nan",)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_input_already_bad_is_named(engine):
    trace = bad_leaf(module_of(engine), engine)
    found = trace.first_nonfinite
    assert found.op.op == "mul" and found.kinds == ("nan",)
    assert found.already_bad == ("x",) and not found.made_here
    assert found.describe().endswith("already bad: x")


@pytest.mark.parametrize("engine", ENGINES)
def test_an_incoming_gradient_already_bad_is_named(engine):
    trace = bad_incoming_gradient(module_of(engine), engine)
    found = trace.first_nonfinite
    assert found.phase == "backward" and found.node.name == "MulBackward0"
    assert found.already_bad == ("gradient of output 0",)
    assert found.kinds == ("nan",)  # nan * 2


@pytest.mark.parametrize("engine", ENGINES)
def test_all_finite_gives_none_and_no_json_key(engine):
    trace = all_finite(module_of(engine), engine)
    assert trace.first_nonfinite is None
    assert "nonfinite" not in json.loads(trace.to_json())
    assert "first" not in trace.summary().splitlines()[1]


@pytest.mark.parametrize("engine", ENGINES)
def test_summarised_arrays_are_searched_by_their_count(engine):
    T = module_of(engine)
    with nbgrad.record(engine=engine, max_elements=10) as trace:
        x = T.zeros(50, requires_grad=True)
        y = T.log(x)  # 50 x -inf, kept as a summary
        loss = y.sum()
        loss.backward()
    assert isinstance(trace.tensors["y"].value, ArraySummary)
    found = trace.first_nonfinite
    assert found.op.op == "log" and found.kinds == ("nan or inf",)
    assert "first nan or inf in forward op log" in found.describe()


@pytest.mark.parametrize("engine", ENGINES)
def test_the_summary_and_the_json_say_it(engine):
    trace = log_of_zero(module_of(engine), engine)
    found = trace.first_nonfinite
    assert trace.summary().splitlines()[1] == f"  {found.describe()}"
    entry = json.loads(trace.to_json())["nonfinite"]
    log = trace.node("LogBackward0")
    assert entry["phase"] == "forward" and entry["kinds"] == ["-inf"]
    assert entry["node"] == log.id and entry["op"] == log.op.id
    assert entry["tensor"] == trace.tensors["y"].id
    assert entry["line"] == line_of("y = T.log(x)", log_of_zero)
    assert entry["already_bad"] == [] and entry["text"] == found.describe()
    assert set(entry["spread"]) == {n.id for n in found.spread}
    assert "step" not in entry  # a forward origin has no step
    # the "apart" form the widget receives says the same
    assert json.loads(trace.to_json(values="apart"))["nonfinite"] == entry


def test_a_magic_cell_on_torch_tensors(capsys):
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_cell("%load_ext nbgrad", store_history=False)
    cell = (
        "%%autograd --no-show\n"
        "import torch\n"
        "x = torch.tensor([0.0, 1.0], requires_grad=True)\n"
        "y = torch.log(x)\n"
        "y.sum().backward()\n"
    )
    assert shell.run_cell(cell, store_history=False).success
    trace = nbgrad.last_trace()
    assert trace.engine[0] == "torch"
    found = trace.first_nonfinite
    assert found.op.op == "log" and found.line == 4  # line 1 is %%autograd
    assert found.kinds == ("-inf",)


# --- gradient magnitude ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_grad_table_by_hand(engine):
    trace = all_finite(module_of(engine), engine)
    # loss = sum(w * x): dL/dw = x = [3, 4] (norm 5), dL/dx = w = [6, 8] (norm 10)
    rows = {row.name: row for row in trace.grad_table()}
    assert rows["w"].grad_norm == pytest.approx(5.0) and rows["w"].param_norm == pytest.approx(10)
    assert rows["w"].ratio == pytest.approx(0.5)
    assert rows["x"].grad_norm == pytest.approx(10) and rows["x"].param_norm == pytest.approx(5)
    assert rows["x"].ratio == pytest.approx(2.0)
    # in the order they were recorded: first met as operands of w * x
    assert [r.name for r in trace.grad_table()] == ["w", "x"]
    assert [r.name for r in trace.grad_table(sort_by="ratio")] == ["w", "x"]
    assert [r.name for r in trace.grad_table(sort_by="grad_norm")] == ["w", "x"]
    assert [r.name for r in trace.grad_table(sort_by="param_norm")] == ["x", "w"]
    assert [r.name for r in trace.grad_table(sort_by="ratio", descending=True)] == ["x", "w"]
    text = repr(trace.grad_table())
    header = ["parameter", "shape", "|grad|", "|param|", "|grad|", "/", "|param|"]
    assert text.splitlines()[0].split() == header
    assert text.splitlines()[1].split() == ["w", "2", "5", "10", "0.5"]
    assert "<td>0.5</td>" in trace.grad_table()._repr_html_()


def test_grad_table_refuses_an_unknown_column():
    trace = all_finite(nbgrad, "nbgrad")
    with pytest.raises(ValueError, match="sort_by must be one of ratio, grad_norm"):
        trace.grad_table(sort_by="size")


def test_grad_table_to_pandas():
    trace = all_finite(nbgrad, "nbgrad")
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"needs pandas, which is not installed"):
            trace.grad_table().to_pandas()
    else:
        frame = trace.grad_table().to_pandas()
        assert list(frame.columns) == ["name", "shape", "grad_norm", "param_norm", "ratio"]
        assert frame["ratio"].tolist() == pytest.approx([0.5, 2.0])


@pytest.mark.parametrize("engine", ENGINES)
def test_grad_norms_in_the_json_by_hand(engine):
    trace = all_finite(module_of(engine), engine)
    norms = json.loads(trace.to_json())["grad_norms"]
    # per step, in engine order: what the node received, then what it sent on each next edge
    assert {step.node.name for step in trace.backward_steps} == {
        "SumBackward0",
        "MulBackward0",
        "AccumulateGrad",
    }
    for step, entry in zip(trace.backward_steps, norms["steps"], strict=True):
        node = step.node
        if node.name == "SumBackward0":  # receives dL/dL = 1, sends ones(2): norm sqrt(2)
            assert entry == [1, 1.4]  # 2 significant digits
        elif node.name == "MulBackward0":
            sent = dict(zip((child.variable.name for child, _ in node.next), entry[1:]))
            assert entry[0] == 1.4
            assert sent == {"w": 5, "x": 10}  # grad * x = [3, 4] to w, grad * w = [6, 8] to x
        else:
            assert entry == [{"w": 5, "x": 10}[node.variable.name]]
    assert norms["parameters"] == [
        [trace.tensors["w"].id, 5, 10],
        [trace.tensors["x"].id, 10, 5],
    ]
    # the Python side gives the same by node and edge
    by_python = grad_norms(trace)
    mul = trace.node("MulBackward0")
    assert by_python["edges"][f"{mul.id}>{accumulator(trace, 'w').id}"] == pytest.approx(5)
    assert by_python["tensors"][trace.tensors["x"].id] == pytest.approx(10)


def test_an_input_used_twice_sends_both_gradients_along_one_edge():
    with nbgrad.record() as trace:
        x = nbgrad.tensor([3.0, 4.0], requires_grad=True)
        loss = (x * x).sum()
        loss.backward()
    mul, acc = trace.node("MulBackward0"), accumulator(trace, "x")
    # two gradients of grad * x = [3, 4] each: their combined norm is sqrt(25 + 25)
    assert grad_norms(trace)["edges"][f"{mul.id}>{acc.id}"] == pytest.approx(math.sqrt(50))
    mul_step = next(s for s in json.loads(trace.to_json())["grad_norms"]["steps"] if len(s) == 3)
    assert mul_step[1:] == [5, 5]  # the JSON keeps them per edge (the widget combines them)


def test_no_backward_means_no_grad_norms():
    with nbgrad.record() as trace:
        x = nbgrad.tensor([3.0, 4.0], requires_grad=True)
        (x * 2).sum()
    assert "grad_norms" not in json.loads(trace.to_json())
    assert len(trace.grad_table()) == 0
    assert repr(trace.grad_table()) == "GradTable(no parameter has a grad)"


def test_the_norm_of_a_summary_is_the_arrays():
    values = np.random.default_rng(0).normal(2.0, 3.0, size=5000)
    assert norm(ArraySummary(values)) == pytest.approx(np.linalg.norm(values), rel=1e-9)
    values[7] = np.inf
    assert math.isnan(norm(ArraySummary(values)))
    assert norm(np.array([np.inf, 1.0])) == math.inf


@pytest.mark.parametrize("engine", ENGINES)
def test_vanishing_gradients_of_a_deep_sigmoid_stack(engine):
    """Each sigmoid multiplies the gradient by sigmoid' <= 1/4: the first layer's weight gets a
    far smaller gradient than the last's. The table's norms are NumPy's of the recorded grads."""
    T = module_of(engine)
    T.manual_seed(0)
    model = T.nn.Sequential(*[m for _ in range(8) for m in (T.nn.Linear(4, 4), T.nn.Sigmoid())])
    inputs = T.randn(16, 4)
    with nbgrad.record(engine=engine) as trace:
        loss = model(inputs).pow(2).mean()
        loss.backward()
    table = grad_table(trace)
    rows = {row.name: row for row in table}
    first, last = rows["model.0.weight"], rows["model.14.weight"]
    assert first.grad_norm < last.grad_norm * 1e-3
    weight = model[0].weight
    assert first.grad_norm == pytest.approx(float(np.linalg.norm(weight.grad.numpy())))
    assert first.param_norm == pytest.approx(float(np.linalg.norm(weight.detach().numpy())))


# --- stopping at the first non-finite value -------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_stop_on_nonfinite_raises_from_the_forward_op(engine):
    T = module_of(engine)
    reached = []
    with (
        pytest.raises(NonfiniteError) as raised,
        nbgrad.record(engine=engine, stop_on_nonfinite=True) as trace,
    ):
        x = T.tensor([0.0, 1.0], requires_grad=True)
        y = T.log(x)
        reached.append(y)
    assert reached == []  # the error came from the log call itself
    line = line_of("y = T.log(x)", test_stop_on_nonfinite_raises_from_the_forward_op)
    assert str(raised.value) == (
        f"-inf in forward op log (LogBackward0), line {line}; it was made here "
        "(stopped at the first non-finite value, as asked)"
    )
    assert raised.value.found.op.op == "log"
    assert trace.error == f"NonfiniteError: {raised.value}"
    assert [op.op for op in trace.ops] == ["log"]  # what ran up to it is kept


ALREADY_BAD = (
    r"nan in forward op mul \(MulBackward0\), line \d+; "
    r"already bad when it came in: argument 1 of mul "
)


@pytest.mark.parametrize("engine", ENGINES)
def test_stop_on_nonfinite_raises_from_backward_and_names_a_bad_input(engine):
    T = module_of(engine)
    with (
        pytest.raises(NonfiniteError) as raised,
        nbgrad.record(engine=engine, stop_on_nonfinite=True) as trace,
    ):
        x = T.tensor([0.0, 4.0], requires_grad=True)
        y = T.sqrt(x).sum()  # finite: sqrt(0) = 0
        y.backward()  # 1 / (2 sqrt(0)) = inf
    assert "inf in backward step 2 (SqrtBackward0)" in str(raised.value)
    assert trace.first_nonfinite.node.name == "SqrtBackward0"
    with (
        pytest.raises(NonfiniteError, match=ALREADY_BAD),
        nbgrad.record(engine=engine, stop_on_nonfinite=True),
    ):
        x = T.tensor([float("nan")], requires_grad=True)
        x * 2.0


@pytest.mark.parametrize("engine", ENGINES)
def test_without_the_option_recording_goes_on(engine):
    trace = sqrt_of_zero(module_of(engine), engine)  # the same program as above
    assert trace.error is None
    assert trace.first_nonfinite.node.name == "SqrtBackward0"
    assert len(trace.backward_steps) == 3  # every step ran


def test_the_magic_option_stops_the_cell_with_a_clear_error(capsys):
    from IPython.testing.globalipapp import get_ipython

    from nbgrad.autograd import observe

    shell = get_ipython()
    shell.run_cell("%load_ext nbgrad", store_history=False)
    cell = (
        "%%autograd --stop-on-nonfinite --no-show\n"
        "import nbgrad as T\n"
        "a = T.tensor([0.0, 2.0], requires_grad=True)\n"
        "b = T.log(a)\n"
        "after = 1\n"
    )
    shell.user_ns.pop("after", None)
    result = shell.run_cell(cell, store_history=False)
    assert isinstance(result.error_in_exec, NonfiniteError)
    assert "after" not in shell.user_ns
    shown = capsys.readouterr()
    assert "-inf in forward op log (LogBackward0), line 4" in shown.out + shown.err
    assert not observe.op_listeners and not observe.node_listeners
    # the next cell records as usual
    assert shell.run_cell("%%autograd --no-show\nc = a * 2\n", store_history=False).success
    assert nbgrad.last_trace().error is None
