"""nn.utils.rnn's packed sequences against PyTorch: pack_padded_sequence (sorted or not,
batch_first), pad_packed_sequence (batch_first, padding_value, total_length), pack_sequence,
unpack_sequence, unpad_sequence, and RNN / LSTM / GRU over a PackedSequence: the same values,
batch sizes and indices, graphs node for node, saved values, gradients and errors."""

import numpy as np
import pytest
from graph_compare import structure, to_numpy
from nn_compare import run_both

import nbgrad
from nbgrad.autograd import gradcheck, gradgradcheck


def whole_graph(fn):
    """Every node below ``fn`` once, numbered in the order a depth-first walk meets them:
    [(name, ((child number or None, input_nr), ...)), ...]. Two graphs are the same graph when
    these lists are equal (shared nodes included), in time linear in the graph's size."""
    numbers, nodes = {}, []

    def visit(node):
        if node is None:
            return None
        if id(node) in numbers:
            return numbers[id(node)]
        numbers[id(node)] = len(nodes)
        nodes.append(None)
        entry = len(nodes) - 1
        children = tuple((visit(child), nr) for child, nr in node.next_functions)
        nodes[entry] = (type(node).__name__, children)
        return entry

    visit(fn)
    return nodes


def _packed(T, m, lengths, batch_first=False, enforce_sorted=True, features=3):
    steps, batch = max(lengths), len(lengths)
    shape = (batch, steps, features) if batch_first else (steps, batch, features)
    x = m.input(*shape)
    return T.nn.utils.rnn.pack_padded_sequence(
        x, T.tensor(lengths), batch_first=batch_first, enforce_sorted=enforce_sorted
    )


def _pack_case(lengths, **options):
    def case(T, m):
        p = _packed(T, m, lengths, **options)
        indices = [i for i in (p.sorted_indices, p.unsorted_indices) if i is not None]
        return (p.data, p.batch_sizes, *indices)

    return case


def _pad_case(lengths, pack_options=None, **options):
    def case(T, m):
        p = _packed(T, m, lengths, **(pack_options or {}))
        return T.nn.utils.rnn.pad_packed_sequence(p, **options)

    return case


def _sequences(T, m, lengths):
    return [m.input(n, 3) for n in lengths]


def _layer_case(layer, lengths, *args, hidden=False, pack_options=None, **kwargs):
    def case(T, m):
        module = m.module(getattr(T.nn, layer)(3, 4, *args, **kwargs))
        p = _packed(T, m, lengths, **(pack_options or {}))
        if hidden:
            directions = 2 if kwargs.get("bidirectional") else 1
            layers = args[0] if args else 1
            shape = (layers * directions, len(lengths), 4)
            if layer == "LSTM":
                h_shape = (*shape[:2], kwargs.get("proj_size") or 4)
                state = (m.input(*h_shape), m.input(*shape))
            else:
                state = m.input(*shape)
            out, final = module(p, state)
        else:
            out, final = module(p)
        assert isinstance(out, T.nn.utils.rnn.PackedSequence)
        finals = final if isinstance(final, tuple) else (final,)
        padded, _ = T.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return (out.data, *finals, padded)

    return case


CASES = {
    "pack sorted": _pack_case([4, 2, 2, 1]),
    "pack unsorted": _pack_case([2, 4, 1], enforce_sorted=False),
    "pack batch first": _pack_case([3, 3, 1], batch_first=True),
    "pack batch first unsorted": _pack_case([1, 3, 2], batch_first=True, enforce_sorted=False),
    "pad": _pad_case([4, 2, 2, 1]),
    "pad batch first padding total length": _pad_case(
        [3, 2, 1], batch_first=True, padding_value=-1.5, total_length=5
    ),
    "pad unsorted batch first": _pad_case(
        [2, 4, 1, 3], {"enforce_sorted": False}, batch_first=True
    ),
    "pack sequence": lambda T, m: T.nn.utils.rnn.pack_sequence(_sequences(T, m, [4, 2, 1])).data,
    "pack sequence unsorted": lambda T, m: (
        T.nn.utils.rnn.pack_sequence(_sequences(T, m, [2, 5, 3]), enforce_sorted=False).data
    ),
    "unpack sequence": lambda T, m: tuple(
        T.nn.utils.rnn.unpack_sequence(
            T.nn.utils.rnn.pack_sequence(_sequences(T, m, [2, 4, 3]), enforce_sorted=False)
        )
    ),
    "unpad sequence": lambda T, m: tuple(
        T.nn.utils.rnn.unpad_sequence(m.input(4, 3, 2) * 1, T.tensor([4, 1, 3]))
    ),
    "rnn": _layer_case("RNN", [4, 2, 1]),
    "rnn relu two layers unsorted": _layer_case(
        "RNN", [2, 4, 4, 1], 2, nonlinearity="relu", pack_options={"enforce_sorted": False}
    ),
    "rnn bidirectional hidden": _layer_case("RNN", [3, 2, 2], bidirectional=True, hidden=True),
    "gru": _layer_case("GRU", [4, 3, 1]),
    "gru bidirectional unsorted hidden": _layer_case(
        "GRU",
        [1, 3, 4],
        bidirectional=True,
        hidden=True,
        pack_options={"enforce_sorted": False},
    ),
    "gru batch first": _layer_case(
        "GRU", [3, 1], batch_first=True, pack_options={"batch_first": True}
    ),
    "lstm": _layer_case("LSTM", [4, 2, 1]),
    "lstm hidden unsorted": _layer_case(
        "LSTM", [2, 3, 1, 3], hidden=True, pack_options={"enforce_sorted": False}
    ),
    "lstm two layers bidirectional": _layer_case("LSTM", [3, 3, 2, 1], 2, bidirectional=True),
    "lstm proj bidirectional unsorted hidden": _layer_case(
        "LSTM",
        [2, 3, 3],
        bidirectional=True,
        proj_size=2,
        hidden=True,
        pack_options={"enforce_sorted": False},
    ),
    "lstm no bias two layers": _layer_case("LSTM", [4, 1], 2, bias=False),
}


