"""torch.unique and torch.unique_consecutive against PyTorch 2.13: the values, inverse indices
and counts, the node a float input that requires grad records (Unique2Backward0,
UniqueDimBackward0, UniqueConsecutiveBackward0, UniqueBackward0) and the NotImplementedError its
backward raises, and the errors of bad dims."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

NAN = float("nan")
DATA = [[1.0, 3.0, 1.0, NAN], [2.0, 3.0, 2.0, 1.0]]

CALLS = {
    "unique": lambda T, x: T.unique(x),
    "unique-all": lambda T, x: T.unique(x, sorted=False, return_inverse=True, return_counts=True),
    "unique-method-counts": lambda T, x: x.unique(return_counts=True),
    "unique-dim": lambda T, x: T.unique(x[:, :3], dim=1, return_inverse=True),
    "unique-dim-method": lambda T, x: x[:, :3].unique(dim=0, return_counts=True),
    "unique-dim-negative": lambda T, x: T.unique(x[:, :3], dim=-1, return_counts=True),
    "unique_consecutive": lambda T, x: T.unique_consecutive(x),
    "unique_consecutive-all": lambda T, x: T.unique_consecutive(
        x, return_inverse=True, return_counts=True
    ),
    "unique_consecutive-dim": lambda T, x: x.unique_consecutive(dim=1, return_counts=True),
    "_unique": lambda T, x: T._unique(x),
    "_unique-inverse": lambda T, x: T._unique(x, return_inverse=True),
    "_unique2": lambda T, x: T._unique2(x, return_counts=True),
    "integers": lambda T, x: T.unique(T.tensor([3, 1, 3]), return_inverse=True),
    "empty": lambda T, x: T.unique(T.zeros(0, requires_grad=True), return_counts=True),
    "0-d": lambda T, x: T.unique(T.tensor(2.5, requires_grad=True), return_inverse=True),
    "through-a-graph": lambda T, x: T.unique((x * 2)[0], return_counts=True),
    "bad-dim": lambda T, x: T.unique(x, dim=5),
    "bad-dim-consecutive": lambda T, x: T.unique_consecutive(x, dim=-3),
}


def outcome(T, call):
    x = T.tensor(DATA, requires_grad=True)
    try:
        result = call(T, x)
    except Exception as error:  # noqa: BLE001 - compared by type and message
        return ("raises", type(error).__name__, str(error))
    results = result if isinstance(result, tuple) else (result,)
    seen = []
    for t in results:
        node = t.grad_fn
        seen.append(
            (
                None if node is None else node.name(),
                None if node is None else [type(n).__name__ for n, _ in node.next_functions],
                t.requires_grad,
                str(t.dtype).split(".")[-1],
                tuple(t.shape),
                np.nan_to_num(t.detach().numpy(), nan=-99.0).tolist(),
            )
        )
    if results[0].requires_grad:
        try:
            results[0].sum().backward()
            seen.append("backward ran")
        except Exception as error:  # noqa: BLE001
            seen.append((type(error).__name__, str(error)))
    return seen


@pytest.mark.parametrize("name", sorted(CALLS))
def test_unique_matches_pytorch(name):
    assert outcome(nbgrad, CALLS[name]) == outcome(torch, CALLS[name])


def test_the_values_by_hand():
    """Sorted, NaN last and never equal to another NaN; runs counted in order."""
    x = nbgrad.tensor([3.0, 1.0, NAN, 3.0, NAN, 1.0, 1.0])
    values, inverse, counts = nbgrad.unique(x, return_inverse=True, return_counts=True)
    assert np.nan_to_num(values.numpy(), nan=-1).tolist() == [1.0, 3.0, -1.0, -1.0]
    assert inverse.tolist() == [1, 0, 2, 1, 3, 0, 0]
    assert counts.tolist() == [3, 2, 1, 1]
    values, counts = nbgrad.unique_consecutive(x, return_counts=True)
    assert np.nan_to_num(values.numpy(), nan=-1).tolist() == [3, 1, -1, 3, -1, 1]
    assert counts.tolist() == [1, 1, 1, 1, 1, 2]


def test_a_bigger_unsorted_request_is_sorted_as_on_pytorchs_cpu():
    data = np.random.default_rng(5).integers(0, 40, 300).astype(np.float64)
    ours = nbgrad.unique(nbgrad.tensor(data), sorted=False, return_counts=True)
    theirs = torch.unique(torch.tensor(data), sorted=False, return_counts=True)
    for a, b in zip(ours, theirs):
        assert a.tolist() == b.tolist()
