"""The backward functions of convolution, layer norm, batch norm and 3-d average pooling, as ops
of their own.

PyTorch computes the three gradients of each of these layers (input, weight, bias) with one
function, itself an op with three differentiable outputs: ``convolution_backward``,
``native_layer_norm_backward``, ``native_batch_norm_backward``. Differentiating a gradient
(``create_graph=True``, a gradient penalty) therefore records one node per backward call,
``ConvolutionBackwardBackward0`` and its twins, whose formulas are ATen's double backwards. The
table declares those ops (derivatives.py, "the layers' backward functions, as ops"); this module
has what their formulas call, for NumPy arrays (``ARRAY_FUNCTIONS``) and for differentiable
Tensors (``tensor_namespace()``).

Each first-order formula asks for one output of the backward function
(``convolution_backward_output(k, ...)``). On arrays (a plain backward) it computes that output
alone. On Tensors the node's formulas share one run of the op (``SharedCall``), so that the
three gradients are outputs of one node, as in PyTorch.
"""

import numpy as np

from nbgrad.ops import nn_kernels
from nbgrad.ops.grid_sample_kernels import SharedCall


def _requires_grad(tensor):
    return tensor is not None and bool(getattr(tensor, "requires_grad", False))


def _readers(which, input, weight):  # noqa: A002
    """How many formulas of the layer's node will read this call's outputs. Under create_graph
    the node runs its formulas in the order of its inputs' names (bias, input, weight: PyTorch's
    generated order), so a call made first by the bias formula means that the bias needs a
    gradient; input and weight say so themselves."""
    return (which == 2) + _requires_grad(input) + _requires_grad(weight)


def _as_array(value):
    """A tensor kept as an attr (batch norm's running statistics), read as an array."""
    return None if value is None else np.asarray(getattr(value, "_data", value))


# --- convolution ---------------------------------------------------------------------------------
# y = F(x, w) + b, F bilinear (a convolution or a transposed one). Its backward gives
# gI = F_x*(gO, w), gW = F_w*(gO, x), gB = channel sums of gO. Differentiated once more against
# the gradients ggI, ggW, ggB of those three outputs:
#   grad_output: F(ggI, w) + F(x, ggW) + ggB      (the forward, run on the incoming gradients)
#   input:       F_x*(gO, ggW)                    (gW is linear in x)
#   weight:      F_w*(gO, ggI)                    (gI is linear in w)


def _entry_name(transposed, spatial_dims):
    """The table entry of the forward convolution that the backward belongs to."""
    if transposed:
        return "convolution_transposed3d" if spatial_dims == 3 else "convolution_transposed"
    return "convolution3d" if spatial_dims == 3 else "convolution"


def _input_grad(names, grad, input_shape, weight, geometry):
    stride, padding, dilation, transposed, output_padding, groups = geometry
    spatial_dims = len(input_shape) - 2
    if transposed and spatial_dims == 3:
        return names["conv_nd"](grad, weight, stride, padding, dilation, groups)
    if transposed:
        return names["conv_transpose_input_grad"](
            grad, weight, stride, padding, dilation, output_padding, groups
        )
    if spatial_dims == 3:
        return names["conv_nd_input_grad"](
            grad, tuple(input_shape), weight, stride, padding, dilation, groups
        )
    return names["convolution_input_grad"](
        grad, tuple(input_shape), weight, stride, padding, dilation, groups
    )


def _weight_grad(names, grad, input, weight_shape, geometry):  # noqa: A002
    stride, padding, dilation, transposed, output_padding, groups = geometry
    spatial_dims = input.ndim - 2
    weight_shape = tuple(weight_shape)
    if transposed and spatial_dims == 3:
        return names["conv_nd_weight_grad"](
            input, grad, weight_shape, stride, padding, dilation, groups
        )
    if transposed:
        return names["conv_transpose_weight_grad"](
            grad, input, weight_shape, stride, padding, dilation, output_padding, groups
        )
    if spatial_dims == 3:
        return names["conv_nd_weight_grad"](
            grad, input, weight_shape, stride, padding, dilation, groups
        )
    return names["convolution_weight_grad"](
        grad, input, weight_shape, stride, padding, dilation, groups
    )


def _convolution_output(names, which, grad, input, weight, geometry):  # noqa: A002
    if which == 0:
        return _input_grad(names, grad, input.shape, weight, geometry)
    if which == 1:
        return _weight_grad(names, grad, input, weight.shape, geometry)
    return names["channel_sum"](grad)


