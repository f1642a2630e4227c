"""Fake quantization against real PyTorch: results and masks bit for bit (rounding half to even,
float32 arithmetic), the learnable variants' gradients (grad_factor), their second-order
behaviour, the fused observer's in-place updates, and PyTorch's errors."""

import numpy as np
import pytest

import nbgrad

RNG = np.random.default_rng(31)
X = (RNG.standard_normal((3, 5)) * 2).astype(np.float32)
# exact halves of the step 0.25 (0.125 / 0.25 = 0.5, 0.375 / 0.25 = 1.5, ...): ties to even
HALVES = np.array([-0.375, -0.125, 0.125, 0.375, 0.625, 1.875, 2.125], np.float32)


def _both(torch, build, *arrays):
    results = []
    for T in (nbgrad, torch):
        tensors = [T.tensor(a) for a in arrays]
        results.append(build(T, *tensors))
    return results


def _numpy(t):
    return t.detach().numpy()


FORWARDS = {
    "per_tensor": lambda T, x: T.fake_quantize_per_tensor_affine(x, 0.25, 1, -6, 6),
    "per_tensor-negative-scale": lambda T, x: T.fake_quantize_per_tensor_affine(x, -0.1, 0, -8, 7),
    "per_tensor-zero-scale": lambda T, x: T.fake_quantize_per_tensor_affine(x, 0.0, 2, 0, 255),
    "tensor_qparams": lambda T, x: T._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
        x, T.tensor([0.25]), T.tensor([-1.7]), T.tensor([1]), -6, 6
    )[0],
    "tensor_qparams-off": lambda T, x: T._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
        x, T.tensor([0.25]), T.tensor([1]), T.tensor([0]), -6, 6
    )[0],
    "per_channel-int": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([0.25, 0.125, 0.3]), T.tensor([0, 2, -3], dtype=T.int32), 0, -6, 6
    ),
    "per_channel-float": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([0.25, 0.125, 0.3]), T.tensor([0.5, 2.4, -3.5]), 0, -6, 6
    ),
    "learnable_per_tensor": lambda T, x: T._fake_quantize_learnable_per_tensor_affine(
        x, T.tensor([0.25]), T.tensor([2.5]), -6, 6
    ),
    "learnable_per_channel": lambda T, x: T._fake_quantize_learnable_per_channel_affine(
        x, T.tensor([0.25, 0.125, 0.3]), T.tensor([0.5, 2.5, -3.5]), 0, -6, 6, 0.5
    ),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", sorted(FORWARDS))
def test_results_match_pytorch_bit_for_bit(torch, name, dtype):
    for data in (X, np.resize(HALVES, (3, 5))):
        ours, theirs = _both(torch, FORWARDS[name], data.astype(dtype))
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_array_equal(_numpy(ours), _numpy(theirs))


def test_zero_dim_tensors_pass_for_numbers(torch):
    """A 0-dim tensor is taken for the float scale (any dtype) and the int zero point (an
    integer one): the number overload, its node."""
    ours, theirs = _both(
        torch,
        lambda T, x: T.fake_quantize_per_tensor_affine(
            x.requires_grad_(), T.tensor(0.25, dtype=T.float64), 1, -6, 6
        ),
        X,
    )
    names = {type(ours.grad_fn).__name__, type(theirs.grad_fn).__name__}
    assert names == {"FakeQuantizePerTensorAffineCachemaskBackward0"}
    np.testing.assert_array_equal(_numpy(ours), _numpy(theirs))


def test_rounding_is_half_to_even_and_the_mask_marks_unclamped_values():
    x = nbgrad.tensor([0.125, 0.375, -0.125, 1.625, 1.875], requires_grad=True)
    y = nbgrad.fake_quantize_per_tensor_affine(x, 0.25, 0, -7, 7)
    # 0.5 -> 0, 1.5 -> 2, -0.5 -> -0, 6.5 -> 6, 7.5 -> 8 (clamped to 7, masked out)
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 0.5, 0.0, 1.5, 1.75])
    np.testing.assert_array_equal(y.grad_fn._saved_mask.numpy(), [1, 1, 1, 1, 0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1, 1, 0])


