"""The everyday calls scripts/everyday_agreement.py found missing or different, against PyTorch:
values, gradients, the graph (node names and edges), saved values, versions and errors."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch

from graph_compare import structure  # noqa: E402

RTOL, ATOL = 1e-10, 1e-12


def _run(expression, inputs):
    """``expression`` on float64 leaves made from ``inputs``, in both libraries."""
    outcomes = []
    for T in (nbgrad, torch):
        leaves = [T.tensor(a, requires_grad=True) for a in inputs]
        names = {f"x{k}": leaf for k, leaf in enumerate(leaves)}
        out = eval(expression, {"T": T, "np": np, **names})  # noqa: S307 - our own text
        outcomes.append((leaves, out))
    return outcomes


def _saved(fn):
    values = {}
    for name in sorted(a for a in dir(fn) if a.startswith("_saved_")):
        value = getattr(fn, name)
        values[name] = value.detach().numpy() if hasattr(value, "detach") else value
    return values


def _same_saved(a, b):
    assert sorted(a) == sorted(b)
    for name, value in b.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(a[name], value, RTOL, ATOL)
        elif isinstance(value, int) and value >= 2**63:  # PyTorch shows -1 as 2**64 - 1
            assert a[name] in (value - 2**64, value) or a[name] >= 0, name
        elif isinstance(value, tuple):
            signed = tuple(v - 2**64 if isinstance(v, int) and v >= 2**63 else v for v in value)
            assert a[name] in (value, signed), name
        else:
            assert a[name] == value, name


def _compare(expression, *inputs):
    (mine_leaves, mine), (real_leaves, real) = _run(expression, inputs)
    results = (mine, real)
    if not isinstance(real, tuple):
        results = ((mine,), (real,))
    for a, b in zip(*results):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), RTOL, ATOL)
        assert a.requires_grad == b.requires_grad
        assert a._version == b._version
        assert structure(a.grad_fn) == structure(b.grad_fn)
        if b.grad_fn is not None:
            _same_saved(_saved(a.grad_fn), _saved(b.grad_fn))
    if results[1][0].requires_grad:
        upstream = [np.linspace(-1, 1.5, b.numel()).reshape(tuple(b.shape)) for b in results[1]]
        for T, outs in ((nbgrad, results[0]), (torch, results[1])):
            T.autograd.backward(list(outs), [T.tensor(u) for u in upstream])
        for a, b in zip(mine_leaves, real_leaves):
            assert (a.grad is None) == (b.grad is None)
            if b.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), RTOL, ATOL)


rng = np.random.default_rng(7)
X = rng.standard_normal((2, 3))
Y = rng.standard_normal((2, 3))
ROW = rng.standard_normal(3)
M = rng.standard_normal((3, 3)) + 3 * np.eye(3)
M34, M42 = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
WITH_NAN = X.copy()
WITH_NAN[0, 1] = WITH_NAN[1, 2] = np.nan


@pytest.mark.parametrize(
    "expression, inputs",
    [
        ("x0.where(x0 > 0, x1)", (X, Y)),
        ("T.trace(x0)", (M,)),
        ("x0.trace()", (M,)),
        ("T.diff(x0)", (X,)),
        ("T.diff(x0, dim=0)", (X,)),
        ("x0.diff(n=2)", (X,)),
        ("T.diff(x0, n=2, dim=0, prepend=x1[:1], append=x1)", (X, Y)),
        ("T.diff(x0, n=5)", (X,)),
        ("T.diff(x0, n=0)", (X,)),
        ("x0.where(x0 > 0, 0.5)", (X,)),
        ("T.true_divide(x0, x1)", (X, Y + 3)),
        ("x0.true_divide(2)", (X,)),
        ("T.broadcast_to(x0, (2, 3))", (ROW,)),
        ("T.broadcast_to(x0, (2, 3))", (X,)),
        ("x0.broadcast_to((4, 2, 3))", (X,)),
        ("T.broadcast_tensors(x0, x1)", (X, ROW)),
        ("T.broadcast_tensors(x0, x1)", (X, Y)),
        ("T.inner(x0, x1)", (ROW, ROW)),
        ("T.inner(x0, x1)", (X, Y)),
        ("x0.inner(x1)", (X, ROW)),
        ("T.inner(x0, x1)", (np.array(2.0), X)),
        ("T.linalg.vecdot(x0, x1)", (X, Y)),
        ("T.linalg.vecdot(x0, x1, dim=0)", (X, Y)),
        ("T.linalg.matrix_power(x0, 1)", (M,)),
        ("T.linalg.matrix_power(x0, 2)", (M,)),
        ("T.linalg.matrix_power(x0, 3)", (M,)),
        ("T.linalg.matrix_power(x0, 4)", (M,)),
        ("T.linalg.matrix_power(x0, 5)", (M,)),
        ("T.linalg.matrix_power(x0, 6)", (M,)),
        ("T.linalg.matrix_power(x0, 7)", (M,)),
        ("T.linalg.matrix_power(x0, -2)", (M,)),
        ("T.nansum(x0)", (WITH_NAN,)),
        ("T.nansum(x0, 1)", (WITH_NAN,)),
        ("x0.nansum((0, 1), keepdim=True)", (WITH_NAN,)),
        ("T.nanmean(x0)", (WITH_NAN,)),
        ("T.nanmean(x0, 1, keepdim=True)", (WITH_NAN,)),
        ("x0.nanmean(0)", (WITH_NAN,)),
        ("T.linalg.multi_dot([x0, x1])", (M34, M42)),
        ("T.linalg.multi_dot([x0, x0, x0])", (M,)),
        ("T.linalg.multi_dot([x0, x1, x2])", (M34.T, M34, M42)),
        ("T.linalg.multi_dot([x0, x1, x2, x3])", (M42.T, M42, M42.T, M34.T)),
        ("T.linalg.multi_dot([x0, x1, x2])", (ROW, M34, M42)),
        ("T.linalg.multi_dot([x0, x1, x0])", (ROW, M)),
        ("T.linalg.multi_dot([x0, x1, x2])", (M42.T, M42, M42.T[:, 0])),
    ],
)
def test_everyday_call_matches_pytorch(expression, inputs):
    _compare(expression, *inputs)


@pytest.mark.parametrize(
    "expression",
    [
        "T.count_nonzero(x > 0)",
        "T.count_nonzero(x, dim=1)",
        "(x > 0).count_nonzero((0, 1))",
        "T.nonzero(x > 0)",
        "T.nonzero(x > 0, as_tuple=True)",
        "(x > 0).nonzero()",
        "T.argwhere(x > 0)",
        "T.searchsorted(T.tensor([-1.0, 0.0, 1.0]), x)",
        "T.searchsorted(T.tensor([-1.0, 0.0, 1.0]), x, right=True)",
        "T.searchsorted(T.tensor([[-1.0, 0.0, 1.0], [0.0, 0.5, 2.0]]), x)",
        "T.bucketize(x, T.tensor([-1.0, 0.0, 1.0]))",
        "T.bucketize(x, T.tensor([-1.0, 0.0, 1.0]), right=True, out_int32=True)",
        "T.isclose(x, x)",
        "T.isclose(x, x * 2)",
    ],
)
def test_everyday_integer_results_match_pytorch(expression):
    results = []
    for T in (nbgrad, torch):
        x = T.tensor(np.round(X, 0))
        out = eval(expression, {"T": T, "x": x})  # noqa: S307 - our own text
        outs = out if isinstance(out, tuple) else (out,)
        results.append([(o.numpy().tolist(), str(o.dtype), o._version) for o in outs])
    assert results[0] == results[1]


def test_autograd_grad_names_an_output_without_grad_before_an_input():
    messages = []
    for T in (nbgrad, torch):
        x = T.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError) as raised:
            T.autograd.grad((x * 2).sum(), x)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    assert messages[1] == "element 0 of tensors does not require grad and does not have a grad_fn"


def test_round_with_decimals_saves_nothing():
    names = []
    for T in (nbgrad, torch):
        x = T.tensor([0.123, 1.456], requires_grad=True)
        names.append([a for a in dir(T.round(x, decimals=1).grad_fn) if a.startswith("_saved_")])
    assert names[0] == names[1] == []


def _shape_of_graph(fn):
    """Node names and the shapes of saved tensors (random masks: their numbers differ)."""
    if fn is None:
        return None
    saved = {}
    for name in sorted(a for a in dir(fn) if a.startswith("_saved_")):
        value = getattr(fn, name)
        saved[name] = tuple(value.shape) if hasattr(value, "shape") else value
    children = tuple(_shape_of_graph(c) for c, _ in fn.next_functions)
    return (type(fn).__name__, tuple(sorted(saved.items())), children)


@pytest.mark.parametrize(
    "call, shape",
    [
        ("F.dropout1d(x, 0.5, training={})", (2, 3, 4)),
        ("F.dropout2d(x, 0.5, training={})", (1, 2, 5, 5)),
        ("F.dropout3d(x, 0.25, training={})", (2, 2, 2, 3, 2)),
        ("F.alpha_dropout(x, 0.5, training={})", (2, 3)),
        ("F.feature_alpha_dropout(x, 0.5, training={})", (2, 3, 4)),
    ],
)
def test_channel_and_alpha_dropout_match_pytorch(call, shape):
    """Outside training: the input itself. In training: PyTorch's nodes and saved shapes; the
    gradient is the saved mask, and a channel is dropped or kept whole."""
    for T in (nbgrad, torch):
        x = T.ones(*shape, requires_grad=True)
        env = {"F": T.nn.functional, "x": x}
        assert eval(call.format(False), env) is x  # noqa: S307 - our own text
    graphs = []
    for T in (nbgrad, torch):
        T.manual_seed(3)
        x = T.ones(*shape, dtype=T.float64, requires_grad=True)
        out = eval(call.format(True), {"F": T.nn.functional, "x": x})  # noqa: S307
        graphs.append(_shape_of_graph(out.grad_fn))
        mul = (
            out.grad_fn
            if type(out.grad_fn).__name__ == "MulBackward0"
            else (out.grad_fn.next_functions[0][0])
        )
        mask = mul._saved_other.detach().numpy()  # (before backward frees it)
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(mask, shape))
        if "feature" in call or "d(x" in call:
            flat = np.broadcast_to(mask, shape).reshape(shape[0], shape[1], -1)
            assert np.all(flat == flat[..., :1])  # whole channels
    assert graphs[0] == graphs[1]


def test_gru_cell_output_version_matches_pytorch():
    """PyTorch's GRUCell writes its output in place twice: _version 2, and backward still runs."""
    for T in (nbgrad, torch):
        cell = T.nn.GRUCell(3, 4)
        x = T.ones(2, 3, requires_grad=True)
        out = cell(x)
        assert out._version == 2
        assert cell(x[0])._version == 2
        assert cell(x, T.zeros(2, 4))._version == 2
        (out * out).sum().backward()
        assert x.grad is not None


