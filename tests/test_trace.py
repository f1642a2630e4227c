"""Recording with ``nbgrad.record()``: what a trace holds for known programs.

The %%autograd magic records the same way; its own tests (IPython, a real kernel) are in
test_magic.py and test_record_notebook.py.
"""

import json
import warnings

import numpy as np
import pytest

import nbgrad
from nbgrad.autograd import observe
from nbgrad.trace import ArraySummary, RecordingError, record


@pytest.fixture(autouse=True)
def _no_listener_left():
    yield
    assert not observe.op_listeners and not observe.node_listeners
    assert not observe.accumulate_listeners, "a recording left a listener behind"


def small_program():
    """The README's example, recorded."""
    with record() as trace:
        a = nbgrad.tensor(2.0, requires_grad=True)
        b = nbgrad.tensor(3.0, requires_grad=True)
        c = a + b
        d = nbgrad.tensor(4.0, requires_grad=True)
        e = c * d
        e.backward()
    return trace, (a, b, c, d, e)


def step_names(trace):
    return [
        step.node.name
        if step.node.variable is None
        else f"{step.node.name}({step.node.variable.name})"
        for step in trace.backward_steps
    ]


# --- the forward record ------------------------------------------------------------------------


def test_tensors_carry_the_names_of_the_variables():
    trace, _ = small_program()
    assert list(trace.tensors) == ["a", "b", "c", "d", "e"]
    assert {name: t.named_by for name, t in trace.tensors.items()} == dict.fromkeys(
        "abcde", "variable"
    )
    roles = {name: t.role for name, t in trace.tensors.items()}
    assert roles == {"a": "leaf", "b": "leaf", "c": "intermediate", "d": "leaf", "e": "output"}


def test_values_grads_and_grad_fns():
    trace, _ = small_program()
    e = trace.tensors["e"]
    assert float(e.value) == 20.0 and e.shape == () and not e.is_leaf
    assert e.grad_fn.name == "MulBackward0"
    assert [(n.name if n else None, nr) for n, nr in e.grad_fn.next] == [
        ("AddBackward0", 0),
        ("AccumulateGrad", 0),
    ]
    assert e.grad_fn.next[1][0].variable is trace.tensors["d"]
    assert {name: float(t.grad) for name, t in trace.tensors.items()} == {
        "a": 4.0,
        "b": 4.0,
        "c": 4.0,
        "d": 5.0,
        "e": 1.0,
    }
    assert trace.tensors["a"].is_leaf and trace.tensors["a"].grad_fn is None


def test_saved_buffers_formulas_and_lines():
    trace, _ = small_program()
    mul = trace.node("MulBackward0")
    assert mul.saved_tensors == {"self": trace.tensors["c"], "other": trace.tensors["d"]}
    assert float(mul.saved["self"]) == 5.0 and float(mul.saved["other"]) == 4.0
    assert mul.formulas == {"self": "grad * other", "other": "grad * self"}
    assert mul.op.code == "e = c * d" and mul.op.op == "mul"
    assert trace.node("AddBackward0").saved == {"alpha": 1}
    assert trace.source_lines[mul.op.line] == "e = c * d"


def test_line_and_span_of_an_op_are_known_while_the_block_runs():
    import inspect

    a = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    with record() as trace:
        b = (a *
             3).sum()  # fmt: skip
        first = trace.ops[0]
        line, span = first.line, first.span
        assert not trace.complete
    here = inspect.currentframe().f_code.co_firstlineno
    text = inspect.getsource(test_line_and_span_of_an_op_are_known_while_the_block_runs)
    mul_line = here + text.splitlines().index("        b = (a *")
    assert first.op == "mul" and line == mul_line
    # from ``a`` (col 13) to ``3`` (col 14) on the next line
    assert span == (mul_line, 13, mul_line + 1, 14)
    # what was read while recording is what the finished trace keeps
    assert (first.line, first.span) == (line, span) and first.code == "b = (a *"
    assert b.item() == 9.0


def test_every_intermediate_keeps_its_grad_without_a_warning():
    _, (a, b, c, d, e) = small_program()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(c.grad) == 4.0 and float(e.grad) == 1.0
    assert c.retains_grad


