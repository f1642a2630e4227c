"""Gradients of gradients against PyTorch 2.13 (FractionalMaxPool2D/3DBackwardBackward0,
MaskedScatterBackwardBackward0, EmbeddingBagBackwardBackward0, and the NotImplemented grad_fn of
segment_reduce's and embedding_bag's per-sample-weights gradients), and torch.segment_reduce
(SegmentReduceBackward0): values, gradients, graphs, saved values and errors.

Each case runs the same function through nbgrad and PyTorch, takes the gradient of its result
with create_graph=True for a fixed cotangent that requires grad, and compares that gradient's
graph (node names and next_functions, to the leaves), its node's saved values, and then the
gradient of the gradient, or the error PyTorch raises for it."""

import numpy as np
import pytest
from graph_compare import saved_names, structure, to_numpy

import nbgrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
DISTINCT_4D = RNG.permutation(40).reshape(1, 2, 5, 4) * 0.25 - 3.0
DISTINCT_5D = RNG.permutation(64).reshape(1, 1, 4, 4, 4) * 0.25 - 5.0
WEIGHT = RNG.standard_normal((5, 3))
SEGMENT_DATA = RNG.standard_normal((6, 2))


def _f(T):
    return T.nn.functional


CASES = {
    "fractional_max_pool2d": (
        lambda T, x: _f(T).fractional_max_pool2d(
            x,
            2,
            output_size=(3, 2),
            _random_samples=T.tensor([[[0.3, 0.8], [0.6, 0.1]]], dtype=T.float64),
        ),
        [DISTINCT_4D],
    ),
    "fractional_max_pool2d-unbatched": (
        lambda T, x: _f(T).fractional_max_pool2d(
            x[0],
            (2, 3),
            output_size=(2, 2),
            _random_samples=T.tensor([[[0.7, 0.2], [0.1, 0.4]]], dtype=T.float64),
        ),
        [DISTINCT_4D],
    ),
    "fractional_max_pool3d": (
        lambda T, x: _f(T).fractional_max_pool3d(
            x,
            2,
            output_size=(2, 2, 2),
            _random_samples=T.tensor([[[0.3, 0.8, 0.5]]], dtype=T.float64),
        ),
        [DISTINCT_5D],
    ),
    "masked_scatter": (
        lambda T, x, s: x.masked_scatter(T.tensor([[True, False, True], [False, True, True]]), s),
        [RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))],
    ),
    "masked_scatter-broadcast-mask": (
        lambda T, x, s: x.masked_scatter(T.tensor([True, False, True]), s),
        [RNG.standard_normal((2, 3)), RNG.standard_normal((7,))],
    ),
    "masked_scatter-broadcast-self": (
        lambda T, x, s: T.masked_scatter(x, T.tensor([[True], [False], [True]]), s),
        [RNG.standard_normal((1, 2)), RNG.standard_normal((2, 3))],
    ),
    **{
        f"embedding_bag-{mode}": (
            lambda T, w, mode=mode: _f(T).embedding_bag(
                T.tensor([1, 2, 4, 0, 4, 3]), w, T.tensor([0, 2, 2]), mode=mode
            ),
            [WEIGHT],
        )
        for mode in ("sum", "mean", "max")
    },
    "embedding_bag-padding_idx": (
        lambda T, w: _f(T).embedding_bag(
            T.tensor([[1, 2, 4], [0, 4, 3]]), w, mode="mean", padding_idx=4
        ),
        [WEIGHT],
    ),
    "embedding_bag-per_sample_weights": (
        lambda T, w, p: _f(T).embedding_bag(
            T.tensor([1, 2, 4, 0, 4, 3]), w, T.tensor([0, 4]), mode="sum", per_sample_weights=p
        ),
        [WEIGHT, RNG.standard_normal(6)],
    ),
    **{
        f"segment_reduce-{reduce}": (
            lambda T, d, reduce=reduce: T.segment_reduce(d, reduce, lengths=T.tensor([2, 0, 3, 1])),
            [SEGMENT_DATA],
        )
        for reduce in ("sum", "mean", "max", "min", "prod")
    },
    "segment_reduce-offsets-axis1-initial": (
        lambda T, d: T.segment_reduce(
            d.reshape(2, 3, 2),
            "amax",
            offsets=T.tensor([[0, 2, 3], [0, 0, 3]]),
            axis=-2,
            initial=0.25,
        ),
        [SEGMENT_DATA],
    ),
}