def test_diff_of_booleans_and_integers_and_its_errors_match_pytorch():
    def outcomes(T):
        results = [
            T.diff(T.tensor([True, False, False, True])).tolist(),
            T.diff(T.tensor([1, 4, 9, 16]), n=2).tolist(),
            T.logical_xor(T.tensor([True, False]), T.tensor([True, True])).tolist(),
        ]
        for call in (
            lambda: T.diff(T.tensor(1.0)),
            lambda: T.diff(T.ones(3), n=-1),
            lambda: T.diff(T.ones(3, 2), prepend=T.ones(3)),
            lambda: T.trace(T.ones(3)),
        ):
            try:
                call()
            except Exception as error:  # noqa: BLE001 - the error is the outcome compared
                results.append((type(error).__name__, str(error)))
        return results

    assert outcomes(nbgrad) == outcomes(torch)


def test_trace_is_the_function_before_and_after_the_recorder_is_imported():
    """nbgrad.trace is both torch.trace and the package that records graphs."""
    import subprocess
    import sys

    program = (
        "import nbgrad as torch\n"
        "x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)\n"
        "before = torch.trace(x)\n"
        "import nbgrad.trace.api\n"
        "after = torch.trace(x)\n"
        "(before + after).backward()\n"
        "print(float(before), before.grad_fn.name(), float(after), x.grad.tolist(),\n"
        "      callable(torch.trace), torch.trace.record is nbgrad.trace.api.record)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "5.0", "TraceBackward0", "5.0", "[[2.0,", "0.0],", "[0.0,", "2.0]]", "True", "True"
    ]  # fmt: skip
