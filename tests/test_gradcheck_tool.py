"""``nbgrad.autograd.gradcheck`` and ``gradgradcheck`` themselves: they pass correct derivatives,
catch wrong ones (made on purpose with custom Functions), and behave as PyTorch's do.

The end of the file holds the checker's former bugs (grad mode, non-contiguous and empty
inputs), now fixed, as regression tests.
"""

import warnings

import numpy as np
import pytest

import nbgrad as torch
from nbgrad.autograd import GradcheckError, gradcheck, gradgradcheck


def leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.standard_normal(shape), requires_grad=True)


class WrongSquare(torch.autograd.Function):
    """x**2 with the derivative 3x instead of 2x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x


class WrongSecondInput(torch.autograd.Function):
    """x * y with the right derivative for x and a wrong sign for y."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y, -grad * x


class DetachedCube(torch.autograd.Function):
    """x**3 with a right first derivative, 3x**2, computed from a detached x: its own derivative
    (the second derivative of x**3) then comes out as 0 instead of 6x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x = x.detach()
        return grad * 3 * x * x


class Cube(torch.autograd.Function):
    """x**3 with a differentiable backward: right to every order."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


# --- gradcheck ---------------------------------------------------------------------------------


def test_gradcheck_accepts_right_derivatives():
    x, y = leaf(2, 3), leaf(3, seed=1)
    assert gradcheck(lambda a, b: (a * b).sin(), (x, y)) is True
    assert gradcheck(lambda a: (a.exp(), a.sum()), x) is True  # several outputs, one input
    assert gradcheck(Cube.apply, (x,)) is True
    assert gradcheck(lambda a: a, (x,)) is True  # the output is the input itself


def test_gradcheck_catches_a_wrong_derivative():
    x = leaf(3)
    message = "Jacobian mismatch for output 0 with respect to input 0"
    with pytest.raises(GradcheckError, match=message):
        gradcheck(WrongSquare.apply, (x,))
    assert gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False


def test_gradcheck_names_the_input_whose_derivative_is_wrong():
    x, y = leaf(3), leaf(3, seed=1)
    with pytest.raises(GradcheckError, match="with respect to input 1"):
        gradcheck(WrongSecondInput.apply, (x, y))
    # An input that does not require grad is not checked, so the wrong derivative goes unseen.
    assert gradcheck(WrongSecondInput.apply, (x, y.detach())) is True


def test_gradcheck_shows_both_jacobians():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as error:
        gradcheck(WrongSquare.apply, (x,))
    message = str(error.value)
    assert "numerical:" in message and "analytical:" in message
    assert "6." in message  # analytical d(x*x)/dx at x=2 from the wrong formula: 3 * 2


def test_gradcheck_ignores_non_tensor_and_integer_arguments_and_outputs():
    x = leaf(4)
    assert gradcheck(lambda a, n: a * n, (x, 3)) is True
    assert gradcheck(lambda a: (a.argmax(), a * 2), (x,)) is True
    assert gradcheck(lambda a, b: a * b, (x, torch.arange(4))) is True


def test_gradcheck_tolerances_are_used():
    x = leaf(3)
    # A relative error of 50% passes with rtol=1 and fails with the defaults.
    assert gradcheck(WrongSquare.apply, (x,), rtol=1.0, raise_exception=False) is True
    assert gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False


def test_gradcheck_leaves_the_inputs_unchanged():
    x = leaf(2, 3)
    before = x.detach().numpy().copy()
    gradcheck(lambda a: a.exp(), (x,))
    assert np.array_equal(x.detach().numpy(), before)
    assert x.grad is None  # it uses autograd.grad, not backward


def test_gradcheck_warns_about_single_precision_inputs():
    x = torch.tensor([1.0, 2.0], requires_grad=True)  # float32
    message = "Input #0 requires gradient and is not a double precision"
    with pytest.warns(UserWarning, match=message):
        gradcheck(lambda a: a * 2, (x,), eps=1e-3, atol=1e-2, rtol=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradcheck(lambda a: a * 2, (x.double().detach().requires_grad_(),))


# --- gradgradcheck -----------------------------------------------------------------------------


def test_gradgradcheck_accepts_right_second_derivatives():
    x, y = leaf(2, 3), leaf(3, seed=1)
    assert gradgradcheck(lambda a, b: (a * b).sin(), (x, y)) is True
    assert gradgradcheck(Cube.apply, (x,)) is True


def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = leaf(3)
    assert gradcheck(DetachedCube.apply, (x,)) is True  # the first derivative is right
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(DetachedCube.apply, (x,))
    assert gradgradcheck(DetachedCube.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_uses_the_given_grad_outputs():
    x = leaf(3)
    v = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64, requires_grad=True)
    assert gradgradcheck(lambda a: a.exp() * a, (x,), (v,)) is True


# --- former bugs of the checker ------------------------------------------------------------------


def test_gradgradcheck_of_a_plain_function():
    assert gradgradcheck(lambda a: a.sin(), (leaf(3),)) is True


def test_gradcheck_of_a_function_that_differentiates():
    def derivative(a):
        return torch.autograd.grad(a.sin().sum(), a, create_graph=True)[0]

    assert gradcheck(derivative, (leaf(3),)) is True


def test_gradcheck_of_a_non_contiguous_input():
    x = torch.tensor(np.arange(6.0).reshape(3, 2)).t().detach().requires_grad_()
    assert not x.is_contiguous()
    assert gradcheck(lambda a: a * 2, (x,)) is True


def test_gradcheck_of_an_empty_input():
    x = torch.zeros(0, 3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a: a * 2, (x,)) is True
