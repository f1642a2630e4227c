"""Programs shaped like PyTorch's autograd tutorials (docs/programs.md), run with both nbgrad and
PyTorch: the same calls, written here in our own words. Only random starting weights differ."""

import math

import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch


def fit_polynomial(lib, start=None, steps=300):
    """Fit a + b x + c x^2 + d x^3 to sin(x) by hand-written gradient descent, with the device
    chosen through ``lib.accelerator`` and set as the default device."""
    where = lib.accelerator.current_accelerator().type if lib.accelerator.is_available() else "cpu"
    lib.set_default_device(where)
    try:
        kind = lib.float
        xs = lib.linspace(-math.pi, math.pi, 2000, dtype=kind)
        target = lib.sin(xs)
        if start is None:
            weights = [lib.randn((), dtype=kind, requires_grad=True) for _ in range(4)]
        else:
            weights = [lib.tensor(w, dtype=kind, requires_grad=True) for w in start]
        rate = 1e-6
        losses = []
        for step in range(steps):
            a, b, c, d = weights
            prediction = a + b * xs + c * xs**2 + d * xs**3
            loss = (prediction - target).pow(2).sum()
            if step % 100 == 99:
                losses.append(loss.item())
            loss.backward()
            with lib.no_grad():
                for w in weights:
                    w -= rate * w.grad
                    w.grad = None
        return [w.item() for w in weights], losses
    finally:
        lib.set_default_device(None)


def make_legendre(lib):
    class Legendre3(lib.autograd.Function):
        """P3(u) = (5 u^3 - 3 u) / 2, with its derivative written by hand."""

        @staticmethod
        def forward(ctx, u):
            ctx.save_for_backward(u)
            return 0.5 * (5 * u**3 - 3 * u)

        @staticmethod
        def backward(ctx, grad_output):
            (u,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * u**2 - 1)

    return Legendre3


def fit_legendre(lib, steps=300):
    """Fit a + b P3(c + d x) to sin(x) through a custom autograd Function."""
    place = lib.device("cpu")
    kind = lib.float
    xs = lib.linspace(-math.pi, math.pi, 2000, device=place, dtype=kind)
    target = lib.sin(xs)
    start = (0.0, -1.0, 0.0, 0.3)
    weights = [lib.full((), s, device=place, dtype=kind, requires_grad=True) for s in start]
    p3 = make_legendre(lib).apply
    rate = 5e-6
    losses = []
    grad_fn = None
    for step in range(steps):
        a, b, c, d = weights
        prediction = a + b * p3(c + d * xs)
        loss = (prediction - target).pow(2).sum()
        grad_fn = type(prediction.grad_fn).__name__
        if step % 100 == 99:
            losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            for w in weights:
                w -= rate * w.grad
                w.grad = None
    return [w.item() for w in weights], losses, grad_fn


def test_polynomial_autograd_from_the_same_start_matches_torch():
    start = (0.1, -0.2, 0.3, -0.4)
    ours = fit_polynomial(nbgrad, start)
    theirs = fit_polynomial(torch, start)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-4, abs=1e-6)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-4)


def test_polynomial_autograd_from_random_weights_learns():
    nbgrad.manual_seed(0)
    (a, b, c, d), losses = fit_polynomial(nbgrad, steps=2000)
    assert losses[-1] < losses[0] and losses[-1] < 50
    assert nbgrad.get_default_device() == nbgrad.device("cpu")


def test_polynomial_custom_function_matches_torch():
    ours = fit_legendre(nbgrad)
    theirs = fit_legendre(torch)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-4, abs=1e-6)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-4)
    assert ours[2] == theirs[2] == "AddBackward0"


def test_zeroing_grad_with_a_float_fails_as_in_torch():
    """The current autograd tutorial ends its loop with ``a.grad = 0.``: both refuse it."""
    messages = []
    for lib in (nbgrad, torch):
        a = lib.randn((), requires_grad=True)
        (a * 2).backward()
        with pytest.raises(TypeError) as caught, lib.no_grad():
            a.grad = 0.0
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


# --- the programs of docs/programs.md, paraphrased: the same calls, our own code -------------
# Each builder takes the library and returns plain numbers (NumPy arrays), so that one
# assertion compares nbgrad with PyTorch from the same starting values.

import numpy as np  # noqa: E402