def _near_ties(count, seed):
    """Inputs where zero_point + x / scale falls within float32 rounding of a half: PyTorch's
    kernels compute ``zero_point + x * inv_scale`` as one fused multiply-add there, which rounds
    otherwise than a product and a sum do."""
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.05, 0.5, count).astype(np.float32)
    zero = rng.uniform(-3, 3, count).astype(np.float32)
    x = ((rng.integers(-6, 6, count) + 0.5 - np.rint(zero)) * scale).astype(np.float32)
    return x, scale, zero


def test_per_channel_float_zero_point_rounds_as_pytorch_near_ties(torch):
    x, scale, zero = _near_ties(2000, 5)
    for zero_point in (zero, np.rint(zero)):
        ours, theirs = _both(
            torch,
            lambda T, x, s, z: T.fake_quantize_per_channel_affine(x[:, None], s, z, 0, -9, 9),
            x,
            scale,
            zero_point,
        )
        np.testing.assert_array_equal(_numpy(ours), _numpy(theirs))


@pytest.mark.parametrize("which", ["tensor", "channel"])
def test_learnable_element_gradients_match_pytorch_near_ties(torch, which):
    """One element per channel (nothing summed): every gradient bit for bit."""
    x, scale, zero = _near_ties(400, 6)
    zero = np.rint(zero)
    cotangent = np.random.default_rng(7).standard_normal(x.shape).astype(np.float32)
    for i in range(len(x)):
        results = []
        for T in (nbgrad, torch):
            leaves = [T.tensor(a[i : i + 1, None], requires_grad=True) for a in (x,)]
            s, z = T.tensor(scale[i : i + 1], requires_grad=True), T.tensor(zero[i : i + 1])
            z.requires_grad_()
            if which == "tensor":
                y = T._fake_quantize_learnable_per_tensor_affine(leaves[0], s, z, -9, 9, 0.7)
            else:
                y = T._fake_quantize_learnable_per_channel_affine(leaves[0], s, z, 0, -9, 9, 0.7)
            y.backward(T.tensor(cotangent[i : i + 1, None]))
            results.append([leaves[0].grad.numpy(), s.grad.numpy(), z.grad.numpy()])
        for mine, real in zip(*results):
            np.testing.assert_array_equal(mine.reshape(-1), real.reshape(-1))


def _learnable(T, which, grad_factor):
    x = T.tensor(X, requires_grad=True)
    if which == "tensor":
        scale, zero = T.tensor([0.2], requires_grad=True), T.tensor([-1.4], requires_grad=True)
        y = T._fake_quantize_learnable_per_tensor_affine(x, scale, zero, -8, 7, grad_factor)
    else:
        scale = T.tensor([0.2, 0.3, 0.1], requires_grad=True)
        zero = T.tensor([-1.4, 0.5, 2.6], requires_grad=True)
        y = T._fake_quantize_learnable_per_channel_affine(x, scale, zero, 0, -8, 7, grad_factor)
    return x, scale, zero, y


@pytest.mark.parametrize("which", ["tensor", "channel"])
@pytest.mark.parametrize("grad_factor", [1.0, 0.3])
def test_learnable_gradients_match_pytorch(torch, which, grad_factor):
    weights = np.linspace(-1, 2, 15, dtype=np.float32).reshape(3, 5)
    grads = []
    for T in (nbgrad, torch):
        x, scale, zero, y = _learnable(T, which, grad_factor)
        (y * T.tensor(weights)).sum().backward()
        grads.append([x.grad.numpy(), scale.grad.numpy(), zero.grad.numpy()])
    ours, theirs = grads
    # the scale's and zero point's gradients are float32 sums, added in ATen's order
    for mine, real in zip(ours, theirs):
        assert mine.shape == real.shape
        np.testing.assert_array_equal(mine, real)