def test_unnamed_intermediates_are_labelled_by_their_expression():
    with record() as trace:
        a = nbgrad.tensor([1.0, 2.0], requires_grad=True)
        loss = (a * 3).sum() + nbgrad.tensor(1.5)
        loss.backward()
    del a, loss
    names = {t.name: t.named_by for t in trace.tensors.values()}
    assert names["a * 3"] == "expression"
    assert names["(a * 3).sum()"] == "expression"
    assert names["nbgrad.tensor(1.5)"] == "operand"
    assert names["loss"] == "variable"


def test_containers_and_repeated_assignments():
    with record() as trace:
        xs = [nbgrad.tensor(float(i), requires_grad=True) for i in range(2)]
        params = {"w": nbgrad.tensor(2.0, requires_grad=True)}
        for x in xs:
            y = x * params["w"]
        y.backward()
    del x
    assert {"xs[0]", "xs[1]", "params['w']"} <= set(trace.tensors)
    # The loop's first ``y`` no longer has a variable: it is numbered, the live one is ``y``.
    assert trace.tensors["y#1"].named_by == "assignment"
    assert trace.tensors["y"].named_by == "variable"


# --- the backward log --------------------------------------------------------------------------


def test_backward_steps_in_engine_order_with_grads_in_and_out():
    trace, _ = small_program()
    assert len(trace.passes) == 1 and trace.passes[0].code == "e.backward()"
    first = trace.backward_steps[0]
    assert first.node.name == "MulBackward0"
    assert [float(g) for g in first.grads_in] == [1.0]
    assert [(n.name, float(g)) for n, _, g in first.grads_out] == [
        ("AddBackward0", 4.0),
        ("AccumulateGrad", 5.0),
    ]
    assert first.freed and first.node.freed_at == 0  # no retain_graph: buffers freed


def test_backward_order_matches_pytorch(torch):
    """The order of the recorded steps is the order PyTorch runs the same graph."""
    trace, _ = small_program()
    order = []
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    d = torch.tensor(4.0, requires_grad=True)
    e = (a + b) * d
    names = {id(a): "a", id(b): "b", id(d): "d"}
    _hook_every_node(e.grad_fn, order, names)
    e.backward()
    assert step_names(trace)[:3] == order[:3]
    assert sorted(step_names(trace)[3:]) == sorted(order[3:])


def test_backward_order_matches_pytorch_for_ready_leaves(torch):
    trace, _ = small_program()
    order = []
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    d = torch.tensor(4.0, requires_grad=True)
    e = (a + b) * d
    _hook_every_node(e.grad_fn, order, {id(a): "a", id(b): "b", id(d): "d"})
    e.backward()
    assert step_names(trace) == order


def _hook_every_node(fn, order, leaf_names, seen=None):
    seen = set() if seen is None else seen
    if fn is None or fn in seen:
        return
    seen.add(fn)
    if hasattr(fn, "variable"):
        label = f"AccumulateGrad({leaf_names[id(fn.variable)]})"
    else:
        label = fn.name()
    fn.register_prehook(lambda grads, label=label: order.append(label))
    for child, _ in fn.next_functions:
        _hook_every_node(child, order, leaf_names, seen)


def test_a_tensor_used_twice_sends_two_grads_and_accumulates_once():
    with record() as trace:
        x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward()
    mul = trace.node("MulBackward0")
    (step,) = mul.steps
    sent = [(n.name, list(g)) for n, _, g in step.grads_out]
    assert sent == [("AccumulateGrad", [1.0, 2.0]), ("AccumulateGrad", [1.0, 2.0])]
    (only,) = trace.accumulations["x"]
    assert list(only.grad) == [2.0, 4.0] and list(only.total) == [2.0, 4.0]


def test_two_backward_calls_accumulate_with_running_totals():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    with record() as trace:
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
    assert [p.retain_graph for p in trace.passes] == [True, False]
    contributions = [(list(c.grad), list(c.total), c.pass_index) for c in trace.accumulations["x"]]
    assert contributions == [([2.0, 4.0], [2.0, 4.0], 0), ([2.0, 4.0], [4.0, 8.0], 1)]
    assert list(trace.tensors["x"].grad) == [4.0, 8.0]
    mul = trace.node("MulBackward0")
    assert [s.freed for s in mul.steps] == [False, True]
    assert mul.freed_at == mul.steps[1].index
    # The second pass's steps come after the first's, each AccumulateGrad step linked.
    assert [c.step for c in trace.accumulations["x"]] == [
        s.index for s in trace.backward_steps if s.node.name == "AccumulateGrad"
    ]