def _numbers(tensor):
    return np.array(tensor.detach().numpy(), dtype=np.float64)


def micrograd_style_expression(lib):
    """Scalar arithmetic in double precision, as micrograd's engine test checks its Value
    class against PyTorch: relu, powers, in-expression reuse, division by a tensor."""
    a = lib.Tensor([-3.0]).double()
    b = lib.Tensor([1.5]).double()
    a.requires_grad = True
    b.requires_grad = True
    c = a * b + b**3
    c = c + c * 2 + (b + a).relu()
    d = (a - b).relu() * c + 1
    e = d**2 / 4.0 + 7.0 / d
    e.backward()
    return _numbers(e), _numbers(a.grad), _numbers(b.grad)


def test_micrograd_style_expression_matches_torch():
    for mine, real in zip(micrograd_style_expression(nbgrad), micrograd_style_expression(torch)):
        np.testing.assert_allclose(mine, real, rtol=1e-12)


def _bigram_data(lib):
    rng = np.random.default_rng(11)
    xs = lib.tensor(rng.integers(0, 7, 40))
    ys = lib.tensor(rng.integers(0, 7, 40))
    return xs, ys


def neural_bigram(lib, steps=5):
    """A one-layer bigram model trained by hand: one_hot, @, exp, a row sum with
    ``keepdims=True`` (NumPy's name, as the lecture writes it), log-likelihood of the picked
    entries, an L2 term, and updates through ``.data``."""
    xs, ys = _bigram_data(lib)
    start = np.random.default_rng(2).standard_normal((7, 7))
    weights = lib.tensor(start, dtype=lib.float32, requires_grad=True)
    losses = []
    for _ in range(steps):
        encoded = lib.nn.functional.one_hot(xs, num_classes=7).float()
        counts = (encoded @ weights).exp()
        probs = counts / counts.sum(1, keepdims=True)
        loss = -probs[lib.arange(len(xs)), ys].log().mean() + 0.01 * (weights**2).mean()
        losses.append(loss.item())
        weights.grad = None
        loss.backward()
        weights.data += -10 * weights.grad
    return np.array(losses), _numbers(weights)


def test_neural_bigram_matches_torch():
    for mine, real in zip(neural_bigram(nbgrad), neural_bigram(torch)):
        np.testing.assert_allclose(mine, real, rtol=1e-5, atol=1e-6)


def counted_bigram(lib):
    """Bigram counts in an int32 table, smoothed, normalised with ``keepdims``, and the
    average negative log-likelihood of the data under it."""
    xs, ys = _bigram_data(lib)
    table = lib.zeros((7, 7), dtype=lib.int32)
    for x, y in zip(xs.tolist(), ys.tolist()):
        table[x, y] += 1
    probs = (table + 1).float()
    probs /= probs.sum(1, keepdims=True)
    return _numbers(probs), -probs[xs, ys].log().mean().item()


def test_counted_bigram_matches_torch():
    mine, real = counted_bigram(nbgrad), counted_bigram(torch)
    np.testing.assert_allclose(mine[0], real[0], rtol=1e-6)
    assert mine[1] == pytest.approx(real[1], rel=1e-6)


def _mlp_start(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) * 0.3 for shape in shapes]


def character_mlp(lib, steps=4):
    """The makemore MLP: an embedding table indexed by a batch of contexts (``C[X]``),
    ``view`` to concatenate, tanh, cross_entropy, plain SGD on a parameter list."""
    rng = np.random.default_rng(4)
    contexts = lib.tensor(rng.integers(0, 9, (24, 3)))
    targets = lib.tensor(rng.integers(0, 9, 24))
    table, w1, b1, w2, b2 = (
        lib.tensor(v, dtype=lib.float32)
        for v in _mlp_start([(9, 2), (6, 20), (20,), (20, 9), (9,)], 5)
    )
    parameters = [table, w1, b1, w2, b2]
    for p in parameters:
        p.requires_grad = True
    losses = []
    for _ in range(steps):
        embedded = table[contexts]
        hidden = lib.tanh(embedded.view(-1, 6) @ w1 + b1)
        loss = lib.nn.functional.cross_entropy(hidden @ w2 + b2, targets)
        losses.append(loss.item())
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            p.data += -0.1 * p.grad
    return [np.array(losses)] + [_numbers(p) for p in parameters]


