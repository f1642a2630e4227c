"""``einsum`` and ``tensordot``, built from permute/reshape/bmm (or mul/sum) as PyTorch builds them.

PyTorch has no backward node of its own for either: ATen decomposes them into views, sums and a
batched matrix product, so their graphs are chains of ``PermuteBackward0``, ``ViewBackward0``,
``BmmBackward0``, ... The decomposition below follows the same rule step by step (which operand
dims are unsqueezed, the order dims are permuted to, when a dim is summed right away), so that the
graph, its saved values and its results are PyTorch's.
"""

import string

from nbgrad.autograd.tensor import wrap_dim
from nbgrad.ops.functions.arithmetic import mul
from nbgrad.ops.functions.linalg import bmm, dot, mm
from nbgrad.ops.functions.reductions import sum as _sum
from nbgrad.ops.functions.selection import diagonal
from nbgrad.ops.functions.shapes import flatten, permute, reshape, squeeze, unsqueeze, view
from nbgrad.ops.public import public

# PyTorch numbers labels A-Z as 0-25 and a-z as 26-51: contracted dims are ordered so.
_LABELS = string.ascii_uppercase + string.ascii_lowercase
_ELLIPSIS = len(_LABELS)


def _parse_operand_labels(lhs, num_ops):
    op_labels = [[] for _ in range(num_ops)]
    current = 0
    seen_ellipsis = False
    i = 0
    while i < len(lhs):
        c = lhs[i]
        if c == " ":
            pass
        elif c == ".":
            if seen_ellipsis:
                raise RuntimeError(
                    f"einsum(): found '.' for operand {current} for which an ellipsis was "
                    "already found"
                )
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(
                    f"einsum(): found '.' for operand {current} that is not part of any ellipsis"
                )
            i += 2
            op_labels[current].append(_ELLIPSIS)
            seen_ellipsis = True
        elif c == ",":
            current += 1
            if current >= num_ops:
                raise RuntimeError(
                    "einsum(): fewer operands were provided than specified in the equation"
                )
            seen_ellipsis = False
        else:
            if c not in _LABELS:
                raise RuntimeError(
                    f"einsum(): invalid subscript given at index {i} in the equation string, "
                    "subscripts must be in [a-zA-Z]"
                )
            op_labels[current].append(_LABELS.index(c))
        i += 1
    if current != num_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return op_labels


