"""The profiler: events for every table op and backward node, PyTorch's names and table."""

import json

import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch


def profiled(T, record_shapes=False):
    x = T.ones(10, requires_grad=True)
    y = T.full((10,), 2.0)
    with T.autograd.profiler.profile(record_shapes=record_shapes) as prof:
        with T.autograd.profiler.record_function("block"):
            for _ in range(3):
                z = (x * y).exp().sum()
        z.backward()
    return prof


def test_calls_are_counted_as_pytorch_counts_them():
    mine = {e.key: e.count for e in profiled(nbgrad).key_averages()}
    theirs = {e.key: e.count for e in profiled(torch).key_averages()}
    # PyTorch's backward nodes run aten ops (MulBackward0's aten::mul); nbgrad's plain backward
    # computes its formulas in NumPy, with no op events inside a node.
    assert mine["aten::mul"] == 3
    for name in (
        "block",
        "aten::exp",
        "aten::sum",
        "autograd::engine::evaluate_function: SumBackward0",
        "SumBackward0",
        "autograd::engine::evaluate_function: ExpBackward0",
        "ExpBackward0",
        "MulBackward0",
        "torch::autograd::AccumulateGrad",
        "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
    ):
        assert mine[name] == theirs[name], name


def test_times_add_up():
    prof = profiled(nbgrad)
    events = prof.function_events
    assert all(e.self_cpu_time_total >= 0 for e in events)
    assert all(e.self_cpu_time_total <= e.cpu_time_total + 1e-9 for e in events)
    block = next(e for e in events if e.name == "block")
    inside = [e for e in events if e.start_us >= block.start_us and e.end_us <= block.end_us]
    assert sum(e.self_cpu_time_total for e in inside) <= block.cpu_time_total + 1e-6
    averages = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in averages)
    assert (
        total
        <= sum(e.cpu_time_total for e in events if e.name == "block")
        + sum(e.cpu_time_total for e in events if e.name.startswith("autograd::engine"))
        + 1e-6
    )
    assert averages.table().splitlines()[-1].startswith("Self CPU time total: ")


def test_table_has_pytorchs_layout():
    mine = profiled(nbgrad).key_averages().table(sort_by="self_cpu_time_total", row_limit=4)
    theirs = profiled(torch).key_averages().table(sort_by="self_cpu_time_total", row_limit=4)
    mine, theirs = mine.splitlines(), theirs.splitlines()
    assert mine[:3] == theirs[:3]  # separator, headers, separator: same columns and widths
    assert len(mine) == len(theirs) == 9
    assert [len(line) for line in mine[3:7]] == [len(line) for line in theirs[3:7]]
    assert mine[7] == theirs[7]


def test_input_shapes():
    mine = profiled(nbgrad, record_shapes=True).key_averages(group_by_input_shape=True)
    theirs = profiled(torch, record_shapes=True).key_averages(group_by_input_shape=True)

    def shapes(averages, key):
        return [e.input_shapes for e in averages if e.key == key]

    assert shapes(mine, "aten::mul") == shapes(theirs, "aten::mul") == [[[10], [10]]]
    assert shapes(mine, "aten::exp") == shapes(theirs, "aten::exp")
    table = mine.table(sort_by="cpu_time_total", row_limit=3).splitlines()
    assert table[1].rstrip().endswith("Input Shapes")
    with pytest.raises(AssertionError, match="record_shapes must be enabled"):
        profiled(nbgrad).key_averages(group_by_input_shape=True)


def test_chrome_trace(tmp_path):
    prof = profiled(nbgrad, record_shapes=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert len(events) == len(prof.function_events)
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    assert {"aten::mul", "MulBackward0", "block"} <= {e["name"] for e in events}


def test_torch_profiler_and_in_place_ops():
    x = nbgrad.ones(3)
    activities = [nbgrad.profiler.ProfilerActivity.CPU]
    with nbgrad.profiler.profile(activities=activities) as prof:
        with nbgrad.profiler.record_function("update"):
            x.mul_(2)
            x.add_(1)
        prof.step()
    names = [e.name for e in prof.function_events]
    assert names == ["update", "aten::mul_", "aten::add_"]
    assert str(nbgrad.profiler.ProfilerActivity.CPU) == str(torch.profiler.ProfilerActivity.CPU)


def test_nobody_listens_after_the_profile():
    from nbgrad.autograd import observe

    profiled(nbgrad)
    assert not observe.op_start_listeners and not observe.node_start_listeners
    assert not observe.op_listeners and not observe.node_listeners


def test_an_op_that_raises_leaves_no_open_event():
    with nbgrad.autograd.profiler.profile() as prof:
        with pytest.raises(RuntimeError):
            nbgrad.ones(2) + nbgrad.ones(3)
        nbgrad.ones(2).exp()
    assert [e.name for e in prof.function_events][-1] == "aten::exp"
    assert all(e.end_us >= e.start_us for e in prof.function_events)
