"""The functions a derivative formula may call, on NumPy arrays: ``ARRAY_NAMESPACE``.

Plain ``backward()`` compiles each formula against ``ARRAY_NAMESPACE`` and builds no graph.
Backward with ``create_graph=True`` compiles the same text against the Tensor versions of the same
names (``formula_tensor.tensor_namespace()``), so the gradient itself has a graph (second
derivatives); tests/test_formula_namespaces.py checks that both have the same names. Operators
(``*``, ``+``, ``@``, ``**``, ``>``) need no entry: arrays and Tensors both have them.

NumPy only: the engine imports this module (``sum_to`` reduces a broadcast gradient).
"""

import math

import numpy as np

from nbgrad.ops.storage_geometry import as_strided_source


def _normalize_dims(dims, ndim):
    if ndim == 0:  # a 0-d tensor's dim 0 (or -1) names no real axis
        return ()
    if isinstance(dims, int):  # the common case, in every backward of a reduction over one dim
        return (dims % ndim,)
    if not dims:  # None or (): PyTorch reduces over every dim
        return tuple(range(ndim))
    return tuple(sorted(d % ndim if ndim else 0 for d in dims))


def _reduced_shape(sizes, dims, keepdim):
    """The shape ``grad`` must take to broadcast back over ``sizes`` after a reduction."""
    dims = _normalize_dims(dims, len(sizes))
    return tuple(1 if i in dims else s for i, s in enumerate(sizes))


# --- NumPy implementations -------------------------------------------------------------------


def sum_to(grad, shape):
    """Sum ``grad`` down to ``shape``: the inverse of broadcasting it up."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    if shape and grad.shape[1:] == shape:  # a bias broadcast over a batch: the most common
        return np.add.reduce(grad, axis=0)
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1
    )
    # np.add.reduce is what ndarray.sum calls, without its Python-level wrapper.
    summed = np.add.reduce(grad, axis=axes, keepdims=True) if axes else grad
    return summed.reshape(shape)


_SMALL = 4096  # elements


def _expand(grad, shape):
    """``grad`` broadcast to ``shape`` without copying (a read-only view)."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    if not grad.flags.c_contiguous:
        if grad.size > _SMALL:
            return np.broadcast_to(grad, shape)
        # A small gradient is often itself a broadcast view (a mean's, reshaped by a sum's
        # backward): copying it costs less than np.broadcast_to's checks.
        grad = np.ascontiguousarray(grad)
    # np.broadcast_to's own checks cost more than the whole view on small arrays: build the
    # view directly, stride 0 along every dimension that is repeated.
    lead = len(shape) - grad.ndim
    strides = (0,) * lead + tuple(
        0 if size == 1 else stride for size, stride in zip(grad.shape, grad.strides)
    )
    view = np.ndarray(shape, grad.dtype, grad, 0, strides)
    view.flags.writeable = False
    return view


def _restore_reduced(grad, sizes, dims, keepdim):
    """Put back the dimensions a reduction removed, so ``grad`` broadcasts against the input."""
    return grad.reshape(_reduced_shape(sizes, dims, keepdim))  # NumPy scalars have it too


def select_backward(grad, sizes, dim, index):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    key = (slice(None),) * dim + (index,)
    out[key] = grad
    return out


def slice_backward(grad, sizes, dim, start, end, step):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    key = (slice(None),) * dim + (slice(start, end, step),)
    out[key] = grad
    return out


def index_backward(grad, sizes, indices):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    np.add.at(out, indices, grad)
    return out


def _gather_backward(grad, sizes, dim, index):
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    np.add.at(out, _gather_key(index, dim), grad)
    return out


