"""nbgrad.diff(trace_a, trace_b): the matching and the differences, on both engines.

Expected values are computed independently: with NumPy from the same inputs, or by real
PyTorch's autograd outside any recording; the structure (which nodes are only in one trace) is
what the edit changes, written down by hand.
"""

import gzip
import json

import numpy as np
import pytest

import nbgrad
from nbgrad.trace.diff import DiffResult, diff

torch = pytest.importorskip("torch")


def _data(w2_scale=1.0):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3))
    y = rng.normal(size=(4, 1))
    w1 = rng.normal(size=(3, 5))
    w2 = rng.normal(size=(5, 1)) * w2_scale
    return x, y, w1, w2


def record_mlp(engine, activation="sigmoid", w2_scale=1.0, dtype=np.float32):
    """A two-layer network's loss and backward, recorded on ``engine``."""
    T = nbgrad if engine == "nbgrad" else torch
    x_, y_, w1_, w2_ = (a.astype(dtype) for a in _data(w2_scale))
    x, y = T.tensor(x_), T.tensor(y_)
    w1 = T.tensor(w1_, requires_grad=True)
    w2 = T.tensor(w2_, requires_grad=True)
    with nbgrad.record(engine=engine) as trace:
        z = x @ w1
        h = getattr(T, activation)(z)
        out = h @ w2
        loss = ((out - y) ** 2).mean()
        loss.backward()
    return trace


def torch_grads(activation="sigmoid", w2_scale=1.0):
    """w1.grad, w2.grad and h from real PyTorch, with nothing recorded (float64)."""
    x, y, w1, w2 = (torch.tensor(a) for a in _data(w2_scale))
    w1.requires_grad_(True)
    w2.requires_grad_(True)
    h = getattr(torch, activation)(x @ w1)
    ((h @ w2 - y) ** 2).mean().backward()
    return w1.grad.numpy(), w2.grad.numpy(), h.detach().numpy()


def names(entries):
    return sorted(e.name for e in entries)


ENGINES = ["nbgrad", "torch"]


# --- the same cell --------------------------------------------------------------------------------


@pytest.mark.parametrize("a_engine", ENGINES)
@pytest.mark.parametrize("b_engine", ENGINES)
def test_the_same_cell_is_the_same_everywhere(a_engine, b_engine):
    d = diff(record_mlp(a_engine), record_mlp(b_engine))
    assert d.identical
    assert d.removed == d.added == d.changed == []
    # every record of A is matched: 6 tensors (x, y, w1, w2 and 5 results) ...
    a = d.trace_a
    assert len(d.same) == len(a.tensors) + len(a.ops) + len(a.nodes)
    assert d.edges_removed == d.edges_added == []
    if a_engine != b_engine:
        assert d.labels == (a_engine, b_engine)


def test_nbgrad_against_torch_with_modules_named_differently():
    # notebook 06's comparison: the same network as an nbgrad and a torch module, under two
    # variable names: parameters match through their AccumulateGrad, inputs through the ops
    torch.manual_seed(0)
    torch_model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    nbgrad_model = nbgrad.nn.Sequential(
        nbgrad.nn.Linear(3, 4), nbgrad.nn.ReLU(), nbgrad.nn.Linear(4, 1)
    )
    nbgrad_model.load_state_dict(
        {k: v.detach().numpy() for k, v in torch_model.state_dict().items()}
    )
    x_torch, target_torch = torch.randn(5, 3), torch.randn(5, 1)
    x_nbgrad, target_nbgrad = nbgrad.tensor(x_torch.numpy()), nbgrad.tensor(target_torch.numpy())
    with nbgrad.record(engine="torch") as on_torch:
        loss = ((torch_model(x_torch) - target_torch) ** 2).mean()
        loss.backward()
    with nbgrad.record() as on_nbgrad:
        loss = ((nbgrad_model(x_nbgrad) - target_nbgrad) ** 2).mean()
        loss.backward()
    d = diff(on_nbgrad, on_torch)
    assert d.changed == [] and d.removed == [] and d.added == [], d.summary()
    weight = d.entry("nbgrad_model.0.weight")
    assert weight.b.name == "torch_model.0.weight" and weight.status == "same"
    assert d.entry("x_nbgrad").b.name == "x_torch"
    np.testing.assert_allclose(weight.b.grad, torch_model[0].weight.grad.numpy())
    # nbgrad records Linear's transpose as a t op; PyTorch's linear makes its TBackward0 inside
    transpose = d.entry("t → t in nbgrad_model.0")
    assert transpose.status == "same" and transpose.b is None
    assert transpose.unobserved.name == "TBackward0" and not transpose.unobserved.observed
    note = d.to_dict()["diff"]["records"][transpose.id]["note"]
    assert note == (
        "torch ran this inside another call: it has the node (TBackward0) "
        "but did not record this op"
    )
    assert d.entry("TBackward0 (t in nbgrad_model.0)").b.name == "TBackward0"