@pytest.mark.parametrize(
    "shape, axis, transposed",
    [((1000,), None, False), ((70, 64), None, True), ((5, 300), 0, False), ((3, 7, 5), 0, False)],
)
def test_learnable_gradient_sums_match_pytorch_bit_for_bit(torch, shape, axis, transposed):
    """The scale's and zero point's gradients add thousands of float32 terms in at::sum's
    order (cascaded 8-lane vectors), through the input's memory order when it is transposed."""
    rng = np.random.default_rng(11)
    data = (rng.standard_normal(shape) * 3).astype(np.float32)
    cotangent = rng.standard_normal(shape[::-1] if transposed else shape).astype(np.float32)
    grads = []
    for T in (nbgrad, torch):
        x = T.tensor(data, requires_grad=True)
        source = x.t() if transposed else x
        channels = 1 if axis is None else shape[axis]
        scale = T.tensor(np.linspace(0.05, 0.3, channels, dtype=np.float32), requires_grad=True)
        zero = T.tensor(np.linspace(-2.6, 1.4, channels, dtype=np.float32), requires_grad=True)
        if axis is None:
            y = T._fake_quantize_learnable_per_tensor_affine(source, scale, zero, -20, 20, 0.9)
        else:
            y = T._fake_quantize_learnable_per_channel_affine(source, scale, zero, 0, -20, 20)
        y.backward(T.tensor(cotangent))
        grads.append([x.grad.numpy(), scale.grad.numpy(), zero.grad.numpy()])
    for mine, real in zip(*grads):
        np.testing.assert_array_equal(mine, real)


def test_learnable_per_tensor_zero_point_rounds_differently_in_backward(torch):
    """Forward: the zero point rounded half to even (2.5 -> 2); backward: + 0.5, cut toward zero
    (2.5 -> 3, -1.4 -> 0), as ATen does: the scale's gradient shows it."""
    for zero_point in (2.5, -1.4):
        results = []
        for T in (nbgrad, torch):
            scale = T.tensor([0.25], requires_grad=True)
            x = T.tensor([3.0, -0.3, 0.2])
            y = T._fake_quantize_learnable_per_tensor_affine(
                x, scale, T.tensor([zero_point]), -8, 7
            )
            y.sum().backward()
            results.append((y.detach().numpy(), scale.grad.numpy()))
        np.testing.assert_array_equal(results[0][0], results[1][0])
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


@pytest.mark.parametrize("which", ["tensor", "channel"])
def test_learnable_second_order_is_not_implemented_as_in_pytorch(torch, which):
    """Second-order gradcheck is meaningless here (the gradients are piecewise constant in x and
    PyTorch has no derivative for this backward): compare what create_graph gives instead."""
    seen = []
    for T in (nbgrad, torch):
        x, scale, zero, y = _learnable(T, which, 1.0)
        cotangent = T.ones(3, 5, requires_grad=True)
        gx, gs, gz = T.autograd.grad(y, (x, scale, zero), cotangent, create_graph=True)
        node = gx.grad_fn
        assert gs.grad_fn is node and gz.grad_fn is node
        edges = [type(child).__name__ for child, _ in node.next_functions]
        with pytest.raises(RuntimeError) as error:
            T.autograd.grad(gs.sum(), x)
        seen.append((type(node).__name__, edges, str(error.value)))
    assert seen[0] == seen[1]
    assert seen[0][0] == "NotImplemented"
    assert seen[0][1] == ["AccumulateGrad"] * 4  # grad, self, scale, zero_point


def test_cachemask_second_order_is_a_mul_by_the_mask(torch):
    graphs = []
    for T in (nbgrad, torch):
        x = T.tensor(X, requires_grad=True)
        y = T.fake_quantize_per_tensor_affine(x, 0.1, 0, -8, 7)
        cotangent = T.tensor(np.arange(15.0, dtype=np.float32).reshape(3, 5), requires_grad=True)
        (g,) = T.autograd.grad(y, x, cotangent, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), cotangent)
        edges = [None if c is None else type(c).__name__ for c, _ in g.grad_fn.next_functions]
        graphs.append((type(g.grad_fn).__name__, edges, g.detach().numpy(), gg.numpy()))
        # a constant cotangent: the gradient does not require grad
        (plain,) = T.autograd.grad(y.sum(), x, create_graph=True)
        assert not plain.requires_grad
    assert graphs[0][:2] == graphs[1][:2] == ("MulBackward0", ["AccumulateGrad", None])
    np.testing.assert_array_equal(graphs[0][2], graphs[1][2])
    np.testing.assert_array_equal(graphs[0][3], graphs[1][3])