def _gather_key(index, dim):
    """The fancy-index key that reads ``input.gather(dim, index)`` out of ``input``."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def _value_selecting_backward(grad, sizes, dim, indices, keepdim):
    """Backward of max/min along a dim: the gradient goes to the element that was selected."""
    if not sizes:  # a 0-d input: its one element was selected
        return grad
    if not keepdim:
        grad = np.expand_dims(grad, dim)
        indices = np.expand_dims(indices, dim)
    out = np.zeros(tuple(sizes), dtype=grad.dtype)
    np.put_along_axis(out, indices, grad, axis=dim)
    return out


def _evenly_distribute(grad, self, result):
    """Backward of a full max/min: ties share the gradient equally, as PyTorch does."""
    mask = self == result
    return np.where(mask, grad / mask.sum(), 0).astype(grad.dtype, copy=False)


def _amax_backward(grad, self, result, dims, keepdim):
    grad = _restore_reduced(grad, self.shape, dims, keepdim)
    result = _restore_reduced(result, self.shape, dims, keepdim)
    mask = self == result
    count = mask.sum(axis=_normalize_dims(dims, self.ndim) or None, keepdims=True)
    return np.where(mask, grad / count, 0).astype(grad.dtype, copy=False)


def _clamp_backward(grad, self, min, max):  # noqa: A002 - PyTorch's argument names
    keep = np.ones(self.shape, dtype=bool)
    if min is not None:
        keep &= self >= min
    if max is not None:
        keep &= self <= max
    return np.where(keep, grad, 0).astype(grad.dtype, copy=False)


def _split_along(grad, dim, sizes):
    """Cut ``grad`` into the pieces that were concatenated along ``dim``."""
    bounds = np.cumsum([s[dim] for s in sizes])[:-1]
    return list(np.split(grad, bounds, axis=dim))


def _unstack(grad, dim, count):
    """The slices of ``grad`` along ``dim``: views of it, as PyTorch's unbind gives. So when two
    of them meet (``torch.stack([w, w])``) their sum is a new array, not one added to in place,
    and ``w.grad._version`` stays 0 as in PyTorch."""
    dim = dim % grad.ndim
    return [grad[(slice(None),) * dim + (i,)] for i in range(count)]


def _permute_back(grad, dims):
    # dims are saved as given: -1 is the last dim
    return np.transpose(grad, np.argsort([d % len(dims) for d in dims]))


def _reduced_count(sizes, dims):
    """How many input elements each output element of a reduction over ``dims`` summarises."""
    count = 1
    for d in _normalize_dims(dims, len(sizes)):
        count *= sizes[d]
    return count


# Arithmetic on 0-d arrays gives NumPy scalars (``np.float64``), so a gradient that flowed through
# a 0-d tensor may arrive as one: it has a dtype but cannot be written into.


def _as_strided_backward(grad, self_geometry, size, stride, storage_offset):
    sizes = tuple(self_geometry[0])
    source = as_strided_source(self_geometry, size, stride, storage_offset)
    inside = source >= 0  # the gradient of storage outside the input goes nowhere
    # Added, not assigned: elements a view repeats (stride 0) collect all their gradients.
    flat = index_backward(grad[inside], (int(np.prod(sizes)),), (source[inside],))
    return flat.reshape(sizes)


def _zero_at(grad, key):
    out = np.array(grad)  # a copy, and an array even when grad is a NumPy scalar
    out[key] = 0
    return out


def _where(condition, a, b):
    out = np.where(condition, a, b)
    like = a if isinstance(a, (np.ndarray, np.generic)) else b
    return out.astype(like.dtype, copy=False)


def _masked_zero(grad, mask):
    return np.where(mask, 0, grad).astype(grad.dtype, copy=False)


def _sum_dim(grad, dim, keepdim):
    if keepdim:
        return reduce_keeping(np.add, grad, dim if grad.ndim else None)
    return np.add.reduce(grad, axis=dim if grad.ndim else None, keepdims=keepdim)


SHORT_ROW = 16  # elements


def reduce_keeping(ufunc, x, axis):
    """``ufunc.reduce`` over ``axis``, keeping it. NumPy reduces each short row of a matrix in
    turn, slowly (the max over 10 classes of each of 1,000 samples: 50 us); down the columns of
    the transposed copy it is one vectorised pass (5 us). Softmax over classes is this case."""
    if x.ndim == 2 and axis in (1, -1, (1,), (-1,)) and x.shape[1] <= SHORT_ROW <= x.shape[0]:
        return ufunc.reduce(np.ascontiguousarray(x.T), axis=0)[:, None]
    return ufunc.reduce(x, axis=axis, keepdims=True)


def _transpose(grad, dim0, dim1):
    return np.swapaxes(grad, dim0, dim1) if grad.ndim else grad


def _squeeze(grad, dim):
    return np.squeeze(grad, dim) if grad.ndim else grad


def power(x, exponent):
    """``x ** exponent`` for an array and a Python number, as PyTorch's CPU kernel computes it
    where it matters: a float array to the power 3 is ``x * x * x`` and to the power -2 is
    ``1 / (x * x)``, bit for bit; other integer powers up to 8 are products too (within 3 ulp of
    PyTorch's ``pow``). NumPy's float ``power`` of negative numbers takes about 60 ns an element:
    20x PyTorch's time for the polynomial tutorials' ``x ** 3`` (benchmarks/power.py)."""
    if x.dtype.kind != "f" or isinstance(exponent, bool) or exponent != int(exponent):
        return np.power(x, exponent)
    n = int(exponent)
    if n == 3:
        return x * x * x
    if n == -2:
        return 1 / (x * x)
    if not 4 <= abs(n) <= 8:
        return np.power(x, exponent)
    result, square, k = None, x, abs(n)
    while k:  # binary powering: x ** 13 = x * x ** 4 * x ** 8
        if k & 1:
            result = square if result is None else result * square
        k >>= 1
        if k:
            square = square * square
    return result if n > 0 else 1 / result


def _scalar_log(value):
    """The log of a Python number, nan below zero as ``torch.log`` gives (``math.log`` raises)."""
    if value > 0:
        return math.log(value)
    return -math.inf if value == 0 else math.nan


def _rounded_divide(a, b, rounding_mode):
    """``torch.div(a, b, rounding_mode=...)`` on arrays."""
    quotient = np.true_divide(a, b)
    return np.floor(quotient) if rounding_mode == "floor" else np.trunc(quotient)


ARRAY_NAMESPACE = {
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "sqrt": np.sqrt,
    "sign": np.sign,
    "where": _where,
    "zeros_like": np.zeros_like,
    "reshape": np.reshape,
    "transpose": _transpose,
    "permute_back": _permute_back,
    "matrix_t": lambda matrix: matrix.T,
    "unsqueeze": np.expand_dims,
    "outer": np.multiply.outer,
    "sum_to": sum_to,
    "sum_dim": _sum_dim,
    "expand": _expand,
    "restore_reduced": _restore_reduced,
    "select_backward": select_backward,
    "slice_backward": slice_backward,
    "index_backward": index_backward,
    "gather_backward": _gather_backward,
    "value_selecting_backward": _value_selecting_backward,
    "evenly_distribute": _evenly_distribute,
    "amax_backward": _amax_backward,
    "clamp_backward": _clamp_backward,
    "split_along": _split_along,
    "unstack": _unstack,
    "masked_zero": _masked_zero,
    "swap_last": lambda a: np.swapaxes(a, -1, -2),
    "squeeze": _squeeze,
    "reduced_count": _reduced_count,
    "scalar_log": _scalar_log,
    "power": power,
    "rounded_divide": _rounded_divide,
    "scalar_times": lambda number, a: number * a,
    "scalar_plus": lambda a, number: a + number,
    "zero_at": _zero_at,
    "as_strided_backward": _as_strided_backward,
    "astype": lambda a, dt: a.astype(dt.numpy, copy=False),
}


# --- neural-network layers -------------------------------------------------------------------
# The functions the layer formulas of derivatives.py call. The NumPy versions are the kernels
# of nn_kernels; their Tensor versions are in formula_tensor.py.

from nbgrad.ops import nn_kernels  # noqa: E402


def _channel_sum(grad):
    """Sum over every dim but the channels (dim 1): the gradient of a per-channel bias."""
    return nn_kernels.channel_sum(grad)


def _embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
    return nn_kernels.embedding_backward(
        grad, indices, num_weights, padding_idx, scale_grad_by_freq
    )


ARRAY_NAMESPACE.update(
    {
        "channel_sum": _channel_sum,
        "convolution_input_grad": nn_kernels.convolution_input_grad,
        "convolution_weight_grad": nn_kernels.convolution_weight_grad,
        "im2col": nn_kernels.unbatched_im2col,
        "col2im": nn_kernels.unbatched_col2im,
        "max_pool2d_backward": nn_kernels.max_pool2d_backward,
        "avg_pool2d": nn_kernels.avg_pool2d,
        "avg_pool2d_backward": lambda grad, x, *options: nn_kernels.avg_pool2d_backward(
            grad, x.shape, *options
        ),
        "constant_pad_nd": lambda grad, pad: nn_kernels.constant_pad_nd(grad, pad, 0),
        "index_pad_backward": nn_kernels.index_pad_backward,
        "embedding_backward": _embedding_backward,
        "gelu_backward": nn_kernels.gelu_backward,
        "norm_backward": nn_kernels.norm_backward,
        "mse_loss_backward": nn_kernels.mse_loss_backward,
        "mean_scale": lambda reduction, x: nn_kernels.mean_scale(reduction, np.size(x)),
        "nll_loss_value": lambda x, target, weight, reduction, ignore_index: nn_kernels.nll_loss(
            x, target, weight, reduction, ignore_index
        )[0],
        "binary_cross_entropy_backward": nn_kernels.binary_cross_entropy_backward,
        "binary_cross_entropy_target_backward": nn_kernels.binary_cross_entropy_target_backward,
        "binary_cross_entropy_with_logits_backward": (
            nn_kernels.binary_cross_entropy_with_logits_backward
        ),
        "binary_cross_entropy_with_logits_target_backward": (
            nn_kernels.binary_cross_entropy_with_logits_target_backward
        ),
    }
)


# The helpers of the reductions, scans and reorderings in derivatives.py's later sections.
from nbgrad.ops import formula_more  # noqa: E402

ARRAY_NAMESPACE.update(formula_more.ARRAY_NAMESPACE)


# --- element-wise functions, more (trigonometric, hyperbolic, activations) ----------------------
# The functions the formulas of derivatives.py's "element-wise functions, more" sections call.

_erf_exact = np.vectorize(math.erf, otypes=[np.float64])
_erfc_exact = np.vectorize(math.erfc, otypes=[np.float64])


def erfc(x):
    """1 - erf(x), exact to double precision in the tails too (math.erfc per element)."""
    return _erfc_exact(x)


def _sigmoid(x):
    return 0.5 * np.tanh(0.5 * x) + 0.5


def sigmoid_array(x):
    return 1 / (1 + np.exp(-x))


def _glu_backward(grad, self, dim):
    first, second = np.split(self, 2, axis=dim)
    gate = sigmoid_array(second)
    return np.concatenate([grad * gate, grad * first * gate * (1 - gate)], axis=dim)


def erfinv(y):
    """The inverse error function in float64 (NumPy has none): Giles' single-precision rational
    approximation, refined by two Halley steps on erf (or on erfc in the tails, where erf's
    values crowd together), which bring it to double precision."""
    y = np.asarray(y, dtype=np.float64)
    a = np.abs(y)
    w = -np.log((1.0 - a) * (1.0 + a))
    small = w < 5.0
    ws = np.where(small, w - 2.5, 0.0)
    p = 2.81022636e-08
    for c in (
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ):
        p = c + p * ws
    wl = np.sqrt(np.where(small, 5.0, w)) - 3.0
    q = -0.000200214257
    for c in (
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ):
        q = c + q * wl
    x = np.where(small, p, q) * a
    inside = (a < 1) & (a > 0)
    x = np.where(inside, x, 0.0)
    tail = a > 0.5
    for _ in range(3):
        slope = 1.1283791670955126 * np.exp(-x * x)  # d erf / dx
        # Near zero Halley on erf(x) = a; in the tails Newton on log(erfc(x)) = log(1 - a), which
        # is nearly linear there (1 - a is exact for a > 0.5).
        complement = _erfc_exact(np.where(tail, x, 0.0))
        log_step = (np.log(complement) - np.log1p(-a)) * complement / slope
        step = (_erf_exact(x) - a) / slope
        step = step / (1.0 + x * step)
        x = x - np.where(inside, np.where(tail, -log_step, step), 0.0)
    x = np.where(a == 1, np.inf, x)
    x = np.where((a > 1) | np.isnan(a), np.nan, x)
    return np.copysign(x, y)


def _log_sigmoid_backward(grad, self, buffer):
    """PyTorch's CPU formula, from the buffer ``exp(-|x|)`` the forward kept."""
    fraction = buffer / (1 + buffer)
    return grad * np.where(self < 0, 1 - fraction, fraction).astype(grad.dtype, copy=False)


def _mish_backward(grad, self):
    sigmoid = _sigmoid(self)
    tanh_softplus = np.tanh(np.logaddexp(0, self))
    return grad * (tanh_softplus + self * sigmoid * (1 - tanh_softplus * tanh_softplus))


def _not_implemented(what):
    raise NotImplementedError(f"the derivative for '{what}' is not implemented.")


def _single(number):
    """A Python number rounded to float32, as PyTorch takes some scalars of its formulas (celu's
    ``1.0 / alpha.toFloat()``: alpha in float32, the quotient in float64)."""
    return float(np.float32(number))


def _elu_result_alpha(alpha):
    """The backward of an in-place elu reads its result, which a negative alpha makes ambiguous:
    PyTorch refuses, when backward runs."""
    if alpha < 0:
        raise RuntimeError(
            "In-place elu backward calculation is triggered with a negative slope which is not "
            "supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead."
        )
    return alpha


def _sinc_backward(grad, self):
    scaled = self * np.pi
    out = grad * (scaled * np.cos(scaled) - np.sin(scaled)) / (self * self * np.pi)
    return np.where(self * self * np.pi == 0, 0, out).astype(grad.dtype, copy=False)


def _sgn_backward(grad, self, result):
    size = np.abs(self)
    out = (grad - result * result * grad) / (2 * size)
    return np.where(size == 0, 0, out).astype(grad.dtype, copy=False)


def _logit_backward(grad, self, eps):
    out = grad / (self * (1 - self))
    if eps is None:
        return np.where((self < 0) | (self > 1), np.nan, out).astype(grad.dtype, copy=False)
    return np.where((self < eps) | (self > 1 - eps), 0, out).astype(grad.dtype, copy=False)


def _xlogy_array(x, y):
    out = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), 0, out).astype(out.dtype, copy=False)


