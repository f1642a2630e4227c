"""Writing by index into an expanded tensor: PyTorch checks the part written, not the whole
tensor (``w[0] = 2`` on ``ones(2, 3).expand(2, 2, 3)`` writes a plain 2x3 block; ``w[:, 0] = 3``
writes a block that repeats elements and is refused), and writes through index arrays with a
deprecation notice."""

import warnings

import pytest

import nbgrad

WRITES = [
    "w[0] = 2.0",
    "w[:, 0] = 3.0",
    "w[0, 1] = 4.0",
    "w[0, 1, 2] = 5.0",
    "w[...] = 1.0",
    "w[1] = T.tensor([7.0, 8.0, 9.0])",
    "w[[0], 0] = 3.0",
    "w[T.tensor([True, False])] = 6.0",
    "w[T.tensor([True, False])] = T.tensor(6.0)",
    "w[T.tensor([True, False])] = T.tensor([1.0, 2.0, 3.0])",
]


def outcome(T, write, recorded):
    source = T.ones(2, 3, requires_grad=True) * 1 if recorded else T.ones(2, 3)
    w = source.expand(2, 2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(write, {"T": T, "w": w})  # noqa: S102
        except RuntimeError as error:
            return "RuntimeError", str(error)
    notices = sorted(str(n.message).split(" (Triggered internally")[0] for n in caught)
    return w.tolist(), source.tolist(), notices, w._version


@pytest.mark.parametrize("write", WRITES)
def test_plain_writes_as_torch(torch, write):
    assert outcome(nbgrad, write, False) == outcome(torch, write, False)


@pytest.mark.parametrize("write", WRITES)
def test_recorded_writes_are_refused_at_once(torch, write):
    """README, differences: with a graph, nbgrad refuses any write into an expanded tensor with
    the overlap error, where PyTorch refuses those whose written part repeats elements (the
    same error) and takes the others."""
    ours, theirs = outcome(nbgrad, write, True), outcome(torch, write, True)
    assert ours[0] == "RuntimeError" and "more than one element" in ours[1]
    if theirs[0] == "RuntimeError":
        assert ours == theirs


def test_recorded_write_through_index_arrays_is_refused_at_once(torch):
    """README, differences: PyTorch writes, warns, and refuses at backward; nbgrad refuses the
    write itself with the error PyTorch's backward gives."""
    source = torch.ones(2, 3, requires_grad=True) * 1
    w = source.expand(2, 2, 3)
    with pytest.warns(UserWarning, match="index_put_ on expanded tensors is deprecated"):
        w[[0]] = 2.0
    with pytest.raises(RuntimeError) as theirs:
        w.sum().backward()
    ours_source = nbgrad.ones(2, 3, requires_grad=True) * 1
    with pytest.raises(RuntimeError) as ours:
        ours_source.expand(2, 2, 3)[[0]] = 2.0
    assert str(ours.value) == str(theirs.value)
