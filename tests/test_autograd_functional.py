"""torch.autograd.functional's jacobian, hessian, vjp and jvp, against PyTorch."""

import numpy as np
import pytest

import nbgrad


def exp_adder(x, y):
    return 2 * x.exp() + 3 * y


def cubes(x):
    return (x**3).sum()


def doubling(x):
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    return y


def results(T):
    F = T.autograd.functional
    data = np.array([0.3, 0.7, 1.1])
    x, y = T.tensor(data), T.tensor(data[::-1].copy())
    out = {
        "jacobian of two inputs": F.jacobian(exp_adder, (x, y)),
        "jacobian of a scalar": F.jacobian(cubes, x),
        "hessian": F.hessian(cubes, x),
        "hessian of two inputs": F.hessian(lambda a, b: (a * a * b).sum(), (x, y)),
        "vjp": F.vjp(doubling, x, v=T.tensor([0.1, 1.0, 0.0001])),
        "jvp": F.jvp(lambda a: a**2, x, v=T.tensor([1.0, 0.5, 2.0])),
        "jacobian with create_graph": F.jacobian(lambda a: a.sin(), x, create_graph=True),
        "vhp": F.vhp(cubes, x, T.tensor([1.0, 2.0, 3.0])),
        "hvp": F.hvp(lambda a: (a.sin() * a[0]).sum(), x, T.tensor([1.0, -2.0, 0.5])),
        "vhp of two inputs": F.vhp(
            lambda a, b: (a * a * b).sum(), (x, y), (T.ones(3), T.tensor([0.0, 1.0, 2.0]))
        ),
        "hvp of one element": F.hvp(cubes, T.tensor([2.0])),
        "hvp with create_graph": F.hvp(cubes, x, T.ones(3), create_graph=True),
    }
    return out


def flat(value):
    if isinstance(value, tuple):
        return [v for item in value for v in flat(item)]
    return [np.asarray(value.detach().numpy())]


@pytest.mark.parametrize("name", list(results(nbgrad)))
def test_matches_pytorch(torch, name):
    ours, theirs = results(nbgrad)[name], results(torch)[name]
    mine, real = flat(ours), flat(theirs)
    assert [m.shape for m in mine] == [r.shape for r in real]
    for m, r in zip(mine, real):
        np.testing.assert_allclose(m, r, rtol=1e-6)


def test_create_graph_keeps_the_jacobian_differentiable():
    x = nbgrad.tensor([0.3, 0.7], requires_grad=True)
    jac = nbgrad.autograd.functional.jacobian(lambda a: a.sin(), x, create_graph=True)
    assert jac.requires_grad
    (second,) = nbgrad.autograd.grad(jac.sum(), x)
    np.testing.assert_allclose(second.numpy(), -np.sin([0.3, 0.7]), rtol=1e-6)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
@pytest.mark.parametrize(
    "call",
    [
        "F(lambda a: a ** 2, x, T.ones(3))",
        "F(cubes, x)",
        "F(cubes, x, T.ones(2))",
    ],
)
def test_hessian_product_errors_match_pytorch(torch, name, call):
    messages = []
    for T in (nbgrad, torch):
        x = T.tensor([0.3, 0.7, 1.1])
        names = {"F": getattr(T.autograd.functional, name), "T": T, "x": x, "cubes": cubes}
        with pytest.raises(RuntimeError) as error:
            eval(call, names)  # noqa: S307
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_hvp_create_graph_is_differentiable_again():
    x = nbgrad.tensor([0.3, 0.7], requires_grad=True)
    _, product = nbgrad.autograd.functional.hvp(cubes, x, nbgrad.ones(2), create_graph=True)
    (third,) = nbgrad.autograd.grad(product.sum(), x)  # d/dx of 6 x: 6
    np.testing.assert_allclose(third.numpy(), [6.0, 6.0])