def _copysign_backward(grad, self, result):
    ratio = np.where(self == 0, 0, result / self)
    return (grad * ratio).astype(grad.dtype, copy=False)


def _smooth_l1_loss_backward(grad, self, target, reduction, beta):
    diff = self - target
    slope = np.where(np.abs(diff) < beta, diff / beta, np.sign(diff))
    return (grad * slope / nn_kernels.mean_scale(reduction, diff.size)).astype(diff.dtype)


def _huber_loss_backward(grad, self, target, reduction, delta):
    diff = self - target
    slope = np.clip(diff, -delta, delta)
    return (grad * slope / nn_kernels.mean_scale(reduction, diff.size)).astype(diff.dtype)


def _soft_margin_loss_backward(grad, self, target, reduction):
    z = np.exp(-target * self)
    return (-target * z / (1 + z) * grad / nn_kernels.mean_scale(reduction, self.size)).astype(
        self.dtype
    )


ARRAY_NAMESPACE.update(
    {
        "smooth_l1_loss_backward": _smooth_l1_loss_backward,
        "huber_loss_backward": _huber_loss_backward,
        "soft_margin_loss_backward": _soft_margin_loss_backward,
        "sinc_backward": _sinc_backward,
        "sgn_backward": _sgn_backward,
        "logit_backward": _logit_backward,
        "xlogy": _xlogy_array,
        "copysign_backward": _copysign_backward,
        "isfinite": np.isfinite,
        "elu_result_alpha": _elu_result_alpha,
        "single": _single,
        "not_implemented": _not_implemented,
        "glu_backward": _glu_backward,
        "sinh": np.sinh,
        "cosh": np.cosh,
        "tanh": np.tanh,
        "sigmoid": _sigmoid,
        "rsqrt": lambda x: 1 / np.sqrt(x),
        "erfinv": lambda x: erfinv(x).astype(x.dtype, copy=False),
        "log_sigmoid_backward": _log_sigmoid_backward,
        "mish_backward": _mish_backward,
    }
)


# The helpers of derivatives.py's "linear algebra (torch.linalg)" section.
from nbgrad.ops import formula_linalg  # noqa: E402

ARRAY_NAMESPACE.update(formula_linalg.ARRAY_NAMESPACE)
