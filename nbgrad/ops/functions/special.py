"""Special functions: ``torch.polygamma``, ``torch.mvlgamma``, ``torch.igamma`` / ``igammac``
(and their methods and in-place variants), and the ``torch.special.*`` functions, which
``nbgrad/special.py`` exports. ``lgamma``, ``digamma`` and ``i0`` are made from their table
entries' flags (``ops/public.py``)."""

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_inplace, run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _binary, _check_tensor, _number
from nbgrad.ops.functions.inplace import _inplace_operand
from nbgrad.ops.out import with_out
from nbgrad.ops.public import public


def _check_n(n):
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(
            f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}"
        )
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return n


@public(function=True, out=True)
def polygamma(n, input):  # noqa: A002 - PyTorch's argument names
    _check_tensor(input)
    return run_op(OPS["polygamma"], (input,), (_check_n(n),))


@public(method="polygamma")
def polygamma_method(self, n):
    return polygamma(n, self)


@public(method=True)
def polygamma_(self, n):
    # In place, PyTorch records its own node, PolygammaBackward1 (same formula).
    return run_inplace(OPS["polygamma_inplace"], self, (), (_check_n(n),))


def _check_p(p):
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return p


@public(function=True, method=True, out=True)
def mvlgamma(input, p):  # noqa: A002
    _check_tensor(input)
    return run_op(OPS["mvlgamma"], (input,), (_check_p(p),))


@public(method=True)
def mvlgamma_(self, p):
    return run_inplace(OPS["mvlgamma"], self, (), (_check_p(p),))


def _check_both_tensors(name, input, other):  # noqa: A002
    for position, (argument, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                f"{type(value).__name__}"
            )


def _check_floating(name, input, other):  # noqa: A002
    """PyTorch's igamma kernels exist for floating dtypes only: integer tensors are not promoted."""
    common = dtypes.promote_types(input.dtype, other.dtype)
    if not common.is_floating_point:
        raise NotImplementedError(
            f"\"{name}_cpu\" not implemented for '{dtypes.name_of(common.numpy)}'"
        )


@public(function=True, method=True, out=True)
def igamma(input, other):  # noqa: A002
    _check_both_tensors("igamma", input, other)
    _check_floating("igamma", input, other)
    return _binary(OPS["igamma"], input, other)


@public(function=True, method=True, out=True)
def igammac(input, other):  # noqa: A002
    _check_both_tensors("igammac", input, other)
    _check_floating("igammac", input, other)
    return _binary(OPS["igammac"], input, other)


@public(method=True)
def igamma_(self, other):
    _check_floating("igamma", self, other)
    return run_inplace(OPS["igamma"], self, (_inplace_operand(self, other),))


@public(method=True)
def igammac_(self, other):
    _check_floating("igammac", self, other)
    return run_inplace(OPS["igammac"], self, (_inplace_operand(self, other),))


# --- torch.special -----------------------------------------------------------------------------


def _with_scalar_overloads(name, entry):
    """A binary special function taking a number for either argument, as PyTorch's three
    overloads (Tensor, Tensor), (Number, Tensor), (Tensor, Number) do."""

    def function(input, other):  # noqa: A002
        if isinstance(input, Tensor) and isinstance(other, Tensor):
            return _binary(OPS[entry], input, other)
        if isinstance(other, Tensor) and _is_number(input):
            return run_op(OPS[entry + "_scalar_self"], (other,), (_number(input),))
        if isinstance(input, Tensor) and _is_number(other):
            return run_op(OPS[entry + "_scalar_other"], (input,), (_number(other),))
        raise TypeError(
            f"{entry}() received an invalid combination of arguments - got "
            f"({_argument_type(input)}, {_argument_type(other)}), but expected one of:\n"
            " * (Tensor input, Tensor other, *, Tensor out = None)\n"
            " * (Number self, Tensor other, *, Tensor out = None)\n"
            " * (Tensor input, Number other, *, Tensor out = None)\n"
        )

    function.__name__ = function.__qualname__ = name
    return with_out(function)


def _is_number(value):
    return isinstance(value, (int, float))


def _argument_type(value):
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def _unary(entry, name):
    def function(input):  # noqa: A002
        _check_tensor(input)
        return run_op(OPS[entry], (input,))

    function.__name__ = function.__qualname__ = name
    return with_out(function)


special_entr = _unary("special_entr", "entr")
special_ndtri = _unary("special_ndtri", "ndtri")
special_log_ndtr = _unary("special_log_ndtr", "log_ndtr")
special_erfcx = _unary("special_erfcx", "erfcx")
special_i0e = _unary("special_i0e", "i0e")
special_i1 = _unary("special_i1", "i1")
special_i1e = _unary("special_i1e", "i1e")
special_xlog1py = _with_scalar_overloads("xlog1py", "special_xlog1py")
special_zeta = _with_scalar_overloads("zeta", "special_zeta")


def special_multigammaln(input, p):  # noqa: A002
    return mvlgamma(input, p)


def special_gammainc(input, other):  # noqa: A002
    return igamma(input, other)


def special_gammaincc(input, other):  # noqa: A002
    return igammac(input, other)