def test_grad_pass_and_create_graph():
    x = nbgrad.tensor(3.0, requires_grad=True)
    with record() as trace:
        y = x**3
        (g,) = nbgrad.autograd.grad(y, x, create_graph=True)
        g.backward()
    assert [p.kind for p in trace.passes] == ["grad", "backward"]
    assert trace.passes[0].create_graph
    assert any(op.in_backward == 0 for op in trace.ops)  # the formula's ops, differentiable
    assert float(x.grad) == 18.0


def test_backward_with_inputs_is_a_backward_pass():
    w = nbgrad.tensor(2.0, requires_grad=True)
    v = nbgrad.tensor(5.0, requires_grad=True)
    with record() as trace:
        h = w * 3
        y = h * v
        y.backward(inputs=[w], retain_graph=True)
        y.backward(inputs=[h])
    assert [p.kind for p in trace.passes] == ["backward", "backward"]
    first, second = (trace.accumulations["w"], trace.accumulations["h"])
    assert [(a.pass_index, float(a.grad)) for a in first] == [(0, 15.0)]
    # into a non-leaf, backward(inputs=...) accumulates after its pass, outside any step
    assert [(a.pass_index, a.step, float(a.grad)) for a in second] == [(1, None, 5.0)]
    assert v.grad is None


def test_a_pass_inside_a_pass_gets_its_own_steps():
    """autograd.grad called from a hook while backward runs: two passes, each step in its own."""
    x = nbgrad.tensor(2.0, requires_grad=True)
    u = nbgrad.tensor(3.0, requires_grad=True)
    with record() as trace:
        h = x * x
        inner = u * u
        h.register_hook(lambda grad: grad * nbgrad.autograd.grad(inner, u)[0])
        y = h * 1.0
        y.backward()
    assert [p.kind for p in trace.passes] == ["backward", "grad"]
    by_pass = [[s.node.name for s in p.steps] for p in trace.passes]
    assert by_pass[1] == ["MulBackward0"]  # inner's node, run by the nested grad()
    assert by_pass[0][0] == "MulBackward0" and by_pass[0][-1] == "AccumulateGrad"
    assert [s.pass_index for s in trace.backward_steps] == [0, 1, 0, 0]
    assert float(x.grad) == 4.0 * 6.0


