"""torch.func's grad, grad_and_value, vjp, jacrev, hessian and functional_call: the same
results, structures, grad_fns and errors as PyTorch's, and derivatives checked against finite
differences where PyTorch is not installed."""

import numpy as np
import pytest

import nbgrad

CUBES = "lambda v: (v ** 3).sum()"

# (name, expression). Each sees T (the library), x (3 floats), m (a Linear(3, 1) with set
# weights) and params (its parameters, detached), and is compared with PyTorch by its repr:
# values, structure (tuples, dicts), grad_fn names, and exception type and message.
CASES = [
    ("grad", f"T.func.grad({CUBES})(x)"),
    ("grad of a tensor that requires grad", f"T.func.grad({CUBES})(x.clone().requires_grad_())"),
    ("grad of grad", f"T.func.grad(lambda v: T.func.grad({CUBES})(v).sum())(x)"),
    (
        "grad of an argument also used by the function's closure",
        "(lambda w: T.func.grad(lambda v: (v * w).sum())(w))(x.clone().requires_grad_())",
    ),
    (
        "backward through grad with respect to a tensor used twice",
        "(lambda w: (T.func.grad(lambda v: (v * w * v).sum())(w).sum().backward(), w.grad)[1])"
        "(x.clone().requires_grad_())",
    ),
    ("grad of a vector", "T.func.grad(lambda v: v * 2)(x)"),
    ("grad of an integer tensor", f"T.func.grad({CUBES})(T.tensor([1, 2]))"),
    ("grad of a float", "T.func.grad(lambda v: 3.0)(x)"),
    ("grad, two argnums", "T.func.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, x + 1)"),
    ("grad, negative argnum", "T.func.grad(lambda a, b: (a * b).sum(), argnums=-1)(x, x + 1)"),
    ("grad, argnum out of range", "T.func.grad(lambda a, b: (a * b).sum(), argnums=2)(x, x)"),
    ("grad, has_aux", "T.func.grad(lambda v: ((v ** 2).sum(), v.mean()), has_aux=True)(x)"),
    ("grad, has_aux without aux", "T.func.grad(lambda v: (v ** 2).sum(), has_aux=True)(x)"),
    ("grad, no dependence", "T.func.grad(lambda v: T.tensor(1.0))(x)"),
    (
        "grad of a dict",
        "T.func.grad(lambda d: (d['a'] * 2 + d['b'][0]).sum())({'a': x, 'b': (x,)})",
    ),
    ("grad_and_value", f"T.func.grad_and_value({CUBES})(x)"),
    (
        "versions of results summed in place",
        "[r._version for r in (T.func.grad(lambda v: (v.sin() * v).sum())(x), "
        "T.func.vjp(lambda v: v.sin() * v, x)[1](T.ones(3))[0], "
        "T.func.jacrev(lambda v: v.sin() * v)(x))]",
    ),
    ("vjp", "(lambda out, fn: (out, fn(T.ones(3))))(*T.func.vjp(lambda v: v * v, x))"),
    (
        "vjp of two primals",
        "(lambda out, fn: (out, fn(T.tensor([1.0, -1.0, 2.0]))))"
        "(*T.func.vjp(lambda a, b: a * b.exp(), x, x / 3))",
    ),
    ("jacrev", "T.func.jacrev(lambda v: v ** 2)(x)"),
    ("jacrev, two argnums", "T.func.jacrev(lambda a, b: a * b, argnums=(0, 1))(x, x)"),
    ("jacrev of two outputs", "T.func.jacrev(lambda a: (a * 2, a.sum()))(x)"),
    ("jacrev of a matrix", "T.func.jacrev(lambda a: a.outer(a))(x)"),
    ("hessian", f"T.func.hessian({CUBES})(x)"),
    ("hessian of a product", "T.func.hessian(lambda a: (a.sin() * a[0]).sum())(x)"),
    ("functional_call", "T.func.functional_call(m, params, (x,))"),
    (
        "grad through functional_call",
        "T.func.grad(lambda p: T.func.functional_call(m, p, (x,)).sum())(params)",
    ),
    ("functional_call of unknown names", "T.func.functional_call(m, {'nope': x}, (x,))"),
    (
        "functional_call, strict",
        "T.func.functional_call(m, {'weight': params['weight']}, (x,), strict=True)",
    ),
    (
        "functional_call, a name in two dicts",
        "T.func.functional_call(m, ({'weight': x[None]}, {'weight': x[None]}), (x,))",
    ),
    (
        "functional_call, tied weights",
        "T.func.functional_call(T.nn.Sequential(m2, T.nn.Tanh(), m2), {'0.weight': T.eye(2) * 2},"
        " (T.ones(2),))",
    ),
    (
        "functional_call, a parameter shared by two modules",
        "T.func.functional_call(tied, {'0.weight': T.eye(2) * 2}, (T.ones(2),))",
    ),
    (
        "functional_call, a parameter shared by two modules, untied",
        "T.func.functional_call(tied, {'0.weight': T.eye(2) * 2}, (T.ones(2),), tie_weights=False)",
    ),
    ("vjp of an inference tensor", "T.func.vjp(lambda v: v.sin(), inference)[1](T.ones(3))"),
    ("grad of an inference tensor", f"T.func.grad({CUBES})(inference)"),
    (
        "stack_module_state",
        "{k: (v.shape, v.requires_grad, v.is_leaf, v.dtype) for d in "
        "T.func.stack_module_state([T.nn.Sequential(T.nn.Linear(3, 2), T.nn.BatchNorm1d(2)) "
        "for _ in range(3)]) for k, v in d.items()}",
    ),
    ("stack_module_state of no model", "T.func.stack_module_state([])"),
    ("stack_module_state of other shapes", "T.func.stack_module_state([m, T.nn.Linear(3, 3)])"),
    (
        "stack_module_state, train and eval",
        "T.func.stack_module_state([m, T.nn.Linear(3, 1).eval()])",
    ),
    (
        # the values (its grad_fn is StackBackward0 here: README, differences) ...
        "an ensemble by vmap over functional_call",
        "(lambda state: T.func.vmap(lambda p, b, v: T.func.functional_call(m, (p, b), (v,)), "
        "in_dims=(0, 0, None))(*state, x).detach())(T.func.stack_module_state([m, m]))",
    ),
    (
        # ... and the gradients backward gives the stacked parameters through it
        "backward through an ensemble",
        "(lambda state: (T.func.vmap(lambda p, b, v: T.func.functional_call(m, (p, b), (v,)), "
        "in_dims=(0, 0, None))(*state, x).pow(2).sum().backward(), "
        "{k: v.grad for k, v in state[0].items()})[1])(T.func.stack_module_state([m, m]))",
    ),
    ("the module after functional_call", "(m.weight, m.bias, m.weight.grad)"),
]


