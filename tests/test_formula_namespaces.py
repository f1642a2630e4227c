"""The two vocabularies formulas are compiled against (nbgrad/ops/formula_math.py): NumPy's, for
a plain backward, and nbgrad's differentiable Tensors', for create_graph. A formula that finds a
name in one must find it in the other, and both must compute the same thing."""

import ast
import builtins

import numpy as np

import nbgrad
from nbgrad.ops import formula_math
from nbgrad.ops.derivatives import BACKWARD_FUNCTIONS, OPS


def test_both_namespaces_have_the_same_names():
    arrays = set(formula_math.ARRAY_NAMESPACE)
    tensors = set(formula_math.tensor_namespace())
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
    tensors = formula_math.tensor_namespace()
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