def _assert_same(torch, case, dtype_name, graphs, rtol, atol):
    ours, theirs, ours_maker, theirs_maker = run_both(torch, case, dtype_name)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for mine, real in zip(ours, theirs, strict=True):
        assert mine.dtype.name == str(real.dtype).split(".")[1]
        assert tuple(mine.shape) == tuple(real.shape)
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=rtol, atol=atol)
        if graphs:
            assert whole_graph(mine.grad_fn) == whole_graph(real.grad_fn)
    differentiable = [(a, b) for a, b in zip(ours, theirs) if b.requires_grad]
    for outputs in ([a for a, _ in differentiable], [b for _, b in differentiable]):
        total = sum(((out * (i + 1)) ** 2).sum() for i, out in enumerate(outputs))
        total.backward()
    for mine, real in zip(ours_maker.inputs, theirs_maker.inputs, strict=True):
        assert (mine.grad is None) == (real.grad is None)
        if real.grad is not None:
            np.testing.assert_allclose(
                to_numpy(mine.grad), to_numpy(real.grad), rtol=rtol * 10, atol=atol * 10
            )
    for mine, real in zip(ours_maker.modules, theirs_maker.modules, strict=True):
        pairs = zip(mine.named_parameters(), real.named_parameters(), strict=True)
        for (name, p), (name_real, q) in pairs:
            assert name == name_real
            np.testing.assert_allclose(
                to_numpy(p.grad), to_numpy(q.grad), rtol=rtol * 10, atol=atol * 10, err_msg=name
            )


@pytest.mark.parametrize("name", CASES)
def test_same_as_pytorch_float64(torch, name):
    _assert_same(torch, CASES[name], "float64", graphs=True, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith(("rnn", "gru", "lstm"))])
def test_same_values_as_pytorch_float32(torch, name):
    # Packed input never takes PyTorch's fused oneDNN LSTM: the float32 graph is the same too.
    _assert_same(torch, CASES[name], "float32", graphs=True, rtol=2e-5, atol=2e-6)


def test_pack_node_saves_what_pytorch_saves(torch):
    results = []
    for T in (nbgrad, torch):
        x = T.tensor(np.arange(24.0).reshape(3, 4, 2), requires_grad=True)
        node = T.nn.utils.rnn.pack_padded_sequence(x, [4, 2, 1], batch_first=True).data.grad_fn
        results.append(
            (
                type(node).__name__,
                node._saved_batch_first,
                tuple(node._saved_input_sym_sizes),
                to_numpy(node._saved_result1).tolist(),
                str(node._saved_result1.dtype).split(".")[-1],
            )
        )
    assert results[0] == results[1]


def test_double_backward_matches_pytorch(torch):
    """The gradient of the packing, made with create_graph=True, is PyTorch's CopySlices chain."""
    results = []
    for T in (nbgrad, torch):
        x = T.tensor(np.arange(24.0).reshape(3, 4, 2), requires_grad=True)
        p = T.nn.utils.rnn.pack_padded_sequence(x, [4, 2, 1], batch_first=True)
        g = T.tensor(np.linspace(-1, 1, 14).reshape(7, 2), requires_grad=True)
        (gx,) = T.autograd.grad(p.data, x, g, create_graph=True)
        (gx * gx).sum().backward()
        results.append((gx, g.grad))
    (gx, gg), (real_gx, real_gg) = results
    assert structure(gx.grad_fn) == structure(real_gx.grad_fn)
    np.testing.assert_array_equal(to_numpy(gx), to_numpy(real_gx))
    np.testing.assert_array_equal(to_numpy(gg), to_numpy(real_gg))


