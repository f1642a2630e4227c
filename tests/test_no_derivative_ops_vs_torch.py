"""Ops PyTorch runs but cannot differentiate: ``scatter`` with ``reduce="add"`` or
``"multiply"`` (in place too, into a view too) and ``Tensor.floor_divide_`` (``//=``), whose
results get a NotImplemented grad_fn; and the logical and bitwise ops, whose in-place forms
(``&=``, ``logical_and_``, ...) leave the history as it was. Compared with PyTorch: values,
dtype, grad_fn and its edges (CopySlices over it for a view), ``_version``, what a backward
through it does, and the errors of bad arguments."""

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
    "r = x * 1; r //= 2",
    # logical and bitwise ops: no derivative at all, so in place the history stays
    "r = T.bitwise_and(a, 6)",
    "r = a.bitwise_or(T.tensor([1, 1, 1]))",
    "r = T.bitwise_xor(b, T.tensor([True, True, False]))",
    "r = T.bitwise_not(a)",
    "r = a.bitwise_not()",
    "r = a.bitwise_and_(T.tensor([1, 2, 4]))",
    "a.bitwise_or_(8); r = a",
    "a &= 3; r = a",
    "a |= 8; r = a",
    "a ^= 1; r = a",
    "a //= 2; r = a",
    "b.bitwise_and_(T.tensor([True, False, True])); r = b",
    "b.bitwise_not_(); r = b",
    "r = x[0] * 1; r.logical_and_(T.tensor([1.0, 1.0, 0.0, 1.0]))",
    "x.logical_or_(T.zeros(4)); r = x",
    "r = x[0] * 1; v = r[1:]; v.logical_not_(); r = v",
    "r = x[0] * 1; v = r[1:]; v.logical_xor_(T.ones(3)); r = r",
    "r = x[0] * 1; y = r * r; r.logical_and_(T.ones(4)); y.sum().backward()",
    "r = a.logical_and_(T.tensor([0.5, 0.0, 1.0]))",
    "r = x * 1; r **= 2",
    # aliases of the comparisons
    "r = T.greater(x, 1)",
    "r = x.less_equal(1)",
    "r = T.not_equal(x, 0)",
    "r = x.greater_equal(T.ones(4))",
    "r = T.less(x, 2)",
    # bad arguments
    "r = T.bitwise_not(x)",
    "r = T.bitwise_and(x, 1)",
    "b.bitwise_and_(T.tensor([1, 0, 1])); r = b",
    "r = x[0] * 1; r.logical_and_(T.ones(2, 4))",
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
    names = {
        "T": T,
        "x": x,
        "s": s,
        "idx": T.tensor([[0, 1, 2, 0], [0, 2, 0, 1]]),
        "a": T.tensor([5, 3, 6]),
        "b": T.tensor([True, False, True]),
    }
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


SEARCHSORTED = [
    "T.searchsorted(s, v, sorter=T.tensor([1, 2, 0]))",
    "T.searchsorted(s, v, side='right', sorter=T.tensor([1, 2, 0]))",
    "T.searchsorted(s, 2.5, sorter=T.tensor([1, 2, 0]))",
    "T.searchsorted(T.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]), T.tensor([[2.5], [4.5]]), "
    "sorter=T.tensor([[1, 2, 0], [0, 2, 1]]))",
    "T.searchsorted(s, v, sorter=T.tensor([1, 2]))",
    "T.searchsorted(s, v, sorter=T.tensor([1.0, 2.0, 0.0]))",
    "T.searchsorted(s, v, sorter=T.tensor([1, 2, 0], dtype=T.int32))",
    "T.searchsorted(s, v, sorter=T.tensor([1, 2, 5]))",
]


@pytest.mark.parametrize("call", SEARCHSORTED)
def test_searchsorted_with_a_sorter_as_pytorch(torch, call):
    """``sorter`` gives the order of unsorted boundaries (argsort's indices along the last dim)."""
    seen = []
    for T in (nbgrad, torch):
        names = {"T": T, "s": T.tensor([3.0, 1.0, 2.0]), "v": T.tensor([2.5, 0.5])}
        try:
            result = eval(call, names)  # noqa: S307 - the calls above
            seen.append((str(result.dtype), result.tolist()))
        except RuntimeError as error:
            seen.append(str(error))
    assert seen[0] == seen[1]


DATA_POINTERS = [
    "x[1:].data_ptr() - x.data_ptr()",
    "x.t().data_ptr() == x.data_ptr()",
    "x.view(2, 6).data_ptr() == x.data_ptr()",
    "x.clone().data_ptr() == x.data_ptr()",
    "x[:, 2:].data_ptr() - x.data_ptr()",
    "x.expand(2, 3, 4).data_ptr() == x.data_ptr()",
    "T.zeros(0).data_ptr()",
    "x[3:].data_ptr()",
    "T.tensor(1.0).data_ptr() != 0",
]


@pytest.mark.parametrize("expression", DATA_POINTERS)
def test_data_ptr_tells_shared_memory_as_pytorchs(torch, expression):
    """data_ptr() is the address of a tensor's first element: views share their base's memory
    (offset by where they start), copies do not."""
    seen = [
        eval(expression, {"T": T, "x": T.arange(12.0, dtype=T.float64).reshape(3, 4)})  # noqa: S307
        for T in (nbgrad, torch)
    ]
    assert seen[0] == seen[1]
