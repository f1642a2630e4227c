"""F.grid_sample against PyTorch 2.13: GridSampler2DBackward0 / GridSampler3DBackward0 and the
backward's own node (GridSampler2DBackwardBackward0, one node for both gradients), their saved
values and next_functions, values and derivatives to the third order, in every mode and padding;
the spatial transformer's affine_grid + grid_sample; PyTorch's errors and warning."""

import itertools
import warnings

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1313)

CONFIGURATIONS = [
    (dims, mode, padding, corners)
    for dims in (2, 3)
    for mode, padding, corners in itertools.product(
        ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (False, True)
    )
    if not (dims == 3 and mode == "bicubic")
]


def _inputs(dims):
    if dims == 2:
        return RNG.standard_normal((2, 2, 3, 4)), RNG.uniform(-1.6, 1.6, (2, 3, 2, 2))
    return RNG.standard_normal((1, 2, 2, 3, 3)), RNG.uniform(-1.6, 1.6, (1, 2, 2, 2, 3))


INPUTS = {configuration: _inputs(configuration[0]) for configuration in CONFIGURATIONS}


def describe(node):
    """A node's class, saved values (tensors as dtype and rounded values) and next functions."""
    saved = {}
    for name in sorted(a for a in dir(node) if a.startswith("_saved_")):
        value = getattr(node, name)
        if hasattr(value, "detach"):
            value = (str(value.dtype), np.asarray(value.detach()).round(10).tolist())
        saved[name] = value
    children = [
        None if child is None else (type(child).__name__, number)
        for child, number in node.next_functions
    ]
    return type(node).__name__, saved, children


def run(T, data, grid_data, mode, padding, corners):
    """Values and derivatives to the third order, and the nodes on the way."""
    x = T.tensor(data, requires_grad=True)
    grid = T.tensor(grid_data, requires_grad=True)
    y = T.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=corners)
    weights = T.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
    grad_x, grad_grid = T.autograd.grad((y * y * weights).sum(), (x, grid), create_graph=True)
    seen = [describe(y.grad_fn), describe(grad_x.grad_fn), grad_x.grad_fn is grad_grid.grad_fn]
    loss = (grad_x * grad_x.detach().sin()).sum() + (grad_grid * grad_grid.detach().cos()).sum()
    second_x, second_grid = T.autograd.grad(loss, (x, grid), create_graph=True)
    third = T.autograd.grad(
        (second_x * second_x).sum() + (second_grid * second_grid).sum(),
        (x, grid),
        allow_unused=True,
    )
    arrays = [y, grad_x, grad_grid, second_x, second_grid, *third]
    return seen, [None if a is None else a.detach().numpy() for a in arrays]


@pytest.mark.parametrize(
    "configuration", CONFIGURATIONS, ids=["-".join(map(str, c)) for c in CONFIGURATIONS]
)
def test_grid_sample_matches_pytorch_to_the_third_derivative(configuration):
    dims, mode, padding, corners = configuration
    data, grid_data = INPUTS[configuration]
    ours_seen, ours = run(nbgrad, data, grid_data, mode, padding, corners)
    theirs_seen, theirs = run(torch, data, grid_data, mode, padding, corners)
    assert ours_seen == theirs_seen
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if b is None:  # no path (nearest: the grid's derivatives are zero)
            assert a is None or not a.any(), k
        else:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, err_msg=str(k))


def test_the_nodes_by_hand():
    """The names and saved values PyTorch 2.13 shows, written out (read off torch once)."""
    x = nbgrad.ones(1, 1, 2, 2, requires_grad=True)
    grid = nbgrad.zeros(1, 1, 1, 2, requires_grad=True)
    y = nbgrad.nn.functional.grid_sample(
        x, grid, mode="bicubic", padding_mode="border", align_corners=True
    )
    node = y.grad_fn
    assert node.name() == "GridSampler2DBackward0"
    assert (node._saved_interpolation_mode, node._saved_padding_mode) == (2, 1)
    assert node._saved_align_corners is True
    assert node._saved_input is x and node._saved_grid is grid
    # The middle of a 2x2 image of ones is 1 (bicubic weights add up to 1).
    assert y.item() == pytest.approx(1.0, abs=1e-6)
    (grad_x,) = nbgrad.autograd.grad(y.sum(), x, create_graph=True)
    assert grad_x.grad_fn.name() == "GridSampler2DBackwardBackward0"


