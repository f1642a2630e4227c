"""torch.renorm / Tensor.renorm (RenormBackward0) against PyTorch 2.13: values, the graph with its
saved p, dim, maxnorm and self, gradients and second derivatives, errors; and finite-difference
checks of first and second order."""

import numpy as np
import pytest
from test_misc_ops_vs_torch import run_both

import nbgrad
from nbgrad.autograd.gradcheck import gradcheck, gradgradcheck

CASES = [
    (2, 0, 1.0, (3, 4)),
    (1, -1, 2, (3, 4)),
    (3, 1, 0.5, (2, 3, 4)),
    (float("inf"), 0, 0.7, (3, 4)),
    (2, -2, 0.0, (2, 3)),
    (2.5, 2, 100.0, (2, 2, 3)),  # no slice above maxnorm: the identity
]


@pytest.mark.parametrize(("p", "dim", "maxnorm", "shape"), CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_renorm(torch, p, dim, maxnorm, shape, dtype):
    run_both(torch, lambda T, x: T.renorm(x, p, dim, maxnorm), [shape], dtype=dtype)
    run_both(torch, lambda T, x: (x * 2).renorm(p, dim, maxnorm), [shape], dtype=dtype)


def test_renorm_scales_rows_to_maxnorm():
    x = nbgrad.tensor([[3.0, 4.0], [0.3, 0.4]])
    # the first row's norm 5 becomes 1 (divided by 5 + 1e-7); the second (0.5) stays
    expected = [[3 / (5 + 1e-7), 4 / (5 + 1e-7)], [0.3, 0.4]]
    np.testing.assert_allclose(nbgrad.renorm(x, 2, 0, 1.0).numpy(), expected, rtol=1e-6)


def test_renorm_double_backward(torch):
    grads = []
    for T in (torch, nbgrad):
        x = T.tensor(np.random.default_rng(4).standard_normal((3, 4)), requires_grad=True)
        (g,) = T.autograd.grad((T.renorm(x, 3, 0, 1.0) ** 2).sum(), x, create_graph=True)
        (gg,) = T.autograd.grad((g * g).sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-10)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-9)


def test_renorm_errors(torch):
    seen = []
    for T in (torch, nbgrad):
        messages = []
        for args, tensor in (
            ((0, 0, 1.0), T.ones(2, 2)),
            ((2, 0, -1.0), T.ones(2, 2)),
            ((2, 0, -0.25), T.ones(2, 2)),
            ((2, 0, 1.0), T.ones(3)),
            ((2, 2, 1.0), T.ones(2, 2)),
            ((2, 0, 1), T.ones(2, 2, dtype=T.int64)),
        ):
            with pytest.raises((RuntimeError, IndexError)) as caught:
                T.renorm(tensor, *args)
            messages.append((type(caught.value).__name__, str(caught.value)))
        seen.append(messages)
    assert seen[0] == seen[1]


@pytest.mark.parametrize(("p", "dim", "maxnorm"), [(2, 0, 1.0), (1.5, 1, 0.8), (3, -1, 0.5)])
def test_gradcheck_renorm(p, dim, maxnorm):
    x = nbgrad.tensor(np.random.default_rng(7).standard_normal((3, 4)) + 0.5, requires_grad=True)
    assert gradcheck(lambda x: nbgrad.renorm(x, p, dim, maxnorm), [x])
    assert gradgradcheck(lambda x: nbgrad.renorm(x, p, dim, maxnorm), [x])


# --- renorm_, in place ---------------------------------------------------------------------------


@pytest.mark.parametrize(("p", "dim", "maxnorm", "shape"), CASES)
def test_renorm_in_place(torch, p, dim, maxnorm, shape):
    """Tensor.renorm_: the same node (RenormBackward0), saving the input as it was before the
    write (CloneBackward0 below _saved_self), the version bumped, the same tensor returned."""
    run_both(torch, lambda T, x: (x * 2).renorm_(p, dim, maxnorm), [shape])
    for T in (torch, nbgrad):
        x = T.tensor(np.random.default_rng(1).standard_normal(shape), requires_grad=True)
        y = x * 2
        assert y.renorm_(p, dim, maxnorm) is y and y._version == 1
        assert type(y.grad_fn._saved_self.grad_fn).__name__ == "CloneBackward0"


def test_renorm_in_place_errors(torch):
    seen = []
    for T in (torch, nbgrad):
        messages = []
        for args, tensor in (
            ((0, 0, 1.0), T.ones(2, 2)),
            ((2, 0, -1.0), T.ones(2, 2)),
            ((2, 0, 1.0), T.ones(3)),
            ((2, 5, 1.0), T.ones(2, 2)),
            ((2, 0, 1), T.ones(2, 2, dtype=T.int64)),
            ((2, 0, 1.0), T.ones(2, 2, requires_grad=True)),  # a leaf
        ):
            with pytest.raises((RuntimeError, IndexError)) as caught:
                tensor.renorm_(*args)
            messages.append((type(caught.value).__name__, str(caught.value)))
        seen.append(messages)
    assert seen[0] == seen[1]
    assert not hasattr(torch, "renorm_") and not hasattr(nbgrad, "renorm_")