# --- a changed cell -------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_sigmoid_to_relu_shows_exactly_the_swap(engine):
    d = diff(record_mlp(engine, "sigmoid"), record_mlp(engine, "relu"), labels=("sigmoid", "relu"))
    assert names(d.removed) == ["SigmoidBackward0 (h)", "sigmoid → h"]
    assert names(d.added) == ["ReluBackward0 (h)", "relu → h"]
    # edges: the activation's node between the second and the first matmul's nodes, and the op
    # between z and h, in each
    assert sorted(d.edges_removed) == [
        ("backward", "MmBackward0 (out)", "SigmoidBackward0 (h)", 0),
        ("backward", "SigmoidBackward0 (h)", "MmBackward0 (z)", 0),
        ("forward", "sigmoid → h", "h", 0),
        ("forward", "z", "sigmoid → h", 0),
    ]
    assert len(d.edges_added) == 4
    # unchanged: the inputs, the weights' values, z = x @ w1 and the first matmul's op
    matmul = "mm" if engine == "nbgrad" else "matmul"  # what each engine calls ``x @ w1``
    for name in ("x", "y", f"{matmul} → z", "MeanBackward0 (loss)"):
        assert d.entry(name).status == "same", name
    assert d.entry("z").what == "grad"  # z's value is the same, its gradient is not
    # the numbers, from PyTorch outside any recording
    w1_sig, w2_sig, h_sig = torch_grads("sigmoid")
    w1_relu, w2_relu, h_relu = torch_grads("relu")
    h = d.entry("h")
    assert h.status == "differs" and h.what == "value"
    assert h.difference == pytest.approx(np.abs(h_sig - h_relu).max(), rel=1e-5)
    w1 = d.entry("w1")
    assert w1.what == "grad"
    assert w1.difference == pytest.approx(np.abs(w1_sig - w1_relu).max(), rel=1e-4)
    assert d.entry("w2").difference == pytest.approx(np.abs(w2_sig - w2_relu).max(), rel=1e-4)
    assert d.entry("AccumulateGrad(w1)").difference == pytest.approx(w1.difference, rel=1e-6)
    assert d.changed[0].difference == max(e.difference for e in d.changed)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_changed_weight_changes_values_not_structure(engine):
    d = diff(record_mlp(engine), record_mlp(engine, w2_scale=2.0))
    assert d.removed == [] and d.added == []
    assert d.edges_removed == [] and d.edges_added == []
    x, y, w1, w2 = _data()
    w2_entry = d.entry("w2")
    assert w2_entry.status == "differs"
    values = dict((what, gap) for what, _, _, gap, _ in w2_entry.compared)
    assert values["value"] == pytest.approx(np.abs(w2 - 2 * w2).max(), rel=1e-6)
    # z = x @ w1 does not depend on w2: its value is the same, its gradient is not
    z = d.entry("z")
    assert dict((what, differs) for what, _, _, _, differs in z.compared) == {
        "value": False,
        "grad": True,
    }
    # the loss, by NumPy
    h = 1 / (1 + np.exp(-(x @ w1)))
    loss_a, loss_b = ((h @ w2 - y) ** 2).mean(), ((h @ (2 * w2) - y) ** 2).mean()
    assert d.entry("loss").difference == pytest.approx(abs(loss_a - loss_b), rel=1e-4)
    # the same: the inputs, the ops whose outputs do not depend on w2 (z and h's values), and
    # the mean's node (it receives 1 and sends 1/4 to each element, whatever w2 is)
    matmul = "mm" if engine == "nbgrad" else "matmul"
    assert names(d.same) == sorted(
        ["x", "y", f"{matmul} → z", "sigmoid → h", "MeanBackward0 (loss)"]
    )


