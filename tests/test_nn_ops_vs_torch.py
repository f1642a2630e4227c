"""The nn functions of nbgrad/ops/nn_extra_kernels.py against PyTorch: the margin losses, rrelu,
conv_tbc, weight norm, clip_grad; graphs (node names, edges, saved values), results, gradients,
errors, and the modules around them."""

import warnings

import numpy as np
import pytest
from graph_compare import to_numpy
from test_misc_ops_vs_torch import _same_value, assert_same_graph, run_both

import nbgrad


def _f(T):
    return T.nn.functional


TARGET_ROWS = [[1, 0, -1, 2, 3], [4, -1, 0, 0, 0], [-1, 0, 0, 0, 0]]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    "shape, target",
    [((3, 5), [1, 0, 4]), ((5,), 2), ((5,), [2]), ((), 0), ((), [0])],
)
def test_multi_margin_loss(torch, reduction, shape, target):
    run_both(
        torch,
        lambda T, x: _f(T).multi_margin_loss(x, T.tensor(target), reduction=reduction),
        [shape],
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_multi_margin_loss_p2_weight_margin(torch, reduction, dtype):
    run_both(
        torch,
        lambda T, x: _f(T).multi_margin_loss(
            x,
            T.tensor([1, 0, 4]),
            p=2,
            margin=0.7,
            weight=T.tensor([0.5, 1, 2, 3, 0.1], dtype=getattr(T, dtype)),
            reduction=reduction,
        ),
        [(3, 5)],
        dtype=dtype,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    "shape, target",
    [((3, 5), TARGET_ROWS), ((5,), [2, 2, -1, 0, 1]), ((5,), [0, 1, 2, 3, 4]), ((), [0])],
)
def test_multilabel_margin_loss(torch, reduction, shape, target):
    run_both(
        torch,
        lambda T, x: _f(T).multilabel_margin_loss(x, T.tensor(target), reduction=reduction),
        [shape],
    )


def test_margin_loss_modules(torch):
    for build in (
        lambda T: T.nn.MultiMarginLoss(),
        lambda T: T.nn.MultiMarginLoss(p=2, margin=0.3, weight=T.ones(5, dtype=T.float64) * 2),
        lambda T: T.nn.MultiMarginLoss(reduction="sum"),
    ):
        mine, real = build(nbgrad), build(torch)
        assert repr(mine) == repr(real)
        assert [n for n, _ in mine.named_buffers()] == [n for n, _ in real.named_buffers()]
        run_both(torch, lambda T, x, build=build: build(T)(x, T.tensor([1, 0, 4])), [(3, 5)])
    assert repr(nbgrad.nn.MultiLabelMarginLoss()) == repr(torch.nn.MultiLabelMarginLoss())
    run_both(
        torch,
        lambda T, x: T.nn.MultiLabelMarginLoss(reduction="none")(x, T.tensor(TARGET_ROWS)),
        [(3, 5)],
    )


def _error(build, T):
    try:
        build(T)
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return type(error).__name__, str(error)
    return None


ERRORS = {
    "multi_margin p": lambda T: _f(T).multi_margin_loss(T.randn(3, 5), T.tensor([1, 2, 3]), p=3),
    "multi_margin target range": lambda T: _f(T).multi_margin_loss(
        T.randn(3, 5), T.tensor([1, 2, 5])
    ),
    "multi_margin negative target": lambda T: _f(T).multi_margin_loss(
        T.randn(3, 5), T.tensor([1, -1, 0])
    ),
    "multi_margin target size": lambda T: _f(T).multi_margin_loss(T.randn(3, 5), T.tensor([1, 2])),
    "multi_margin target dtype": lambda T: _f(T).multi_margin_loss(
        T.randn(3, 5), T.tensor([1.0, 2, 3])
    ),
    "multi_margin weight size": lambda T: _f(T).multi_margin_loss(
        T.randn(3, 5), T.tensor([1, 2, 3]), weight=T.ones(4)
    ),
    "multi_margin weight 2-d": lambda T: _f(T).multi_margin_loss(
        T.randn(3, 5), T.tensor([1, 2, 3]), weight=T.ones(1, 5)
    ),
    "multi_margin weight dtype": lambda T: _f(T).multi_margin_loss(
        T.randn(3, 5), T.tensor([1, 2, 3]), weight=T.ones(5, dtype=T.float64)
    ),
    "multi_margin 3-d": lambda T: _f(T).multi_margin_loss(T.randn(2, 3, 4), T.tensor([1, 2])),
    "multi_margin no classes": lambda T: _f(T).multi_margin_loss(T.randn(2, 0), T.tensor([0, 0])),
    "multi_margin int": lambda T: _f(T).multi_margin_loss(
        T.ones(3, 5, dtype=T.int32), T.tensor([1, 2, 3])
    ),
    "multi_margin reduction": lambda T: _f(T).multi_margin_loss(
        T.randn(3, 5), T.tensor([1, 2, 3]), reduction="foo"
    ),
    "MultiMarginLoss p": lambda T: T.nn.MultiMarginLoss(p=3),
    "MultiMarginLoss weight": lambda T: T.nn.MultiMarginLoss(weight=T.ones(2, 2)),
    "multilabel target size": lambda T: _f(T).multilabel_margin_loss(
        T.randn(3, 5), T.tensor([[2, 1, -1, 0, 0]] * 2)
    ),
    "multilabel target range": lambda T: _f(T).multilabel_margin_loss(
        T.randn(3, 5), T.tensor([[2, 1, 5, 0, 0]] * 3)
    ),
    "multilabel target -2": lambda T: _f(T).multilabel_margin_loss(
        T.randn(3, 5), T.tensor([[2, 1, -2, 0, 0]] * 3)
    ),
    "multilabel target dtype": lambda T: _f(T).multilabel_margin_loss(T.randn(3, 5), T.ones(3, 5)),
    "multilabel 1-d with 2-d target": lambda T: _f(T).multilabel_margin_loss(
        T.randn(5), T.tensor([[1, 2, -1, 0, 0]])
    ),
    "multilabel 3-d": lambda T: _f(T).multilabel_margin_loss(T.randn(2, 3, 4), T.tensor([1, 2])),
    "multilabel int": lambda T: _f(T).multilabel_margin_loss(
        T.ones(3, 5, dtype=T.int32), T.tensor([[1, 2, 3, -1, 0]] * 3)
    ),
    "rrelu bounds": lambda T: _f(T).rrelu(T.randn(3), 0.5, 0.2, training=True),
    "rrelu int": lambda T: _f(T).rrelu(T.ones(3, dtype=T.int32), training=True),
    "conv_tbc input dims": lambda T: T.conv_tbc(T.randn(5, 3), T.randn(2, 3, 4), T.randn(4)),
    "conv_tbc weight dims": lambda T: T.conv_tbc(T.randn(5, 2, 3), T.randn(3, 4), T.randn(4)),
    "conv_tbc bias dims": lambda T: T.conv_tbc(T.randn(5, 2, 3), T.randn(2, 3, 4), T.randn(1, 4)),
    "conv_tbc channels": lambda T: T.conv_tbc(T.randn(5, 2, 3), T.randn(2, 2, 4), T.randn(4)),
    "conv_tbc bias size": lambda T: T.conv_tbc(T.randn(5, 2, 3), T.randn(2, 3, 4), T.randn(3)),
    "embedding_bag psw shape": lambda T: _f(T).embedding_bag(
        T.tensor([1, 2]), T.randn(4, 2), T.tensor([0]), mode="sum", per_sample_weights=T.ones(3)
    ),
    "embedding_bag weight 1-d": lambda T: _f(T).embedding_bag(
        T.tensor([1, 2]), T.randn(4), T.tensor([0])
    ),
    "embedding_bag 2-d with offsets": lambda T: _f(T).embedding_bag(
        T.tensor([[1, 2]]), T.randn(4, 2), [0]
    ),
    "embedding_bag no offsets": lambda T: _f(T).embedding_bag(T.tensor([1, 2]), T.randn(4, 2)),
    "embedding_bag 2-d offsets": lambda T: _f(T).embedding_bag(
        T.tensor([1, 2]), T.randn(4, 2), T.tensor([[0]])
    ),
    "embedding_bag 3-d": lambda T: _f(T).embedding_bag(T.tensor([[[1]]]), T.randn(4, 2)),
    "embedding_bag mode": lambda T: _f(T).embedding_bag(
        T.tensor([1, 2]), T.randn(4, 2), T.tensor([0]), mode="min"
    ),
    "embedding_bag max freq": lambda T: _f(T).embedding_bag(
        T.tensor([1, 2]), T.randn(4, 2), T.tensor([0]), mode="max", scale_grad_by_freq=True
    ),
    "embedding_bag psw mean": lambda T: _f(T).embedding_bag(
        T.tensor([1, 2]), T.randn(4, 2), T.tensor([0]), per_sample_weights=T.ones(2)
    ),
    "embedding_bag index": lambda T: _f(T).embedding_bag(
        T.tensor([1, 4]), T.randn(4, 2), T.tensor([0])
    ),
    "embedding_bag negative index": lambda T: _f(T).embedding_bag(
        T.tensor([-1, 2]), T.randn(4, 2), T.tensor([0])
    ),
    "embedding_bag first offset": lambda T: _f(T).embedding_bag(
        T.tensor([1, 2]), T.randn(4, 2), T.tensor([1])
    ),
    "embedding_bag last offset": lambda T: _f(T).embedding_bag(
        T.tensor([1, 2]), T.randn(4, 2), T.tensor([0, 3])
    ),
    "EmbeddingBag padding_idx": lambda T: T.nn.EmbeddingBag(4, 2, padding_idx=4),
    "fractional pool height": lambda T: _f(T).fractional_max_pool2d(
        T.randn(1, 1, 4, 4), 3, output_size=3, _random_samples=T.rand(1, 1, 2)
    ),
    "fractional pool width": lambda T: _f(T).fractional_max_pool2d(
        T.randn(1, 1, 6, 4), 3, output_size=3, _random_samples=T.rand(1, 1, 2)
    ),
    "fractional pool time": lambda T: _f(T).fractional_max_pool3d(
        T.randn(1, 1, 4, 4, 4), 2, output_size=4
    ),
    "fractional pool no size": lambda T: _f(T).fractional_max_pool2d(T.randn(1, 1, 4, 4), 2),
    "FractionalMaxPool2d no size": lambda T: T.nn.FractionalMaxPool2d(2),
    "FractionalMaxPool3d both": lambda T: T.nn.FractionalMaxPool3d(
        2, output_size=2, output_ratio=0.5
    ),
    "FractionalMaxPool2d ratio": lambda T: T.nn.FractionalMaxPool2d(2, output_ratio=1.5),
    "embedding_renorm_ of a leaf": lambda T: T.embedding_renorm_(
        T.ones(3, 2, requires_grad=True), T.tensor([1]), 1.0, 2.0
    ),
    "_weight_norm dim": lambda T: T._weight_norm(T.randn(2, 3), T.randn(2, 1), 5),
    "remove_weight_norm missing": lambda T: T.nn.utils.remove_weight_norm(T.nn.Linear(2, 2)),
    "clip_grad_norm_ nonfinite": lambda T: _clip_nonfinite(T),
}


def _clip_nonfinite(T):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    w.grad = T.tensor([float("inf"), 1.0])
    T.nn.utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(torch, name):
    real = _error(ERRORS[name], torch)
    assert real is not None, f"{name}: PyTorch raises nothing"
    assert _error(ERRORS[name], nbgrad) == real


# --- rrelu ----------------------------------------------------------------------------------------


def _graph_without_noise(mine, real, torch, skip=("_saved_noise",)):
    """Node names, edges and every saved value but the noise, which PyTorch leaves
    uninitialised in eval mode (nbgrad: zeros) and draws from its own generator in training."""
    assert mine.name() == real.name()
    names = sorted(a for a in dir(real) if a.startswith("_saved_") and not a.endswith("_raw"))
    assert sorted(a for a in dir(mine) if a.startswith("_saved_")) == names
    for name in names:
        if name not in skip:
            _same_value(getattr(mine, name), getattr(real, name), torch, name)


@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_in_eval_is_leaky_relu_with_the_mean_slope(torch, inplace):
    values = np.random.default_rng(0).standard_normal((3, 4))
    results = []
    for T in (nbgrad, torch):
        x = T.tensor(values, requires_grad=True)
        y = _f(T).rrelu(x * 1, 0.1, 0.3, training=False, inplace=inplace)
        y.backward(T.ones_like(y) * 2, retain_graph=True)
        results.append((y, x.grad))
    (mine, mine_grad), (real, real_grad) = results
    np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(mine_grad), to_numpy(real_grad), rtol=1e-12)
    _graph_without_noise(mine.grad_fn, real.grad_fn, torch)
    assert mine.grad_fn.next_functions[0][0].name() == real.grad_fn.next_functions[0][0].name()
    assert mine.grad_fn._saved_noise.shape == (3, 4)


