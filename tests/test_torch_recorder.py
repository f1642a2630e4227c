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

from square_function import square_function  # noqa: E402

from nbgrad.trace.torch_bridge import trace_of_torch_tensor  # noqa: E402
from nbgrad.trace.torch_recorder import TorchRecorder  # noqa: E402
from nbgrad.trace.values import PACKED  # noqa: E402


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
    Square = square_function(T)

    x = T.tensor([1.0, 3.0], requires_grad=True)
    y = Square.apply(x)
    z = (y * 2).sum()
    z.backward()
    return {"x": x, "y": y, "z": z}


def second_derivative_by_grad(T):
    x = T.tensor([0.5, 2.0], requires_grad=True)
    y = (x.sin() * x).sum()
    (g,) = T.autograd.grad(y, x, create_graph=True)
    z = (g * g).sum()
    z.backward()
    return locals()


def gradient_penalty(T):
    x = T.tensor([0.5, 2.0, 3.0], requires_grad=True)
    w = T.tensor([1.5, -1.0, 0.25], requires_grad=True)
    y = (x.exp() * w + x.log() * x).sum()
    gx, gw = T.autograd.grad(y, (x, w), create_graph=True)
    penalty = (gx * gx).sum() + (gw * x).sum()
    penalty.backward()
    return locals()


def custom_function_in_a_double_backward(T):
    Square = square_function(T)

    x = T.tensor([1.0, 3.0], requires_grad=True)
    y = Square.apply(x).sum()
    (g,) = T.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    return {"x": x, "y": y, "g": g}


def inplace_through_views(T):
    a = T.tensor([[1.0, 2.0, -0.5], [0.25, 3.0, 1.5]], requires_grad=True)
    y = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    b = a * 2
    row = b[0]
    column = b[:, 1]  # made before the write: regenerated after it
    row.mul_(y)
    loss = (b * b).sum() + column.sum()
    loss.backward()
    return locals()


PROGRAMS = [
    readme_example,
    used_twice_and_two_passes,
    mlp_with_modules,
    softmax_and_reductions,
    inplace_through_views,
]
# The ops of a create_graph=True pass (nbgrad runs its formulas as ops; PyTorch's C++ engine
# runs them, seen through a dispatch mode): programs whose formulas the two engines write alike.
DOUBLE_BACKWARD = [
    second_derivative_by_grad,
    gradient_penalty,
    custom_function_in_a_double_backward,  # its backward's ops, in Python
]


# --- what must agree ------------------------------------------------------------------------------


def graph_of(trace, root_name):
    """The backward graph below a tensor (see ``graph_below``)."""
    return graph_below(trace.tensors[root_name].grad_fn)


def walk(root):
    """The nodes below ``root`` in a fixed order (breadth first along ``next``)."""
    order, position = [], {}
    pending = [root]
    while pending:
        node = pending.pop(0)
        if id(node) in position:
            continue
        position[id(node)] = len(order)
        order.append(node)
        pending.extend(child for child, _ in node.next if child is not None)
    return order, position


def node_label(node):
    return node.name if node.variable is None else f"AccumulateGrad({node.variable.name})"


def graph_below(root):
    """Per node below ``root``, in the order of ``walk``: its label (AccumulateGrad nodes carry
    their leaf's name) and its edges (child position in this walk, input_nr)."""
    order, position = walk(root)
    return [
        (node_label(node), [None if c is None else (position[id(c)], nr) for c, nr in node.next])
        for node in order
    ]


def numbers(value):
    return np.asarray(value, dtype=np.float64)


def assert_same_numbers(a, b, what):
    assert (a is None) == (b is None), what
    if a is not None:
        np.testing.assert_allclose(numbers(a), numbers(b), rtol=1e-5, atol=1e-6, err_msg=what)


def step_labels(trace):
    return [node_label(s.node) for s in trace.backward_steps]


