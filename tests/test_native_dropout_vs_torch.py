"""torch.native_dropout against PyTorch 2.13: NativeDropoutBackward0 with its saved p and mask,
the output made from the mask it returns, the gradient (scaled only when train is True, as
PyTorch's formula does), MulBackward0 under create_graph, the edge cases and errors. The masks
are random in both libraries (different generators), so values are checked against the mask each
returned."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

DATA = np.linspace(-1.5, 2.0, 12).reshape(3, 4)


def run(T, p, train):
    T.manual_seed(3)
    x = T.tensor(DATA, requires_grad=True)
    output, mask = T.native_dropout(x * 1, p, train)
    node = output.grad_fn
    seen = (
        node.name(),
        node._saved_p,
        str(node._saved_result1.dtype),
        [type(n).__name__ for n, _ in node.next_functions],
        str(output.dtype),
        str(mask.dtype),
        tuple(mask.shape),
    )
    (grad,) = T.autograd.grad((output * output).sum(), x, create_graph=True)
    seen += (grad.grad_fn.name(), [type(n).__name__ for n, _ in grad.grad_fn.next_functions])
    keep = mask.numpy().astype(np.float64)
    assert node._saved_result1.tolist() == mask.tolist()
    return seen, keep, output.detach().numpy(), grad.detach().numpy()


@pytest.mark.parametrize("p", [0.0, 0.25, 0.5, 1.0])
@pytest.mark.parametrize("train", [True, False, None])
def test_native_dropout_matches_pytorch(p, train):
    ours = run(nbgrad, p, train)
    theirs = run(torch, p, train)
    assert ours[0] == theirs[0]
    for _seen, keep, output, grad in (ours, theirs):
        dropping = train is not False
        forward_scale = (0.0 if p == 1 else 1 / (1 - p)) if dropping else 1.0
        backward_scale = forward_scale if train is True else 1.0
        if not dropping:
            assert keep.all()
        np.testing.assert_allclose(output, DATA * keep * forward_scale)
        np.testing.assert_allclose(grad, 2 * output * keep * backward_scale)
    if p in (0.0, 1.0) or train is False:  # no randomness left: the very same values
        np.testing.assert_array_equal(ours[2], theirs[2])
        np.testing.assert_array_equal(ours[3], theirs[3])


def test_about_the_right_share_is_dropped():
    nbgrad.manual_seed(0)
    _, mask = nbgrad.native_dropout(nbgrad.ones(20000), 0.3, True)
    assert abs(mask.float().mean().item() - 0.7) < 0.02


def test_empty_input():
    for T in (nbgrad, torch):
        output, mask = T.native_dropout(T.zeros(0, requires_grad=True), 0.5, True)
        assert output.grad_fn.name() == "NativeDropoutBackward0"
        assert (tuple(mask.shape), mask.dtype) == ((0,), T.float32)


def _error(T, args):
    try:
        T.native_dropout(*args(T))
    except Exception as error:  # noqa: BLE001 - compared by type and message
        return type(error).__name__, str(error)
    return None


@pytest.mark.parametrize(
    "args",
    [
        lambda T: (T.ones(3, requires_grad=True), 1.5, True),
        lambda T: (T.ones(3, requires_grad=True), -0.1, True),
        lambda T: (T.ones(3, dtype=T.long), 0.5, True),
    ],
)
def test_bad_arguments_raise_pytorchs_errors(args):
    theirs = _error(torch, args)
    assert theirs is not None
    assert _error(nbgrad, args) == theirs