def _array_names():
    from nbgrad.ops import formula_math

    return formula_math.ARRAY_NAMESPACE


def _tensor_names():
    from nbgrad.ops import formula_tensor

    return formula_tensor.tensor_namespace()


def convolution_backward(grad_output, input, weight, *geometry):  # noqa: A002
    """The op's forward on arrays: (grad_input, grad_weight, grad_bias)."""
    names = _array_names()
    return [_convolution_output(names, k, grad_output, input, weight, geometry) for k in range(3)]


def convolution_backward_output(which, grad, input, weight, *geometry):  # noqa: A002
    return _convolution_output(_array_names(), which, grad, input, weight, geometry)


def _run_table_op(name, tensors, attrs):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS[name], tensors, attrs)


_shared_convolution_backward = SharedCall(
    lambda grad, x, weight, *geometry: _run_table_op(
        "convolution_backward", (grad, x, weight), geometry
    )
)


def convolution_backward_output_tensor(which, grad, input, weight, *geometry):  # noqa: A002
    readers = _readers(which, input, weight)
    return _shared_convolution_backward(readers, grad, input, weight, *geometry)[which]


def _convolution_double_backward(
    names,
    run_forward,
    expand,
    which,
    grads,
    grad_output,
    input,  # noqa: A002
    weight,
    geometry,
):
    gg_input, gg_weight, gg_bias = grads
    if which == 1:  # input
        return (
            None
            if gg_weight is None
            else _input_grad(names, grad_output, input.shape, gg_weight, geometry)
        )
    if which == 2:  # weight
        return (
            None
            if gg_input is None
            else _weight_grad(names, grad_output, gg_input, weight.shape, geometry)
        )
    terms = []
    if gg_input is not None:
        terms.append(run_forward(gg_input, weight, geometry))
    if gg_weight is not None:
        terms.append(run_forward(input, gg_weight, geometry))
    if gg_bias is not None:
        terms.append(gg_bias.reshape((1, -1) + (1,) * (input.ndim - 2)))
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    # (ggB alone is one value per channel)
    return expand(total, grad_output.shape) if total.shape != grad_output.shape else total


def _forward_arrays(x, weight, geometry):
    from nbgrad.ops.derivatives import OPS

    spec = OPS[_entry_name(geometry[3], x.ndim - 2)]
    return spec.forward(x, weight, None, *geometry, (0,))


def _forward_tensors(x, weight, geometry):
    return _run_table_op(_entry_name(geometry[3], x.ndim - 2), (x, weight, None), (*geometry, (0,)))


def convolution_double_backward(which, grads, grad_output, input, weight, *geometry):  # noqa: A002
    return _convolution_double_backward(
        _array_names(),
        _forward_arrays,
        _ArrayOps.expand,
        which,
        grads,
        grad_output,
        input,
        weight,
        geometry,
    )


def convolution_double_backward_tensor(which, grads, grad_output, input, weight, *geometry):  # noqa: A002
    return _convolution_double_backward(
        _tensor_names(),
        _forward_tensors,
        _TensorOps.expand,
        which,
        grads,
        grad_output,
        input,
        weight,
        geometry,
    )


# --- layer norm and batch norm ---------------------------------------------------------------
# Both normalise x over some axes (layer norm: the last ones, per row; batch norm: all but the
# channels, per channel) with a mean mu and an inverse deviation r, then scale by gamma. With
# n elements per mean, xmu = x - mu and g = gO * gamma, the input gradient is
#   gI = r / n * (n g - sum(g) - xmu r^2 sum(g xmu)).
# ATen differentiates it again treating mu and r as saved constants but writing their
# dependence on x into the formulas (so the second derivative is exact, and a third one, which
# differentiates these formulas with mu and r held fixed, is what PyTorch gives). The same
# formulas here, over NumPy arrays or Tensors (``ops``). Batch norm in eval mode normalises with
# the running statistics, constants: its backward is gO * gamma * r alone.


class _ArrayOps:
    @staticmethod
    def total(x, axes):
        return x.sum(axis=axes, keepdims=True)

    @staticmethod
    def expand(x, shape):
        return np.broadcast_to(x, shape).copy()


class _TensorOps:
    @staticmethod
    def total(x, axes):
        return x.sum(dim=axes, keepdim=True)

    @staticmethod
    def expand(x, shape):
        return x.expand(tuple(shape))