def _run(T, name):
    fn, arrays = CASES[name]
    leaves = [T.tensor(a, requires_grad=True) for a in arrays]
    result = fn(T, *leaves)
    shape = tuple(result.shape)
    cotangent = T.tensor(np.linspace(-1.0, 1.5, int(np.prod(shape))).reshape(shape))
    cotangent.requires_grad_(True)
    grads = T.autograd.grad(result, leaves, cotangent, create_graph=True)
    return leaves, cotangent, result, grads


def _second_order(T, leaves, cotangent, gradient):
    weights = T.tensor(np.linspace(0.5, -2.0, gradient.numel()).reshape(tuple(gradient.shape)))
    try:
        return T.autograd.grad(gradient, [*leaves, cotangent], weights, allow_unused=True)
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's below
        return error


def _assert_saved_alike(mine, real, name):
    if isinstance(real, torch.Tensor):
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), err_msg=name)
        assert str(mine.dtype).split(".")[-1] == str(real.dtype).split(".")[-1], name
    else:
        assert mine == real, name


@pytest.mark.parametrize("name", CASES)
def test_gradient_of_the_gradient_matches_pytorch(name):
    ours = _run(nbgrad, name)
    theirs = _run(torch, name)
    np.testing.assert_allclose(to_numpy(ours[2]), to_numpy(theirs[2]), rtol=1e-12)
    for mine, real in zip(ours[3], theirs[3], strict=True):
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-12, atol=1e-14)
        assert structure(mine.grad_fn) == structure(real.grad_fn)
        assert saved_names(real.grad_fn) <= saved_names(mine.grad_fn)
        for saved in saved_names(real.grad_fn):
            _assert_saved_alike(getattr(mine.grad_fn, saved), getattr(real.grad_fn, saved), saved)
        second_mine = _second_order(nbgrad, ours[0], ours[1], mine)
        second_real = _second_order(torch, theirs[0], theirs[1], real)
        if isinstance(second_real, Exception):
            assert type(second_mine) is type(second_real), second_mine
            assert str(second_mine) == str(second_real)
            continue
        assert not isinstance(second_mine, Exception), second_mine
        for a, b in zip(second_mine, second_real, strict=True):
            assert (a is None) == (b is None)
            if b is not None:
                np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-12, atol=1e-14)


def test_the_expected_nodes_are_recorded():
    """What each case is for, spelled out (PyTorch's names, checked above to be nbgrad's)."""
    expected = {
        "fractional_max_pool2d": "FractionalMaxPool2DBackwardBackward0",
        "fractional_max_pool3d": "FractionalMaxPool3DBackwardBackward0",
        "masked_scatter": "MaskedScatterBackwardBackward0",  # (the gradient of source)
        "embedding_bag-max": "EmbeddingBagBackwardBackward0",
        "segment_reduce-prod": "NotImplemented",
    }
    for name, node in expected.items():
        grads = _run(nbgrad, name)[3]
        assert type(grads[-1].grad_fn).__name__ == node
    psw = _run(nbgrad, "embedding_bag-per_sample_weights")[3]
    assert [type(g.grad_fn).__name__ for g in psw] == [
        "EmbeddingBagBackwardBackward0",
        "NotImplemented",
    ]


def test_third_order_through_masked_scatter_and_fractional_pooling():
    """A gradient of the gradient of the gradient: MaskedScatterBackwardBackward0's own
    gradient scatters again (MaskedScatterBackward0); the pool's gathers."""
    for name in ("masked_scatter", "fractional_max_pool2d"):
        results = []
        for T in (nbgrad, torch):
            leaves, cotangent, _, grads = _run(T, name)
            shape = tuple(grads[-1].shape)
            weights = T.tensor(np.linspace(-1.0, 2.0, int(np.prod(shape))).reshape(shape))
            weights.requires_grad_(True)
            (second,) = T.autograd.grad(grads[-1], cotangent, weights, create_graph=True)
            (third,) = T.autograd.grad((second * second).sum(), weights)
            results.append((structure(second.grad_fn), to_numpy(second), to_numpy(third)))
        assert results[0][0] == results[1][0]
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)
        np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-12)


# --- torch.segment_reduce: many shapes, axes, reductions, ties, nans, zeros, initial values -----


