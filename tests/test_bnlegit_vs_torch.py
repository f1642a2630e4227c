"""Against PyTorch 2.13: batch norm's legit entry points, rrelu's double backward and
native_dropout's double backward.

- ``torch._native_batch_norm_legit`` (with running statistics, training or not; the no_stats
  overload) and ``torch._native_batch_norm_legit_no_training``: node, edges, saved values, the
  three results, the running statistics updated in place without a version bump, first and
  second derivatives and the NativeBatchNormBackwardBackward0 node a gradient of the gradient
  records; PyTorch's errors for bad input.
- ``F.rrelu`` / ``F.rrelu_`` under create_graph: RreluWithNoiseBackwardBackward0, in training
  and not.
- ``torch.native_dropout`` under create_graph: MulBackward0 by mask * scale (PyTorch's formula
  when grad mode is on), never NativeDropoutBackwardBackward0.

Each library runs the same code on the same numbers; every value is compared with PyTorch's.
"""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
INPUT = RNG.standard_normal((3, 2, 4))
WEIGHT = RNG.standard_normal(2)
BIAS = RNG.standard_normal(2)
RUNNING_MEAN = np.array([0.5, -0.2])
RUNNING_VAR = np.array([1.5, 0.7])


def _numpy(value):
    """A saved value or result as NumPy (None and Python values as they are)."""
    if hasattr(value, "detach"):
        return value.detach().numpy()
    return value


def _node_name(node):
    return None if node is None else node.name()


def _describe(node):
    """A node's name, its edges' names and its saved values."""
    saved = {k: _numpy(getattr(node, k)) for k in dir(node) if k.startswith("_saved_")}
    return node.name(), [_node_name(n) for n, _ in node.next_functions], saved


def _batch_norm(T, call, affine):
    dtype = T.float64
    x = T.tensor(INPUT, dtype=dtype, requires_grad=True)
    weight = T.tensor(WEIGHT, dtype=dtype, requires_grad=True) if affine else None
    bias = T.tensor(BIAS, dtype=dtype, requires_grad=True) if affine else None
    mean, var = T.tensor(RUNNING_MEAN, dtype=dtype), T.tensor(RUNNING_VAR, dtype=dtype)
    if call == "training":
        results = T._native_batch_norm_legit(x, weight, bias, mean, var, True, 0.1, 1e-5)
    elif call == "eval":
        results = T._native_batch_norm_legit(x, weight, bias, mean, var, False, 0.1, 1e-5)
    elif call == "no_stats":
        results = T._native_batch_norm_legit(x, weight, bias, True, 0.1, 1e-5)
    else:
        results = T._native_batch_norm_legit_no_training(x, weight, bias, mean, var, 0.1, 1e-5)
    seen = {
        "node": _describe(results[0].grad_fn),
        "results": [_numpy(r) for r in results],
        "results_require_grad": [r.requires_grad for r in results],
        "running": [mean.numpy().copy(), var.numpy().copy()],
        "versions": [mean._version, var._version],
    }
    leaves = [t for t in (x, weight, bias) if t is not None]
    grads = T.autograd.grad((results[0] ** 3).sum(), leaves, create_graph=True)
    seen["grads"] = [_numpy(g) for g in grads]
    seen["double_node"] = _describe(grads[0].grad_fn)
    seen["same_double_node"] = all(g.grad_fn is grads[0].grad_fn for g in grads)
    second = T.autograd.grad(sum((g * g).sum() for g in grads), leaves)
    seen["second"] = [_numpy(g) for g in second]
    return seen


def _assert_same(ours, theirs, where=""):
    if isinstance(theirs, dict):
        assert set(ours) == set(theirs), where
        for key in theirs:
            _assert_same(ours[key], theirs[key], f"{where}/{key}")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for k, (mine, real) in enumerate(zip(ours, theirs)):
            _assert_same(mine, real, f"{where}[{k}]")
    elif isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray), where
        assert ours.dtype == theirs.dtype, where
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12, err_msg=where)
    else:
        assert ours == theirs, where


