"""F.scaled_dot_product_attention(..., enable_gqa=True), grouped query attention, against
PyTorch 2.13: which path runs (the fused CPU node, or the composite one with repeat_interleave),
every node of the graph with its saved values, the output and the gradients of query, key and
value; PyTorch's errors. Finite-difference checks are in tests/test_gradcheck_ops.py."""

import numpy as np
import pytest
from test_misc_ops_vs_torch import run_both

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch


def _gqa(**options):
    return lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(
        q, k, v, enable_gqa=True, **options
    )


FUSED = "ScaledDotProductFlashAttentionForCpuBackward0"
COMPOSITE = "UnsafeViewBackward0"


@pytest.mark.parametrize(
    "shapes, options, top",
    [
        # 4-d, as many key as value heads, dividing the query's: the fused node
        ([(1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 2)], {}, FUSED),
        ([(2, 6, 3, 4), (2, 3, 5, 4), (2, 3, 5, 4)], {"is_causal": True}, FUSED),
        ([(2, 4, 3, 2), (2, 1, 5, 2), (2, 1, 5, 2)], {"scale": 0.3}, FUSED),
        ([(1, 4, 3, 2), (1, 4, 5, 2), (1, 4, 5, 2)], {}, FUSED),  # no group: plain attention
        # the composite path: other numbers of key and value heads, batch sizes, 3-d
        ([(1, 4, 3, 2), (1, 2, 5, 2), (1, 4, 5, 2)], {}, COMPOSITE),
        ([(2, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 2)], {}, COMPOSITE),
        ([(4, 3, 2), (2, 5, 2), (2, 5, 2)], {}, COMPOSITE),
        ([(4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 2)], {}, COMPOSITE),
        ([(1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3)], {"is_causal": True}, COMPOSITE),
    ],
)
def test_grouped_query_attention_matches_pytorch(shapes, options, top):
    ours, theirs = run_both(torch, _gqa(**options), shapes)  # graph, values and gradients
    assert type(theirs.grad_fn).__name__ == top
    assert type(ours.grad_fn).__name__ == top


def test_a_mask_and_float32():
    mask = np.tril(np.ones((3, 5), bool), 1)

    def build(T, q, k, v):
        return _gqa(attn_mask=T.tensor(mask))(T, q, k, v)

    run_both(torch, build, [(1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 2)], dtype="float32")


def test_grouped_heads_by_hand():
    """Query head h attends with key and value head h // 2 (consecutive heads share)."""
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((1, 4, 3, 2)), rng.standard_normal((1, 2, 5, 2))
    v = rng.standard_normal((1, 2, 5, 2))
    out = nbgrad.nn.functional.scaled_dot_product_attention(
        nbgrad.tensor(q), nbgrad.tensor(k), nbgrad.tensor(v), enable_gqa=True
    ).numpy()
    for h in range(4):
        scores = q[0, h] @ k[0, h // 2].T / np.sqrt(2)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        np.testing.assert_allclose(out[0, h], weights @ v[0, h // 2], rtol=1e-12)


@pytest.mark.parametrize(
    "shapes",
    [
        [(1, 3, 3, 2), (1, 2, 5, 2), (1, 2, 5, 2)],
        [(1, 4, 3, 2), (1, 3, 5, 2), (1, 3, 5, 2)],
        [(1, 4, 3, 2), (1, 2, 5, 2), (1, 3, 5, 2)],
        [(4, 3, 2), (3, 5, 2), (3, 5, 2)],
    ],
)
def test_heads_that_do_not_divide_raise_pytorchs_error(shapes):
    outcomes = []
    for T in (nbgrad, torch):
        tensors = [T.ones(*s, requires_grad=True) for s in shapes]
        with pytest.raises(RuntimeError) as raised:
            _gqa()(T, *tensors)
        outcomes.append(str(raised.value))
    assert outcomes[0] == outcomes[1]
    assert outcomes[1] == "Number of heads in key and value must divide the number of heads in "


def test_without_gqa_broadcast_heads_take_the_composite_path_as_in_pytorch():
    def build(T, q, k, v):
        return T.nn.functional.scaled_dot_product_attention(q, k, v)

    for shapes in (
        [(1, 4, 3, 2), (1, 1, 5, 2), (1, 1, 5, 2)],  # one key head for four query heads
        [(2, 4, 3, 2), (1, 4, 5, 2), (1, 4, 5, 2)],  # one batch of keys for two of queries
    ):
        ours, theirs = run_both(torch, build, shapes)
        assert type(theirs.grad_fn).__name__ == COMPOSITE == type(ours.grad_fn).__name__
