"""var/std, prod, the scans, roll/flip/repeat/tril/index_select/masked_select, movedim/unflatten,
outer and addmv/addr/baddbmm: what the graph tests do not cover, against PyTorch (errors,
warnings, dtypes, ties, views)."""

import textwrap
import warnings

import numpy as np
import pytest

import nbgrad

ERRORS = [
    "T.ones(2, 3).var(2)",
    "T.tensor([1, 2]).var()",
    "T.ones(2, 3).std(-3)",
    "T.ones(2, 3).prod(2)",
    "T.ones(2, 3).cumsum(2)",
    "T.ones(2, 3).cumprod(-3)",
    "T.tensor([1, 2]).logcumsumexp(0)",
    "T.ones(2, 3).cummax(2)",
    "T.ones(2, 3).roll(1, 5)",
    "T.ones(2, 3).roll((1, 2), (0,))",
    "T.tensor(1.0).roll(1, 0)",
    "T.ones(2, 3).flip(0, 0)",
    "T.ones(2, 3).flip(3)",
    "T.ones(3).fliplr()",
    "T.ones(2, 3).repeat(2)",
    "T.ones(2, 3).repeat(-1, 1)",
    "T.ones(2).tril()",
    "T.ones(2).triu(1)",
    "T.ones(2, 3).index_select(2, T.tensor([0]))",
    "T.ones(2, 3).index_select(1, T.tensor([5]))",
    "T.ones(2, 3).index_select(1, T.tensor([-1]))",
    "T.ones(2, 3).index_select(1, T.tensor([0.0]))",
    "T.tensor(1.0).index_select(0, T.tensor([0, 0]))",
    "T.ones(2, 3).masked_select(T.ones(3, 2, dtype=T.bool))",
    "T.ones(2, 3).masked_select(T.ones(2, 3))",
    "T.outer(T.ones(2, 3), T.ones(2))",
    "T.outer(T.ones(2), T.ones(2, 3))",
    "T.addmv(T.ones(2, 3), T.ones(2, 3), T.ones(3))",
    "T.addmv(T.ones(3), T.ones(2, 3), T.ones(3))",
    "T.addmv(T.ones(2), T.ones(2, 3), T.ones(2))",
    "T.addr(T.ones(2, 3), T.ones(3), T.ones(3))",
    "T.baddbmm(T.ones(3, 4), T.ones(5, 2, 3), T.ones(5, 3, 4))",
    "T.baddbmm(T.ones(2, 4), T.ones(5, 2, 3), T.ones(4, 3, 4))",
    "T.ones(2, 3).movedim(0, 2)",
    "T.ones(2, 3).unflatten(1, (2, 2))",
    "T.ones(2, 3).unflatten(2, (3, 1))",
    "T.ones(4, 3).split(0)",
    "T.ones(4, 3).split(-1)",
    "T.ones(4, 3).split([1, 2])",
    "T.ones(4, 3).split(2, 2)",
    "T.tensor(1.0).split(1)",
    "T.ones(4, 3).chunk(0)",
    "T.ones(4, 3).unbind(2)",
    "T.tensor(1.0).unbind()",
    "T.var_mean(T.tensor([1, 2]))",
    """T.ones(4, 3, requires_grad=True).split(2)[0].mul_(2)""",
    """(T.ones(4, 3, requires_grad=True) * 1).split([1, 3])[1].add_(2)""",
    """(T.ones(4, 3, requires_grad=True) * 1).unbind()[1].zero_()""",
    """(T.ones(4, 3, requires_grad=True) * 1).chunk(2)[1][0].mul_(2)""",
    "T.ones(3).trace()",
    "T.ones(2, 3, 4).trace()",
    "T.ones(3).diagonal()",
    "T.ones(2, 3).diagonal(0, 1, 1)",
    "T.ones(2, 3, 4).diag()",
    "T.tensor(1.0).diag()",
    "T.ones(3).diag_embed(0, 0, 0)",
    "T.ones(3).topk(4)",
    "T.ones(2, 3).topk(1, 2)",
    "T.ones(3).kthvalue(4)",
    "T.ones(3).kthvalue(0)",
    "T.ones(2, 0).median(1)",
    "T.take(T.ones(3), T.tensor([3]))",
    "T.take(T.ones(3), T.tensor([0], dtype=T.int32))",
    "T.take_along_dim(T.ones(2, 3), T.tensor([[0, 1]]), 0)",
    "T.take_along_dim(T.ones(2, 3), T.tensor([0]), 0)",
    "T.linalg.vector_norm(T.ones(0), -1)",
    "T.linalg.vector_norm(T.ones(0), float('inf'))",
    "T.linalg.vector_norm(T.ones(2, 0), float('inf'), 1)",
    "T.linalg.vector_norm(T.ones(2, 3), 'fro')",
    "T.ones(2, 3).norm('abc')",
    "T.dist(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64))",
    "T.dist(T.ones(2, 3), T.ones(3, 4))",
    "T.linalg.matrix_norm(T.ones(3))",
    "T.linalg.cross(T.ones(2, 3), T.ones(3))",
    "T.linalg.cross(T.ones(2, 3), T.ones(2, 2))",
    "T.linalg.cross(T.ones(2, 4), T.ones(2, 4))",
    "T.hstack([])",
    "T.vstack([T.ones(2, 3), T.ones(2)])",
    "T.column_stack([T.ones(2, 3), T.ones(3)])",
    "T.ones(2, 3).scatter(2, T.tensor([[0]]), 1.0)",
    "T.ones(2, 3).scatter(0, T.tensor([[2]]), 1.0)",
    "T.ones(2, 3).scatter(0, T.tensor([[0.0]]), 1.0)",
    "T.ones(2, 3).scatter(0, T.tensor([[0]]), T.ones(1, 1, dtype=T.float64))",
    "T.ones(2, 3).index_add(0, T.tensor([0]), T.ones(1, 2))",
    "T.ones(2, 3).index_fill(1, T.tensor([[0]]), 1.0)",
    "T.ones(2, 3).index_fill(1, T.tensor([0]), T.ones(2))",
    "T.ones(2, 3).index_copy(0, T.tensor([0]), T.ones(1, 2))",
    "T.ones(2, 3).index_add(0, T.tensor([[0]]), T.ones(1, 3))",
    "T.ones(2, 3).index_copy(0, T.tensor([[0]]), T.ones(1, 3))",
    "T.ones(2, 3).index_add(0, T.tensor([5]), T.ones(1, 3))",
    "T.ones(2, 3).index_fill(0, T.tensor([5]), 1.0)",
    "T.ones(2, 3).index_copy(0, T.tensor([5]), T.ones(1, 3))",
    "T.ones(2, 3, requires_grad=True).scatter_(0, T.tensor([[0]]), 1.0)",
    """x = T.ones(2, 3, requires_grad=True)
y = T.ones(2, 3, requires_grad=True)
x.scatter_add(0, T.tensor([[0, 0, 0]]), y).sum().backward()""",
    "T.ones(2, 3).rot90(1, (0,))",
    "T.ones(3).rot90()",
    "T.ones(2, 3).rot90(1, (1, -1))",
    "T.vdot(T.ones(3), T.ones(2, 3))",
    "T.vdot(T.ones(3), T.ones(2))",
    "T.ones(2, 3).repeat_interleave(-1)",
    "T.ones(2, 3).repeat_interleave(T.tensor([1, 2]), 1)",
    "T.ones(2, 3).repeat_interleave(T.tensor([1, -2, 1]), 1)",
    "T.meshgrid(T.ones(2), T.ones(3), indexing='ab')",
    "T.block_diag(T.ones(2, 2, 2))",
    "T.addbmm(T.ones(2, 4), T.ones(3, 2, 5), T.ones(2, 5, 4))",
    "T.addbmm(T.ones(2, 4), T.ones(3, 2, 5), T.ones(3, 2, 4))",
    "T.addbmm(T.ones(3, 4), T.ones(3, 2, 5), T.ones(3, 5, 4))",
    "T.addbmm(T.ones(2, 4), T.ones(2, 5), T.ones(3, 5, 4))",
]