@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_in_training_multiplies_by_the_saved_noise(torch, inplace):
    values = np.array([[-1.0, 0.0, 2.0], [-3.0, 0.5, -0.25]])
    x = nbgrad.tensor(values, requires_grad=True)
    y = _f(nbgrad).rrelu(x * 1, 0.2, 0.4, training=True, inplace=inplace)
    noise = y.grad_fn._saved_noise.numpy()
    # As PyTorch's kernel: a slope in [lower, upper] where x <= 0, 1 elsewhere.
    assert np.all(noise[values > 0] == 1)
    assert np.all((noise[values <= 0] >= 0.2) & (noise[values <= 0] <= 0.4))
    np.testing.assert_allclose(y.detach().numpy(), values * noise)
    y.backward(nbgrad.ones_like(y) * 3, retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), 3 * noise)
    # The same graph as PyTorch's (whose noise is its own).
    t = torch.tensor(values, requires_grad=True)
    real = torch.nn.functional.rrelu(t * 1, 0.2, 0.4, training=True, inplace=inplace)
    # (In place, the saved result is made with the noise too.)
    _graph_without_noise(y.grad_fn, real.grad_fn, torch, ("_saved_noise", "_saved_result"))


def test_rrelu_module(torch):
    for args in ((), (0.1, 0.3, True)):
        assert repr(nbgrad.nn.RReLU(*args)) == repr(torch.nn.RReLU(*args))
    module = nbgrad.nn.RReLU()
    x = nbgrad.randn(4, 5, requires_grad=True)
    assert module(x).grad_fn._saved_training is True
    module.eval()
    assert module(x).grad_fn._saved_training is False