# --- the tolerance --------------------------------------------------------------------------------


def _constant_cell(value):
    a = nbgrad.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with nbgrad.record() as trace:
        b = a * value
        b.sum().backward()
    return trace


def test_tolerance_by_dtype_and_given():
    before, after = _constant_cell(3.0), _constant_cell(3.0 + 1e-6)
    # float64: rtol 1e-7, atol 1e-7: a change of 2e-6 in b differs
    d = diff(before, after)
    # b = a * 3 changes; so do a's gradient (3 + 1e-6), b.sum(), the mul's node (it saved the
    # number) and a's AccumulateGrad; SumBackward0 receives 1 and sends ones either way
    assert names(d.changed) == [
        "AccumulateGrad(a)",
        "MulBackward0 (b)",
        "a",
        "b",
        "b.sum()",
        "mul → b",
        "sum → b.sum()",
    ]
    assert names(d.same) == ["SumBackward0 (b.sum())"]
    assert d.entry("b").difference == pytest.approx(2e-6, rel=1e-6)
    assert d.entry("a").what == "grad"
    assert d.entry("a").difference == pytest.approx(1e-6, rel=1e-6)
    # within a looser tolerance it is the same
    assert diff(before, after, rtol=1e-5, atol=1e-5).identical


def test_nan_equals_nan_and_inf_its_sign():
    def cell(x):
        a = nbgrad.tensor(np.array(x), requires_grad=True)
        with nbgrad.record() as trace:
            b = a * 1.0
            b.sum().backward()
        return trace

    assert diff(cell([np.nan, np.inf, 1.0]), cell([np.nan, np.inf, 1.0])).identical
    d = diff(cell([np.nan, np.inf, 1.0]), cell([np.nan, -np.inf, 1.0]))
    assert d.entry("b").difference == np.inf and d.entry("b").status == "differs"


# --- what the widget draws ------------------------------------------------------------------------


def test_merged_trace_holds_both_sides():
    d = diff(record_mlp("nbgrad", "sigmoid"), record_mlp("torch", "relu"))
    data = d.to_dict()
    assert data["version"] == 2
    ids = {r["id"] for table in ("tensors", "ops", "nodes") for r in data[table]}
    assert len(ids) == sum(len(data[t]) for t in ("tensors", "ops", "nodes"))  # no id twice
    records = data["diff"]["records"]
    assert set(records) == ids  # every drawn record has its status
    assert {e.id for e in d.entries} == ids  # each entry knows its record's id there
    relu = next(n for n in data["nodes"] if n["name"] == "ReluBackward0")
    assert records[relu["id"]]["status"] == "b"
    assert all(e is None or e[0] in ids for e in relu["next"])
    sigmoid = next(n for n in data["nodes"] if n["name"] == "SigmoidBackward0")
    assert records[sigmoid["id"]]["status"] == "a"
    # the edge only B has, from the second matmul's node to relu's, in A's ids
    mm_out = next(
        n["id"]
        for n in data["nodes"]
        if n["name"] == "MmBackward0" and (n["next"][0] or [None])[0] == sigmoid["id"]
    )
    assert {"view": "backward", "from": mm_out, "to": relu["id"], "slot": 0, "in": "b"} in data[
        "diff"
    ]["edges"]
    assert data["diff"]["counts"] == {
        "a": 2,
        "b": 2,
        "differs": len(d.changed),
        "same": len(d.same),
    }
    assert data["diff"]["labels"] == ["nbgrad", "torch"]
    # both sides of h, as numbers: A's sigmoid and B's relu of the same z
    h = next(t["id"] for t in data["tensors"] if t["name"] == "h")
    value = next(c for c in records[h]["compared"] if c["what"] == "value")
    x, _, w1, _ = (a.astype(np.float32) for a in _data())
    np.testing.assert_allclose(value["a"], 1 / (1 + np.exp(-(x @ w1))), rtol=1e-5)
    np.testing.assert_allclose(value["b"], np.maximum(x @ w1, 0), rtol=1e-5)
    json.dumps(data, allow_nan=False)  # strict JSON


