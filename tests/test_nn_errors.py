"""Bad input gives PyTorch's exception, with PyTorch's message: shapes that do not fit a layer
name both shapes, a wrong target dtype or class index in a loss says so, never a NumPy
traceback from deep inside."""

import re
import warnings

import pytest

import nbgrad

# Each entry runs with T = nbgrad and T = torch; both must raise the same type and message.
BAD_INPUTS = {
    "fractional pool samples dtype": (
        "T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 6, 6, dtype=T.float64), 2, "
        "output_size=3, _random_samples=T.ones(2, 3, 2) / 2)"
    ),
    "fractional pool samples dims": (
        "T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 6, 6), 2, output_size=3, "
        "_random_samples=T.ones(2, 3) / 2)"
    ),
    "fractional pool samples batch": (
        "T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 6, 6), 2, output_size=3, "
        "_random_samples=T.ones(1, 3, 2) / 2)"
    ),
    "fractional pool samples channels": (
        "T.nn.functional.fractional_max_pool2d(T.ones(3, 6, 6), 2, output_size=3, "
        "_random_samples=T.ones(1, 2, 2) / 2)"
    ),
    "fractional pool 3d samples size": (
        "T.nn.functional.fractional_max_pool3d(T.ones(2, 3, 6, 6, 6), 2, output_size=3, "
        "_random_samples=T.ones(2, 3, 2) / 2)"
    ),
    "embedding bag per-sample weights dtype": (
        "T.nn.functional.embedding_bag(T.tensor([1, 2, 0]), T.ones(4, 3, dtype=T.float64), "
        "T.tensor([0, 2]), mode='sum', per_sample_weights=T.ones(3))"
    ),
    "embedding bag per-sample weights dtype, float weight": (
        "T.nn.functional.embedding_bag(T.tensor([1, 2, 0]), T.ones(4, 3), T.tensor([0, 2]), "
        "mode='sum', per_sample_weights=T.ones(3, dtype=T.float64))"
    ),
    "circular padding wraps twice": "T.nn.functional.pad(T.ones(1, 1, 4, 4), (5, 0), 'circular')",
    "circular padding wraps twice 2d": (
        "T.nn.functional.pad(T.ones(1, 1, 4, 4), (0, 0, 0, 5), 'circular')"
    ),
    "circular padding value": "T.nn.functional.pad(T.ones(1, 4), (1, 1), 'circular', value=1.0)",
    "reflect padding value": "T.nn.functional.pad(T.ones(1, 4), (1, 1), 'reflect', value=0.5)",
    "circular padding 1d input": "T.nn.functional.pad(T.ones(4), (1, 1), 'circular')",
    "linear shapes": "T.nn.Linear(784, 128)(T.randn(64, 10))",
    "linear 3d shapes": "T.nn.Linear(784, 128)(T.randn(2, 64, 10))",
    "linear 1d shapes": "T.nn.Linear(784, 128)(T.randn(10))",
    "linear no bias shapes": "T.nn.Linear(784, 128, bias=False)(T.randn(64, 10))",
    "linear scalar": "T.nn.Linear(3, 2)(T.tensor(1.0))",
    "linear dtype": "T.nn.Linear(3, 2)(T.randn(4, 3, dtype=T.float64))",
    "linear dtype no bias": "T.nn.Linear(3, 2, bias=False)(T.randn(4, 3, dtype=T.float64))",
    "conv channels": "T.nn.Conv2d(1, 16, 3)(T.randn(32, 3, 28, 28))",
    "conv channels unbatched": "T.nn.Conv2d(1, 16, 3)(T.randn(3, 28, 28))",
    "conv dims": "T.nn.Conv2d(1, 16, 3)(T.randn(28, 28))",
    "conv1d dims": "T.nn.Conv1d(1, 16, 3)(T.randn(2, 1, 28, 28))",
    "conv kernel too big": "T.nn.Conv2d(1, 16, 3)(T.randn(1, 1, 2, 2))",
    "conv dilated kernel too big": "T.nn.Conv2d(1, 2, 3, dilation=2)(T.randn(1, 1, 4, 4))",
    "conv dtype": "T.nn.Conv2d(1, 2, 3)(T.randn(1, 1, 5, 5, dtype=T.float64))",
    "conv dtype no bias": "T.nn.Conv2d(1, 2, 3, bias=False)(T.randn(1, 1, 5, 5, dtype=T.float64))",
    "conv groups in": "T.nn.Conv2d(3, 16, 3, groups=2)",
    "conv groups out": "T.nn.Conv2d(4, 6, 3, groups=4)",
    "conv same strided": "T.nn.Conv2d(1, 16, 3, padding='same', stride=2)",
    "conv padding string": "T.nn.Conv2d(1, 16, 3, padding='full')",
    "max pool too small": "T.nn.MaxPool2d(3)(T.randn(1, 1, 2, 2))",
    "max pool dims": "T.nn.MaxPool2d(3)(T.randn(2, 2))",
    "max pool padding": "T.nn.MaxPool2d(2, padding=2)(T.randn(1, 1, 8, 8))",
    "avg pool too small": "T.nn.AvgPool2d(3)(T.randn(1, 1, 2, 2))",
    "avg pool padding": "T.nn.AvgPool2d(2, padding=2)(T.randn(1, 1, 8, 8))",
    "embedding out of range": "T.nn.Embedding(10, 3)(T.tensor([10]))",
    "embedding negative": "T.nn.Embedding(10, 3)(T.tensor([-1]))",
    "embedding float indices": "T.nn.Embedding(10, 3)(T.tensor([1.0]))",
    "embedding padding_idx": "T.nn.Embedding(10, 3, padding_idx=10)",
    "layer norm shape": "T.nn.LayerNorm(5)(T.randn(4, 6))",
    "layer norm 2 dims shape": "T.nn.LayerNorm((3, 5))(T.randn(4, 6, 5))",
    "layer norm dtype": "T.nn.LayerNorm(4)(T.randn(2, 4, dtype=T.float64))",
    "batch norm 1d dims": "T.nn.BatchNorm1d(5)(T.randn(4, 5, 3, 3))",
    "batch norm 2d dims": "T.nn.BatchNorm2d(5)(T.randn(4, 5, 3))",
    "batch norm channels": "T.nn.BatchNorm1d(5)(T.randn(4, 6))",
    "batch norm one value": "T.nn.BatchNorm1d(5)(T.randn(1, 5))",
    "batch norm eval needs stats": "T.nn.functional.batch_norm(T.randn(3, 4), None, None)",
    "dropout probability": "T.nn.Dropout(1.5)",
    "cross entropy float target": "T.nn.CrossEntropyLoss()(T.randn(4, 5), T.tensor([0., 1, 2, 4]))",
    "cross entropy int32 target": (
        "T.nn.CrossEntropyLoss()(T.randn(4, 5), T.tensor([0, 1, 2, 4], dtype=T.int32))"
    ),
    "cross entropy class too big": "T.nn.CrossEntropyLoss()(T.randn(4, 5), T.tensor([0, 1, 2, 5]))",
    "cross entropy negative class": (
        "T.nn.CrossEntropyLoss()(T.randn(4, 5), T.tensor([0, 1, 2, -1]))"
    ),
    "cross entropy batch": "T.nn.CrossEntropyLoss()(T.randn(4, 5), T.tensor([0, 1, 2]))",
    "cross entropy 2d target": "T.nn.CrossEntropyLoss()(T.randn(4, 5), T.tensor([[0, 1, 2, 1]]))",
    "cross entropy probabilities shape": ("T.nn.CrossEntropyLoss()(T.randn(4, 5), T.rand(4, 4))"),
    "cross entropy integer probabilities": (
        "T.nn.CrossEntropyLoss()(T.randn(4, 5), T.zeros(4, 5, dtype=T.int64))"
    ),
    "cross entropy probabilities ignore_index": (
        "T.nn.CrossEntropyLoss(ignore_index=1)(T.randn(4, 5), T.rand(4, 5))"
    ),
    "cross entropy reduction": (
        "T.nn.CrossEntropyLoss(reduction='avg')(T.randn(4, 5), T.tensor([0, 1, 2, 3]))"
    ),
    "nll class weights": ("T.nn.NLLLoss(weight=T.ones(4))(T.randn(4, 5), T.tensor([0, 1, 2, 3]))"),
    "nll 3d target size": "T.nn.NLLLoss()(T.randn(2, 3, 4), T.zeros(2, 5, dtype=T.int64))",
    "nll 4d target dims": "T.nn.NLLLoss()(T.randn(2, 3, 4, 4), T.zeros(2, 4, dtype=T.int64))",
    "nll 4d target size": "T.nn.NLLLoss()(T.randn(2, 3, 4, 4), T.zeros(2, 4, 3, dtype=T.int64))",
    "nll 4d class too big": "T.nn.NLLLoss()(T.randn(2, 3, 4, 4), T.full((2, 4, 4), 3))",
    "nll scalar input": "T.nn.NLLLoss()(T.tensor(1.0), T.tensor(0))",
    "nll 1d class too big": "T.nn.NLLLoss()(T.randn(5), T.tensor(7))",
    "bce outside [0, 1]": "T.nn.BCELoss()(T.tensor([1.5]), T.tensor([1.0]))",
    "bce target size": "T.nn.BCELoss()(T.rand(4, 1), T.rand(4))",
    "bce target dtype": "T.nn.BCELoss()(T.rand(4), T.rand(4, dtype=T.float64))",
    "bce with logits target size": "T.nn.BCEWithLogitsLoss()(T.rand(4, 1), T.rand(4))",
    "mse broadcast": "T.nn.MSELoss()(T.rand(4), T.rand(3))",
    "mse integers": "T.nn.MSELoss()(T.tensor([1, 2]), T.tensor([1, 2]))",
    "one_hot negative": "T.nn.functional.one_hot(T.tensor([-1]))",
    "one_hot too big": "T.nn.functional.one_hot(T.tensor([3]), 3)",
    "one_hot float": "T.nn.functional.one_hot(T.tensor([3.0]))",
    "one_hot empty": "T.nn.functional.one_hot(T.tensor([], dtype=T.int64))",
    "gelu integers": "T.nn.functional.gelu(T.tensor([1, 2]))",
    "leaky relu integers": "T.nn.functional.leaky_relu(T.tensor([1, 2]))",
    "softmax integers": "T.nn.functional.softmax(T.tensor([1, 2]), 0)",
    "pad odd length": "T.nn.functional.pad(T.randn(4, 5), (1,))",
    "pad too long": "T.nn.functional.pad(T.randn(4, 5), (1, 1, 1, 1, 1, 1))",
    "pad reflect too wide": "T.nn.functional.pad(T.randn(1, 2, 4), (4, 4), mode='reflect')",
    "pad reflect dims": "T.nn.functional.pad(T.randn(4), (1, 1), mode='reflect')",
    "pad mode": "T.nn.functional.pad(T.randn(1, 1, 4, 4), (1, 1), mode='foo')",
    "fold blocks": "T.nn.functional.fold(T.randn(1, 12, 8), (4, 4), 2)",
    "cosine similarity shapes": "T.nn.functional.cosine_similarity(T.randn(3, 4), T.randn(3, 5))",
    "sequential index": "T.nn.Sequential(T.nn.ReLU())[3]",
    "module list index": "T.nn.ModuleList([T.nn.ReLU()])[-2]",
    "sgd learning rate": "T.optim.SGD([T.nn.Parameter(T.ones(1))], lr=-1)",
    "sgd nesterov": "T.optim.SGD([T.nn.Parameter(T.ones(1))], lr=0.1, nesterov=True)",
    "adam beta": "T.optim.Adam([T.nn.Parameter(T.ones(1))], betas=(1.0, 0.9))",
    "optimizer no params": "T.optim.Adam([])",
    "optimizer non-leaf": "T.optim.SGD([T.ones(1, requires_grad=True) * 2], lr=0.1)",
}