def test_packed_sequence_fields_and_conversions(torch):
    for T in (nbgrad, torch):
        p = T.nn.utils.rnn.pack_sequence([T.ones(3, 2), T.ones(1, 2)], enforce_sorted=False)
        assert PackedSequenceFields(p) == ("data", "batch_sizes", "sorted_indices",
                                           "unsorted_indices")  # fmt: skip
        assert p.to(T.float32) is p and p.float() is p and p.cpu() is p
        assert p.double().data.dtype == T.float64
        assert p.long().data.dtype == T.int64
        assert p.double().batch_sizes is p.batch_sizes
        assert not p.is_cuda
        data, batch_sizes, sorted_indices, unsorted_indices = p
        assert to_numpy(batch_sizes).tolist() == [2, 1, 1]
        assert to_numpy(sorted_indices).tolist() == [0, 1]
        legacy = T.nn.utils.rnn.PackedSequence((data, batch_sizes))
        assert legacy.sorted_indices is None and legacy.unsorted_indices is None
        inverse = T.nn.utils.rnn.invert_permutation(T.tensor([2, 0, 1]))
        assert to_numpy(inverse).tolist() == [1, 2, 0]
    assert repr(nbgrad.nn.utils.rnn.pack_sequence([nbgrad.ones(2, 1)])) == repr(
        torch.nn.utils.rnn.pack_sequence([torch.ones(2, 1)])
    )


def PackedSequenceFields(p):  # noqa: N802 - reads as the check it makes
    return type(p)._fields


ERRORS = {
    "unsorted lengths": lambda T: T.nn.utils.rnn.pack_padded_sequence(T.zeros(4, 3, 2), [2, 4, 1]),
    "length count": lambda T: T.nn.utils.rnn.pack_padded_sequence(T.zeros(4, 3, 2), [4, 2]),
    "zero length": lambda T: T.nn.utils.rnn.pack_padded_sequence(T.zeros(4, 3, 2), [4, 2, 0]),
    "zero length unsorted": lambda T: T.nn.utils.rnn.pack_padded_sequence(
        T.zeros(4, 3, 2), [0, 4, 2], enforce_sorted=False
    ),
    "2-d lengths": lambda T: T.nn.utils.rnn.pack_padded_sequence(
        T.zeros(4, 3, 2), T.tensor([[4, 2, 1]])
    ),
    "empty": lambda T: T.nn.utils.rnn.pack_padded_sequence(T.zeros(0, 3, 2), [1, 1, 1]),
    "1-d input": lambda T: T.nn.utils.rnn.pack_padded_sequence(T.zeros(4), [4]),
    "total length": lambda T: T.nn.utils.rnn.pad_packed_sequence(
        T.nn.utils.rnn.pack_padded_sequence(T.zeros(4, 3, 2), [4, 2, 1]), total_length=3
    ),
    "rnn input size": lambda T: T.nn.RNN(3, 4)(
        T.nn.utils.rnn.pack_padded_sequence(T.zeros(4, 3, 2), [4, 2, 1])
    ),
    "gru hidden size": lambda T: T.nn.GRU(2, 4)(
        T.nn.utils.rnn.pack_padded_sequence(T.zeros(4, 3, 2), [4, 2, 1]), T.zeros(1, 2, 4)
    ),
    "unpad a leaf that requires grad": lambda T: T.nn.utils.rnn.unpad_sequence(
        T.zeros(4, 3, 2, requires_grad=True), T.tensor([4, 2, 1])
    ),
    "legacy form": lambda T: T.nn.utils.rnn.PackedSequence(T.zeros(3)),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_pytorch(torch, name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[name](nbgrad)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def _float64(*shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape)
    return nbgrad.tensor(values, dtype=nbgrad.float64, requires_grad=True)


def test_gradcheck_pack_and_pad():
    def fn(x):
        p = nbgrad.nn.utils.rnn.pack_padded_sequence(x, [1, 3, 2], enforce_sorted=False)
        padded, _ = nbgrad.nn.utils.rnn.pad_packed_sequence(p, batch_first=True, total_length=4)
        return p.data, padded

    x = _float64(3, 3, 2)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_gradcheck_lstm_over_packed_sequence():
    nbgrad.manual_seed(0)
    lstm = nbgrad.nn.LSTM(2, 3, bidirectional=True).double()

    def fn(x, h, c):
        p = nbgrad.nn.utils.rnn.pack_padded_sequence(x, [3, 1, 2], enforce_sorted=False)
        out, (h_n, c_n) = lstm(p, (h, c))
        return out.data, h_n, c_n

    inputs = (_float64(3, 3, 2), _float64(2, 3, 3, seed=1), _float64(2, 3, 3, seed=2))
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)
