"""The Tensor versions of the functions a derivative formula may call (formula_math's twins).

``formula_math.ARRAY_NAMESPACE`` works on NumPy arrays, for a plain ``backward()``. Backward with
``create_graph=True`` compiles the same formula text against ``tensor_namespace()``: the same
names, here built from nbgrad's differentiable operations, so that the gradient itself has a
graph (second derivatives). Each is a module-level function, importable and testable alone
(``from nbgrad.ops.formula_tensor import clamp_backward``); the Tensor versions of the helpers of
the other formula modules are module-level functions of those modules (``NAME_tensor``), and
``tensor_namespace()`` gathers them all.

This module is imported when first needed (the first differentiable backward), after nbgrad has
loaded: unlike formula_math, which the engine imports, it may import the whole package.
"""

import functools
import math

import numpy as np

import nbgrad as nb
from nbgrad.autograd import reading
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops import (
    convs_kernels,
    ddmore_kernels,
    distance_kernels,
    double_backward_kernels,
    fake_quantize_kernels,
    formula_linalg,
    formula_linalg_householder,
    formula_linalg_lstsq,
    formula_linalg_lu,
    formula_more,
    grid_sample_kernels,
    idx_kernels,
    layer_kernels,
    layer_kernels_more,
    misc_kernels,
    nn_extra_kernels,
    nn_kernels,
    norm_conv_double_backward,
    renorm_kernels,
    rnn_kernels,
    scatter_reduce_kernels,
    special_kernels,
)
from nbgrad.ops.derivatives import BACKWARD_FUNCTIONS, OPS
from nbgrad.ops.formula_math import (
    _elu_result_alpha,
    _gather_key,
    _normalize_dims,
    _not_implemented,
    _reduced_count,
    _reduced_shape,
    _scalar_log,
    _single,
)
from nbgrad.ops.functions import index_put_into_zeros
from nbgrad.ops.storage_geometry import as_strided_key, as_strided_source

# --- shapes, reductions, indexing ------------------------------------------------------------


def sum_to(grad, shape):
    return grad.sum_to_size(tuple(shape))


def restore_reduced(grad, sizes, dims, keepdim):
    return grad.reshape(_reduced_shape(sizes, dims, keepdim))


def select_backward(grad, sizes, dim, index):
    return nb.ops.functions.select_backward(grad, tuple(sizes), dim, index)


def slice_backward(grad, sizes, dim, start, end, step):
    return nb.ops.functions.slice_backward(grad, tuple(sizes), dim, start, end, step)


def index_backward(grad, sizes, indices):
    return nb.ops.functions.index_put_into_zeros(grad, tuple(sizes), indices)


def as_strided_backward(grad, self_geometry, size, stride, storage_offset):
    sizes = tuple(self_geometry[0])
    key = as_strided_key(self_geometry, size, stride, storage_offset)
    if key is not None:
        return nb.ops.functions.index_put_into_zeros(grad, sizes, key)
    source = as_strided_source(self_geometry, size, stride, storage_offset)
    inside = source >= 0
    flat = nb.ops.functions.index_put_into_zeros(
        grad[nb.tensor(inside)], (int(np.prod(sizes)),), (source[inside],)
    )
    return flat.reshape(sizes)


def gather_backward(grad, sizes, dim, index):
    return nb.ops.functions.index_put_into_zeros(
        grad, tuple(sizes), _gather_key(np.asarray(index), dim)
    )


def value_selecting_backward(grad, sizes, dim, indices, keepdim):
    if not sizes:  # a 0-d input: its one element was selected
        return grad
    indices = np.asarray(indices)
    if not keepdim:
        grad = grad.unsqueeze(dim)
        indices = np.expand_dims(indices, dim)
    return gather_backward(grad, sizes, dim, indices)


def evenly_distribute(grad, self, result):
    mask = (self == result).detach()
    return nb.where(mask, grad / mask.sum(), 0.0)


