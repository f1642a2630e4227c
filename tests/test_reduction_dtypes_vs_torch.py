"""Reductions that take ``dtype=`` accumulate in it inside their own node, as PyTorch's do (no
ToCopyBackward0 below SumBackward0), and give the gradient back in the input's dtype; a result
of an integer or bool dtype from an input that requires grad is refused, as in PyTorch
("Autograd not support dtype"), except for a plain cast (``x.long()``), which drops the graph."""

import pytest

import nbgrad

CALLS = [
    "x.sum(dtype=T.float64)",
    "x.mean(dtype=T.float64)",
    "x.prod(dtype=T.float64)",
    "x.sum(1, dtype=T.float64)",
    "x.mean(1, dtype=T.float64)",
    "x.prod(1, dtype=T.float64)",
    "x.half().sum(0, keepdim=True, dtype=T.float32)",
    "x.nansum(dtype=T.float64)",
    "x.cumsum(0, dtype=T.float64)",
    "T.prod(x.detach(), dtype=T.bool)",
    "T.sum(x.detach(), dtype=T.bool)",
    "T.sum(x, dtype=T.int64)",
    "T.prod(x, dtype=T.bool)",
    "T.nansum(x, dtype=T.int64)",
    "x.cumsum(0, dtype=T.int32)",
    "T.mean(x, dtype=T.int64)",
    "T.mean(T.tensor([1, 2]), dtype=T.float32)",
    "T.mean(T.tensor([1, 2]))",
    "T.sum(T.tensor([True, True]))",
    "T.prod(T.tensor([2, 3], dtype=T.int8))",
    "T.sum(T.tensor([1.5, 2.5], dtype=T.float16), dtype=T.float64)",
    "T.sum(T.tensor([100, 100], dtype=T.int8), dtype=T.int8)",
    "x.long()",
    "x.to(T.bool)",
]


def _seen(T, call):
    x = T.tensor([[1.0, 2.0, 2.0], [3.0, 4.0, 5.0]], requires_grad=True)
    try:
        r = eval(call, {"T": T, "x": x})  # noqa: S307 - the calls above
    except RuntimeError as error:
        return "RuntimeError", str(error)
    seen = [str(r.dtype), r.tolist(), r.requires_grad]
    if r.grad_fn is not None:
        seen.append([type(n).__name__ for n, _ in r.grad_fn.next_functions])
        r.sum().backward()
        seen += [str(x.grad.dtype), x.grad.tolist()]
    return seen


@pytest.mark.parametrize("call", CALLS)
def test_as_pytorch(torch, call):
    assert _seen(nbgrad, call) == _seen(torch, call)
