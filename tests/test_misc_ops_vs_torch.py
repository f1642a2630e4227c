"""einsum, tensordot, the normalisation layers and the folding ops against PyTorch: the whole
graph (every node's name, edges and saved values), results, and gradients."""

import numpy as np
import pytest
from graph_compare import to_numpy

import nbgrad


def _saved(fn):
    return sorted(a for a in dir(fn) if a.startswith("_saved_"))


def _same_value(mine, real, torch, where):
    if isinstance(real, torch.Tensor):
        assert isinstance(mine, nbgrad.Tensor), where
        assert tuple(mine.shape) == tuple(real.shape), where
        assert str(mine.dtype) == str(real.dtype), where
        tol = 1e-10 if real.dtype == torch.float64 else 1e-5
        np.testing.assert_allclose(
            to_numpy(mine),
            to_numpy(real),
            rtol=tol,
            atol=tol / 100 if tol < 1e-6 else tol,
            err_msg=where,
        )
    elif isinstance(real, (tuple, list)):
        assert len(mine) == len(real), where
        for m, r in zip(mine, real):
            _same_value(m, r, torch, where)
    elif isinstance(real, float):
        assert mine == pytest.approx(real), where
    else:
        if isinstance(real, int) and real >= 2**63:
            real -= 2**64
        assert mine == real, where


def assert_same_graph(mine, real, torch, path="root"):
    """Every node below the two grad_fns: name, edges, saved names and values."""
    if real is None:
        assert mine is None, path
        return
    assert mine.name() == real.name(), path
    real_saved = [s for s in _saved(real) if not s.endswith("_raw")]
    mine_saved = [s for s in _saved(mine) if not s.endswith("_raw")]
    assert mine_saved == real_saved, f"{path}: {real.name()}"
    for name in real_saved:
        if name.endswith("_sym_strides"):  # a size-1 dim's stride is arbitrary
            sizes = getattr(real, name.replace("_strides", "_sizes"))
            mine_strides, real_strides = getattr(mine, name), getattr(real, name)
            assert [m for m, s in zip(mine_strides, sizes) if s != 1] == [
                r for r, s in zip(real_strides, sizes) if s != 1
            ], f"{path}.{name}"
            continue
        _same_value(getattr(mine, name), getattr(real, name), torch, f"{path}.{name}")
    assert len(mine.next_functions) == len(real.next_functions), path
    for i, ((m, mi), (r, ri)) in enumerate(zip(mine.next_functions, real.next_functions)):
        assert mi == ri, path
        assert_same_graph(m, r, torch, f"{path}/{i}:{real.name()}")


