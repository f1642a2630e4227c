"""node.check() and the local Jacobian (nbgrad/trace/node_check.py), on both engines.

Expected values are computed here independently: Jacobians by hand (softmax's diag(y) - y y^T,
a product's diagonal of the other factor), central differences in NumPy, and real PyTorch's
torch.autograd.functional.jacobian."""

import json

import numpy as np
import pytest

import nbgrad
from nbgrad.trace.node_check import NodeCheckError
from nbgrad.widget import GraphWidget

torch = pytest.importorskip("torch")

ENGINES = {"nbgrad": nbgrad, "torch": torch}


def softmax_np(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def softmax_jacobian_by_hand(x):
    y = softmax_np(np.asarray(x, dtype=np.float64))
    return np.diag(y) - np.outer(y, y)


def numpy_central_differences(f, x, g, eps=1e-6):
    """The VJP g @ df/dx by central differences of <g, f(x)>, in NumPy alone."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for k in range(x.size):
        plus, minus = x.copy(), x.copy()
        plus.flat[k] += eps
        minus.flat[k] -= eps
        out.flat[k] = (np.sum(g * f(plus)) - np.sum(g * f(minus))) / (2 * eps)
    return out


def diagonal_only_softmax(T):
    """The popular mistake: softmax's derivative written as y - y^2 (its diagonal only)."""
    Function = T.autograd.Function

    class DiagonalSoftmax(Function):
        @staticmethod
        def forward(ctx, x):
            y = T.softmax(x, dim=0)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * (y - y * y)

    return DiagonalSoftmax


def scaled_product(T, wrong_for_b):
    """f(a, b, k) = k * a * b with a number k; its backward gets b's gradient wrong (a sign)
    when asked."""
    Function = T.autograd.Function

    class ScaledProduct(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            return k * a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            grad_b = grad * ctx.k * a
            return grad * ctx.k * b, -grad_b if wrong_for_b else grad_b, None

    return ScaledProduct


X = [1.0, 2.0, 0.5, -1.0]
WEIGHTS = [1.0, -2.0, 3.0, 0.5]


def record_softmax_program(engine, custom=False):
    T = ENGINES[engine]
    x = T.tensor(X, requires_grad=True)
    w = T.tensor(WEIGHTS)
    with nbgrad.record(engine=engine) as trace:
        y = diagonal_only_softmax(T).apply(x) if custom else T.softmax(x, dim=0)
        loss = (y * w).sum()
        loss.backward()
    return trace


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_a_product_node_is_right_with_the_hand_gradients(engine):
    T = ENGINES[engine]
    a = T.tensor(2.0, requires_grad=True)
    b = T.tensor(3.0, requires_grad=True)
    d = T.tensor(4.0, requires_grad=True)
    with nbgrad.record(engine=engine) as trace:
        c = a + b
        e = c * d
        e.backward()
    check = trace.node("MulBackward0").check()
    assert check.ok and check.wrong_inputs == []
    by_name = {i.name: i for i in check.inputs}
    assert set(by_name) == {"c", "d"}
    # de/dc = d = 4, de/dd = c = 5, with dL/de = 1
    assert by_name["c"].analytic == pytest.approx(4.0) and by_name["c"].numeric == pytest.approx(
        4.0
    )
    assert by_name["d"].analytic == pytest.approx(5.0) and by_name["d"].numeric == pytest.approx(
        5.0
    )
    assert check.max_abs_error < 1e-6
    assert "right" in check.verdict and "MulBackward0" in repr(check)
    add = trace.node("AddBackward0").check()
    assert add.ok and [float(i.analytic) for i in add.inputs] == pytest.approx([4.0, 4.0])


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_the_softmax_node_checks_right_on_the_recorded_gradient(engine):
    trace = record_softmax_program(engine)
    check = trace.node("SoftmaxBackward0").check()
    assert check.ok
    (x_check,) = check.inputs
    assert x_check.name == "x"
    # the incoming gradient is dL/dy = w; the VJP is w @ (diag(y) - y y^T)
    expected = np.asarray(WEIGHTS) @ softmax_jacobian_by_hand(X)
    assert np.allclose(x_check.analytic, expected, atol=1e-6)
    assert np.allclose(
        x_check.numeric, numpy_central_differences(softmax_np, X, WEIGHTS), atol=1e-7
    )
    assert np.allclose(check.grad_in[0], WEIGHTS)


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_a_custom_function_with_the_diagonal_only_softmax_derivative_is_caught(engine):
    trace = record_softmax_program(engine, custom=True)
    check = trace.node("DiagonalSoftmaxBackward").check()
    assert not check.ok
    assert check.wrong_inputs == ["x"]
    assert "WRONG" in check.verdict and "x" in check.verdict
    y = softmax_np(np.asarray(X))
    (x_check,) = check.inputs
    assert np.allclose(x_check.analytic, np.asarray(WEIGHTS) * (y - y * y), atol=1e-6)
    assert np.allclose(
        x_check.numeric, np.asarray(WEIGHTS) @ softmax_jacobian_by_hand(X), atol=1e-6
    )
    assert check.max_abs_error == pytest.approx(np.abs(x_check.analytic - x_check.numeric).max())


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_the_check_names_only_the_input_whose_gradient_is_wrong(engine):
    T = ENGINES[engine]
    a = T.tensor([1.0, -2.0], requires_grad=True)
    b = T.tensor([3.0, 0.5], requires_grad=True)
    with nbgrad.record(engine=engine) as trace:
        p = scaled_product(T, wrong_for_b=True).apply(a, b, 2.0)
        p.sum().backward()
    check = trace.node("ScaledProductBackward").check()
    assert check.wrong_inputs == ["b"]
    by_name = {i.name: i for i in check.inputs}
    assert by_name["a"].ok and np.allclose(by_name["a"].numeric, [6.0, 1.0])  # k * b
    assert np.allclose(by_name["b"].numeric, [2.0, -4.0])  # k * a
    assert np.allclose(by_name["b"].analytic, [-2.0, 4.0])
    with nbgrad.record(engine=engine) as trace:
        p = scaled_product(T, wrong_for_b=False).apply(a, b, 2.0)
        p.sum().backward()
    assert trace.node("ScaledProductBackward").check().ok


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_an_in_place_op_is_checked_on_the_value_before_the_write(engine):
    T = ENGINES[engine]
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with nbgrad.record(engine=engine) as trace:
        h = x * 1.0
        h.mul_(h.detach() + 1.0)
        h.sum().backward()
    check = trace.nodes[[n.name for n in trace.nodes].index("MulBackward0", 1)].check()
    assert check.ok
    assert np.allclose(check.inputs[0].analytic, [2.0, 3.0, 4.0])  # d(h * k)/dh = k = x + 1


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_summarised_values_and_accumulate_grad_say_why_they_cannot_be_checked(engine):
    T = ENGINES[engine]
    x = T.tensor(np.linspace(0, 1, 10), requires_grad=True)
    with nbgrad.record(engine=engine, max_elements=4) as trace:
        (x * x).sum().backward()
    with pytest.raises(NodeCheckError, match="summarised, not kept whole"):
        trace.node("MulBackward0").check()
    with pytest.raises(NodeCheckError, match="AccumulateGrad only adds"):
        trace.node("AccumulateGrad").check()


def jacobian_entry(trace, node_name):
    data = trace.to_dict()
    names = {t["id"]: t["name"] for t in data["tensors"]}
    node = next(n for n in data["nodes"] if n["name"] == node_name)
    jacobian = node["jacobian"]
    return jacobian, [names[i] for i in jacobian["of"]], [names[i] for i in jacobian["wrt"]]


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_the_softmax_jacobian_travels_with_the_trace_with_its_off_diagonal_terms(engine):
    trace = record_softmax_program(engine)
    jacobian, of, wrt = jacobian_entry(trace, "SoftmaxBackward0")
    assert of == ["y"] and wrt == ["x"]
    matrix = np.array(jacobian["blocks"][0][0])
    assert np.allclose(matrix, softmax_jacobian_by_hand(X), atol=1e-7)
    real = torch.autograd.functional.jacobian(
        lambda t: torch.softmax(t, dim=0), torch.tensor(X, dtype=torch.float64)
    )
    assert np.allclose(matrix, real.numpy(), atol=1e-7)
    y = softmax_np(np.asarray(X))
    assert matrix[0, 1] == pytest.approx(-y[0] * y[1], abs=1e-7)  # off the diagonal: -y_i y_j
    # the identity the engine uses: grad sent = grad in (a row) @ J, with the recorded numbers
    sent = np.asarray(trace.node("SoftmaxBackward0").steps[0].grads_out[0][2], dtype=np.float64)
    assert np.allclose(np.asarray(WEIGHTS) @ matrix, sent, atol=1e-5)


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_a_matmul_jacobian_matches_pytorchs(engine):
    T = ENGINES[engine]
    A = np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])
    B = np.array([[2.0, 1.0], [-1.0, 0.5], [0.0, 4.0]])
    a = T.tensor(A, requires_grad=True)
    b = T.tensor(B, requires_grad=True)
    with nbgrad.record(engine=engine) as trace:
        c = a @ b
        c.sum().backward()
    node_name = next(n.name for n in trace.nodes if n.name.startswith("M") and "Backward" in n.name)
    jacobian, of, wrt = jacobian_entry(trace, node_name)
    assert of == ["c"] and wrt == ["a", "b"]
    real_a, real_b = torch.autograd.functional.jacobian(
        torch.matmul, (torch.tensor(A), torch.tensor(B))
    )
    assert np.allclose(jacobian["blocks"][0][0], real_a.reshape(4, 6).numpy())
    assert np.allclose(jacobian["blocks"][0][1], real_b.reshape(4, 6).numpy())


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_the_jacobian_is_carried_up_to_64_elements_only(engine):
    T = ENGINES[engine]
    small = T.tensor(np.arange(64.0), requires_grad=True)
    large = T.tensor(np.arange(65.0), requires_grad=True)
    with nbgrad.record(engine=engine) as trace:
        s = small * 2.0
        big = large * 2.0
        (s.sum() + big.sum()).backward()
    nodes = [n for n in trace.to_dict()["nodes"] if n["name"] == "MulBackward0"]
    assert np.allclose(nodes[0]["jacobian"]["blocks"][0][0], 2.0 * np.eye(64))
    assert "jacobian" not in nodes[1]


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_the_widget_answers_a_check_message_as_the_browser_sends_it(engine):
    trace = record_softmax_program(engine, custom=True)
    widget = GraphWidget(trace)
    sent = []
    widget.send = lambda message, buffers=None: sent.append(message)
    node_id = trace.node("DiagonalSoftmaxBackward").id
    widget._on_message(widget, {"type": "check", "node": node_id, "request": 5}, [])
    reply = json.loads(json.dumps(sent[0]))  # what travels is JSON
    assert reply["type"] == "check" and reply["request"] == 5 and reply["ok"] is True
    result = reply["result"]
    assert result["ok"] is False and result["inputs"][0]["name"] == "x"
    y = softmax_np(np.asarray(X))
    assert np.allclose(result["inputs"][0]["analytic"], np.asarray(WEIGHTS) * (y - y * y))
    assert np.allclose(
        result["inputs"][0]["numeric"], np.asarray(WEIGHTS) @ softmax_jacobian_by_hand(X)
    )
    accumulate = trace.node("AccumulateGrad").id
    widget._on_message(widget, {"type": "check", "node": accumulate, "request": 6}, [])
    assert sent[1]["ok"] is False and "AccumulateGrad only adds" in sent[1]["error"]
    widget._on_message(widget, {"type": "check", "node": "n999", "request": 7}, [])
    assert sent[2] == {
        "type": "check",
        "request": 7,
        "ok": False,
        "error": "the trace has no node 'n999'",
    }


