"""nn.MultiheadAttention, F.multi_head_attention_forward, the Transformer layers and
F.scaled_dot_product_attention's composite ("math") path against PyTorch 2.13: every node of
the graph (name, edges, saved names and values), the outputs, the attention weights, and the
gradients of inputs and parameters; PyTorch's weights are copied into nbgrad's modules
(tests/nn_compare.py). Then finite-difference checks of first and second derivatives."""

import math
import warnings

import numpy as np
import pytest
from graph_compare import to_numpy
from nn_compare import run_both
from test_misc_ops_vs_torch import _same_value, assert_same_graph
from test_misc_ops_vs_torch import run_both as run_both_functions

import nbgrad
from nbgrad.autograd.gradcheck import gradcheck, gradgradcheck


def check_module_run(torch, case, dtype_name="float64", compare_values=True):
    """Run ``case`` in both libraries (same weights, same inputs); compare the whole graph of
    the first output, every output's value, and after a backward every gradient."""
    ours, theirs, ours_maker, theirs_maker = run_both(torch, case, dtype_name)
    ours_all = ours if isinstance(ours, tuple) else (ours,)
    theirs_all = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours_all) == len(theirs_all)
    for mine, real in zip(ours_all, theirs_all):
        if real is None:
            assert mine is None
            continue
        assert tuple(mine.shape) == tuple(real.shape)
        assert mine.requires_grad == real.requires_grad
        if compare_values:
            _same_value(mine, real, torch, "output")
        if compare_values or real.grad_fn is None:
            assert_same_graph(mine.grad_fn, real.grad_fn, torch)
        else:  # random dropout masks: the same graph, other saved masks
            assert _names(mine.grad_fn) == _names(real.grad_fn)
    out, real_out = ours_all[0], theirs_all[0]
    if real_out.requires_grad and compare_values:
        seed = np.random.default_rng(5).standard_normal(tuple(real_out.shape))
        out.backward(nbgrad.tensor(seed, dtype=out.dtype))
        real_out.backward(torch.tensor(seed, dtype=real_out.dtype))
        for mine, real in zip(ours_maker.inputs, theirs_maker.inputs):
            _same_value(mine.grad, real.grad, torch, "input grad")
        for mine_module, real_module in zip(ours_maker.modules, theirs_maker.modules):
            mine_params = dict(mine_module.named_parameters())
            real_params = dict(real_module.named_parameters())
            assert list(mine_params) == list(real_params)
            for name, param in real_params.items():
                _same_value(mine_params[name].grad, param.grad, torch, name)
    for mine_module, real_module in zip(ours_maker.modules, theirs_maker.modules):
        assert list(mine_module.state_dict()) == list(real_module.state_dict())
        for (name, mine), real in zip(
            mine_module.state_dict().items(), real_module.state_dict().values()
        ):
            assert tuple(mine.shape) == tuple(real.shape), name
    return ours, theirs


def _names(fn, seen=None):
    """Node names and edges below ``fn``, for graphs whose saved values are random."""
    if fn is None:
        return None
    return (fn.name(), tuple((_names(c), nr) for c, nr in fn.next_functions))


def _bool_mask(T, rows):
    return T.tensor(rows, dtype=T.bool)


# --- nn.MultiheadAttention -------------------------------------------------------------------