def _random_segment_call(trial):
    rng = np.random.default_rng(trial)
    ndim = int(rng.integers(1, 4))
    axis = int(rng.integers(0, ndim))
    outer = tuple(int(v) for v in rng.integers(1, 3, size=axis))
    lengths = rng.integers(0, 4, size=(*outer, int(rng.integers(1, 5))))
    size = int(lengths.sum(-1).max())
    lengths[..., -1] += size - lengths.sum(-1)  # every row sums to the data's size along axis
    inner = tuple(int(v) for v in rng.integers(1, 3, size=ndim - axis - 1))
    # whole numbers tie often (max, min); a nan, a zero (prod's other branch) now and then
    data = np.round(rng.standard_normal((*outer, size, *inner)), 0 if trial % 3 == 0 else 6)
    if trial % 5 == 0 and data.size:
        data.flat[rng.integers(0, data.size)] = np.nan
    if trial % 7 == 0 and data.size:
        data.flat[rng.integers(0, data.size)] = 0.0
    offsets = np.concatenate([np.zeros((*outer, 1), np.int64), np.cumsum(lengths, -1)], -1)
    reduce = ("sum", "mean", "max", "min", "prod", "amax", "amin")[trial % 7]
    options = {
        "axis": axis if trial % 3 else axis - ndim,
        "initial": (None, 0.5, None, -1.0)[trial % 4],
        "unsafe": trial % 6 == 0,
    }
    cotangent = np.round(rng.standard_normal((*outer, lengths.shape[-1], *inner)), 1)
    return data, reduce, lengths, offsets, options, cotangent


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("trial", range(42))
def test_segment_reduce_matches_pytorch(trial, dtype):
    data, reduce, lengths, offsets, options, cotangent = _random_segment_call(trial)
    outcomes = []
    for T in (nbgrad, torch):
        x = T.tensor(data, dtype=getattr(T, dtype), requires_grad=True)
        bounds = {"offsets": T.tensor(offsets)} if trial % 2 else {"lengths": T.tensor(lengths)}
        y = T.segment_reduce(x, reduce, **bounds, **options)
        y.backward(T.tensor(cotangent, dtype=getattr(T, dtype)))
        outcomes.append((y, x.grad))
    (y, grad), (y_torch, grad_torch) = outcomes
    assert structure(y.grad_fn) == structure(y_torch.grad_fn)
    assert y.dtype.name == dtype and tuple(y.shape) == tuple(y_torch.shape)
    assert y.is_contiguous()
    tolerance = {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-6}
    np.testing.assert_allclose(to_numpy(y), to_numpy(y_torch), **tolerance)
    np.testing.assert_allclose(to_numpy(grad), to_numpy(grad_torch), **tolerance)


def test_segment_reduce_ties_share_only_positive_gradients_as_pytorch_does():
    """ATen divides a gradient among tied maxima only when it is positive: a negative one
    reaches every tied element whole. Values computed by hand."""
    data = nbgrad.tensor([[3.0], [3.0], [1.0], [3.0]], requires_grad=True)
    y = nbgrad.segment_reduce(data, "max", lengths=nbgrad.tensor([2, 2]))
    y.backward(nbgrad.tensor([[4.0], [-6.0]]))
    assert data.grad.tolist() == [[2.0], [2.0], [0.0], [-6.0]]
    data.grad = None
    y = nbgrad.segment_reduce(data, "max", lengths=nbgrad.tensor([3, 1]))
    y.backward(nbgrad.tensor([[-3.0], [1.0]]))
    assert data.grad.tolist() == [[-3.0], [-3.0], [0.0], [1.0]]