def test_a_failed_pass_ends_and_the_next_forward_is_recorded():
    x = nbgrad.tensor(2.0, requires_grad=True)
    with record() as trace:
        y = x * 3
        handle = y.register_hook(lambda grad: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            y.backward()
        handle.remove()
        z = x * 4  # a forward op after the failed pass: not "in backward"
        z.backward()
    assert len(trace.passes) == 2
    assert trace.ops[-1].in_backward is None and trace.ops[-1].outputs[0].name == "z"
    assert [s.pass_index for s in trace.backward_steps] == [1, 1]
    assert float(x.grad) == 4.0


def test_custom_function_calls_are_recorded_as_ops():
    class Double(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = nbgrad.tensor(1.0, requires_grad=True)
    with record() as trace:
        y = Double.apply(x) + 1
        y.backward()
    node = trace.node("DoubleBackward")
    assert node.observed and node.steps
    (call,) = [op for op in trace.ops if op.op == "Double"]
    assert call.node is node
    assert float(x.grad) == 2.0


class Square(nbgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        squared = x * x
        return squared + 0

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x


def test_ops_inside_a_custom_function_are_marked_as_run_inside_it():
    x = nbgrad.tensor([1.0, 3.0], requires_grad=True)
    with record() as trace:
        y = Square.apply(x)
        z = (y * 2).sum()
        z.backward()
    call = next(op for op in trace.ops if op.op == "Square")
    mul, add = [op for op in trace.ops if op.function is call]
    assert (mul.op, add.op) == ("mul", "add")
    assert call.function is None and trace.ops[-1].function is None
    # The forward's ops ran under no_grad: no node; their values are kept all the same.
    assert mul.node is None and list(mul.outputs[0].value) == [1.0, 9.0]
    # The Function's output is its own record, named by the cell's variable.
    (y_record,) = call.outputs
    assert y_record.name == "y" and y_record.grad_fn is call.node
    assert call.node.name == "SquareBackward" and call.node.observed
    assert [(n.name, nr) for n, nr in call.node.next] == [("AccumulateGrad", 0)]
    # ctx.save_for_backward(x) is what its node saved
    assert call.node.saved_tensors == {"tensors[0]": trace.tensors["x"]}
    assert list(trace.tensors["x"].grad) == [4.0, 12.0]
    assert "inside Square.forward" in trace.summary()
    data = trace.to_dict()
    marked = [o for o in data["ops"] if o.get("function") == call.id]
    assert [o["op"] for o in marked] == ["mul", "add"]
    assert data["nodes"][int(call.node.id[1:])]["saved"] == {"tensors[0]": {"tensor": "t0"}}


def test_nested_custom_functions_and_a_function_without_grad():
    class Outer(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return Square.apply(x) * 3

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = nbgrad.tensor(2.0, requires_grad=True)
    with record() as trace:
        y = Outer.apply(x)
        with nbgrad.no_grad():
            q = Square.apply(x)
    outer = next(op for op in trace.ops if op.op == "Outer")
    inner_square, later_square = [op for op in trace.ops if op.op == "Square"]
    assert inner_square.function is outer and inner_square.node is None  # inside no_grad
    assert [op.op for op in trace.ops if op.function is inner_square] == ["mul", "add"]
    assert [op.op for op in trace.ops if op.function is outer] == ["Square", "mul"]
    assert later_square.function is None and later_square.node is None
    assert float(y) == 12.0 and float(q) == 4.0


# --- nn.Module paths ----------------------------------------------------------------------------


class StandInModules:
    """A module system with PyTorch's two global forward hooks, as nbgrad.nn will have."""

    def __init__(self):
        self.pre, self.post = {}, {}

    def register_module_forward_pre_hook(self, hook):
        return _Handle(self.pre, hook)

    def register_module_forward_hook(self, hook, *, always_call=False):
        return _Handle(self.post, hook)


class _Handle:
    def __init__(self, hooks, hook):
        self.hooks, self.key = hooks, object()
        hooks[self.key] = hook

    def remove(self):
        self.hooks.pop(self.key, None)


def test_module_paths_through_global_forward_hooks(monkeypatch):
    import nbgrad.trace.recorder as recorder_module

    system = StandInModules()
    monkeypatch.setattr(recorder_module, "find_hook_home", lambda: system)

    class Module:
        def __init__(self, **children):
            self.children = children

        def named_modules(self, prefix=""):
            yield "", self
            for name, child in self.children.items():
                for sub, module in child.named_modules():
                    yield (f"{name}.{sub}" if sub else name), module

        def named_parameters(self):
            return iter(())

        def __call__(self, x):
            for hook in list(system.pre.values()):
                hook(self, (x,))
            out = self.forward(x)
            for hook in list(system.post.values()):
                hook(self, (x,), out)
            return out

    class Scale(Module):
        def forward(self, x):
            return x * 2

    class Net(Module):
        def forward(self, x):
            return self.children["second"](self.children["first"](x) + 1)

    net = Net(first=Scale(), second=Scale())
    x = nbgrad.tensor(1.0, requires_grad=True)
    with record() as trace:
        y = net(x)
    assert [(op.op, op.module) for op in trace.ops] == [
        ("mul", "net.first"),
        ("add", "net"),
        ("mul", "net.second"),
    ]
    assert trace.modules == {"net": "Net", "net.first": "Scale", "net.second": "Scale"}
    # The modules are written in this file, so their lines label their ops.
    names = [op.outputs[0].name for op in trace.ops]
    assert names == ["x * 2", 'self.children["first"](x) + 1', "y"]
    assert not system.pre and not system.post
    assert float(y) == 6.0


def test_nn_modules_name_their_parameters_and_group_their_ops():
    nn = pytest.importorskip("nbgrad.nn")
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    x = nbgrad.randn(5, 4)
    with record() as trace:
        loss = model(x).pow(2).mean()
        loss.backward()
    assert {"model.0.weight", "model.0.bias", "model.2.weight", "x", "loss"} <= set(trace.tensors)
    assert {op.module for op in trace.ops} >= {"model.0", "model.1", "model.2"}
    assert trace.accumulations["model.0.weight"]
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_a_model_made_inside_the_recording_is_grouped_by_module_path():
    import nbgrad.nn.modules.module as home

    with record() as trace:
        model = nbgrad.nn.Sequential(nbgrad.nn.Linear(4, 3), nbgrad.nn.Tanh())
        head = nbgrad.nn.Linear(3, 1)
        loss = head(model(nbgrad.randn(2, 4))).sum()
        loss.backward()
    assert trace.modules == {
        "model": "Sequential",
        "model.0": "Linear",
        "model.1": "Tanh",
        "head": "Linear",
    }
    grouped = [(op.op, op.module) for op in trace.ops if op.node is not None]
    assert grouped[:3] == [("t", "model.0"), ("addmm", "model.0"), ("tanh", "model.1")]
    assert ("sum", None) in grouped and any(m == "head" for _, m in grouped)
    assert not home._global_forward_pre_hooks and not home._global_forward_hooks


def test_a_forward_that_raises_leaves_its_module():
    class Broken(nbgrad.nn.Module):
        def forward(self, x):
            raise ValueError("broken")

    x = nbgrad.tensor(1.0, requires_grad=True)
    with record() as trace:
        broken = Broken()
        with pytest.raises(ValueError):
            broken(x * 2)
        y = x * 3
    assert [(op.outputs[0].name, op.module) for op in trace.ops] == [("x * 2", None), ("y", None)]
    assert float(y) == 3.0


# --- snapshots and limits ----------------------------------------------------------------------


def test_values_are_snapshots_of_their_moment():
    w = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    with record() as trace:
        y = (w * 2).sum()
        y.backward()
        with nbgrad.no_grad():
            w -= 0.5 * w.grad
        z = (w * 2).sum()
    assert list(trace.tensors["w#1"].value) == [1.0, 2.0]  # before the update
    assert list(trace.tensors["w"].value) == [0.0, 1.0]  # after it
    assert list(trace.tensors["w#1"].grad) == [2.0, 2.0]
    w.data.mul_(10)  # a change after recording leaves the trace as it was
    assert list(trace.tensors["w"].value) == [0.0, 1.0]
    assert float(z) == 2.0


def test_large_arrays_are_summarised_unless_full():
    big = nbgrad.randn(50, 40, requires_grad=True)
    with record() as trace:
        s = (big * 2).sum()
    summary = trace.tensors["big"].value
    assert isinstance(summary, ArraySummary)
    assert summary.shape == (50, 40) and summary.dtype == "float32"
    expected = big.detach().numpy()
    assert summary.mean == pytest.approx(expected.mean(), abs=1e-5)
    assert summary.std == pytest.approx(expected.std(), rel=1e-4)
    assert (summary.min, summary.max) == (expected.min(), expected.max())
    assert summary.preview.shape == (6, 6)
    data = trace.to_dict()
    entry = next(t for t in data["tensors"] if t["name"] == "big")
    assert set(entry["value"]) == {"shape", "dtype", "stats", "preview"}

    with record(full=True) as full:
        s = (big * 2).sum()
    assert np.array_equal(full.tensors["big"].value, expected)
    entry = next(t for t in full.to_dict()["tensors"] if t["name"] == "big")
    assert np.array_equal(full.buffer(entry["value"]["buffer"]), expected)
    assert float(s) == pytest.approx(2 * expected.sum(), rel=1e-4)


@pytest.mark.parametrize("size", [1025, 16 * 1024, 16 * 1024 + 1, 100_000])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64])
def test_summary_statistics_agree_with_numpy_in_float64(size, dtype):
    # sums by a dot product with ones (short arrays) or by rows of 256 (long ones, with a tail)
    rng = np.random.default_rng(size)
    array = (rng.standard_normal(size) * 3 + 0.5).astype(dtype)
    array[7] = -40  # the minimum, at a known place
    exact = array.astype(np.float64)
    summary = ArraySummary(array.reshape(-1, 1))
    assert summary.shape == (size, 1) and summary.dtype == np.dtype(dtype).name
    assert (summary.min, summary.max) == (-40.0, exact.max())
    assert summary.mean == pytest.approx(exact.mean(), rel=1e-5, abs=1e-6)
    assert summary.std == pytest.approx(exact.std(), rel=1e-4)
    assert summary.nonfinite == 0 and summary.preview.shape == (6, 1)


def test_summary_of_an_array_with_nan_and_infinities():
    array = np.arange(2000, dtype=np.float32)
    array[[3, 9]] = np.nan
    array[5] = np.inf
    summary = ArraySummary(array)
    finite = np.delete(array, [3, 5, 9]).astype(np.float64)
    assert summary.nonfinite == 3
    assert (summary.min, summary.max) == (0.0, 1999.0)
    assert summary.mean == pytest.approx(finite.mean()) and summary.std == pytest.approx(
        finite.std()
    )


def test_a_training_loop_records_its_first_steps_then_runs_unrecorded():
    w = nbgrad.randn(3, requires_grad=True)
    steps_run = 0
    with record(max_passes=2) as trace:
        for _ in range(10):
            loss = (w * w).sum()
            loss.backward()
            with nbgrad.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
            steps_run += 1
    assert steps_run == 10
    assert len(trace.passes) == 2 and "max_passes" in trace.truncated
    assert [t.name for t in trace.tensors.values() if t.name.startswith("loss")] == [
        "loss#1",
        "loss#2",
    ]
    assert len(trace.accumulations["w"]) == 2


def _record_a_bit_of_everything():
    """A block with a saved result (relu), a tensor used twice, a custom Function, a module and
    two backward passes: every kind of link between records."""
    model = nbgrad.nn.Linear(3, 2)
    x = nbgrad.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    with record() as trace:
        h = model(x).relu()
        y = Square.apply(h) * h
        y.sum().backward(retain_graph=True)
        y.sum().backward()
    return trace


def test_a_dropped_trace_is_freed_at_once_without_the_garbage_collector():
    import gc
    import weakref

    from nbgrad.trace.api import set_last_trace

    gc.collect()
    gc.disable()  # what the collector would free does not count: it must go by refcounting
    try:
        trace = _record_a_bit_of_everything()
        set_last_trace(None)
        assert trace.backward_steps and trace.accumulations and any(op.function for op in trace.ops)
        records = [*trace.tensors.values(), *trace.ops, *trace.nodes]
        alive = [weakref.ref(r) for r in records]
        del records, trace
        assert [r() for r in alive if r() is not None] == []
    finally:
        gc.enable()


def test_a_record_kept_after_its_trace_keeps_its_values_and_forward_links():
    from nbgrad.trace.api import set_last_trace

    trace = _record_a_bit_of_everything()
    set_last_trace(None)
    relu = trace.node("ReluBackward0")
    h = trace.tensors["h"]
    grad, value = h.grad.copy(), h.value.copy()
    assert h.op is not None and relu.op is not None and relu.steps  # while the trace lives
    del trace
    assert np.array_equal(h.grad, grad) and np.array_equal(h.value, value)
    assert h.grad_fn is relu and [n.name for n, _ in relu.next] == ["AddmmBackward0"]
    assert relu.saved["result"] is h.value
    # The links that pointed back were cut when the trace went (that is what freed it).
    assert (h.op, h.uses, relu.op, relu.steps, relu.saved_tensors) == (None, [], None, [], {})


def test_max_nodes_stops_recording():
    x = nbgrad.tensor(1.0, requires_grad=True)
    with record(max_nodes=5) as trace:
        for _ in range(20):
            x = x * 1.0
    assert len(trace.ops) == 4 and len(trace.nodes) == 5  # 4 MulBackward0, 1 AccumulateGrad
    assert trace.truncated == "stopped at 5 grad_fn nodes (max_nodes)"


def test_max_nodes_counts_grad_fn_nodes_and_operations_whichever_comes_first():
    """The limit keeps both drawings small: the backward graph (grad_fn nodes, AccumulateGrad
    included) and the forward one (operations, those that make no node too); the reason says
    which one stopped it."""
    weights = [nbgrad.ones(2, requires_grad=True) for _ in range(8)]
    with record(max_nodes=10) as trace:
        total = 0
        for w in weights:
            total = total + (w * 2).sum()  # 3 ops, 4 nodes: Mul, Sum, Add and w's AccumulateGrad
    assert (len(trace.ops), len(trace.nodes)) == (7, 10)
    assert trace.truncated == "stopped at 10 grad_fn nodes (max_nodes)"
    with record(max_nodes=10) as trace, nbgrad.no_grad():
        x = nbgrad.ones(3)
        for _ in range(20):
            x = x * 2
    assert (len(trace.ops), len(trace.nodes)) == (10, 0)
    assert trace.truncated == "stopped after 10 operations (max_nodes)"
    assert float(x[0]) == 2.0**20  # the rest ran, unrecorded


# --- faults ------------------------------------------------------------------------------------


def test_an_exception_keeps_the_partial_trace_and_removes_the_listeners():
    a = nbgrad.tensor(1.0, requires_grad=True)
    with pytest.raises(ZeroDivisionError), record() as trace:
        b = a * 2
        b = 1 / 0
    assert trace.error == "ZeroDivisionError: division by zero"
    assert trace.complete and list(trace.tensors) == ["a", "b"]
    assert nbgrad.last_trace() is trace
    assert float(b) == 2.0


def test_keyboard_interrupt_is_handled_like_any_exception():
    a = nbgrad.tensor(1.0, requires_grad=True)
    with pytest.raises(KeyboardInterrupt), record() as trace:
        (a * 2).backward()
        raise KeyboardInterrupt
    assert trace.error.startswith("KeyboardInterrupt") and len(trace.backward_steps) == 2


def test_nested_recording_is_refused():
    with record(), pytest.raises(RecordingError, match="do not nest"), record():
        pass


def test_a_recorder_fault_stops_recording_but_not_the_program(monkeypatch):
    import nbgrad.trace.recorder as recorder_module

    def broken(array, policy):
        raise MemoryError("pretend")

    a = nbgrad.tensor(1.0, requires_grad=True)
    with record() as trace:
        b = a * 2
        monkeypatch.setattr(recorder_module, "snapshot", broken)
        c = b * 3
        c.backward()
    assert float(a.grad) == 6.0
    assert "recorder failed" in trace.truncated


# --- JSON ----------------------------------------------------------------------------------------


def test_json_has_a_version_and_stays_small():
    trace, _ = small_program()
    text = trace.to_json()

    def no_constants(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    data = json.loads(text, parse_constant=no_constants)
    assert data["version"] == 2
    assert {t["name"] for t in data["tensors"]} == {"a", "b", "c", "d", "e"}
    assert len(data["steps"]) == 5 and len(data["accumulations"]) == 3
    graph_nodes = len(data["tensors"]) + len(data["nodes"])
    assert len(text) / graph_nodes < 350  # with a Jacobian and gradient norms per node


def test_json_references_resolve():
    trace, _ = small_program()
    data = trace.to_dict()
    tensors = {t["id"] for t in data["tensors"]}
    nodes = {n["id"] for n in data["nodes"]}
    ops = {o["id"] for o in data["ops"]}
    for t in data["tensors"]:
        assert t.get("grad_fn", "n0") in nodes and t.get("op", "o0") in ops
    for n in data["nodes"]:
        assert all(edge is None or edge[0] in nodes for edge in n["next"])
        assert all(s.get("tensor", "t0") in tensors for s in n["saved"].values())
    for s in data["steps"]:
        assert s["node"] in nodes


def test_non_finite_values_are_json_strings():
    with record() as trace, np.errstate(divide="ignore"):
        x = nbgrad.tensor([1.0, 0.0], requires_grad=True)
        y = x.log()
    data = json.loads(trace.to_json())
    assert next(t for t in data["tensors"] if t["name"] == "y")["value"] == [0.0, "-Infinity"]
    del y


def test_summary_text_has_no_memory_address():
    trace, _ = small_program()
    text = trace.summary()
    assert "0x" not in text and "MulBackward0" in text and "e = c * d" in text
    assert "0x" not in repr(trace)


def test_recording_does_not_run_saved_tensor_hooks_more():
    """Under saved_tensors_hooks the recorder shows the tensors that were packed, without
    reading them back: the user's unpack hook runs as often as without recording."""
    calls = []

    def program():
        a = nbgrad.tensor([1.0, 2.0], requires_grad=True)
        hooks = nbgrad.autograd.graph.saved_tensors_hooks(lambda t: ("box", t), unpack_counted)
        with hooks:
            b = a * a
            c = b.exp()
        c.sum().backward()
        return a

    def unpack_counted(packed):
        calls.append(1)
        return packed[1]

    plain_grad = program().grad.tolist()
    plain_calls, calls[:] = len(calls), []
    with record() as trace:
        recorded_grad = program().grad.tolist()
    assert len(calls) == plain_calls == 3 and recorded_grad == plain_grad
    mul, exp = trace.node("MulBackward0"), trace.node("ExpBackward0")
    assert mul.saved_tensors["self"] is trace.tensors["a"]
    assert exp.saved_tensors["result"] is trace.tensors["c"]
    np.testing.assert_allclose(exp.saved["result"], np.exp([1.0, 4.0]), rtol=1e-6)


# --- completed when first read (what a %%autograd cell does) -------------------------------------

DEFERRED_PROGRAM = """\
nbgrad.manual_seed(0)
model = nbgrad.nn.Sequential(nbgrad.nn.Linear(3, 4), nbgrad.nn.ReLU(), nbgrad.nn.Linear(4, 1))
x = nbgrad.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]])
w = nbgrad.tensor(2.0, requires_grad=True)
c = model(x) * w
loss = (c * c).sum() + nbgrad.tensor(1.0)
loss.backward()
with nbgrad.no_grad():
    w -= 0.1 * w.grad
"""


def _record_program(defer):
    """``DEFERRED_PROGRAM`` recorded as a cell is: its own code, its variables in a dict."""
    import sys

    from nbgrad.trace.recorder import Recorder
    from nbgrad.trace.source import Source

    filename = "<deferred completion test>"
    namespace = {"nbgrad": nbgrad}
    code = compile(DEFERRED_PROGRAM, filename, "exec")
    recorder = Recorder(Source(filename, DEFERRED_PROGRAM), base_frame=sys._getframe())
    recorder.start()
    try:
        exec(code, namespace)
    finally:
        trace = recorder.finish([namespace], defer=defer)
    return trace, namespace


def _everything_named(trace):
    return (
        [(name, r.named_by, r.role, r.aliases) for name, r in trace.tensors.items()],
        [(op.op, op.line, op.code, op.module) for op in trace.ops],
        [p.code for p in trace.passes],
        {
            name: [float(np.sum(a.total)) for a in items]
            for name, items in trace.accumulations.items()
        },
        trace.source_lines,
        trace.modules,
    )


def test_a_trace_completed_when_first_read_is_the_trace_completed_at_once():
    eager, _ = _record_program(defer=False)
    deferred, _ = _record_program(defer=True)
    assert "tensors" not in vars(deferred)  # held aside: names, roles and lines are not given yet
    assert _everything_named(deferred) == _everything_named(eager)
    assert deferred.to_json() == eager.to_json()
    # Names of every kind: variables, an earlier version, a module's output, labels, operands.
    assert [(name, r.named_by) for name, r in deferred.tensors.items()][8:] == [
        ("model.2.bias", "variable"),
        ("model(x)", "expression"),
        ("w#1", "version"),
        ("c", "variable"),
        ("c * c", "expression"),
        ("(c * c).sum()", "expression"),
        ("nbgrad.tensor(1.0)", "operand"),
        ("loss", "variable"),
        ("w.grad", "operand"),
        ("0.1 * w.grad", "expression"),
        ("w", "variable"),
    ]
    assert deferred.tensors["model.1(...)"].named_by == "module"


def test_names_are_the_variables_as_they_were_when_recording_ended():
    eager, _ = _record_program(defer=False)
    deferred, namespace = _record_program(defer=True)
    # The program goes on before anyone reads the trace: the variables change.
    namespace["renamed"] = namespace.pop("loss")
    namespace["c"] = None
    namespace["x"] = nbgrad.tensor(0.0)
    del namespace["model"]
    assert list(deferred.tensors) == list(eager.tensors)
    assert deferred.tensors["loss"].role == "output" and "renamed" not in deferred.tensors
    assert (
        deferred.modules
        == eager.modules
        == {
            "model": "Sequential",
            "model.0": "Linear",
            "model.1": "ReLU",
            "model.2": "Linear",
        }
    )


def test_a_trace_never_read_is_freed_without_the_garbage_collector():
    import gc
    import tracemalloc

    _record_program(defer=True)  # warm up
    gc.collect()
    gc.disable()  # a cycle would keep each trace (and its arrays) until a collection
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(30):
            trace, _ = _record_program(defer=True)
            del trace
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
    # One trace of this program with its records is about 40 KB: 30 kept would be 1.2 MB.
    assert grown < 300_000, grown


def test_a_trace_completed_when_read_pickles_and_copies_completed():
    import copy
    import pickle

    deferred, _ = _record_program(defer=True)
    copied = copy.copy(deferred)
    assert "loss" in copied.tensors and "loss" in deferred.tensors
    assert list(pickle.loads(pickle.dumps(_record_program(defer=True)[0])).tensors) == list(
        deferred.tensors
    )


def test_recording_defers_full_collections_and_gives_the_thresholds_back():
    # Issue 16: full collections would walk the growing trace again and again; they wait until
    # the recording ends, and the collector's own thresholds come back, also after an error.
    import gc

    before = gc.get_threshold()
    with nbgrad.record():
        during = gc.get_threshold()
        (nbgrad.ones(2, requires_grad=True) * 2).sum().backward()
    assert during[:2] == before[:2] and during[2] > 10**6
    assert gc.get_threshold() == before
    with pytest.raises(ValueError), nbgrad.record():
        raise ValueError("inside")
    assert gc.get_threshold() == before