def amax_backward(grad, self, result, dims, keepdim):
    grad = restore_reduced(grad, self.shape, dims, keepdim)
    result = restore_reduced(result, self.shape, dims, keepdim)
    mask = (self == result).detach()
    count = mask.sum(dim=_normalize_dims(dims, self.ndim), keepdim=True)
    return nb.where(mask, grad / count, 0.0)


def clamp_backward(grad, self, min, max):  # noqa: A002
    keep = nb.ones(self.shape, dtype=nb.bool)
    if min is not None:
        keep = keep & (self >= min)
    if max is not None:
        keep = keep & (self <= max)
    return nb.where(keep, grad, 0.0)


def zero_at(grad, key):
    out = grad.clone()
    out[key] = 0.0
    return out


def split_along(grad, dim, sizes):
    pieces, start = [], 0
    for s in sizes:
        pieces.append(grad.narrow(dim, start, s[dim]))
        start += s[dim]
    return pieces


def unstack(grad, dim, count):
    return [grad.select(dim, i) for i in range(count)]


def permute_back(grad, dims):
    # dims are saved as given: -1 is the last dim
    return grad.permute(tuple(np.argsort([d % len(dims) for d in dims]).tolist()))


_CORE_FUNCTIONS = {
    "exp": nb.exp,
    "log": nb.log,
    "sin": nb.sin,
    "cos": nb.cos,
    "sqrt": nb.sqrt,
    "sign": nb.sign,
    "where": nb.where,
    "zeros_like": nb.zeros_like,
    "reshape": nb.reshape,
    "transpose": nb.transpose,
    "permute_back": permute_back,
    "matrix_t": lambda a: a.t(),
    "unsqueeze": nb.unsqueeze,
    "outer": lambda a, b: a.reshape(*a.shape, *([1] * b.ndim)) * b,
    "sum_to": sum_to,
    "sum_dim": lambda g, dim, keepdim: g.sum(dim=dim, keepdim=keepdim),
    "expand": lambda g, shape: g.expand(tuple(shape)),
    "restore_reduced": restore_reduced,
    "select_backward": select_backward,
    "slice_backward": slice_backward,
    "index_backward": index_backward,
    "as_strided_backward": as_strided_backward,
    "gather_backward": gather_backward,
    "value_selecting_backward": value_selecting_backward,
    "evenly_distribute": evenly_distribute,
    "amax_backward": amax_backward,
    "clamp_backward": clamp_backward,
    "split_along": split_along,
    "unstack": unstack,
    "masked_zero": lambda g, mask: g.masked_fill(mask, 0.0),
    "swap_last": lambda a: a.transpose(-1, -2),
    "squeeze": lambda g, dim: g.squeeze(dim),
    "reduced_count": _reduced_count,
    "scalar_log": _scalar_log,
    "power": lambda a, exponent: a**exponent,
    "rounded_divide": lambda a, b, mode: nb.div(a, b, rounding_mode=mode),
    "scalar_times": lambda number, a: run_op(OPS["mul_scalar"], (a,), (float(number),)),
    # a tensor plus a Python number, ATen's Scalar overload (AddBackward1)
    "scalar_plus": lambda a, number: run_op(OPS["add_scalar"], (a,), (number,)),
    "zero_at": zero_at,
    "astype": lambda a, dt: a.to(dt),
}


# --- neural-network layers -------------------------------------------------------------------
# Built from differentiable operations, including the layers' own table ops (im2col and col2im are
# each other's backward, and so are average pooling and its backward), so that a gradient through
# a layer can itself be differentiated. (Convolution and the norms differentiate their gradients
# through backward functions that are ops of their own: norm_conv_double_backward.)


def constant(array, like):
    return nb.as_tensor(np.asarray(array, dtype=like.dtype.numpy if like is not None else None))


def channel_sum(grad):
    return grad.sum(dim=nn_kernels.all_but_channel(grad.ndim))


def im2col(x, kernel_size, dilation, padding, stride):
    return run_op(OPS["im2col"], (x,), (kernel_size, dilation, padding, stride, *x.shape[-2:]))