MHA_CASES = {
    "self": (dict(), dict()),
    "self no weights": (dict(), dict(need_weights=False)),
    "self per-head weights": (dict(), dict(average_attn_weights=False)),
    "batch_first": (dict(batch_first=True), dict()),
    "batch_first no weights": (dict(batch_first=True), dict(need_weights=False)),
    "no bias": (dict(bias=False), dict()),
    "bias_kv": (dict(add_bias_kv=True), dict()),
    "zero_attn": (dict(add_zero_attn=True), dict(need_weights=False)),
    "bias_kv zero_attn padding": (
        dict(add_bias_kv=True, add_zero_attn=True),
        dict(key_padding_mask=[[False, False, True], [False, True, True]]),
    ),
    "key padding": (dict(), dict(key_padding_mask=[[False, False, True], [False, False, False]])),
    "key padding no weights": (
        dict(),
        dict(key_padding_mask=[[False, True, True], [False, False, False]], need_weights=False),
    ),
    "attn mask bool": (dict(), dict(attn_mask="causal bool")),
    "attn mask bool no weights": (dict(), dict(attn_mask="causal bool", need_weights=False)),
    "attn mask float + padding": (
        dict(),
        dict(attn_mask="float", key_padding_mask=[[False, False, True], [False, False, False]]),
    ),
    "is_causal no weights": (
        dict(),
        dict(attn_mask="causal float", is_causal=True, need_weights=False),
    ),  # fmt: skip
    "is_causal with weights": (dict(), dict(attn_mask="causal float", is_causal=True)),
    "3-d attn mask": (dict(), dict(attn_mask="float 3-d")),
    "3-d attn mask no weights": (dict(), dict(attn_mask="float 3-d", need_weights=False)),
}


def _mask(T, kind, heads_batch=4, length=3):
    rng = np.random.default_rng(3)
    if kind == "causal bool":
        return T.tensor(np.triu(np.ones((length, length), bool), 1))
    if kind == "causal float":
        return T.tensor(np.triu(np.full((length, length), -np.inf), 1))
    if kind == "float":
        return T.tensor(rng.standard_normal((length, length)))
    if kind == "float 3-d":
        return T.tensor(rng.standard_normal((heads_batch, length, length)))
    raise ValueError(kind)


@pytest.mark.parametrize("name", list(MHA_CASES))
def test_multihead_attention_self(torch, name):
    options, call = MHA_CASES[name]

    def case(T, make):
        attention = make.module(T.nn.MultiheadAttention(4, 2, **options))
        x = make.input(2, 3, 4) if options.get("batch_first") else make.input(3, 2, 4)
        kwargs = dict(call)
        if "attn_mask" in kwargs:
            kwargs["attn_mask"] = (
                _mask(T, kwargs["attn_mask"]).to(make.dtype)
                if "float" in (kwargs["attn_mask"])
                else _mask(T, kwargs["attn_mask"])
            )
        if "key_padding_mask" in kwargs:
            kwargs["key_padding_mask"] = _bool_mask(T, kwargs["key_padding_mask"])
        return attention(x, x, x, **kwargs)

    check_module_run(torch, case)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("sharing", ["k is v", "all different", "kdim vdim"])
def test_multihead_attention_cross(torch, batch_first, need_weights, sharing):
    def case(T, make):
        sizes = dict(kdim=3, vdim=5) if sharing == "kdim vdim" else {}
        attention = make.module(T.nn.MultiheadAttention(4, 2, batch_first=batch_first, **sizes))

        def seq(length, features):
            return (
                make.input(2, length, features) if batch_first else make.input(length, 2, features)
            )

        query = seq(3, 4)
        key = seq(5, sizes.get("kdim", 4))
        value = key if sharing == "k is v" else seq(5, sizes.get("vdim", 4))
        return attention(query, key, value, need_weights=need_weights)

    check_module_run(torch, case)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_unbatched(torch, need_weights):
    def case(T, make):
        attention = make.module(T.nn.MultiheadAttention(4, 2))
        x = make.input(3, 4)
        return attention(
            x, x, x, need_weights=need_weights, key_padding_mask=_bool_mask(T, [False, False, True])
        )

    check_module_run(torch, case)


def test_multihead_attention_eval_ignores_dropout(torch):
    def case(T, make):
        attention = make.module(T.nn.MultiheadAttention(4, 2, dropout=0.5))
        attention.eval()
        x = make.input(3, 2, 4)
        return attention(x, x, x)

    check_module_run(torch, case)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_training_dropout_graph(torch, need_weights):
    """With dropout the masks are random (in both libraries): the graph's nodes are the same."""

    def case(T, make):
        attention = make.module(T.nn.MultiheadAttention(4, 2, dropout=0.5))
        x = make.input(3, 2, 4)
        return attention(x, x, x, need_weights=need_weights)

    check_module_run(torch, case, compare_values=False)