def test_segment_reduce_saves_what_pytorch_saves():
    calls = {
        "lengths": lambda T, d: T.segment_reduce(
            d, "mean", lengths=T.tensor([2, 0, 3, 1], dtype=T.int32), unsafe=True
        ),
        "offsets-and-lengths": lambda T, d: T.segment_reduce(
            d, "sum", lengths=T.tensor([2, 0, 3, 1]), offsets=T.tensor([0, 1, 2, 3, 6])
        ),
        "negative-axis": lambda T, d: T.segment_reduce(
            d.reshape(3, 2, 2),
            "prod",
            lengths=T.tensor([[1, 1], [2, 0], [0, 2]]),
            axis=-2,
            initial=2,
        ),
    }
    for name, call in calls.items():
        ours = call(nbgrad, nbgrad.tensor(SEGMENT_DATA, requires_grad=True))
        theirs = call(torch, torch.tensor(SEGMENT_DATA, requires_grad=True))
        np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-12, err_msg=name)
        assert saved_names(theirs.grad_fn) == saved_names(ours.grad_fn)
        for saved in saved_names(theirs.grad_fn):
            mine, real = getattr(ours.grad_fn, saved), getattr(theirs.grad_fn, saved)
            if saved == "_saved_axis" and real >= 2**63:
                real -= 2**64  # PyTorch shows a negative int as its unsigned wrap-around
            if isinstance(real, torch.Tensor) or real is None:
                assert (mine is None) == (real is None), (name, saved)
                if real is not None:
                    _assert_saved_alike(mine, real, saved)
            else:
                assert mine == real and type(mine) is type(real), (name, saved)


# --- errors ----------------------------------------------------------------------------------


def _data(T, shape=(6, 2), dtype="float64"):
    return T.tensor(np.arange(np.prod(shape), dtype=float).reshape(shape), dtype=getattr(T, dtype))


ERRORS = {
    "no-lengths-or-offsets": lambda T: T.segment_reduce(_data(T), "sum"),
    "indices": lambda T: T.segment_reduce(_data(T), "sum", indices=T.tensor([0, 1])),
    "bad-reduce": lambda T: T.segment_reduce(_data(T), "avg", lengths=T.tensor([6])),
    "lengths-do-not-sum": lambda T: T.segment_reduce(_data(T), "sum", lengths=T.tensor([2, 3])),
    "negative-length": lambda T: T.segment_reduce(_data(T), "sum", lengths=T.tensor([7, -1])),
    "negative-length-unsafe": lambda T: T.segment_reduce(
        _data(T), "sum", lengths=T.tensor([7, -1]), unsafe=True
    ),
    "decreasing-offsets": lambda T: T.segment_reduce(
        _data(T), "sum", offsets=T.tensor([0, 4, 2, 6])
    ),
    "axis-not-last-of-lengths": lambda T: T.segment_reduce(
        _data(T), "sum", lengths=T.tensor([6]), axis=1
    ),
    "axis-not-last-of-offsets": lambda T: T.segment_reduce(
        _data(T), "sum", offsets=T.tensor([[0, 6]])
    ),
    "axis-out-of-range": lambda T: T.segment_reduce(_data(T), "sum", lengths=T.tensor([6]), axis=2),
    "float-lengths": lambda T: T.segment_reduce(_data(T), "sum", lengths=T.tensor([6.0])),
    "short-offsets": lambda T: T.segment_reduce(
        _data(T), "sum", offsets=T.tensor([0, 6], dtype=T.int16)
    ),
    "integer-data": lambda T: T.segment_reduce(
        _data(T, dtype="int64"), "sum", lengths=T.tensor([6])
    ),
    "0-d-data": lambda T: T.segment_reduce(T.tensor(1.0), "sum", lengths=T.tensor([1])),
    "empty-lengths": lambda T: T.segment_reduce(
        _data(T, (0, 2)), "sum", lengths=T.tensor([], dtype=T.int64)
    ),
    "embedding_bag-backward-twice": lambda T: _second_order_of(T, "embedding_bag-mean"),
    "segment_reduce-backward-twice": lambda T: _second_order_of(T, "segment_reduce-sum"),
}


