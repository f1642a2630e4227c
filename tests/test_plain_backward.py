"""The written-out plain backward of each table op (nbgrad/autograd/plain_backward.py) against
the general path it replaces (``TableNode.apply_formulas``), on every case of the
finite-difference suite: the same gradients, to the bit, for every node that ran."""

import numpy as np
import pytest

import nbgrad as torch
from nbgrad.autograd import observe
from nbgrad.autograd.node import TableNode
from nbgrad.flags import FAST_PATHS
from tests.test_gradcheck_ops import CASES, _ids, _leaves, _tensors

# With NBGRAD_FAST_PATHS=0 no backward is written out: there is nothing to compare.
pytestmark = pytest.mark.skipif(not FAST_PATHS, reason="the written-out backward is a fast path")


@pytest.mark.parametrize("c", CASES, ids=_ids(CASES))
def test_written_out_backward_matches_the_general_path(c):
    leaves = _leaves(c.arrays)
    outputs = [o for o in _tensors(c.fn(*leaves)) if o.requires_grad]
    if not outputs:
        pytest.skip("no output requires grad")
    runs = []

    def listener(node, grads, results):
        if isinstance(node, TableNode):
            runs.append((node, list(grads), results))

    observe.node_listeners.append(listener)
    try:
        root = sum(
            (o * torch.tensor(np.cos(np.arange(o.numel())).reshape(o.shape))).sum() for o in outputs
        )
        root.backward(retain_graph=True)
    finally:
        observe.node_listeners.remove(listener)
    assert runs
    for node, grads, _ in runs:
        assert type(node).apply is not TableNode.apply or node.spec.variadic
        results = node.apply(grads, False)
        general = node.apply_formulas(grads, False)
        assert len(general) == len(results)
        for expected, got in zip(general, results):
            assert (expected is None) == (got is None), node.name()
            if got is not None:
                np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
