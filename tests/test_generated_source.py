"""Code nbgrad writes at run time shows its lines in tracebacks, as a file's code does."""

import traceback

import numpy as np
import pytest

import nbgrad
from nbgrad.flags import FAST_PATHS
from nbgrad.generated import source
from nbgrad.ops.derivatives import OPS


def test_a_traceback_through_a_written_out_backward_shows_its_line():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.grad_fn._saved[0].data = np.ones(3)  # a saved value of the wrong shape: the formula fails
    with pytest.raises(ValueError) as failure:
        y.sum().backward()
    frames = traceback.extract_tb(failure.value.__traceback__)
    if FAST_PATHS:  # the backward written out for MulBackward0 (nbgrad/autograd/plain_backward)
        (frame,) = [f for f in frames if f.filename == "<MulBackward0 backward>"]
        assert "(grad * other) if edge0 is not None else None" in frame.line
    else:  # the general path: the table's formula for the input `self`, compiled alone
        (frame,) = [f for f in frames if f.filename == "<MulBackward0: self>"]
        assert frame.line == "lambda grad, other, self: grad * other"


def test_generated_sources_can_be_read_whole():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    (x.exp() * 2).sum().backward()
    if FAST_PATHS:
        text = source("<ExpBackward0 backward>")
        assert text.startswith("def apply(node, grads, create_graph):")
        assert "grad * result" in text
    OPS["exp"].array_vjps  # noqa: B018 - the plain formulas are compiled on first use (spec.py)
    assert source("<ExpBackward0: self>") == "lambda grad, result: grad * result"