@pytest.mark.parametrize("call", ["training", "eval", "no_stats", "no_training"])
@pytest.mark.parametrize("affine", [True, False])
def test_legit_batch_norm_matches_pytorch(call, affine):
    theirs = _batch_norm(torch, call, affine)
    _assert_same(_batch_norm(nbgrad, call, affine), theirs)
    # What PyTorch records, spelled out (so that a change of PyTorch's shows here):
    expected_node = {
        "training": "NativeBatchNormLegitBackward0",
        "eval": "NativeBatchNormLegitBackward0",
        "no_stats": "NativeBatchNormLegitBackward1",
        "no_training": "NativeBatchNormLegitNoTrainingBackward0",
    }[call]
    assert theirs["node"][0] == expected_node
    assert theirs["double_node"][0] == "NativeBatchNormBackwardBackward0"
    assert theirs["same_double_node"]
    assert theirs["versions"] == [0, 0]


def test_running_statistics_move_toward_the_batchs_in_place():
    """By hand: the batch's mean and unbiased variance per channel, at momentum 0.1."""
    x = nbgrad.tensor(INPUT)
    mean, var = nbgrad.tensor(RUNNING_MEAN), nbgrad.tensor(RUNNING_VAR)
    mean_before = mean
    output, save_mean, save_rstd = nbgrad._native_batch_norm_legit(
        x, None, None, mean, var, True, 0.1, 1e-5
    )
    per_channel = INPUT.transpose(1, 0, 2).reshape(2, -1)
    np.testing.assert_allclose(mean.numpy(), 0.9 * RUNNING_MEAN + 0.1 * per_channel.mean(1))
    np.testing.assert_allclose(var.numpy(), 0.9 * RUNNING_VAR + 0.1 * per_channel.var(1, ddof=1))
    np.testing.assert_allclose(save_mean.numpy(), per_channel.mean(1))
    np.testing.assert_allclose(save_rstd.numpy(), 1 / np.sqrt(per_channel.var(1) + 1e-5))
    centered = (INPUT - per_channel.mean(1)[None, :, None]) / np.sqrt(
        per_channel.var(1)[None, :, None] + 1e-5
    )
    np.testing.assert_allclose(output.numpy(), centered)
    assert mean is mean_before and mean._version == 0


def test_one_value_per_channel_gives_a_nan_running_variance():
    results = {}
    for T in (nbgrad, torch):
        x = T.tensor([[[1.0], [2.0]]], dtype=T.float64, requires_grad=True)
        mean, var = T.zeros(2, dtype=T.float64), T.ones(2, dtype=T.float64)
        output = T._native_batch_norm_legit(x, None, None, mean, var, True, 0.1, 1e-5)[0]
        results[T.__name__] = output.detach().numpy(), mean.numpy(), var.numpy()
    for mine, real in zip(results["nbgrad"], results["torch"]):
        np.testing.assert_array_equal(mine, real)
    assert np.isnan(results["nbgrad"][2]).all()


@pytest.mark.parametrize("call", ["training", "eval", "no_training"])
def test_changing_the_running_statistics_before_backward_is_caught(call):
    messages = []
    for T in (nbgrad, torch):
        x = T.tensor(INPUT, requires_grad=True)
        mean, var = T.tensor(RUNNING_MEAN), T.tensor(RUNNING_VAR)
        if call == "no_training":
            output = T._native_batch_norm_legit_no_training(x, None, None, mean, var, 0.1, 1e-5)
        else:
            output = T._native_batch_norm_legit(
                x, None, None, mean, var, call == "training", 0.1, 1e-5
            )
        mean.add_(1)
        with pytest.raises(RuntimeError) as caught:
            output[0].sum().backward()
        messages.append(str(caught.value).split(". Hint")[0])
    assert messages[0] == messages[1]
    assert "modified by an inplace operation" in messages[1]


