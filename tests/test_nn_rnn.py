"""RNNCell, LSTMCell, GRUCell, RNN, LSTM and GRU against PyTorch: with PyTorch's weights (loaded
through load_state_dict), the same outputs, gradients and graph, node for node (float64, where
PyTorch's CPU LSTM records its decomposition; float32 values too)."""

import warnings

import numpy as np
import pytest
from graph_compare import structure, to_numpy
from nn_compare import run_both
from test_nn_gradcheck import module_case, normal

import nbgrad
from nbgrad.autograd import gradcheck, gradgradcheck


def _cell(layer, *args, shape, hidden=None, **kwargs):
    def case(T, m):
        module = m.module(getattr(T.nn, layer)(*args, **kwargs))
        x = m.input(*shape)
        if hidden is None:
            return module(x)
        if layer == "LSTMCell":
            return module(x, (m.input(*hidden), m.input(*hidden)))
        return module(x, m.input(*hidden))

    return case


def _seq(layer, *args, shape, hidden=None, evaluate=False, cell=None, **kwargs):
    def case(T, m):
        module = m.module(getattr(T.nn, layer)(*args, **kwargs))
        if evaluate:
            module.eval()
        x = m.input(*shape)
        if hidden is None:
            out = module(x)
        elif layer == "LSTM":
            out = module(x, (m.input(*hidden), m.input(*(cell or hidden))))
        else:
            out = module(x, m.input(*hidden))
        output, state = out
        return (output, *state) if isinstance(state, tuple) else (output, state)

    return case


CASES = {
    "rnn cell": _cell("RNNCell", 4, 5, shape=(3, 4), hidden=(3, 5)),
    "rnn cell no hidden": _cell("RNNCell", 4, 5, shape=(3, 4)),
    "rnn cell relu no bias": _cell(
        "RNNCell", 4, 5, bias=False, nonlinearity="relu", shape=(3, 4), hidden=(3, 5)
    ),
    "rnn cell unbatched": _cell("RNNCell", 4, 5, shape=(4,), hidden=(5,)),
    "lstm cell": _cell("LSTMCell", 4, 5, shape=(3, 4), hidden=(3, 5)),
    "lstm cell no hidden": _cell("LSTMCell", 4, 5, shape=(3, 4)),
    "lstm cell no bias unbatched": _cell("LSTMCell", 4, 5, bias=False, shape=(4,), hidden=(5,)),
    "gru cell": _cell("GRUCell", 4, 5, shape=(3, 4), hidden=(3, 5)),
    "gru cell no hidden": _cell("GRUCell", 4, 5, shape=(3, 4)),
    "gru cell unbatched": _cell("GRUCell", 4, 5, shape=(4,), hidden=(5,)),
    "rnn": _seq("RNN", 4, 5, shape=(6, 3, 4)),
    "rnn hidden": _seq("RNN", 4, 5, shape=(6, 3, 4), hidden=(1, 3, 5)),
    "rnn two layers relu": _seq("RNN", 4, 5, 2, nonlinearity="relu", shape=(6, 3, 4)),
    "rnn batch first no bias": _seq("RNN", 4, 5, bias=False, batch_first=True, shape=(3, 6, 4)),
    "rnn bidirectional": _seq("RNN", 4, 5, 2, bidirectional=True, shape=(6, 3, 4)),
    "rnn unbatched": _seq("RNN", 4, 5, shape=(6, 4), hidden=(1, 5)),
    "lstm": _seq("LSTM", 4, 5, shape=(6, 3, 4)),
    "lstm hidden": _seq("LSTM", 4, 5, shape=(6, 3, 4), hidden=(1, 3, 5)),
    "lstm two layers batch first": _seq("LSTM", 4, 5, 2, batch_first=True, shape=(3, 6, 4)),
    "lstm bidirectional hidden": _seq(
        "LSTM", 4, 5, 2, bidirectional=True, shape=(6, 3, 4), hidden=(4, 3, 5)
    ),
    "lstm unbatched no bias": _seq("LSTM", 4, 5, bias=False, shape=(6, 4)),
    "lstm eval dropout": _seq("LSTM", 4, 5, 3, dropout=0.5, evaluate=True, shape=(5, 2, 4)),
    "gru": _seq("GRU", 4, 5, shape=(6, 3, 4)),
    "gru hidden two layers": _seq("GRU", 4, 5, 2, shape=(6, 3, 4), hidden=(2, 3, 5)),
    "gru bidirectional batch first": _seq(
        "GRU", 4, 5, bidirectional=True, batch_first=True, shape=(3, 6, 4)
    ),
    "gru unbatched": _seq("GRU", 4, 5, shape=(6, 4)),
    "gru unbatched batch first": _seq("GRU", 4, 5, batch_first=True, shape=(6, 4)),
    "rnn unbatched batch first hidden": _seq(
        "RNN", 4, 5, batch_first=True, shape=(6, 4), hidden=(1, 5)
    ),
    "lstm proj": _seq("LSTM", 4, 5, proj_size=3, shape=(6, 3, 4)),
    "lstm proj two layers bidirectional": _seq(
        "LSTM", 4, 5, 2, bidirectional=True, proj_size=2, shape=(4, 3, 4)
    ),
    "lstm proj hidden": _seq(
        "LSTM", 4, 5, proj_size=2, shape=(4, 3, 4), hidden=(1, 3, 2), cell=(1, 3, 5)
    ),
    "lstm proj unbatched no bias batch first": _seq(
        "LSTM", 4, 5, bias=False, batch_first=True, proj_size=4, shape=(6, 4)
    ),
    "lstm classifier": lambda T, m: m.module(T.nn.Linear(5, 2))(
        m.module(T.nn.LSTM(4, 5, batch_first=True))(m.input(3, 6, 4))[0][:, -1]
    ),
}