def run(T, expression):
    x = T.tensor([1.0, 2.0, 3.0])
    m = T.nn.Linear(3, 1)
    with T.no_grad():
        m.weight.copy_(T.tensor([[0.5, -1.0, 2.0]]))
        m.bias.fill_(0.25)
    m2 = T.nn.Linear(2, 2, bias=False)
    tied = T.nn.Sequential(
        T.nn.Linear(2, 2, bias=False), T.nn.Tanh(), T.nn.Linear(2, 2, bias=False)
    )
    with T.no_grad():
        tied[0].weight.copy_(T.tensor([[1.0, -2.0], [0.5, 3.0]]))
        m2.weight.copy_(T.tensor([[1.0, -2.0], [0.5, 3.0]]))
    tied[2].weight = tied[0].weight
    params = {name: p.detach() for name, p in m.named_parameters()}
    with T.inference_mode():
        inference = T.tensor([0.5, 1.0, 2.0])
    names = {"T": T, "x": x, "m": m, "m2": m2, "tied": tied, "params": params}
    names["inference"] = inference
    try:
        return repr(eval(expression, names))  # noqa: S307
    except Exception as error:  # noqa: BLE001 - the exception is what is compared
        return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize("name, expression", CASES, ids=[name for name, _ in CASES])
def test_same_as_pytorch(torch, name, expression):
    assert run(nbgrad, expression) == run(torch, expression)