def test_character_mlp_matches_torch():
    for mine, real in zip(character_mlp(nbgrad), character_mlp(torch)):
        np.testing.assert_allclose(mine, real, rtol=1e-5, atol=1e-6)


def hand_written_batchnorm(lib):
    """The batch-norm lecture's layer written out: batch mean and (biased and unbiased)
    variance with ``keepdim``, running statistics updated under ``no_grad``, gain and bias,
    then ``torch.histogram`` of the activations (density) as the lecture plots them."""
    rng = np.random.default_rng(8)
    x = lib.tensor(rng.standard_normal((32, 5)) * 3 + 1, dtype=lib.float32)
    weight = lib.tensor(rng.standard_normal((5, 6)), dtype=lib.float32, requires_grad=True)
    gain = lib.ones((1, 6), requires_grad=True)
    bias = lib.zeros((1, 6), requires_grad=True)
    running_mean, running_var = lib.zeros((1, 6)), lib.ones((1, 6))
    pre = x @ weight
    mean = pre.mean(0, keepdim=True)
    var = pre.var(0, keepdim=True)
    normalised = gain * (pre - mean) / lib.sqrt(pre.var(0, keepdim=True, unbiased=False) + 1e-5)
    out = lib.tanh(normalised + bias)
    with lib.no_grad():
        running_mean = 0.999 * running_mean + 0.001 * mean
        running_var = 0.999 * running_var + 0.001 * var
    out.retain_grad()
    (out**2).mean().backward()
    counts, edges = lib.histogram(out.detach(), bins=10, density=True)
    saturated = (out.abs() > 0.97).float().mean().item()
    return [
        _numbers(out),
        _numbers(weight.grad),
        _numbers(gain.grad),
        _numbers(running_mean),
        _numbers(running_var),
        _numbers(counts),
        _numbers(edges),
        np.array(saturated),
        _numbers(out.grad),
    ]


def test_hand_written_batchnorm_matches_torch():
    for mine, real in zip(hand_written_batchnorm(nbgrad), hand_written_batchnorm(torch)):
        np.testing.assert_allclose(mine, real, rtol=1e-4, atol=1e-5)


def manual_backward_of_cross_entropy(lib):
    """ "Backprop ninja": the loss written op by op (max-subtracted logits, exp, sum,
    ``**-1``, log, fancy-indexed mean), every intermediate's grad retained, and the gradient
    of the logits written by hand, compared with autograd's."""
    rng = np.random.default_rng(6)
    logits = lib.tensor(rng.standard_normal((8, 5)), dtype=lib.float32, requires_grad=True)
    targets = lib.tensor(rng.integers(0, 5, 8))
    n = logits.shape[0]
    maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - maxes
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdims=True)
    counts_sum_inv = counts_sum**-1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), targets].mean()
    for t in (maxes, norm_logits, counts, counts_sum, counts_sum_inv, probs, logprobs):
        t.retain_grad()
    loss.backward()
    by_hand = lib.nn.functional.softmax(logits, 1)
    by_hand[range(n), targets] -= 1
    by_hand /= n
    grads = [_numbers(t.grad) for t in (counts_sum_inv, counts_sum, probs, logprobs, logits)]
    return [_numbers(loss)] + grads + [_numbers(by_hand.detach())]


def test_manual_backward_checks_match_torch():
    mine = manual_backward_of_cross_entropy(nbgrad)
    real = manual_backward_of_cross_entropy(torch)
    for got, want in zip(mine, real):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(mine[-1], mine[-2], atol=1e-7)  # the hand-written gradient


