"""Custom autograd.Function: forward/backward, ctx, setup_context, and PyTorch's errors."""

import numpy as np
import pytest

import nbgrad


def make_relu(T):
    class MyReLU(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * (x > 0).to(grad_output.dtype)

    return MyReLU


def test_custom_function_is_a_node_named_after_the_class(torch):
    for T in (nbgrad, torch):
        relu = make_relu(T)
        x = T.tensor([-1.0, 2.0], requires_grad=True)
        y = relu.apply(x)
        assert type(y.grad_fn).__name__ == "MyReLUBackward"
        assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]
        assert y.grad_fn.needs_input_grad == (True,)
        (y * 3).sum().backward()
        assert x.grad.tolist() == [0.0, 3.0]


def test_custom_function_passes_gradcheck():
    relu = make_relu(nbgrad)
    x = nbgrad.tensor([-1.5, 0.5, 2.0], dtype=nbgrad.float64, requires_grad=True)
    assert nbgrad.autograd.gradcheck(relu.apply, (x,))


def test_setup_context_style_and_non_tensor_arguments():
    class Scale(nbgrad.autograd.Function):
        @staticmethod
        def forward(x, factor):
            return x * factor

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.factor = inputs[1]

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor, None

    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    y = Scale.apply(x, 5.0)
    assert len(y.grad_fn.next_functions) == 1
    y.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


def test_wrong_number_of_gradients_is_pytorchs_error(torch):
    for T in (nbgrad, torch):

        class F(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g, g

        with pytest.raises(RuntimeError) as error:
            F.apply(T.ones(3, requires_grad=True)).sum().backward()
        assert str(error.value) == (
            "function FBackward returned an incorrect number of gradients (expected 1, got 2)"
        )


def test_wrong_gradient_shape_is_pytorchs_error(torch):
    for T in (nbgrad, torch):

        class G(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g, ones=T.ones):
                return ones(5)

        with pytest.raises(RuntimeError) as error:
            G.apply(T.ones(3, requires_grad=True)).sum().backward()
        assert str(error.value) == (
            "Function GBackward returned an invalid gradient at index 0 - got [5] but expected "
            "shape compatible with [3]"
        )


def test_multiple_outputs_and_unused_output_gradients_materialize_as_zeros():
    class SplitHalves(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:2] * 1, x[2:] * 1

        @staticmethod
        def backward(ctx, g_first, g_second):
            return nbgrad.cat([g_first, g_second])

    x = nbgrad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    first, second = SplitHalves.apply(x)
    assert first.grad_fn is second.grad_fn and second.output_nr == 1
    (first * 10).sum().backward()
    assert x.grad.tolist() == [10.0, 10.0, 0.0, 0.0]


def test_mark_dirty_and_non_differentiable():
    class AddOneInPlace(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class ArgSort(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            order = nbgrad.tensor(np.argsort(x.detach().numpy()).astype(np.float64))
            ctx.mark_non_differentiable(order)
            return x * 1, order

        @staticmethod
        def backward(ctx, g, g_order):
            return g

    leaf = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    h = leaf.clone()
    out = AddOneInPlace.apply(h)
    # add_ bumps the version once and mark_dirty once more, as in PyTorch
    assert out is h and h._version == 2 and type(h.grad_fn).__name__ == "AddOneInPlaceBackward"
    values, order = ArgSort.apply(leaf)
    assert values.requires_grad and not order.requires_grad


def test_saved_tensors_are_freed_after_backward():
    relu = make_relu(nbgrad)
    x = nbgrad.tensor([1.0], requires_grad=True)
    y = relu.apply(x)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.grad_fn.saved_tensors  # noqa: B018


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")  # as PyTorch
def test_once_differentiable_backward_runs_without_grad():
    seen = []

    class Square(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @nbgrad.autograd.once_differentiable
        def backward(ctx, g):
            seen.append(nbgrad.is_grad_enabled())
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = nbgrad.tensor(3.0, requires_grad=True)
    Square.apply(x).backward(create_graph=True)
    assert x.grad.item() == 6.0 and seen == [False]


def test_double_backward_through_a_custom_function():
    class Cube(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g

    x = nbgrad.tensor(2.0, requires_grad=True)
    (g,) = nbgrad.autograd.grad(Cube.apply(x), x, create_graph=True)
    (h,) = nbgrad.autograd.grad(g, x)
    assert g.item() == 12.0 and h.item() == 12.0


def make_sinh(T):
    """The Sinh of PyTorch's "Double Backward with Custom Functions" tutorial: it saves two of
    its own outputs (1 and 2), so its double backward must route gradients to those outputs."""

    class Sinh(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx = T.exp(x)
            expnegx = T.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, grad_out_exp, grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            grad_input += grad_out_exp * expx
            grad_input -= grad_out_negexp * expnegx
            return grad_input

    return Sinh


def test_saved_outputs_keep_their_output_nr_for_double_backward(torch):
    results = {}
    for T in (nbgrad, torch):
        sinh = make_sinh(T)
        x = T.tensor([0.5, -1.0], dtype=T.double, requires_grad=True)
        y = sinh.apply(x)[0]
        saved = y.grad_fn.saved_tensors
        (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        assert [t.output_nr for t in saved] == [1, 2]
        assert all(t.grad_fn is y.grad_fn for t in saved)
        assert T.autograd.gradgradcheck(lambda x, sinh=sinh: sinh.apply(x)[0], x)
        results[T] = (g.detach().numpy(), gg.numpy())
    np.testing.assert_allclose(results[nbgrad][1], np.sinh([0.5, -1.0]))
    for mine, theirs in zip(results[nbgrad], results[torch]):
        np.testing.assert_allclose(mine, theirs)


def test_modified_saved_output_names_its_output_nr(torch):
    messages = []
    for T in (nbgrad, torch):
        x = T.tensor([0.5, -1.0], dtype=T.double, requires_grad=True)
        outputs = make_sinh(T).apply(x)
        outputs[2].mul_(2)
        with pytest.raises(RuntimeError) as info:
            outputs[0].sum().backward()
        messages.append(str(info.value))
    assert "which is output 2 of Sinh," in messages[1]
    assert messages[0] == messages[1]
