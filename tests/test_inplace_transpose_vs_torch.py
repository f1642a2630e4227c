"""x.transpose_(d0, d1), x.swapdims_, x.swapaxes_ against PyTorch 2.13: the new grad_fn
(TransposeBackward1, its saved dims, its edge), _version, shape and strides, values, gradients,
errors; then finite differences, first and second order."""

import numpy as np
import pytest
from graph_compare import to_numpy
from test_misc_ops_vs_torch import assert_same_graph

import nbgrad
from nbgrad.autograd.gradcheck import gradcheck, gradgradcheck

CASES = [
    ("transpose_", (0, 1), (2, 3)),
    ("transpose_", (0, -1), (2, 3, 4)),
    ("transpose_", (1, 1), (2, 3)),
    ("swapdims_", (2, 0), (2, 3, 4)),
    ("swapaxes_", (-1, -2), (2, 3)),
    ("transpose_", (0, -1), ()),
]


def _values(shape):
    return np.random.default_rng(2).standard_normal(shape)


@pytest.mark.parametrize(("method", "dims", "shape"), CASES)
def test_in_place_transpose_of_a_non_leaf(torch, method, dims, shape):
    made = []
    for T in (torch, nbgrad):
        x = T.tensor(_values(shape), requires_grad=True)
        y = x * 2
        assert getattr(y, method)(*dims) is y
        made.append((T, x, y))
    (_, real_x, real), (_, mine_x, mine) = made
    assert_same_graph(mine.grad_fn, real.grad_fn, torch)  # before backward frees the saves
    seen = []
    for T, _x, y in made:
        g = T.tensor(np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)))
        y.backward(g)
        stride = [s for s, n in zip(y.stride(), y.shape) if n != 1]
        seen.append((tuple(y.shape), stride, y._version, y.is_contiguous()))
    assert seen[0] == seen[1]
    np.testing.assert_allclose(to_numpy(mine), to_numpy(real))
    np.testing.assert_allclose(to_numpy(mine_x.grad), to_numpy(real_x.grad))


def test_in_place_transpose_of_a_view_shares_the_version(torch):
    seen = []
    for T in (torch, nbgrad):
        x = T.tensor(_values((2, 3)), requires_grad=True)
        base = x * 1
        view = base.t()
        view.transpose_(0, 1)
        (view * T.tensor(_values((2, 3)))).sum().backward()
        seen.append((view.grad_fn.name(), view._version, base._version, view._base is base,
                     to_numpy(x.grad)))  # fmt: skip
    assert seen[0][:4] == seen[1][:4] == ("TransposeBackward1", 1, 1, True)
    np.testing.assert_allclose(seen[0][4], seen[1][4])


def test_in_place_transpose_errors_and_no_grad(torch):
    seen = []
    for T in (torch, nbgrad):
        leaf = T.tensor(_values((2, 3)), requires_grad=True)
        with pytest.raises(RuntimeError) as in_place_leaf:
            leaf.transpose_(0, 1)
        with pytest.raises(IndexError) as out_of_range:
            (leaf * 1).swapaxes_(0, 5)
        with T.no_grad():  # allowed on a leaf without grad mode; grad_fn unchanged elsewhere
            leaf.transpose_(0, 1)
            y = leaf * 1
        y = leaf * 1
        with T.no_grad():
            y.transpose_(0, 1)
        seen.append((str(in_place_leaf.value), str(out_of_range.value), tuple(leaf.shape),
                     leaf.is_leaf, leaf._version, y.grad_fn.name(), y._version))  # fmt: skip
    assert seen[0] == seen[1]


def test_gradcheck_in_place_transpose():
    x = nbgrad.tensor(_values((2, 3, 4)), requires_grad=True)

    def transposed(x):
        return (x * 1).transpose_(0, 2).swapdims_(0, 1) * x.permute(1, 2, 0)

    assert gradcheck(transposed, [x])
    assert gradgradcheck(transposed, [x])


def test_unpad_sequence_transposes_the_callers_batch_in_place(torch):
    seen = []
    for T in (torch, nbgrad):
        x = T.tensor(np.random.default_rng(5).standard_normal((4, 3, 2)), requires_grad=True)
        padded = x * 1
        pieces = T.nn.utils.rnn.unpad_sequence(padded, T.tensor([4, 1, 3]))
        shapes = [tuple(p.shape) for p in pieces]
        values = [p.detach().numpy() for p in pieces]
        seen.append((tuple(padded.shape), padded._version, padded.grad_fn.name(), shapes, values))
    expected = ((3, 4, 2), 1, "TransposeBackward1", [(4, 2), (1, 2), (3, 2)])
    assert seen[0][:4] == seen[1][:4] == expected
    for mine, real in zip(seen[1][4], seen[0][4]):
        np.testing.assert_array_equal(mine, real)
