"""Finite differences agree with backward for every layer and loss, with respect to the input
and to every parameter, in float64 (``nbgrad.autograd.gradcheck``); and for the layers with
hand-written backward kernels, second derivatives too (``gradgradcheck``)."""

import warnings

import numpy as np
import pytest

import nbgrad
from nbgrad import nn
from nbgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(2024)


def normal(*shape):
    return nbgrad.tensor(RNG.standard_normal(shape), dtype=nbgrad.float64, requires_grad=True)


def uniform(low, high, *shape, grad=True):
    values = RNG.uniform(low, high, shape)
    return nbgrad.tensor(values, dtype=nbgrad.float64, requires_grad=grad)


def away(*shape):
    """Away from 0, where ReLU-like layers have their kink."""
    values = RNG.uniform(0.1, 1.0, shape) * RNG.choice([-1.0, 1.0], shape)
    return nbgrad.tensor(values, dtype=nbgrad.float64, requires_grad=True)


def distinct(*shape):
    """Values far apart, so that max pooling's choice does not flip under a small nudge."""
    values = RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.1
    return nbgrad.tensor(values, dtype=nbgrad.float64, requires_grad=True)


def labels(*shape, classes):
    return nbgrad.tensor(RNG.integers(0, classes, shape))


def module_case(module, *inputs):
    """The module's output as a function of its inputs and of all its parameters."""
    module = module.double()
    params = tuple(module.parameters())
    return (lambda *args: module(*args[: len(inputs)])), inputs + params


def embedding_case():
    layer = nn.Embedding(5, 2, padding_idx=0).double()
    return (lambda weight: layer(nbgrad.tensor([[1, 2], [2, 4]]))), (layer.weight,)


def loss_case(loss, input, *extra):
    return (lambda x: loss(x, *extra)), (input,)