def _raised(T, code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(code, {"T": T})  # noqa: S102 - our own test table
        except Exception as error:  # noqa: BLE001 - the exception is what is compared
            return type(error).__name__, str(error)
    return None


@pytest.mark.parametrize("code", ERRORS)
def test_errors_match_pytorch(torch, code):
    real = _raised(torch, code)
    assert real is not None, "PyTorch raises nothing here"
    assert _raised(nbgrad, code) == real


def _warnings_of(T, code):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(textwrap.dedent(code), {"T": T})  # noqa: S102 - our own test table
    return [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize(
    "code", ["T.tensor(1.0).var()", "T.ones(2, 3).std(0, correction=2)", "T.ones(3).var(0)"]
)
def test_degrees_of_freedom_warnings_match_pytorch(torch, code):
    mine, real = _warnings_of(nbgrad, code), _warnings_of(torch, code)
    assert len(mine) == len(real)
    for (my_kind, my_text), (kind, text) in zip(mine, real):
        assert my_kind is kind
        # PyTorch appends where its C++ warned: "(Triggered internally at /__w/pytorch/...)".
        assert text.startswith(my_text) and text[len(my_text) :].startswith(" (Triggered")


VALUES = [
    "T.tensor([1, 2]).cumsum(0)",
    "T.tensor([True, True]).cumsum(0)",
    "T.tensor([1, 2], dtype=T.int32).cumsum(0)",
    "T.tensor([1, 2], dtype=T.int32).cumprod(0)",
    "T.tensor([1, 2], dtype=T.int32).prod()",
    "T.tensor([[1, 2]], dtype=T.int8).prod(1)",
    "T.tensor([1, 2]).cumsum(0, dtype=T.float32)",
    "T.tensor([[1, 2]]).tril()",
    "T.tensor([1, 2]).flip(0)",
    "T.tensor([1.0, 1.0, 0.0, 1.0]).cummax(0).indices",
    "T.tensor([1.0, 1.0, 2.0, 1.0]).cummin(0).indices",
    "T.tensor([3.0, float('nan'), 1.0]).cummax(0).indices",
    "T.tensor([3.0, float('nan'), 1.0]).cummax(0).values",
    "T.tensor(3.0).cummax(0).indices",
    "T.tensor(1.0).var()",
    "T.tensor([1.0]).var(0, correction=3)",
    "T.ones(2, 3).float().var(0)",
    "T.tensor(-1.18).norm(dim=0)",
    "T.linalg.vector_norm(T.tensor(-1.18), dim=-1)",
    "T.tensor(2.0).roll(1)",
    "T.tensor(2.0).flip(0)",
    "T.tensor(2.0).cumsum(-1)",
    "T.tensor(2.0).index_select(0, T.tensor([0]))",
    "T.tensor([[0.0, 2.0], [3.0, 0.0]]).prod(1)",
    "T.tensor([[1.0, 2, 2, 1], [3, 3, 1, 1]]).sort(1).indices",
    "T.tensor([[1.0, 2, 2, 1], [3, 3, 1, 1]]).sort(1, descending=True).indices",
    "T.tensor([1.0, 2, 2, 1, 3, 3, 1, 1]).sort(descending=True).indices",
    "T.tensor([[1.0, 2, 2, 1], [3, 3, 1, 1]]).argsort(1)",
    "T.tensor([1.0, 2, 3, 4]).median()",
    "T.tensor([[1.0, 2, 2, 1], [3, 3, 1, 1]]).mode(1).values",
    "T.tensor([[1.0, 2, 2, 1], [3, 3, 1, 1]]).mode(1).indices",
    "T.ones(2, 0).median()",
    "T.tensor([1, 3, 2]).topk(2).values",
    "T.tensor([1, 3, 2]).median()",
    "T.tensor(2.0).sort().indices",
    "T.ones(2, 3).diagonal(5)",
    "T.arange(12.0).reshape(3, 4).diag(-1)",
    "T.arange(3.0).diag(2)",
    "T.tensor([[1.0, -3.0], [3.0, 2.0]]).norm(float('inf'))",
    "T.tensor([0.0, 3.0, -4.0]).norm(0)",
    "T.tensor([0.0, 3.0, -4.0]).norm(0.5)",
    "T.tensor(-1.18).norm(3, 0)",
    "T.tensor([[1.0, 2.0, 3.0]]).cross(T.tensor([[0.0, 1.0, 0.0]]))",
    "T.repeat_interleave(T.tensor([1, 2]))",
    "T.block_diag()",
    "T.block_diag(T.ones(2, dtype=T.int64), T.ones(1))",
    "T.meshgrid(T.arange(3), T.arange(2), indexing='xy')[1]",
    "T.arange(6.0).reshape(2, 3).rot90(3)",
    "T.kron(T.tensor([[1, 2]]), T.tensor([[1], [10]]))",
    "T.atleast_3d(T.ones(3)).shape and T.atleast_3d(T.ones(3))",
]


@pytest.mark.parametrize("code", VALUES)
def test_values_and_dtypes_match_pytorch(torch, code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine, real = eval(code, {"T": nbgrad}), eval(code, {"T": torch})  # noqa: S307
    assert mine.dtype.name == str(real.dtype).split(".")[1]
    assert tuple(mine.shape) == tuple(real.shape)
    np.testing.assert_array_equal(mine.numpy(), real.numpy())


@pytest.mark.parametrize(
    "code",
    [
        "x.movedim(0, 1)",
        "s.movedim(0, -1)",
        "x.unflatten(1, (3, 1))",
        "T.swapdims(x, 0, 1)",
        "x.flip(0)",
        "x.roll(1)",
        "x.repeat(1, 1)",
        "x.tril()",
        "x.cumsum(0)",
        "x.index_select(0, T.tensor([0]))",
        "x.diagonal()",
        "x.diagonal(1)",
        "T.diag(x)",
        "T.diag_embed(x)",
        "x.sort()[0]",
    ],
)
def test_views_and_copies_match_pytorch(torch, code):
    def run(T):
        x = T.ones(2, 3, requires_grad=True)
        s = T.tensor(1.5, requires_grad=True)
        y = eval(code, {"T": T, "x": x, "s": s})  # noqa: S307
        return y, (x if "x" in code else s)

    (mine, my_input), (real, input_) = run(nbgrad), run(torch)
    assert (mine._base is not None) == real._is_view()
    assert type(mine.grad_fn).__name__ == type(real.grad_fn).__name__
    if real._is_view():
        assert mine._base is my_input and real._base is input_
        assert mine._version == my_input._version


def test_prod_gradient_with_zeros_matches_pytorch(torch):
    for data in ([[0.0, 2.0, 3.0], [0.0, 0.0, 1.0]], [[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]]):
        for dim in (None, 0, 1):
            grads = []
            for T in (nbgrad, torch):
                x = T.tensor(data, dtype=T.float64, requires_grad=True)
                y = x.prod() if dim is None else x.prod(dim)
                (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
                (gg,) = T.autograd.grad((g * g).sum(), x)
                grads.append((g.detach().numpy(), gg.numpy()))
            np.testing.assert_allclose(grads[0][0], grads[1][0])
            np.testing.assert_allclose(grads[0][1], grads[1][1])


def test_cummax_returns_its_named_tuple(torch):
    x = nbgrad.tensor([1.0, 3.0, 2.0])
    result = x.cummax(0)
    assert type(result).__name__ == type(torch.tensor([1.0]).cummax(0)).__name__ == "cummax"
    assert result.values.tolist() == [1.0, 3.0, 3.0] and result.indices.tolist() == [0, 1, 1]
    assert type(nbgrad.cummin(x, 0)).__name__ == "cummin"


@pytest.mark.parametrize(
    "code",
    ["x.split(2)", "x.split([1, 3])", "x.chunk(3, 1)", "x.unbind()", "T.unbind(x, -1)"],
)
def test_several_views_share_one_node_like_pytorch(torch, code):
    def run(T):
        x = T.ones(4, 3, requires_grad=True)
        return x, eval(code, {"T": T, "x": x})  # noqa: S307

    (my_input, mine), (input_, real) = run(nbgrad), run(torch)
    assert type(mine) is tuple and len(mine) == len(real)
    for nr, (m, r) in enumerate(zip(mine, real)):
        assert m.shape == tuple(r.shape)
        assert m._base is my_input and r._base is input_
        assert m.grad_fn is mine[0].grad_fn and m.output_nr == r.output_nr == nr
        assert type(m.grad_fn).__name__ == type(r.grad_fn).__name__
        assert m.is_contiguous() == r.is_contiguous()
    # No write is recorded without grad: then the views may be written to, as in PyTorch.
    with nbgrad.no_grad():
        mine[0].mul_(2)
    assert my_input._version == mine[-1]._version == 1


def test_var_mean_and_std_mean_match_pytorch(torch):
    for name in ("var_mean", "std_mean"):
        for kwargs in ({}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}, {"correction": 0}):
            got = getattr(nbgrad, name)(nbgrad.arange(6.0).reshape(2, 3), **kwargs)
            want = getattr(torch, name)(torch.arange(6.0).reshape(2, 3), **kwargs)
            assert type(got) is tuple and len(got) == 2
            for g, w in zip(got, want):
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
                assert g.shape == tuple(w.shape)


def test_diagonal_is_a_writable_view_like_pytorch(torch):
    for T in (nbgrad, torch):
        base = T.zeros(3, 4)
        base.diagonal(1).add_(1)
        assert base.sum().item() == 3 and base[0, 1].item() == 1
    x = nbgrad.ones(3, 3, requires_grad=True)
    y = x * 1
    y.diagonal().mul_(2)
    assert type(y.grad_fn).__name__ == "CopySlices"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 3)) + np.eye(3))