def test_float32_results():
    for T in (nbgrad, torch):
        x = T.tensor(INPUT, dtype=T.float32, requires_grad=True)
        mean, var = T.zeros(2), T.ones(2)
        results = T._native_batch_norm_legit(x, None, None, mean, var, True, 0.1, 1e-5)
        assert [str(r.dtype).split(".")[-1] for r in results] == ["float32"] * 3
        assert [tuple(r.shape) for r in results] == [(3, 2, 4), (2,), (2,)]
        empty = T._native_batch_norm_legit_no_training(x, None, None, mean, var, 0.1, 1e-5)
        assert [tuple(r.shape) for r in empty] == [(3, 2, 4), (0,), (0,)]


def _outcome(T, call):
    try:
        call(T)
    except Exception as error:  # noqa: BLE001 - compared by type and message
        return type(error).__name__, str(error)
    return None


def _legit(T, x, weight=None, bias=None, mean=None, var=None, training=True):
    mean = T.zeros(2, dtype=T.float64) if mean is None else mean
    var = T.ones(2, dtype=T.float64) if var is None else var
    return T._native_batch_norm_legit(x, weight, bias, mean, var, training, 0.1, 1e-5)


def _f32(T, *shape):
    return T.ones(*shape, dtype=T.float32)


def _f64(T, *shape):
    return T.ones(*shape, dtype=T.float64)


