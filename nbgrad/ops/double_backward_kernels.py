"""Helpers of the backward functions that are ops of their own (``gelu_backward``,
``glu_backward``, the padding and upsampling backwards): what their own formulas call, for NumPy
arrays (``ARRAY_FUNCTIONS``) and for differentiable Tensors (``tensor_namespace()``).

A backward function's formula differentiates the gradient once more (``create_graph=True``
twice): GLU's needs the two halves of its input, and the padding and upsampling backwards are
linear, so their gradient is the forward layer again, run as its own table entry so that it
records the node PyTorch records.
"""

import numpy as np

from nbgrad.ops import formula_math, layer_kernels, nn_kernels
from nbgrad.ops.grid_sample_kernels import SharedCall, wanted

# --- GLU: glu(x) = a * sigmoid(b), a and b the two halves of x along dim ------------------------
# glu_backward(g, x) = cat[g * s, g * a * s * (1 - s)] with s = sigmoid(b). Its derivative in g,
# read against an incoming gradient cat[A, B], is A * s + B * a * s * (1 - s); its derivative in
# x is cat[B * g * s(1-s), A * g * s(1-s) + B * g * a * s(1-s)(1-2s)].


def _halves(x, dim):
    return np.split(x, 2, axis=dim)


def glu_double_backward_grad_output(grad, self, dim):
    grad_first, grad_gate = _halves(grad, dim)
    first, second = _halves(self, dim)
    gate = formula_math.sigmoid_array(second)
    return grad_first * gate + grad_gate * first * gate * (1 - gate)


def glu_double_backward(grad, grad_output, self, dim):
    grad_first, grad_gate = _halves(grad, dim)
    first, second = _halves(self, dim)
    gate = formula_math.sigmoid_array(second)
    slope = gate * (1 - gate)
    return np.concatenate(
        [
            grad_gate * grad_output * slope,
            grad_first * grad_output * slope
            + grad_gate * grad_output * first * slope * (1 - 2 * gate),
        ],
        axis=dim,
    )


def _tensor_halves(x, dim):
    half = x.shape[dim] // 2
    return x.narrow(dim, 0, half), x.narrow(dim, half, half)


def glu_double_backward_grad_output_tensor(grad, self, dim):
    grad_first, grad_gate = _tensor_halves(grad, dim)
    first, second = _tensor_halves(self, dim)
    gate = second.sigmoid()
    return grad_first * gate + grad_gate * first * gate * (1 - gate)


def glu_double_backward_tensor(grad, grad_output, self, dim):
    import nbgrad as nb

    grad_first, grad_gate = _tensor_halves(grad, dim)
    first, second = _tensor_halves(self, dim)
    gate = second.sigmoid()
    slope = gate * (1 - gate)
    return nb.cat(
        [
            grad_gate * grad_output * slope,
            grad_first * grad_output * slope
            + grad_gate * grad_output * first * slope * (1 - 2 * gate),
        ],
        dim,
    )


# --- GELU's second derivative ----------------------------------------------------------------
# Exact: gelu'(x) = Phi(x) + x phi(x), so gelu''(x) = phi(x) (2 - x^2).
# tanh form: gelu(x) = x (1 + t) / 2 with t = tanh(u), u = k (x + c x^3); then
# gelu''(x) = (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2), u' = k (1 + 3 c x^2), u'' = 6 k c x.

_INV_SQRT_2PI = 1 / np.sqrt(2 * np.pi)


def gelu_second_derivative(x, approximate, exp, tanh):
    """``exp`` and ``tanh`` are NumPy's or nbgrad's: the same text serves arrays and Tensors."""
    if approximate == "tanh":
        k, c = nn_kernels.SQRT_2_OVER_PI, nn_kernels.GELU_TANH_CUBIC
        t = tanh(k * (x + c * x * x * x))
        du = k * (1 + 3 * c * x * x)
        return (1 - t * t) * (du + 0.5 * x * (6 * k * c * x - 2 * t * du * du))
    return _INV_SQRT_2PI * exp(-0.5 * x * x) * (2 - x * x)


# --- padding and upsampling, run as the layer ----------------------------------------------------


def index_pad(x, padding, mode):
    return nn_kernels.index_pad(x, padding, mode)


def upsample(x, output_size, scales, mode, align_corners):
    return layer_kernels.upsample(x, output_size, scales, mode, align_corners)


# --- native_dropout: the gradient passes where the mask kept, scaled -----------------------------


def dropout_scale(mask, like, scale):
    """The mask as ``like``'s dtype, times the scale (ATen's
    infinitely_differentiable_native_dropout_backward multiplies the gradient by it)."""
    return np.asarray(mask, like.dtype) * scale


def dropout_scale_tensor(mask, like, scale):
    import nbgrad as nb

    mask = np.asarray(getattr(mask, "_data", mask))
    return nb.as_tensor(mask.astype(like.dtype.numpy) * like.dtype.numpy.type(scale))


