"""Fake quantization (``torch.fake_quantize_per_tensor_affine`` and its family) in NumPy.

A value is quantized to ``q = round(x / scale) + zero_point`` (rounding half to even), clamped to
``[quant_min, quant_max]`` and mapped back to ``(q - zero_point) * scale``. The boolean mask says
which values fell inside the range before clamping: the gradient passes there only.

PyTorch's CPU kernels compute in single precision where their C++ types are ``float`` (the
scale is a float32, so ``x * (1 / scale)`` is a float32 product for float32 and float16 input,
a float64 one for float64 input), and the per-tensor kernel multiplies back in float32 even
for float64 input. The functions below follow those types step by step, so that the values and
the masks are PyTorch's bit for bit. Where the compiler fuses a product and a sum into one
fused multiply-add (``zero_point + x * inv_scale``, ``fake * 1 - x``), so do they (``_fma32``).

The learnable variants (``_fake_quantize_learnable_per_{tensor,channel}_affine``) also give
gradients for the scale and the zero point (the LSQ estimator, scaled by ``grad_factor``); their
backward is a function of its own that PyTorch cannot differentiate again (a gradient taken with
``create_graph=True`` has a ``NotImplemented`` grad_fn).
"""

import functools

import numpy as np

from nbgrad import dtypes
from nbgrad.ops.grid_sample_kernels import SharedCall, wanted

F32 = np.float32


def _fma32(a, b, c):
    """``a * b + c`` for float32 operands rounded once, as an FMA instruction computes it (the
    float64 product of two float32 numbers is exact)."""
    f64 = np.float64
    return (np.asarray(a, f64) * np.asarray(b, f64) + np.asarray(c, f64)).astype(F32)


def _compute_type(array):
    """The C++ type of ``input * inv_scale``: double for float64 input, float otherwise."""
    return np.float64 if array.dtype == np.float64 else F32


def _unsupported(array, kernel):
    if array.dtype.kind != "f":
        name = dtypes.SCALAR_TYPE_NAMES[dtypes.from_numpy_dtype(array.dtype)]
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


# --- per tensor ---------------------------------------------------------------------------------


def check_range(quant_min, quant_max):
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def per_tensor(x, scale, zero_point, quant_min, quant_max, enabled=True):
    """(output, mask) for one float scale and one integer zero point."""
    _unsupported(x, "fake_quantize_tensor_cachemask_kernel_type_handling")
    if not enabled:
        return x.copy(), np.ones(x.shape, bool)
    scale = F32(scale)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv_scale = F32(1.0) / scale
        kind = _compute_type(x)
        # zero_point + nearbyint(x * inv_scale): the integer converted to the float's type
        shifted = kind(zero_point) + np.rint(x.astype(kind) * kind(inv_scale))
        mask = (kind(quant_min) <= shifted) & (shifted <= kind(quant_max))
        # std::fmax/fmin skip a NaN (a zero scale makes 0 * inf): np.fmax/np.fmin do too
        clamped = np.fmin(np.fmax(shifted.astype(np.float64), quant_min), quant_max)
        quantized = clamped.astype(np.int64)
        # (qval - zero_point) * scale: an int64 times a float, in float32 whatever the input
        output = (quantized - np.int64(zero_point)).astype(F32) * scale
    return output.astype(x.dtype), mask


def scalar_of(tensor_array):
    """``tensor.item()``: PyTorch's error for a tensor of more than one element."""
    if tensor_array.size != 1:
        raise RuntimeError(
            f"a Tensor with {tensor_array.size} elements cannot be converted to Scalar"
        )
    return tensor_array.reshape(()).item()


def to_int(value):
    """c10's ``Scalar::toInt``: a float is cut toward zero."""
    return int(value)


# --- per channel --------------------------------------------------------------------------------


def _along(vector, ndim, axis):
    shape = [1] * ndim
    shape[axis] = vector.shape[0]
    return vector.reshape(shape)