def lstm_tagger(lib, epochs=3):
    """The sequence-models tutorial's tagger: Embedding, a one-layer LSTM stepped over a
    sentence with a hidden state given as ``(h, c)``, Linear, log_softmax, NLLLoss, SGD; the
    legacy ``LongTensor`` and ``autograd.Variable`` as the tutorial writes them."""
    sentences = [[0, 1, 2, 0, 3], [4, 2, 5, 3]]
    tags = [[0, 1, 2, 0, 1], [1, 2, 0, 1]]
    shapes = [(6, 4), (12, 4), (12, 3), (12,), (12,), (3, 3), (3,)]
    start = _mlp_start(shapes, 9)
    embedding, lstm, linear = lib.nn.Embedding(6, 4), lib.nn.LSTM(4, 3), lib.nn.Linear(3, 3)
    with lib.no_grad():
        params = [embedding.weight, *lstm.parameters(), *linear.parameters()]
        for param, values in zip(params, start):
            param.copy_(lib.tensor(values, dtype=lib.float32))
    model = lib.nn.ModuleList([embedding, lstm, linear])
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    loss_function = lib.nn.NLLLoss()

    def scores(words):
        hidden = (lib.zeros(1, 1, 3), lib.zeros(1, 1, 3))
        embedded = embedding(lib.autograd.Variable(lib.LongTensor(words)))
        out, hidden = lstm(embedded.view(len(words), 1, -1), hidden)
        return lib.nn.functional.log_softmax(linear(out.view(len(words), -1)), dim=1)

    for _ in range(epochs):
        for words, labels in zip(sentences, tags):
            model.zero_grad()
            loss = loss_function(scores(words), lib.LongTensor(labels))
            loss.backward()
            optimizer.step()
    return _numbers(scores(sentences[0])), type(loss.grad_fn).__name__


def test_lstm_tagger_matches_torch():
    mine, real = lstm_tagger(nbgrad), lstm_tagger(torch)
    np.testing.assert_allclose(mine[0], real[0], rtol=1e-5, atol=1e-6)
    assert mine[1] == real[1] == "NllLossBackward0"


def ngram_language_model(lib, epochs=2):
    """The word-embeddings tutorial's n-gram model: an embedding of a two-word context
    ``view``-ed to one row, relu, log_softmax, NLLLoss, and the epoch's loss summed into a
    ``torch.Tensor([0])`` with ``+= loss.data``."""
    trigrams = [((0, 1), 2), ((1, 2), 3), ((2, 3), 0), ((3, 0), 4), ((0, 4), 1)]
    start = _mlp_start([(5, 3), (8, 6), (8,), (5, 8), (5,)], 12)
    embeddings, first, second = lib.nn.Embedding(5, 3), lib.nn.Linear(6, 8), lib.nn.Linear(8, 5)
    params = [embeddings.weight, first.weight, first.bias, second.weight, second.bias]
    with lib.no_grad():
        for param, values in zip(params, start):
            param.copy_(lib.tensor(values, dtype=lib.float32))
    optimizer = lib.optim.SGD(params, lr=0.05)
    totals = []
    for _ in range(epochs):
        total = lib.Tensor([0])
        for context, target in trigrams:
            optimizer.zero_grad()
            hidden = lib.nn.functional.relu(
                first(embeddings(lib.LongTensor(context)).view((1, -1)))
            )
            log_probs = lib.nn.functional.log_softmax(second(hidden), dim=1)
            loss = lib.nn.NLLLoss()(log_probs, lib.LongTensor([target]))
            loss.backward()
            optimizer.step()
            total += loss.data
        totals.append(_numbers(total))
    return totals


def test_ngram_language_model_matches_torch():
    for mine, real in zip(ngram_language_model(nbgrad), ngram_language_model(torch)):
        np.testing.assert_allclose(mine, real, rtol=1e-5)


def extending_autograd(lib):
    """The "Extending PyTorch" note's Functions: a linear Function reading
    ``ctx.needs_input_grad`` with an optional bias, checked by ``gradcheck``; a
    multiply-by-constant Function with a non-tensor argument and
    ``set_materialize_grads(False)``."""

    class LinearFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias=None):
            ctx.save_for_backward(x, weight, bias)
            out = x.mm(weight.t())
            if bias is not None:
                out += bias.unsqueeze(0).expand_as(out)
            return out

        @staticmethod
        def backward(ctx, grad_out):
            x, weight, bias = ctx.saved_tensors
            grads = [None, None, None]
            if ctx.needs_input_grad[0]:
                grads[0] = grad_out.mm(weight)
            if ctx.needs_input_grad[1]:
                grads[1] = grad_out.t().mm(x)
            if bias is not None and ctx.needs_input_grad[2]:
                grads[2] = grad_out.sum(0)
            return tuple(grads)

    class TimesConstant(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, constant):
            ctx.set_materialize_grads(False)
            ctx.constant = constant
            return x * constant

        @staticmethod
        def backward(ctx, grad_out):
            if grad_out is None:
                return None, None
            return grad_out * ctx.constant, None

    rng = np.random.default_rng(13)
    x = lib.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    weight = lib.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    bias = lib.tensor(rng.standard_normal(2))  # does not require grad
    checked = lib.autograd.gradcheck(LinearFn.apply, (x, weight), eps=1e-6, atol=1e-4)
    out = LinearFn.apply(x, weight, bias)
    scaled = TimesConstant.apply(out, 2.5)
    (scaled**2).sum().backward()
    return checked, _numbers(x.grad), _numbers(weight.grad), bias.grad, type(out.grad_fn).__name__


