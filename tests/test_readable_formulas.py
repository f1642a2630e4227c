"""The formulas the widget shows (nbgrad/trace/readable.py): every table entry reads as math,
with no program text and no formula_math helper name, and every rewrite that can be evaluated
computes what the table's own formula computes."""

import ast
import re

import numpy as np
import pytest

import nbgrad
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.formula_math import ARRAY_NAMESPACE
from nbgrad.trace.readable import MATH_FUNCTIONS, formula_tree, helper_names, readable, to_text

# Words a formula on screen must never contain: Python's, and every helper formula_math
# defines (both namespaces) except those that are math notation themselves (exp, log, sin...).
PROGRAM_WORDS = {"if", "else", "None", "lambda", "for", "in", "len", "is", "grad"}
PROGRAM_SYMBOLS = ("==", "!=", "@", "**", "<=", ">=", "[-")

# Plausible constants for the saved names that are not tensors, so the rewrites that need them
# (a dim, a shape) run as they do on a real node.
CONSTANTS = {
    "alpha": 1,
    "beta": 1,
    "exponent": 2.0,
    "dim": 1,
    "dims": (1, 0),
    "dim0": 0,
    "dim1": 1,
    "dim2": 2,
    "keepdim": False,
    "self_sym_sizes": (5, 3),
    "self_sym_numel": 15,
    "mat1_sym_sizes": (5, 3),
    "index": 2,
    "start": 0,
    "end": 2,
    "step": 1,
    "reduction": 1,
    "negative_slope": 0.01,
    "self_dtype": "float32",
    "tensors_sym_sizes": ((2, 3), (4, 3)),
}


def _entries():
    for name, spec in OPS.items():
        for input_name, text in spec.grads.items():
            yield pytest.param(spec, input_name, text, id=f"{name}-{input_name}")


def _shown_words(text):
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


@pytest.mark.parametrize("constants", [{}, CONSTANTS], ids=["unresolved", "resolved"])
def test_no_program_text_or_helper_name_reaches_the_screen(constants):
    helpers = helper_names() - set(MATH_FUNCTIONS)
    assert {"matrix_t", "sum_to", "swap_last", "restore_reduced", "power"} <= helpers
    shown_math = set(MATH_FUNCTIONS.values())
    problems = []
    for name, spec in OPS.items():
        saved = {k: v for k, v in constants.items() if k in spec.saves}
        for input_name, tree in readable(spec.grads, spec.node, saved).items():
            text = to_text(tree)
            words = _shown_words(text)
            # a saved value's own name (tril's `diagonal`) is PyTorch's, not a helper's; so is
            # the op's own name, in words, in "not differentiable here (standard gamma grad)"
            own_name = {name} | set(name.strip("_").split("_"))
            leaked = (words & helpers) - shown_math - set(spec.saves) - set(spec.inputs)
            leaked -= own_name
            program = (words & PROGRAM_WORDS) - own_name
            symbols = [s for s in PROGRAM_SYMBOLS if s in text]
            if leaked or program or symbols:
                problems.append(
                    f"{name}/{input_name}: {text!r} ({sorted(leaked | program)} {symbols})"
                )
    assert not problems, "\n".join(problems)


def test_the_issue_examples():
    pow_spec = OPS["pow"]
    tree = readable(pow_spec.grads, pow_spec.node, {"exponent": 2})["self"]
    assert (
        to_text(tree, {"self": "(model(x) − target)"}, "loss")
        == "2 · (model(x) − target) · ∂L/∂loss"
    )
    assert to_text(readable(pow_spec.grads, pow_spec.node, {"exponent": 0})["self"]) == "0"
    assert (
        to_text(readable(pow_spec.grads, pow_spec.node, {"exponent": 3})["self"])
        == "3 · self^2 · ∂L/∂out"
    )
    sub = readable(OPS["sub"].grads, "SubBackward0", {"alpha": 1})
    assert [to_text(sub["self"]), to_text(sub["other"])] == ["∂L/∂out", "−∂L/∂out"]
    assert to_text(readable(OPS["t"].grads, "TBackward0")["self"]) == "(∂L/∂out)ᵀ"
    addmm = readable(OPS["addmm"].grads, "AddmmBackward0", {"alpha": 1, "beta": 1})
    assert to_text(addmm["mat1"], {"mat2": "W"}, "y") == "∂L/∂y Wᵀ"
    assert to_text(addmm["mat2"], {"mat1": "x"}, "y") == "xᵀ ∂L/∂y"
    scaled = readable(OPS["addmm_scaled"].grads, "AddmmBackward0", {"alpha": 1, "beta": 1})
    assert to_text(scaled["mat1"]) == "∂L/∂out mat2ᵀ"
    mean = readable(
        OPS["mean"].grads, "MeanBackward0", {"self_sym_numel": 15, "self_sym_sizes": (5, 3)}
    )
    # (PyTorch's order: the gradient broadcast, then divided, so that it is a new tensor)
    assert to_text(mean["self"]) == "∂L/∂out broadcast to shape (5, 3) / 15"
    mean_dim = readable(
        OPS["mean_dim"].grads,
        "MeanBackward1",
        {"dim": (1,), "keepdim": False, "self_sym_sizes": (5, 3), "self_sym_numel": 15},
    )
    assert to_text(mean_dim["self"]).endswith(" / 3")
    expand = readable(OPS["expand"].grads, "ExpandBackward0", {"self_sym_sizes": (3,)})
    assert to_text(expand["self"]) == "∂L/∂out summed to shape (3,)"
    relu = readable(OPS["relu"].grads, "ReluBackward0")
    # PyTorch's threshold_backward(grad, result, 0), inlined: a NaN result lets grad through
    assert to_text(relu["self"]) == "{ 0 when result ≤ 0; ∂L/∂out otherwise }"
    addmv = readable(OPS["addmv"].grads, "AddmvBackward0", {"alpha": 1, "beta": 2})
    assert to_text(addmv["self"]) == "2 · ∂L/∂out"
    assert to_text(addmv["mat"]) == "∂L/∂out vecᵀ"