def test_displays_as_the_widget_and_fetches_both_sides_buffers(tmp_path):
    def big(engine, scale):
        T = nbgrad if engine == "nbgrad" else torch
        w = T.tensor(np.arange(40, dtype=np.float32).reshape(8, 5) * scale, requires_grad=True)
        with nbgrad.record(engine=engine) as trace:
            loss = (w * w).sum()
            loss.backward()
        return trace

    d = nbgrad.diff(big("nbgrad", 1.0), big("torch", 2.0), labels=("before", "after"))
    assert isinstance(d, DiffResult)
    bundle, _ = d._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("<DiffResult before vs after:")
    sent = json.loads(gzip.decompress(d.widget.trace))
    assert sent["limits"]["values"] == "apart" and sent["diff"]["labels"] == ["before", "after"]
    # w's value travels apart (40 elements): A's buffer and B's, each from its own trace
    w = next(t for t in sent["tensors"] if t["name"] == "w")
    assert d.widget._buffer_reply(w["value"]["buffer"])["array"][1, 0] == 5.0
    w_b = next(t for t in d.to_dict("apart")["tensors"] if t["name"] == "w")  # matched: A's
    assert w_b["id"] == w["id"]
    b_buffer = "B" + d.trace_b.to_dict("apart")["tensors"][0]["value"]["buffer"]
    assert d.widget._buffer_reply(b_buffer)["array"][1, 0] == 10.0
    # the diff key's own values of over 16 elements: statistics and a "D" buffer, both sides
    compared = sent["diff"]["records"][w["id"]]["compared"]
    value = next(c for c in compared if c["what"] == "value")
    assert value["a"]["stats"]["max"] == 39.0 and value["b"]["stats"]["max"] == 78.0
    assert d.widget._buffer_reply(value["b"]["buffer"])["array"][1, 0] == 10.0
    path = d.save_html(tmp_path / "diff.html")
    assert "nbgrad-root" in path.read_text()
    assert "before vs after" in repr(d) and "differ" in d.summary()


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_says_what_it_wants():
    trace = record_mlp("nbgrad")
    # on a tensor, nbgrad.diff is torch.diff, and says what PyTorch says
    with pytest.raises(TypeError, match="argument 'n' \\(position 2\\) must be int, not Trace"):
        nbgrad.diff(nbgrad.tensor([1.0, 2.0]), trace)
    with pytest.raises(TypeError, match="trace_b is a int"):
        nbgrad.diff(trace, 3)
    with pytest.raises(ValueError, match="both rtol and atol"):
        nbgrad.diff(trace, trace, rtol=1e-3)
    with pytest.raises(ValueError, match="two names"):
        nbgrad.diff(trace, trace, labels=("one",))
    with pytest.raises(KeyError):
        nbgrad.diff(trace, trace).entry("no such tensor")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_module_that_changed_class_says_both(engine):
    T = nbgrad if engine == "nbgrad" else torch

    def cell(activation):
        T.manual_seed(0)
        net = T.nn.Sequential(T.nn.Linear(3, 2), activation())
        x = T.ones(4, 3)
        with nbgrad.record(engine=engine) as trace:
            net(x).sum().backward()
        return trace

    d = diff(cell(T.nn.Sigmoid), cell(T.nn.ReLU))
    modules = d.to_dict()["modules"]
    assert modules["net"] == "Sequential" and modules["net.0"] == "Linear"
    assert modules["net.1"] == "Sigmoid → ReLU"
    assert names(d.removed) == ["SigmoidBackward0 (net(x))", "sigmoid → net(x)"]