def _sublist_equation(args):
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])``: the sublist format, as an equation."""

    def letters(sublist):
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < len(_LABELS):
                out.append(_LABELS[s])
            else:
                raise ValueError(
                    f"einsum(): expected subscript to be within the range [0, 52), but got {s}"
                )
        return "".join(out)

    operands = list(args[0::2][: len(args) // 2])
    subs = [letters(s) for s in args[1::2][: len(args) // 2]]
    equation = ",".join(subs)
    if len(args) % 2:
        equation += "->" + letters(args[-1])
    return equation, operands


@public(function=True)
def einsum(*args):
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, "
            "or at least one operand and its subscripts list"
        )
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    return _einsum(equation, operands)


def _einsum(equation, operands):
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    num_ops = len(operands)
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    op_labels = _parse_operand_labels(lhs, num_ops)

    label_count = [0] * len(_LABELS)
    ell_num_dim = 0
    for i, (operand, labels) in enumerate(zip(operands, op_labels)):
        ndims = operand.dim()
        nlabels = len(labels)
        has_ellipsis = False
        for label in labels:
            if label == _ELLIPSIS:
                nlabels -= 1
                has_ellipsis = True
                ell_num_dim = max(ell_num_dim, ndims - nlabels)
            else:
                label_count[label] += 1
        if not (nlabels <= ndims if has_ellipsis else nlabels == ndims):
            middle = (
                ") is more than the number of dimensions ("
                if has_ellipsis
                else ") does not match the number of dimensions ("
            )
            tail = "" if has_ellipsis else " and no ellipsis was given"
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({nlabels}{middle}{ndims}) "
                f"for operand {i}{tail}"
            )

    # Each label's place in the aligned shape: output dims first, then contracted ones.
    perm_of = [-1] * len(_LABELS)
    perm_index = 0
    ell_index = 0
    ell_in_output = False
    if arrow < 0:
        perm_index = ell_num_dim
        ell_in_output = True
        for label in range(len(_LABELS)):
            if label_count[label] == 1:
                perm_of[label] = perm_index
                perm_index += 1
    else:
        rhs = equation[arrow + 2 :]
        i = 0
        while i < len(rhs):
            c = rhs[i]
            if c == " ":
                pass
            elif c == ".":
                if ell_in_output:
                    raise RuntimeError(
                        "einsum(): found '.' for output but an ellipsis (...) was already found"
                    )
                if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError(
                        "einsum(): found '.' for output that is not part of any ellipsis (...)"
                    )
                i += 2
                ell_index = perm_index
                perm_index += ell_num_dim
                ell_in_output = True
            else:
                if c not in _LABELS:
                    raise RuntimeError(
                        f"einsum(): invalid subscript given at index {len(lhs) + 2 + i} in the "
                        "equation string, subscripts must be in [a-zA-Z]"
                    )
                label = _LABELS.index(c)
                if label_count[label] == 0 or perm_of[label] != -1:
                    why = (
                        " appears more than once in the output"
                        if perm_of[label] > -1
                        else " does not appear in the equation for any input operand"
                    )
                    raise RuntimeError(f"einsum(): output subscript {c}{why}")
                perm_of[label] = perm_index
                perm_index += 1
            i += 1
    out_num_dim = perm_index
    if not ell_in_output:
        ell_index = perm_index
        perm_index += ell_num_dim
    for label in range(len(_LABELS)):
        if label_count[label] > 0 and perm_of[label] == -1:
            perm_of[label] = perm_index
            perm_index += 1

    # Align every operand to the same dims: diagonals for repeated labels, unsqueeze, permute.
    label_size = [1] * len(_LABELS)
    ell_sizes = [1] * ell_num_dim
    dim_counts = [0] * perm_index
    ops = []
    for i, operand in enumerate(operands):
        op = operand
        permutation = [-1] * perm_index
        dim = 0
        for s in op_labels[i]:
            if s == _ELLIPSIS:
                ndim = operand.dim() - (len(op_labels[i]) - 1)
                for j in range(ell_num_dim - ndim, ell_num_dim):
                    size = op.shape[dim]
                    if size != 1:
                        if ell_sizes[j] != 1 and ell_sizes[j] != size:
                            raise RuntimeError(
                                f"einsum(): dimension {dim} covered by ellipsis in operand {i}"
                                f"has size {size} which does not broadcast with previously seen "
                                f"ellipsis with size {ell_sizes[j]} for the respective dimension"
                            )
                        ell_sizes[j] = size
                        dim_counts[ell_index + j] += 1
                    permutation[ell_index + j] = dim
                    dim += 1
            elif permutation[perm_of[s]] == -1:
                size = op.shape[dim]
                if size != 1:
                    if label_size[s] != 1 and label_size[s] != size:
                        raise RuntimeError(
                            f"einsum(): subscript {_LABELS[s]} has size {size} for operand {i} "
                            f"which does not broadcast with previously seen size {label_size[s]}"
                        )
                    label_size[s] = size
                    dim_counts[perm_of[s]] += 1
                permutation[perm_of[s]] = dim
                dim += 1
            else:
                prev = permutation[perm_of[s]]
                if op.shape[dim] != op.shape[prev]:
                    raise RuntimeError(
                        f"einsum(): subscript {_LABELS[s]} is repeated for operand {i} but the "
                        f"sizes don't match, {op.shape[dim]} != {op.shape[prev]}"
                    )
                op = _movedim_last_to(diagonal(op, 0, prev, dim), prev)
        for k, value in enumerate(permutation):
            if value == -1:
                op = unsqueeze(op, dim)
                permutation[k] = dim
                dim += 1
        ops.append(permute(op, permutation))

    # Contract left to right (PyTorch without opt_einsum), summing dims as soon as possible.
    while len(ops) > 1:
        a, b = ops[0], ops[1]
        del ops[:2]
        sum_dims, a_sum, b_sum = [], [], []
        for d in range(out_num_dim, perm_index):
            if a.shape[d] != 1 and b.shape[d] != 1:
                dim_counts[d] -= 1
                if dim_counts[d] == 1:
                    sum_dims.append(d)
                    dim_counts[d] = 0
            elif dim_counts[d] == 1:
                if a.shape[d] != 1:
                    a_sum.append(d)
                    dim_counts[d] = 0
                elif b.shape[d] != 1:
                    b_sum.append(d)
                    dim_counts[d] = 0
        if a_sum:
            a = _sum(a, a_sum, True)
        if b_sum:
            b = _sum(b, b_sum, True)
        ops.insert(0, _sumproduct_pair(a, b, sum_dims))

    if perm_index - out_num_dim > 0:
        if num_ops > 1:
            return view(ops[0], tuple(ops[0].shape[:out_num_dim]))
        return _sum(ops[0], list(range(out_num_dim, perm_index)))
    return ops[0]


def _movedim_last_to(tensor, position):
    """``movedim(-1, position)``, which PyTorch records as one permute."""
    n = tensor.dim()
    order = list(range(n - 1))
    order.insert(position, n - 1)
    return permute(tensor, order)


def _sumproduct_pair(left, right, sum_dims):
    """``(left * right).sum(sum_dims, keepdim=True)`` through one bmm, as ATen computes it."""
    if not sum_dims:
        return mul(left, right)
    ndim = left.dim()
    summed = set(sum_dims)
    lro, lo, ro = [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(ndim):
        sl, sr = left.shape[i] != 1, right.shape[i] != 1
        if i in summed:
            if sl and sr:
                if left.shape[i] != right.shape[i]:
                    raise RuntimeError("non-broadcast dimensions must match")
                sum_size *= left.shape[i]
            elif sl:
                left = _sum(left, i, True)
            elif sr:
                right = _sum(right, i, True)
        elif sl and sr:
            if left.shape[i] != right.shape[i]:
                raise RuntimeError("non-broadcast dimensions must match")
            lro.append(i)
            lro_size *= left.shape[i]
        elif sl:
            lo.append(i)
            lo_size *= left.shape[i]
        else:
            ro.append(i)
            ro_size *= right.shape[i]
    out_size = (
        [left.shape[d] for d in lro]
        + [left.shape[d] for d in lo]
        + [1] * len(sum_dims)
        + [right.shape[d] for d in ro]
    )
    lperm = lro + lo + list(sum_dims) + ro
    rperm = lro + list(sum_dims) + ro + lo
    operm = [-1] * len(out_size)
    for position, d in enumerate(lro + lo + list(sum_dims) + ro):
        operm[d] = position
    left = reshape(permute(left, lperm), (lro_size, lo_size, sum_size))
    right = reshape(permute(right, rperm), (lro_size, sum_size, ro_size))
    return permute(view(bmm(left, right), tuple(out_size)), operm)


@public(function=True, out=True)
def tensordot(a, b, dims=2):
    """Contract ``dims`` of ``a`` with ``dims`` of ``b``: permute, reshape, mm, reshape."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a = list(range(-dims, 0))
        dims_b = list(range(dims))
    elif hasattr(dims, "dim") and not isinstance(dims, (list, tuple)):
        return tensordot(a, b, dims.tolist())
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists or an int")
        dims_a, dims_b = dims
        if isinstance(dims_a, int):
            dims_a = [dims_a]
        if isinstance(dims_b, int):
            dims_b = [dims_b]
        dims_a, dims_b = list(dims_a), list(dims_b)
    return _tensordot(a, b, dims_a, dims_b)