def per_channel(x, scale, zero_point, axis, quant_min, quant_max):
    """(output, mask) with one float32 scale and one zero point per slice along ``axis``."""
    _unsupported(x, "fake_quantize_channel_cachemask_cpu_type_handling")
    scale = _along(scale.astype(F32), x.ndim, axis)
    zero_point = _along(zero_point, x.ndim, axis)
    kind = _compute_type(x)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv_scale = F32(1.0) / scale
        product = x.astype(kind) * inv_scale.astype(kind)
        if zero_point.dtype.kind == "f":
            # lrintf(zero_point + x * inv_scale): one FMA in float32 (float64 input: the double
            # sum rounded to float), then to an integer
            zero = zero_point.astype(F32)
            if kind is F32:
                total = _fma32(x.astype(F32), inv_scale, zero)
            else:
                total = (zero.astype(kind) + product).astype(F32)
            quantized = np.rint(total).astype(np.int64)
        else:
            zero = zero_point.astype(np.int64)
            quantized = (zero.astype(kind) + np.rint(product)).astype(np.int64)
        mask = (quant_min <= quantized) & (quantized <= quant_max)
        clamped = np.clip(quantized, quant_min, quant_max).astype(np.float64)
        # computed in double (an integer made a double), then stored in the input's type
        output = (clamped - zero.astype(np.float64)) * scale.astype(np.float64)
    if x.dtype == np.float16:
        output = output.astype(F32)
    return output.astype(x.dtype), mask


def check_per_channel(x, scale, zero_point, axis, quant_min, quant_max):
    """PyTorch's checks of fake_quantize_per_channel_affine_cachemask, in its order."""
    if scale.dtype != np.float32:
        name = dtypes.SCALAR_TYPE_NAMES[dtypes.from_numpy_dtype(scale.dtype)]
        raise RuntimeError(f"Scale must be Float or BFloat16, found {name}")
    if zero_point.dtype not in (np.int32, np.float32, np.float16):
        name = dtypes.SCALAR_TYPE_NAMES[dtypes.from_numpy_dtype(zero_point.dtype)]
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found {name}")
    if scale.ndim != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.ndim != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.size != zero_point.size:
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if not -x.ndim <= axis < max(x.ndim, 1):
        low, high = -max(x.ndim, 1), max(x.ndim, 1) - 1
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{low}, {high}], but got {axis})"
        )
    if scale.size != x.shape[axis]:
        raise RuntimeError(
            "dimensions of scale and zero-point are not consistent with input tensor"
        )
    check_range(quant_min, quant_max)
    if (
        zero_point.dtype.kind != "f"
        and zero_point.size
        and (zero_point.min() < quant_min or zero_point.max() > quant_max)
    ):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    if axis < 0:  # the size check above read a negative axis; ATen refuses it here
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")


# --- the learnable variants' backward -----------------------------------------------------------


def _float_checks(grad, self, scale, zero_point):
    named = (("dY_", grad), ("X_", self), ("scale_", scale), ("zero_point_", zero_point))
    for name, array in named:
        if array.dtype != np.float32:
            raise RuntimeError(
                f"Expected {name}.scalar_type() == ScalarType::Float to be true, but got false.  "
                "(Could this error message be improved?  If so, please report an enhancement "
                "request to PyTorch.)"
            )


def learnable_per_tensor_zero_point(zero_point, quant_min, quant_max, forward):
    """The zero point as an integer: rounded half to even in the forward, but ``+ 0.5`` and cut
    toward zero in the backward (PyTorch's ``_get_zero_point_from_tensor``)."""
    value = F32(zero_point.reshape(-1)[0])
    value = np.rint(value) if forward else value + F32(0.5)
    return int(min(max(value, F32(quant_min)), F32(quant_max)))


def _learnable_terms(grad, self, scale, zero_point, quant_min, quant_max, grad_factor):
    """Element-wise gradients for x, the scale and the zero point (float32, ``scale`` and
    ``zero_point`` broadcast against ``self``; the zero point already rounded)."""
    factor = F32(grad_factor)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv_scale = F32(1.0) / scale
        rounded = np.rint(_fma32(self, inv_scale, zero_point))
        below, above = rounded < quant_min, rounded > quant_max
        d_self = grad * ~(below | above)
        # the fake-quantized value less x: (q - zero_point) * scale - x, one FMA
        error = _fma32(np.clip(rounded, quant_min, quant_max) - zero_point, scale, -self)
        inside = (grad * error) * inv_scale * factor
        d_scale = np.where(
            below,
            grad * (F32(quant_min) - zero_point) * factor,
            np.where(above, grad * (F32(quant_max) - zero_point) * factor, inside),
        )
        d_zero_point = np.where(below | above, (grad * F32(-1)) * scale * factor, F32(0))
    return d_self.astype(F32), d_scale.astype(F32), d_zero_point.astype(F32)