def assert_same_steps(mine, theirs):
    """The same nodes run in the same order, and each node, matched by its place in the graph
    below its pass's root, received and sent the same gradients. (In a double backward too:
    nbgrad computes a node's input gradients in PyTorch's order, so the nodes they make run in
    the same order.)"""
    assert step_labels(mine) == step_labels(theirs)
    assert len(mine.passes) == len(theirs.passes)
    for ours, real in zip(mine.passes, theirs.passes):
        assert len(ours.steps) == len(real.steps)
        our_place, real_place = walk(ours.roots[0][0])[1], walk(real.roots[0][0])[1]
        by_place = {real_place[id(s.node)]: s for s in real.steps}
        for step in ours.steps:
            other = by_place[our_place[id(step.node)]]
            what = f"pass {ours.index}, {step.node.name}"
            for g, h in zip(step.grads_in, other.grads_in, strict=True):
                assert_same_numbers(g, h, f"grad into {what}")
            for (_, nr, g), (_, nr2, h) in zip(step.grads_out, other.grads_out, strict=True):
                assert nr == nr2
                assert_same_numbers(g, h, f"grad sent by {what}")


def assert_same_accumulations(mine, theirs):
    assert set(mine.accumulations) == set(theirs.accumulations)
    for name, contributions in mine.accumulations.items():
        real = theirs.accumulations[name]
        assert len(contributions) == len(real), name
        for ours, other in zip(contributions, real):
            assert ours.pass_index == other.pass_index
            assert (ours.step is None) == (other.step is None), name
            assert_same_numbers(ours.grad, other.grad, f"into {name}")
            assert_same_numbers(ours.total, other.total, f"total of {name}")


def assert_same_trace(mine, theirs):
    """Same graphs, same variables (values and grads), same backward steps in the same order,
    same contributions into leaves, same passes."""
    assert theirs.engine[0] == "torch" and mine.engine is None
    for ours, real in zip(mine.passes, theirs.passes, strict=True):
        assert graph_below(ours.roots[0][0]) == graph_below(real.roots[0][0]), ours.index
    variables = [n for n, t in mine.tensors.items() if t.named_by == "variable"]
    assert variables and set(variables) <= set(theirs.tensors)
    for name in variables:
        ours, real = mine.tensors[name], theirs.tensors[name]
        assert (ours.role, ours.shape) == (real.role, real.shape), name
        assert_same_numbers(ours.value, real.value, f"value of {name}")
        assert_same_numbers(ours.grad, real.grad, f"grad of {name}")
        if ours.grad_fn is not None:
            assert graph_below(ours.grad_fn) == graph_below(real.grad_fn), name
    assert_same_steps(mine, theirs)
    assert_same_accumulations(mine, theirs)
    assert [(p.kind, p.retain_graph, p.create_graph) for p in mine.passes] == [
        (p.kind, p.retain_graph, p.create_graph) for p in theirs.passes
    ]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_the_same_program_gives_the_same_trace_in_both_engines(program):
    mine, _ = record(program, nbgrad)
    theirs, _ = record(program, torch)
    assert_same_trace(mine, theirs)


def test_the_nodes_of_an_inplace_write_into_a_view_show_what_pytorchs_show():
    mine, _ = record(inplace_through_views, nbgrad)
    theirs, _ = record(inplace_through_views, torch)

    def shown(trace):
        kinds = ("AsStridedBackward0", "CopySlices")
        return [(n.name, n.saved) for n in trace.nodes if n.name in kinds]

    assert shown(mine) == shown(theirs)
    assert [name for name, _ in shown(mine)] == [
        "AsStridedBackward0",
        "CopySlices",
        "AsStridedBackward0",
    ]


def backward_ops(trace):
    """The ops run inside backward passes: (pass, op, its node's name, output values)."""
    return [
        (
            op.in_backward,
            op.op,
            op.node.name if op.node else None,
            [numbers(o.value) for o in op.outputs if o.value is not None],
        )
        for op in trace.ops
        if op.in_backward is not None
    ]