def test_cat_and_stack_give_each_input_its_piece():
    sizes = {"dim": 0, "tensors_sym_sizes": [(3,), (2,)]}  # as a node keeps it: a list
    assert readable(OPS["cat"].grads, "CatBackward0", sizes)["tensors"] == [
        "pieces",
        ["g"],
        0,
        [3, 2],
    ]
    # PyTorch's CatBackward0 saves only its dim: the widget reads the sizes off the inputs
    cat = readable(OPS["cat"].grads, "CatBackward0", {"dim": 1})["tensors"]
    assert cat == ["pieces", ["g"], 1, "inputs"]
    sizes = {"dim": 1, "tensors_sym_sizes": ((4,), (4,))}
    stack = readable(OPS["stack"].grads, "StackBackward0", sizes)
    assert stack["tensors"] == ["pieces", ["g"], 1, None, 2]


def test_norms():
    spec = OPS["linalg_vector_norm"]
    two = readable(spec.grads, spec.node, {"ord": 2.0, "dim": None, "keepdim": False})["self"]
    assert (
        to_text(two, {"self": "u", "result": "n"}) == "{ u · ∂L/∂out / n when n ≠ 0; 0 otherwise }"
    )
    one = readable(spec.grads, spec.node, {"ord": 1.0, "dim": None, "keepdim": False})["self"]
    assert to_text(one, {"self": "u"}) == "sgn(u) · ∂L/∂out"
    # a reduction over one dim that dropped it: no exact rewrite here, described in words
    dropped = readable(spec.grads, spec.node, {"ord": 2.0, "dim": (1,), "keepdim": False})["self"]
    assert to_text(dropped).startswith("computed by LinalgVectorNormBackward0")
    x, g = np.array([[3.0, 4.0], [0.0, 0.0]]), np.array([[2.0], [5.0]])
    norm = np.sqrt((x * x).sum(axis=1, keepdims=True))
    kept = readable(spec.grads, spec.node, {"ord": 2.0, "dim": (1,), "keepdim": True})["self"]
    expected = ARRAY_NAMESPACE["norm_backward"](g, x, 2.0, norm, (1,), True)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(
            _evaluate(kept, {"grad": g, "self": x, "result": norm}), expected
        )


def test_a_formula_without_a_rewrite_is_described_in_words():
    tree = formula_tree(
        "layer_norm_input_grad(grad, input, normalized_shape, result1, result2, weight, eps)",
        "NativeLayerNormBackward0",
        {"normalized_shape": (3,), "eps": 1e-5},
    )
    assert (
        to_text(tree)
        == "computed by NativeLayerNormBackward0 from ∂L/∂out, input, result1, result2, weight"
    )


# --- the rewrites are exact: evaluate the tree and the table's text on the same numbers --------

_FUNCTIONS = {
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "σ": lambda x: 1 / (1 + np.exp(-x)),
    "sgn": np.sign,
}


class _NotNumericError(Exception):
    pass


def _evaluate(tree, values):
    tag = tree[0]
    ev = lambda t: _evaluate(t, values)  # noqa: E731
    if tag == "g":
        return values["grad"]
    if tag == "v":
        if tree[1] not in values:
            raise _NotNumericError
        return values[tree[1]]
    if tag == "n":
        return {"π": np.pi, "∞": np.inf}.get(tree[1]) or float(tree[1])
    if tag == "add":
        return ev(tree[1]) + ev(tree[2])
    if tag == "sub":
        return ev(tree[1]) - ev(tree[2])
    if tag == "div":
        return ev(tree[1]) / ev(tree[2])
    if tag == "mul":
        out = 1.0
        for f in tree[1:]:
            out = out * ev(f)
        return out
    if tag == "neg":
        return -ev(tree[1])
    if tag == "pow":
        return ev(tree[1]) ** ev(tree[2])
    if tag == "sqrt":
        return np.sqrt(ev(tree[1]))
    if tag == "abs":
        return np.abs(ev(tree[1]))
    if tag == "f" and tree[1] in _FUNCTIONS:
        return _FUNCTIONS[tree[1]](*[ev(a) for a in tree[2:]])
    if tag == "cmp":
        ops = {
            "<": np.less,
            "≤": np.less_equal,
            ">": np.greater,
            "≥": np.greater_equal,
            "=": np.equal,
            "≠": np.not_equal,
        }
        return ops[tree[1]](ev(tree[2]), ev(tree[3]))
    if tag == "and":
        return np.logical_and(ev(tree[1]), ev(tree[2]))
    if tag == "ind":
        return ev(tree[1]).astype(float)
    if tag == "cases":
        out = ev(tree[-1][0]) * np.ones_like(values["grad"], dtype=float)
        for value, condition in reversed(tree[1:-1]):
            out = np.where(ev(condition), ev(value), out)
        return out
    if tag == "T":
        return ev(tree[1]).T
    if tag == "mm":
        return ev(tree[1]) @ ev(tree[2])
    raise _NotNumericError