# --- the fused observer ---------------------------------------------------------------------------


def _observer_state(T, n):
    return [
        T.full((n,), float("inf")),
        T.full((n,), float("-inf")),
        T.ones(n),
        T.zeros(n, dtype=T.int32),
    ]


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("qrange", [(0, 255), (-8, 7)])
def test_fused_observer_updates_its_state_as_pytorch(torch, per_row, symmetric, qrange):
    """Five steps (observer and fake quantization switched on and off): the outputs, masks,
    gradients, running min/max, scale and zero point, and their versions (unchanged, the
    kernel writing them in place), all equal to PyTorch's."""
    steps = [(1, 1, 1.0), (1, 1, 3.0), (0, 1, 0.5), (1, 0, 1e-7), (1, 1, 1e-7)]
    histories = []
    for T in (nbgrad, torch):
        state = _observer_state(T, 3 if per_row else 1)
        history = []
        for observer_on, fake_quant_on, size in steps:
            x = T.tensor(X * size, requires_grad=True)
            output, mask = T._fused_moving_avg_obs_fq_helper(
                x,
                T.tensor([observer_on]),
                T.tensor([fake_quant_on]),
                *state,
                0.25,
                *qrange,
                0,
                per_row,
                symmetric,
            )
            output.backward(T.tensor(np.ones((3, 5), np.float32)))
            history.append(
                [output.detach().numpy(), mask.numpy(), x.grad.numpy()]
                + [s.numpy().copy() for s in state]
                + [[s._version for s in state], type(output.grad_fn).__name__]
            )
        histories.append(history)
    for ours, theirs in zip(*histories):
        for mine, real in zip(ours[:-2], theirs[:-2]):
            np.testing.assert_array_equal(mine, real)
        assert ours[-2:] == theirs[-2:]


def test_fused_moving_avg_obs_fake_quant_returns_the_output(torch):
    outputs = []
    for T in (nbgrad, torch):
        state = _observer_state(T, 1)
        x = T.tensor(X, requires_grad=True)
        y = T.fused_moving_avg_obs_fake_quant(
            x, T.tensor([1]), T.tensor([1]), *state, 0.01, 0, 255, 0
        )
        outputs.append((y.detach().numpy(), type(y.grad_fn).__name__, state[2].numpy()))
    np.testing.assert_array_equal(outputs[0][0], outputs[1][0])
    assert outputs[0][1] == outputs[1][1] == "FusedMovingAvgObsFqHelperBackward0"
    np.testing.assert_array_equal(outputs[0][2], outputs[1][2])


# --- errors ---------------------------------------------------------------------------------------


def _state(T):
    return _observer_state(T, 1)