def test_extending_autograd_functions_match_torch():
    mine, real = extending_autograd(nbgrad), extending_autograd(torch)
    assert mine[0] is real[0] is True
    np.testing.assert_allclose(mine[1], real[1], rtol=1e-12)
    np.testing.assert_allclose(mine[2], real[2], rtol=1e-12)
    assert mine[3] is None and real[3] is None
    assert mine[4] == real[4] == "LinearFnBackward"


def autograd_functional_calls(lib):
    """The "Fundamentals of Autograd" video tutorial's high-level API calls: ``jacobian`` of a
    two-input function, ``vjp`` of a function that doubles until the norm passes 1000
    (``y.data.norm()``), and ``backward(v)`` of a vector output."""

    def exp_adder(x, y):
        return 2 * x.exp() + 3 * y

    def doubling(x):
        y = x * 2
        while y.data.norm() < 1000:
            y = y * 2
        return y

    pair = (lib.tensor([0.2, 0.5, 0.9]), lib.tensor([0.1, 0.4, 0.3]))
    jacobians = lib.autograd.functional.jacobian(exp_adder, pair)
    start = lib.tensor([0.3, -1.2, 0.8])
    value, vjp = lib.autograd.functional.vjp(doubling, start, v=lib.tensor([0.1, 1.0, 0.0001]))
    leaf = start.clone().requires_grad_(True)
    doubling(leaf).backward(lib.tensor([0.1, 1.0, 0.0001]))
    return [_numbers(j) for j in jacobians] + [_numbers(value), _numbers(vjp), _numbers(leaf.grad)]


def test_autograd_functional_calls_match_torch():
    for mine, real in zip(autograd_functional_calls(nbgrad), autograd_functional_calls(torch)):
        np.testing.assert_allclose(mine, real, rtol=1e-6)


NUMPY_NAMED_CALLS = {
    "sum keepdims": lambda lib, x: x.sum(1, keepdims=True),
    "mean axis keepdims": lambda lib, x: lib.mean(x, axis=0, keepdims=True),
    "max axis": lambda lib, x: x.max(axis=1).values,
    "amax keepdims": lambda lib, x: x.amax(1, keepdims=True),
    "std axis": lambda lib, x: x.std(axis=0),
    "logsumexp keepdims": lambda lib, x: lib.logsumexp(x, 1, keepdims=True),
    "cat axis": lambda lib, x: lib.cat([x, x * 2], axis=1),
    "squeeze axis": lambda lib, x: x[None].squeeze(axis=0),
    "flip dims": lambda lib, x: lib.flip(x, dims=[0, 1]),
    "flip method dims": lambda lib, x: x.flip(dims=(1,)),
}


@pytest.mark.parametrize("case", NUMPY_NAMED_CALLS)
def test_numpy_argument_names_match_torch(case):
    """PyTorch's parser takes ``axis`` for ``dim`` and ``keepdims`` for ``keepdim`` (the
    makemore lectures write ``keepdims=True``); the values and gradients are the same."""
    values = np.random.default_rng(3).standard_normal((3, 4))
    results = []
    for lib in (nbgrad, torch):
        x = lib.tensor(values, requires_grad=True)
        out = NUMPY_NAMED_CALLS[case](lib, x)
        out.sum().backward()
        results.append((_numbers(out), _numbers(x.grad), type(out.grad_fn).__name__))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)
    assert results[0][2] == results[1][2]


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: x.sum(1, keepdim=True, keepdims=True),
        lambda lib, x: x.sum(dim=1, axis=1),
        lambda lib, x: lib.flip(x, 0, dims=[0]),
    ],
)
def test_both_names_refused_as_in_torch(call):
    raised = []
    for lib in (nbgrad, torch):
        with pytest.raises(TypeError) as info:
            call(lib, lib.ones(2, 3))
        raised.append(str(info.value))
    assert raised[0].split("(")[0] == raised[1].split("(")[0]