def test_multihead_attention_float32_and_no_grad_fast_path(torch):
    """float32 graph and values; and under no_grad in eval mode with batch_first (PyTorch's
    fused _native_multi_head_attention), the same values."""

    def case(T, make):
        attention = make.module(T.nn.MultiheadAttention(4, 2, batch_first=True))
        x = make.input(2, 3, 4)
        return attention(x, x, x)

    check_module_run(torch, case, "float32")

    def fast(T, make):
        attention = make.module(T.nn.MultiheadAttention(4, 2, batch_first=True)).eval()
        x = make.input(2, 3, 4, requires_grad=False)
        with T.no_grad():
            return attention(
                x,
                x,
                x,
                key_padding_mask=_bool_mask(T, [[False, False, True], [False, False, False]]),
            )

    ours, theirs, _, _ = run_both(torch, fast)
    for mine, real in zip(ours, theirs):
        assert mine.grad_fn is None and real.grad_fn is None
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-10, atol=1e-12)


def test_multihead_attention_parameters_like_torch(torch):
    for kwargs in (dict(), dict(kdim=3, vdim=5), dict(bias=False, add_bias_kv=True)):
        ours = nbgrad.nn.MultiheadAttention(6, 3, **kwargs)
        theirs = torch.nn.MultiheadAttention(6, 3, **kwargs)
        assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
            (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
        ]
        assert repr(ours) == repr(theirs)
    ours = nbgrad.nn.MultiheadAttention(6, 3)
    # Xavier-uniform in_proj: within +-sqrt(6 / (6 + 18)); biases start at zero
    bound = math.sqrt(6 / 24)
    largest = float(ours.in_proj_weight.detach().abs().max())
    assert bound / 2 < largest <= bound
    assert float(ours.in_proj_bias.detach().abs().sum()) == 0.0
    assert float(ours.out_proj.bias.detach().abs().sum()) == 0.0


def test_multihead_attention_errors(torch):
    for T in (torch, nbgrad):
        with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
            T.nn.MultiheadAttention(5, 2)
        with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
            T.nn.MultiheadAttention(0, 2)
    messages = []
    for T in (torch, nbgrad):
        attention = T.nn.MultiheadAttention(4, 2)
        x = T.ones(3, 2, 4)
        with pytest.raises((AssertionError, RuntimeError)) as caught:
            attention(x, x, x, attn_mask=T.zeros(2, 2))
        with pytest.raises(AssertionError) as caught4d:
            attention(x[None], x[None], x[None])
        with pytest.raises(AssertionError) as int_mask:
            attention(x, x, x, attn_mask=T.zeros(3, 3, dtype=T.int64))
        messages.append((type(caught.value), str(caught.value), str(caught4d.value),
                         str(int_mask.value)))  # fmt: skip
    assert messages[0] == messages[1]


def test_mismatched_mask_types_warn_as_torch(torch):
    caught = []
    for T in (torch, nbgrad):
        attention = T.nn.MultiheadAttention(4, 2)
        x = T.ones(3, 2, 4)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            attention(x, x, x, attn_mask=T.zeros(3, 3),
                      key_padding_mask=T.zeros(2, 3, dtype=T.bool))  # fmt: skip
        caught.append([str(w.message) for w in record])
    assert caught[0] == caught[1] and caught[0]


# --- F.multi_head_attention_forward -----------------------------------------------------------


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_multi_head_attention_forward(torch, need_weights, training):
    def build(T, q, k, w, b, ow, ob):
        out, weights = T.nn.functional.multi_head_attention_forward(
            q, k, k, 4, 2, w, b, None, None, False, 0.0, ow, ob,
            training=training, need_weights=need_weights)  # fmt: skip
        return out if weights is None else (out, weights)

    run_both_functions(torch, build, [(3, 2, 4), (5, 2, 4), (12, 4), (12,), (4, 4), (4,)])


