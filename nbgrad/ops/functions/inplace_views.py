"""In-place comparisons (``x.eq_(y)``, ...), the in-place reshapes ``squeeze_``, ``unsqueeze_``,
``t_`` and ``transpose_`` (the tensor itself takes the new shape and a new grad_fn), and
``torch.fill``."""

from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import check_inplace_allowed, run_inplace, run_op
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _check_tensor, _number
from nbgrad.ops.functions.inplace import _inplace_operand
from nbgrad.ops.public import public


def _comparison_in_place(name):
    def method(self, other):
        if isinstance(other, Tensor):
            return run_inplace(
                OPS[f"{name}_inplace_tensor"], self, (_inplace_operand(self, other),)
            )
        return run_inplace(OPS[f"{name}_inplace"], self, (), (_number(other),))

    method.__name__ = method.__qualname__ = f"{name}_"
    return method


_ALIASES = {"ne": "not_equal_", "lt": "less_", "le": "less_equal_", "gt": "greater_",
            "ge": "greater_equal_"}  # fmt: skip
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _method = _comparison_in_place(_name)
    globals()[f"{_name}_"] = _method
    public(method=(f"{_name}_", _ALIASES[_name]) if _name in _ALIASES else True)(_method)
del _name, _method


def _reshape_in_place(input, spec, attrs=()):  # noqa: A002
    """``input`` takes the shape ``spec`` gives it, keeping its memory; with a graph its grad_fn
    becomes ``spec``'s node (whose edge is its previous history), and its version goes up."""
    view = input._extras.view if input._extras is not None else None
    if grad_mode._enabled and (
        input._requires_grad
        or (view is not None and view.made_in_no_grad and view.base._requires_grad)
    ):
        # PyTorch's checks of any in-place op: a leaf, a view of a leaf, a view made in no_grad
        check_inplace_allowed(input, view)
    reshaped = run_op(spec, (input,), attrs)
    input._data = reshaped._data
    if reshaped._grad_fn is not None:
        input._grad_fn, input._output_nr = reshaped._grad_fn, 0
    input._version_counter.value += 1
    if view is not None:  # its new grad_fn is current: no AsStridedBackward0 over its base
        view.version = input._version_counter.value
    return input


@public(method=True)
def squeeze_(input, dim=None):  # noqa: A002
    if dim is None:
        return _reshape_in_place(input, OPS["squeeze_inplace"])
    if isinstance(dim, (tuple, list)):
        from nbgrad.ops.functions.shapes import _check_dims_once

        _check_dims_once(dim, input.dim())  # then saved as given
        return _reshape_in_place(input, OPS["squeeze_dims_inplace"], (tuple(dim),))
    wrap_dim(dim, input.dim())  # checked, saved as given
    return _reshape_in_place(input, OPS["squeeze_dim_inplace"], (dim,))


@public(method=True)
def unsqueeze_(input, dim):  # noqa: A002
    wrap_dim(dim, input.dim() + 1)  # checked, saved as given
    return _reshape_in_place(input, OPS["unsqueeze_inplace"], (dim,))


@public(method=True)
def t_(input):  # noqa: A002
    if input.dim() > 2:
        raise RuntimeError(
            f"t_() expects a tensor with <= 2 dimensions, but self is {input.dim()}D"
        )
    return _reshape_in_place(input, OPS["t_inplace"])


@public(method=("transpose_", "swapdims_", "swapaxes_"))
def transpose_(input, dim0, dim1):  # noqa: A002
    n = input.dim()
    wrap_dim(dim0, n), wrap_dim(dim1, n)  # checked, saved as given
    return _reshape_in_place(input, OPS["transpose_inplace"], (dim0, dim1))


@public(method=True)
def as_strided_(input, size, stride, storage_offset=None):  # noqa: A002
    from nbgrad.ops.functions.shapes import as_strided_arguments

    attrs = as_strided_arguments(input, size, stride, storage_offset)
    return _reshape_in_place(input, OPS["as_strided_inplace"], attrs)


@public(function=True)
def fill(input, value):  # noqa: A002
    _check_tensor(input)
    if isinstance(value, Tensor):
        if value.dim():
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.dim()} dimensions."
            )
        return run_op(OPS["fill_out_of_place_tensor"], (input, value))
    return run_op(OPS["fill_out_of_place"], (input,), (_number(value),))
