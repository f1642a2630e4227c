"""Writing in place from a tensor whose memory overlaps the written one's in part: PyTorch
refuses (its TensorIterator asks get_overlap_status first), NumPy would compute something.
Each case against PyTorch 2.13, and PyTorch's outcome written out for the torch-free runs."""

import pytest

import nbgrad

MESSAGE = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation."
)

CASES = {  # name: (program, PyTorch's result, or None when it raises)
    "same tensor": (lambda T, y: y.add_(y), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
    "same memory, same layout": (lambda T, y: y.add_(y.view(6)), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
    "a slice of itself": (lambda T, y: y.add_(y.narrow(0, 0, 1)), None),
    "shifted": (lambda T, y: y[1:].add_(y[:-1]), None),
    "an element of itself": (lambda T, y: y.mul_(y[0]), None),
    "a row of itself": (lambda T, y: y.view(2, 3).sub_(y.view(2, 3)[0]), None),
    "transposed": (lambda T, y: y[:4].view(2, 2).add_(y[:4].view(2, 2).t()), None),
    "copy_ shifted": (lambda T, y: y[1:].copy_(y[:-1]), None),
    "out= shifted": (lambda T, y: T.add(y[1:], y[:-1], out=y[:-1]), None),
    "every other element (PyTorch: too hard to tell)": (
        lambda T, y: y[::2].add_(y[1::2]),
        [1.0, 5.0, 9.0],
    ),
    "a clone": (lambda T, y: y.add_(y.clone()), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
}


def outcome(T, name):
    y = T.arange(6.0)
    before = y.tolist()
    try:
        return CASES[name][0](T, y).tolist()
    except RuntimeError as error:
        assert y.tolist() == before  # refused before anything was written
        return ("RuntimeError", str(error))


@pytest.mark.parametrize("name", CASES)
def test_partial_overlap_is_refused_as_pytorch_says(name):
    expected = CASES[name][1]
    assert outcome(nbgrad, name) == (("RuntimeError", MESSAGE) if expected is None else expected)


@pytest.mark.parametrize("name", CASES)
def test_partial_overlap_against_real_pytorch(torch, name):
    assert outcome(nbgrad, name) == outcome(torch, name)
