"""The trace JSON against its machine-readable contract, nbgrad/trace/schema.json.

Real traces, of both engines and in the three forms (inline, apart, carried), are validated
against the schema; the schema's record keys are the keys docs/trace-schema.md describes, table by
table; the widget's test fixtures (js/test/fixtures/*.json) are what scripts/make_js_fixtures.py
writes from real recordings today, so the JS tests read what Python writes."""

import contextlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbgrad
from nbgrad.trace.graph_reader import trace_of_tensor
from nbgrad.trace.trace import SCHEMA_VERSION
from nbgrad.trace.values import Policy

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "nbgrad" / "trace" / "schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def problems(data):
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
        for e in VALIDATOR.iter_errors(data)
    ]


# --- programs, each written once for both engines (T is nbgrad or torch) -------------------


def scalars(T):
    a = T.tensor(2.0, requires_grad=True)
    b = T.tensor(3.0, requires_grad=True)
    d = T.tensor(4.0, requires_grad=True)
    e = (a + b) * d
    e.backward()


def training_steps(T):
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(40, 30), T.nn.ReLU(), T.nn.Linear(30, 3))
    optimizer = T.optim.SGD(model.parameters(), lr=0.1)
    x = T.tensor(np.linspace(-1, 1, 160, dtype=np.float32).reshape(4, 40))
    target = T.tensor([0, 2, 1, 0])
    for _ in range(2):
        optimizer.zero_grad()
        loss = T.nn.functional.cross_entropy(model(x), target)
        loss.backward()
        optimizer.step()


def custom_function_and_double_backward(T):
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2

    x = T.tensor([0.5, 2.0], requires_grad=True)
    y = Cube.apply(x).sum() + (x.sin() * x).sum()
    (g,) = T.autograd.grad(y, x, create_graph=True)
    (g * g).sum().backward(retain_graph=True)


def nonfinite_and_views(T):
    x = T.tensor(np.linspace(0, 2, 300, dtype=np.float32).reshape(20, 15), requires_grad=True)
    y = (x.log() * 2)[:, 1:]
    b = x * 1
    b[0].mul_(3)
    (y.sum() + b.sum()).backward()


def raises(T):
    w = T.tensor([[1.0, 2.0]], requires_grad=True)
    ((w * 2) @ T.ones(3, 1)).sum()


PROGRAMS = [
    scalars,
    training_steps,
    custom_function_and_double_backward,
    nonfinite_and_views,
    raises,
]


def record(program, T, **options):
    engine = "torch" if T.__name__ == "torch" else "nbgrad"
    # the trace of a program that raised is partial (its status says why), and follows the schema
    with contextlib.suppress(RuntimeError), nbgrad.record(engine=engine, **options) as trace:
        program(T)
    return trace


ENGINES = [pytest.param(nbgrad, id="nbgrad"), pytest.param("torch", id="torch")]


def engine_module(name_or_module):
    if name_or_module == "torch":
        return pytest.importorskip("torch")
    return name_or_module


@pytest.mark.parametrize("T", ENGINES)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("form", ["inline", "apart", "carried"])
def test_real_traces_follow_the_schema(program, T, form):
    trace = record(program, engine_module(T), max_passes=1)
    carried = (lambda buffer_id, array: array.size < 200) if form == "carried" else None
    data = json.loads(json.dumps(trace.to_dict(values=form, carried=carried)))
    assert data["version"] == SCHEMA_VERSION
    assert data["producer"]["engine"] == engine_module(T).__name__
    assert data["nodes"] and data["tensors"]
    assert (data["status"]["error"] is not None) == (program is raises)
    # and names the call that raised: (w * 2) @ ones(3, 1), shapes (1, 2) and (3, 1)
    assert (data.get("failure", {}).get("call") == "matmul") == (program is raises)
    assert problems(data) == []