def learnable_per_tensor_backward(grad, self, scale, zero_point, quant_min, quant_max, grad_factor):
    zero = learnable_per_tensor_zero_point(zero_point, quant_min, quant_max, False)
    _float_checks(grad, self, scale, zero_point)
    if not (quant_min <= 0 <= quant_max):
        raise RuntimeError(
            "`quant_min` should be less than or         equal to `quant_max`, and the "
            "quantization range should include 0."
        )
    if not quant_min <= zero <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    if self.size == 0:  # ATen hands back its inputs themselves
        return self, scale, zero_point
    scale_value = F32(scale.reshape(-1)[0])
    d_self, d_scale, d_zero = _learnable_terms(
        grad, self, scale_value, F32(zero), quant_min, quant_max, grad_factor
    )
    return (
        d_self,
        aten_float32_sum(_in_memory_order(d_scale, self)).reshape(1),
        aten_float32_sum(_in_memory_order(d_zero, self)).reshape(1),
    )


def learnable_per_channel_zero_point(zero_point, quant_min, quant_max):
    return np.clip(np.rint(zero_point), quant_min, quant_max).astype(zero_point.dtype)


def learnable_per_channel_backward(
    grad, self, scale, zero_point, axis, quant_min, quant_max, grad_factor
):
    _float_checks(grad, self, scale, zero_point)
    if not (quant_min <= 0 <= quant_max):
        raise RuntimeError("Expecting `quant_min` <= 0 and `quant_max` >= 0")
    if scale.ndim != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.ndim != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.size != zero_point.size:
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if scale.size != self.shape[axis]:
        raise RuntimeError(
            "dimensions of scale and zero-point are not consistent with input tensor"
        )
    if self.size == 0:
        return self, scale, zero_point
    zero = learnable_per_channel_zero_point(zero_point, quant_min, quant_max)
    d_self, d_scale, d_zero = _learnable_terms(
        grad,
        self,
        _along(scale, self.ndim, axis),
        _along(zero, self.ndim, axis),
        quant_min,
        quant_max,
        grad_factor,
    )
    return d_self, _sum_per_channel(d_scale, self, axis), _sum_per_channel(d_zero, self, axis)


def _sum_per_channel(terms, self, axis):
    """Each channel's terms summed over every other dim, in ATen's order where that is a plain
    run along memory (the channels' dim outermost, as in a weight quantized per output
    channel); in NumPy's otherwise (equal up to the last bits). A 1-d input has no other dim,
    and ATen's sum over an empty list of dims sums everything: a 0-dim gradient, which autograd
    then refuses, as PyTorch's does."""
    if self.ndim < 2:
        return aten_float32_sum(terms)
    others = tuple(d for d in range(self.ndim) if d != axis)
    order = _memory_order(self)
    if order[0] != axis:
        return terms.sum(axis=others, dtype=F32)
    rows = np.moveaxis(terms, axis, 0)
    return np.array(
        [aten_float32_sum(_in_memory_order(row, np.moveaxis(self, axis, 0)[0])) for row in rows],
        F32,
    )


# --- ATen's float32 sum -------------------------------------------------------------------------
# The learnable variants sum their per-element scale and zero-point gradients with at::sum, whose
# CPU kernel adds in a fixed order of its own (SumKernel.cpp's cascade_sum): up to 7 values one by
# one after four running sums; longer runs as 8-lane vectors, four vector accumulators, each
# level of 16 (or more) loads folded into the next, the lanes added last. Followed here so that
# the sums are PyTorch's bit for bit (for up to 32768 values: beyond, ATen splits the run over
# threads, and NumPy's pairwise sum is used).

_LANES = 8  # floats in one of ATen's vectors (its sum kernel has no wider variant)
_ILP = 4  # independent accumulators
_LEVELS = 4
_SPLIT_ABOVE = 32768  # at::internal::GRAIN_SIZE


def _memory_order(array):
    """The dims of ``array`` from the one with the largest step to the smallest."""
    return sorted(range(array.ndim), key=lambda d: -abs(array.strides[d]))


def _in_memory_order(values, like):
    """``values`` (shaped as ``like``) flattened in the order ``like`` lies in memory."""
    return np.ascontiguousarray(values.transpose(_memory_order(like))).reshape(-1)


