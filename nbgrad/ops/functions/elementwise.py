"""The element-wise functions that are their table entry run as is: ``nbgrad.exp``, ``x.exp()``,
``x.exp_()``, ... made for every entry of ``derivatives.OPS`` flagged ``function``, ``method`` or
``inplace`` (the flags are described in ``ops/spec.py``)."""

from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _check_tensor
from nbgrad.ops.public import declare


def _run_on_tensor(spec):
    def function(input):  # noqa: A002 - PyTorch's argument name
        if not isinstance(input, Tensor):
            _check_tensor(input)
        return run_op(spec, (input,))

    function.__name__ = function.__qualname__ = spec.name
    function.__doc__ = f"Element-wise {spec.name}; its backward is ``{spec.grads['self']}``."
    return function


def _run_in_place(spec):
    def function(input):  # noqa: A002
        return run_inplace(spec, input)

    function.__name__ = function.__qualname__ = spec.name + "_"
    function.__doc__ = f"In-place {spec.name}: writes into the tensor and bumps its version."
    return function


for _spec in OPS.values():
    if _spec.function or _spec.method:
        declare(
            _run_on_tensor(_spec),
            _spec.name,
            as_function=_spec.function,
            as_method=_spec.method,
            out=_spec.out,
        )
    if _spec.inplace:
        # ``inplace="method"``: only ``x.sign_()``, as PyTorch has no ``torch.sign_``.
        declare(
            _run_in_place(_spec),
            _spec.name + "_",
            as_function=_spec.inplace is True,
            as_method=True,
        )
del _spec