def test_a_full_trace_and_a_graph_read_after_the_fact_follow_the_schema():
    full = record(training_steps, nbgrad, full=True)
    assert problems(json.loads(full.to_json())) == []
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    data = json.loads(trace_of_tensor((x.exp() * x).sum()).to_json())
    assert data["source"]["kind"] == "graph"
    assert problems(data) == []


def test_the_schema_catches_what_a_reader_would_trip_on():
    """The schema is not a rubber stamp: each of these slips makes a trace invalid."""
    good = json.loads(record(scalars, nbgrad).to_json())
    assert problems(good) == []

    def broken(change):
        data = json.loads(json.dumps(good))
        change(data)
        return problems(data)

    assert broken(
        lambda d: d["tensors"][0].update(grad_fn="t1")
    )  # a tensor id where a node id goes
    assert broken(lambda d: d["nodes"][0].update(sved={}))  # a misspelt key
    assert broken(lambda d: d["steps"][0].update(freed=False))  # a default written out
    assert broken(lambda d: d["tensors"][0].update(value="nan"))  # NaN is spelt "NaN"
    assert broken(lambda d: d.update(version=3))
    assert broken(lambda d: d["tensors"][0].update(role="parameter"))


# --- the prose and the schema say the same --------------------------------------------------

TABLES = {  # docs/trace-schema.md heading (or the line before a table) -> schema record
    "## Top level": None,
    "## Tensor records": "tensor",
    "## Op records (forward)": "op",
    "## Node records (backward graph)": "node",
    "`passes`": "pass",
    "`steps`": "step",
    "`accumulations`": "accumulation",
    "## History": "history",
    "Each entry of `parameters`": "history_parameter",
    "## Failure": "failure",
}


def documented_keys():
    """{schema record: keys in the first column of its table in docs/trace-schema.md}."""
    found, current, in_table = {}, None, False
    for line in (ROOT / "docs" / "trace-schema.md").read_text().splitlines():
        for marker, record_name in TABLES.items():
            if line.startswith(marker):
                current, in_table = record_name or "top", False
        if line.startswith("| `") and current is not None:
            in_table = True
            found.setdefault(current, set()).add(re.match(r"\| `([^`]+)`", line).group(1))
        elif in_table and not line.startswith("|"):
            current, in_table = None, False
    return found


def test_the_schema_has_exactly_the_keys_docs_trace_schema_md_describes():
    documented = documented_keys()
    records = ("tensor", "op", "node", "pass", "step", "accumulation")
    records += ("history", "history_parameter", "failure")
    assert set(documented) == {"top", *records}
    assert documented["top"] == set(SCHEMA["properties"])
    for record_name in records:
        assert documented[record_name] == set(SCHEMA["$defs"][record_name]["properties"]), (
            record_name
        )


def test_one_schema_version_read_by_python_and_the_widget():
    assert SCHEMA["properties"]["version"]["const"] == SCHEMA_VERSION
    app = (ROOT / "js" / "src" / "app.js").read_text()
    assert "schema.json" in app and not re.search(r"SCHEMA_VERSION\s*=\s*\d", app)


# --- the widget's fixtures are real traces -------------------------------------------------


def test_the_js_fixtures_are_what_the_script_writes_today(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_js_fixtures.py"), "--into", str(tmp_path)],
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    written = sorted(p.name for p in tmp_path.glob("*.json"))
    checked_in = sorted(p.name for p in (ROOT / "js" / "test" / "fixtures").glob("*.json"))
    assert written == checked_in and written
    for name in written:
        fresh = json.loads((tmp_path / name).read_text())
        assert fresh == json.loads((ROOT / "js" / "test" / "fixtures" / name).read_text()), name
        assert problems(fresh) == [], name


def test_policy_defaults_documented():
    # docs/trace-schema.md's "100 by default" and "1024 by default" are the recorder's defaults
    policy = Policy()
    assert policy.inline_elements == 100 and policy.max_elements == 1024
