"""Differentiating a gradient through convolution, layer norm and batch norm (a gradient
penalty, ``autograd.grad(..., create_graph=True)``) records PyTorch's one node per backward call:
ConvolutionBackwardBackward0, NativeLayerNormBackwardBackward0, NativeBatchNormBackwardBackward0,
with PyTorch 2.13's next_functions, ``_saved_*`` values, gradients of gradients (on the plain
path and under create_graph) and third derivatives. nbgrad's own gradcheck and gradgradcheck
check the first and second derivatives against finite differences."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def _running(T, values):
    return T.tensor(np.asarray(values, dtype=np.float64))


# name -> (the layer, called with the tensors; the tensors' shapes; which of them need a grad)
CASES = {
    "conv2d": (
        lambda T, x, w, b: T.nn.functional.conv2d(x, w, b),
        [(1, 2, 5, 5), (3, 2, 3, 3), (3,)],
        (0, 1, 2),
    ),
    "conv2d-geometry": (
        lambda T, x, w, b: T.nn.functional.conv2d(
            x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2
        ),
        [(2, 4, 6, 7), (4, 2, 3, 2), (4,)],
        (0, 1, 2),
    ),
    "conv2d-no-bias": (
        lambda T, x, w: T.nn.functional.conv2d(x, w, padding=2),
        [(2, 1, 4, 4), (2, 1, 3, 3)],
        (0, 1),
    ),
    "conv2d-weight-only": (
        lambda T, x, w, b: T.nn.functional.conv2d(x, w, b),
        [(1, 2, 4, 4), (2, 2, 2, 2), (2,)],
        (1,),
    ),
    "conv2d-input-only": (
        lambda T, x, w: T.nn.functional.conv2d(x, w, stride=2),
        [(1, 2, 5, 5), (2, 2, 3, 3)],
        (0,),
    ),
    "conv1d": (
        lambda T, x, w, b: T.nn.functional.conv1d(x, w, b, stride=2, padding=2, dilation=2),
        [(2, 2, 9), (3, 2, 3), (3,)],
        (0, 1, 2),
    ),
    "conv1d-groups": (
        lambda T, x, w: T.nn.functional.conv1d(x, w, groups=3),
        [(1, 3, 6), (6, 1, 2)],
        (0, 1),
    ),
    "conv3d": (
        lambda T, x, w, b: T.nn.functional.conv3d(x, w, b, padding=1, groups=2, stride=(1, 2, 1)),
        [(1, 2, 4, 4, 3), (4, 1, 2, 2, 2), (4,)],
        (0, 1, 2),
    ),
    "conv_transpose1d": (
        lambda T, x, w: T.nn.functional.conv_transpose1d(x, w, stride=2),
        [(1, 2, 4), (2, 3, 3)],
        (0, 1),
    ),
    "conv_transpose2d": (
        lambda T, x, w, b: T.nn.functional.conv_transpose2d(
            x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=1
        ),
        [(1, 4, 3, 3), (4, 1, 3, 3), (2,)],
        (0, 1, 2),
    ),
    "conv_transpose3d": (
        lambda T, x, w, b: T.nn.functional.conv_transpose3d(x, w, b, stride=2, padding=1),
        [(1, 2, 3, 3, 2), (2, 2, 2, 2, 2), (2,)],
        (0, 1, 2),
    ),
    "layer_norm": (
        lambda T, x, w, b: T.nn.functional.layer_norm(x, (4,), w, b),
        [(2, 3, 4), (4,), (4,)],
        (0, 1, 2),
    ),
    "layer_norm-2d-shape": (
        lambda T, x, w, b: T.nn.functional.layer_norm(x, (3, 4), w, b, eps=1e-3),
        [(2, 3, 4), (3, 4), (3, 4)],
        (0, 1),
    ),
    "layer_norm-no-affine": (lambda T, x: T.nn.functional.layer_norm(x, (5,)), [(3, 5)], (0,)),
    "layer_norm-weight-only": (
        lambda T, x, w: T.nn.functional.layer_norm(x, (4,), w),
        [(2, 4), (4,)],
        (0, 1),
    ),
    "batch_norm-train": (
        lambda T, x, w, b: T.nn.functional.batch_norm(x, None, None, w, b, training=True),
        [(4, 3, 2), (3,), (3,)],
        (0, 1, 2),
    ),
    "batch_norm-train-running": (
        lambda T, x, w, b: T.nn.functional.batch_norm(
            x,
            _running(T, [0.0, 0.5, -1]),
            _running(T, [1.0, 2, 0.5]),
            w,
            b,
            training=True,
            eps=1e-3,
        ),
        [(3, 3, 2, 2), (3,), (3,)],
        (0, 1, 2),
    ),
    "batch_norm-eval": (
        lambda T, x, w, b: T.nn.functional.batch_norm(
            x, _running(T, [0.1, 0.2, -0.3]), _running(T, [1.5, 0.5, 2.0]), w, b, training=False
        ),
        [(4, 3, 2), (3,), (3,)],
        (0, 1, 2),
    ),
    "batch_norm-eval-no-affine": (
        lambda T, x: T.nn.functional.batch_norm(
            x, _running(T, [0.1, 0.2]), _running(T, [1.5, 0.5]), training=False
        ),
        [(3, 2, 2)],
        (0,),
    ),
    "batch_norm-no-affine": (
        lambda T, x: T.nn.functional.batch_norm(x, None, None, training=True),
        [(5, 2)],
        (0,),
    ),
    "batch_norm-module": (
        lambda T, x, w, b: T.nn.functional.batch_norm(
            x, None, None, w, b, training=True, momentum=0.3
        ),
        [(2, 2, 3, 3), (2,), (2,)],
        (1, 2),
    ),
    # instance norm is batch norm over the input seen as (1, N * C, ...), in PyTorch and here
    # (with the input alone requiring grad: the path to an instance norm's weight records other
    # nodes than PyTorch's already in the forward graph)
    "instance_norm": (
        lambda T, x, w, b: T.nn.functional.instance_norm(x, weight=w, bias=b),
        [(2, 3, 4), (3,), (3,)],
        (0,),
    ),
    # 3-d average pooling: linear, its backward an op of its own with an edge to the input
    "avg_pool3d": (
        lambda T, x: T.nn.functional.avg_pool3d(x, 2, padding=1, count_include_pad=False),
        [(1, 2, 4, 3, 4)],
        (0,),
    ),
    "avg_pool3d-stride-divisor": (
        lambda T, x: T.nn.functional.avg_pool3d(
            x, (2, 1, 2), stride=(1, 2, 1), ceil_mode=True, divisor_override=3
        ),
        [(2, 3, 3, 4)],
        (0,),
    ),
    "adaptive_avg_pool3d": (
        lambda T, x: T.nn.functional.adaptive_avg_pool3d(x, (2, 3, 1)),
        [(1, 2, 4, 5, 3)],
        (0,),
    ),
    # and its 2-d twin, which has the same edge to the input
    "avg_pool2d": (
        lambda T, x: T.nn.functional.avg_pool2d(x, 3, stride=2, padding=1),
        [(2, 1, 5, 4)],
        (0,),
    ),
}

NODE_NAMES = {
    "conv": "ConvolutionBackwardBackward0",
    "layer_norm": "NativeLayerNormBackwardBackward0",
    "batch_norm": "NativeBatchNormBackwardBackward0",
    "avg_pool2d": "AvgPool2DBackwardBackward0",
    "avg_pool3d": "AvgPool3DBackwardBackward0",
    "adaptive_avg_pool3d": "AdaptiveAvgPool3DBackwardBackward0",
}


def _expected_node(name):
    layer = name.split("-")[0]
    if layer.startswith("conv"):
        return NODE_NAMES["conv"]
    return NODE_NAMES[layer]


def _leaves(T, name):
    _, shapes, wanted = CASES[name]
    arrays = _arrays(*shapes)
    return [T.tensor(a, requires_grad=i in wanted) for i, a in enumerate(arrays)], wanted


def _first_grads(T, name, create_graph=True):
    layer = CASES[name][0]
    leaves, wanted = _leaves(T, name)
    out = layer(T, *leaves)
    # a cube, so that the first gradient depends on the output (and so on the inputs)
    upstream = T.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
    loss = (out * out * out * upstream).sum()
    grads = T.autograd.grad(loss, [leaves[i] for i in wanted], create_graph=create_graph)
    return leaves, wanted, grads


def _value(value):
    if hasattr(value, "detach"):
        return ("tensor", tuple(value.shape), np.asarray(value.detach()).round(10).tolist())
    return value


def describe(node):
    """The node's name, saved values and next functions (with their inputs' numbers)."""
    saved = {a: _value(getattr(node, a)) for a in sorted(dir(node)) if a.startswith("_saved_")}
    children = [
        None if child is None else (type(child).__name__, number)
        for child, number in node.next_functions
    ]
    return node.name().split("::")[-1], saved, children


def _second_order(T, name, create_graph):
    leaves, wanted, grads = _first_grads(T, name)
    penalty = sum((g * g * g).sum() for g in grads)
    second = T.autograd.grad(
        penalty, [leaves[i] for i in wanted], create_graph=create_graph, allow_unused=True
    )
    return leaves, wanted, grads, second


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_gradient_records_pytorchs_one_node(name):
    ours = _first_grads(nbgrad, name)
    theirs = _first_grads(torch, name)
    for mine, real in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(
            mine.detach().numpy(), real.detach().numpy(), rtol=1e-10, atol=1e-12
        )
        assert describe(mine.grad_fn) == describe(real.grad_fn)
        for (child, _), (real_child, _) in zip(
            mine.grad_fn.next_functions, real.grad_fn.next_functions
        ):
            if real_child is not None:  # one level further down
                assert describe(child) == describe(real_child)
    if name == "instance_norm":  # batch norm's node, beneath the views back to (N, C, ...)
        assert theirs[2][0].grad_fn.next_functions[0][0].name() == NODE_NAMES["batch_norm"]
        return
    assert theirs[2][0].grad_fn.name() == _expected_node(name)
    # input, weight and bias gradients are three outputs of one node, as in PyTorch
    assert len({id(g.grad_fn) for g in ours[2]}) == 1 == len({id(g.grad_fn) for g in theirs[2]})
    assert [g.output_nr for g in ours[2]] == [g.output_nr for g in theirs[2]]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("create_graph", [False, True], ids=["plain", "create_graph"])
def test_gradients_of_the_gradients_match_pytorch(name, create_graph):
    ours = _second_order(nbgrad, name, create_graph)
    theirs = _second_order(torch, name, create_graph)
    for mine, real in zip(ours[3], theirs[3]):
        assert (mine is None) == (real is None)
        if real is not None:
            np.testing.assert_allclose(
                mine.detach().numpy(), real.detach().numpy(), rtol=1e-9, atol=1e-10
            )


def _third_order(T, name):
    leaves, wanted, _, second = _second_order(T, name, True)
    terms = [(g * g).sum() for g in second if g is not None and g.requires_grad]
    third = T.autograd.grad(sum(terms), [leaves[i] for i in wanted], allow_unused=True)
    return [None if g is None else g.numpy() for g in third]


# PyTorch 2.13 cannot differentiate a transposed convolution with output_padding three times (its
# double backward runs a plain convolution with that output_padding); nbgrad can (below).
NO_THIRD_ORDER_IN_PYTORCH = ("conv_transpose2d",)


@pytest.mark.parametrize("name", sorted(set(CASES) - set(NO_THIRD_ORDER_IN_PYTORCH)))
def test_third_derivatives_match_pytorch(name):
    """Differentiating the double backward again: for the norms, PyTorch's formulas hold the
    saved mean and 1/std fixed (its third derivative is not the exact one), and so do ours."""
    results = [_third_order(T, name) for T in (nbgrad, torch)]
    for mine, real in zip(*results):
        assert (mine is None) == (real is None)
        if real is not None:
            np.testing.assert_allclose(mine, real, rtol=1e-8, atol=1e-9)


def test_a_transposed_convolution_with_output_padding_has_an_exact_third_derivative():
    """Where PyTorch raises, nbgrad's third derivative agrees with finite differences of its
    (checked) second derivative."""
    with pytest.raises(RuntimeError, match="output_padding is not supported for non-transposed"):
        _third_order(torch, "conv_transpose2d")
    layer = CASES["conv_transpose2d"][0]

    def second_derivatives(x, w, b):
        out = layer(nbgrad, x, w, b)
        grads = nbgrad.autograd.grad((out * out * out).sum(), (x, w, b), create_graph=True)
        penalty = sum((g * g * g).sum() for g in grads)
        return nbgrad.autograd.grad(penalty, (x, w, b), create_graph=True)

    leaves, _ = _leaves(nbgrad, "conv_transpose2d")
    assert nbgrad.autograd.gradcheck(second_derivatives, leaves)


def test_pytorchs_third_order_norm_formula_is_not_the_exact_one():
    """Why the test above compares with PyTorch and not with finite differences: PyTorch's
    gradgradcheck of layer norm's gradient fails, and ours fails the same way."""
    for T in (nbgrad, torch):
        x = T.tensor(_arrays((2, 5))[0], requires_grad=True)
        w = T.tensor(_arrays((5,), seed=1)[0])

        def first(x, T=T, w=w):
            out = T.nn.functional.layer_norm(x, (5,), w)
            return T.autograd.grad((out * out * out).sum(), x, create_graph=True)[0]

        assert not T.autograd.gradgradcheck(first, (x,), raise_exception=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_and_second_derivatives_agree_with_finite_differences(name):
    layer = CASES[name][0]
    leaves, _ = _leaves(nbgrad, name)

    def cubed(*tensors):
        out = layer(nbgrad, *tensors)
        return out * out * out

    assert nbgrad.autograd.gradcheck(cubed, leaves)
    assert nbgrad.autograd.gradgradcheck(cubed, leaves)


def test_gradients_of_the_double_backward_node_agree_with_finite_differences():
    """gradcheck of the gradient itself: every input of ConvolutionBackwardBackward0 (the
    incoming gradient, input, weight) differentiated by finite differences."""
    x, w = (nbgrad.tensor(a, requires_grad=True) for a in _arrays((1, 2, 4, 4), (2, 2, 2, 2)))
    g_out = nbgrad.tensor(_arrays((1, 2, 2, 2), seed=3)[0], requires_grad=True)

    def gradients(x, w, g_out):
        out = nbgrad.nn.functional.conv2d(x, w, stride=2)
        grads = nbgrad.autograd.grad(out, (x, w), g_out, create_graph=True)
        assert grads[0].grad_fn.name() == "ConvolutionBackwardBackward0"
        return tuple(g * g for g in grads)

    assert nbgrad.autograd.gradcheck(gradients, (x, w, g_out))


def test_the_example_of_the_issue():
    seen = []
    for T in (nbgrad, torch):
        F = T.nn.functional
        x, w = (T.tensor(a, requires_grad=True) for a in _arrays((1, 2, 5, 5), (3, 2, 3, 3)))
        (g,) = T.autograd.grad(F.conv2d(x, w).pow(2).sum(), x, create_graph=True)
        seen.append((g.grad_fn.name(), [type(n).__name__ for n, _ in g.grad_fn.next_functions]))
    assert (
        seen[0]
        == seen[1]
        == ("ConvolutionBackwardBackward0", ["MulBackward0", "AccumulateGrad", "AccumulateGrad"])
    )


def test_a_layer_norm_bias_has_an_edge_but_no_second_derivative():
    """native_layer_norm_backward's bias edge gets no gradient (PyTorch's formula is Tensor()):
    autograd.grad reports it unused, in PyTorch's words."""
    messages = []
    for T in (nbgrad, torch):
        x, w, b = (T.tensor(a, requires_grad=True) for a in _arrays((2, 4), (4,), (4,)))
        out = T.nn.functional.layer_norm(x, (4,), w, b)
        # a loss linear in the output: the incoming gradient does not depend on the bias
        (g,) = T.autograd.grad((out * T.arange(8.0).reshape(2, 4)).sum(), x, create_graph=True)
        assert type(g.grad_fn.next_functions[5][0]).__name__ == "AccumulateGrad"
        assert T.autograd.grad(g.sum(), b, allow_unused=True, retain_graph=True) == (None,)
        with pytest.raises(RuntimeError) as error:
            T.autograd.grad(g.sum(), b)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_a_plain_backward_through_the_gradient_fills_grad():
    """``backward()`` of a gradient penalty (no create_graph the second time) fills .grad."""
    grads = []
    for T in (nbgrad, torch):
        x, w, b = (T.tensor(a, requires_grad=True) for a in _arrays((2, 3, 4), (3, 3, 2), (3,)))
        out = T.nn.functional.conv1d(x, w, b, padding=1)
        out = T.nn.functional.batch_norm(out, None, None, training=True)
        out = T.nn.functional.layer_norm(out, (5,))
        (g,) = T.autograd.grad((out * out * out).sum(), x, create_graph=True)
        (g * g).sum().backward()
        grads.append([t.grad.numpy() for t in (x, w, b)])
    for mine, real in zip(*grads):
        np.testing.assert_allclose(mine, real, rtol=1e-9, atol=1e-10)


def test_modules_under_a_gradient_penalty_match_pytorch():
    """nn.Conv2d, nn.BatchNorm2d (training, running statistics) and nn.LayerNorm, as a WGAN-GP
    critic uses them: the same penalty gradients on every parameter."""
    results = []
    for T in (nbgrad, torch):
        T.manual_seed(0)
        model = T.nn.Sequential(
            T.nn.Conv2d(2, 3, 3, padding=1),
            T.nn.BatchNorm2d(3),
            T.nn.Tanh(),
            T.nn.LayerNorm([3, 4, 4]),
            T.nn.Flatten(),
        ).double()
        for k, p in enumerate(model.parameters()):
            with T.no_grad():
                p.copy_(T.tensor(_arrays(tuple(p.shape), seed=k)[0]))
        x = T.tensor(_arrays((2, 2, 4, 4), seed=9)[0], requires_grad=True)
        (g,) = T.autograd.grad(model(x).sum(), x, create_graph=True)
        ((g.flatten(1).norm(dim=1) - 1) ** 2).mean().backward()
        # (the last LayerNorm's bias has no gradient here: the penalty does not depend on it)
        results.append([None if p.grad is None else p.grad.numpy() for p in model.parameters()])
        results[-1].append(model[1].running_var.numpy())
    assert [g is None for g in results[0]] == [g is None for g in results[1]]
    assert results[1][-2] is None
    for mine, real in zip(*results):
        if real is not None:
            np.testing.assert_allclose(mine, real, rtol=1e-8, atol=1e-10)


def test_the_widget_reads_the_bias_gradient_as_a_sum():
    """The layers' formulas call their backward function for every input; the bias's (output 2)
    still reads as the sum it is, the others are described in words."""
    from nbgrad.ops.derivatives import OPS
    from nbgrad.trace.readable import formula_tree, to_text

    constants = {"normalized_shape": (4,)}
    for entry, plain in (
        ("convolution", "channel_sum(grad)"),
        ("convolution_transposed3d", "channel_sum(grad)"),
        ("batch_norm", "channel_sum(grad)"),
        ("layer_norm", "sum_to(grad, normalized_shape)"),
    ):
        spec = OPS[entry]
        bias = formula_tree(spec.grads["bias"], spec.node, constants)
        assert to_text(bias) == to_text(formula_tree(plain, spec.node, constants))
        described = to_text(formula_tree(spec.grads["input"], spec.node, constants))
        assert described.startswith(f"computed by {spec.node} from ∂L/∂out, input")