def run_both(torch, build, shapes, dtype="float64", seed=0, grad=True, ints=None):
    """Run ``build(T, *tensors)`` on the same values in both libraries and compare everything."""
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s) for s in shapes]
    ours_in = [nbgrad.tensor(v, dtype=getattr(nbgrad, dtype), requires_grad=grad) for v in values]
    theirs_in = [torch.tensor(v, dtype=getattr(torch, dtype), requires_grad=grad) for v in values]
    ours, theirs = build(nbgrad, *ours_in), build(torch, *theirs_in)
    if isinstance(theirs, tuple):
        for m, r in zip(ours[1:], theirs[1:]):
            _same_value(m, r, torch, "extra output")
        ours, theirs = ours[0], theirs[0]
    _same_value(ours, theirs, torch, "result")
    assert_same_graph(ours.grad_fn, theirs.grad_fn, torch)
    if theirs.requires_grad:
        g = rng.standard_normal(tuple(theirs.shape))
        ours.backward(nbgrad.tensor(g, dtype=ours.dtype))
        theirs.backward(torch.tensor(g, dtype=theirs.dtype))
        for m, r in zip(ours_in, theirs_in):
            _same_value(m.grad, r.grad, torch, "grad")
    return ours, theirs


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("bi,bi->b", [(2, 3), (2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij->", [(2, 3)]),
    ("ij", [(2, 3)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,kj->", [(2, 3), (4, 3)]),
    ("Ab,bA->", [(2, 3), (3, 2)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("ij,j->i", [(2, 1), (3,)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EINSUM)
def test_einsum(torch, equation, shapes):
    run_both(torch, lambda T, *ts: T.einsum(equation, *ts), shapes)


def test_einsum_list_and_sublist_forms(torch):
    run_both(torch, lambda T, a, b: T.einsum("ij,jk->ik", [a, b]), [(2, 3), (3, 4)])
    run_both(torch, lambda T, a, b: T.einsum(a, [0, 1], b, [1, 2], [0, 2]), [(2, 3), (3, 4)])
    run_both(torch, lambda T, a: T.einsum(a, [..., 1]), [(2, 3)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_einsum_float32(torch, dtype):
    run_both(
        torch,
        lambda T, a, b: T.einsum("bhqd,bhkd->bhqk", a, b),
        [(2, 2, 3, 4), (2, 2, 5, 4)],
        dtype=dtype,
    )


TENSORDOT = [
    ([(2, 3, 4), (3, 4, 5)], 2),
    ([(2, 3, 4), (4, 5)], 1),
    ([(2, 3), (4, 5)], 0),
    ([(2, 3, 4), (4, 3, 5)], ([1, 2], [1, 0])),
    ([(2, 3, 4), (3, 5)], ([1], [0])),
    ([(2, 1, 4), (3, 5)], ([1], [0])),
    ([(2, 3, 4), (1, 5)], ([1], [0])),
    ([(3, 4), (4, 3)], ([0, -1], [-1, 0])),
    ([(1, 3), (3, 1)], ([1], [0])),
    ([(3,), (3,)], 1),
    ([(2, 3), (2, 3)], 2),
    ([(3, 1), (3, 2)], ([0, 1], [0, 1])),
    ([(2, 3), (2, 3)], ([1, 0], [1, 0])),
    ([(1, 3), (3, 1)], ([1, 0], [0, 1])),
    ([(2, 1, 3), (3, 1, 2)], ([0, 2], [2, 0])),
]


@pytest.mark.parametrize(("shapes", "dims"), TENSORDOT)
def test_tensordot(torch, shapes, dims):
    run_both(torch, lambda T, a, b: T.tensordot(a, b, dims), shapes)
    run_both(torch, lambda T, a, b: T.tensordot(a, b, dims=dims), shapes)


def _error(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return type(error).__name__, str(error).split("\n")[0]
    return None


def _same_error(torch, build, shapes):
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s) for s in shapes]
    mine = _error(lambda: build(nbgrad, *[nbgrad.tensor(v) for v in values]))
    real = _error(lambda: build(torch, *[torch.tensor(v) for v in values]))
    assert real is not None
    assert mine == real


EINSUM_ERRORS = [
    ("ij,jk->ik", [(2, 3), (4, 4)]),
    ("ij,jk->ik", [(2, 3)]),
    ("ij->ik", [(2, 3)]),
    ("ij->ii", [(2, 3)]),
    ("ijk->", [(2, 3)]),
    ("ij->", [(2, 3), (2, 3)]),
    ("i1->", [(2, 3)]),
    ("ii->i", [(2, 3)]),
    ("i.j->", [(2, 3)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EINSUM_ERRORS)
def test_einsum_errors(torch, equation, shapes):
    _same_error(torch, lambda T, *ts: T.einsum(equation, *ts), shapes)


@pytest.mark.parametrize(
    ("shapes", "dims"),
    [
        ([(2, 3), (4, 5)], 1),
        ([(2, 3), (3, 5)], ([0], [0, 1])),
        ([(2, 3), (3,)], 3),
        ([(2, 3), (3,)], -1),
    ],
)
def test_tensordot_errors(torch, shapes, dims):
    _same_error(torch, lambda T, a, b: T.tensordot(a, b, dims), shapes)


# --- normalisation layers -------------------------------------------------------------------------
NORMS = [
    (
        "group_norm",
        lambda T, x, w, b: T.nn.functional.group_norm(x, 3, w, b),
        [(2, 6, 3), (6,), (6,)],
    ),
    (
        "group_norm-4d",
        lambda T, x, w, b: T.nn.functional.group_norm(x, 2, w, b, eps=1e-3),
        [(2, 4, 3, 2), (4,), (4,)],
    ),
    ("group_norm-2d", lambda T, x: T.nn.functional.group_norm(x, 2), [(2, 4)]),
    ("group_norm-weight", lambda T, x, w: T.nn.functional.group_norm(x, 1, w), [(2, 4, 3), (4,)]),
    (
        "instance_norm",
        lambda T, x, w, b: T.nn.functional.instance_norm(x, weight=w, bias=b),
        [(2, 6, 3), (6,), (6,)],
    ),
    ("instance_norm-plain", lambda T, x: T.nn.functional.instance_norm(x), [(2, 3, 4, 2)]),
    ("rms_norm", lambda T, x, w: T.nn.functional.rms_norm(x, (3,), w), [(2, 6, 3), (3,)]),
    ("rms_norm-2", lambda T, x: T.nn.functional.rms_norm(x, (3, 4), eps=1e-3), [(2, 3, 4)]),
    ("rms_norm-eps", lambda T, x: T.nn.functional.rms_norm(x, [4]), [(2, 3, 4)]),
    ("local_response_norm", lambda T, x: T.nn.functional.local_response_norm(x, 2), [(2, 6, 3)]),
    (
        "local_response_norm-4d",
        lambda T, x: T.nn.functional.local_response_norm(x, 3, k=2.0),
        [(2, 4, 3, 2)],
    ),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "build", "shapes"), NORMS, ids=[n[0] for n in NORMS])
def test_norms(torch, name, build, shapes, dtype):
    run_both(torch, build, shapes, dtype=dtype)


def test_instance_norm_running_stats(torch):
    stats = {}

    def build(T, x, w, b):
        rm, rv = T.zeros(6, dtype=x.dtype), T.ones(6, dtype=x.dtype)
        stats[T.__name__] = (rm, rv)
        return T.nn.functional.instance_norm(x, rm, rv, w, b, momentum=0.3)

    run_both(torch, build, [(2, 6, 3), (6,), (6,)])
    for mine, real in zip(stats["nbgrad"], stats["torch"]):
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-12)


NORM_ERRORS = [
    (lambda T, x: T.nn.functional.group_norm(x, 4), [(2, 6, 3)]),
    (lambda T, x: T.nn.functional.group_norm(x, 1), [(3,)]),
    (lambda T, x, w: T.nn.functional.group_norm(x, 3, w), [(2, 6, 3), (5,)]),
    (lambda T, x, b: T.nn.functional.group_norm(x, 3, None, b), [(2, 6, 3), (5,)]),
    (lambda T, x: T.nn.functional.instance_norm(x), [(2, 6, 1)]),
    (lambda T, x, m, v: T.nn.functional.instance_norm(x, m, v), [(2, 6, 3), (5,), (5,)]),
    (lambda T, x: T.nn.functional.rms_norm(x, (4,)), [(2, 6, 3)]),
    (lambda T, x, w: T.nn.functional.rms_norm(x, (3,), w), [(2, 6, 3), (4,)]),
    (lambda T, x: T.nn.functional.local_response_norm(x, 2), [(3,)]),
]


@pytest.mark.parametrize(("build", "shapes"), NORM_ERRORS)
def test_norm_errors(torch, build, shapes):
    _same_error(torch, build, shapes)


# --- the modules, through nn_compare (same weights, state and repr) -------------------------------
def _module_case(make, shape, train=True):
    def case(T, m):
        module = m.module(make(T.nn))
        module.train(train)
        return module(m.input(*shape))

    return case


MODULES = {
    "GroupNorm": _module_case(lambda nn: nn.GroupNorm(3, 6), (2, 6, 4)),
    "GroupNorm no bias": _module_case(lambda nn: nn.GroupNorm(3, 6, bias=False), (2, 6, 4)),
    "GroupNorm no affine": _module_case(lambda nn: nn.GroupNorm(2, 4, affine=False), (2, 4, 3, 2)),
    "InstanceNorm1d": _module_case(lambda nn: nn.InstanceNorm1d(3), (2, 3, 5)),
    "InstanceNorm1d unbatched": _module_case(lambda nn: nn.InstanceNorm1d(3), (3, 5)),
    "InstanceNorm2d affine": _module_case(
        lambda nn: nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 2)
    ),
    "InstanceNorm2d running": _module_case(
        lambda nn: nn.InstanceNorm2d(3, track_running_stats=True), (2, 3, 4, 2)
    ),
    "InstanceNorm2d eval": _module_case(
        lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        (2, 3, 4, 2),
        train=False,
    ),
    "InstanceNorm3d": _module_case(lambda nn: nn.InstanceNorm3d(2), (2, 2, 3, 2, 2)),
    "RMSNorm": _module_case(lambda nn: nn.RMSNorm(4), (2, 3, 4)),
    "RMSNorm 2 dims no affine": _module_case(
        lambda nn: nn.RMSNorm((3, 4), eps=1e-4, elementwise_affine=False), (2, 3, 4)
    ),
    "LocalResponseNorm": _module_case(lambda nn: nn.LocalResponseNorm(3), (2, 5, 3, 2)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(MODULES))
def test_norm_modules(torch, name, dtype):
    from nn_compare import assert_same_run

    tol = {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-5, "atol": 1e-5}
    ours, theirs = assert_same_run(torch, MODULES[name], dtype, **tol)


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.GroupNorm(3, 6),
        lambda nn: nn.GroupNorm(3, 6, bias=False),
        lambda nn: nn.GroupNorm(2, 4, eps=1e-3, affine=False),
        lambda nn: nn.InstanceNorm1d(3),
        lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        lambda nn: nn.RMSNorm(4),
        lambda nn: nn.RMSNorm((3, 4), eps=1e-4, elementwise_affine=False),
        lambda nn: nn.LocalResponseNorm(3),
    ],
)
def test_norm_module_repr_and_state(torch, make):
    mine, real = make(nbgrad.nn), make(torch.nn)
    assert repr(mine) == repr(real)
    assert list(mine.state_dict()) == list(real.state_dict())


def test_norm_module_errors(torch):
    for T in (nbgrad, torch):
        divisible = r"num_channels \(6\) must be divisible by num_groups \(4\)"
        with pytest.raises(ValueError, match=divisible):
            T.nn.GroupNorm(4, 6)
        with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
            T.nn.InstanceNorm1d(3)(T.zeros(1, 3, 2, 2))
        with pytest.raises(ValueError, match="to match num_features"):
            T.nn.InstanceNorm1d(3, affine=True)(T.zeros(1, 4, 2))


# --- folding: Tensor.unfold, pixel shuffle, masked_scatter, Unfold/Fold modules -------------------
FOLDING = [
    ("unfold", lambda T, x: x.unfold(1, 3, 2), [(2, 8, 3)]),
    ("unfold-overlap", lambda T, x: x.unfold(-1, 3, 1) * 1, [(2, 5)]),
    ("unfold-0d", lambda T, x: x.unfold(0, 1, 1), [()]),
    ("unfold-1d", lambda T, x: x.unfold(0, 2, 3), [(7,)]),
    ("pixel_shuffle", lambda T, x: T.nn.functional.pixel_shuffle(x, 2), [(1, 8, 2, 3)]),
    ("pixel_shuffle-3d", lambda T, x: T.pixel_shuffle(x, 3), [(9, 2, 2)]),
    ("pixel_unshuffle", lambda T, x: T.nn.functional.pixel_unshuffle(x, 2), [(2, 2, 4, 6)]),
    ("pixel_unshuffle-5d", lambda T, x: T.pixel_unshuffle(x, 2), [(2, 1, 1, 2, 4)]),
    (
        "masked_scatter",
        lambda T, x, s: x.masked_scatter(T.tensor([[True, False, True], [False, True, True]]), s),
        [(2, 3), (6,)],
    ),
    (
        "masked_scatter-broadcast-mask",
        lambda T, x, s: T.masked_scatter(x, T.tensor([True, False, True]), s),
        [(2, 3), (2, 3)],
    ),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "build", "shapes"), FOLDING, ids=[f[0] for f in FOLDING])
def test_folding(torch, name, build, shapes, dtype):
    run_both(torch, build, shapes, dtype=dtype)


def test_unfold_is_a_view(torch):
    for T in (nbgrad, torch):
        x = T.arange(6.0)
        y = x.unfold(0, 2, 2)
        y[1, 1] = 10.0
        assert x.tolist()[3] == 10.0
        assert y._base is x


def test_unfold_backward_double_backward(torch):
    def build(T, x, v):
        y = x.unfold(1, 2, 1)
        (g,) = T.autograd.grad(y, x, v, create_graph=True)
        return g * x

    run_both(torch, build, [(2, 4), (2, 3, 2)])


FOLDING_ERRORS = [
    (lambda T, x: x.unfold(2, 4, 1), [(2, 8, 3)]),
    (lambda T, x: x.unfold(2, 2, 0), [(2, 8, 3)]),
    (lambda T, x: x.unfold(3, 2, 1), [(2, 8, 3)]),
    (lambda T, x: T.nn.functional.pixel_shuffle(x, 2), [(1, 7, 2, 3)]),
    (lambda T, x: T.nn.functional.pixel_shuffle(x, 2), [(7, 3)]),
    (lambda T, x: T.nn.functional.pixel_unshuffle(x, 2), [(1, 2, 3, 4)]),
    (lambda T, x, s: x.masked_scatter(T.ones(2, 3, dtype=T.bool), s), [(2, 3), (4,)]),
    (lambda T, x, s: x.masked_scatter(T.ones(2, 3), s), [(2, 3), (6,)]),
    (lambda T, x, s: x.masked_scatter(T.ones(2, 3, dtype=T.bool), s.float()), [(2, 3), (6,)]),
]


@pytest.mark.parametrize(("build", "shapes"), FOLDING_ERRORS)
def test_folding_errors(torch, build, shapes):
    _same_error(torch, build, shapes)


FOLD_MODULES = {
    "Unfold": _module_case(lambda nn: nn.Unfold(2, padding=1, stride=2), (2, 3, 4, 5)),
    "Fold": _module_case(lambda nn: nn.Fold((3, 4), 2), (2, 8, 6)),
    "PixelShuffle": _module_case(lambda nn: nn.PixelShuffle(2), (2, 8, 2, 3)),
    "PixelUnshuffle": _module_case(lambda nn: nn.PixelUnshuffle(2), (2, 2, 4, 6)),
}


@pytest.mark.parametrize("name", list(FOLD_MODULES))
def test_fold_modules(torch, name):
    from nn_compare import assert_same_run

    assert_same_run(torch, FOLD_MODULES[name])
    make = {
        "Unfold": lambda nn: nn.Unfold(2, padding=1, stride=2),
        "Fold": lambda nn: nn.Fold((3, 4), 2),
        "PixelShuffle": lambda nn: nn.PixelShuffle(2),
        "PixelUnshuffle": lambda nn: nn.PixelUnshuffle(2),
    }[name]
    assert repr(make(nbgrad.nn)) == repr(make(torch.nn))


# --- index_put with accumulate ---------------------------------------------------------------
INDEX_PUT = [
    (
        "accumulate",
        lambda T, x, v: T.index_put(x, (T.tensor([0, 2, 0]),), v, accumulate=True),
        [(3, 2), (3, 2)],
    ),
    (
        "accumulate-broadcast",
        lambda T, x, v: x.index_put((T.tensor([0, 0]),), v, True),
        [(3, 2), (2,)],
    ),
    (
        "plain",
        lambda T, x, v: T.index_put(x, (T.tensor([0, 2]), T.tensor([1, 0])), v),
        [(3, 2), (2,)],
    ),
    (
        "mask",
        lambda T, x, v: T.index_put(x, (T.tensor([True, False, True]),), v, True),
        [(3, 2), (1, 2)],
    ),
    (
        "in-place accumulate",
        lambda T, x, v: (x * 1).index_put_((T.tensor([1, 1]),), v, accumulate=True),
        [(3, 2), (2,)],
    ),
    ("in-place", lambda T, x, v: (x * 1).index_put_((T.tensor([1, 2]),), v), [(3, 2), (2,)]),
]


@pytest.mark.parametrize(("name", "build", "shapes"), INDEX_PUT, ids=[c[0] for c in INDEX_PUT])
def test_index_put(torch, name, build, shapes):
    run_both(torch, build, shapes)


@pytest.mark.parametrize(
    ("build", "shapes"),
    [
        (lambda T, x, v: T.index_put(x, (T.tensor([0, 1]),), v, True), [(3, 2), (3,)]),
        (lambda T, x, v: T.index_put(x, (T.tensor([0, 1]),), v.float(), True), [(3, 2), (2,)]),
    ],
)
def test_index_put_errors(torch, build, shapes):
    _same_error(torch, build, shapes)


# --- scaled dot-product attention: PyTorch's fused CPU node ------------------------------------
def _bool_mask(T):
    return T.tensor([[True, False, True, True, True], [True, True, False, False, True]] * 2)[:3]


ATTENTION = [
    ("plain", lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(q, k, v), {}),
    (
        "causal-scale",
        lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, scale=0.3
        ),
        {},
    ),
    (
        "float-mask",
        lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=(q[0, 0, :, :1] * k[0, 0, :, 0]).detach()
        ),
        {},
    ),
    (
        "bool-mask",
        lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=_bool_mask(T)
        ),
        {},
    ),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "build", "kw"), ATTENTION, ids=[a[0] for a in ATTENTION])
def test_scaled_dot_product_attention(torch, name, build, kw, dtype):
    run_both(torch, build, [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)], dtype=dtype)


def test_scaled_dot_product_attention_double_backward():
    rng = np.random.default_rng(0)
    q, k, v = (
        nbgrad.tensor(rng.standard_normal(s), requires_grad=True)
        for s in [(1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2)]
    )
    out = nbgrad.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    (g,) = nbgrad.autograd.grad(out.sum(), q, create_graph=True)
    reference = (q @ k.transpose(-1, -2) / np.sqrt(2)).masked_fill(
        ~nbgrad.ones(3, 4, dtype=nbgrad.bool).tril(), float("-inf")
    ).softmax(-1) @ v
    (expected,) = nbgrad.autograd.grad(reference.sum(), q, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), expected.detach().numpy(), rtol=1e-10)
    (gg,) = nbgrad.autograd.grad((g * g).sum(), k)
    (expected_gg,) = nbgrad.autograd.grad((expected * expected).sum(), k)
    np.testing.assert_allclose(gg.numpy(), expected_gg.numpy(), rtol=1e-9)