def _cascade(load, rows, size, zero):
    """ATen's multi_row_sum: ``rows`` running sums over ``size`` loads, folded level by level."""
    log2 = 0 if size <= 1 else (size - 1).bit_length()
    power = max(4, log2 // _LEVELS)
    step, mask = 1 << power, (1 << power) - 1
    levels = [[zero() for _ in range(rows)] for _ in range(_LEVELS)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            for k in range(rows):
                levels[0][k] = levels[0][k] + load(i, k)
            i += 1
        for j in range(1, _LEVELS):
            for k in range(rows):
                levels[j][k] = levels[j][k] + levels[j - 1][k]
                levels[j - 1][k] = zero()
            if i & (mask << (j * power)):
                break
    for rest in range(i, size):
        for k in range(rows):
            levels[0][k] = levels[0][k] + load(rest, k)
    for j in range(1, _LEVELS):
        for k in range(rows):
            levels[0][k] = levels[0][k] + levels[j][k]
    return levels[0]


def _row_sum(load, size, zero):
    """ATen's row_sum: four interleaved running sums, the leftover loads, then the four."""
    whole = size // _ILP
    partial = _cascade(lambda i, k: load(i * _ILP + k), _ILP, whole, zero)
    for i in range(whole * _ILP, size):
        partial[0] = partial[0] + load(i)
    for k in range(1, _ILP):
        partial[0] = partial[0] + partial[k]
    return partial[0]


def aten_float32_sum(values):
    """The float32 sum of a 1-d run of values, as at::sum adds them on the CPU."""
    values = np.asarray(values, F32).reshape(-1)
    count = values.size
    if count > _SPLIT_ABOVE:
        return values.sum(dtype=F32)
    with np.errstate(over="ignore", invalid="ignore"):
        if count < _LANES:
            return F32(_row_sum(lambda i: values[i], count, lambda: F32(0)))
        vectors = count // _LANES
        lanes = _row_sum(
            lambda i: values[i * _LANES : (i + 1) * _LANES], vectors, lambda: np.zeros(_LANES, F32)
        )
        total = F32(0)
        for value in values[vectors * _LANES :]:
            total = F32(total + value)
        for value in lanes:
            total = F32(total + value)
    return total


# --- the moving-average observer of torch.fused_moving_avg_obs_fake_quant -----------------------

SMALL_SCALE = F32(6.1e-5)  # fbgemm's cut-off: no scale in float16's subnormal range


def moving_average(running, current, averaging_const):
    """The running minimum or maximum moved towards the current one (taken as is while the
    running value is still infinite, as it starts), in float32."""
    const = F32(averaging_const)
    with np.errstate(over="ignore", invalid="ignore"):
        # (plain float32 arithmetic: this part of ATen is not built with FMA instructions)
        moved = running + const * (current - running)
    return np.where(np.isinf(running), current, moved).astype(F32)


def choose_qparams(low, high, quant_min, quant_max, symmetric):
    """fbgemm's ChooseQuantizationParams for one (min, max): (scale as a float32, zero point).
    Its types: min and max are floats, the scale a double until it is stored."""
    low, high = F32(low), F32(high)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if low < 0 and high > 0 and symmetric:
            symmetric_min = -((quant_max - quant_min) // 2 + 1)
            symmetric_max = (quant_max - quant_min) // 2
            widest = max(abs(low / F32(symmetric_min)), abs(high / F32(symmetric_max)))
            low = F32(np.float64(widest) * symmetric_min)
            high = F32(np.float64(widest) * symmetric_max)
        low, high = min(low, F32(0)), max(high, F32(0))
        span = np.float64(quant_max - quant_min)
        scale = (np.float64(high) - np.float64(low)) / span
        if F32(scale) == 0 or np.isinf(F32(1.0) / F32(scale)):
            scale = np.float64(0.1)
        if scale < SMALL_SCALE:
            original = F32(scale)
            scale = np.float64(SMALL_SCALE)
            if low == 0:
                high = F32(SMALL_SCALE * F32(quant_max - quant_min))
            elif high == 0:
                low = F32(-SMALL_SCALE * F32(quant_max - quant_min))
            else:
                amplifier = SMALL_SCALE / original
                low, high = F32(low * amplifier), F32(high * amplifier)
        from_min = quant_min - np.float64(low) / scale
        from_max = quant_max - np.float64(high) / scale
        error_min = abs(quant_min) - abs(np.float64(low) / scale)
        error_max = abs(quant_max) - abs(np.float64(high) / scale)
        zero = from_min if error_min < error_max else from_max
        if low < 0 and high > 0 and symmetric:
            zero = np.float64(quant_min + quant_max) / 2
        if zero < quant_min:
            zero_point = quant_min
        elif zero > quant_max:
            zero_point = quant_max
        else:
            zero_point = int(np.rint(zero))
    return F32(scale), zero_point


# --- the table's forwards -----------------------------------------------------------------------


def learnable_per_tensor(self, scale, zero_point, quant_min, quant_max, grad_factor):
    """The learnable per-tensor forward: the first scale (as a float32) and the first zero point
    (rounded half to even, clamped) quantize as fake_quantize_per_tensor_affine does."""
    zero = learnable_per_tensor_zero_point(zero_point, quant_min, quant_max, True)
    return per_tensor(self, F32(scale.reshape(-1)[0]), zero, quant_min, quant_max)[0]


def learnable_per_channel(self, scale, zero_point, axis, quant_min, quant_max, grad_factor):
    zero = learnable_per_channel_zero_point(zero_point, quant_min, quant_max).astype(np.int32)
    return per_channel(self, scale, zero, axis, quant_min, quant_max)[0]


def fused_fake_quantize(
    self, scale, zero_point, fake_quant_on, quant_min, quant_max, ch_axis, per_row_fake_quant
):
    """The fused observer's output and mask, once its qparams are chosen: the input as it is
    (and a full mask) while fake quantization is off."""
    if not fake_quant_on:
        return self.copy(), np.ones(self.shape, bool)
    if per_row_fake_quant:
        return per_channel(self, scale, zero_point, ch_axis, quant_min, quant_max)
    return per_tensor(
        self, F32(scale.reshape(-1)[0]), to_int(zero_point.reshape(-1)[0]), quant_min, quant_max
    )


# --- the formulas' functions --------------------------------------------------------------------


def _learnable_per_tensor_output(which, grad, self, scale, zero_point, *options):
    return learnable_per_tensor_backward(grad, self, scale, zero_point, *options)[which]


def _learnable_per_channel_output(which, grad, self, scale, zero_point, *options):
    return learnable_per_channel_backward(grad, self, scale, zero_point, *options)[which]


ARRAY_FUNCTIONS = {
    "fake_quantize_learnable_per_tensor_affine_backward_output": _learnable_per_tensor_output,
    "fake_quantize_learnable_per_channel_affine_backward_output": _learnable_per_channel_output,
}


@functools.cache
def _not_implemented_outputs_class():
    """NotImplementedNode with several outputs (the node class itself has one): made on first
    use, as the autograd package imports the op table."""
    from nbgrad.autograd.node import NotImplementedNode

    class NotImplementedOutputs(NotImplementedNode):
        __slots__ = ("num_outputs", "_output_meta")
        __module__ = "builtins"

    NotImplementedOutputs.__name__ = NotImplementedOutputs.__qualname__ = "NotImplemented"
    return NotImplementedOutputs


def _not_implemented_node(name, inputs, results):
    """One ``NotImplemented`` node for all of ``results``."""
    node = _not_implemented_outputs_class()(name, inputs)
    node.num_outputs = len(results)
    node._output_meta = tuple((r._data.shape, r._dtype) for r in results)
    return node


def _not_differentiable(name, backward, tensors, options):
    """A backward function over Tensors: its gradients share one grad_fn, ``NotImplemented``
    (PyTorch has no formula for the backward's own derivative), with an edge to each of its
    tensor arguments that requires grad."""
    from nbgrad.autograd import grad_mode
    from nbgrad.autograd.tensor import Tensor

    arrays = backward(*(t._data for t in tensors), *options)
    results = [Tensor._make(np.asarray(a)) for a in arrays]
    if grad_mode._enabled and any(t._requires_grad for t in tensors):
        node = _not_implemented_node(name, tensors, results)
        for number, result in enumerate(results):
            result._grad_fn, result._output_nr, result._requires_grad = node, number, True
    return results


def _learnable_per_tensor_backward_tensors(grad, self, scale, zero_point, *options):
    return _not_differentiable(
        "_fake_quantize_learnable_per_tensor_affine_backward",
        learnable_per_tensor_backward,
        (grad, self, scale, zero_point),
        options,
    )


def _learnable_per_channel_backward_tensors(grad, self, scale, zero_point, *options):
    return _not_differentiable(
        "_fake_quantize_learnable_per_channel_affine_backward",
        learnable_per_channel_backward,
        (grad, self, scale, zero_point),
        options,
    )


# One run of the backward function serves the three formulas of the node (one grad_fn).
_shared_per_tensor_backward = SharedCall(_learnable_per_tensor_backward_tensors)
_shared_per_channel_backward = SharedCall(_learnable_per_channel_backward_tensors)


def learnable_per_tensor_output_tensor(which, grad, self, scale, zero_point, *options):
    outputs = _shared_per_tensor_backward(
        wanted(self, scale, zero_point), grad, self, scale, zero_point, *options
    )
    return outputs[which]


def learnable_per_channel_output_tensor(which, grad, self, scale, zero_point, *options):
    outputs = _shared_per_channel_backward(
        wanted(self, scale, zero_point), grad, self, scale, zero_point, *options
    )
    return outputs[which]


def tensor_namespace():
    return {
        "fake_quantize_learnable_per_tensor_affine_backward_output": (
            learnable_per_tensor_output_tensor
        ),
        "fake_quantize_learnable_per_channel_affine_backward_output": (
            learnable_per_channel_output_tensor
        ),
    }