def _assert_same_run(torch, case, dtype_name, graphs, rtol, atol):
    """Every output (h and c too) equal; gradients of a sum weighting each output equal."""
    ours, theirs, ours_maker, theirs_maker = run_both(torch, case, dtype_name)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for mine, real in zip(ours, theirs, strict=True):
        if graphs:
            assert structure(mine.grad_fn) == structure(real.grad_fn)
        assert mine.dtype.name == str(real.dtype).split(".")[1]
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=rtol, atol=atol)
    for outputs in (ours, theirs):
        total = outputs[0].sum()
        for i, out in enumerate(outputs[1:]):
            total = total + (out * (i + 2)).sum()
        total.backward()
    for mine, real in zip(ours_maker.inputs, theirs_maker.inputs, strict=True):
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
    _assert_same_run(torch, CASES[name], "float64", graphs=True, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_same_values_as_pytorch_float32(torch, name):
    """Values and gradients; PyTorch's float32 LSTM records MkldnnRnnLayerBackward0 (README)."""
    _assert_same_run(torch, CASES[name], "float32", graphs=False, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize(
    "name", ["rnn bidirectional", "lstm bidirectional hidden", "gru hidden two layers"]
)
def test_final_states_graph_matches_pytorch(torch, name):
    ours, theirs, _, _ = run_both(torch, CASES[name])
    for mine, real in zip(ours[1:], theirs[1:], strict=True):
        assert structure(mine.grad_fn) == structure(real.grad_fn)


def test_parameter_names_shapes_and_initial_bounds(torch):
    for kind in ("RNN", "LSTM", "GRU"):
        ours = getattr(nbgrad.nn, kind)(4, 6, 2, bidirectional=True)
        theirs = getattr(torch.nn, kind)(4, 6, 2, bidirectional=True)
        mine = {n: tuple(p.shape) for n, p in ours.named_parameters()}
        assert mine == {n: tuple(p.shape) for n, p in theirs.named_parameters()}
        for p in ours.parameters():
            assert np.abs(to_numpy(p)).max() <= 1 / np.sqrt(6)
        ours.load_state_dict(theirs.state_dict())
    for kind in ("RNNCell", "LSTMCell", "GRUCell"):
        ours, theirs = getattr(nbgrad.nn, kind)(3, 4), getattr(torch.nn, kind)(3, 4)
        assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
        ours.load_state_dict(theirs.state_dict())


def test_reprs_match_pytorch(torch):
    def modules(T):
        return T.nn.ModuleList(
            [
                T.nn.LSTM(4, 5, 2, batch_first=True, bidirectional=True, dropout=0.1),
                T.nn.RNN(3, 4, nonlinearity="relu", bias=False),
                T.nn.GRU(3, 4),
                T.nn.GRUCell(3, 4),
                T.nn.RNNCell(3, 4, nonlinearity="relu"),
                T.nn.LSTMCell(3, 4, bias=False),
            ]
        )

    assert repr(modules(nbgrad)) == repr(modules(torch))


ERRORS = {
    "rnn 4d": lambda T: T.nn.RNN(4, 5)(T.randn(2, 3, 4, 5)),
    "lstm 4d": lambda T: T.nn.LSTM(4, 5)(T.randn(2, 3, 4, 5)),
    "gru 4d": lambda T: T.nn.GRU(4, 5)(T.randn(2, 3, 4, 5)),
    "input size": lambda T: T.nn.RNN(4, 5)(T.randn(2, 3, 6)),
    "hidden size": lambda T: T.nn.RNN(4, 5)(T.randn(2, 3, 4), T.randn(1, 3, 6)),
    "hidden dims": lambda T: T.nn.RNN(4, 5)(T.randn(2, 3, 4), T.randn(3, 6)),
    "cell 3d": lambda T: T.nn.RNNCell(4, 5)(T.randn(2, 3, 4)),
    "lstm cell 3d": lambda T: T.nn.LSTMCell(4, 5)(T.randn(2, 3, 4)),
    "gru cell 3d": lambda T: T.nn.GRUCell(4, 5)(T.randn(2, 3, 4)),
    "cell input size": lambda T: T.nn.RNNCell(4, 5)(T.randn(3, 6)),
    "cell hidden size": lambda T: T.nn.RNNCell(4, 5)(T.randn(3, 4), T.randn(3, 6)),
    "lstm cell tensor hx": lambda T: T.nn.LSTMCell(4, 5)(T.randn(3, 4), T.randn(3, 5)),
    "nonlinearity": lambda T: T.nn.RNN(4, 5, nonlinearity="gelu"),
    "proj size negative": lambda T: T.nn.LSTM(4, 5, proj_size=-1),
    "proj size too large": lambda T: T.nn.LSTM(4, 5, proj_size=5),
    "proj size of a gru": lambda T: T.nn.GRU(4, 5, proj_size=2),
    "proj size of an rnn": lambda T: T.nn.RNN(4, 5, proj_size=2),
    "proj hidden size": lambda T: T.nn.LSTM(4, 5, proj_size=3)(
        T.randn(2, 3, 4), (T.randn(1, 3, 5), T.randn(1, 3, 5))
    ),
    "proj cell size": lambda T: T.nn.LSTM(4, 5, proj_size=3)(
        T.randn(2, 3, 4), (T.randn(1, 3, 3), T.randn(1, 3, 3))
    ),
    "dropout": lambda T: T.nn.RNN(4, 5, dropout=1.5),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_pytorch(torch, name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[name](nbgrad)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_dropout_with_one_layer_warns_as_pytorch(torch):
    with pytest.warns(UserWarning) as theirs:
        torch.nn.LSTM(4, 5, dropout=0.5)
    with pytest.warns(UserWarning) as ours:
        nbgrad.nn.LSTM(4, 5, dropout=0.5)
    assert str(ours[0].message) == str(theirs[0].message)


def test_training_dropout_between_layers_drops(torch):
    nbgrad.manual_seed(0)
    lstm = nbgrad.nn.LSTM(4, 5, 2, dropout=0.5).double()
    x = nbgrad.randn(6, 3, 4, dtype=nbgrad.float64)
    lstm.eval()
    evaluated = lstm(x)[0]
    lstm.train()
    trained = lstm(x)[0]
    assert not np.allclose(to_numpy(evaluated), to_numpy(trained))


GRADCHECK = {
    "rnn cell": lambda: module_case(nbgrad.nn.RNNCell(3, 2), normal(2, 3), normal(2, 2)),
    "lstm cell": lambda: module_case(
        nbgrad.nn.LSTMCell(3, 2), normal(2, 3), (normal(2, 2), normal(2, 2))
    ),
    "gru cell": lambda: module_case(nbgrad.nn.GRUCell(3, 2), normal(2, 3), normal(2, 2)),
    "rnn bidirectional": lambda: module_case(
        nbgrad.nn.RNN(3, 2, bidirectional=True), normal(4, 2, 3)
    ),
    "lstm two layers": lambda: module_case(nbgrad.nn.LSTM(3, 2, 2), normal(4, 2, 3)),
    "gru batch first": lambda: module_case(nbgrad.nn.GRU(3, 2, batch_first=True), normal(2, 4, 3)),
    "lstm proj": lambda: module_case(nbgrad.nn.LSTM(3, 3, 2, proj_size=2), normal(4, 2, 3)),
}


def _flat(fn):
    def flat(*args):
        out = fn(*args)
        pieces = []
        stack = [out]
        while stack:
            item = stack.pop()
            if isinstance(item, tuple):
                stack.extend(item)
            else:
                pieces.append(item)
        return tuple(pieces)

    return flat


def _case(name):
    fn, inputs = GRADCHECK[name]()
    if name == "lstm cell":  # a tuple (h, c) input: give gradcheck flat tensors
        module_fn, (x, (h, c), *params) = fn, inputs
        return (lambda x, h, c, *p: module_fn(x, (h, c))), (x, h, c, *params)
    return fn, inputs


@pytest.mark.parametrize("name", GRADCHECK)
def test_gradcheck(name):
    fn, inputs = _case(name)
    assert gradcheck(_flat(fn), inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize(
    "name", ["rnn cell", "lstm cell", "gru cell", "lstm two layers", "lstm proj"]
)
def test_gradgradcheck(name):
    fn, inputs = _case(name)
    assert gradgradcheck(_flat(fn), inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize(
    "options", [{}, {"batch_first": True, "padding_value": -1.0}, {"padding_side": "left"}]
)
def test_pad_sequence_matches_pytorch(torch, options):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 4)) for n in (3, 2, 5)]
    results = []
    for T in (nbgrad, torch):
        xs = [T.tensor(a, requires_grad=True) for a in arrays]
        padded = T.nn.utils.rnn.pad_sequence(xs, **options)
        seed = np.random.default_rng(1).standard_normal(tuple(padded.shape))
        padded.backward(T.tensor(seed))
        results.append((padded, [x.grad for x in xs]))
    (ours, our_grads), (theirs, their_grads) = results
    assert structure(ours.grad_fn) == structure(theirs.grad_fn)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
    for mine, real in zip(our_grads, their_grads):
        np.testing.assert_array_equal(to_numpy(mine), to_numpy(real))


def test_lstm_with_projections_parameters_and_repr_as_pytorch(torch):
    for T in (nbgrad, torch):
        T.manual_seed(0)
    ours = nbgrad.nn.LSTM(4, 6, 2, bidirectional=True, proj_size=3)
    theirs = torch.nn.LSTM(4, 6, 2, bidirectional=True, proj_size=3)
    assert {n: tuple(p.shape) for n, p in ours.named_parameters()} == {
        n: tuple(p.shape) for n, p in theirs.named_parameters()
    }
    assert [[tuple(p.shape) for p in w] for w in ours.all_weights] == [
        [tuple(p.shape) for p in w] for w in theirs.all_weights
    ]
    assert repr(ours) == repr(theirs)
    ours.load_state_dict(theirs.state_dict())


def test_float32_lstm_with_projections_warns_once_as_pytorch(monkeypatch):
    """PyTorch's message (checked on 2.13; it comes once per process, so it cannot be asked for
    again here), without its "(Triggered internally ...)" suffix."""
    from nbgrad import warn_once

    monkeypatch.setattr(warn_once, "given", set())
    lstm = nbgrad.nn.LSTM(2, 4, proj_size=3)
    with pytest.warns(UserWarning) as caught:
        lstm(nbgrad.randn(3, 1, 2))
    assert [str(w.message) for w in caught] == [
        "LSTM with projections is not supported with oneDNN. Using default implementation."
    ]
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lstm(nbgrad.randn(3, 1, 2))
        lstm.double()(nbgrad.randn(3, 1, 2, dtype=nbgrad.float64))