def _tensordot(input1, input2, dims1, dims2):
    if len(dims1) != len(dims2):
        raise RuntimeError("both dimension lists should have same length")
    if input1._dtype is not input2._dtype:
        raise RuntimeError("both inputs should have same dtype")
    # Permuted by the dims as given (PermuteBackward0 saves -1 as -1), compared wrapped.
    wrapped1 = [wrap_dim(d, input1.dim()) for d in dims1]
    wrapped2 = [wrap_dim(d, input2.dim()) for d in dims2]
    csize = 1
    t1, t2 = input1, input2
    for d1, d2 in zip(dims1, dims2):
        s1, s2 = input1.shape[d1], input2.shape[d2]
        if s2 == 1:
            t1 = _sum(t1, d1, True)
        elif s1 == 1:
            t2 = _sum(t2, d2, True)
        else:
            if s1 != s2:
                raise RuntimeError(
                    f"contracted dimensions need to match, but first has size {s1} in dim {d1} "
                    f"and second has size {s2} in dim {d2}"
                )
            csize *= s1
    p1, p2, rsizes = [], [], []
    size1 = size2 = 1
    for i in range(input1.dim()):
        if i not in wrapped1:
            p1.append(i)
            size1 *= t1.shape[i]
            rsizes.append(t1.shape[i])
    p1 += dims1
    p2 += dims2
    for i in range(input2.dim()):
        if i not in wrapped2:
            p2.append(i)
            size2 *= t2.shape[i]
            rsizes.append(t2.shape[i])
    t1, t2 = permute(t1, p1), permute(t2, p2)
    if size1 == 1 and size2 == 1:
        # A full contraction: a dot product of the flattened operands when both are laid out
        # contiguously, else the sum of their product (PyTorch's graph either way).
        if t1._data.flags.c_contiguous and t2._data.flags.c_contiguous:
            product = dot(flatten(t1), flatten(t2))
        else:
            product = _sum(mul(squeeze(t1), squeeze(t2)))
        return view(product, tuple(rsizes))
    t1 = reshape(t1, (size1, csize))
    t2 = reshape(t2, (csize, size2))
    return reshape(mm(t1, t2), tuple(rsizes))
