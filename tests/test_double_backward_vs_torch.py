"""A gradient taken with create_graph=True records PyTorch's node for the backward function
(SigmoidBackwardBackward0, ThresholdBackwardBackward0, ...): the same names, saved values,
next_functions, gradients and gradients of gradients as PyTorch 2.13."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

VALUES = np.array([[0.5, -1.0, 2.0, 0.1], [-2.5, 3.5, -0.05, 0.7]])
TARGET = np.array([[0.0, -0.5, 2.5, 0.3], [-2.0, 1.5, 0.0, 0.2]])
WEIGHTS = np.cos(np.arange(VALUES.size)).reshape(VALUES.shape)

PROGRAMS = {
    "sigmoid": lambda T, x: x.sigmoid(),
    "sigmoid-function": lambda T, x: T.sigmoid(x),
    "tanh": lambda T, x: x.tanh(),
    "relu": lambda T, x: x.relu(),
    "relu-module": lambda T, x: T.nn.ReLU()(x),
    "threshold": lambda T, x: T.nn.functional.threshold(x, 0.2, 2.0),
    "leaky_relu": lambda T, x: T.nn.functional.leaky_relu(x, 0.1),
    "hardtanh": lambda T, x: T.nn.functional.hardtanh(x, -0.5, 1.5),
    "relu6": lambda T, x: T.nn.functional.relu6(x * 3),
    "hardshrink": lambda T, x: T.nn.functional.hardshrink(x, 0.3),
    "softshrink": lambda T, x: T.nn.functional.softshrink(x, 0.3),
    "hardswish": lambda T, x: T.nn.functional.hardswish(x * 2),
    "softmax": lambda T, x: x.softmax(1),
    "softmax-dim0": lambda T, x: T.nn.functional.softmax(x, dim=0),
    "log_softmax": lambda T, x: x.log_softmax(1),
    "mse_loss": lambda T, x: T.nn.functional.mse_loss(x, T.tensor(TARGET)),
    "mse_loss-sum": lambda T, x: T.nn.functional.mse_loss(x, T.tensor(TARGET), reduction="sum"),
    "mse_loss-none": lambda T, x: T.nn.functional.mse_loss(x, T.tensor(TARGET), reduction="none"),
    "smooth_l1_loss": lambda T, x: T.nn.functional.smooth_l1_loss(x, T.tensor(TARGET), beta=0.7),
    "huber_loss": lambda T, x: T.nn.functional.huber_loss(x, T.tensor(TARGET), delta=0.6),
    "huber_loss-none": lambda T, x: T.nn.functional.huber_loss(
        x, T.tensor(TARGET), reduction="none"
    ),
    "logsigmoid": lambda T, x: T.nn.functional.logsigmoid(x),
    "elu": lambda T, x: T.nn.functional.elu(x, alpha=0.7),
    "selu": lambda T, x: T.nn.functional.selu(x),
    "celu": lambda T, x: T.nn.functional.celu(x, alpha=1.7),
    "elu_": lambda T, x: T.nn.functional.elu_(x * 1.0),
    "celu_": lambda T, x: T.nn.functional.celu_(x * 1.0, 0.8),
    "softplus": lambda T, x: T.nn.functional.softplus(x * 5, beta=2, threshold=3),
    "cross_entropy": lambda T, x: T.nn.functional.cross_entropy(
        x, T.tensor([1, 3]), weight=T.tensor([1.0, 2.0, 3.0, 0.5], dtype=x.dtype)
    ),
    "cross_entropy-ignore": lambda T, x: T.nn.functional.cross_entropy(
        x, T.tensor([1, 3]), ignore_index=3, reduction="sum"
    ),
    "nll_loss2d": lambda T, x: T.nn.functional.nll_loss(
        x.log_softmax(1).reshape(1, 2, 2, 2), T.tensor([[[1, 0], [0, 1]]])
    ),
    "mlp": lambda T, x: (x @ T.ones(4, 3, dtype=x.dtype)).tanh().relu().sigmoid(),
}


def run(T, program):
    x = T.tensor(VALUES, requires_grad=True)
    y = program(T, x)
    weights = T.tensor(WEIGHTS[: y.shape[0], : y.shape[-1]] if y.dim() else WEIGHTS[0, 0])
    (grad,) = T.autograd.grad((y * weights).sum(), x, create_graph=True)
    node = grad.grad_fn
    seen = node_description(node)
    (second,) = T.autograd.grad((grad * grad).sum(), x)
    return seen, grad.detach().numpy(), second.numpy()


def node_description(node):
    """The node, its saved values and the names of its next functions, two levels down."""
    if node is None:
        return None
    saved = {}
    for name in sorted(a for a in dir(node) if a.startswith("_saved_")):
        value = getattr(node, name)
        saved[name] = (
            np.asarray(value.detach()).round(10).tolist() if hasattr(value, "detach") else value
        )
    children = [
        None if child is None else (type(child).__name__, number)
        for child, number in node.next_functions
    ]
    return type(node).__name__, saved, children


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_gradient_of_a_gradient_records_pytorchs_nodes(name):
    ours = run(nbgrad, PROGRAMS[name])
    theirs = run(torch, PROGRAMS[name])
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12, atol=1e-14)


def test_a_relu_gradient_can_be_differentiated_again():
    """PyTorch's gradient of relu requires grad under create_graph (its second derivative is
    zero, not missing): a gradient penalty over a ReLU network runs."""
    for T in (nbgrad, torch):
        x = T.tensor([1.0, -2.0], requires_grad=True)
        (grad,) = T.autograd.grad(x.relu().sum(), x, create_graph=True)
        assert grad.requires_grad
        (grad * grad).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0]