def test_rewrites_compute_what_the_table_computes():
    rng = np.random.default_rng(0)
    scalars = {
        "alpha": 1.5,
        "beta": 0.5,
        "exponent": 3.0,
        "negative_slope": 0.01,
        "threshold": 0.7,
        "min_val": -0.5,
        "max_val": 0.9,
        "lambd": 0.5,
        "scale": 1.2,
        "input_scale": 0.8,
    }
    checked = 0
    for name, spec in OPS.items():
        for input_name, text in spec.grads.items():
            if "outer(" in text:  # a vector's outer product: the 3x3 values below do not fit
                continue
            used = {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
            constants = {k: v for k, v in scalars.items() if k in used and k in spec.saves}
            values = {"grad": rng.uniform(0.2, 1.5, (3, 3))}
            for word in used - set(ARRAY_NAMESPACE) - {"grad"} - set(constants):
                values[word] = rng.uniform(0.2, 1.5, (3, 3))
            for node in ast.walk(ast.parse(text, mode="eval")):
                if isinstance(node, ast.IfExp):  # a condition on a value (rpow's `self != 0`)
                    for n in ast.walk(node.test):
                        if isinstance(n, ast.Name) and isinstance(values.get(n.id), np.ndarray):
                            values[n.id] = float(values[n.id][0, 0])
            tree = readable({input_name: text}, spec.node, constants)[input_name]
            try:
                with np.errstate(all="ignore"):
                    shown = _evaluate(tree, {**values, **constants})
            except _NotNumericError:
                continue
            with np.errstate(all="ignore"):
                expected = eval(
                    text, {"__builtins__": {}}, {**ARRAY_NAMESPACE, **values, **constants}
                )
            np.testing.assert_allclose(
                shown, expected, rtol=1e-6, err_msg=f"{name}/{input_name}: {to_text(tree)}"
            )
            checked += 1
    assert checked > 120, checked


def test_the_trace_carries_resolved_formulas_and_custom_backward_source():
    class Square(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad  # the line a learner wrote

    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    with nbgrad.record() as recording:
        y = Square.apply(x)
        loss = ((y - 1) ** 2).sum()
        loss.backward()
    data = recording.trace.to_dict() if hasattr(recording, "trace") else recording.to_dict()
    by_name = {n["name"]: n for n in data["nodes"]}
    pow_trees = data["readable"][by_name["PowBackward0"]["readable"]]
    assert to_text(pow_trees["self"]) == "2 · self · ∂L/∂out"
    source = data["backward_sources"]["SquareBackward"]
    assert "the line a learner wrote" in source["text"] and source["text"].startswith(
        "@staticmethod"
    )
    assert source["line"] > 0 and source["function"].endswith("Square")


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_custom_backward_source_on_both_engines(engine):
    """The recorder of each engine, and the reader of a graph after the fact, keep the source of
    a custom Function's backward (tests/square_function.py)."""
    import sys

    from nbgrad.trace.recorder import Recorder
    from nbgrad.trace.source import source_for

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from square_function import square_function

    if engine == "torch":
        T = pytest.importorskip("torch")
        from nbgrad.trace.torch_bridge import trace_of_torch_tensor as read_graph
        from nbgrad.trace.torch_recorder import TorchRecorder

        recorder_class = TorchRecorder
    else:
        T = nbgrad
        from nbgrad.trace.graph_reader import trace_of_tensor as read_graph

        recorder_class = Recorder
    Square = square_function(T)
    recorder = recorder_class(source_for(__file__), base_frame=sys._getframe(), source_kind="file")
    recorder.start()
    x = T.tensor([1.0, 3.0], requires_grad=True)
    y = Square.apply(x)
    y.sum().backward()
    recorded = recorder.finish([{"x": x, "y": y}]).to_dict()
    read = read_graph(Square.apply(x), {"x": x}).to_dict()
    for data in (recorded, read):
        source = data["backward_sources"]["SquareBackward"]
        assert source["function"].endswith("Square")
        assert source["file"].endswith("square_function.py")
        assert source["text"].splitlines()[:2] == ["@staticmethod", "def backward(ctx, grad):"]
        assert source["text"].splitlines()[-1] == "    return grad * 2 * x"