class _Normalisation:
    """What the formulas of one norm layer read: its axes, count and statistics, and how a
    per-weight vector (gamma, ggG, ggB) lines up with x and comes back."""

    def __init__(self, ops, x, mean, invstd, weight, axes, weight_axes, weight_shape, as_broadcast):
        self.ops, self.axes, self.weight_axes = ops, axes, weight_axes
        self.count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        self.xmu = x - mean
        self.invstd = invstd
        self.weight_shape = weight_shape
        self.as_broadcast = as_broadcast
        self.gamma = None if weight is None else as_broadcast(weight)

    def sum(self, x):
        return self.ops.total(x, self.axes)

    def to_weight(self, x):
        """A per-element term summed over what the weight is shared across."""
        if self.weight_axes:
            x = self.ops.total(x, self.weight_axes)
        return x.reshape(self.weight_shape)

    def first_backward(self, grad, gamma):
        """gI of the first backward, for a gradient ``grad`` (gamma None: no scaling)."""
        r, n = self.invstd, self.count
        scale = r / n if gamma is None else gamma * r / n
        return scale * (n * grad - self.sum(grad) - self.xmu * (r * r) * self.sum(grad * self.xmu))


def _norm_double_backward(norm, which, grads, grad_out, training):
    """The gradient for ``which``: 0 the input, 1 the weight, 2 grad_out (the order of ATen's
    *_double_backward outputs); None when no incoming gradient reaches it."""
    gg_input, gg_weight, gg_bias = grads
    if norm.gamma is None:
        gg_weight = gg_bias = None  # (no affine: the first backward had no such outputs)
    gg_weight_b = None if gg_weight is None else norm.as_broadcast(gg_weight)
    r, xmu = norm.invstd, norm.xmu
    if which == 0:
        return _norm_input_term(norm, gg_input, gg_weight_b, grad_out, training)
    if which == 1:
        if norm.gamma is None or gg_input is None:
            return None
        if training:
            per_element = grad_out * norm.first_backward(gg_input, None)
        else:
            per_element = gg_input * grad_out * r
        return norm.to_weight(per_element)
    terms = []
    if gg_input is not None:
        terms.append(
            norm.first_backward(gg_input, norm.gamma)
            if training
            else gg_input * r * (1 if norm.gamma is None else norm.gamma)
        )
    if gg_weight_b is not None:
        terms.append(gg_weight_b * xmu * r)
    if gg_bias is not None:
        terms.append(norm.as_broadcast(gg_bias))
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    if total.shape != xmu.shape:  # (ggB alone is one value per weight)
        total = norm.ops.expand(total, xmu.shape)
    return total


def _norm_input_term(norm, gg_input, gg_weight_b, grad_out, training):
    r, n, xmu = norm.invstd, norm.count, norm.xmu
    r3 = r * r * r
    result = None
    if gg_input is not None and training:
        g = grad_out if norm.gamma is None else grad_out * norm.gamma
        g_xmu_sum, g_sum = norm.sum(g * xmu), norm.sum(g)
        gg_sum, gg_xmu_sum = norm.sum(gg_input), norm.sum(gg_input * xmu)
        mixed = (
            gg_sum * g_sum / n
            - norm.sum(gg_input * g)
            + (r * r) * g_xmu_sum * gg_xmu_sum * (3.0 / n)
        )
        result = (
            xmu * r3 * mixed / n
            + gg_xmu_sum * r3 / n * (g_sum / n - g)
            + g_xmu_sum * r3 / n * (gg_sum / n - gg_input)
        )
    if gg_weight_b is not None:
        if training:
            scaled = grad_out * gg_weight_b
            term = scaled * r - r * norm.sum(scaled) / n - xmu * r3 * norm.sum(scaled * xmu) / n
        else:
            term = gg_weight_b * r * grad_out
        result = term if result is None else result + term
    return result


def _layer_norm(ops, input, normalized_shape, mean, rstd, weight):  # noqa: A002
    axes = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    leading = tuple(range(input.ndim - len(normalized_shape)))
    return _Normalisation(
        ops, input, mean, rstd, weight, axes, leading, tuple(normalized_shape), lambda v: v
    )


