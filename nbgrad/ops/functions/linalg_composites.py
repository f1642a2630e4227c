"""``linalg.matrix_power``, ``linalg.vecdot``, ``linalg.multi_dot`` and ``linalg.matrix_rank``:
no node of their own. They are built from clone, copy_, inv, matmul, mm, mul and sum exactly as
ATen builds them, so the graph shows PyTorch's nodes."""

import numpy as np

from nbgrad import dtypes
from nbgrad.ops.public import public


def matrix_power(A, n):  # noqa: N803
    """``torch.linalg.matrix_power``: A^n by repeated squaring (A^{-1} for negative n)."""
    from nbgrad import linalg
    from nbgrad.ops import creation
    from nbgrad.ops.functions import matmul

    if A.dim() < 2:
        raise RuntimeError(
            "linalg.matrix_power: The input tensor A must have at least 2 dimensions."
        )
    rows, columns = A.shape[-2:]
    if rows != columns:
        raise RuntimeError(
            "linalg.matrix_power: A must be batches of square matrices, but they are "
            f"{rows} by {columns} matrices"
        )
    if n == 0:  # a clone, so that the identity it is overwritten with is part of the graph
        return _contiguous_clone(A).copy_(creation.eye(rows, dtype=A.dtype))
    if n == 1:
        return _contiguous_clone(A)
    if n == -1:
        return linalg.inv(A)
    a = linalg.inv(A) if n < 0 else A
    n = abs(n)
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    # ATen's binary decomposition of n, from the least significant bit
    square, result = None, None
    while n > 0:
        bit, n = n % 2, n // 2
        square = a if square is None else matmul(square, square)
        if bit:
            result = square if result is None else matmul(result, square)
    return result


def _contiguous_clone(A):  # noqa: N803
    """ATen's ``clone(MemoryFormat::Contiguous)``: a CloneBackward0 laid out row-major."""
    from nbgrad.ops.functions import clone

    result = clone(A)
    result._data = np.ascontiguousarray(result._data)
    return result


@public(function="matrix_power", method="matrix_power")
def matrix_power_function(input, n):  # noqa: A002
    return matrix_power(input, n)


def vecdot(x, y, *, dim=-1):
    """``torch.linalg.vecdot``: (x * y).sum(dim) (for real tensors, x.conj() is x); vdot for
    two vectors."""
    if x._dtype is not y._dtype:
        raise RuntimeError(
            "linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{dtypes.SCALAR_TYPE_NAMES[x._dtype]} and y of type "
            f"{dtypes.SCALAR_TYPE_NAMES[y._dtype]} instead"
        )
    if not x._dtype.is_floating_point:
        raise RuntimeError(
            "linalg.vecdot: Expected a floating point or complex tensor as input. Got "
            f"{dtypes.SCALAR_TYPE_NAMES[x._dtype]}"
        )
    if x.dim() == 1 and y.dim() == 1:  # ATen takes vdot for two vectors
        from nbgrad.ops.functions import vdot

        return vdot(x, y)
    return (x * y).sum(dim)


def _chain_order(shapes):
    """The split points of the cheapest order to multiply matrices of these shapes (dynamic
    programming over the chain's sub-chains; ties keep the first split, as ATen's)."""
    n = len(shapes)
    sizes = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def multi_dot(tensors):
    """``torch.linalg.multi_dot``: the product of a chain of matrices (the first and last may
    be vectors), multiplied in the cheapest order with mm, then viewed to the output's shape."""
    from nbgrad.ops.functions import mm

    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    out_shape = []
    for t, name in ((first, "first"), (last, "last")):
        if t.dim() not in (1, 2):
            raise RuntimeError(
                f"multi_dot(): the {name} tensor must be 1D or 2D but got {t.dim()}D"
            )
    matrices = list(tensors)
    if first.dim() == 1:
        matrices[0] = first.unsqueeze(0)
    else:
        out_shape.append(first.shape[0])
    if last.dim() == 1:
        matrices[-1] = last.unsqueeze(-1)
    else:
        out_shape.append(last.shape[1])
    for i in range(1, n - 1):
        if tensors[i].dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i].dim()}D")
    for i in range(1, n):
        if matrices[i]._dtype is not matrices[0]._dtype:
            raise RuntimeError(
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{dtypes.CPP_TYPE_NAMES[matrices[0]._dtype]} and tensor {i} "
                f"{dtypes.CPP_TYPE_NAMES[matrices[i]._dtype]}"
            )
        if matrices[i - 1].shape[-1] != matrices[i].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i - 1} and {i} with shapes {list(tensors[i - 1].shape)} "
                f"and {list(tensors[i].shape)} cannot be multiplied"
            )
    if n == 2:
        return mm(matrices[0], matrices[1]).view(out_shape)
    if n == 3:
        a, b = matrices[0].shape[0], matrices[1].shape[0]
        c, d = matrices[2].shape
        if a * c * (b + d) > b * d * (a + c):
            return mm(matrices[0], mm(matrices[1], matrices[2])).view(out_shape)
        return mm(mm(matrices[0], matrices[1]), matrices[2]).view(out_shape)
    split = _chain_order([tuple(m.shape) for m in matrices])

    def product(i, j):
        if i == j:
            return matrices[i]
        return mm(product(i, split[i][j]), product(split[i][j] + 1, j))

    return product(0, n - 1).view(out_shape)


def matrix_rank(A, tol=None, *, atol=None, rtol=None, hermitian=False):  # noqa: N803
    """``torch.linalg.matrix_rank``: how many singular values (absolute eigenvalues if
    ``hermitian``) exceed max(atol, rtol * the largest); int64, never part of a graph."""
    from nbgrad.autograd.tensor import Tensor

    if A.dim() < 2:
        raise RuntimeError(
            "torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions."
        )
    if A._dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:  # the old overload: an absolute tolerance
        atol, rtol = tol, 0.0
    a = A._data
    if a.size == 0:
        return _counted(Tensor._make(np.zeros(a.shape[:-2], np.int64)))
    if hermitian:
        values = np.abs(np.linalg.eigvalsh(a))
    else:
        values = np.linalg.svd(a, compute_uv=False)
    atol_value = _tolerance(atol, 0.0)
    if rtol is None:
        positive = np.any(atol_value > 0) if atol is not None else False
        rtol = 0.0 if positive else np.finfo(a.dtype).eps * max(a.shape[-2:])
    rtol_value = _tolerance(rtol, 0.0)
    largest = values.max(-1, keepdims=True)
    threshold = np.maximum(
        np.asarray(atol_value)[..., None], np.asarray(rtol_value)[..., None] * largest
    )
    return _counted(Tensor._make(np.asarray((values > threshold).sum(-1), np.int64)))


def _counted(rank):
    # PyTorch counts into its result with an in-place sum (``out=``): ``_version`` 1
    rank._version_counter.value = 1
    return rank


def _tolerance(value, default):
    if value is None:
        return default
    return value._data if hasattr(value, "_data") else value