def test_a_spatial_transformer_step():
    """The spatial-transformer tutorial's sampling: affine_grid then grid_sample, backward into
    theta and the image, on float32, against PyTorch."""
    image = RNG.standard_normal((2, 1, 5, 5)).astype(np.float32)
    theta = np.array(
        [[[0.8, -0.2, 0.1], [0.25, 0.9, -0.1]], [[1.1, 0.0, 0.0], [0.0, 0.7, 0.3]]],
        dtype=np.float32,
    )
    results = []
    for T in (nbgrad, torch):
        x = T.tensor(image, requires_grad=True)
        t = T.tensor(theta, requires_grad=True)
        grid = T.nn.functional.affine_grid(t, x.size(), align_corners=False)
        y = T.nn.functional.grid_sample(x, grid, align_corners=False)
        y.square().mean().backward()
        names = [y.grad_fn.name(), [type(n).__name__ for n, _ in y.grad_fn.next_functions]]
        results.append((names, y.detach().numpy(), x.grad.numpy(), t.grad.numpy()))
    assert (
        results[0][0]
        == results[1][0]
        == ["GridSampler2DBackward0", ["AccumulateGrad", "AffineGridGeneratorBackward0"]]
    )
    for a, b in zip(results[0][1:], results[1][1:]):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_only_the_input_or_only_the_grid_needs_a_gradient():
    data, grid_data = INPUTS[(2, "bilinear", "zeros", False)]
    for needs in ((True, False), (False, True)):
        results = []
        for T in (nbgrad, torch):
            x = T.tensor(data, requires_grad=needs[0])
            grid = T.tensor(grid_data, requires_grad=needs[1])
            y = T.nn.functional.grid_sample(x, grid, align_corners=False)
            leaf = x if needs[0] else grid
            (grad,) = T.autograd.grad((y * y).sum(), leaf, create_graph=True)
            seen = describe(grad.grad_fn)
            (second,) = T.autograd.grad((grad * grad).sum(), leaf)
            results.append((seen, grad.detach().numpy(), second.numpy()))
        assert results[0][0] == results[1][0]
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-9, atol=1e-11)


def _error(T, make):
    try:
        make(T)
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error).__name__, str(error).splitlines()[0]
    return None


BAD_CALLS = {
    "mode": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 2), mode="area", align_corners=False
    ),
    "padding": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 2), padding_mode="circular", align_corners=False
    ),
    "batch": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2), T.zeros(2, 1, 1, 2), align_corners=False
    ),
    "last-dim": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 3), align_corners=False
    ),
    "dims": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2), T.zeros(1, 1, 2), align_corners=False
    ),
    "1d": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2), T.zeros(1, 1, 1), align_corners=False
    ),
    "empty": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 0, 2), T.zeros(1, 1, 1, 2), align_corners=False
    ),
    "bicubic-3d": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2, 2), T.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False
    ),
    "dtypes": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 2, dtype=T.float64), align_corners=False
    ),
    "integers": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2, dtype=T.long), T.zeros(1, 1, 1, 2, dtype=T.long), align_corners=False
    ),
    "integers-3d": lambda T: T.nn.functional.grid_sample(
        T.ones(1, 1, 2, 2, 2, dtype=T.int32),
        T.zeros(1, 1, 1, 1, 3, dtype=T.int32),
        align_corners=False,
    ),
    "not-a-tensor": lambda T: T.nn.functional.grid_sample(
        [1.0], T.zeros(1, 1, 1, 2), align_corners=False
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_arguments_raise_pytorchs_errors(name):
    theirs = _error(torch, BAD_CALLS[name])
    assert theirs is not None
    assert _error(nbgrad, BAD_CALLS[name]) == theirs


def test_no_align_corners_warns_as_pytorch():
    messages = []
    for T in (nbgrad, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = T.nn.functional.grid_sample(T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 2))
        messages.append(([str(w.message) for w in caught], [w.category for w in caught]))
        assert y.tolist() == [[[[1.0]]]]
    assert messages[0] == messages[1]


def test_an_empty_batch_gives_an_empty_result():
    for T in (nbgrad, torch):
        y = T.nn.functional.grid_sample(T.ones(0, 2, 3, 3), T.zeros(0, 4, 1, 2), align_corners=True)
        assert tuple(y.shape) == (0, 2, 4, 1)