def test_the_ops_of_a_custom_functions_backward_are_recorded_as_in_nbgrad():
    """A plain backward records the ops a custom Function's Python backward runs (in its pass,
    making no node), and no op of PyTorch's own formulas, as nbgrad's recorder does."""
    mine, _ = record(custom_function, nbgrad)
    theirs, _ = record(custom_function, torch)
    assert_same_trace(mine, theirs)
    ours, real = backward_ops(mine), backward_ops(theirs)
    assert [o[:3] for o in real] == [o[:3] for o in ours] == [(0, "mul", None), (0, "mul", None)]
    for op, other in zip(ours, real):
        assert same_values(op[3], other[3])
    without, _ = record(softmax_and_reductions, torch)
    assert backward_ops(without) == []


@pytest.mark.parametrize("program", DOUBLE_BACKWARD, ids=[p.__name__ for p in DOUBLE_BACKWARD])
def test_the_ops_of_a_double_backward_are_recorded_as_in_nbgrad(program):
    mine, _ = record(program, nbgrad)
    theirs, ran = record(program, torch)
    assert_same_trace(mine, theirs)
    ours, real = backward_ops(mine), backward_ops(theirs)
    assert ours and [o[:3] for o in ours] == [o[:3] for o in real]
    # nbgrad runs a node's formulas in PyTorch's order: the same ops, in the same order, with
    # the same values.
    for op, other in zip(ours, real):
        assert same_values(op[3], other[3]), (op, other)
    for op in theirs.ops:
        if op.in_backward is not None and op.node is not None:
            assert op.node.op is op and op.node.observed and op.line is not None
            assert op.outputs[0].grad_fn is op.node
    plain = program(torch)  # recording changed no value and no grad
    for name, value in plain.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(value, ran[name]), name
            if value.is_leaf:
                assert torch.equal(value.grad, ran[name].grad), name


def same_values(a, b):
    return len(a) == len(b) and all(np.allclose(u, v, rtol=1e-5, atol=1e-6) for u, v in zip(a, b))


def cube_then_grad_of_grad(T):
    x = T.tensor(2.0, requires_grad=True)
    y = x**3
    (g,) = T.autograd.grad(y, x, create_graph=True)
    g.backward()
    return locals()


def test_pytorchs_own_formula_is_recorded_and_nbgrads_is_the_same():
    """PyTorch differentiates ``x ** 3`` as ``grad * (3 * x.pow(2))`` (the number makes a
    MulBackward1); nbgrad's formula is written in the same order: both traces show the same
    graph, with the same numbers."""
    mine, _ = record(cube_then_grad_of_grad, nbgrad)
    theirs, ran = record(cube_then_grad_of_grad, torch)
    made = [op for op in theirs.ops if op.in_backward == 0]
    assert [(op.op, op.node.name) for op in made] == [
        ("pow", "PowBackward0"),
        ("mul", "MulBackward1"),
        ("mul", "MulBackward0"),
    ]
    assert [float(op.outputs[0].value) for op in made] == [4.0, 12.0, 12.0]
    assert made[0].inputs == [theirs.tensors["x"], 2.0] and made[1].inputs[1] == 3.0
    assert made[2].outputs == [theirs.tensors["g"]] and theirs.tensors["g"].role == "output"
    pow_node, mul_node = made[0].node, made[1].node
    assert pow_node.saved_tensors == {"self": theirs.tensors["x"]}
    assert pow_node.saved["exponent"] == 2.0 and mul_node.saved == {"other": 3.0}
    assert graph_of(theirs, "g") == [
        ("MulBackward0", [None, (1, 0)]),
        ("MulBackward1", [(2, 0)]),
        ("PowBackward0", [(3, 0)]),
        ("AccumulateGrad(x)", []),
    ]
    assert graph_of(mine, "g") == graph_of(theirs, "g")
    assert step_labels(theirs) == [
        "PowBackward0",
        "MulBackward0",
        "MulBackward1",
        "PowBackward0",
        "AccumulateGrad(x)",
    ]
    assert step_labels(mine) == step_labels(theirs)
    assert_same_accumulations(mine, theirs)
    assert float(theirs.tensors["x"].grad) == float(ran["x"].grad) == 12.0


def backward_then_backward_of_the_grad(T):
    x = T.tensor([0.5, 2.0], requires_grad=True)
    y = (x * x * x).sum()
    y.backward(create_graph=True)
    x.grad.sum().backward()
    return locals()


