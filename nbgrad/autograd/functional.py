"""``torch.autograd.functional``: Jacobians, Hessians and vector products of whole functions,
built on ``autograd.grad`` (one backward pass per output element for a Jacobian)."""

import numpy as np

from nbgrad.autograd import grad_mode
from nbgrad.autograd.api import grad
from nbgrad.autograd.tensor import Tensor


def _as_tuple(value):
    return (value, False) if isinstance(value, tuple) else ((value,), True)


def _ready(inputs, create_graph):
    """Inputs that can be differentiated: fresh leaves, or (create_graph) the inputs themselves
    made to require grad, so that the result stays differentiable with respect to them."""
    if create_graph:
        return tuple(x if x.requires_grad else x.detach().requires_grad_() for x in inputs)
    return tuple(x.detach().requires_grad_() for x in inputs)


def _zeros_if_none(grads, inputs):
    return tuple(
        Tensor._make(np.zeros(x._data.shape, x._data.dtype)) if g is None else g
        for g, x in zip(grads, inputs)
    )


def _tangents(inputs, v):
    """``v`` as a tuple of tensors; None stands for 1 when the input is one single element."""
    if v is None:
        if len(inputs) != 1 or inputs[0]._data.size != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element."
            )
        v = Tensor._make(np.ones(inputs[0]._data.shape, inputs[0]._data.dtype))
    return _as_tuple(v)[0]


def _detached(values, create_graph):
    return values if create_graph else tuple(v.detach() for v in values)


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """d func(inputs) / d inputs: for each output and input, a tensor of shape
    ``output.shape + input.shape`` (nested in tuples where ``func`` takes or returns tuples)."""
    if strategy != "reverse-mode":
        raise NotImplementedError("nbgrad computes Jacobians in reverse mode only")
    inputs, single_input = _as_tuple(inputs)
    inputs = _ready(inputs, create_graph)
    with grad_mode.enable_grad():
        outputs, single_output = _as_tuple(func(*inputs))
        rows = []
        for out in outputs:
            per_input = [[] for _ in inputs]
            flat_size = out._data.size
            for k in range(flat_size):
                seed = np.zeros(flat_size, out._data.dtype)
                seed[k] = 1
                grads = grad(
                    out,
                    inputs,
                    Tensor._make(seed.reshape(out._data.shape)),
                    retain_graph=True,
                    create_graph=create_graph,
                    allow_unused=True,
                )
                for i, g in enumerate(_zeros_if_none(grads, inputs)):
                    per_input[i].append(g)
            blocks = []
            for x, pieces in zip(inputs, per_input):
                shape = (*out._data.shape, *x._data.shape)
                if pieces:
                    # Imported here: the ops layer imports this package when it loads.
                    from nbgrad.ops.functions import reshape, stack

                    block = reshape(stack(pieces), shape)
                else:
                    block = Tensor._make(np.zeros(shape, x._data.dtype))
                blocks.append(block)
            rows.append(_detached(tuple(blocks), create_graph))
    if single_output:
        rows = rows[0]
        return rows[0] if single_input else rows
    return tuple(r[0] for r in rows) if single_input else tuple(rows)


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """Second derivatives of a scalar function: the Jacobian of its gradient."""
    packed, single_input = _as_tuple(inputs)

    def gradient(*args):
        out = func(*args)
        grads = grad(out, args, create_graph=True, allow_unused=True)
        result = _zeros_if_none(grads, args)
        return result[0] if single_input else result

    return jacobian(gradient, inputs, create_graph=create_graph)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product backward computes."""
    inputs, single_input = _as_tuple(inputs)
    inputs = _ready(inputs, create_graph)
    with grad_mode.enable_grad():
        outputs = func(*inputs)
        grads = grad(outputs, inputs, v, create_graph=create_graph, allow_unused=True)
    grads = _detached(_zeros_if_none(grads, inputs), create_graph)
    outputs = outputs if create_graph else outputs.detach()
    return outputs, grads[0] if single_input else grads


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``, by differentiating a vector-Jacobian product (the "double
    backward trick"), as PyTorch's reverse-mode jvp does."""
    inputs, single_input = _as_tuple(inputs)
    inputs = _ready(inputs, create_graph)
    tangents = _tangents(inputs, v)
    with grad_mode.enable_grad():
        out = func(*inputs)
        dummy = Tensor._make(np.zeros(out._data.shape, out._data.dtype)).requires_grad_()
        grads = grad(out, inputs, dummy, create_graph=True, allow_unused=True)
        used = [(g, t) for g, t in zip(grads, tangents) if g is not None]
        if used:
            (result,) = grad(
                [g for g, _ in used],
                dummy,
                [t for _, t in used],
                create_graph=create_graph,
                allow_unused=True,
            )
        else:
            result = None
    if result is None:
        result = Tensor._make(np.zeros(out._data.shape, out._data.dtype))
    if not create_graph:
        out, result = out.detach(), result.detach()
    return out, result


def _hessian_product(name, func, inputs, v, create_graph):
    """``(func(inputs), v^T H)`` for a function returning one element: its gradient, taken
    with ``create_graph``, differentiated again along ``v``."""
    inputs, single_input = _as_tuple(inputs)
    inputs = _ready(inputs, create_graph)
    tangents = _tangents(inputs, v)
    for x, t in zip(inputs, tangents):
        if tuple(x.shape) != tuple(t.shape):
            raise RuntimeError(f"v has invalid size: should be {x.shape} but got {t.shape}.")
    with grad_mode.enable_grad():
        out = func(*inputs)
        if out._data.size != 1:
            raise RuntimeError(
                f"The Tensor returned by the function given to {name} should contain a single "
                "element"
            )
        grads = grad(out, inputs, create_graph=True, allow_unused=True)
        used = [(g, t) for g, t in zip(grads, tangents) if g is not None and g.requires_grad]
        if used:
            second = grad(
                [g for g, _ in used],
                inputs,
                [t for _, t in used],
                create_graph=create_graph,
                allow_unused=True,
            )
        else:
            second = (None,) * len(inputs)
    result = _detached(_zeros_if_none(second, inputs), create_graph)
    out = out if create_graph else out.detach()
    return out, result[0] if single_input else result


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``: a vector times the Hessian of a one-element function."""
    return _hessian_product("vhp", func, inputs, v, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)``: the Hessian of a one-element function times a vector; the
    Hessian of a twice-differentiable function is symmetric, so this is ``vhp``'s product
    (PyTorch computes it by the double-backward trick: the same numbers up to rounding)."""
    return _hessian_product("hvp", func, inputs, v, create_graph)
