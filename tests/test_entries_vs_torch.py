"""The derivatives.yaml entries added for issue 13, against PyTorch 2.13: the node a gradient
taken with create_graph=True records through an everyday layer (GeluBackwardBackward0,
MaxPool2DWithIndicesBackwardBackward0, ...), with its saved values and next_functions, and the
first, second and third derivatives it gives."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(13)


def values(*shape):
    """Distinct values (no ties for max pooling), away from zero."""
    n = int(np.prod(shape))
    spread = RNG.permutation(n) * 0.37 - 0.17 * n + RNG.uniform(0, 0.05, n)
    return spread.reshape(shape)


def F(T):
    return T.nn.functional


# name -> (input values, the program on a float64 leaf x)
PROGRAMS = {
    "gelu": (values(2, 3), lambda T, x: F(T).gelu(x)),
    "gelu-tanh": (values(2, 3), lambda T, x: F(T).gelu(x, approximate="tanh")),
    "gelu-module": (values(4), lambda T, x: T.nn.GELU()(x)),
    "glu": (values(2, 4), lambda T, x: F(T).glu(x)),
    "glu-dim0": (values(4, 3), lambda T, x: F(T).glu(x, 0)),
    "max_pool2d": (values(1, 2, 4, 4), lambda T, x: F(T).max_pool2d(x, 2)),
    "max_pool2d-stride-padding": (
        values(2, 1, 5, 5),
        lambda T, x: F(T).max_pool2d(x, 3, stride=2, padding=1),
    ),
    "max_pool1d": (values(1, 2, 6), lambda T, x: F(T).max_pool1d(x, 2)),
    "max_pool-module": (values(1, 1, 4, 4), lambda T, x: T.nn.MaxPool2d(2, ceil_mode=True)(x)),
    "max_pool3d": (values(1, 1, 4, 4, 2), lambda T, x: F(T).max_pool3d(x, 2)),
    "adaptive_max_pool2d": (values(1, 2, 5, 4), lambda T, x: F(T).adaptive_max_pool2d(x, 2)),
    "adaptive_max_pool3d": (
        values(1, 1, 3, 4, 2),
        lambda T, x: F(T).adaptive_max_pool3d(x, (2, 2, 1)),
    ),
    "reflect1d": (values(1, 2, 4), lambda T, x: F(T).pad(x, (2, 1), mode="reflect")),
    "reflect2d": (values(1, 1, 3, 3), lambda T, x: F(T).pad(x, (1, 2, 2, 1), mode="reflect")),
    "reflect3d": (values(1, 1, 2, 3, 3), lambda T, x: F(T).pad(x, (1,) * 6, mode="reflect")),
    "replicate1d": (values(1, 2, 3), lambda T, x: F(T).pad(x, (2, 1), mode="replicate")),
    "replicate2d": (values(1, 1, 3, 3), lambda T, x: F(T).pad(x, (2,) * 4, mode="replicate")),
    "replicate3d": (values(1, 1, 2, 2, 2), lambda T, x: F(T).pad(x, (1,) * 6, mode="replicate")),
    "nearest1d": (values(1, 2, 3), lambda T, x: F(T).interpolate(x, scale_factor=2)),
    "nearest2d": (values(1, 1, 2, 3), lambda T, x: F(T).interpolate(x, size=(3, 5))),
    "nearest3d": (values(1, 1, 2, 2, 2), lambda T, x: F(T).interpolate(x, scale_factor=2)),
    "nearest-exact1d": (
        values(1, 1, 4),
        lambda T, x: F(T).interpolate(x, size=7, mode="nearest-exact"),
    ),
    "nearest-exact2d": (
        values(1, 1, 3, 3),
        lambda T, x: F(T).interpolate(x, scale_factor=1.5, mode="nearest-exact"),
    ),
    "nearest-exact3d": (
        values(1, 1, 2, 2, 3),
        lambda T, x: F(T).interpolate(x, size=(3, 3, 2), mode="nearest-exact"),
    ),
    "linear": (
        values(1, 2, 3),
        lambda T, x: F(T).interpolate(x, scale_factor=2, mode="linear", align_corners=True),
    ),
    "bilinear": (
        values(1, 1, 2, 3),
        lambda T, x: F(T).interpolate(x, scale_factor=2, mode="bilinear"),
    ),
    "bilinear-upsample-module": (
        values(1, 1, 2, 2),
        lambda T, x: T.nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True)(x),
    ),
    "trilinear": (
        values(1, 1, 2, 2, 2),
        lambda T, x: F(T).interpolate(x, size=(3, 2, 3), mode="trilinear"),
    ),
    "bicubic": (
        values(1, 1, 3, 3),
        lambda T, x: F(T).interpolate(x, scale_factor=2, mode="bicubic", align_corners=False),
    ),
    "bilinear-antialias": (
        values(1, 1, 4, 5),
        lambda T, x: F(T).interpolate(x, size=(2, 3), mode="bilinear", antialias=True),
    ),
    "bicubic-antialias": (
        values(1, 1, 4, 4),
        lambda T, x: F(T).interpolate(x, size=(3, 2), mode="bicubic", antialias=True),
    ),
    "binary_cross_entropy": (
        np.array([[0.2, 0.7, 0.45], [0.9, 0.15, 0.6]]),
        lambda T, x: F(T).binary_cross_entropy(
            x, T.tensor([[0.3, 0.9, 0.1], [1.0, 0.0, 0.5]], dtype=x.dtype)
        ),
    ),
    "binary_cross_entropy-none-weight": (
        np.array([[0.2, 0.7, 0.45], [0.9, 0.15, 0.6]]),
        lambda T, x: F(T).binary_cross_entropy(
            x,
            T.tensor([[0.3, 0.9, 0.1], [1.0, 0.0, 0.5]], dtype=x.dtype),
            weight=T.tensor([1.0, 2.0, 0.5], dtype=x.dtype),
            reduction="none",
        ),
    ),
    "binary_cross_entropy-sum": (
        np.array([0.2, 0.7, 0.45]),
        lambda T, x: T.nn.BCELoss(reduction="sum")(x, T.tensor([0.3, 0.9, 0.1], dtype=x.dtype)),
    ),
    "soft_margin_loss": (
        values(2, 3),
        lambda T, x: F(T).soft_margin_loss(x / 4, T.tensor([[1.0, -1, 1], [-1, -1, 1]])),
    ),
    "soft_margin_loss-none": (
        values(2, 3),
        lambda T, x: F(T).soft_margin_loss(
            x / 4, T.tensor([[1.0, -1, 1], [-1, -1, 1]]), reduction="none"
        ),
    ),
    "soft_margin_loss-sum": (
        values(3),
        lambda T, x: T.nn.SoftMarginLoss(reduction="sum")(x / 4, T.tensor([1.0, -1, -1])),
    ),
    "embedding": (values(4, 3), lambda T, x: F(T).embedding(T.tensor([[0, 2], [2, 3]]), x)),
    "embedding-padding-frequency": (
        values(4, 3),
        lambda T, x: F(T).embedding(
            T.tensor([0, 2, 2, 1, 3, 2]), x, padding_idx=1, scale_grad_by_freq=True
        ),
    ),
    "embedding-module": (
        values(5, 2),
        lambda T, x: T.nn.functional.embedding(T.tensor([4, 0, 4]), x, padding_idx=-1),
    ),
}


def node_description(node):
    """The node's class, saved values and next functions."""
    if node is None:
        return None
    saved = {}
    for name in sorted(a for a in dir(node) if a.startswith("_saved_")):
        value = getattr(node, name)
        if hasattr(value, "detach"):
            value = (str(value.dtype).split(".")[-1], np.asarray(value.detach()).round(10).tolist())
        saved[name] = value
    children = [
        None if child is None else (type(child).__name__, number)
        for child, number in node.next_functions
    ]
    return type(node).__name__, saved, children