# PyTorch warns that backward(create_graph=True) makes a cycle through x.grad: this program
# means it.
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_a_grad_made_by_backward_with_create_graph_is_a_copy_in_both_engines():
    """PyTorch's AccumulateGrad stores a copy of the first gradient when it builds a graph
    (``x.grad.grad_fn`` is ``CopyBackwards``), and so does nbgrad's. The copy is the engine's
    bookkeeping, not a formula: an opaque node, no op. Below it, the same graph, steps and
    numbers in both traces."""
    mine, _ = record(backward_then_backward_of_the_grad, nbgrad)
    theirs, ran = record(backward_then_backward_of_the_grad, torch)
    copy = theirs.passes[1].roots[0][0].next[0][0]
    our_copy = mine.passes[1].roots[0][0].next[0][0]
    for made in (copy, our_copy):
        assert made.name == "CopyBackwards" and not made.observed and made.op is None
        assert made.next[0] is None or made.next[0][0] is None
    assert graph_below(copy) == graph_below(our_copy)
    assert graph_below(theirs.passes[0].roots[0][0]) == graph_below(mine.passes[0].roots[0][0])
    steps = theirs.backward_steps
    # The second pass runs the two MulBackward0 of each x * x in opposite orders (see
    # ``assert_same_steps``): its steps are matched by their node's place below the copy.
    assert sorted(node_label(s.node) for s in steps) == sorted(step_labels(mine))
    our_place = walk(our_copy)[1]
    real_place = walk(copy)[1]
    by_place = {real_place.get(id(s.node), "root"): s for s in steps if s.pass_index == 1}
    pairs = list(zip(mine.passes[0].steps, theirs.passes[0].steps, strict=True))
    pairs += [(s, by_place[our_place.get(id(s.node), "root")]) for s in mine.passes[1].steps]
    for ours, real in pairs:
        assert ours.node.name == real.node.name
        for g, h in zip(ours.grads_in, real.grads_in, strict=True):
            assert_same_numbers(g, h, f"grad into {ours.node.name}")
        for (_, _, g), (_, _, h) in zip(ours.grads_out, real.grads_out, strict=True):
            assert_same_numbers(g, h, f"grad sent by {ours.node.name}")
    assert [(op.op, op.in_backward) for op in theirs.ops if op.in_backward is not None] == [
        (op.op, op.in_backward) for op in mine.ops if op.in_backward is not None
    ]
    assert_same_accumulations(mine, theirs)
    np.testing.assert_allclose(theirs.tensors["x"].grad, ran["x"].grad.detach().numpy())
    np.testing.assert_allclose(theirs.tensors["x"].grad, [0.75 + 3.0, 12.0 + 12.0])


