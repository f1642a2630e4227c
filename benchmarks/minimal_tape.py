"""The least Python a tape-based autograd on NumPy can run: a reference row for ``mlp.py``.

Each value keeps the values it came from and a closure that, given its gradient, adds the
gradients of those values into them; ``backward`` orders the values and calls the closures. Just
the eight operations the MLP benchmark uses, with nothing else: no grad_fn objects or
``next_functions``, no saved-tensor version checks or freeing, no hooks, no grad modes, no shape
checks, no type promotion, no dependency counting (a depth-first order instead).

It measures the floor under any engine of this kind on this machine, so that a target can be
judged against it: what nbgrad spends above this row is the price of behaving like PyTorch.
"""

import numpy as np


class Value:
    __slots__ = ("data", "grad", "parents", "backward")

    def __init__(self, data, parents=(), backward=None):
        self.data = data
        self.grad = None
        self.parents = parents
        self.backward = backward


def _add_grad(value, grad):
    value.grad = grad if value.grad is None else value.grad + grad


def addmm(bias, x, weight):
    def backward(grad):
        _add_grad(bias, grad.sum(axis=0))
        _add_grad(weight, x.data.T @ grad)
        if x.parents:  # only an input made by an operation needs its gradient
            _add_grad(x, grad @ weight.data.T)

    product = x.data @ weight.data
    product += bias.data
    return Value(product, (bias, x, weight), backward)


def relu(a):
    result = np.maximum(a.data, 0)
    return Value(result, (a,), lambda grad: _add_grad(a, grad * (result > 0)))


def log_softmax(a):
    shifted = a.data - a.data.max(axis=1, keepdims=True)
    result = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    def backward(grad):
        _add_grad(a, grad - np.exp(result) * grad.sum(axis=1, keepdims=True))

    return Value(result, (a,), backward)


def mul_constant(a, constant):
    return Value(a.data * constant, (a,), lambda grad: _add_grad(a, grad * constant))


def sum_rows(a):
    shape = a.data.shape
    return Value(
        a.data.sum(axis=1), (a,), lambda grad: _add_grad(a, np.broadcast_to(grad[:, None], shape))
    )


def mean(a):
    shape, size = a.data.shape, a.data.size
    total = np.add.reduce(a.data, axis=None)
    return Value(total / size, (a,), lambda grad: _add_grad(a, np.broadcast_to(grad / size, shape)))


def neg(a):
    return Value(-a.data, (a,), lambda grad: _add_grad(a, -grad))


def backward(root):
    """Every value reachable from ``root`` after those it feeds, then the closures in turn."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        value, parents_done = stack.pop()
        if parents_done:
            order.append(value)
        elif id(value) not in seen:
            seen.add(id(value))
            stack.append((value, True))
            stack.extend((parent, False) for parent in value.parents)
    root.grad = np.ones_like(root.data)
    for value in reversed(order):
        if value.backward is not None and value.grad is not None:
            value.backward(value.grad)


def model_loss(x, onehot, params):
    """The MLP of ``mlp.model_loss``, written with the operations above."""
    hidden = relu(addmm(params["b1"], x, params["W1"]))
    logits = addmm(params["b2"], hidden, params["W2"])
    return neg(mean(sum_rows(mul_constant(log_softmax(logits), onehot))))