BAD_CALLS = {
    "one-dim-input": lambda T: _legit(T, _f64(T, 4)),
    "empty-input": lambda T: _legit(T, _f64(T, 0, 2, 3)),
    "integer-input": lambda T: _legit(T, T.ones(3, 2, dtype=T.long)),
    "no_training-integer": lambda T: T._native_batch_norm_legit_no_training(
        T.ones(3, 2, dtype=T.long), None, None, _f64(T, 2), _f64(T, 2), 0.1, 1e-5
    ),
    "double-weight": lambda T: _legit(T, _f32(T, 3, 2), _f64(T, 2), None, _f32(T, 2), _f32(T, 2)),
    "float-weight": lambda T: _legit(T, _f64(T, 3, 2), _f32(T, 2)),
    "float-bias": lambda T: _legit(T, _f64(T, 3, 2), _f64(T, 2), _f32(T, 2)),
    "float-running-var": lambda T: _legit(T, _f64(T, 3, 2), None, None, _f64(T, 2), _f32(T, 2)),
    "double-stats-only": lambda T: _legit(T, _f32(T, 3, 2)),
    "all-float-parameters": lambda T: _legit(
        T, _f64(T, 3, 2), _f32(T, 2), _f32(T, 2), _f32(T, 2), _f32(T, 2)
    ),
    "no_stats-float-parameters": lambda T: T._native_batch_norm_legit(
        _f64(T, 3, 2), _f32(T, 2), _f32(T, 2), True, 0.1, 1e-5
    ),
    "training-not-bool": lambda T: _legit(T, _f64(T, 3, 2), training=1),
    "no_stats-training-not-bool": lambda T: T._native_batch_norm_legit(
        _f64(T, 3, 2), None, None, 1, 0.1, 1e-5
    ),
    "running-mean-requires-grad": lambda T: _legit(
        T, _f64(T, 3, 2), mean=T.zeros(2, dtype=T.float64, requires_grad=True)
    ),
    "no_training-running-var-requires-grad": lambda T: T._native_batch_norm_legit_no_training(
        _f64(T, 3, 2),
        None,
        None,
        _f64(T, 2),
        T.ones(2, dtype=T.float64, requires_grad=True),
        0.1,
        1e-5,
    ),
    "running-mean-none": lambda T: T._native_batch_norm_legit(
        _f64(T, 3, 2), None, None, None, _f64(T, 2), True, 0.1, 1e-5
    ),
    "running-var-none": lambda T: T._native_batch_norm_legit(
        _f64(T, 3, 2), None, None, _f64(T, 2), None, True, 0.1, 1e-5
    ),
    "too-many-arguments": lambda T: T._native_batch_norm_legit(
        _f64(T, 3, 2), None, None, True, 0.1, 1e-5, 3
    ),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_input_raises_pytorchs_error(name):
    theirs = _outcome(torch, BAD_CALLS[name])
    assert theirs is not None
    assert _outcome(nbgrad, BAD_CALLS[name]) == theirs


def test_what_pytorch_leaves_unchecked_is_refused():
    """PyTorch 2.13 reads past the memory of running statistics or affine parameters with fewer
    elements than channels, crashes on the no_stats overload with training=False, and fails
    inside its SmallVector for a 0-dim input: nbgrad refuses each with a message."""
    x = nbgrad.ones(3, 2, dtype=nbgrad.float64)
    with pytest.raises(IndexError, match="Dimension out of range"):
        _legit(nbgrad, nbgrad.tensor(1.0, dtype=nbgrad.float64))
    with pytest.raises(RuntimeError, match="running_mean should contain 2 elements"):
        _legit(nbgrad, x, mean=nbgrad.zeros(1, dtype=nbgrad.float64))
    with pytest.raises(RuntimeError, match="weight should contain 2 elements"):
        _legit(nbgrad, x, nbgrad.ones(3, dtype=nbgrad.float64))
    with pytest.raises(RuntimeError, match="only training=True can normalise"):
        nbgrad._native_batch_norm_legit(x, None, None, False, 0.1, 1e-5)


# --- rrelu under create_graph: RreluWithNoiseBackwardBackward0 -----------------------------------

RRELU_INPUT = np.array([[-1.0, 2.0, -0.5], [0.3, -2.0, 1.0]])
SEED = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def _rrelu(T, training, inplace, lower, upper):
    F = T.nn.functional
    x = T.tensor(RRELU_INPUT, dtype=T.float64, requires_grad=True)
    seed = T.tensor(SEED, dtype=T.float64, requires_grad=True)
    if inplace:
        y = F.rrelu_(x * 1, lower, upper, training=training)
    else:
        y = F.rrelu(x, lower, upper, training=training)
    noise = y.grad_fn._saved_noise.numpy()
    (grad,) = T.autograd.grad(y, x, seed, create_graph=True)
    node = grad.grad_fn
    if inplace:  # grad passes x * 1's MulBackward0 last
        assert node.name() == "MulBackward0"
        node = node.next_functions[0][0]
    name, edges, saved = _describe(node)
    if not training:  # PyTorch leaves the noise of an eval call uninitialised
        saved.pop("_saved_noise")
    grad_of_x, grad_of_seed = T.autograd.grad(grad, (x, seed), T.ones_like(grad), create_graph=True)
    seen = {
        "node": (name, edges, saved),
        "grad": grad.detach().numpy(),
        "grad_of_x": grad_of_x.detach().numpy(),
        "grad_of_seed": grad_of_seed.detach().numpy(),
        "grad_of_seed_node": _node_name(grad_of_seed.grad_fn),
    }
    return seen, noise


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_double_backward_matches_pytorch(training, inplace):
    # lower == upper: the slopes drawn in training are that number in both libraries
    ours, _ = _rrelu(nbgrad, training, inplace, 0.2, 0.2)
    theirs, _ = _rrelu(torch, training, inplace, 0.2, 0.2)
    _assert_same(ours, theirs)
    assert theirs["node"][0] == "RreluWithNoiseBackwardBackward0"
    slope = np.where(RRELU_INPUT > 0, 1.0, 0.2)
    np.testing.assert_allclose(theirs["grad"], SEED * slope)
    np.testing.assert_allclose(theirs["grad_of_seed"], slope)
    np.testing.assert_array_equal(theirs["grad_of_x"], np.zeros((2, 3)))


@pytest.mark.parametrize("training", [True, False])
def test_rrelu_double_backward_with_random_slopes(training):
    """Each library's own noise (their generators differ): the gradient is the seed times it in
    training, the mean slope otherwise; the same nodes and edges."""
    for T in (nbgrad, torch):
        seen, noise = _rrelu(T, training, False, 0.1, 0.3)
        slope = noise if training else np.where(RRELU_INPUT > 0, 1.0, 0.2)
        np.testing.assert_allclose(seen["grad"], SEED * slope)
        np.testing.assert_allclose(seen["grad_of_seed"], slope)
        assert seen["node"][:2] == (
            "RreluWithNoiseBackwardBackward0",
            ["torch::autograd::AccumulateGrad", "torch::autograd::AccumulateGrad"],
        )


# --- native_dropout under create_graph: MulBackward0 by mask * scale ------------------------------


@pytest.mark.parametrize("p", [0.0, 0.4])
@pytest.mark.parametrize("train", [True, False, None])
def test_native_dropout_gradient_of_gradient_multiplies_by_the_mask(p, train):
    """PyTorch's formula, with grad mode on, is the gradient times (mask * scale): a MulBackward0
    saving that product (scaled only when train is True), after x * 1's own MulBackward0."""
    for T in (nbgrad, torch):
        T.manual_seed(5)
        x = T.tensor(RRELU_INPUT, dtype=T.float64, requires_grad=True)
        seed = T.tensor(SEED, dtype=T.float64, requires_grad=True)
        output, mask = T.native_dropout(x * 1, p, train)
        (grad,) = T.autograd.grad(output, x, seed, create_graph=True)
        outer = grad.grad_fn
        inner = outer.next_functions[0][0]
        assert (outer.name(), inner.name()) == ("MulBackward0", "MulBackward0")
        assert [_node_name(n) for n, _ in inner.next_functions] == [
            "torch::autograd::AccumulateGrad",
            None,
        ]
        scale = 1 / (1 - p) if train is True else 1.0
        expected = mask.numpy().astype(np.float64) * scale
        np.testing.assert_allclose(inner._saved_other.numpy(), expected)
        (grad_of_seed,) = T.autograd.grad(grad.sum(), seed)
        np.testing.assert_allclose(grad_of_seed.numpy(), expected)


# --- recorded by both recorders (nbgrad's engine, real PyTorch): the same trace ---------------


def _record(program, T):
    """``program(T)`` recorded by the recorder of T's engine, as tests/test_torch_recorder.py
    records (its comparison of two traces is reused)."""
    import sys

    from nbgrad.trace.recorder import Recorder
    from nbgrad.trace.source import source_for
    from nbgrad.trace.torch_recorder import TorchRecorder

    recorder_class = TorchRecorder if T is torch else Recorder
    recorder = recorder_class(source_for(__file__), base_frame=sys._getframe(), source_kind="file")
    recorder.start()
    try:
        variables = program(T)
    finally:
        trace = recorder.finish([locals().get("variables", {})])
    return trace


def legit_batch_norm_twice(T):
    x = T.tensor(INPUT, requires_grad=True)
    w, b = T.tensor(WEIGHT, requires_grad=True), T.tensor(BIAS, requires_grad=True)
    mean, var = T.tensor(RUNNING_MEAN), T.tensor(RUNNING_VAR)
    out, save_mean, save_rstd = T._native_batch_norm_legit(x, w, b, mean, var, True, 0.1, 1e-5)
    # Every input's gradient: where PyTorch computes only some (an autograd.grad of x alone, no
    # bias), nbgrad's trace shows the others too, as it does for F.batch_norm's node.
    g, gw, gb = T.autograd.grad((out * out * out).sum(), (x, w, b), create_graph=True)
    ((g * g).sum() + (gw * gb).sum()).backward()
    return locals()


def rrelu_twice(T):
    x = T.tensor(RRELU_INPUT, requires_grad=True)
    y = T.nn.functional.rrelu(x, 0.2, 0.2, training=True)
    (g,) = T.autograd.grad((y * y).sum(), x, create_graph=True)
    g.sum().backward()
    return locals()


@pytest.mark.parametrize("program", [legit_batch_norm_twice, rrelu_twice])
def test_both_recorders_give_the_same_trace(program):
    from test_torch_recorder import assert_same_trace, backward_ops, same_values

    mine, theirs = _record(program, nbgrad), _record(program, torch)
    assert_same_trace(mine, theirs)
    ours, real = backward_ops(mine), backward_ops(theirs)
    assert ours and [o[:3] for o in ours] == [o[:3] for o in real]
    for op, other in zip(ours, real):
        assert same_values(op[3], other[3]), (op, other)
    names = {n.name for n in mine.nodes}
    assert names & {"NativeBatchNormLegitBackward0", "RreluWithNoiseBackwardBackward0"}