def run(T, data, program):
    """A gradient of a squared output, taken with create_graph, then differentiated twice more:
    the gradient flowing into the layer's backward depends on x, so that backward's own node has
    both edges PyTorch gives it."""
    x = T.tensor(data, requires_grad=True)
    y = program(T, x)
    weights = T.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
    (grad,) = T.autograd.grad((y * y * weights).sum(), x, create_graph=True)
    seen = node_description(grad.grad_fn)
    (second,) = T.autograd.grad((grad * grad.detach().sin()).sum(), x, create_graph=True)
    third = None
    if second.requires_grad:  # a linear layer's second derivative is constant
        (third,) = T.autograd.grad((second * second).sum(), x, allow_unused=True)
        third = None if third is None else third.numpy()
    return seen, y.detach().numpy(), grad.detach().numpy(), second.detach().numpy(), third


def _unsigned(description):
    """PyTorch shows a saved negative int64 dim through an unsigned 64-bit read (glu's dim -1 is
    18446744073709551615); nbgrad's existing GluBackward0 shows -1. Compare the signed value."""
    name, saved, children = description
    fixed = {
        k: (v - (1 << 64) if isinstance(v, int) and v >= 1 << 63 else v) for k, v in saved.items()
    }
    return name, fixed, children


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_gradient_of_a_layer_records_pytorchs_double_backward_node(name):
    data, program = PROGRAMS[name]
    ours = run(nbgrad, data, program)
    theirs = run(torch, data, program)
    assert _unsigned(ours[0]) == _unsigned(theirs[0])
    for a, b in zip(ours[1:4], theirs[1:4]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    if theirs[4] is None:
        assert ours[4] is None or not ours[4].any()
    else:
        np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-9, atol=1e-11)