def test_a_widget_made_from_json_says_there_is_nothing_to_re_run():
    trace = record_softmax_program("nbgrad")
    widget = GraphWidget(trace.to_json())
    sent = []
    widget.send = lambda message, buffers=None: sent.append(message)
    widget._on_message(widget, {"type": "check", "node": "n1", "request": 1}, [])
    assert sent[0]["ok"] is False and "made from JSON" in sent[0]["error"]


def test_a_backward_giving_nan_is_wrong_and_its_result_is_strict_json():
    class NaNBackward(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            return grad * float("nan")

    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    with nbgrad.record() as trace:
        NaNBackward.apply(x).sum().backward()
    check = trace.node("NaNBackwardBackward").check()
    assert not check.ok and check.wrong_inputs == ["x"]
    text = json.dumps(check.to_json(), allow_nan=False)  # no NaN literal for the browser
    assert json.loads(text)["inputs"][0]["analytic"] == ["NaN", "NaN"]
    assert json.loads(text)["inputs"][0]["numeric"] == pytest.approx([2.0, 2.0])


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_a_check_inside_another_recording_is_not_recorded_there(engine):
    trace = record_softmax_program(engine)
    T = ENGINES[engine]
    u = T.tensor([1.0, 2.0], requires_grad=True)
    with nbgrad.record(engine=engine) as outer:
        v = u * 3.0
        assert trace.node("SoftmaxBackward0").check().ok
        v.sum().backward()
    assert [op.op for op in outer.ops] == ["mul", "sum"]
    assert [n.name for n in outer.nodes] == ["MulBackward0", "AccumulateGrad", "SumBackward0"]
    assert np.allclose(u.grad.numpy(), [3.0, 3.0])


def test_a_pytorch_call_that_makes_several_nodes_is_checked_whole_and_says_so():
    logits = torch.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 1.0]], requires_grad=True)
    target = torch.tensor([1, 2])
    with nbgrad.record(engine="torch") as trace:
        loss = torch.nn.functional.cross_entropy(logits, target)
        loss.backward()
    check = trace.node("NllLossBackward0").check()
    assert check.ok
    assert "2 nodes (LogSoftmaxBackward0, NllLossBackward0): checked together" in check.note
    # the whole call's gradient, by hand: (softmax - one-hot) / N
    values = logits.detach().numpy().astype(np.float64)
    probabilities = np.exp(values) / np.exp(values).sum(axis=1, keepdims=True)
    expected = (probabilities - np.eye(3)[[1, 2]]) / 2
    assert np.allclose(check.inputs[0].analytic, expected, atol=1e-6)
    assert np.allclose(check.inputs[0].numeric, expected, atol=1e-6)
    nodes = {n["name"]: n for n in trace.to_dict()["nodes"]}
    assert "jacobian" not in nodes["NllLossBackward0"]  # the call's, not the node's
    with pytest.raises(NodeCheckError, match="no recorded call made it"):
        trace.node("LogSoftmaxBackward0").check()


