"""``out=``: the result is written into an existing tensor, as in PyTorch."""

import numpy as np
import pytest

import nbgrad


def test_out_receives_the_result_and_is_returned(torch):
    for T in (nbgrad, torch):
        a = T.tensor([[1.0, 2.0], [3.0, 4.0]])
        out = T.zeros(2, 2)
        returned = T.matmul(a, a.T, out=out)
        assert returned is out
        np.testing.assert_allclose(out.numpy(), [[5.0, 11.0], [11.0, 25.0]])
        T.mul(a, a, out=out)
        np.testing.assert_allclose(out.numpy(), [[1.0, 4.0], [9.0, 16.0]])


def test_out_of_another_shape_is_resized(torch):
    shapes = []
    for T in (nbgrad, torch):
        out = T.empty(3)
        T.add(T.ones(2), T.ones(2), out=out)
        shapes.append((tuple(out.shape), out.tolist()))
    assert shapes[0] == shapes[1] == ((2,), [2.0, 2.0])


@pytest.mark.parametrize(
    "code",
    [
        "T.mul(T.ones(2, requires_grad=True), 2.0, out=T.empty(2))",
        "T.add(T.ones(2), T.ones(2), out=T.empty(2, dtype=T.int64))",
    ],
)
def test_out_errors_match_pytorch(torch, code):
    messages = []
    for T in (nbgrad, torch):
        with pytest.raises(RuntimeError) as error:
            eval(code, {"T": T})  # noqa: S307 - our own test table
        messages.append(str(error.value))
    assert messages[0] == messages[1]
