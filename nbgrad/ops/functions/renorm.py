"""``torch.renorm`` and ``Tensor.renorm``, with PyTorch's checks and messages."""

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _check_tensor
from nbgrad.ops.public import public


@public(function=True, method=True)
def renorm(input, p, dim, maxnorm):  # noqa: A002
    _check_renorm(input, p, dim, maxnorm)
    return run_op(OPS["renorm"], (input,), (p, dim, maxnorm))


@public(method=True)  # (PyTorch has no torch.renorm_)
def renorm_(input, p, dim, maxnorm):  # noqa: A002
    """In place, the same entry: RenormBackward0, saving the input as it was (CloneBackward0)."""
    _check_renorm(input, p, dim, maxnorm)
    return run_inplace(OPS["renorm"], input, (), (p, dim, maxnorm))


def _check_renorm(input, p, dim, maxnorm):  # noqa: A002
    _check_tensor(input)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        # C++ prints the double as %g would (-1.0 as -1)
        shown = f"{maxnorm:g}" if isinstance(maxnorm, float) else maxnorm
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {shown}")
    if input.dim() <= 1:
        raise RuntimeError(
            f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions"
        )
    wrap_dim(dim, input.dim())  # checked; saved as given
    if not input.is_floating_point():  # PyTorch's norm inside renorm says so
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{dtypes.SCALAR_TYPE_NAMES[input._dtype]}"
        )