ERRORS = {
    "quant_min-above-quant_max": lambda T, x: T.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 3),
    "zero_point-out-of-range": lambda T, x: T.fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255),
    "integer-input": lambda T, x: T.fake_quantize_per_tensor_affine(x.long(), 0.1, 0, 0, 255),
    # PyTorch's argument parser picks one of two overloads, or lists why neither fits
    "float-zero-point": lambda T, x: T.fake_quantize_per_tensor_affine(x, 0.1, 1.5, 0, 255),
    "bool-zero-point": lambda T, x: T.fake_quantize_per_tensor_affine(x, 0.1, True, 0, 255),
    "tensor-scale-int-zero-point": lambda T, x: T.fake_quantize_per_tensor_affine(
        x, T.tensor([0.1]), 1, 0, 255
    ),
    "float-0-dim-zero-point": lambda T, x: T.fake_quantize_per_tensor_affine(
        x, 0.1, T.tensor(1.0), 0, 255
    ),
    "per_channel-0-dim-input": lambda T, x: T.fake_quantize_per_channel_affine(
        x[0, 0], T.tensor([0.1]), T.zeros(1, dtype=T.int32), 0, -8, 7
    ),
    "tensor-scale-requires-grad": lambda T, x: T.fake_quantize_per_tensor_affine(
        x, T.tensor([0.1], requires_grad=True), T.tensor([0]), 0, 255
    ),
    "tensor-scale-two-elements": lambda T, x: T.fake_quantize_per_tensor_affine(
        x, T.tensor([0.1, 0.2]), T.tensor([0]), 0, 255
    ),
    "per_channel-double-scale": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([0.1, 0.2, 0.3], dtype=T.float64), T.zeros(3, dtype=T.int32), 0, -8, 7
    ),
    "per_channel-long-zero-point": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([0.1, 0.2, 0.3]), T.zeros(3, dtype=T.int64), 0, -8, 7
    ),
    "per_channel-2d-scale": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([[0.1, 0.2, 0.3]]), T.zeros(3, dtype=T.int32), 0, -8, 7
    ),
    "per_channel-sizes": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([0.1, 0.2]), T.zeros(2, dtype=T.int32), 0, -8, 7
    ),
    "per_channel-zero-point-range": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([0.1, 0.2, 0.3]), T.tensor([0, 9, 0], dtype=T.int32), 0, -8, 7
    ),
    "per_channel-axis": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([0.1, 0.2, 0.3]), T.zeros(3, dtype=T.int32), 2, -8, 7
    ),
    "per_channel-scale-requires-grad": lambda T, x: T.fake_quantize_per_channel_affine(
        x, T.tensor([0.1, 0.2, 0.3], requires_grad=True), T.zeros(3, dtype=T.int32), 0, -8, 7
    ),
    "learnable-0-dim-scale": lambda T, x: T._fake_quantize_learnable_per_tensor_affine(
        x, T.tensor(0.1), T.tensor([0.0]), -8, 7
    ),
    "learnable-double-backward-dtype": lambda T, x: (
        T._fake_quantize_learnable_per_tensor_affine(
            x.double().requires_grad_(), T.tensor([0.1]), T.tensor([0.0]), -8, 7
        )
        .sum()
        .backward()
    ),
    "learnable-int-zero-point": lambda T, x: (
        T._fake_quantize_learnable_per_tensor_affine(
            x.requires_grad_(), T.tensor([0.1]), T.tensor([1]), -8, 7
        )
        .sum()
        .backward()
    ),
    "learnable-range-without-zero": lambda T, x: (
        T._fake_quantize_learnable_per_tensor_affine(
            x.requires_grad_(), T.tensor([0.1]), T.tensor([1.0]), 1, 7
        )
        .sum()
        .backward()
    ),
    "learnable_per_channel-range-without-zero": lambda T, x: (
        T._fake_quantize_learnable_per_channel_affine(
            x.requires_grad_(), T.tensor([0.1, 0.2, 0.3]), T.tensor([1.0, 1.0, 1.0]), 0, 1, 7
        )
        .sum()
        .backward()
    ),
    "fused-ch_axis": lambda T, x: T._fused_moving_avg_obs_fq_helper(
        x, T.tensor([1]), T.tensor([1]), *_state(T), 0.01, 0, 255, 2
    ),
    "fused-double-input": lambda T, x: T._fused_moving_avg_obs_fq_helper(
        x.double(), T.tensor([1]), T.tensor([1]), *_state(T), 0.01, 0, 255, 0
    ),
    "fused-per-row-axis": lambda T, x: T._fused_moving_avg_obs_fq_helper(
        x, T.tensor([1]), T.tensor([1]), *_observer_state(T, 5), 0.01, 0, 255, 1, True
    ),
    "fused-quant-range": lambda T, x: T._fused_moving_avg_obs_fq_helper(
        x, T.tensor([1]), T.tensor([1]), *_state(T), 0.01, 255, 0, 0
    ),
    "fused-empty": lambda T, x: T._fused_moving_avg_obs_fq_helper(
        x[:0], T.tensor([1]), T.tensor([1]), *_state(T), 0.01, 0, 255, 0
    ),
    "fused-running-min-requires-grad": lambda T, x: T._fused_moving_avg_obs_fq_helper(
        x,
        T.tensor([1]),
        T.tensor([1]),
        T.tensor([0.0], requires_grad=True),
        *_state(T)[1:],
        0.01,
        0,
        255,
        0,
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(torch, name):
    raised = []
    for T in (nbgrad, torch):
        with pytest.raises(Exception) as error:
            ERRORS[name](T, T.tensor(X))
        raised.append((type(error.value).__name__, str(error.value)))
    assert raised[0] == raised[1]
