"""The public names nbgrad declares (``ops/public.py``) are PyTorch's, and behave as PyTorch's."""

import types

import numpy as np
import pytest

import nbgrad
from nbgrad.ops import public
from nbgrad.ops.derivatives import OPS

# The functions made from table entries (flag ``function``), with an input in their domain.
TABLE_FUNCTIONS = sorted(
    name for spec in OPS.values() for name in public.names(spec.function, spec.name)
)
IN_PLACE = sorted(spec.name + "_" for spec in OPS.values() if spec.inplace)


# nbgrad has exported these since before this check; PyTorch has them only as methods.
NOT_IN_TORCH = {"expand"}


def test_every_declared_name_is_pytorchs(torch):
    assert [n for n in public.FUNCTIONS if not hasattr(torch, n)] == sorted(NOT_IN_TORCH)
    assert not [n for n in public.METHODS if not hasattr(torch.Tensor, n)]


# nbgrad.trace is also the recording package, which takes the name once imported and calls the
# function when called (nbgrad/trace/__init__.py)
SHARED_WITH_A_PACKAGE = {"trace"}


def test_declared_names_are_what_nbgrad_and_tensor_expose():
    for name, function in public.FUNCTIONS.items():
        exported = getattr(nbgrad, name)  # the function itself, or it wrapped to take out=
        if name in SHARED_WITH_A_PACKAGE and isinstance(exported, types.ModuleType):
            x = nbgrad.eye(3, requires_grad=True)
            assert exported(x).grad_fn.name() == function(x).grad_fn.name(), name
            continue
        assert function in (exported, getattr(exported, "__wrapped__", None)), name
    for name, function in public.METHODS.items():
        assert getattr(nbgrad.Tensor, name) is function, name


def _input(T, name):
    data = np.array([[0.3, 0.7, 1.4], [0.2, 0.9, 1.1]])  # inside every domain (log, sqrt, ...)
    data = data / 2 if name.rstrip("_") in UNIT_DOMAIN else data  # but (-1, 1)
    data = data + 1 if name.rstrip("_") in ("acosh", "arccosh") else data  # and [1, inf)
    return T.tensor(data if name != "abs" else data - 0.8, dtype=T.float64)


UNIT_DOMAIN = {"asin", "arcsin", "acos", "arccos", "atanh", "arctanh", "erfinv"}


@pytest.mark.parametrize("name", TABLE_FUNCTIONS)
def test_table_functions_match_pytorch(torch, name):
    ours, theirs = (
        getattr(nbgrad, name)(_input(nbgrad, name)),
        getattr(torch, name)(_input(torch, name)),
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15, atol=1e-15)
    assert getattr(_input(nbgrad, name), name)().tolist() == ours.tolist()
    if name in public.TAKES_OUT:
        out = nbgrad.empty(2, 3, dtype=nbgrad.float64)
        assert getattr(nbgrad, name)(_input(nbgrad, name), out=out) is out
        np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("name", IN_PLACE)
def test_in_place_variants_match_pytorch(torch, name):
    ours, theirs = _input(nbgrad, name), _input(torch, name)
    assert getattr(ours, name)() is ours
    getattr(theirs, name)()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15, atol=1e-15)
    assert ours._version == 1
    assert hasattr(nbgrad, name) == (OPS[name[:-1]].inplace is True)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64"])
def test_erf_keeps_pytorchs_dtype(torch, dtype):
    data = np.array([-2.5, -0.5, 0.0, 1.0, 3.0]).astype(dtype)
    ours, theirs = nbgrad.erf(nbgrad.tensor(data)), torch.erf(torch.tensor(data))
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(
        ours.numpy(), theirs.numpy(), rtol=1e-15 if dtype == "float64" else 1e-3
    )
