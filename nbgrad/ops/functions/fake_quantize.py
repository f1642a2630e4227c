"""Fake quantization: ``torch.fake_quantize_per_tensor_affine``,
``fake_quantize_per_channel_affine``, their learnable variants and the fused moving-average
observer ``fused_moving_avg_obs_fake_quant``.

Each runs one table entry (``ops/derivatives.py``, kernels in ``ops/fake_quantize_kernels.py``)
after PyTorch's checks, in PyTorch's order and with its messages.
"""

from collections import namedtuple

import numpy as np

from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops import fake_quantize_kernels as kernels
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.public import public

CachemaskTensorQparamsResult = namedtuple(
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams", ("output", "mask")
)
FusedObserverResult = namedtuple("_fused_moving_avg_obs_fq_helper", ("output", "mask"))


def _refuse_grad(function, **tensors):
    """PyTorch's generated code refuses a tensor argument without a formula that requires grad
    (while grad mode is on)."""
    if not grad_mode._enabled:
        return
    for name, tensor in tensors.items():
        if isinstance(tensor, Tensor) and tensor._requires_grad:
            raise RuntimeError(
                f"The function '{function}' is not differentiable with respect to argument "
                f"'{name}'. This input cannot have requires_grad True."
            )


def _number(value):
    return value.item() if isinstance(value, Tensor) else value


def _first(tensor):
    """``tensor[0]``, as ATen reads the learnable variants' scale and zero point."""
    if tensor.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    if tensor.shape[0] == 0:
        raise IndexError("index 0 is out of bounds for dimension 0 with size 0")
    return tensor._data.reshape(tensor.shape[0], -1)[0, 0]


# --- per tensor ----------------------------------------------------------------------------------


# PyTorch's two overloads, in the order its argument parser tries them
_PER_TENSOR_OVERLOADS = (
    ("Tensor input", "Tensor scale", "Tensor zero_point", "int quant_min", "int quant_max"),
    ("Tensor input", "float scale", "int zero_point", "int quant_min", "int quant_max"),
)


def _takes(type_name, value):
    """Whether PyTorch's parser takes ``value`` for a parameter of this type (a 0-dim tensor
    passes for a number, an integer one only for an int)."""
    if type_name == "Tensor":
        return isinstance(value, Tensor)
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, Tensor):
        return value.dim() == 0 and (type_name == "float" or not value.is_floating_point())
    kinds = (int, np.integer) if type_name == "int" else (int, float, np.integer, np.floating)
    return isinstance(value, kinds)


def _type_name(value):
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def _per_tensor_overload(args):
    """0 or 1, the overload that takes ``args``, or PyTorch's TypeError."""
    for number, overload in enumerate(_PER_TENSOR_OVERLOADS):
        if all(_takes(p.split()[0], a) for p, a in zip(overload, args)):
            return number
    got = ", ".join(_type_name(a) for a in args)
    lines = [
        "fake_quantize_per_tensor_affine() received an invalid combination of arguments - "
        f"got ({got}), but expected one of:"
    ]
    for overload in _PER_TENSOR_OVERLOADS:
        marked = ", ".join(
            _type_name(a) if _takes(p.split()[0], a) else f"!{_type_name(a)}!"
            for p, a in zip(overload, args)
        )
        lines.append(f" * ({', '.join(overload)})")
        lines.append(
            f"      didn't match because some of the arguments have invalid types: ({marked})"
        )
    raise TypeError("\n".join(lines) + "\n")


@public(function=True)
def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):  # noqa: A002
    if _per_tensor_overload((input, scale, zero_point, quant_min, quant_max)) == 0:
        enabled = Tensor._make(np.ones(1, np.int64))
        return _fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
            input, scale, zero_point, enabled, quant_min, quant_max
        ).output
    scale, zero_point = float(_number(scale)), int(_number(zero_point))
    kernels.check_range(quant_min, quant_max)
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    output, _mask = run_op(
        OPS["fake_quantize_per_tensor_affine_cachemask"],
        (input,),
        (scale, zero_point, quant_min, quant_max),
    )
    return output


@public(function=True)
def _fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
    input,  # noqa: A002
    scale,
    zero_point,
    fake_quant_enabled,
    quant_min,
    quant_max,
):
    _refuse_grad(
        "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
        scale=scale,
        zero_point=zero_point,
        fake_quant_enabled=fake_quant_enabled,
    )
    kernels.check_range(quant_min, quant_max)
    enabled = kernels.to_int(kernels.scalar_of(fake_quant_enabled._data))
    scale_value = float(kernels.scalar_of(scale._data)) if enabled else 1.0
    zero_value = kernels.to_int(kernels.scalar_of(zero_point._data)) if enabled else 0
    output, mask = run_op(
        OPS["_fake_quantize_per_tensor_affine_cachemask_tensor_qparams"],
        (input,),
        (scale_value, zero_value, bool(enabled), quant_min, quant_max),
    )
    return CachemaskTensorQparamsResult(output, mask)


@public(function=True)
def _fake_quantize_learnable_per_tensor_affine(
    self, scale, zero_point, quant_min, quant_max, grad_factor=1.0
):
    # ATen reads scale[0] and zero_point[0]: their errors for a 0-dim or empty tensor
    _first(scale)
    _first(zero_point)
    kernels.check_range(quant_min, quant_max)
    return run_op(
        OPS["_fake_quantize_learnable_per_tensor_affine"],
        (self, scale, zero_point),
        (quant_min, quant_max, float(grad_factor)),
    )


# --- per channel ---------------------------------------------------------------------------------