def test_multi_head_attention_forward_static_kv(torch):
    def build(T, q, k, w, b, ow, ob, sk, sv):
        return T.nn.functional.multi_head_attention_forward(
            q, k, k, 4, 2, w, b, None, None, False, 0.0, ow, ob, static_k=sk, static_v=sv
        )

    run_both_functions(
        torch, build, [(3, 2, 4), (5, 2, 4), (12, 4), (12,), (4, 4), (4,), (4, 6, 2), (4, 6, 2)]
    )


# --- Transformer layers -----------------------------------------------------------------------

ENCODER_LAYER_CASES = {
    "post-norm": dict(),
    "pre-norm gelu": dict(norm_first=True, activation="gelu"),
    "batch_first": dict(batch_first=True),
    "no bias": dict(bias=False),
    "tanh activation": dict(activation="tanh"),
}


@pytest.mark.parametrize("name", list(ENCODER_LAYER_CASES))
@pytest.mark.parametrize("masks", ["none", "causal", "padding"])
def test_transformer_encoder_layer(torch, name, masks):
    options = dict(ENCODER_LAYER_CASES[name])
    if options.get("activation") == "tanh":
        options["activation"] = None  # a callable of the library: set in the case

    def case(T, make):
        kwargs = dict(options)
        if "activation" in kwargs and kwargs["activation"] is None:
            kwargs["activation"] = T.tanh
        layer = make.module(T.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, **kwargs))
        x = make.input(2, 3, 4) if kwargs.get("batch_first") else make.input(3, 2, 4)
        call = {}
        if masks == "causal":
            call = dict(
                src_mask=T.nn.Transformer.generate_square_subsequent_mask(3).to(make.dtype),
                is_causal=True,
            )
        elif masks == "padding":
            call = dict(
                src_key_padding_mask=_bool_mask(T, [[False, False, True], [False, False, False]])
            )
        return layer(x, **call)

    check_module_run(torch, case)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_training_dropout_graph(torch, norm_first):
    """The default dropout (0.1) in training: random masks, the same graph."""

    def case(T, make):
        layer = make.module(T.nn.TransformerEncoderLayer(4, 2, 8, norm_first=norm_first))
        return layer(make.input(3, 2, 4))

    check_module_run(torch, case, compare_values=False)


def test_sdpa_dropout_graph(torch):
    def build(T, q, k, v):
        return T.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.4)

    names = []
    for T in (torch, nbgrad):
        inputs = [T.ones(1, 2, 3, 4, requires_grad=True) for _ in range(3)]
        out = build(T, *inputs)
        names.append(_names(out.grad_fn))
        kept = to_numpy(out.detach())
        # each weight is dropped (0) or scaled by 1 / 0.6; with equal inputs every row of
        # weights is uniform (1/3), so outputs are multiples of 1 / (3 * 0.6)
        np.testing.assert_allclose(np.round(kept * 1.8) / 1.8, kept, atol=1e-6)
    assert names[0] == names[1]


def test_transformer_encoder_layer_eval_and_fast_path(torch):
    def case(T, make):
        layer = make.module(T.nn.TransformerEncoderLayer(4, 2, 8, batch_first=True)).eval()
        return layer(make.input(2, 3, 4))

    check_module_run(torch, case)

    def fast(T, make):
        layer = make.module(T.nn.TransformerEncoderLayer(4, 2, 8, batch_first=True)).eval()
        x = make.input(2, 3, 4, requires_grad=False)
        with T.no_grad():
            return layer(x)

    ours, theirs, _, _ = run_both(torch, fast)
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_encoder(torch, batch_first):
    def case(T, make):
        layer = T.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=batch_first)
        encoder = make.module(T.nn.TransformerEncoder(layer, 2, norm=T.nn.LayerNorm(4)))
        x = make.input(2, 3, 4) if batch_first else make.input(3, 2, 4)
        mask = T.nn.Transformer.generate_square_subsequent_mask(3).to(make.dtype)
        return encoder(x, mask=mask)  # is_causal detected from the mask

    check_module_run(torch, case)