def test_rrelu_generator_repeats():
    x = nbgrad.randn(20)
    a = nbgrad.rrelu(x, training=True, generator=nbgrad.Generator().manual_seed(3))
    b = nbgrad.rrelu(x, training=True, generator=nbgrad.Generator().manual_seed(3))
    assert nbgrad.equal(a, b)


# --- conv_tbc, weight norm ----------------------------------------------------------------------


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc(torch, pad):
    run_both(torch, lambda T, x, w, b: T.conv_tbc(x, w, b, pad), [(5, 2, 3), (3, 3, 4), (4,)])
    run_both(
        torch,
        lambda T, x, w, b: _f(T).conv_tbc(x, w, b, pad),
        [(4, 1, 2), (2, 2, 3), (3,)],
        dtype="float32",
    )


@pytest.mark.parametrize(
    "shapes, dim",
    [
        ([(4, 3), (4, 1)], 0),
        ([(4, 3), (1, 3)], 1),
        ([(2, 3, 4), (2, 1, 1)], 0),
        ([(2, 3, 4), (1, 1, 4)], 2),
        ([(2, 3, 4), (4,)], 2),
        ([(2, 3, 4), (1, 3, 1)], 1),
        ([(2, 3, 4), ()], -1),
        ([(3,), (3,)], 0),
    ],
)
def test_weight_norm_function(torch, shapes, dim):
    run_both(torch, lambda T, v, g: T._weight_norm(v, g, dim), shapes)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_norm_except_dim(torch, dim):
    run_both(torch, lambda T, v: T.norm_except_dim(v, 2, dim), [(2, 3, 4)])


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_module(torch, dim):
    real = torch.nn.Linear(3, 4).double()
    mine = nbgrad.nn.Linear(3, 4).double()
    mine.load_state_dict(real.state_dict())
    with pytest.warns(FutureWarning, match="deprecated"):
        nbgrad.nn.utils.weight_norm(mine, dim=dim)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(real, dim=dim)
    assert sorted(n for n, _ in mine.named_parameters()) == sorted(
        n for n, _ in real.named_parameters()
    )
    for name, p in real.named_parameters():
        _same_value(dict(mine.named_parameters())[name], p, torch, name)
    x = np.random.default_rng(1).standard_normal((2, 3))
    out_mine = mine(nbgrad.tensor(x))
    out_real = real(torch.tensor(x))
    _same_value(out_mine, out_real, torch, "output")
    assert_same_graph(out_mine.grad_fn, out_real.grad_fn, torch)
    out_mine.sum().backward()
    out_real.sum().backward()
    for name, p in real.named_parameters():
        _same_value(dict(mine.named_parameters())[name].grad, p.grad, torch, name)
    nbgrad.nn.utils.remove_weight_norm(mine)
    torch.nn.utils.remove_weight_norm(real)
    assert sorted(n for n, _ in mine.named_parameters()) == ["bias", "weight"]
    _same_value(mine.weight, real.weight, torch, "weight")