# vmap, jvp and jacfwd: x is 2x3 here (arange), y three ones.
MAPPED_CASES = [
    ("vmap", "vmap(lambda a: a * 2)(x)"),
    ("vmap, in_dims with None", "vmap(lambda a, b: a + b, in_dims=(0, None))(x, y)"),
    ("vmap over dim 1", "vmap(lambda a: a.sum(), in_dims=1)(x)"),
    ("vmap over dim -1", "vmap(lambda a: a.sum(), in_dims=-1)(x)"),
    ("vmap, out_dims 1", "vmap(lambda a: a * 2, out_dims=1)(x)"),
    ("vmap, out_dims -1", "vmap(lambda a: a * 2, out_dims=-1)(x)"),
    ("vmap of two outputs", "vmap(lambda a: (a.sum(), a * 2))(x)"),
    ("vmap, out_dims per output", "vmap(lambda a: (a.sum(), a * 2), out_dims=(0, 1))(x)"),
    ("vmap, an output not mapped", "vmap(lambda a: (a * 2, 3.0), out_dims=(0, None))(x)"),
    ("vmap, a constant output", "vmap(lambda a: T.ones(2))(x)"),
    ("vmap, sizes differ", "vmap(lambda a, b: a + b)(x, T.ones(3, 3))"),
    ("vmap, in_dims too short", "vmap(lambda a, b: a + b, in_dims=(0,))(x, y)"),
    ("vmap, in_dims too long", "vmap(lambda a, b: a + b, in_dims=(0, None, 0))(x, y)"),
    ("vmap, in_dims None", "vmap(lambda a: a, in_dims=None)(x)"),
    ("vmap, nothing mapped", "vmap(lambda a, b: a + b, in_dims=(None, None))(x, y)"),
    ("vmap of a float", "vmap(lambda a: 3.0)(x)"),
    ("vmap, in_dim out of range", "vmap(lambda a: a, in_dims=2)(x)"),
    ("vmap over an int", "vmap(lambda a, n: a * n)(x, 2)"),
    ("vmap, out_dims None of a tensor", "vmap(lambda a: a * 2, out_dims=None)(x)"),
    ("vmap, random in error mode", "vmap(lambda a: a + T.rand(3))(x)"),
    ("vmap, dropout in error mode", "vmap(lambda a: T.nn.functional.dropout(a, 0.5))(x)"),
    (
        "vmap, randomness same",
        "(lambda r: (r[0] == r[1]).all())(vmap(lambda a: a * 0 + T.rand(1), randomness='same')(x))",
    ),
    (
        "vmap, randomness different",
        "(lambda r: (r[0] != r[1]).all())"
        "(vmap(lambda a: a * 0 + T.rand(1), randomness='different')(x))",
    ),
    ("vmap, unknown randomness", "vmap(lambda a: a, randomness='nope')(x)"),
    ("vmap with keywords", "vmap(lambda a, scale: a * scale)(x, scale=3)"),
    ("vmap of a dict", "vmap(lambda d: d['a'].sum())({'a': x})"),
    (
        "vmap, in_dims of a dict",
        "vmap(lambda d: d['a'].sum() + d['b'].sum(), in_dims=({'a': 0, 'b': None},))"
        "({'a': x, 'b': y})",
    ),
    ("vmap of vmap", "vmap(vmap(lambda a: a * 2))(x)"),
    ("vmap of a dict of outputs", "vmap(lambda a: {'k': a, 't': (a.sum(), [a * 2])})(x)"),
    ("vmap, a float in a dict", "vmap(lambda a: {'k': a, 'f': 3.0})(x)"),
    (
        "vmap, out_dims over nested outputs",
        "vmap(lambda a: ({'k': a}, a.sum()), out_dims=(1, 0))(x)",
    ),
    ("vmap of grad", "vmap(F.grad(lambda a: (a ** 2).sum()))(x)"),
    ("vmap over an empty dimension", "vmap(lambda a: a * 2)(T.ones(0, 3))"),
    (
        "per-sample gradients",
        "vmap(F.grad(lambda w, xi: ((xi * w).sum() - 1) ** 2), in_dims=(None, 0))(y, x)",
    ),
    ("jvp", "F.jvp(lambda a: a.sin(), (y,), (T.tensor([1.0, 2.0, 3.0]),))"),
    ("jvp of two primals", "F.jvp(lambda a, b: a * b, (y, y * 2), (y, y))"),
    ("jvp, has_aux", "F.jvp(lambda a: (a.sin(), a.cos()), (y,), (y,), has_aux=True)"),
    ("jvp, primals not a tuple", "F.jvp(lambda a: a.sin(), y, y)"),
    ("jvp, tangent of another size", "F.jvp(lambda a: a.sin(), (y,), (T.ones(2),))"),
    ("vjp, cotangents of another structure", "F.vjp(lambda v: (v * 2, v * 3), y)[1](T.ones(3))"),
    ("vjp, a pair of cotangents for one output", "F.vjp(lambda v: v * 2, y)[1]((y, y))"),
    ("vjp, a list for a dict output", "F.vjp(lambda v: {'a': v}, y)[1]([y])"),
    ("jvp, fewer tangents", "F.jvp(lambda a, b: a * b, (y, y), (y,))"),
    ("jvp, a nested tangent", "F.jvp(lambda a: a, (y,), ([y],))"),
    ("grad, argnums empty", "F.grad(lambda v: v.sum(), argnums=())(y)"),
    ("grad, argnums a float", "F.grad(lambda v: v.sum(), argnums=1.5)(y)"),
    ("grad, argnums with a string", "F.grad(lambda v: v.sum(), argnums=(0, 'a'))(y)"),
    ("vmap, out_dims too long", "vmap(lambda v: (v, v), out_dims=(0, 0, 0))(x)"),
    ("vmap, out_dims too short", "vmap(lambda v: (v, v), out_dims=(0,))(x)"),
    ("vmap, out_dims of one for one output", "vmap(lambda v: v, out_dims=(1,))(x)"),
    ("vmap, out_dims pair for one output", "vmap(lambda v: v, out_dims=(0, 1))(x)"),
    ("vmap, out_dims pair for a list", "vmap(lambda v: [v, v], out_dims=(0, 1))(x)"),
    (
        "vmap, nested inputs too long",
        "vmap(lambda d, v: v, in_dims=(None, 0, 0))({'a': (y, [y])}, x)",
    ),
    ("jacfwd", "F.jacfwd(lambda a: a ** 2)(y)"),
    ("jacfwd, two argnums", "F.jacfwd(lambda a, b: a * b, argnums=(0, 1))(y, y * 2)"),
]