def _batch_norm(
    ops,
    input,
    weight,
    running_mean,
    running_var,
    save_mean,
    save_invstd,
    train,  # noqa: A002
    eps,
    constant,
):
    shape = nn_kernels.channel_shape(input)
    if train:
        mean, invstd = save_mean.reshape(shape), save_invstd.reshape(shape)
    else:  # the running statistics, constants of the layer
        invstd = 1 / np.sqrt(_as_array(running_var) + eps)
        mean, invstd = constant(_as_array(running_mean), input), constant(invstd, input)
        mean, invstd = mean.reshape(shape), invstd.reshape(shape)
    axes = nn_kernels.all_but_channel(input.ndim)
    return _Normalisation(
        ops, input, mean, invstd, weight, axes, axes, (input.shape[1],), lambda v: v.reshape(shape)
    )


def _array_constant(values, like):
    return np.asarray(values, like.dtype)


def _tensor_constant(values, like):
    import nbgrad as nb

    return nb.as_tensor(np.asarray(values, like.dtype.numpy))


# The first backward's outputs, on arrays (a plain backward, or the ops' forwards).


def layer_norm_backward_output(which, grad, input, normalized_shape, mean, rstd, weight, bias):  # noqa: A002
    """``bias`` is an input of PyTorch's native_layer_norm_backward (its node has an edge to the
    bias, which gets no gradient): the Tensor version passes it on; no output reads it."""
    norm = _layer_norm(_ArrayOps, input, normalized_shape, mean, rstd, weight)
    if which == 0:
        return norm.first_backward(grad if weight is None else grad * weight, None)
    if which == 1:
        return norm.to_weight(grad * norm.xmu * norm.invstd)
    return norm.to_weight(grad)


def native_layer_norm_backward(grad_out, input, mean, rstd, weight, bias, normalized_shape):  # noqa: A002
    return [
        layer_norm_backward_output(k, grad_out, input, normalized_shape, mean, rstd, weight, bias)
        for k in range(3)
    ]


def batch_norm_backward_output(
    which,
    grad,
    input,
    weight,
    running_mean,
    running_var,  # noqa: A002
    save_mean,
    save_invstd,
    train,
    eps,
):
    if which == 0:
        return nn_kernels.batch_norm_input_grad(
            grad,
            input,
            weight,
            _as_array(running_mean),
            _as_array(running_var),
            save_mean,
            save_invstd,
            train,
            eps,
        )
    if which == 1:
        return nn_kernels.batch_norm_weight_grad(
            grad,
            input,
            _as_array(running_mean),
            _as_array(running_var),
            save_mean,
            save_invstd,
            train,
            eps,
        )
    return nn_kernels.channel_sum(grad)


def native_batch_norm_backward(
    grad_out,
    input,
    weight,
    save_mean,
    save_invstd,
    running_mean,  # noqa: A002
    running_var,
    train,
    eps,
):
    return [
        batch_norm_backward_output(
            k,
            grad_out,
            input,
            weight,
            running_mean,
            running_var,
            save_mean,
            save_invstd,
            train,
            eps,
        )
        for k in range(3)
    ]


# The double backwards: ``which`` counts the backward op's inputs as ATen's formulas return
# them (0 input, 1 weight, 2 grad_out).


def layer_norm_double_backward(
    which,
    grads,
    grad_out,
    input,
    mean,
    rstd,
    weight,  # noqa: A002
    normalized_shape,
):
    norm = _layer_norm(_ArrayOps, input, normalized_shape, mean, rstd, weight)
    return _norm_double_backward(norm, which, grads, grad_out, True)


def layer_norm_double_backward_tensor(
    which,
    grads,
    grad_out,
    input,
    mean,
    rstd,
    weight,  # noqa: A002
    normalized_shape,
):
    norm = _layer_norm(_TensorOps, input, normalized_shape, mean, rstd, weight)
    return _norm_double_backward(norm, which, grads, grad_out, True)


def batch_norm_double_backward(
    which,
    grads,
    grad_out,
    input,
    weight,
    running_mean,  # noqa: A002
    running_var,
    save_mean,
    save_invstd,
    train,
    eps,
):
    norm = _batch_norm(
        _ArrayOps,
        input,
        weight,
        running_mean,
        running_var,
        save_mean,
        save_invstd,
        train,
        eps,
        _array_constant,
    )
    return _norm_double_backward(norm, which, grads, grad_out, train)


def batch_norm_double_backward_tensor(
    which,
    grads,
    grad_out,
    input,
    weight,
    running_mean,  # noqa: A002
    running_var,
    save_mean,
    save_invstd,
    train,
    eps,
):
    norm = _batch_norm(
        _TensorOps,
        input,
        weight,
        running_mean,
        running_var,
        save_mean,
        save_invstd,
        train,
        eps,
        _tensor_constant,
    )
    return _norm_double_backward(norm, which, grads, grad_out, train)