def test_weight_norm_twice_raises(torch):
    for T in (nbgrad, torch):
        with pytest.warns(FutureWarning):
            module = T.nn.utils.weight_norm(T.nn.Linear(2, 2))
        # The deprecation warning comes first, as in PyTorch.
        with (
            pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"),
            pytest.warns(FutureWarning),
        ):
            T.nn.utils.weight_norm(module)


# --- affine_grid --------------------------------------------------------------------------------


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize(
    "theta, size",
    [((2, 2, 3), (2, 1, 4, 5)), ((2, 3, 4), (2, 1, 3, 4, 2)), ((1, 2, 3), [1, 3, 2, 3])],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_affine_grid(torch, align_corners, theta, size, dtype):
    run_both(
        torch,
        lambda T, t: _f(T).affine_grid(t, size, align_corners=align_corners),
        [theta],
        dtype=dtype,
    )


def _warnings_and_error(build, T):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        error = _error(build, T)
    return [(w.category, str(w.message)) for w in caught], error


@pytest.mark.parametrize(
    "build",
    [
        lambda T: _f(T).affine_grid(T.zeros(2, 2, 3), (2, 1, 4, 5)),
        lambda T: _f(T).affine_grid(T.zeros(2, 3, 3), (2, 1, 4, 5), align_corners=False),
        lambda T: _f(T).affine_grid(T.zeros(2, 2, 3), [2, 1, 4], align_corners=False),
        lambda T: _f(T).affine_grid(T.zeros(2, 3, 3), (2, 1, 3, 4, 2), align_corners=False),
        lambda T: _f(T).affine_grid(T.zeros(2, 2, 3), T.Size([2, 1, 0, 4]), align_corners=False),
        lambda T: _f(T).affine_grid(T.zeros(2, 2, 3, dtype=T.long), (2, 1, 4, 5), False),
        lambda T: _f(T).affine_grid(T.zeros(2, 2, 3), (2, 1, 1, 5), align_corners=True),
    ],
)
def test_affine_grid_warnings_and_errors(torch, build):
    assert _warnings_and_error(build, nbgrad) == _warnings_and_error(build, torch)


# --- embedding_bag -------------------------------------------------------------------------------

BAG_INDICES = [1, 2, 4, 5, 4, 3, 2, 9]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize(
    "offsets, include_last_offset",
    [([0, 4], False), ([0, 0, 4, 8], False), ([0, 3, 8], True), ([0, 3, 6], True)],
)
@pytest.mark.parametrize("padding_idx", [None, 4, -6])
def test_embedding_bag(torch, mode, offsets, include_last_offset, padding_idx):
    run_both(
        torch,
        lambda T, w: _f(T).embedding_bag(
            T.tensor(BAG_INDICES),
            w,
            T.tensor(offsets),
            mode=mode,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        ),
        [(10, 3)],
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_a_2d_input(torch, mode, padding_idx, dtype):
    # In float32 sum mode without padding, ATen's fast kernel saves an empty offset2bag.
    run_both(
        torch,
        lambda T, w: _f(T).embedding_bag(
            T.tensor(BAG_INDICES).view(2, 4), w, mode=mode, padding_idx=padding_idx
        ),
        [(10, 3)],
        dtype=dtype,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("shape", [(8,), (2, 4)])
def test_embedding_bag_per_sample_weights(torch, padding_idx, shape, dtype):
    offsets = [0, 4] if len(shape) == 1 else None
    run_both(
        torch,
        lambda T, w, p: _f(T).embedding_bag(
            T.tensor(BAG_INDICES).view(shape),
            w,
            None if offsets is None else T.tensor(offsets),
            mode="sum",
            per_sample_weights=p,
            padding_idx=padding_idx,
        ),
        [(10, 3), shape],
        dtype=dtype,
    )


def test_embedding_bag_function_returns_what_pytorch_returns(torch):
    run_both(
        torch,
        lambda T, w: T.embedding_bag(w, T.tensor(BAG_INDICES), T.tensor([0, 3]), False, 2),
        [(10, 3)],
    )


def test_embedding_bag_module(torch):
    for kwargs in ({}, {"mode": "max", "padding_idx": -2, "max_norm": 1.0}, {"mode": "sum"}):
        real = torch.nn.EmbeddingBag(10, 3, **kwargs).double()
        mine = nbgrad.nn.EmbeddingBag(10, 3, **kwargs).double()
        assert repr(mine) == repr(real)
        mine.load_state_dict(real.state_dict())
        out_mine = mine(nbgrad.tensor(BAG_INDICES), nbgrad.tensor([0, 5]))
        out_real = real(torch.tensor(BAG_INDICES), torch.tensor([0, 5]))
        _same_value(out_mine, out_real, torch, "output")
        # max_norm renormalises the looked-up rows in place, as PyTorch does.
        _same_value(mine.weight, real.weight, torch, "weight")
        assert_same_graph(out_mine.grad_fn, out_real.grad_fn, torch)


# --- fractional max pooling ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "shape, kernel, output_size",
    [
        ((2, 3, 7, 6), 2, (4, 3)),
        ((3, 7, 6), 2, (3, 4)),
        ((2, 2, 5, 6), 3, (3, 3)),
        ((1, 2, 5, 6, 7), (2, 2, 3), (3, 3, 3)),
        ((2, 5, 6, 7), 2, (2, 3, 4)),
    ],
)
def test_fractional_max_pool(torch, dtype, shape, kernel, output_size):
    k = len(output_size)
    batch = shape[0] if len(shape) == k + 2 else 1
    samples = np.random.default_rng(5).random((batch, shape[-k - 1], k))
    name = f"fractional_max_pool{k}d"

    def build(T, x):
        given = T.tensor(samples, dtype=getattr(T, dtype))
        return getattr(_f(T), name)(
            x, kernel, output_size=output_size, return_indices=True, _random_samples=given
        )

    run_both(torch, build, [shape], dtype=dtype)


def test_fractional_max_pool_modules_and_random_samples(torch):
    for k in (2, 3):
        cls = f"FractionalMaxPool{k}d"
        for kwargs in ({"output_size": 3}, {"output_ratio": 0.5}):
            assert repr(getattr(nbgrad.nn, cls)(2, **kwargs)) == repr(
                getattr(torch.nn, cls)(2, **kwargs)
            )
        shape = (2, 3, 8, 9) if k == 2 else (2, 3, 8, 9, 6)
        mine = getattr(nbgrad.nn, cls)(2, output_ratio=0.5)(nbgrad.randn(*shape))
        real = getattr(torch.nn, cls)(2, output_ratio=0.5)(torch.randn(*shape))
        assert tuple(mine.shape) == tuple(real.shape)
        # Drawn samples: the same for the same seed, and windows inside the input.
        nbgrad.manual_seed(3)
        x = nbgrad.randn(*shape, requires_grad=True)
        nbgrad.manual_seed(4)
        a = getattr(nbgrad.nn.functional, f"fractional_max_pool{k}d")(x, 2, output_size=3)
        nbgrad.manual_seed(4)
        b = getattr(nbgrad.nn.functional, f"fractional_max_pool{k}d")(x, 2, output_size=3)
        assert nbgrad.equal(a, b)
        assert a.grad_fn.name() == f"FractionalMaxPool{k}DBackward0"


# --- embedding_renorm_, _masked_softmax --------------------------------------------------------


def test_embedding_renorm_(torch):
    results = []
    for T in (nbgrad, torch):
        w = T.tensor(np.arange(15.0).reshape(5, 3) / 3, requires_grad=True)
        v = w * 2
        r = T.embedding_renorm_(v, T.tensor([1, 3, 3]), 1.0, 2.0)
        assert r is v and v._version == 1
        results.append((r, _error(lambda T, r=r: r.sum().backward(), T)))
    (mine, mine_error), (real, real_error) = results
    _same_value(mine, real, torch, "result")
    assert_same_graph(mine.grad_fn, real.grad_fn, torch)
    assert mine_error == real_error


@pytest.mark.parametrize("dim", [2, -1, None])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_masked_softmax(torch, dim, dtype):
    mask = np.random.default_rng(3).random((2, 3, 4)) < 0.4
    mask[..., 0] = False  # no row masked out entirely (those are nan)
    run_both(
        torch, lambda T, x: T._masked_softmax(x, T.tensor(mask), dim), [(2, 3, 4)], dtype=dtype
    )


# --- CTC loss -------------------------------------------------------------------------------------

CTC_TARGETS = [
    ([[1, 2], [3, 3]], (6, 5), (2, 2)),
    ([1, 2, 3, 3, 1], [6, 4], [2, 3]),
    ([[1, 1, 2], [2, 0, 0]], (6, 6), (3, 1)),
    ([[1, 1, 1], [2, 2, 2]], (6, 2), (3, 3)),  # the second cannot be aligned: an infinite loss
]


@pytest.mark.parametrize("as_tensors", [False, True])
def test_ctc_loss_function_overloads(torch, as_tensors):
    def build(T, x):
        lengths = (T.tensor([6, 5]), T.tensor([2, 2])) if as_tensors else ([6, 5], [2, 2])
        loss, log_alpha = T._ctc_loss(x.log_softmax(2), T.tensor([[1, 2], [3, 3]]), *lengths)
        node = loss.grad_fn
        names = sorted(a for a in dir(node) if a.startswith("_saved_") and not a.endswith("_raw"))
        saved = {n: getattr(node, n) for n in names if n != "_saved_result1"}
        return loss, node.name(), saved, log_alpha.requires_grad

    mine = build(nbgrad, nbgrad.tensor(np.ones((6, 2, 4)), requires_grad=True))
    real = build(torch, torch.tensor(np.ones((6, 2, 4)), requires_grad=True))
    _same_value(mine[0], real[0], torch, "loss")
    assert mine[1] == real[1] == ("CtcLossBackward1" if as_tensors else "CtcLossBackward0")
    assert sorted(mine[2]) == sorted(real[2])
    for name in real[2]:
        _same_value(mine[2][name], real[2][name], torch, name)
    assert mine[3] == real[3]


def test_ctc_loss_module(torch):
    for kwargs in ({}, {"blank": 3, "reduction": "sum", "zero_infinity": True}):
        assert repr(nbgrad.nn.CTCLoss(**kwargs)) == repr(torch.nn.CTCLoss(**kwargs))
        run_both(
            torch,
            lambda T, x, kwargs=kwargs: T.nn.CTCLoss(**kwargs)(
                x.log_softmax(2), T.tensor([[1, 2], [2, 1]]), (5, 5), (2, 2)
            ),
            [(5, 2, 4)],
        )


def _first_edge(node):
    return next(n for n, _ in node.next_functions if n is not None)


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("targets, input_lengths, target_lengths", CTC_TARGETS)
@pytest.mark.parametrize("as_tensors", [False, True])
def test_ctc_loss(
    torch, zero_infinity, reduction, targets, input_lengths, target_lengths, as_tensors
):
    """Graph, saved values, loss and gradients as PyTorch's; log_alpha (_saved_result1) where
    it is defined (PyTorch leaves the rest uninitialised)."""
    x = np.random.default_rng(0).standard_normal((6, 2, 4))
    runs = []
    for T in (nbgrad, torch):
        leaf = T.tensor(x, requires_grad=True)
        lengths = (
            (T.tensor(input_lengths), T.tensor(target_lengths))
            if as_tensors
            else (input_lengths, target_lengths)
        )
        loss = _f(T).ctc_loss(
            leaf.log_softmax(2),
            T.tensor(targets),
            *lengths,
            reduction=reduction,
            zero_infinity=zero_infinity,
        )
        node = loss.grad_fn
        while node.name() != "CtcLossBackward0":
            node = _first_edge(node)
        runs.append((leaf, loss, node))
    (mine_leaf, mine, mine_node), (real_leaf, real, real_node) = runs
    _same_value(mine, real, torch, "loss")
    names = sorted(a for a in dir(real_node) if a.startswith("_saved_") and not a.endswith("_raw"))
    assert sorted(a for a in dir(mine_node) if a.startswith("_saved_")) == names
    for name in names:
        if name != "_saved_result1":
            _same_value(getattr(mine_node, name), getattr(real_node, name), torch, name)
    for i, (frames, length) in enumerate(zip(input_lengths, target_lengths)):
        valid = (i, slice(0, frames), slice(0, 2 * length + 1))
        np.testing.assert_allclose(
            mine_node._saved_result1.numpy()[valid], real_node._saved_result1.numpy()[valid]
        )
    # The reduction's nodes above it (WhereBackward0, DivBackward0, MeanBackward0, SumBackward0).
    mine_chain, real_chain = [], []
    for node, chain in ((mine.grad_fn, mine_chain), (real.grad_fn, real_chain)):
        while node.name() != "CtcLossBackward0":
            saved = sorted(
                a for a in dir(node) if a.startswith("_saved_") and not a.endswith("_raw")
            )
            chain.append((node.name(), saved, [n is None for n, _ in node.next_functions]))
            node = _first_edge(node)
    assert mine_chain == real_chain
    seed = np.ones(tuple(real.shape))
    mine.backward(nbgrad.tensor(seed))
    real.backward(torch.tensor(seed))
    _same_value(mine_leaf.grad, real_leaf.grad, torch, "grad")


# --- clip_grad ----------------------------------------------------------------------------------


@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(torch, norm_type, max_norm):
    rng = np.random.default_rng(2)
    grads = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    results = []
    for T in (nbgrad, torch):
        params = [T.zeros(g.shape, dtype=T.float64, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = T.tensor(g)
        params.append(T.zeros(2, requires_grad=True))  # no grad: skipped
        total = T.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
        results.append((total, [p.grad for p in params[:2]]))
    (mine_total, mine_grads), (real_total, real_grads) = results
    _same_value(mine_total, real_total, torch, "total norm")
    for m, r in zip(mine_grads, real_grads):
        _same_value(m, r, torch, "clipped grad")


def test_clip_grad_norm_of_nothing_and_of_one_tensor(torch):
    for T in (nbgrad, torch):
        assert float(T.nn.utils.clip_grad_norm_([T.zeros(2, requires_grad=True)], 1.0)) == 0.0
    mine = nbgrad.zeros(3, requires_grad=True)
    mine.grad = nbgrad.tensor([3.0, 4.0, 0.0])
    real = torch.zeros(3, requires_grad=True)
    real.grad = torch.tensor([3.0, 4.0, 0.0])
    _same_value(
        nbgrad.nn.utils.clip_grad_norm_(mine, 1.0),
        torch.nn.utils.clip_grad_norm_(real, 1.0),
        torch,
        "total",
    )
    _same_value(mine.grad, real.grad, torch, "grad")


def test_clip_grad_value(torch):
    grads = np.array([[-2.0, 0.1], [0.7, 3.0]])
    clipped = []
    for T in (nbgrad, torch):
        p = T.zeros(2, 2, dtype=T.float64, requires_grad=True)
        p.grad = T.tensor(grads)
        T.nn.utils.clip_grad_value_(p, 0.5)
        clipped.append(p.grad)
    _same_value(clipped[0], clipped[1], torch, "grad")
