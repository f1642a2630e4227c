"""torch._convolution, torch.mkldnn_convolution, torch._nnpack_spatial_convolution,
torch._grid_sampler_2d_cpu_fallback, F.interpolate(mode="lanczos") and torch._grouped_mm against
real PyTorch: the nodes (first order and under create_graph), their saved values, results,
gradients and gradients of gradients, and the errors for bad input.

Most of these take float32 alone in PyTorch (float16 too for _grouped_mm), so they are compared
in float32 with float32's tolerances; test_gradcheck_ops.py checks their entries in float64.
"""

import numpy as np
import pytest
from graph_compare import saved_names, structure, to_numpy

import nbgrad

torch = pytest.importorskip("torch")

# PyTorch's _nnpack_spatial_convolution fails ("NNPACK SpatialConvolution_updateOutput failed")
# until NNPACK is initialised, which any convolution or this query does.
torch._nnpack_available()


def _values(spec, seed):
    """name -> NumPy array: normal values, or a grid kept inside [-1.1, 1.1]."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, (shape, dtype) in spec.items():
        if name.startswith("grid"):
            arrays[name] = rng.uniform(-1.1, 1.1, shape).astype(dtype)
        else:
            arrays[name] = rng.standard_normal(shape).astype(dtype)
    return arrays


def _leaves(T, arrays):
    return {
        name: T.tensor(a, dtype=getattr(T, str(a.dtype)), requires_grad=True)
        for name, a in arrays.items()
    }


F32, F64 = "float32", "float64"
OFFS = "T.tensor([3, 8], dtype=T.int32)"

# (id, expression over the leaves and T, leaves: name -> (shape, dtype), tolerance)
CASES = [
    (
        "_convolution-2d",
        "T._convolution(x, w, b, [2, 1], [1, 0], [1, 2], False, [0, 0], 1, False, False, True, "
        "True)",
        {"x": ((2, 3, 7, 6), F64), "w": ((4, 3, 3, 2), F64), "b": ((4,), F64)},
        1e-10,
    ),
    (
        "_convolution-transposed-groups",
        "T._convolution(x, w, None, [2, 2], [1, 0], [1, 1], True, [1, 0], 2, False, False, True, "
        "True)",
        {"x": ((1, 4, 3, 4), F64), "w": ((4, 1, 3, 2), F64)},
        1e-10,
    ),
    (
        "_convolution-3d-float32",
        "T._convolution(x, w, b, [1, 2, 1], [0, 1, 1], [1, 1, 1], False, [0, 0, 0], 1, False, "
        "False, True, True)",
        {"x": ((1, 2, 3, 4, 4), F32), "w": ((2, 2, 2, 2, 2), F32), "b": ((2,), F32)},
        1e-4,
    ),
    (
        "mkldnn_convolution",
        "T.mkldnn_convolution(x, w, b, [1, 0], [2, 1], [1, 2], 1)",
        {"x": ((2, 3, 7, 6), F32), "w": ((4, 3, 3, 2), F32), "b": ((4,), F32)},
        1e-4,
    ),
    (
        "mkldnn_convolution-1d-groups",
        "T.mkldnn_convolution(x, w, None, [1], [2], [1], 2)",
        {"x": ((2, 4, 9), F32), "w": ((6, 2, 3), F32)},
        1e-4,
    ),
    (
        "_nnpack_spatial_convolution",
        "T._nnpack_spatial_convolution(x, w, b, [1, 0], 2)",
        {"x": ((2, 3, 7, 6), F32), "w": ((4, 3, 3, 2), F32), "b": ((4,), F32)},
        1e-4,
    ),
    (
        "_nnpack_spatial_convolution-no-bias",
        "T._nnpack_spatial_convolution(x, w, None, [1, 1])",
        {"x": ((1, 2, 5, 5), F32), "w": ((3, 2, 3, 3), F32)},
        1e-4,
    ),
    *(
        (
            f"_grid_sampler_2d_cpu_fallback-{mode}-{padding}-{corners}",
            f"T._grid_sampler_2d_cpu_fallback(x, grid, {mode}, {padding}, {corners})",
            {"x": ((2, 3, 5, 6), F32), "grid": ((2, 4, 3, 2), F32)},
            1e-4,
        )
        for mode, padding, corners in ((0, 0, False), (1, 1, True), (2, 2, False), (2, 1, True))
    ),
    (
        "lanczos-size",
        "T.nn.functional.interpolate(x, size=(3, 8), mode='lanczos', antialias=True)",
        {"x": ((2, 3, 7, 5), F64)},
        1e-10,
    ),
    (
        "lanczos-scale-float32",
        "T.nn.functional.interpolate(x, scale_factor=(0.6, 1.7), mode='lanczos', antialias=True, "
        "recompute_scale_factor=False)",
        {"x": ((1, 2, 7, 5), F32)},
        1e-4,
    ),
    (
        "_grouped_mm-3d-3d",
        "T._grouped_mm(a, m)",
        {"a": ((3, 4, 8), F32), "m": ((3, 8, 4), F32)},
        1e-4,
    ),
    (
        "_grouped_mm-2d-3d",
        f"T._grouped_mm(a, m, {OFFS})",
        {"a": ((8, 8), F32), "m": ((2, 8, 4), F32)},
        1e-4,
    ),
    (
        "_grouped_mm-3d-2d",
        f"T._grouped_mm(a, m, {OFFS})",
        {"a": ((2, 4, 8), F32), "m": ((8, 8), F32)},
        1e-4,
    ),
    (
        "_grouped_mm-2d-2d",
        f"T._grouped_mm(a, m, {OFFS})",
        {"a": ((4, 8), F32), "m": ((8, 4), F32)},
        1e-4,
    ),
    (
        "_grouped_mm-float16",
        "T._grouped_mm(a, m)",
        {"a": ((2, 4, 8), "float16"), "m": ((2, 8, 8), "float16")},
        2e-2,
    ),
]


def _assert_close(mine, real, tolerance, what):
    np.testing.assert_allclose(
        to_numpy(mine).astype(np.float64),
        to_numpy(real).astype(np.float64),
        rtol=tolerance,
        atol=tolerance,
        err_msg=what,
    )


def _assert_same_saved(mine, real, tolerance, what):
    for name in saved_names(real):
        ours, theirs = getattr(mine, name), getattr(real, name)
        if isinstance(theirs, torch.Tensor):
            _assert_close(ours, theirs, tolerance, f"{what} {name}")
            assert str(ours.dtype) == str(theirs.dtype), name
        else:
            assert ours == theirs, f"{what} {name}: {ours!r} != {theirs!r}"


def _run(T, expression, arrays):
    leaves = _leaves(T, arrays)
    return leaves, eval(expression, {"T": T, **leaves})  # noqa: S307 - our own table


@pytest.mark.parametrize(
    "expression, spec, tolerance", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_nodes_values_and_gradients_to_second_order(expression, spec, tolerance):
    arrays = _values(spec, seed=5)
    ours_in, ours = _run(nbgrad, expression, arrays)
    theirs_in, theirs = _run(torch, expression, arrays)
    # (the float16 case's values are rounded alike; its sums are not)
    assert structure(ours.grad_fn) == structure(theirs.grad_fn)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)
    _assert_close(ours, theirs, tolerance, "result")
    assert saved_names(theirs.grad_fn) <= saved_names(ours.grad_fn)
    _assert_same_saved(ours.grad_fn, theirs.grad_fn, tolerance, "first order")

    # The gradient of a weighted sum of squares, differentiable (create_graph=True) ...
    weights = np.random.default_rng(6).standard_normal(tuple(theirs.shape)).astype(ours.dtype.name)
    names = list(arrays)
    our_grads = nbgrad.autograd.grad(
        (ours * ours * nbgrad.tensor(weights)).sum(), [ours_in[n] for n in names],
        create_graph=True,
    )  # fmt: skip
    their_grads = torch.autograd.grad(
        (theirs * theirs * torch.tensor(weights)).sum(), [theirs_in[n] for n in names],
        create_graph=True,
    )  # fmt: skip
    for name, mine, real in zip(names, our_grads, their_grads):
        _assert_close(mine, real, tolerance * 10, f"gradient of {name}")
        assert structure(mine.grad_fn) == structure(real.grad_fn), name
        _assert_same_saved(mine.grad_fn, real.grad_fn, tolerance * 10, f"{name}'s gradient")

    # ... and the gradient of those gradients.
    differentiable = [
        (n, m, r) for n, m, r in zip(names, our_grads, their_grads) if m.requires_grad
    ]
    ours_total = sum((m * m).sum() for _, m, _ in differentiable)
    theirs_total = sum((r * r).sum() for _, _, r in differentiable)
    seconds = zip(
        nbgrad.autograd.grad(ours_total, [ours_in[n] for n in names], allow_unused=True),
        torch.autograd.grad(theirs_total, [theirs_in[n] for n in names], allow_unused=True),
    )
    for name, (mine, real) in zip(names, seconds):
        assert (mine is None) == (real is None), name
        if real is not None:
            scale = max(1.0, float(np.abs(to_numpy(real)).max()))
            _assert_close(mine / scale, real / scale, tolerance * 100, f"second gradient {name}")


# --- errors ---------------------------------------------------------------------------------

_X = "T.ones(2, 3, 6, 6)"
_W = "T.ones(4, 3, 3, 3)"
_CONV_FLAGS = "False, False, True, True"
ERRORS = [
    f"T._convolution({_X}, {_W}.double(), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "
    f"{_CONV_FLAGS})",
    f"T._convolution({_X}, {_W}, T.ones(4).double(), [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "
    f"{_CONV_FLAGS})",
    f"T._convolution({_X}, T.ones(4, 2, 3, 3), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "
    f"{_CONV_FLAGS})",
    f"T._convolution({_X}[0], {_W}, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, {_CONV_FLAGS})",
    f"T._convolution({_X}, T.ones(4, 3, 7, 7), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "
    f"{_CONV_FLAGS})",
    f"T._convolution({_X}, {_W}, None, [1, 1, 1], [0, 0], [1, 1], False, [0, 0], 1, {_CONV_FLAGS})",
    f"T._convolution({_X}, {_W}, None, [1, 1], [-1, 0], [1, 1], False, [0, 0], 1, {_CONV_FLAGS})",
    f"T._convolution({_X}, {_W}, None, [0, 1], [0, 0], [1, 1], False, [0, 0], 1, {_CONV_FLAGS})",
    f"T._convolution({_X}, {_W}, None, [1, 1], [0, 0], [0, 1], False, [0, 0], 1, {_CONV_FLAGS})",
    f"T._convolution({_X}, {_W}, T.ones(3), [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "
    f"{_CONV_FLAGS})",
    f"T._convolution(T.ones(2, 4, 5, 5), T.ones(3, 2, 3, 3), None, [1, 1], [0, 0], [1, 1], "
    f"False, [0, 0], 2, {_CONV_FLAGS})",
    f"T._convolution({_X}, T.ones(3, 3, 3, 3), None, [1, 1], [0, 0], [1, 1], True, [1, 0], 1, "
    f"{_CONV_FLAGS})",
    "T._convolution(T.ones(2, 3), T.ones(4, 3), None, [], [], [], False, [], 1, False, False, "
    "True, True)",
    f"T.mkldnn_convolution({_X}.double(), {_W}.double(), None, [0, 0], [1, 1], [1, 1], 1)",
    f"T.mkldnn_convolution({_X}, {_W}, T.ones(3), [0, 0], [1, 1], [1, 1], 1)",
    f"T.mkldnn_convolution({_X}[0], {_W}, None, [0], [1], [1], 1)",
    f"T.mkldnn_convolution({_X}.half(), {_W}.half(), None, [0, 0], [1, 1], [1, 1], 1)",
    f"T.mkldnn_convolution({_X}, {_W}.double(), None, [0, 0], [1, 1], [1, 1], 1)",
    f"T.mkldnn_convolution({_X}, T.ones(4, 2, 3, 3), None, [0, 0], [1, 1], [1, 1], 1)",
    f"T.mkldnn_convolution({_X}[0], {_W}, None, [0, 0], [1, 1], [1, 1], 1)",
    f"T._nnpack_spatial_convolution({_X}.double(), {_W}.double(), None, [0, 0])",
    f"T._nnpack_spatial_convolution({_X}[0], {_W}, None, [0, 0])",
    f"T._nnpack_spatial_convolution({_X}, T.ones(4, 3, 3), None, [0, 0])",
    f"T._nnpack_spatial_convolution({_X}, T.ones(4, 2, 3, 3), None, [0, 0])",
    "T._grid_sampler_2d_cpu_fallback(T.ones(2, 3, 5, 6).double(), T.zeros(2, 4, 3, 2).double(), "
    "0, 0, False)",
    "T._grid_sampler_2d_cpu_fallback(T.ones(1, 3, 5, 6), T.zeros(2, 4, 3, 2), 0, 0, False)",
    "T._grid_sampler_2d_cpu_fallback(T.ones(2, 3, 5, 6), 3, 0, 0, False)",
    "T._grid_sampler_2d_cpu_fallback(T.ones(2, 3, 5, 6), T.zeros(2, 4, 3, 3), 0, 0, False)",
    "T._grid_sampler_2d_cpu_fallback(T.ones(2, 3, 4, 5, 6), T.zeros(2, 1, 4, 3, 3), 0, 0, False)",
    "T.nn.functional.interpolate(T.ones(1, 2, 4, 4), size=2, mode='lanczos')",
    "T.nn.functional.interpolate(T.ones(1, 2, 4, 4), size=2, mode='lanczos', antialias=True, "
    "align_corners=True)",
    "T.nn.functional.interpolate(T.ones(1, 2, 4, 4).half(), size=2, mode='lanczos', "
    "antialias=True)",
    "T.nn.functional.interpolate(T.ones(1, 4, 4), size=2, mode='lanczos', antialias=True)",
    "T._grouped_mm(T.ones(3, 4, 8).double(), T.ones(3, 8, 8).double())",
    "T._grouped_mm(T.ones(3, 4, 8), T.ones(3, 8, 8).double())",
    "T._grouped_mm(T.ones(3, 4, 8), T.ones(3, 8, 8).half())",
    "T._grouped_mm(T.ones(3, 4, 8).half(), T.ones(3, 8, 8))",
    "T._grouped_mm(T.ones(8), T.ones(3, 8, 8))",
    "T._grouped_mm(T.ones(3, 4, 8), T.ones(3, 4, 8))",
    "T._grouped_mm(T.ones(2, 4, 8), T.ones(3, 8, 8))",
    "T._grouped_mm(T.ones(8, 8), T.ones(2, 8, 8))",
    "T._grouped_mm(T.ones(3, 4, 8), T.ones(3, 8, 8), T.tensor([1, 2, 3], dtype=T.int32))",
    "T._grouped_mm(T.ones(8, 8), T.ones(2, 8, 8), T.tensor([3, 8]))",
    "T._grouped_mm(T.ones(8, 8), T.ones(2, 8, 8), T.tensor([[3, 8]], dtype=T.int32))",
    "T._grouped_mm(T.ones(8, 8), T.ones(3, 8, 8), T.tensor([3, 8], dtype=T.int32))",
    "T._grouped_mm(T.ones(3, 4, 2), T.ones(3, 2, 8))",
    "T._grouped_mm(T.ones(3, 4, 8), T.ones(3, 8, 8), bias=T.ones(3, 8))",
    "T._grouped_mm(T.ones(3, 4, 8), T.ones(3, 8, 8), out_dtype=T.float16)",
]


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_as_pytorch(expression):
    with pytest.raises(Exception) as theirs:
        eval(expression, {"T": torch})  # noqa: S307 - our own table
    with pytest.raises(type(theirs.value)) as ours:
        eval(expression, {"T": nbgrad})  # noqa: S307
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]


def test_mkldnn_convolution_says_it_takes_no_int8():
    x, w = nbgrad.ones(1, 2, 3, 3, dtype=nbgrad.int8), nbgrad.ones(1, 2, 2, 2, dtype=nbgrad.int8)
    with pytest.raises(NotImplementedError, match="takes float32 tensors"):
        nbgrad.mkldnn_convolution(x, w, None, [0, 0], [1, 1], [1, 1], 1)


def test_grouped_mm_accepts_a_column_major_operand():
    """The GEMM reads either layout: a transposed operand is fine, as in PyTorch."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 4, 8)).astype(np.float32)
    m = rng.standard_normal((3, 4, 8)).astype(np.float32)
    ours = nbgrad._grouped_mm(nbgrad.tensor(a), nbgrad.tensor(m).transpose(-2, -1))
    theirs = torch._grouped_mm(torch.tensor(a), torch.tensor(m).transpose(-2, -1))
    _assert_close(ours, theirs, 1e-5, "column-major mat2")
    np.testing.assert_allclose(to_numpy(ours), a @ m.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)