def backward_into_a_non_leaf(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    c = (b * b).sum()
    c.backward(inputs=[b], retain_graph=True)
    c.backward(inputs=[b])
    return locals()


def test_backward_into_a_non_leaf_logs_its_accumulations():
    """``backward(inputs=[b])`` sums into the non-leaf's ``.grad``: logged after each pass,
    with no step, as nbgrad logs it. PyTorch runs b's grad_fn for it (it sends nothing on:
    a is not an input); nbgrad's engine does not run that node."""
    mine, _ = record(backward_into_a_non_leaf, nbgrad)
    theirs, ran = record(backward_into_a_non_leaf, torch)
    contributions = theirs.accumulations["b"]
    assert [(a.pass_index, a.step) for a in contributions] == [(0, None), (1, None)]
    assert [numbers(a.grad).tolist() for a in contributions] == [[6.0, 12.0], [6.0, 12.0]]
    assert [numbers(a.total).tolist() for a in contributions] == [[6.0, 12.0], [12.0, 24.0]]
    assert theirs.accumulation_log == contributions and "a" not in theirs.accumulations
    assert numbers(theirs.tensors["b"].grad).tolist() == ran["b"].grad.tolist() == [12.0, 24.0]
    assert ran["a"].grad is None and theirs.tensors["a"].grad is None
    # nbgrad logs the same contributions (its totals count b's retained grad twice: an
    # engine fault of retain_grad with backward(inputs=...), not of the recording).
    assert [(a.pass_index, a.step) for a in mine.accumulations["b"]] == [(0, None), (1, None)]
    for ours, real in zip(mine.accumulations["b"], contributions, strict=True):
        assert_same_numbers(ours.grad, real.grad, "into b")
    b_node = theirs.tensors["b"].grad_fn
    for backward_pass in theirs.passes:
        *formula, last = backward_pass.steps
        assert last.node is b_node and [g for _, _, g in last.grads_out] == [None, None]
        assert_same_numbers(last.grads_in[0], [6.0, 12.0], "grad into b's node")
    assert [node_label(s.node) for s in theirs.backward_steps if s.node is not b_node] == (
        step_labels(mine)
    )


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


def test_an_exception_inside_a_double_backward_removes_the_dispatch_mode_and_hooks():
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    def failing(T):
        class Faulty(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                raise ValueError("in backward")

        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = (Faulty.apply(x) * x.exp()).sum()
        T.autograd.grad(y, x, create_graph=True)

    with pytest.raises(ValueError, match="in backward"):
        record(failing, torch)
    assert not _get_current_dispatch_mode_stack()
    assert not torch.overrides._get_current_function_mode_stack()
    # The graph made while recording runs unrecorded: no pre- or post-hook of the recorder.
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    trace, ran = record(lambda T: {"x": x, "y": (x.exp() * x).sum()}, torch)
    (g,) = torch.autograd.grad(ran["y"], x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (x.exp() * (x + 2)).detach().numpy(), rtol=1e-6)
    assert not trace.passes and not _get_current_dispatch_mode_stack()


def test_a_limit_reached_inside_an_op_leaves_no_mode_behind():
    def program(T):
        x = T.tensor(1.0, requires_grad=True)
        for _ in range(10):
            x = x * 1.5
        return locals()

    trace, variables = record(program, torch, max_nodes=4)
    assert "max_nodes" in trace.truncated and variables["x"].item() == pytest.approx(1.5**10)
    assert not torch.overrides._get_current_function_mode_stack()


def test_both_recorders_check_options_and_refuse_to_nest_alike():
    from nbgrad.trace import RecordingError
    from nbgrad.trace.torch_bridge import ENGINE

    source = source_for(__file__)
    for recorder_class in (Recorder, TorchRecorder):
        with pytest.raises(ValueError, match="max_nodes must be at least 1, got 0"):
            recorder_class(source, max_nodes=0)
        with pytest.raises(ValueError, match="max_passes must be at least 0, got -1"):
            recorder_class(source, sys._getframe(), None, 10, -1)
    # One recording at a time, whichever engine each records.
    outer = Recorder(source, base_frame=sys._getframe(), source_kind="file").start()
    try:
        with pytest.raises(RecordingError, match="do not nest"):
            TorchRecorder(source, base_frame=sys._getframe(), source_kind="file").start()
    finally:
        trace = outer.finish()
    assert trace.complete and trace.engine is None
    assert not torch.overrides._get_current_function_mode_stack()
    inner = TorchRecorder(source, sys._getframe(), max_passes=0).start()
    trace = inner.finish()
    assert trace.complete and trace.engine == ENGINE


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


def test_the_engine_of_an_edited_cell_follows_its_new_statements():
    """Each statement's analysis is kept for the next cell that has it: a cell edited in one
    place is judged on all its statements, old and new."""
    import ast

    from nbgrad.trace.engines import detect_engine

    namespace = {"torch": nbgrad, "w": torch.ones(2)}
    cells = [
        ("y = torch.ones(2)\nz = y * 2\n", "nbgrad"),
        ("import torch\ny = torch.ones(2)\nz = y * 2\n", "torch"),  # an import added
        ("y = torch.ones(2)\nz = y * w\n", "torch"),  # reads a PyTorch tensor
        ("w = torch.ones(2)\ny = torch.ones(2)\nz = y * w\n", "nbgrad"),  # makes its own w
        ("y = torch.ones(2)\nz = y * 2\n", "nbgrad"),
    ]
    for text, engine in cells:
        assert detect_engine(ast.parse(text), namespace, text) == engine, text


def test_before_pytorch_is_imported_only_an_import_of_it_makes_a_cell_pytorchs(monkeypatch):
    import ast

    from nbgrad.trace.engines import detect_engine

    monkeypatch.delitem(sys.modules, "torch")  # as in a kernel that never imported it
    namespace = {"torch": nbgrad}
    cells = [
        ("y = torch.ones(2)\nz = y * 2\n", "nbgrad"),  # torch named, nothing imported
        ("import numpy as np\ny = torch.ones(2)\n", "nbgrad"),  # an import, not of torch
        ("import nbgrad as torch\ny = torch.ones(2)\n", "nbgrad"),
        ("from torch import nn\nlayer = nn.Linear(2, 2)\n", "torch"),
        ("import numpy, torch\ny = torch.ones(2)\n", "torch"),
    ]
    for text, engine in cells:
        assert detect_engine(ast.parse(text), namespace, text) == engine, text


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


def test_a_torch_cell_with_a_double_backward_shows_the_backward_ops(shell):
    result = shell.run_cell(
        "%%autograd --no-show\n"
        "import torch\n"
        "x = torch.tensor([0.5, 2.0], requires_grad=True)\n"
        "y = (x.sin() * x).sum()\n"
        "(g,) = torch.autograd.grad(y, x, create_graph=True)\n"
        "(g * g).sum().backward()\n"
    )
    assert result.success
    trace = nbgrad.last_trace()
    data = json.loads(trace.to_json())
    in_backward = [op for op in data["ops"] if op.get("in_backward") == 0]
    assert [op["op"] for op in in_backward] == ["expand", "mul", "mul", "cos", "mul"]
    assert all(op["line"] == 5 for op in in_backward)
    nodes = {node["id"]: node["name"] for node in data["nodes"]}
    assert [nodes.get(op.get("node")) for op in in_backward] == [
        None,
        "MulBackward0",
        "MulBackward0",
        "CosBackward0",
        "MulBackward0",
    ]
    # g = d/dx sum(sin(x) * x) = sin x + x cos x, and d/dx sum(g * g) = 2 g g'
    x = shell.user_ns["x"].detach().numpy().astype(np.float64)
    g = np.sin(x) + x * np.cos(x)
    expected = 2 * g * (2 * np.cos(x) - x * np.sin(x))
    np.testing.assert_allclose(trace.tensors["x"].grad, expected, rtol=1e-5)


def test_recording_does_not_run_saved_tensor_hooks_more():
    """PyTorch reads a hooked saved tensor only through the user's unpack hook: the recorder
    leaves such tensors unread (shown as packed), so the hook runs as often as unrecorded."""
    calls = []

    def unpack_counted(packed):
        calls.append(1)
        return packed

    def program():
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, unpack_counted):
            b = a * a
            c = b.exp()
        c.sum().backward()
        return a

    plain_grad = program().grad.tolist()
    plain_calls, calls[:] = len(calls), []
    with nbgrad.record(engine="torch") as trace:
        recorded_grad = program().grad.tolist()
    assert len(calls) == plain_calls == 3 and recorded_grad == plain_grad
    assert trace.node("MulBackward0").saved == {"other": PACKED, "self": PACKED}
    assert trace.node("SumBackward0").saved == {"self_sym_sizes": (2,)}


def _grad_of_one_input(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w * 2).sum()
    (gx,) = T.autograd.grad(y, [x])
    return locals()


def test_autograd_grad_of_one_input_sends_no_gradient_to_the_others():
    """PyTorch's nodes compute no gradient for an edge the pass does not need: the step of
    ``x * w`` sends x its gradient and w none, in both engines' traces (found by the op helpers:
    nbgrad's showed w's too)."""
    sent = []
    for T in (nbgrad, torch):
        trace, _ = record(_grad_of_one_input, T)
        sent.append(
            [
                [None if grad is None else grad.tolist() for _, _, grad in step.grads_out]
                for step in trace.backward_steps
            ]
        )
    assert sent[0] == sent[1] == [[[1.0, 1.0]], [[2.0, 2.0], None], [[6.0, 8.0], None]]