HISTOGRAMS = {
    "default bins density": {"density": True},
    "range": {"bins": 5, "range": (-1.0, 1.0)},
    "given edges": {"bins": "edges"},
    "weights": {"bins": 4, "weight": "weights"},
}


@pytest.mark.parametrize("case", HISTOGRAMS)
def test_histogram_matches_torch(case):
    values = np.random.default_rng(7).standard_normal(500).astype(np.float32)
    results = []
    for lib in (nbgrad, torch):
        options = dict(HISTOGRAMS[case])
        if options.get("bins") == "edges":
            options["bins"] = lib.tensor([-2.0, -0.5, 0.0, 3.0])
        if options.get("weight") == "weights":
            options["weight"] = lib.tensor(np.linspace(0, 1, 500), dtype=lib.float32)
        result = lib.histogram(lib.tensor(values), **options)
        results.append((_numbers(result.hist), _numbers(result.bin_edges), result.hist.dtype))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
    # edges: float32 linspace rounds its own way (within 1e-6 of the range)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-6)
    assert str(results[0][2]) == str(results[1][2])


def test_histogram_errors_match_torch():
    for call in (
        lambda lib: lib.histogram(lib.tensor([1, 2])),
        lambda lib: lib.histogram(lib.tensor([1.0, 2.0]), bins=0),
        lambda lib: lib.histogram(lib.tensor([1.0, 2.0]), bins=3, range=(1.0, 0.0)),
    ):
        raised = []
        for lib in (nbgrad, torch):
            with pytest.raises(Exception) as info:
                call(lib)
            raised.append((type(info.value), str(info.value)))
        assert raised[0] == raised[1]


def per_sample_gradients(lib):
    """The per-sample-gradients tutorial's calls on a smaller CNN: per-sample grads by a loop of
    ``autograd.grad`` over ``unsqueeze(0)``-ed samples, and by ``vmap(grad(compute_loss),
    in_dims=(None, None, 0, 0))`` over ``functional_call(model, (params, buffers), ...)`` with
    detached parameters."""
    rng = np.random.default_rng(3)
    model = lib.nn.Sequential(
        lib.nn.Conv2d(1, 3, 3),
        lib.nn.ReLU(),
        lib.nn.MaxPool2d(2),
        lib.nn.Flatten(),
        lib.nn.Linear(12, 4),
        lib.nn.LogSoftmax(dim=1),
    )
    with lib.no_grad():
        for param in model.parameters():
            param.copy_(lib.tensor(rng.normal(0, 0.4, tuple(param.shape)), dtype=lib.float32))
    data = lib.tensor(rng.standard_normal((5, 1, 6, 6)), dtype=lib.float32)
    targets = lib.tensor([0, 3, 1, 1, 2])

    def loss_fn(predictions, target):
        return lib.nn.functional.nll_loss(predictions, target)

    looped = [
        lib.autograd.grad(
            loss_fn(model(data[i].unsqueeze(0)), targets[i].unsqueeze(0)),
            list(model.parameters()),
        )
        for i in range(len(data))
    ]
    looped = [lib.stack(shards) for shards in zip(*looped)]

    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = lib.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return loss_fn(predictions, target.unsqueeze(0))

    mapped = lib.func.vmap(lib.func.grad(compute_loss), in_dims=(None, None, 0, 0))(
        params, buffers, data, targets
    )
    return [g.numpy() for g in looped], {k: g.numpy() for k, g in mapped.items()}


def test_per_sample_gradients_match_torch():
    looped, mapped = per_sample_gradients(nbgrad)
    real_looped, real_mapped = per_sample_gradients(torch)
    assert list(mapped) == list(real_mapped) == ["0.weight", "0.bias", "4.weight", "4.bias"]
    for ours, theirs, by_vmap, their_vmap in zip(
        looped, real_looped, mapped.values(), real_mapped.values(), strict=True
    ):
        assert ours.shape == by_vmap.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(by_vmap, their_vmap, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(by_vmap, ours, rtol=1e-6, atol=1e-7)