def run_mapped(T, expression):
    names = {"T": T, "F": T.func, "vmap": T.func.vmap, "x": T.arange(6.0).reshape(2, 3)}
    names["y"] = T.ones(3)
    try:
        return repr(eval(expression, names))  # noqa: S307
    except Exception as error:  # noqa: BLE001 - the exception is what is compared
        return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize("name, expression", MAPPED_CASES, ids=[name for name, _ in MAPPED_CASES])
def test_vmap_jvp_jacfwd_same_as_pytorch(torch, name, expression):
    assert run_mapped(nbgrad, expression) == run_mapped(torch, expression)


def test_vmap_randomness_same_draws_once():
    before = nbgrad.random.get_rng_state()
    mapped = nbgrad.func.vmap(lambda a: a + nbgrad.rand(3), randomness="same")(nbgrad.zeros(4, 3))
    after_vmap = nbgrad.random.get_rng_state()
    nbgrad.random.set_rng_state(before)
    one_draw = nbgrad.rand(3).numpy()
    np.testing.assert_array_equal(mapped.numpy(), np.tile(one_draw, (4, 1)))
    # the generator stands where one draw left it
    assert after_vmap.tolist() == nbgrad.random.get_rng_state().tolist()


def finite_difference_hessian(f, x, h=1e-5):
    n = x.size
    result = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            result[i, j] = (
                f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)
            ) / (4 * h * h)
    return result


def test_hessian_and_grad_agree_with_finite_differences():
    data = np.array([0.3, -0.7, 1.1])

    def f(v):
        return (v.sin() * v[0] + v.exp() * v[2]).sum()

    def f_numpy(v):
        return float(np.sum(np.sin(v) * v[0] + np.exp(v) * v[2]))

    x = nbgrad.tensor(data)
    hessian = nbgrad.func.hessian(f)(x).numpy()
    np.testing.assert_allclose(
        hessian, finite_difference_hessian(f_numpy, data), rtol=1e-5, atol=1e-6
    )
    gradient = nbgrad.func.grad(f)(x).numpy()
    expected = [(f_numpy(data + h) - f_numpy(data - h)) / 2e-6 for h in np.eye(3) * 1e-6]
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


def test_functional_call_puts_the_parameters_back_when_the_module_raises():
    m = nbgrad.nn.Linear(3, 1)
    weight, bias = m.weight, m.bias
    with pytest.raises(RuntimeError):
        nbgrad.func.functional_call(m, {"weight": nbgrad.zeros(1, 3)}, (nbgrad.zeros(4),))
    assert m.weight is weight and m.bias is bias
    assert [name for name, _ in m.named_parameters()] == ["weight", "bias"]