def col2im(columns, output_size, kernel_size, dilation, padding, stride):
    attrs = (tuple(output_size), kernel_size, dilation, padding, stride)
    return run_op(OPS["col2im"], (columns,), attrs)


def lift_1d(tensor, spatial_dims):
    return tensor.unsqueeze(2) if spatial_dims == 1 else tensor


def convolution_input_grad(grad, input_shape, weight, stride, padding, dilation, groups):
    spatial_dims = len(input_shape) - 2
    geometry = nn_kernels.ConvGeometry(spatial_dims, stride, padding, dilation, groups)
    kernels4, grad4 = lift_1d(weight, spatial_dims), lift_1d(grad, spatial_dims)
    n, out_channels = grad4.shape[:2]
    kernels = kernels4.reshape(groups, out_channels // groups, -1).transpose(1, 2)
    per_group = grad4.reshape(n, groups, out_channels // groups, -1)
    columns = nb.matmul(kernels, per_group).reshape(n, -1, per_group.shape[-1])
    in_size = (1, *input_shape[2:]) if spatial_dims == 1 else tuple(input_shape[2:])
    image = col2im(
        columns,
        in_size,
        tuple(kernels4.shape[2:]),
        geometry.dilation,
        geometry.padding,
        geometry.stride,
    )
    return image.reshape(tuple(input_shape))


def convolution_weight_grad(grad, input, weight_shape, stride, padding, dilation, groups):
    spatial_dims = input.ndim - 2
    geometry = nn_kernels.ConvGeometry(spatial_dims, stride, padding, dilation, groups)
    input4, grad4 = lift_1d(input, spatial_dims), lift_1d(grad, spatial_dims)
    kernel_size = (1, *weight_shape[2:]) if spatial_dims == 1 else tuple(weight_shape[2:])
    columns = im2col(input4, kernel_size, geometry.dilation, geometry.padding, geometry.stride)
    n, out_channels = grad4.shape[:2]
    per_group = columns.reshape(n, groups, -1, columns.shape[-1])
    grads = grad4.reshape(n, groups, out_channels // groups, -1)
    per_sample = nb.matmul(grads, per_group.transpose(-1, -2))
    return per_sample.sum(0).reshape(tuple(weight_shape))


def max_pool2d_backward(grad, input_shape, indices):
    planes = int(np.prod(input_shape[:-2], dtype=np.int64))
    plane_size = input_shape[-2] * input_shape[-1]
    offsets = (np.arange(planes) * plane_size).reshape(indices.shape[:-2] + (1, 1))
    flat = index_put_into_zeros(
        grad.reshape(-1), (planes * plane_size,), ((indices + offsets).reshape(-1),)
    )
    return flat.reshape(tuple(input_shape))


def avg_pool2d(x, *options):
    return run_op(OPS["avg_pool2d"], (x,), options)


def avg_pool2d_backward(grad, x, *options):
    return run_op(OPS["avg_pool2d_backward"], (grad, x), options)


def constant_pad_nd(grad, pad):
    return run_op(OPS["constant_pad_nd"], (grad,), (tuple(pad), 0))


def index_pad_backward(grad, input_shape, padding, mode):
    key = nn_kernels._pad_key(tuple(input_shape), padding, mode)
    return index_put_into_zeros(grad, tuple(input_shape), key)


def embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
    rows = np.asarray(indices).reshape(-1)
    scale = (rows != padding_idx).astype(np.float64)
    if scale_grad_by_freq:
        scale /= np.bincount(rows, minlength=num_weights)[rows]
    row_grads = grad.reshape(rows.size, -1) * constant(scale[:, None], grad)
    return index_put_into_zeros(row_grads, (num_weights, row_grads.shape[1]), (rows,))


def gelu_backward(grad, x, approximate):
    if approximate == "tanh":
        cubic = nn_kernels.GELU_TANH_CUBIC
        tanh_inner = (nn_kernels.SQRT_2_OVER_PI * (x + cubic * x * x * x)).tanh()
        slope = 0.5 * (1 + tanh_inner) + 0.5 * x * (1 - tanh_inner * tanh_inner) * (
            nn_kernels.SQRT_2_OVER_PI * (1 + 3 * cubic * x * x)
        )
        return grad * slope
    cdf = 0.5 * (1 + run_op(OPS["erf"], (x * nn_kernels.SQRT_HALF,)))
    pdf = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
    return grad * (cdf + x * pdf)


def norm_backward(grad, x, ord, norm, dim, keepdim):
    if not keepdim and dim is not None and x.dim():  # dim None: a 0-d norm broadcasts
        for d in sorted(d % x.dim() for d in dim):
            grad, norm = grad.unsqueeze(d), norm.unsqueeze(d)
    if ord == 1:
        return x.sign() * grad
    return x * (grad / norm).masked_fill(norm == 0, 0.0)


def mean_scale(reduction, x):
    return nn_kernels.mean_scale(reduction, x.numel())


def weighted(out, weight, reduction, x):
    if weight is not None:
        out = out * constant(weight, out)
    return out / mean_scale(reduction, x)


def binary_cross_entropy_backward(grad, x, target, weight, reduction):
    out = grad * (x - target) / ((1 - x) * x).clamp(min=nn_kernels.BCE_EPSILON)
    return weighted(out, weight, reduction, x)


def binary_cross_entropy_target_backward(grad, x, target, weight, reduction):
    return weighted(grad * ((-x).log1p() - x.log()), weight, reduction, x)


def log_sigmoid(x):
    return -((-x).relu() + (-x.abs()).exp().log1p())


def binary_cross_entropy_with_logits_backward(grad, x, target, weight, pos_weight, reduction):
    if pos_weight is not None:
        scaled = constant(pos_weight, x) * target
        out = (scaled + 1 - target) * x.sigmoid() - scaled
    else:
        out = x.sigmoid() - target
    return weighted(out * grad, weight, reduction, x)


def binary_cross_entropy_with_logits_target_backward(
    grad, x, target, weight, pos_weight, reduction
):
    if pos_weight is not None:
        out = log_sigmoid(-x) - log_sigmoid(x) * constant(pos_weight, x)
    else:
        out = -x
    return weighted(out * grad, weight, reduction, x)


_LAYER_FUNCTIONS = {
    "channel_sum": channel_sum,
    "convolution_input_grad": convolution_input_grad,
    "convolution_weight_grad": convolution_weight_grad,
    "im2col": im2col,
    "col2im": col2im,
    "max_pool2d_backward": max_pool2d_backward,
    "avg_pool2d": avg_pool2d,
    "avg_pool2d_backward": avg_pool2d_backward,
    "constant_pad_nd": constant_pad_nd,
    "index_pad_backward": index_pad_backward,
    "embedding_backward": embedding_backward,
    "gelu_backward": gelu_backward,
    "norm_backward": norm_backward,
    "mean_scale": mean_scale,
    "nll_loss_value": lambda x, *options: run_op(OPS["nll_loss"], (x,), options)[0],
    "binary_cross_entropy_backward": binary_cross_entropy_backward,
    "binary_cross_entropy_target_backward": binary_cross_entropy_target_backward,
    "binary_cross_entropy_with_logits_backward": binary_cross_entropy_with_logits_backward,
    "binary_cross_entropy_with_logits_target_backward": (
        binary_cross_entropy_with_logits_target_backward
    ),
}


# --- element-wise functions, more (trigonometric, hyperbolic, activations) ---------------------


def glu_backward(grad, self, dim):
    half = self.shape[dim] // 2
    first, gate = self.narrow(dim, 0, half), self.narrow(dim, half, half).sigmoid()
    return nb.cat([grad * gate, grad * first * gate * (1 - gate)], dim)


def mish_backward(grad, self):
    tanh_softplus = nb.nn.functional.softplus(self).tanh()
    return grad * (tanh_softplus + self * self.sigmoid() * (1 - tanh_softplus * tanh_softplus))


def sinc_backward(grad, self):
    scaled = self * math.pi
    squared = self * self * math.pi
    out = grad * (scaled * scaled.cos() - scaled.sin()) / squared
    return nb.where(squared == 0, 0.0, out)


def sgn_backward(grad, self, result):
    size = self.abs()
    return ((grad - result * result * grad) / (2 * size)).masked_fill(size == 0, 0.0)


def logit_backward(grad, self, eps):
    out = grad / (self * (1 - self))
    if eps is None:
        return out.masked_fill((self < 0) | (self > 1), math.nan)
    return out.masked_fill((self < eps) | (self > 1 - eps), 0.0)


def copysign_backward(grad, self, result):
    return grad * (result / self).masked_fill(self == 0, 0.0)


def soft_margin_loss_backward(grad, self, target, reduction):
    target = nb.as_tensor(np.asarray(target, dtype=self.dtype.numpy))
    scale = nn_kernels.mean_scale(reduction, self.numel())
    return -target * (-target * self).sigmoid() * grad / scale


_ELEMENTWISE_MORE_FUNCTIONS = {
    "soft_margin_loss_backward": soft_margin_loss_backward,
    "sinc_backward": sinc_backward,
    "sgn_backward": sgn_backward,
    "logit_backward": logit_backward,
    "xlogy": nb.xlogy,
    "copysign_backward": copysign_backward,
    "isfinite": nb.isfinite,
    "elu_result_alpha": _elu_result_alpha,
    "single": _single,
    "not_implemented": _not_implemented,
    "glu_backward": glu_backward,
    "sinh": nb.sinh,
    "cosh": nb.cosh,
    "tanh": nb.tanh,
    "sigmoid": nb.sigmoid,
    "rsqrt": nb.rsqrt,
    "erfinv": nb.erfinv,
    "mish_backward": mish_backward,
}


# --- the backward functions that are table ops -------------------------------------------------


def run_backward_function(spec, *args):
    """A backward function that is a table op (derivatives.BACKWARD_FUNCTIONS), called from a
    formula under create_graph: it runs its op, which records its node."""
    count = len(spec.inputs)
    # (a saved array read back for the formula is a Tensor; the kernel takes an array)
    attrs = tuple(reading.values(a) if isinstance(a, Tensor) else a for a in args[count:])
    return run_op(spec, args[:count], attrs)


# --- the namespace ---------------------------------------------------------------------------


@functools.cache
def tensor_namespace():
    """Every name a formula may call, as Tensor functions (the keys of ARRAY_NAMESPACE). Built
    once, on the first differentiable backward, when the op table is complete; later entries
    win where two modules give a name."""
    return {
        **_CORE_FUNCTIONS,
        **_LAYER_FUNCTIONS,
        **formula_more.tensor_namespace(),
        **_ELEMENTWISE_MORE_FUNCTIONS,
        **layer_kernels.tensor_namespace(),
        **formula_linalg.tensor_namespace(),
        **formula_linalg_lu.tensor_namespace(),
        **distance_kernels.tensor_namespace(),
        **formula_linalg_householder.tensor_namespace(),
        **formula_linalg_lstsq.tensor_namespace(),
        **misc_kernels.tensor_namespace(),
        **nn_extra_kernels.tensor_namespace(),
        **layer_kernels_more.tensor_namespace(),
        **special_kernels.tensor_namespace(),
        **rnn_kernels.tensor_namespace(),
        **renorm_kernels.tensor_namespace(),
        **double_backward_kernels.tensor_namespace(),
        **norm_conv_double_backward.tensor_namespace(),
        **grid_sample_kernels.tensor_namespace(),
        **scatter_reduce_kernels.tensor_namespace(),
        **ddmore_kernels.tensor_namespace(),
        **convs_kernels.tensor_namespace(),
        **idx_kernels.tensor_namespace(),
        **fake_quantize_kernels.tensor_namespace(),
        **{
            name: functools.partial(run_backward_function, OPS[name]) for name in BACKWARD_FUNCTIONS
        },
    }
