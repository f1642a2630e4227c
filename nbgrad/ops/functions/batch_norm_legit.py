"""``torch._native_batch_norm_legit`` (with or without running statistics) and
``torch._native_batch_norm_legit_no_training``: batch norm's kernel called directly, each
returning (output, save_mean, save_rstd) and recording its own node (derivatives.py, "batch
norm's legit entry points"). ``F.batch_norm`` and the ``nn`` modules record
NativeBatchNormBackward0 instead; these are what export and compile traces call.

PyTorch's checks come first, in its order, with its messages. Where PyTorch 2.13 checks nothing
and reads past a tensor's memory (running statistics or affine parameters of another length) or
crashes (the no_stats overload with training=False), nbgrad refuses with a message.
"""

from nbgrad import dtypes
from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.node import save
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.public import public

_WITH_STATS = (
    "input",
    "weight",
    "bias",
    "running_mean",
    "running_var",
    "training",
    "momentum",
    "eps",
)
_NO_STATS = ("input", "weight", "bias", "training", "momentum", "eps")


@public(function=True)
def _native_batch_norm_legit(*args, **kwargs):
    """``(input, weight, bias, running_mean, running_var, training, momentum, eps)``: normalise
    each channel (dim 1) with the batch's statistics and move the running ones toward them in
    place (training), or with the running ones (not training). The no_stats overload,
    ``(input, weight, bias, training, momentum, eps)``, keeps no running statistics."""
    name = "_native_batch_norm_legit"
    # The overloads differ in their fourth argument: the running mean (a tensor; None is refused
    # below, as PyTorch refuses it) or the training flag (no_stats).
    with_stats = "running_mean" in kwargs or (
        len(args) > 3 and (args[3] is None or isinstance(args[3], Tensor))
    )
    values = _bind(name, _WITH_STATS if with_stats else _NO_STATS, args, kwargs)
    if not with_stats:
        input, weight, bias, training, momentum, eps = values  # noqa: A001
        _check_flag(name, "training", training, 4)
        _check(name, input, weight, bias, None, None)
        if not training:
            # PyTorch 2.13's kernel dereferences the missing running statistics (a crash).
            raise RuntimeError(
                "_native_batch_norm_legit: without running statistics (running_mean, "
                "running_var) only training=True can normalise: pass training=True, or "
                "the running statistics"
            )
        attrs = (True, float(momentum), float(eps))
        return run_op(OPS["_native_batch_norm_legit_no_stats"], (input, weight, bias), attrs)
    input, weight, bias, running_mean, running_var, training, momentum, eps = values  # noqa: A001
    for position, (argument, value) in enumerate(
        (("running_mean", running_mean), ("running_var", running_var)), start=4
    ):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                f"{type(value).__name__}"
            )
    _check_flag(name, "training", training, 6)
    _check(name, input, weight, bias, running_mean, running_var)
    attrs = (running_mean._data, running_var._data, training, float(momentum), float(eps))
    outputs = run_op(OPS[name], (input, weight, bias), attrs)
    _save_running_statistics(outputs[0], OPS[name], running_mean, running_var)
    return outputs


@public(function=True)
def _native_batch_norm_legit_no_training(
    input,  # noqa: A002
    weight,
    bias,
    running_mean,
    running_var,
    momentum,
    eps,
):
    """Normalise each channel (dim 1) with the running statistics, which stay as they are; the
    saved mean and 1/std it returns are empty, as in PyTorch."""
    name = "_native_batch_norm_legit_no_training"
    _check(name, input, weight, bias, running_mean, running_var)
    attrs = (running_mean._data, running_var._data, float(momentum), float(eps))
    outputs = run_op(OPS[name], (input, weight, bias), attrs)
    _save_running_statistics(outputs[0], OPS[name], running_mean, running_var)
    return outputs


def _bind(name, parameters, args, kwargs):
    """The arguments in the overload's order, refusing what PyTorch's argument parser refuses."""
    if len(args) > len(parameters):
        raise TypeError(
            f"{name}() takes {len(parameters)} positional arguments but {len(args)} were given"
        )
    values = dict(zip(parameters, args, strict=False))
    for key, value in kwargs.items():
        if key not in parameters or key in values:
            raise TypeError(f"{name}() got an unexpected or repeated keyword argument '{key}'")
        values[key] = value
    missing = [p for p in parameters if p not in values]
    if missing:
        raise TypeError(f"{name}() missing required argument '{missing[0]}'")
    return [values[p] for p in parameters]


def _check_flag(name, argument, value, position):
    if not isinstance(value, bool):
        raise TypeError(
            f"{name}(): argument '{argument}' (position {position}) must be bool, not "
            f"{type(value).__name__}"
        )


def _check(name, input, weight, bias, running_mean, running_var):  # noqa: A002
    """PyTorch's checks of a batch norm call, in its order."""
    parameters = (weight, bias, running_mean, running_var)
    if grad_mode.is_grad_enabled():
        for argument, tensor in (("running_mean", running_mean), ("running_var", running_var)):
            if tensor is not None and tensor.requires_grad:
                raise RuntimeError(
                    f"The function '{name}' is not differentiable with respect to argument "
                    f"'{argument}'. This input cannot have requires_grad True."
                )
    wrap_dim(1, input.dim())  # the channels are dim 1: PyTorch's IndexError without one
    if input.numel() == 0:
        raise RuntimeError(
            "input tensor must have at least one element, but got input_sizes = "
            f"{list(input.shape)}"
        )
    if not input.is_floating_point():
        raise NotImplementedError(f"\"batch_norm\" not implemented for '{dtypes.name_of(input)}'")
    _check_dtypes(input, parameters)
    channels = input.shape[1]
    for argument, tensor in zip(("weight", "bias", "running_mean", "running_var"), parameters):
        if tensor is not None and tensor.numel() != channels:
            raise RuntimeError(
                f"{name}: {argument} should contain {channels} elements (one per channel, dim 1 "
                f"of the input) not {tensor.numel()}"
            )


def _check_dtypes(input, parameters):  # noqa: A002
    """PyTorch's CPU kernel takes its parameters in the input's dtype. The first given
    parameter decides: of another dtype, the call is "mixed", which only a reduced-precision
    input (float16) with float32 parameters may be; otherwise each parameter must have the
    input's dtype."""
    given = [p for p in parameters if p is not None]
    if not given:
        return
    if given[0]._dtype is not input._dtype:
        if any(p._dtype is not dtypes.float32 for p in given):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if input._dtype is not dtypes.float16:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        # PyTorch normalises a half input with float32 parameters; nbgrad's kernel does not.
        raise NotImplementedError(
            "batch norm of a float16 input with float32 parameters (PyTorch's mixed mode) is "
            "not supported by nbgrad: convert the parameters to float16 or the input to float32"
        )
    for tensor in given[1:]:
        if tensor._dtype is not input._dtype:
            raise RuntimeError(
                f"expected scalar type {dtypes.name_of(input)} but found {dtypes.name_of(tensor)}"
            )


def _save_running_statistics(output, spec, running_mean, running_var):
    """The node keeps the running statistics as the tensors they are (not copies of their
    arrays), so that changing one in place before backward raises PyTorch's version error. The
    kernel updated them in place without bumping their versions, as PyTorch's does."""
    node = output._grad_fn
    if node is None:
        return
    node._saved[spec.saves.index("running_mean")] = save(running_mean, False)
    node._saved[spec.saves.index("running_var")] = save(running_var, False)
