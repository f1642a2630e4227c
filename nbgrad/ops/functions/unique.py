"""``torch.unique`` and ``torch.unique_consecutive`` (functions and methods), and the ATen ops
they run, ``torch._unique`` and ``torch._unique2``: one table entry each."""

from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.public import public


def _returned(output, inverse, counts, return_inverse, return_counts):
    """What torch.unique returns: the values, then the inverse and the counts asked for."""
    if return_inverse and return_counts:
        return output, inverse, counts
    if return_inverse:
        return output, inverse
    if return_counts:
        return output, counts
    return output


@public(function=True, method=True)
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    if dim is None:
        output, inverse, counts = _unique2(input, sorted, return_inverse, return_counts)
    else:
        attrs = (
            wrap_dim(dim, input.dim()),
            bool(sorted),
            bool(return_inverse),
            bool(return_counts),
        )
        output, inverse, counts = run_op(OPS["unique_dim"], (input,), attrs)
    return _returned(output, inverse, counts, return_inverse, return_counts)


@public(function=True, method=True)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    wrapped = None if dim is None else wrap_dim(dim, input.dim())
    attrs = (bool(return_inverse), bool(return_counts), wrapped)
    output, inverse, counts = run_op(OPS["unique_consecutive"], (input,), attrs)
    return _returned(output, inverse, counts, return_inverse, return_counts)


@public(function=True)
def _unique(input, sorted=True, return_inverse=False):  # noqa: A002
    return run_op(OPS["_unique"], (input,), (bool(sorted), bool(return_inverse)))


@public(function=True)
def _unique2(input, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    attrs = (bool(sorted), bool(return_inverse), bool(return_counts))
    return run_op(OPS["_unique2"], (input,), attrs)