CASES = {
    "linear": lambda: module_case(nn.Linear(3, 2), normal(4, 3)),
    "linear 3d": lambda: module_case(nn.Linear(3, 2), normal(2, 2, 3)),
    "linear no bias 1d": lambda: module_case(nn.Linear(3, 2, bias=False), normal(3)),
    "conv1d": lambda: module_case(nn.Conv1d(2, 2, 3, padding=1), normal(1, 2, 5)),
    "conv2d": lambda: module_case(nn.Conv2d(2, 2, 2), normal(1, 2, 3, 3)),
    "conv2d stride padding dilation": lambda: module_case(
        nn.Conv2d(1, 2, 2, stride=2, padding=1, dilation=(2, 1)), normal(1, 1, 4, 4)
    ),
    "conv2d groups unbatched": lambda: module_case(nn.Conv2d(2, 2, 2, groups=2), normal(2, 3, 3)),
    "conv2d same even": lambda: module_case(nn.Conv2d(1, 1, 2, padding="same"), normal(1, 1, 3, 3)),
    "conv2d reflect": lambda: module_case(
        nn.Conv2d(1, 1, 3, padding=1, padding_mode="reflect"), normal(1, 1, 3, 3)
    ),
    "max pool": lambda: module_case(nn.MaxPool2d(2), distinct(1, 2, 4, 4)),
    "max pool overlapping ceil": lambda: module_case(
        nn.MaxPool2d(2, stride=1, padding=1, ceil_mode=True), distinct(1, 1, 3, 3)
    ),
    "avg pool": lambda: module_case(nn.AvgPool2d(2), normal(1, 1, 4, 4)),
    "avg pool padding ceil": lambda: module_case(
        nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        normal(1, 1, 4, 4),
    ),
    "flatten": lambda: module_case(nn.Flatten(), normal(2, 2, 2)),
    "embedding": lambda: embedding_case(),
    "layer norm": lambda: module_case(nn.LayerNorm(3), normal(2, 3)),
    "layer norm 2 dims no bias": lambda: module_case(
        nn.LayerNorm((2, 3), bias=False), normal(2, 2, 3)
    ),
    "batch norm 1d": lambda: module_case(nn.BatchNorm1d(2), normal(3, 2)),
    "batch norm 1d 3d input": lambda: module_case(nn.BatchNorm1d(2), normal(2, 2, 3)),
    "batch norm 2d": lambda: module_case(nn.BatchNorm2d(2), normal(2, 2, 2, 2)),
    "batch norm eval": lambda: module_case(nn.BatchNorm1d(2).eval(), normal(3, 2)),
    "relu": lambda: module_case(nn.ReLU(), away(2, 3)),
    "sigmoid": lambda: module_case(nn.Sigmoid(), normal(2, 3)),
    "tanh": lambda: module_case(nn.Tanh(), normal(2, 3)),
    "gelu": lambda: module_case(nn.GELU(), normal(2, 3)),
    "gelu tanh": lambda: module_case(nn.GELU("tanh"), normal(2, 3)),
    "leaky relu": lambda: module_case(nn.LeakyReLU(0.2), away(2, 3)),
    "softmax": lambda: module_case(nn.Softmax(dim=1), normal(2, 3)),
    "log softmax": lambda: module_case(nn.LogSoftmax(dim=0), normal(2, 3)),
    "dropout": lambda: module_case(nn.Dropout(0.5).eval(), normal(2, 3)),
    "mse": lambda: (nn.MSELoss(), (normal(2, 3), normal(2, 3))),
    "mse sum": lambda: (nn.MSELoss(reduction="sum"), (normal(2, 3), normal(2, 3))),
    "l1": lambda: (nn.L1Loss(), (normal(2, 3), normal(2, 3))),
    "cross entropy": lambda: loss_case(nn.CrossEntropyLoss(), normal(3, 4), labels(3, classes=4)),
    "cross entropy weight ignore": lambda: loss_case(
        nn.CrossEntropyLoss(weight=uniform(0.5, 2, 4, grad=False), ignore_index=1),
        normal(4, 4),
        nbgrad.tensor([0, 1, 3, 2]),
    ),
    "cross entropy none 4d": lambda: loss_case(
        nn.CrossEntropyLoss(reduction="none"), normal(1, 3, 2, 2), labels(1, 2, 2, classes=3)
    ),
    "cross entropy label smoothing": lambda: loss_case(
        nn.CrossEntropyLoss(label_smoothing=0.2), normal(3, 4), labels(3, classes=4)
    ),
    "cross entropy probabilities": lambda: loss_case(
        nn.CrossEntropyLoss(), normal(2, 3), uniform(0, 1, 2, 3, grad=False).softmax(1)
    ),
    "nll": lambda: loss_case(nn.NLLLoss(), normal(3, 4), labels(3, classes=4)),
    "nll 3d sum": lambda: loss_case(
        nn.NLLLoss(reduction="sum"), normal(2, 3, 2), labels(2, 2, classes=3)
    ),
    "bce": lambda: (nn.BCELoss(), (uniform(0.1, 0.9, 2, 3), uniform(0, 1, 2, 3))),
    "bce weight": lambda: (
        nn.BCELoss(weight=uniform(0.5, 2, 3, grad=False)),
        (uniform(0.1, 0.9, 2, 3), uniform(0, 1, 2, 3)),
    ),
    "bce with logits": lambda: (
        nn.BCEWithLogitsLoss(pos_weight=uniform(0.5, 2, 3, grad=False)),
        (normal(2, 3), uniform(0, 1, 2, 3)),
    ),
    "cosine similarity": lambda: (
        nbgrad.nn.functional.cosine_similarity,
        (normal(3, 4), normal(3, 4)),
    ),
    "pad reflect": lambda: (
        lambda x: nbgrad.nn.functional.pad(x, (2, 1, 1, 1), mode="reflect"),
        (normal(1, 3, 3),),
    ),
    "unfold": lambda: (
        lambda x: nbgrad.nn.functional.unfold(x, 2, padding=1),
        (normal(1, 2, 3, 3),),
    ),
}

# The hand-written backward kernels, differentiated again (create_graph=True): these use the
# Tensor versions of the formulas, built from differentiable operations.
SECOND_ORDER = [
    "linear",
    "conv1d",
    "conv2d stride padding dilation",
    "conv2d groups unbatched",
    "max pool",
    "avg pool padding ceil",
    "layer norm",
    "batch norm 2d",
    "batch norm eval",
    "gelu",
    "gelu tanh",
    "cross entropy weight ignore",
    "cross entropy label smoothing",
    "nll 3d sum",
    "bce weight",
    "bce with logits",
    "cosine similarity",
]


@pytest.mark.parametrize("name", CASES)
def test_gradcheck(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # padding="same" with an even kernel warns, as PyTorch
        fn, inputs = CASES[name]()
        assert gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    fn, inputs = CASES[name]()
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


def test_gradcheck_catches_a_wrong_layer_gradient():
    """The check has teeth: a layer whose backward is off by a factor fails it."""

    class Wrong(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x  # should be 2 * x

    with pytest.raises(nbgrad.autograd.GradcheckError):
        gradcheck(Wrong.apply, (normal(3),))