# --- the losses' backward functions, differentiated: ATen's formulas -----------------------------
# Written once over the few operations they need (``ops``: NumPy's or nbgrad's), as ATen writes
# them: binary cross-entropy's second derivative adds eps to x and 1 - x where its first
# derivative clamps (1 - x) x from below.

BCE_EPS = 1e-12


class _ArrayMath:
    clamp_min = staticmethod(np.maximum)
    exp = staticmethod(np.exp)
    total = staticmethod(np.sum)

    @staticmethod
    def numel(x):
        return np.size(x)


class _TensorMath:
    @staticmethod
    def clamp_min(x, low):
        return x.clamp(min=low)

    @staticmethod
    def exp(x):
        return x.exp()

    @staticmethod
    def total(x):
        return x.sum()

    @staticmethod
    def numel(x):
        return x.numel()


_MEAN, _SUM = 1, 2  # PyTorch's reduction enum (0 = none)


def _reduced(m, value, reduction):
    """What the derivative in a reduced loss's scalar gradient adds up to."""
    if reduction == _MEAN:
        return m.total(value) / m.numel(value)
    if reduction == _SUM:
        return m.total(value)
    return value


def _bce_grad_output(m, grad, self, target, weight, reduction):
    out = (self - target) / m.clamp_min((1 - self) * self, BCE_EPS)
    if weight is not None:
        out = out * weight
    return _reduced(m, out * grad, reduction)


def _bce_self(m, grad, grad_output, self, target, weight, reduction):
    out = (self * self - 2 * self * target + target) / (
        (self + BCE_EPS) ** 2 * (1 - self + BCE_EPS) ** 2
    )
    out = out * (grad * grad_output)
    if weight is not None:
        out = out * weight
    return out / m.numel(self) if reduction == _MEAN else out


def _bce_target(m, grad, grad_output, self, target, weight, reduction):
    out = -grad * grad_output
    if weight is not None:
        out = out * weight
    out = out / m.clamp_min((1 - self) * self, BCE_EPS)
    return out / m.numel(self) if reduction == _MEAN else out


def _soft_margin_grad_output(m, grad, grad_output, self, target, reduction):
    # soft_margin_loss_backward at a gradient of ones, times the incoming gradient
    scale = m.numel(self) if reduction == _MEAN else 1
    slope = -target / (1 + m.exp(target * self)) / scale
    return slope * grad if reduction == 0 else m.total(slope * grad)


def _soft_margin_self(m, grad, grad_output, self, target, reduction):
    z = m.exp(-target * self)
    out = target * target * z / ((1 + z) * (1 + z)) * grad * grad_output
    return out / m.numel(self) if reduction == _MEAN else out


def _target_of(target, dtype):
    """A saved target (an array, or a Tensor read back) as an array of ``dtype``."""
    return np.asarray(getattr(target, "_data", target), dtype)


def _embedding_dense_double_backward(grad, indices, padding_idx):
    """The incoming gradient's rows read back at the indices (the padding index's rows 0): the
    frequency scaling stays with the first backward, as in ATen."""
    indices = np.asarray(getattr(indices, "_data", indices))
    rows = grad[indices.reshape(-1)]
    if padding_idx >= 0:
        rows = np.where((indices.reshape(-1) == padding_idx)[:, None], 0 * rows, rows)
    return rows.reshape(*indices.shape, -1)


def _embedding_dense_double_backward_tensor(grad, indices, padding_idx):
    import nbgrad as nb

    indices = np.asarray(getattr(indices, "_data", indices))
    rows = grad.index_select(0, nb.as_tensor(indices.reshape(-1).astype(np.int64)))
    if padding_idx >= 0:
        rows = rows.masked_fill(nb.as_tensor((indices.reshape(-1) == padding_idx)[:, None]), 0)
    return rows.view(*indices.shape, -1)


# --- PReLU: _prelu_kernel_backward gives both gradients at once (one node under create_graph) ---
# Its own derivatives, as derivatives.yaml writes them (self >= 0 there, self > 0 in the first
# backward); an output of it that got no gradient (None) contributes nothing.


def _prelu_double_backward(where, which, grads, grad_output, self, weight):
    grad_input_grad, grad_weight_grad = grads
    zeros = self * 0
    if which == 0:  # grad_output
        if grad_input_grad is None:
            return where(self >= 0, zeros, grad_weight_grad * self)
        negative = grad_input_grad * weight
        if grad_weight_grad is not None:
            negative = negative + grad_weight_grad * self
        return where(self >= 0, grad_input_grad, negative)
    other = grad_weight_grad if which == 1 else grad_input_grad  # self, weight
    if other is None:
        return zeros
    return where(self >= 0, zeros, grad_output * other)


def prelu_backward_output(which, grad, self, weight):
    if which == 0:
        return np.where(self > 0, grad, weight * grad)
    return np.where(self > 0, 0 * grad, self * grad)