def test_vector_norm_gradients_at_zeros_and_ties_match_pytorch(torch):
    data = [[0.0, 3.0, -3.0], [1.0, 0.0, -1.0]]
    for ord_ in (float("inf"), -float("inf"), 0.5, 3, 1.5):
        for dim in (None, 1):
            grads = []
            for T in (nbgrad, torch):
                x = T.tensor(data, dtype=T.float64, requires_grad=True)
                T.linalg.vector_norm(x, ord_, dim).sum().backward()
                grads.append(x.grad.numpy())
            np.testing.assert_allclose(grads[0], grads[1], err_msg=f"ord={ord_} dim={dim}")


def test_cross_without_dim_warns_once_like_pytorch(monkeypatch):
    from nbgrad import warn_once

    monkeypatch.setattr(warn_once, "given", set())
    code = "T.cross(T.ones(2, 3), T.ones(2, 3)); T.cross(T.ones(3), T.ones(3))"
    (mine,) = _warnings_of(nbgrad, code)  # PyTorch warns once per process (TORCH_WARN_ONCE)
    assert mine[0] is UserWarning
    assert mine[1].startswith("Using torch.cross without specifying the dim arg is deprecated.")


def test_meshgrid_returns_views_and_warns_once_without_indexing(torch, monkeypatch):
    from nbgrad import warn_once

    x = nbgrad.ones(3, requires_grad=True)
    grids = nbgrad.meshgrid(x, nbgrad.ones(2), indexing="ij")
    assert type(grids) is tuple and grids[0]._base is x
    assert type(grids[0].grad_fn).__name__ == "ExpandBackward0"
    monkeypatch.setattr(warn_once, "given", set())
    (warning,) = _warnings_of(nbgrad, "T.meshgrid(T.ones(2), T.ones(2)); T.meshgrid(T.ones(2))")
    assert warning[0] is UserWarning and "pass the indexing argument" in warning[1]