def _raised(source, T):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eval(source, {"T": T})  # noqa: S307 - our own test table
    except Exception as error:  # noqa: BLE001 - the exception itself is under test
        return error
    return None


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_raises_pytorch_error(torch, name):
    ours, theirs = _raised(BAD_INPUTS[name], nbgrad), _raised(BAD_INPUTS[name], torch)
    assert theirs is not None, "PyTorch accepts this: not a bad input"
    assert ours is not None, "nbgrad accepted a bad input"
    assert type(ours).__name__ == type(theirs).__name__
    assert str(ours) == str(theirs)


# Where PyTorch's message is obscure or comes from deep inside, nbgrad's says what is wrong.
CLEARER_THAN_PYTORCH = {
    "bce with logits integer target": (
        "T.nn.BCEWithLogitsLoss()(T.rand(4), T.tensor([1, 0, 1, 0]))",
        RuntimeError,
        "Found dtype Long but expected Float",
    ),
    "unfold dims": (
        "T.nn.functional.unfold(T.randn(4, 4), 2)",
        RuntimeError,
        "Expected 3D or 4D (batch mode) tensor for input",
    ),
    "dropout integers": (
        "T.nn.functional.dropout(T.tensor([1, 2]), 0.5)",
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
}


@pytest.mark.parametrize("name", CLEARER_THAN_PYTORCH)
def test_bad_input_clear_error(name):
    source, kind, message = CLEARER_THAN_PYTORCH[name]
    with pytest.raises(kind, match=re.escape(message)):
        eval(source, {"T": nbgrad})  # noqa: S307


def test_loss_of_wrong_shapes_warns_like_pytorch(torch):
    for T in (nbgrad, torch):
        with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[3, 1\]\)\)"):
            T.nn.MSELoss()(T.zeros(3), T.zeros(3, 1))
