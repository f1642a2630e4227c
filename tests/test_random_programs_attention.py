"""Random programs (tests/test_random_programs.py's machinery: lockstep runs on nbgrad and PyTorch,
every value, graph, saved value, error and gradient compared) that mix the calls of branch
attention (in-place transposes, renorm, quantile, nanquantile, scaled_dot_product_attention's
composite path, multi_head_attention_forward) with the everyday ones: element-wise ops, views,
reductions, matmuls, in-place writes, no_grad values and hooks."""

import numpy as np
import test_random_programs as programs
from hypothesis import given, settings
from hypothesis import strategies as st

ATTENTION_SETTINGS = settings(programs.SETTINGS, max_examples=250)


def _mha_self_attention(T, x):
    """F.multi_head_attention_forward on a (length, batch, embed) value, one head, with fixed
    projection weights (the same numbers in both libraries)."""
    embed = x.shape[-1]
    w = T.linspace(-0.5, 0.6, 3 * embed * embed, dtype=x.dtype).reshape(3 * embed, embed)
    out_w = T.linspace(0.4, -0.3, embed * embed, dtype=x.dtype).reshape(embed, embed)
    return T.nn.functional.multi_head_attention_forward(
        x, x, x, embed, 1, w, None, None, None, False, 0.0, out_w, None
    )[0]


def _unique(a):
    return np.unique(a).size == a.size


ATTENTION_CALLS = [
    ("({} * 1).transpose_(0, -1)", lambda T, x: (x * 1).transpose_(0, -1), lambda a: a.ndim),
    ("({} * 1).swapdims_(-1, 0)", lambda T, x: (x * 1).swapdims_(-1, 0), lambda a: a.ndim),
    ("{}.swapaxes_(0, -1) (in place)", lambda T, x: x.swapaxes_(0, -1), lambda a: a.ndim),
    ("T.renorm({}, 2, 0, 1.0)", lambda T, x: T.renorm(x, 2, 0, 1.0), lambda a: a.ndim >= 2),
    ("{}.renorm(1, -1, 0.5)", lambda T, x: x.renorm(1, -1, 0.5), lambda a: a.ndim >= 2),
    ("T.quantile({}, 0.3)", lambda T, x: T.quantile(x, 0.3), _unique),
    (
        "{}.nanquantile(T.tensor([0.2, 0.9], dtype=T.float64), dim=-1)",
        lambda T, x: x.nanquantile(T.tensor([0.2, 0.9], dtype=T.float64), dim=-1),
        lambda a: a.ndim and _unique(a),
    ),
    (
        "F.scaled_dot_product_attention({0}, {0}, {0})",
        lambda T, x: T.nn.functional.scaled_dot_product_attention(x, x, x),
        lambda a: a.ndim >= 2 and np.all(np.abs(a) < 20),
    ),
    (
        "F.multi_head_attention_forward({0}, {0}, {0}, ...)[0]",
        _mha_self_attention,
        lambda a: a.ndim == 3 and np.all(np.abs(a) < 20),
    ),
]


def attention_call(p):
    text, fn, domain = p.choice(ATTENTION_CALLS, "attention call")
    x = p.pick("operand", domain)
    if x is not None:
        p.step(text, fn, x)


OPERATIONS = [
    attention_call,
    attention_call,
    attention_call,
    programs.inplace,
    programs.without_grad,
    programs.hook,
    programs.binary,
    programs.scalar,
    programs.softmax,
    programs.reduction,
    programs.matmul,
    programs.view,
    programs.index,
    programs.join,
]


@ATTENTION_SETTINGS
@given(data=st.data())
def test_attention_programs_match_pytorch(torch, data):
    everyday = programs.OPERATIONS
    programs.OPERATIONS = OPERATIONS  # build() draws its steps from this list
    try:
        programs.test_random_programs_match_pytorch.hypothesis.inner_test(torch, data)
    finally:
        programs.OPERATIONS = everyday
