"""The two vocabularies formulas are compiled against: NumPy's (nbgrad/ops/formula_math.py), for
a plain backward, and nbgrad's differentiable Tensors' (nbgrad/ops/formula_tensor.py and the
``NAME_tensor`` functions of the other formula modules), for create_graph. A formula that finds a
name in one must find it in the other, and both must compute the same thing. Every Tensor version
is a function a reader can import and test alone (docs/design.md, "One way to do each thing")."""

import ast
import builtins
import functools
import importlib
import types

import numpy as np

import nbgrad
from nbgrad.ops import formula_math, formula_tensor, storage_geometry
from nbgrad.ops.derivatives import BACKWARD_FUNCTIONS, OPS


def test_both_namespaces_have_the_same_names():
    arrays = set(formula_math.ARRAY_NAMESPACE)
    tensors = set(formula_tensor.tensor_namespace())
    assert sorted(arrays - tensors) == [], "names with a NumPy version only"
    assert sorted(tensors - arrays) == [], "names with a Tensor version only"


def test_every_function_a_formula_calls_is_in_both():
    known = set(formula_math.ARRAY_NAMESPACE) | set(dir(builtins))
    for spec in OPS.values():
        for text in spec.grads.values():
            for node in ast.walk(ast.parse(text, mode="eval")):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    assert node.func.id in known, f"{spec.node}: {node.func.id!r} in {text!r}"


def test_a_backward_function_computes_the_same_on_arrays_and_tensors():
    rng = np.random.default_rng(0)
    grad_output, values = rng.standard_normal((2, 3, 4))
    tensors = formula_tensor.tensor_namespace()
    arguments = {
        "sigmoid_backward": (grad_output, 1 / (1 + np.exp(-values))),
        "tanh_backward": (grad_output, np.tanh(values)),
        "threshold_backward": (grad_output, values, 0.1),
        "softmax_backward_data": (
            grad_output,
            np.exp(values) / np.exp(values).sum(1, keepdims=True),
            1,
        ),
    }
    assert set(arguments) <= set(BACKWARD_FUNCTIONS)
    for name, args in arguments.items():
        on_arrays = formula_math.ARRAY_NAMESPACE[name](*args)
        as_tensors = [
            nbgrad.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args
        ]
        on_tensors = tensors[name](*as_tensors)
        np.testing.assert_allclose(on_tensors.detach().numpy(), on_arrays, rtol=1e-15, err_msg=name)
        assert type(on_tensors.grad_fn).__name__ == OPS[name].node


# --- every Tensor version can be imported and read alone ----------------------------------------

# Where nbgrad's public functions live, for the entries that are one (``"exp": nbgrad.exp``).
PUBLIC_MODULES = (nbgrad, nbgrad.special, nbgrad.linalg, nbgrad.nn.functional)


def _is_public_function(value):
    return any(
        getattr(module, getattr(value, "__name__", ""), None) is value for module in PUBLIC_MODULES
    )


def _imported_by_name(function):
    """The object found by importing ``function.__module__`` and reading its qualified name."""
    found = importlib.import_module(function.__module__)
    for part in function.__qualname__.split("."):
        found = getattr(found, part)
    return found


def _source_lines(function):
    return {
        line
        for position in function.__code__.co_positions()
        for line in position[:2]
        if line is not None
    }


def _why_not_readable(name, value):
    """None if the Tensor namespace's entry ``name`` is a module-level function (or a partial of
    one), a public nbgrad function, or a lambda written on one line; else what it is instead."""
    if _is_public_function(value):
        return None
    function = value.func if isinstance(value, functools.partial) else value
    if not isinstance(function, types.FunctionType):
        return f"{name}: {type(function).__name__} is not a function"
    if function.__name__ == "<lambda>":
        lines = _source_lines(function)
        return None if len(lines) == 1 else f"{name}: a lambda over lines {sorted(lines)}"
    if "<locals>" in function.__qualname__:
        return f"{name}: {function.__qualname__} is a closure"
    if _imported_by_name(function) is not function:
        return f"{name}: {function.__module__}.{function.__qualname__} is another object"
    return None


def test_every_tensor_version_is_a_module_level_function_or_a_one_line_lambda():
    problems = [
        _why_not_readable(name, value) for name, value in formula_tensor.tensor_namespace().items()
    ]
    assert [p for p in problems if p] == []


def test_the_checks_refuse_a_closure_and_a_long_lambda():
    def closure(grad):
        return grad

    long_lambda = lambda grad: (  # noqa: E731 - the case the check must refuse
        grad
    )
    assert "closure" in _why_not_readable("x", closure)
    assert "lambda over lines" in _why_not_readable("x", long_lambda)
    assert _why_not_readable("x", lambda grad: grad) is None
    assert _why_not_readable("x", nbgrad.exp) is None


def test_the_module_level_tensor_versions_are_most_of_the_namespace():
    """The module-level functions are the bulk: a closure builder returning lambdas would not
    pass as "readable" by sneaking in as one-liners everywhere."""
    values = formula_tensor.tensor_namespace().values()
    lambdas = [v for v in values if getattr(v, "__name__", "") == "<lambda>"]
    assert len(lambdas) < len(values) // 4


def test_a_tensor_version_imported_alone_differentiates_twice():
    from nbgrad.ops.formula_tensor import clamp_backward

    x = nbgrad.tensor([-2.0, 0.5, 1.5, 3.0], requires_grad=True)
    grad = nbgrad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    # d/dx clamp(x, -1, 2) is 1 inside [-1, 2] and 0 outside: the gradient passes where inside
    out = clamp_backward(grad * x, x, -1.0, 2.0)
    np.testing.assert_array_equal(out.detach().numpy(), [0.0, 1.0, 4.5, 0.0])
    # out = grad * x where inside: d(sum out)/dx = grad there, 0 elsewhere
    (dx,) = nbgrad.autograd.grad(out.sum(), x)
    np.testing.assert_array_equal(dx.numpy(), [0.0, 2.0, 3.0, 0.0])


def test_a_hoisted_tensor_version_is_importable_from_its_module():
    from nbgrad.ops.formula_more import reverse_cumsum_tensor
    from nbgrad.ops.special_kernels import mvlgamma_backward_tensor

    grad = nbgrad.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(reverse_cumsum_tensor(grad, 0).numpy(), [6.0, 5.0, 3.0])
    # d/dx log Gamma_2(x) = digamma(x) + digamma(x - 1/2); digamma(1) = -gamma (Euler's),
    # digamma(1/2) = -gamma - 2 log 2
    euler = 0.5772156649015329
    x = nbgrad.tensor([1.0], dtype=nbgrad.float64)
    out = mvlgamma_backward_tensor(nbgrad.tensor([1.0], dtype=nbgrad.float64), x, 2)
    np.testing.assert_allclose(out.numpy(), [-2 * euler - 2 * np.log(2)], rtol=1e-12)


def test_storage_geometry_positions_by_hand():
    # a 2x3 view with strides (1, 2) from offset 1: positions 1 + i + 2 j
    positions = storage_geometry.strided_positions((2, 3), (1, 2), 1)
    np.testing.assert_array_equal(positions, [[1, 3, 5], [2, 4, 6]])
    assert storage_geometry.storage_size_of(((2, 3), (1, 2), 1)) == 7
    # a row of a 4x5 float64 array, in the storage starting at the array's first element
    array = np.zeros((4, 5))
    start = storage_geometry.lowest_address(array)
    assert storage_geometry.geometry_in(array[2], start) == ((5,), (1,), 10)
