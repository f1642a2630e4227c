"""Tensor.as_strided_ against PyTorch 2.13: the tensor itself takes the new geometry,
AsStridedBackward1 with its saved size, stride and offset, the version bump, values, first and
second derivatives, and the errors (a leaf, a geometry out of bounds, mismatched lengths)."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

CALLS = {
    "offset": lambda T, x: (x * 1).as_strided_((2, 2), (1, 2), 1),
    "every-other": lambda T, x: (x * 1).as_strided_((3,), (2,)),
    "of-a-view": lambda T, x: (x * 1)[1].as_strided_((2,), (1,)),
    "of-a-transpose": lambda T, x: (x * 1).t().as_strided_((2, 3), (1, 2)),
    "overlapping": lambda T, x: (x * 1).as_strided_((2, 2), (1, 1)),
    "leaf": lambda T, x: x.as_strided_((2,), (1,)),
    "out-of-bounds": lambda T, x: (x * 1).as_strided_((4, 4), (1, 1)),
    "lengths": lambda T, x: (x * 1).as_strided_((2,), (1, 1)),
}


def outcome(T, make):
    x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    try:
        z = make(T, x)
    except Exception as error:  # noqa: BLE001 - compared by type and message
        return ("raises", type(error).__name__, str(error))
    node = z.grad_fn
    seen = [
        node.name(),
        {a: getattr(node, a) for a in dir(node) if a.startswith("_saved_")},
        [type(n).__name__ for n, _ in node.next_functions],
        z._version,
        tuple(z.shape),
        z.stride(),
        z.tolist(),
    ]
    weights = T.tensor(np.arange(1.0, 1 + z.numel()).reshape(tuple(z.shape)))
    (grad,) = T.autograd.grad((z * z * weights).sum(), x, create_graph=True)
    (second,) = T.autograd.grad((grad * grad).sum(), x)
    return seen + [grad.tolist(), second.tolist()]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_as_strided_inplace_matches_pytorch(name):
    assert outcome(nbgrad, CALLS[name]) == outcome(torch, CALLS[name])


def test_it_returns_the_tensor_itself():
    y = nbgrad.arange(6.0, requires_grad=True) * 1
    assert y.as_strided_((2, 2), (2, 1), 1) is y
    assert y.tolist() == [[1.0, 2.0], [3.0, 4.0]]
