"""Ops PyTorch runs but cannot differentiate: ``scatter`` with ``reduce="add"`` or
``"multiply"`` (in place too, into a view too) and ``Tensor.floor_divide_``. Compared with
PyTorch: values, dtype, the NotImplemented grad_fn and its edges (CopySlices over it for a
view), ``_version``, the error a backward through it raises, and the errors of bad arguments."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import nbgrad

PROGRAMS = [
    "r = (x * 1).scatter(0, idx, s, reduce='add')",
    "r = (x * 1).scatter(0, idx, s, reduce='multiply')",
    "r = (x * 1).scatter(0, idx, 2.5, reduce='multiply')",
    "r = (x * 1).scatter(1, idx, s, reduce='add')",
    "r = T.scatter(x * 1, -2, idx, s, reduce='add')",
    "r = T.zeros(3, 4, dtype=T.float64).scatter(0, idx, s, reduce='add')",
    "r = T.full((2, 3), 2).scatter(1, T.tensor([[0, 0, 2]]), 3, reduce='multiply')",
    "r = T.tensor(2.0).scatter(0, T.tensor(0), T.tensor(3.0), reduce='add')",
    "r = T.tensor(2.0).scatter(0, T.tensor(0), 3.0, reduce='multiply')",
    "r = x * 1; r.scatter_(0, idx, s, reduce='add')",
    "r = x * 1; r.scatter_(0, idx, 3.0, reduce='add')",
    "r = T.zeros(3, 4, dtype=T.float64); r.scatter_(0, idx, s, reduce='add')",
    "r = T.zeros(3, 4, dtype=T.float64); r.scatter_(0, idx, s.detach(), reduce='multiply')",
    "b = x * 1; v = b[1:]; v.scatter_(0, idx[:, :3] % 2, s, reduce='add'); r = b",
    "b = x * 1; v = b[1:]; v.scatter_(0, idx[:, :3] % 2, s, reduce='add'); r = v",
    "r = T.zeros(3, 4, dtype=T.float64); r[1:].scatter_(0, idx % 2, s, reduce='multiply')",
    "with T.no_grad(): x.scatter_(0, idx, s, reduce='multiply')\nr = x.detach()",
    "r = x * 1; r.floor_divide_(2)",
    "r = x[0] * 1; r.floor_divide_(x[1])",
    "r = T.arange(6).reshape(2, 3); r.floor_divide_(2)",
    "r = T.tensor(5.0, requires_grad=True) * 1; r.floor_divide_(T.tensor(2.0))",
    # bad arguments
    "r = (x * 1).scatter(0, idx, s, reduce='max')",
    "r = (x * 1).scatter(0, idx, 1.0, reduce='sum')",
    "r = (x * 1).scatter(0, idx + 5, s, reduce='add')",
    "r = T.zeros(3, 4); r.scatter_(0, idx, s, reduce='add')",
    "r = T.zeros(3, 4, dtype=T.float64); r.scatter_(0, idx.float(), s, reduce='add')",
    "x.scatter_(0, idx, s, reduce='add'); r = x",
    "x.floor_divide_(2); r = x",
    "r = T.arange(6).reshape(2, 3); r.floor_divide_(2.5)",
]


def _run(T, program):
    """What a user sees of ``r`` after ``program``, and of a backward through it."""
    x = T.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    s = T.tensor(np.arange(8.0).reshape(2, 4) + 1, requires_grad=True)
    names = {"T": T, "x": x, "s": s, "idx": T.tensor([[0, 1, 2, 0], [0, 2, 0, 1]])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation warning is compared below
        try:
            exec(program, names)  # noqa: S102 - the programs above
        except Exception as error:  # noqa: BLE001 - the error is what is compared
            return type(error).__name__, str(error)
    r = names["r"]
    node = r.grad_fn
    seen = [
        r.detach().numpy().tolist(),
        str(r.dtype),
        r._version,
        r.requires_grad,
        type(node).__name__,
        [type(n).__name__ if n is not None else None for n, _ in node.next_functions]
        if node is not None
        else None,
    ]
    if r.requires_grad:
        try:
            r.sum().backward()
            seen.append("backward ran")
        except RuntimeError as error:
            seen.append(str(error))
    return seen


@pytest.mark.parametrize("program", PROGRAMS)
def test_as_pytorch(torch, program):
    assert _run(nbgrad, program) == _run(torch, program)


def test_floor_divide_in_place_is_a_method_only(torch):
    assert hasattr(nbgrad.Tensor, "floor_divide_") and hasattr(torch.Tensor, "floor_divide_")
    assert not hasattr(nbgrad, "floor_divide_") and not hasattr(torch, "floor_divide_")


SCATTER_WITH_REDUCE = """
import warnings
import {module} as T
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x, i = T.zeros(2, 3), T.tensor([[0, 1, 0]])
    x.scatter(0, i, T.ones(1, 3), reduce="add")
    x.scatter_(0, i, T.ones(1, 3), reduce="multiply")
    x.scatter(0, i, 2.0, reduce="add")
for w in caught:
    print(w.category.__name__, str(w.message).split(" (Triggered internally")[0])
"""


def test_tensor_src_with_reduce_warns_once_per_process_as_pytorch(torch):
    """PyTorch's TORCH_WARN_ONCE: the first scatter with a tensor source and ``reduce`` warns,
    later ones do not, and a number source never does. Each library runs in a fresh process."""
    printed = []
    for module in ("nbgrad", "torch"):
        run = subprocess.run(
            [sys.executable, "-c", SCATTER_WITH_REDUCE.format(module=module)],
            capture_output=True,
            text=True,
            check=True,
        )
        printed.append(run.stdout)
    assert printed[0] == printed[1]
    assert printed[0].startswith("UserWarning The reduce argument of torch.scatter")
    assert printed[0].count("\n") == 1