def test_a_deep_graph_that_reuses_values():
    # h = sin(h) + h, 200 times: each node's inputs share everything below, which a matching
    # by nested structural keys would hash 2**200 times over
    def cell(T, engine):
        x = T.tensor(np.linspace(0.1, 1.0, 4), requires_grad=True)
        with nbgrad.record(engine=engine, max_nodes=10_000) as trace:
            h = x
            for _ in range(200):
                h = h.sin() + h
            h.sum().backward()
        return trace

    a, b = cell(nbgrad, "nbgrad"), cell(torch, "torch")
    d = diff(a, b)
    assert d.identical, d.summary()
    assert len(a.nodes) == 2 * 200 + 2  # sin and add per step, the sum, x's AccumulateGrad
    # the leaf's gradient, by NumPy: the product over the steps of (cos(h) + 1)
    h, expected = np.linspace(0.1, 1.0, 4), np.ones(4)
    for _ in range(200):
        expected *= np.cos(h) + 1
        h = np.sin(h) + h
    np.testing.assert_allclose(d.entry("x").a.grad, expected, rtol=1e-9)
    np.testing.assert_allclose(d.entry("x").b.grad, expected, rtol=1e-9)


def test_graphs_read_after_the_fact():
    # nbgrad.show(tensor)'s traces: no ops, no backward pass; nodes match from the roots
    from nbgrad.trace.graph_reader import trace_of_tensor
    from nbgrad.trace.torch_bridge import trace_of_torch_tensor

    def graph(T, reader, exponent):
        w = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        loss = (w**exponent).sum()
        return reader(loss, {"w": w, "loss": loss})

    d = diff(graph(nbgrad, trace_of_tensor, 2.0), graph(torch, trace_of_torch_tensor, 2.0))
    assert d.identical, d.summary()
    d = diff(graph(nbgrad, trace_of_tensor, 2.0), graph(nbgrad, trace_of_tensor, 3.0))
    assert d.removed == d.added == []
    assert d.entry("loss").difference == pytest.approx((1 + 8 + 27) - (1 + 4 + 9))
    pow_node = d.entry("PowBackward0", kind="node")  # its result is no variable: no name
    assert pow_node.what == "saved exponent" and pow_node.difference == 1.0


def test_a_recording_that_stopped_is_compared_up_to_there():
    def cell(fail):
        a = nbgrad.tensor([1.0, 2.0], requires_grad=True)
        try:
            with nbgrad.record() as trace:
                b = a * 2
                if fail:
                    raise ZeroDivisionError("division by zero")
                b.sum().backward()
        except ZeroDivisionError:
            pass
        return trace

    d = diff(cell(False), cell(True), labels=("works", "fails"))
    assert "fails stopped by ZeroDivisionError: division by zero" in d.summary()
    status = d.to_dict()["status"]
    assert status["error"] == "fails: ZeroDivisionError: division by zero"
    # what ran in both is compared: b = a * 2 is the same; the sum and backward only in "works"
    assert d.entry("b").what == "grad"  # [1, 1] after backward in "works", None in "fails"
    assert names(d.removed) == ["SumBackward0 (b.sum())", "b.sum()", "sum → b.sum()"]
    assert d.entry("mul → b").status == "same"


@pytest.mark.parametrize("form", ["inline", "apart", "carried"])
def test_the_merged_trace_follows_the_schema(form):
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    schema = json.loads((Path(nbgrad.__file__).parent / "trace" / "schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    d = diff(record_mlp("nbgrad", "sigmoid", w2_scale=2.0), record_mlp("torch", "relu"))
    carried = []
    data = d.to_dict(form, carried=(lambda key, array: carried.append(key) or True))
    data = json.loads(json.dumps(data, allow_nan=False))
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]
    assert problems == []
    assert data["diff"]["counts"]["a"] == 2 and data["diff"]["counts"]["b"] == 2
    if form == "carried":  # A's arrays, B's (Bb) and the diff key's own (D) all ride along
        assert {key[0] for key in carried} >= {"b", "B", "D"}
