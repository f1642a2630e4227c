"""A float32 LSTM as PyTorch runs it on the CPU: oneDNN's kernel, one MkldnnRnnLayerBackward0
node per layer and direction (nbgrad/ops/rnn_kernels.py, LSTM._run_onednn). The graph (node names
and edges a few levels down), the saved values, the outputs, every gradient and the second
derivatives are compared with PyTorch 2.13 on the same weights."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

CONFIGS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"batch_first": True},
    {"bias": False},
    {"num_layers": 2, "bidirectional": True},
    {"batch_first": True, "bidirectional": True, "num_layers": 2},
]


def graph(node, depth=4):
    if node is None or depth == 0:
        return None
    return (
        type(node).__name__,
        [(graph(child, depth - 1), nr) for child, nr in node.next_functions],
    )


def first_layer_node(tensor):
    node = tensor.grad_fn
    while node is not None and type(node).__name__ != "MkldnnRnnLayerBackward0":
        node = node.next_functions[0][0]
    return node


def shown(value):
    if hasattr(value, "shape"):
        return (
            tuple(value.shape),
            str(value.dtype).split(".")[-1],
            value.detach().numpy().round(5).tolist(),
        )
    return value


def run(T, config, hx=False, train=True, unbatched=False, create_graph=False):
    T.manual_seed(0)
    model = T.nn.LSTM(3, 4, **config)
    model.train(train)
    with T.no_grad():  # the same weights in both engines
        for i, p in enumerate(model.parameters()):
            values = np.sin(np.arange(p.numel()) * 0.37 + i).reshape(tuple(p.shape))
            p.copy_(T.tensor(values.astype(np.float32)))
    data = np.linspace(-1, 1, 30, dtype=np.float32).reshape(5, 2, 3)
    if config.get("batch_first"):
        data = data.transpose(1, 0, 2).copy()
    x = T.tensor(data[:, 0] if unbatched else data, requires_grad=True)
    state = None
    if hx:
        layers = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
        shape = (layers, 4) if unbatched else (layers, 2, 4)
        h0 = T.tensor(
            np.cos(np.arange(np.prod(shape))).reshape(shape).astype(np.float32), requires_grad=True
        )
        c0 = T.tensor(
            np.sin(np.arange(np.prod(shape))).reshape(shape).astype(np.float32), requires_grad=True
        )
        state = (h0, c0)
    out, (h, c) = model(x, state)
    node = first_layer_node(out)
    saved = {}
    if node is not None:
        saved = {
            name: shown(getattr(node, name))
            for name in dir(node)
            if name.startswith("_saved_") and name != "_saved_result3"  # oneDNN's own bytes
        }
    loss = out.pow(2).sum() + h.sum() + (c * c).sum()
    inputs = [x, *model.parameters(), *(state or ())]
    grads = T.autograd.grad(loss, inputs, create_graph=create_graph)
    result = {
        "graphs": (graph(out.grad_fn), graph(h.grad_fn), graph(c.grad_fn)),
        "saved": saved,
        "values": [t.detach().numpy() for t in (out, h, c)],
        "grads": [g.detach().numpy() for g in grads],
    }
    if create_graph:
        penalty = sum((g * g).sum() for g in grads)
        result["second"] = [g.numpy() for g in T.autograd.grad(penalty, inputs)]
    return result


def assert_same(mine, theirs):
    assert mine["graphs"] == theirs["graphs"]
    assert mine["saved"].keys() == theirs["saved"].keys()
    for name, value in theirs["saved"].items():
        if isinstance(value, tuple) and len(value) == 3:
            assert mine["saved"][name][:2] == value[:2], name
            np.testing.assert_allclose(mine["saved"][name][2], value[2], atol=1e-4, err_msg=name)
        else:
            assert mine["saved"][name] == value, name
    for key in ("values", "grads", "second"):
        for a, b in zip(mine.get(key, ()), theirs.get(key, ())):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_the_graph_values_and_grads_are_pytorchs(config):
    mine, theirs = run(nbgrad, config), run(torch, config)
    assert mine["graphs"][0] is not None
    assert "MkldnnRnnLayerBackward0" in str(theirs["graphs"][0])
    assert_same(mine, theirs)


@pytest.mark.parametrize("config", [{}, {"num_layers": 2, "bidirectional": True}], ids=str)
def test_given_states_eval_mode_and_one_sequence(config):
    for options in (
        {"hx": True},
        {"train": False},
        {"unbatched": True},
        {"unbatched": True, "hx": True},
    ):
        assert_same(run(nbgrad, config, **options), run(torch, config, **options))


def test_second_derivatives_are_pytorchs():
    assert_same(run(nbgrad, {"num_layers": 2}, hx=True, create_graph=True),
                run(torch, {"num_layers": 2}, hx=True, create_graph=True))  # fmt: skip


def test_float64_projections_and_packed_sequences_keep_the_decomposition():
    def names(T):
        model = T.nn.LSTM(3, 4).double()
        out64, _ = model(T.zeros(5, 2, 3, dtype=T.float64, requires_grad=True))
        packed = T.nn.utils.rnn.pack_padded_sequence(T.zeros(5, 2, 3, requires_grad=True), [5, 3])
        out_packed, _ = T.nn.LSTM(3, 4)(packed)
        return type(out64.grad_fn).__name__, type(out_packed.data.grad_fn).__name__

    assert names(nbgrad) == names(torch) == ("StackBackward0", "CatBackward0")


def test_dropout_between_layers_is_a_mul_as_in_pytorch():
    def names(T):
        T.manual_seed(0)
        out, _ = T.nn.LSTM(3, 4, num_layers=2, dropout=0.5)(T.zeros(5, 2, 3))
        return graph(out.grad_fn, depth=2)

    assert names(nbgrad) == names(torch)
