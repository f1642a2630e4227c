"""Programs shaped like PyTorch's autograd tutorials (docs/programs.md), run with both nbgrad and
PyTorch: the same calls, written here in our own words. Only random starting weights differ."""

import math

import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch


def fit_polynomial(lib, start=None, steps=300):
    """Fit a + b x + c x^2 + d x^3 to sin(x) by hand-written gradient descent, with the device
    chosen through ``lib.accelerator`` and set as the default device."""
    where = lib.accelerator.current_accelerator().type if lib.accelerator.is_available() else "cpu"
    lib.set_default_device(where)
    try:
        kind = lib.float
        xs = lib.linspace(-math.pi, math.pi, 2000, dtype=kind)
        target = lib.sin(xs)
        if start is None:
            weights = [lib.randn((), dtype=kind, requires_grad=True) for _ in range(4)]
        else:
            weights = [lib.tensor(w, dtype=kind, requires_grad=True) for w in start]
        rate = 1e-6
        losses = []
        for step in range(steps):
            a, b, c, d = weights
            prediction = a + b * xs + c * xs**2 + d * xs**3
            loss = (prediction - target).pow(2).sum()
            if step % 100 == 99:
                losses.append(loss.item())
            loss.backward()
            with lib.no_grad():
                for w in weights:
                    w -= rate * w.grad
                    w.grad = None
        return [w.item() for w in weights], losses
    finally:
        lib.set_default_device(None)


def make_legendre(lib):
    class Legendre3(lib.autograd.Function):
        """P3(u) = (5 u^3 - 3 u) / 2, with its derivative written by hand."""

        @staticmethod
        def forward(ctx, u):
            ctx.save_for_backward(u)
            return 0.5 * (5 * u**3 - 3 * u)

        @staticmethod
        def backward(ctx, grad_output):
            (u,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * u**2 - 1)

    return Legendre3


def fit_legendre(lib, steps=300):
    """Fit a + b P3(c + d x) to sin(x) through a custom autograd Function."""
    place = lib.device("cpu")
    kind = lib.float
    xs = lib.linspace(-math.pi, math.pi, 2000, device=place, dtype=kind)
    target = lib.sin(xs)
    start = (0.0, -1.0, 0.0, 0.3)
    weights = [lib.full((), s, device=place, dtype=kind, requires_grad=True) for s in start]
    p3 = make_legendre(lib).apply
    rate = 5e-6
    losses = []
    grad_fn = None
    for step in range(steps):
        a, b, c, d = weights
        prediction = a + b * p3(c + d * xs)
        loss = (prediction - target).pow(2).sum()
        grad_fn = type(prediction.grad_fn).__name__
        if step % 100 == 99:
            losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            for w in weights:
                w -= rate * w.grad
                w.grad = None
    return [w.item() for w in weights], losses, grad_fn


def test_polynomial_autograd_from_the_same_start_matches_torch():
    start = (0.1, -0.2, 0.3, -0.4)
    ours = fit_polynomial(nbgrad, start)
    theirs = fit_polynomial(torch, start)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-4, abs=1e-6)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-4)


def test_polynomial_autograd_from_random_weights_learns():
    nbgrad.manual_seed(0)
    (a, b, c, d), losses = fit_polynomial(nbgrad, steps=2000)
    assert losses[-1] < losses[0] and losses[-1] < 50
    assert nbgrad.get_default_device() == nbgrad.device("cpu")


def test_polynomial_custom_function_matches_torch():
    ours = fit_legendre(nbgrad)
    theirs = fit_legendre(torch)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-4, abs=1e-6)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-4)
    assert ours[2] == theirs[2] == "AddBackward0"


def test_zeroing_grad_with_a_float_fails_as_in_torch():
    """The current autograd tutorial ends its loop with ``a.grad = 0.``: both refuse it."""
    messages = []
    for lib in (nbgrad, torch):
        a = lib.randn((), requires_grad=True)
        (a * 2).backward()
        with pytest.raises(TypeError) as caught, lib.no_grad():
            a.grad = 0.0
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