def _second_order_of(T, name):
    leaves, cotangent, _, grads = _run(T, name)
    T.autograd.grad(grads[0].sum(), leaves)


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_pytorch(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[name](nbgrad)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_offsets_beyond_the_data_are_refused():
    """ATen reads past the data for such offsets (unchecked); nbgrad says what is wrong."""
    with pytest.raises(RuntimeError, match=r"bounds must lie in \[0, 6\].*reach 7"):
        nbgrad.segment_reduce(_data(nbgrad), "sum", offsets=nbgrad.tensor([0, 2, 7]))


# --- the entries marked not applicable: what PyTorch's public calls record instead ------------


def test_public_calls_do_not_reach_the_entries_marked_not_applicable():
    x = torch.tensor([[1.0, 2.0], [1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert type(torch.unique_consecutive(x, dim=0).grad_fn).__name__ == (
        "UniqueConsecutiveBackward0"
    )
    assert type(nbgrad.unique_consecutive(nbgrad.tensor(x.tolist(), requires_grad=True), dim=0)
                .grad_fn).__name__ == "UniqueConsecutiveBackward0"  # fmt: skip
    assert type(torch.ops.aten.unique_dim_consecutive(x, 0)[0].grad_fn).__name__ == (
        "UniqueDimConsecutiveBackward0"
    )
    assert not hasattr(torch, "unique_dim_consecutive")
    # every mode of embedding_bag records EmbeddingBagBackwardBackward0 for the weight's
    # gradient of gradient (the cases above); the dense one only through torch.ops.aten
    grad = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    dense = torch.ops.aten._embedding_bag_dense_backward(
        grad, torch.tensor([0, 2, 1, 2]), torch.tensor([0, 0, 1, 1]), torch.tensor([2, 2]),
        torch.tensor([0, 0]), 5, False, 0, None,
    )  # fmt: skip
    assert type(dense.grad_fn).__name__ == "EmbeddingBagDenseBackwardBackward0"
    assert not hasattr(torch, "_embedding_bag_dense_backward")


# --- traces: the same programs recorded from nbgrad's engine and from real PyTorch ------------


def _record(program, T):
    import sys

    from test_torch_recorder import TorchRecorder

    from nbgrad.trace.recorder import Recorder
    from nbgrad.trace.source import source_for

    recorder_class = TorchRecorder if T is torch else Recorder
    recorder = recorder_class(source_for(__file__), base_frame=sys._getframe(), source_kind="file")
    recorder.start()
    variables = program(T)
    return recorder.finish([variables])


def segment_reduce_program(T):
    data = T.tensor([[1.5, -2.0], [0.5, 3.0], [2.5, 1.0]], requires_grad=True)
    y = T.segment_reduce(data, "max", lengths=T.tensor([1, 0, 2]), initial=0.0)
    (g,) = T.autograd.grad(y.sum(), data, create_graph=True)
    loss = (y * y).sum()
    loss.backward()
    return locals()


def masked_scatter_program(T):
    x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    s = T.tensor([0.5, -1.5, 2.5, 3.5, -0.5], requires_grad=True)
    y = x.masked_scatter(T.tensor([True, False, True]), s)
    # (both leaves: asked for one, nbgrad's trace shows a gradient sent to the other too, where
    # PyTorch's shows none; so for every op, MulBackward0 alike, outside this file's subject)
    gx, gs = T.autograd.grad((y * y).sum(), (x, s), create_graph=True)
    penalty = (gs * gs).sum() + (gx * gx).sum()
    penalty.backward()
    return locals()


def fractional_pool_program(T):
    x = T.tensor(DISTINCT_4D, requires_grad=True)
    samples = T.tensor([[[0.3, 0.8], [0.6, 0.1]]], dtype=T.float64)
    y = T.nn.functional.fractional_max_pool2d(x, 2, output_size=(3, 2), _random_samples=samples)
    (gx,) = T.autograd.grad((y * y).sum(), x, create_graph=True)
    penalty = (gx * gx).sum()
    penalty.backward()
    return locals()


def embedding_bag_program(T):
    w = T.tensor(WEIGHT, requires_grad=True)
    p = T.tensor([0.5, -1.0, 2.0, 1.5, 0.25, -0.75], dtype=T.float64, requires_grad=True)
    bags = T.nn.functional.embedding_bag(
        T.tensor([1, 2, 4, 0, 4, 3]), w, T.tensor([0, 4]), mode="sum", per_sample_weights=p
    )
    gw, gp = T.autograd.grad((bags * bags).sum(), (w, p), create_graph=True)
    return locals()


@pytest.mark.parametrize(
    "program",
    [
        segment_reduce_program,
        masked_scatter_program,
        fractional_pool_program,
        embedding_bag_program,
    ],
    ids=lambda p: p.__name__,
)
def test_the_same_program_gives_the_same_trace_in_both_engines(program):
    from test_torch_recorder import assert_same_trace

    mine, theirs = _record(program, nbgrad), _record(program, torch)
    assert_same_trace(mine, theirs)
    for name in ("g", "gs", "gx", "gw", "gp"):
        if name in mine.tensors:
            ours, real = mine.tensors[name].grad_fn, theirs.tensors[name].grad_fn
            assert ours.name == real.name, name
    mine.to_json()
    theirs.to_json()