ARRAY_FUNCTIONS = {
    "prelu_backward_output": prelu_backward_output,
    "prelu_double_backward_output": lambda *a: _prelu_double_backward(np.where, *a),
    "bce_double_backward_grad_output": lambda *a: _bce_grad_output(_ArrayMath, *a),
    "bce_double_backward": lambda *a: _bce_self(_ArrayMath, *a),
    "bce_double_backward_target": lambda *a: _bce_target(_ArrayMath, *a),
    "soft_margin_double_backward_grad_output": lambda grad, grad_output, self, target, r: (
        _soft_margin_grad_output(
            _ArrayMath, grad, grad_output, self, _target_of(target, self.dtype), r
        )
    ),
    "soft_margin_double_backward": lambda grad, grad_output, self, target, r: _soft_margin_self(
        _ArrayMath, grad, grad_output, self, _target_of(target, self.dtype), r
    ),
    "embedding_dense_double_backward": _embedding_dense_double_backward,
    "dropout_scale": dropout_scale,
    "glu_double_backward_grad_output": glu_double_backward_grad_output,
    "glu_double_backward": glu_double_backward,
    "gelu_second_derivative": lambda x, approximate: gelu_second_derivative(
        x, approximate, np.exp, np.tanh
    ),
    "index_pad": index_pad,
    "upsample": upsample,
}


def _constant(value, like):
    import nbgrad as nb

    return nb.as_tensor(_target_of(value, like.dtype.numpy))


def _run_table_op(name, tensors, attrs=()):
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(OPS[name], tensors, attrs)


# PReLU's backward is one op for both gradients: the node's two formulas share one call of it.
_shared_prelu_backward = SharedCall(
    lambda grad, self, weight: _run_table_op("_prelu_kernel_backward", (grad, self, weight))
)


def prelu_backward_output_tensor(which, grad, self, weight):
    return _shared_prelu_backward(wanted(self, weight), grad, self, weight)[which]


def index_pad_tensor(x, padding, mode):
    return _run_table_op(f"{mode}_pad{len(padding) // 2}d", (x,), (tuple(padding),))


def upsample_tensor(x, output_size, scales, mode, align_corners):
    name = UPSAMPLE_OPS[(mode, len(output_size))]
    corners = () if mode in ("nearest", "nearest-exact") else (align_corners,)
    attrs = (tuple(output_size), *corners, *scales, tuple(x.shape))
    return _run_table_op(name, (x,), attrs)


def soft_margin_double_backward_grad_output_tensor(grad, grad_output, self, target, reduction):
    target = _constant(target, self)
    return _soft_margin_grad_output(_TensorMath, grad, grad_output, self, target, reduction)


def soft_margin_double_backward_tensor(grad, grad_output, self, target, reduction):
    target = _constant(target, self)
    return _soft_margin_self(_TensorMath, grad, grad_output, self, target, reduction)


def gelu_second_derivative_tensor(x, approximate):
    return gelu_second_derivative(x, approximate, lambda t: t.exp(), lambda t: t.tanh())


def tensor_namespace():
    """The Tensor versions: the padding and upsampling layers run their table entries, PReLU's
    backward its op (one node for both gradients, through grid_sample_kernels.SharedCall)."""
    import nbgrad as nb

    return {
        "dropout_scale": dropout_scale_tensor,
        "prelu_backward_output": prelu_backward_output_tensor,
        "prelu_double_backward_output": lambda *a: _prelu_double_backward(nb.where, *a),
        "bce_double_backward_grad_output": lambda *a: _bce_grad_output(_TensorMath, *a),
        "bce_double_backward": lambda *a: _bce_self(_TensorMath, *a),
        "bce_double_backward_target": lambda *a: _bce_target(_TensorMath, *a),
        "soft_margin_double_backward_grad_output": soft_margin_double_backward_grad_output_tensor,
        "soft_margin_double_backward": soft_margin_double_backward_tensor,
        "embedding_dense_double_backward": _embedding_dense_double_backward_tensor,
        "glu_double_backward_grad_output": glu_double_backward_grad_output_tensor,
        "glu_double_backward": glu_double_backward_tensor,
        "gelu_second_derivative": gelu_second_derivative_tensor,
        "index_pad": index_pad_tensor,
        "upsample": upsample_tensor,
    }


UPSAMPLE_OPS = {
    ("nearest", 1): "upsample_nearest1d",
    ("nearest", 2): "upsample_nearest2d",
    ("nearest", 3): "upsample_nearest3d",
    ("nearest-exact", 1): "upsample_nearest_exact1d",
    ("nearest-exact", 2): "upsample_nearest_exact2d",
    ("nearest-exact", 3): "upsample_nearest_exact3d",
    ("linear", 1): "upsample_linear1d",
    ("bilinear", 2): "upsample_bilinear2d",
    ("trilinear", 3): "upsample_trilinear3d",
    ("bicubic", 2): "upsample_bicubic2d",
    ("bilinear-aa", 2): "_upsample_bilinear2d_aa",
    ("bicubic-aa", 2): "_upsample_bicubic2d_aa",
    ("lanczos-aa", 2): "_upsample_lanczos2d_aa",
}