def test_transformer_encoder_nested_tensor_path_zeros_padding(torch):
    """Eval mode, no graph, batch_first and a left-aligned padding mask: PyTorch runs nested
    tensors and gives zeros (before the final norm) at padded positions; so does nbgrad."""

    def fast(T, make):
        layer = T.nn.TransformerEncoderLayer(4, 2, 8, batch_first=True)
        encoder = make.module(T.nn.TransformerEncoder(layer, 2)).eval()
        x = make.input(2, 3, 4, requires_grad=False)
        with T.no_grad():
            return encoder(
                x, src_key_padding_mask=_bool_mask(T, [[False, False, True], [False, False, False]])
            )

    ours, theirs, _, _ = run_both(torch, fast)
    assert float(theirs[0, 2].abs().sum()) == 0.0
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-10, atol=1e-12)


def test_transformer_encoder_warning_as_torch(torch):
    messages = []
    for T in (torch, nbgrad):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            T.nn.TransformerEncoder(T.nn.TransformerEncoderLayer(4, 2, 8), 2)
        messages.append([str(w.message) for w in record])
    assert messages[0] == messages[1]
    assert "batch_first was not True" in messages[0][0]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_decoder_layer(torch, norm_first, batch_first):
    def case(T, make):
        layer = make.module(
            T.nn.TransformerDecoderLayer(
                4, 2, 8, dropout=0.0, norm_first=norm_first, batch_first=batch_first
            )
        )
        tgt = make.input(2, 3, 4) if batch_first else make.input(3, 2, 4)
        memory = make.input(2, 5, 4) if batch_first else make.input(5, 2, 4)
        mask = T.nn.Transformer.generate_square_subsequent_mask(3).to(make.dtype)
        padding = _bool_mask(T, [[False] * 4 + [True], [False] * 5])
        return layer(tgt, memory, tgt_mask=mask, tgt_is_causal=True,
                     memory_key_padding_mask=padding)  # fmt: skip

    check_module_run(torch, case)


def test_transformer(torch):
    def case(T, make):
        model = make.module(T.nn.Transformer(4, 2, 1, 2, 8, dropout=0.0))
        src, tgt = make.input(5, 2, 4), make.input(3, 2, 4)
        return model(
            src, tgt, tgt_mask=T.nn.Transformer.generate_square_subsequent_mask(3).to(make.dtype)
        )

    check_module_run(torch, case)
    with pytest.warns(UserWarning, match="enable_nested_tensor is True"):
        ours = nbgrad.nn.Transformer(8, 2, 1, 1, 16)
    with pytest.warns(UserWarning, match="enable_nested_tensor is True"):
        theirs = torch.nn.Transformer(8, 2, 1, 1, 16)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]
    mask = nbgrad.nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(
        to_numpy(mask), [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]]
    )


def test_transformer_errors(torch):
    messages = []
    for T in (torch, nbgrad):
        with pytest.warns(UserWarning, match="enable_nested_tensor is True"):
            model = T.nn.Transformer(4, 2, 1, 1, 8)
        with pytest.raises(RuntimeError) as batch:
            model(T.ones(5, 2, 4), T.ones(3, 1, 4))
        with pytest.raises(RuntimeError) as features:
            model(T.ones(5, 2, 4), T.ones(3, 2, 6))
        with pytest.raises(RuntimeError) as activation:
            T.nn.TransformerEncoderLayer(4, 2, activation="swish")
        messages.append((str(batch.value), str(features.value), str(activation.value)))
    assert messages[0] == messages[1]


# --- F.scaled_dot_product_attention's math path -----------------------------------------------


def _sdpa(**kwargs):
    def build(T, q, k, v, *mask):
        if mask:
            kwargs["attn_mask"] = mask[0]
        return T.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)

    return build