def test_a_random_forward_is_refused_and_the_random_state_is_left_as_it_was():
    x = torch.tensor(np.linspace(1.0, 2.0, 20), requires_grad=True)
    torch.manual_seed(3)
    with nbgrad.record(engine="torch") as trace:
        kept = torch.nn.functional.dropout(x, p=0.5, training=True)
        kept.sum().backward()
    node = trace.node("MulBackward0")  # (PyTorch on the CPU: x * a random mask)
    state = torch.get_rng_state().clone()
    with pytest.raises(NodeCheckError, match="its forward is random"):
        node.check()
    assert "jacobian" not in next(n for n in trace.to_dict()["nodes"] if n["id"] == node.id)
    assert torch.equal(torch.get_rng_state(), state)  # what the program draws next is unchanged


def test_nbgrads_dropout_is_a_product_with_a_recorded_mask_and_checks_right():
    x = nbgrad.tensor(np.linspace(1.0, 2.0, 20), requires_grad=True)
    nbgrad.manual_seed(3)
    with nbgrad.record() as trace:
        kept = nbgrad.nn.functional.dropout(x, p=0.5, training=True)
        kept.sum().backward()
    state = nbgrad.get_rng_state()
    check = trace.node("MulBackward0").check()
    assert check.ok
    mask = trace.tensors["kept"].value / trace.tensors["x"].value  # 0 or 1 / (1 - p) = 2
    assert set(np.round(mask, 6)) <= {0.0, 2.0}
    assert np.allclose(check.inputs[0].analytic, mask)
    assert np.array_equal(np.asarray(nbgrad.get_rng_state()), np.asarray(state))
