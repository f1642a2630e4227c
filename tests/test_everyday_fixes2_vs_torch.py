"""Causes of disagreement scripts/everyday_agreement.py found (issue 13, second round), each
checked against real PyTorch 2.13: versions of inference tensors, of matrix_rank's result and of
gradients the engine adds in place; pow's create_graph gradient; the order of a backward that
reaches a NotImplemented node; a leaf detached in place."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch

from graph_compare import structure  # noqa: E402

VALUES = [[0.3, -0.7, 1.2], [0.4, 0.5, -1.1]]


def _leaf(T, values=VALUES):
    return T.tensor(values, requires_grad=True)


def _outcome(fn):
    """What a learner sees of ``fn()``: its value or the error it raised (type and message)."""
    try:
        return ("value", fn())
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return ("raises", type(error).__name__, str(error))


def _both(program):
    """``program(T)`` in both libraries: (nbgrad's result, PyTorch's result)."""
    return program(nbgrad), program(torch)


# --- inference tensors have no version counter -------------------------------------------------


def _inference_versions(T):
    x = _leaf(T)
    with T.inference_mode():
        y = x + 1
        y.add_(1)
        inside = _outcome(lambda: y._version)
        view = y[0]
    return [inside, _outcome(lambda: y._version), _outcome(lambda: view._version), x._version]


def test_reading_the_version_of_an_inference_tensor_raises_as_in_pytorch():
    ours, theirs = _both(_inference_versions)
    assert ours == theirs
    message = "Inference tensors do not track version counter."
    assert theirs[1] == ("raises", "RuntimeError", message)


def test_a_tensor_made_outside_inference_mode_keeps_its_version():
    def program(T):
        x = _leaf(T)
        with T.inference_mode():
            pass
        y = x * 2
        with T.no_grad():
            y.add_(1)
        return y._version

    assert _both(program) == (1, 1)


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_a_program_with_inference_tensors_is_recorded_by_both_engines(engine):
    # the recorders never read the version an inference tensor does not have
    T = nbgrad if engine == "nbgrad" else torch
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor([0.5, -1.25, 2.0], requires_grad=True)
        with T.inference_mode():
            y = x * 2
            y.add_(1)
        z = y.clone()
        w = (x + y + z * x).sum()
        w.backward()
    data = trace.to_dict()
    assert data["status"] == {"complete": True, "truncated": None, "error": None}
    assert {"AddBackward0", "MulBackward0", "SumBackward0"} <= {n["name"] for n in data["nodes"]}
    # d/dx of x + y + z * x, z = 2 x + 1 held constant: 1 + z
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -0.5, 6.0])


# --- matrix_rank counts into its result in place ------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda T, a: T.linalg.matrix_rank(a),
        lambda T, a: T.linalg.matrix_rank(a, hermitian=True),
        lambda T, a: T.linalg.matrix_rank(a, tol=0.5),
        lambda T, a: T.linalg.matrix_rank(a, atol=0.1, rtol=0.0),
        lambda T, a: T.linalg.matrix_rank(T.zeros(2, 0, 0)),
    ],
)
def test_matrix_rank_result_has_version_one(call):
    a = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 1e-3]], dtype=np.float32)
    ours = call(nbgrad, nbgrad.tensor(a, requires_grad=True))
    theirs = call(torch, torch.tensor(a, requires_grad=True))
    assert (ours.tolist(), str(ours.dtype), ours._version, ours.requires_grad) == (
        theirs.tolist(),
        str(theirs.dtype),
        theirs._version,
        theirs.requires_grad,
    )
    assert theirs._version == 1


# --- pow's gradient differentiated: grad * (exponent * self.pow(exponent - 1)) ------------------


def _saved_values(fn):
    values = {}
    for name in sorted(a for a in dir(fn) if a.startswith("_saved_")):
        value = getattr(fn, name)
        values[name] = value.detach().numpy().tolist() if hasattr(value, "detach") else value
    return values


def _chain(fn):
    """The nodes from ``fn`` down their last edges: (name, saved values) each."""
    rows = []
    while fn is not None:
        rows.append((type(fn).__name__, _saved_values(fn)))
        fn = fn.next_functions[-1][0] if fn.next_functions else None
    return rows


@pytest.mark.parametrize("exponent", [3, 2, 2.5, -2])
def test_pow_gradient_under_create_graph_records_pytorchs_nodes(exponent):
    def program(T):
        x = T.tensor([[0.3, 0.7, 1.2], [0.4, 0.5, 1.1]], dtype=T.float64, requires_grad=True)
        (g,) = T.autograd.grad((x**exponent).sum(), x, create_graph=True)
        # read before the second backward frees them
        chain, graph = _chain(g.grad_fn), structure(g.grad_fn)
        inner = _saved_values(g.grad_fn.next_functions[1][0].next_functions[0][0])
        (gg,) = T.autograd.grad((g * g).sum(), x)
        types = {k: type(v) for k, v in inner.items()}
        return chain, graph, types, g.detach().numpy(), gg.numpy()

    ours, theirs = _both(program)
    assert ours[:3] == theirs[:3]  # the nodes, their saved values and the types of the inner
    names = [row[0] for row in theirs[0]]
    assert names == ["MulBackward0", "MulBackward1", "PowBackward0", "AccumulateGrad"]
    assert theirs[2]["_saved_exponent"] is float  # PyTorch's C++ computes exponent - 1.0
    np.testing.assert_allclose(ours[3], theirs[3], 1e-12)
    np.testing.assert_allclose(ours[4], theirs[4], 1e-12)


# --- gradients added in place in the engine's buffers -------------------------------------------


def _grad_versions(T):
    x = _leaf(T)
    s = T.tensor(0.7, requires_grad=True)
    y = x.exp()
    seen = {}
    g = T.autograd.grad((x * x).sum(), [x, x], allow_unused=True)
    seen["x*x twice"] = ([t._version for t in g], g[0] is g[1])
    seen["x*x"] = T.autograd.grad((x * x).sum(), [x])[0]._version
    seen["x+x"] = T.autograd.grad((x + x).sum(), [x])[0]._version  # one gradient object, twice
    seen["x*x*x"] = T.autograd.grad((x * x * x).sum(), [x])[0]._version
    seen["x*2"] = T.autograd.grad((x * 2).sum(), [x, x])[0]._version
    seen["exp*sin"] = T.autograd.grad((x.exp() * x.sin()).sum(), [x])[0]._version
    seen["x@x.T"] = T.autograd.grad((x @ x.T).sum(), [x])[0]._version
    seen["views"] = T.autograd.grad((x.T * x.T).sum(), [x])[0]._version
    seen["0-d"] = T.autograd.grad(s * s * s, [s])[0]._version
    seen["non-leaf"] = T.autograd.grad((y * y).sum(), [y])[0]._version
    seen["create_graph"] = T.autograd.grad((x * x).sum(), [x], create_graph=True)[0]._version
    hooked = _leaf(T)
    hooked.register_hook(lambda g: g.clamp(-1, 1))  # a new tensor in place of the sum
    g = T.autograd.grad((hooked * hooked).sum(), [hooked, hooked], allow_unused=True)
    seen["hooked"] = [t._version for t in g]
    return seen


def test_autograd_grad_versions_count_the_in_place_adds():
    ours, theirs = _both(_grad_versions)
    assert ours == theirs
    assert theirs["x*x twice"] == ([1, 1], True) and theirs["x*x*x"] == 2


def _leaf_grad_versions(T):
    seen = []
    x = _leaf(T)
    (x * 2).sum().backward()
    seen.append(x.grad._version)
    (x * 2).sum().backward()  # .grad += new, in place
    seen.append(x.grad._version)
    (x * x).sum().backward()
    seen.append(x.grad._version)
    z = _leaf(T)
    (z * z).sum().backward()  # the buffer, added to once, becomes .grad
    seen.append(z.grad._version)
    w = _leaf(T)
    y = w * w
    y.retain_grad()
    (y * y).sum().backward()
    seen.append((y.grad._version, w.grad._version))
    np.testing.assert_allclose(w.grad.numpy(), 4 * np.array(VALUES, np.float32) ** 3, 1e-6)
    return seen


def test_leaf_grad_versions_follow_pytorchs_accumulation():
    ours, theirs = _both(_leaf_grad_versions)
    assert ours == theirs == [0, 1, 2, 1, (0, 1)]


def _create_graph_leaf_grads(T):
    seen = []
    z = _leaf(T)
    (z * 2).sum().backward(create_graph=True)
    seen.append((z.grad._version, z.grad.grad_fn is None, z.grad.requires_grad))
    z = _leaf(T)
    (z * z).sum().backward(create_graph=True)
    seen.append((z.grad._version, structure(z.grad.grad_fn)))
    first = z.grad
    (z * z).sum().backward()  # no create_graph: += in place on the .grad that requires grad
    seen.append((z.grad._version, z.grad is first, type(z.grad.grad_fn).__name__))
    z = _leaf(T)
    (z * z).sum().backward(create_graph=True)
    (z * z).sum().backward(create_graph=True)
    seen.append((z.grad._version, type(z.grad.grad_fn).__name__))
    np.testing.assert_allclose(z.grad.detach().numpy(), 4 * np.array(VALUES, np.float32), 1e-6)
    return seen


# PyTorch warns once per process about the reference cycle .grad makes (nbgrad does not warn)
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_create_graph_copies_the_first_leaf_grad_as_pytorch_does():
    ours, theirs = _both(_create_graph_leaf_grads)
    assert ours == theirs
    assert theirs[1][1][0] == "CopyBackwards"


def test_a_gradient_held_elsewhere_is_not_changed_in_place():
    # a hook keeps the first gradient that reaches x's buffer: adding the second must not
    # change it (it is not the buffer's alone), and the result's version stays 0
    def program(T):
        x = _leaf(T)
        kept = []
        a = x * 2
        a.register_hook(lambda g: kept.append(g) or None)
        b = x.exp()
        (g,) = T.autograd.grad((a + b).sum(), [x])
        return g._version, g.tolist(), [k.tolist() for k in kept]

    ours, theirs = _both(program)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], 1e-6)
    assert ours[2] == theirs[2] == [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]


# --- the order of a backward that reaches a NotImplemented node ---------------------------------


def _not_implemented_order(T):
    seen = []
    for first in ("floor_divide", "clamp"):
        a, b = _leaf(T), _leaf(T)
        if first == "floor_divide":
            u, v = a // 2, T.clamp(b, -1, 1)
        else:
            v, u = T.clamp(b, -1, 1), a // 2
        error = _outcome(lambda u=u, v=v: (u.sum() + v.sum()).backward())
        seen.append((error, a.grad, None if b.grad is None else b.grad.tolist()))
    return seen


def test_a_not_implemented_node_raises_before_other_ready_nodes_run():
    ours, theirs = _both(_not_implemented_order)
    assert ours == theirs
    message = "derivative for aten::floor_divide is not implemented"
    assert theirs[0] == (("raises", "RuntimeError", message), None, None)


# --- a leaf detached in place -----------------------------------------------------------------


def _detached_leaf(T):
    x = _leaf(T)
    y = T.sgn(x) + x.unflatten(1, (3, 1)).sum()
    x.detach_()
    y.sum().backward()
    return x.grad, x.requires_grad, x.is_leaf


def test_a_leaf_detached_in_place_gets_no_grad():
    assert _both(_detached_leaf) == ((None, False, True), (None, False, True))


# --- nodes that compute every input's gradient with one formula save everything ---------------


def _conv_and_prelu_saves(T):
    F = T.nn.functional
    rng = np.random.default_rng(0)
    image, kernel = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))
    volume, kernel3 = rng.standard_normal((1, 2, 3, 3, 3)), rng.standard_normal((2, 3, 2, 2, 2))
    calls = [
        lambda x, w: F.conv2d(x, w, padding=1),
        lambda x, w: F.conv_transpose2d(x, w.transpose(0, 1)),
        lambda x, w: F.conv_transpose3d(x, w),
        lambda x, w: F.prelu(x, w),
    ]
    inputs = [(image, kernel), (image, kernel), (volume, kernel3), (image, np.array([0.25]))]
    seen = []
    for call, (x, w) in zip(calls, inputs):
        for x_grad, w_grad in ((True, False), (False, True)):
            node = call(
                T.tensor(x, requires_grad=x_grad), T.tensor(w, requires_grad=w_grad)
            ).grad_fn
            saved = {}
            for name in ("_saved_input", "_saved_self", "_saved_weight"):
                value = getattr(node, name, "absent")
                saved[name] = value if isinstance(value, str) else value.detach().numpy().tolist()
            seen.append((type(node).__name__, saved))
    return seen


def test_convolution_and_prelu_save_input_and_weight_whichever_needs_a_gradient():
    ours, theirs = _both(_conv_and_prelu_saves)
    assert [name for name, _ in ours] == [name for name, _ in theirs]
    for (_, mine), (_, real) in zip(ours, theirs):
        assert mine.keys() == real.keys()
        for name, value in real.items():
            if isinstance(value, str):
                assert mine[name] == value
            else:
                np.testing.assert_allclose(mine[name], value, rtol=1e-12)