# Under create_graph, the first backward runs its op, one node for the three outputs.

_shared_layer_norm_backward = SharedCall(
    lambda grad, x, mean, rstd, weight, bias, normalized_shape: _run_table_op(
        "native_layer_norm_backward",
        (grad, x, mean, rstd, weight, bias),
        (tuple(normalized_shape),),
    )
)
_shared_batch_norm_backward = SharedCall(
    lambda grad, x, weight, save_mean, save_invstd, *attrs: _run_table_op(
        "native_batch_norm_backward", (grad, x, weight, save_mean, save_invstd), attrs
    )
)


def layer_norm_backward_output_tensor(
    which,
    grad,
    input,
    normalized_shape,
    mean,
    rstd,
    weight,  # noqa: A002
    bias,
):
    readers = _readers(which, input, weight)
    outputs = _shared_layer_norm_backward(
        readers, grad, input, mean, rstd, weight, bias, normalized_shape
    )
    return outputs[which]


def batch_norm_backward_output_tensor(
    which,
    grad,
    input,
    weight,
    running_mean,
    running_var,  # noqa: A002
    save_mean,
    save_invstd,
    train,
    eps,
):
    readers = _readers(which, input, weight)
    outputs = _shared_batch_norm_backward(
        readers,
        grad,
        input,
        weight,
        save_mean,
        save_invstd,
        running_mean,
        running_var,
        train,
        eps,
    )
    return outputs[which]


# --- 3-d average pooling: linear, its backward an op whose gradient is the pooling again -------


def avg_pool3d_backward(grad, x, *options):
    from nbgrad.ops import layer_kernels

    return layer_kernels.avg_pool3d_backward(grad, x.shape, *options)


def adaptive_avg_pool3d_backward(grad, x):
    from nbgrad.ops import layer_kernels

    return layer_kernels.adaptive_avg_pool3d_backward(grad, x.shape)


def avg_pool3d_backward_tensor(grad, x, *options):
    return _run_table_op("avg_pool3d_backward", (grad, x), options)


def adaptive_avg_pool3d_backward_tensor(grad, x):
    return _run_table_op("adaptive_avg_pool3d_backward", (grad, x), tuple(grad.shape[-3:]))


def avg_pool3d_tensor(x, *options):
    return _run_table_op("avg_pool3d", (x,), options)


def adaptive_avg_pool3d_tensor(x, output_size):
    return _run_table_op("adaptive_avg_pool3d", (x,), (tuple(output_size),))


def _avg_pool3d(x, *options):
    from nbgrad.ops import layer_kernels

    return layer_kernels.avg_pool3d(x, *options)


def _adaptive_avg_pool3d(x, output_size):
    from nbgrad.ops import layer_kernels

    return layer_kernels.adaptive_avg_pool3d(x, tuple(output_size))


ARRAY_FUNCTIONS = {
    "avg_pool3d_backward": avg_pool3d_backward,
    "adaptive_avg_pool3d_backward": adaptive_avg_pool3d_backward,
    "avg_pool3d": _avg_pool3d,
    "adaptive_avg_pool3d": _adaptive_avg_pool3d,
    "convolution_backward_output": convolution_backward_output,
    "convolution_double_backward": convolution_double_backward,
    "layer_norm_backward_output": layer_norm_backward_output,
    "layer_norm_double_backward": layer_norm_double_backward,
    "batch_norm_backward_output": batch_norm_backward_output,
    "batch_norm_double_backward": batch_norm_double_backward,
}


def tensor_namespace():
    """The Tensor versions: the first backwards run their ops (one node for three outputs), the
    double backwards are written with differentiable operations."""
    return {
        "avg_pool3d_backward": avg_pool3d_backward_tensor,
        "adaptive_avg_pool3d_backward": adaptive_avg_pool3d_backward_tensor,
        "avg_pool3d": avg_pool3d_tensor,
        "adaptive_avg_pool3d": adaptive_avg_pool3d_tensor,
        "convolution_backward_output": convolution_backward_output_tensor,
        "convolution_double_backward": convolution_double_backward_tensor,
        "layer_norm_backward_output": layer_norm_backward_output_tensor,
        "layer_norm_double_backward": layer_norm_double_backward_tensor,
        "batch_norm_backward_output": batch_norm_backward_output_tensor,
        "batch_norm_double_backward": batch_norm_double_backward_tensor,
    }
