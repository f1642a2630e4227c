"""``backward()`` and ``autograd.grad()``: check arguments as PyTorch does, then run the engine."""

import warnings

import numpy as np

from nbgrad.autograd import engine, errors
from nbgrad.autograd.node import edge_of
from nbgrad.autograd.tensor import Tensor


def _as_tuple(tensors):
    if isinstance(tensors, Tensor):
        return (tensors,)
    return tuple(tensors)


def _implicit_grad(output):
    """The gradient ``backward()`` starts from without one given: 1, for a scalar output only."""
    data = output._data
    if data.size != 1:
        raise RuntimeError(errors.NOT_SCALAR)
    return np.ones(data.shape, data.dtype)


def _root_grads(outputs, grad_outputs, create_graph):
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = (
            _as_tuple(grad_outputs) if not isinstance(grad_outputs, Tensor) else (grad_outputs,)
        )
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(grad_outputs)} tensors and {len(outputs)} gradients")
    grads = []
    for i, (out, grad) in enumerate(zip(outputs, grad_outputs)):
        if grad is None:
            ones = _implicit_grad(out)
            grads.append(Tensor._make(ones) if create_graph else ones)
            continue
        elif not isinstance(grad, Tensor):
            grad = Tensor._make(np.asarray(grad, dtype=out._data.dtype))
        elif grad._data.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and output[{i}] "
                f"has a shape of {out.shape}."
            )
        if grad._dtype is not out._dtype and grad._dtype.is_floating_point:
            # PyTorch's engine casts a root's gradient to its output's dtype first
            # (validate_outputs): a float64 gradient for a float32 output runs in float32.
            grad = grad.to(out.dtype)
        grads.append(grad if create_graph else grad._data)
    return grads


_warned_cycle = False  # whether backward(create_graph=True) has warned (PyTorch: once a process)


def _warn_reference_cycle():
    global _warned_cycle
    if not _warned_cycle:
        _warned_cycle = True
        warnings.warn(errors.CREATE_GRAPH_CYCLE_WARNING, UserWarning, stacklevel=4)


def _roots(outputs):
    roots = []
    for i, out in enumerate(outputs):
        if not out.requires_grad:  # the property: a view's history may be due for a refresh
            raise RuntimeError(errors.no_grad_fn(i))
        roots.append(edge_of(out))
    return roots


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves of their graph."""
    if (
        type(tensors) is Tensor
        and grad_tensors is None
        and inputs is None
        and not create_graph
        and tensors.grad_fn is not None  # the property: a view may have a new history
    ):
        # ``loss.backward()``, once per training step: the checks below, for one scalar.
        edge = (tensors._grad_fn, tensors._output_nr)
        engine.execute((edge,), (_implicit_grad(tensors),), bool(retain_graph), False)
        return
    tensors = _as_tuple(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(tensors)
    grads = _root_grads(tensors, grad_tensors, create_graph)
    if create_graph:  # PyTorch's engine, when asked to accumulate into .grad with a graph
        _warn_reference_cycle()
    if inputs is None:
        engine.execute(roots, grads, retain_graph, create_graph)
        return
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    capture = [edge_of(t) for t in inputs]
    run_only = {edge[0] for t, edge in zip(inputs, capture) if t._grad_fn is None}
    captured = engine.execute(
        roots, grads, retain_graph, create_graph, capture=capture, run_only=run_only
    )
    for t, grad in zip(inputs, captured):
        # A non-leaf input gets the gradient that reached it in its .grad here (the engine does
        # not retain it as well, even if the tensor retains its grad).
        if t._grad_fn is not None and grad is not None:
            engine.accumulate_into_leaf(t, grad, create_graph)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` untouched)."""
    if is_grads_batched:
        raise NotImplementedError("nbgrad.autograd.grad does not support is_grads_batched")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
            "allow_unused=False."
        )
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(outputs)
    grads = _root_grads(outputs, grad_outputs, create_graph)
    # (after the outputs' checks, as PyTorch's engine: an output without grad is named first)
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    capture = [edge_of(t) for t in inputs]
    versions = [0] * len(capture)
    captured = engine.execute(
        roots, grads, retain_graph, create_graph, capture=capture, capture_versions=versions
    )
    results = []
    made = {}  # id(array) -> its Tensor: an input listed twice gets the same tensor, as in PyTorch
    for i, (t, g) in enumerate(zip(inputs, captured)):
        if g is None:
            if materialize_grads:
                g = np.zeros(t._data.shape, t._data.dtype)
            elif not allow_unused:
                raise RuntimeError(errors.unused_input(i))
            else:
                results.append(None)
                continue
        if not isinstance(g, Tensor):
            tensor = made.get(id(g))
            if tensor is None:
                tensor = made[id(g)] = Tensor._make(np.asarray(g))
                if versions[i]:
                    tensor._version_counter.value = versions[i]
            g = tensor
        results.append(g)
    return tuple(results)