@public(function=True)
def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):  # noqa: A002
    _refuse_grad("fake_quantize_per_channel_affine_cachemask", scale=scale, zero_point=zero_point)
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {axis} but tensor has no dimensions")
    kernels.check_per_channel(
        input._data, scale._data, zero_point._data, axis, quant_min, quant_max
    )
    output, _mask = run_op(
        OPS["fake_quantize_per_channel_affine_cachemask"],
        (input,),
        (scale._data, zero_point._data, axis, quant_min, quant_max),
    )
    return output


@public(function=True)
def _fake_quantize_learnable_per_channel_affine(
    self, scale, zero_point, axis, quant_min, quant_max, grad_factor=1.0
):
    rounded = kernels.learnable_per_channel_zero_point(zero_point._data, quant_min, quant_max)
    kernels.check_per_channel(
        self._data, scale._data, rounded.astype(np.int32), axis, quant_min, quant_max
    )
    return run_op(
        OPS["_fake_quantize_learnable_per_channel_affine"],
        (self, scale, zero_point),
        (axis, quant_min, quant_max, float(grad_factor)),
    )


# --- the fused moving-average observer -----------------------------------------------------------


def _float32(tensor):
    if tensor._data.dtype != np.float32:
        from nbgrad import dtypes

        raise RuntimeError(
            f"expected scalar type Float but found {dtypes.SCALAR_TYPE_NAMES[tensor._dtype]}"
        )


def _observe(self, running_min, running_max, averaging_const, per_row, ch_axis):
    """Move the running minimum and maximum towards this input's, in place (inside the kernel,
    as in PyTorch: their versions do not change)."""
    _float32(self)
    if per_row:
        if ch_axis != 0:
            raise RuntimeError(
                "Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on "
                "axis == 0"
            )
        if self.dim() < 2:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[{-max(self.dim(), 1)}, {max(self.dim(), 1) - 1}], but got 1)"
            )
    if self.numel() == 0:
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity."
        )
    data = self._data
    if per_row:
        low, high = data.min(axis=1).reshape(-1), data.max(axis=1).reshape(-1)
    else:
        low, high = data.min().reshape(1), data.max().reshape(1)
    for running in (running_min, running_max):
        _float32(running)
        if running.numel() != low.size:  # ATen writes past a buffer of the wrong size
            raise RuntimeError(
                f"fused_moving_avg_obs_fake_quant: running statistics have {running.numel()} "
                f"elements where the input needs {low.size}"
            )
    running_min._data.reshape(-1)[...] = kernels.moving_average(
        running_min._data.reshape(-1), low, averaging_const
    )
    running_max._data.reshape(-1)[...] = kernels.moving_average(
        running_max._data.reshape(-1), high, averaging_const
    )


def _choose(running_min, running_max, scale, zero_point, quant_min, quant_max, symmetric, per_row):
    """Write the qparams the running range gives into ``scale`` and ``zero_point``, in place."""
    if per_row:
        lows, highs = running_min._data.reshape(-1), running_max._data.reshape(-1)
    else:
        lows = [kernels.scalar_of(running_min._data)]
        highs = [kernels.scalar_of(running_max._data)]
    for i, (low, high) in enumerate(zip(lows, highs)):
        chosen_scale, chosen_zero = kernels.choose_qparams(
            low, high, quant_min, quant_max, symmetric
        )
        scale._data.reshape(-1)[i] = chosen_scale
        zero_point._data.reshape(-1)[i] = chosen_zero


@public(function=True)
def _fused_moving_avg_obs_fq_helper(
    self,
    observer_on,
    fake_quant_on,
    running_min,
    running_max,
    scale,
    zero_point,
    averaging_const,
    quant_min,
    quant_max,
    ch_axis,
    per_row_fake_quant=False,
    symmetric_quant=False,
):
    _refuse_grad(
        "_fused_moving_avg_obs_fq_helper",
        observer_on=observer_on,
        fake_quant_on=fake_quant_on,
        running_min=running_min,
        running_max=running_max,
        scale=scale,
        zero_point=zero_point,
    )
    if ch_axis >= self.dim():
        raise RuntimeError(
            "Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()"
        )
    if kernels.to_int(kernels.scalar_of(observer_on._data)):
        _observe(self, running_min, running_max, averaging_const, per_row_fake_quant, ch_axis)
    fake_quant = bool(kernels.to_int(kernels.scalar_of(fake_quant_on._data)))
    if fake_quant:
        _choose(
            running_min,
            running_max,
            scale,
            zero_point,
            quant_min,
            quant_max,
            symmetric_quant,
            per_row_fake_quant,
        )
        if per_row_fake_quant:
            kernels.check_per_channel(
                self._data, scale._data, zero_point._data, ch_axis, quant_min, quant_max
            )
        else:
            kernels.check_range(quant_min, quant_max)
    output, mask = run_op(
        OPS["_fused_moving_avg_obs_fq_helper"],
        (self,),
        (
            scale._data.copy(),
            zero_point._data.copy(),
            fake_quant,
            quant_min,
            quant_max,
            ch_axis,
            bool(per_row_fake_quant),
        ),
    )
    return FusedObserverResult(output, mask)


@public(function=True)
def fused_moving_avg_obs_fake_quant(
    self,
    observer_on,
    fake_quant_on,
    running_min,
    running_max,
    scale,
    zero_point,
    averaging_const,
    quant_min,
    quant_max,
    ch_axis,
    per_row_fake_quant=False,
    symmetric_quant=False,
):
    return _fused_moving_avg_obs_fq_helper(
        self,
        observer_on,
        fake_quant_on,
        running_min,
        running_max,
        scale,
        zero_point,
        averaging_const,
        quant_min,
        quant_max,
        ch_axis,
        per_row_fake_quant,
        symmetric_quant,
    ).output
