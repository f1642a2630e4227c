"""Matrix products, and ``matmul`` built from ``dot``/``mv``/``mm``/``bmm`` as PyTorch builds it."""

import builtins

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import VersionCounter
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions._common import _shapes_error
from nbgrad.ops.functions.shapes import (
    contiguous,
    expand,
    reshape,
    squeeze,
    t,
    transpose,
    unsqueeze,
)
from nbgrad.ops.public import public


@public(function=True, method=True, out=True)
def mm(input, mat2):  # noqa: A002
    a, b = input._data.shape, mat2._data.shape
    if len(a) != 2:
        raise RuntimeError("self must be a matrix")
    if len(b) != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a[1] != b[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})"
        )
    if input._dtype is not mat2._dtype:
        names = dtypes.CPP_TYPE_NAMES
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{names[input._dtype]} != {names[mat2._dtype]}"
        )
    return run_op(OPS["mm"], (input, mat2))


@public(function=True, method=True, out=True)
def mv(input, vec):  # noqa: A002
    a, v = input._data.shape, vec._data.shape
    if len(a) != 2 or len(v) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {len(a)}, {len(v)}")
    if a[1] != v[0]:
        raise RuntimeError(f"size mismatch, got input ({a[0]}), mat ({a[0]}x{a[1]}), vec ({v[0]})")
    if input._dtype is not vec._dtype:
        mat_name, vec_name = (dtypes.SCALAR_TYPE_NAMES[t._dtype] for t in (input, vec))
        raise RuntimeError(
            "addmv input tensors must have the same dtype, but got "
            f"{vec_name}, {mat_name}, and {vec_name}"
        )
    return run_op(OPS["mv"], (input, vec))


@public(function=True, method=True, out=True)
def dot(input, tensor):  # noqa: A002
    a, b = input._data.shape, tensor._data.shape
    if len(a) != 1 or len(b) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(a)}D and {len(b)}D tensors")
    if input._dtype is not tensor._dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{dtypes.SCALAR_TYPE_NAMES[input._dtype]} and "
            f"{dtypes.SCALAR_TYPE_NAMES[tensor._dtype]}"
        )
    if a[0] != b[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the "
            f"same number of elements, but got {a[0]} and {b[0]} elements respectively"
        )
    return run_op(OPS["dot"], (input, tensor))


@public(function=True, method=True, out=True)
def bmm(input, mat2):  # noqa: A002
    a, b = input._data.shape, mat2._data.shape
    if len(a) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(b) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a[0] != b[0] or a[2] != b[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a[0]}, {a[2]}] "
            f"but got: [{b[0]}, {b[1]}]."
        )
    if input._dtype is not mat2._dtype:
        raise RuntimeError(
            f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[input._dtype]} but found "
            f"{dtypes.SCALAR_TYPE_NAMES[mat2._dtype]}"
        )
    return run_op(OPS["bmm"], (input, mat2))


@public(function=True, method=True, out=True)
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    a, b = mat1._data.shape, mat2._data.shape
    if a[1] != b[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})"
        )
    if beta == 1 and alpha == 1:
        return run_op(OPS["addmm"], (input, mat1, mat2))
    return run_op(OPS["addmm_scaled"], (input, mat1, mat2), (beta, alpha))


@public(function=True, method=True, out=True)
def matmul(input, other):  # noqa: A002
    """Matrix product of any ranks, built from dot/mv/mm/bmm as PyTorch builds it."""
    da, db = input.dim(), other.dim()
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 1 and db == 2:
        return _squeezed_in_place(mm(unsqueeze(input, 0), other), 0)
    if da == 2 and db == 2:
        return mm(input, other)
    if _should_fold(input, other):
        return _folded_matmul(input, other)
    return _batched_matmul(input, other)


def _squeezed_in_place(product, dim):
    """PyTorch's ``product.squeeze_(dim)`` on a product nobody else holds: the result is that
    same tensor (not a view of it), at version 1, with SqueezeBackward4 as its grad_fn."""
    result = run_op(OPS["squeeze_dims"], (product,), (dim,))
    result._base = None
    if result._extras is not None:
        result._extras.view = None
    counter = VersionCounter()
    counter.value = 1
    result._version_counter = counter
    return result


def _should_fold(tensor1, tensor2):
    """PyTorch's choice of folding the batch dims of the larger operand into one matrix (mm or
    mv) instead of a batched product (bmm): when the other operand requires grad, or when the
    fold needs no copy."""
    larger = tensor1.dim() >= tensor2.dim()
    big, small = (tensor1, tensor2) if larger else (tensor2, tensor1)
    if not (big.dim() >= 3 and small.dim() <= 2):
        return False
    if small._requires_grad:
        return True
    if tensor1.dim() == 2:
        return False
    if big._data.size == 0:
        return True
    shape = list(big._data.shape)
    strides = [s // big._data.itemsize for s in big._data.strides]
    if not larger:  # tensor2.mT
        shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
    return builtins.all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _folded_matmul(tensor1, tensor2):
    transpose_back = tensor2.dim() > tensor1.dim()
    if transpose_back:  # (tensor2.mT @ tensor1.mT).mT
        t1 = transpose(tensor2, -2, -1)
        t2 = t(tensor1) if tensor1.dim() == 2 else tensor1
    else:
        t1, t2 = tensor1, tensor2
    output_shape = t1._data.shape[:-1]
    folded = reshape(t1, (int(np.prod(output_shape)), t1._data.shape[-1]))
    if t2.dim() == 1:
        return run_op(OPS["unsafe_view"], (mv(folded, t2),), (output_shape,))
    output_shape = (*output_shape, t2._data.shape[1])
    output = run_op(OPS["unsafe_view"], (mm(folded, t2),), (output_shape,))
    return contiguous(transpose(output, -2, -1)) if transpose_back else output


def _batched_matmul(tensor1, tensor2):
    """Broadcast the batch dims, expand both operands to them and multiply with bmm, as
    PyTorch does (a vector on the left is expanded as a row, one on the right as a column)."""
    d1, d2 = tensor1.dim(), tensor2.dim()
    shape1, shape2 = tensor1._data.shape, tensor2._data.shape
    n, m1, batch1 = (shape1[-2] if d1 > 1 else 1), shape1[-1], shape1[: builtins.max(d1 - 2, 0)]
    m2, p = (shape2[-2], shape2[-1]) if d2 > 1 else (shape2[0], 1)
    batch2 = shape2[: builtins.max(d2 - 2, 0)]
    if d1 == 3 and d2 == 3 and batch1[0] != batch2[0]:
        if batch1[0] == 1 and tensor1._requires_grad:
            return matmul(squeeze(tensor1, 0), tensor2)
        if batch2[0] == 1 and tensor2._requires_grad:
            return matmul(tensor1, squeeze(tensor2, 0))
    try:
        batch = np.broadcast_shapes(batch1, batch2)
    except ValueError:
        raise _shapes_error(batch1, batch2) from None
    count = int(np.prod(batch))
    expanded1 = reshape(expand(tensor1, (*batch, n, m1)), (count, n, m1))
    if d2 == 1:
        expanded2 = unsqueeze(reshape(expand(tensor2, (*batch, m2)), (count, m2)), 2)
    else:
        expanded2 = reshape(expand(tensor2, (*batch, m2, p)), (count, m2, p))
    output_shape = (*batch, *((n,) if d1 > 1 else ()), *((p,) if d2 > 1 else ()))
    product = bmm(expanded1, expanded2)
    if d2 == 1:
        product = squeeze(product, -1)
    return run_op(OPS["unsafe_view"], (product,), (output_shape,))