# --- traces: %%autograd records the same nodes on both engines -------------------------------


def _record(program, T):
    import sys

    from nbgrad.trace.recorder import Recorder
    from nbgrad.trace.source import source_for
    from nbgrad.trace.torch_recorder import TorchRecorder

    recorder_class = TorchRecorder if T is torch else Recorder
    recorder = recorder_class(source_for(__file__), base_frame=sys._getframe(), source_kind="file")
    recorder.start()
    variables = program(T)
    return recorder.finish([variables])


def _private_layers(T):
    values = _values(
        {"x": ((1, 2, 6, 5), F32), "w": ((3, 2, 2, 2), F32), "grid": ((1, 3, 2, 2), F32)}, seed=9
    )
    x, w, grid = _leaves(T, values).values()
    a = T.tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(2, 2, 8), requires_grad=True)
    m = T.tensor(np.linspace(1, -1, 64, dtype=np.float32).reshape(2, 8, 4), requires_grad=True)
    h = T.mkldnn_convolution(x, w, None, [1, 0], [1, 1], [1, 1], 1)
    k = T._nnpack_spatial_convolution(x, w, None, [0, 1])
    s = T._grid_sampler_2d_cpu_fallback(h, grid, 0, 0, False)
    u = T.nn.functional.interpolate(k, size=(3, 4), mode="lanczos", antialias=True)
    g = T._grouped_mm(a, m)
    loss = s.sum() + (u * u).sum() + (g * g).sum()
    loss.backward()
    return locals()


def test_traces_of_both_engines_show_the_same_nodes_saved_values_and_gradients():
    mine, theirs = _record(_private_layers, nbgrad), _record(_private_layers, torch)
    labels = [[s.node.name for s in trace.backward_steps] for trace in (mine, theirs)]
    assert labels[0] == labels[1]
    assert {
        "MkldnnConvolutionBackward0",
        "NnpackSpatialConvolutionBackward0",
        "GridSampler2DCpuFallbackBackward0",
        "UpsampleLanczos2DAaBackward0",
        "GroupedMmBackward0",
    } <= set(labels[1])
    for ours, real in zip(mine.backward_steps, theirs.backward_steps):
        assert sorted(ours.node.saved) == sorted(real.node.saved), real.node.name
        assert ours.node.formulas == real.node.formulas, real.node.name
        for g, h in zip(ours.grads_in, real.grads_in, strict=True):
            if h is not None:
                _assert_close(np.asarray(g), np.asarray(h), 1e-4, real.node.name)
    for name in ("x", "w", "grid", "a", "m"):
        _assert_close(
            np.asarray(mine.tensors[name].grad), np.asarray(theirs.tensors[name].grad), 1e-4, name
        )
