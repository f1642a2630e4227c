"""One reader of finished graphs for both engines (nbgrad/trace/graph_reader.py): the same
program on nbgrad and on PyTorch reads into the same Trace (nodes, edges, names, saved values,
grads), apart from the engine's name."""

import numpy as np
import pytest

import nbgrad
from nbgrad.trace.graph_reader import trace_of_tensor

torch = pytest.importorskip("torch")
from nbgrad.trace.torch_bridge import trace_of_torch_tensor  # noqa: E402


def program(T):
    w = T.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=T.float64, requires_grad=True)
    x = T.tensor([1.0, 3.0], dtype=T.float64)
    hidden = (w @ x).tanh()
    loss = (hidden * hidden).sum() + w.sum()
    loss.backward(retain_graph=True)
    return loss, {"w": w, "x": x, "hidden": hidden, "loss": loss}


def described(trace):
    tensors = {
        name: (
            r.shape,
            r.dtype,
            r.role,
            r.requires_grad,
            np.round(np.asarray(r.value), 10).tolist(),
        )
        for name, r in trace.tensors.items()
    }
    grads = {
        name: np.round(np.asarray(r.grad), 10).tolist()
        for name, r in trace.tensors.items()
        if r.grad is not None
    }
    nodes = []
    for node in trace.nodes:
        saved = {
            k: (v.name if (v := node.saved_tensors.get(k)) is not None else repr(node.saved[k]))
            for k in node.saved
        }
        edges = [(None if child is None else child.name, nr) for child, nr in node.next]
        variable = node.variable.name if node.variable is not None else None
        nodes.append((node.name, edges, saved, variable, node.op_name))
    return tensors, grads, nodes


def test_both_engines_read_into_the_same_trace():
    ours = trace_of_tensor(*program(nbgrad))
    theirs = trace_of_torch_tensor(*program(torch))
    assert ours.engine[0] == "nbgrad" and theirs.engine[0] == "torch"
    assert described(ours) == described(theirs)


def test_repeated_names_are_numbered_as_the_recorders_number_them():
    a = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (a * a) * (a * a)
    trace = trace_of_tensor(y, {"a": a, "y": y})
    names = sorted(trace.tensors)
    assert "saved by MulBackward0#1" in names and "saved by MulBackward0#2" in names