def test_the_double_backward_node_names_are_pytorchs():
    """The names are the ones derivatives.yaml's entries generate (spot check, by hand)."""
    x = nbgrad.rand(1, 1, 4, 4, dtype=nbgrad.float64, requires_grad=True)
    expected = {
        "MaxPool2DWithIndicesBackwardBackward0": nbgrad.nn.functional.max_pool2d(x, 2),
        "UpsampleNearest2DBackwardBackward0": nbgrad.nn.functional.interpolate(x, size=(5, 6)),
        "ReflectionPad2DBackwardBackward0": nbgrad.nn.functional.pad(x, (1,) * 4, mode="reflect"),
        "GeluBackwardBackward0": nbgrad.nn.functional.gelu(x),
    }
    for name, y in expected.items():
        (grad,) = nbgrad.autograd.grad((y * y).sum(), x, create_graph=True)
        assert grad.grad_fn.name() == name


def _prelu(T, weight_size, needs):
    x = T.tensor([[0.5, -1.0, 2.0], [-0.3, 0.7, -2.0]], dtype=T.float64, requires_grad=needs[0])
    weight = T.tensor(np.linspace(0.1, 0.3, weight_size), dtype=T.float64, requires_grad=needs[1])
    y = T.nn.functional.prelu(x, weight)
    leaves = [t for t in (x, weight) if t.requires_grad]
    grads = T.autograd.grad((y * y).sum(), leaves, create_graph=True)
    seen = node_description(grads[0].grad_fn)
    second = T.autograd.grad(sum((g * g).sum() for g in grads), leaves)
    return seen, [g.detach().numpy().tolist() for g in grads], [s.numpy().tolist() for s in second]


@pytest.mark.parametrize("weight_size", [1, 3])
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
def test_prelu_gradients_share_one_double_backward_node(weight_size, needs):
    """PreluKernelBackwardBackward0: one node gives both gradients (its edges: the incoming
    gradient, the input, the weight's view), as PyTorch's _prelu_kernel_backward."""
    ours = _prelu(nbgrad, weight_size, needs)
    theirs = _prelu(torch, weight_size, needs)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1] + ours[2], theirs[1] + theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