SDPA_CASES = {
    "3-d": (_sdpa(), [(2, 3, 4), (2, 5, 4), (2, 5, 6)]),
    "3-d causal": (_sdpa(is_causal=True), [(2, 3, 4), (2, 5, 4), (2, 5, 4)]),
    "3-d negative scale": (_sdpa(scale=-0.3), [(2, 3, 4), (2, 5, 4), (2, 5, 4)]),
    "2-d": (_sdpa(), [(3, 4), (5, 4), (5, 4)]),
    "5-d": (_sdpa(), [(2, 1, 2, 3, 4), (2, 1, 2, 5, 4), (2, 1, 2, 5, 4)]),
    "4-d other value size": (_sdpa(scale=0.7), [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 3)]),
    "4-d mask needing grad": (_sdpa(), [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), (3, 5)]),
    "3-d float mask": (_sdpa(), [(2, 3, 4), (2, 5, 4), (2, 5, 4), (2, 3, 5)]),
}


@pytest.mark.parametrize("name", list(SDPA_CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sdpa_math_path(torch, name, dtype):
    build, shapes = SDPA_CASES[name]
    run_both_functions(torch, build, shapes, dtype=dtype)


def test_sdpa_math_path_bool_mask_and_transposed_query(torch):
    mask = [[True, False, True, True, False]] * 3

    def with_bool(T, q, k, v):
        return T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=T.tensor(mask))

    run_both_functions(torch, with_bool, [(2, 3, 4), (2, 5, 4), (2, 5, 4)])

    def transposed(T, q, k, v):  # a last dim of stride != 1: not the fused kernel
        return T.nn.functional.scaled_dot_product_attention(q.transpose(-1, -2), k, v)

    run_both_functions(torch, transposed, [(1, 2, 4, 3), (1, 2, 5, 4), (1, 2, 5, 4)])


# --- finite differences, first and second order -----------------------------------------------


def _doubles(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [nbgrad.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]


def test_gradcheck_sdpa_math_path():
    inputs = _doubles((2, 3, 4), (2, 5, 4), (2, 5, 3), (3, 5))

    def attention(q, k, v, mask):
        return nbgrad.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    assert gradcheck(attention, inputs)
    assert gradgradcheck(attention, inputs)


@pytest.mark.parametrize("need_weights", [True, False])
def test_gradcheck_multi_head_attention_forward(need_weights):
    inputs = _doubles((3, 2, 4), (5, 2, 4), (12, 4), (12,), (4, 4), (4,))
    mask = nbgrad.tensor(np.triu(np.ones((3, 5), bool), 3))

    def attention(q, k, w, b, ow, ob):
        out, weights = nbgrad.nn.functional.multi_head_attention_forward(
            q, k, k, 4, 2, w, b, None, None, False, 0.0, ow, ob,
            need_weights=need_weights, attn_mask=mask)  # fmt: skip
        return out if weights is None else (out, weights)

    assert gradcheck(attention, inputs)
    assert gradgradcheck(attention, inputs)


def test_gradcheck_transformer_encoder_layer():
    """The whole layer (attention, GELU feed-forward, LayerNorms) in its input."""
    layer = nbgrad.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu").double()
    (x,) = _doubles((3, 2, 4))
    assert gradcheck(layer, [x])
    assert gradgradcheck(layer, [x])


def test_float32_encoder_layer_and_cross_attention(torch):
    """float32: the fused attention node's saves and the layers' values, at float32 tolerance."""

    def encoder(T, make):
        layer = T.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
        return make.module(layer)(make.input(2, 3, 4))

    def cross(T, make):
        attention = make.module(T.nn.MultiheadAttention(4, 2))
        query, memory = make.input(3, 2, 4), make.input(5, 2, 4)
        return attention(query, memory, memory, need_weights=False)

    check_module_run(torch, encoder, "float32")
    check_module_run(torch, cross, "float32")
