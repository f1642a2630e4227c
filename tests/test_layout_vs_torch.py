"""Results laid out in memory as PyTorch lays them out, for inputs that are not contiguous.

A result's strides are visible (``stride()``, ``is_contiguous()``) and decide what a later
``view``, ``reshape`` or ``contiguous()`` does, so they must be PyTorch's. The calls come from
``tests/test_gradcheck_ops.py``, whose cases reach every entry of the op table through the public
API: that file is run a second time with ``import nbgrad as torch`` giving real PyTorch, so each
case is the same call in both libraries. Every case then runs on leaves laid out two ways:

- transposed: stored with their dims reversed (dense, but not C-contiguous);
- sliced: every other element of a wider tensor along the last dim (not dense).

and must agree with PyTorch on each output's values, shape, strides (along dims of size 2 or
more: README) and ``is_contiguous()``; on the leaves' ``.grad`` after ``backward``, values and
layout (AccumulateGrad's layout rule); and on the layout of the gradients ``autograd.grad``
returns (each backward formula's own), but for the pairs listed as still differing. Where
PyTorch raises for such an input, nbgrad must raise the same error.
"""

import builtins
import warnings
from pathlib import Path

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch

CASES_FILE = Path(__file__).with_name("test_gradcheck_ops.py")


def _cases_run_by(library):
    """test_gradcheck_ops.py's CASES, with ``import nbgrad as torch`` binding ``library``."""

    def importer(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        if name == "nbgrad" and not fromlist:  # (``from nbgrad.x import y`` stays nbgrad's)
            return library
        return builtins.__import__(name, globals, locals, fromlist, level)

    namespace = {
        "__builtins__": {**vars(builtins), "__import__": importer},
        "__name__": f"gradcheck_cases_on_{library.__name__}",
        "__file__": str(CASES_FILE),
    }
    exec(compile(CASES_FILE.read_text(), str(CASES_FILE), "exec"), namespace)  # noqa: S102
    return namespace["CASES"]


OURS = {c.id: c for c in _cases_run_by(nbgrad)}
THEIRS = {c.id: c for c in _cases_run_by(torch)}

# Cases that draw random numbers: nbgrad's are not PyTorch's (README), so only layouts compare.
RANDOM = {
    "bernoulli",
    "bernoulli_tensor_",
    "bernoulli_float_",
    "poisson",
    "normal_",
    "uniform_",
    "random_",
    "random_to_",
    "random_full_",
    "exponential_",
    "geometric_",
    "cauchy_",
    "log_normal_",
    "rrelu-training",
    "rrelu_-training",
}

# Cases written for nbgrad alone, which PyTorch cannot run as written (so nothing compares).
NOT_COMPARABLE = {
    "unsafe_split": "reads its inputs' values with .numpy(), which PyTorch refuses on leaves",
    "transpose_inplace": "reads its inputs' values with .numpy(), as unsafe_split",
    "mkldnn_rnn_layer": "builds its weights with a NumPy dtype taken from the tensor's dtype",
    "fractional_max_pool2d": "passes _random_samples in float64 next to a float32 input",
    "fractional_max_pool3d": "PyTorch's size check counts the window against another dim",
    # convs: tests/test_convs_vs_torch.py compares these with PyTorch in float32
    "mkldnn_convolution": "runs the float32-only entry in float64 (run_op)",
    "_nnpack_spatial_convolution": "runs the float32-only entry in float64 (run_op)",
    "_grid_sampler_2d_cpu_fallback-0": "runs the float32-only entry in float64 (run_op)",
    "_grid_sampler_2d_cpu_fallback-2": "runs the float32-only entry in float64 (run_op)",
    "_grouped_mm-3d-3d": "runs the float32-only entry in float64 (run_op)",
    "_grouped_mm-2d-3d": "runs the float32-only entry in float64 (run_op)",
    "_grouped_mm-3d-2d": "runs the float32-only entry in float64 (run_op)",
    "_grouped_mm-2d-2d": "runs the float32-only entry in float64 (run_op)",
}

# PyTorch computes wrong values here, which nbgrad does not copy: only layouts compare.
PYTORCH_VALUES_WRONG = {
    "_masked_softmax": "PyTorch 2.13's CPU kernel reads a permuted input as if it were "
    "contiguous (README)",
}

# The gradients ``autograd.grad`` returns come straight out of each backward formula (``.grad``
# is then laid out by AccumulateGrad's rule, which nbgrad follows). PyTorch's formulas lay them
# out by the order of their own operands and their own kernels (``mm``'s backward keeps a
# column-major input's layout); nbgrad's NumPy formulas do not follow that everywhere (README:
# same values, other strides). These case-layout pairs are known to differ; the test fails when
# one of them comes to agree, so that the list only shrinks.
RAW_GRADIENT_LAYOUT_DIFFERS = {
    "scaled_dot_product_attention-gqa-transposed",
    "scaled_dot_product_attention-gqa-sliced",
    "scaled_dot_product_attention-gqa-causal-scale-transposed",
    "scaled_dot_product_attention-gqa-causal-scale-sliced",
    "scaled_dot_product_attention-gqa-composite-transposed",
    "scaled_dot_product_attention-gqa-composite-sliced",
    "scaled_dot_product_attention-gqa-3d-transposed",
    "scaled_dot_product_attention-gqa-3d-sliced",
    "grid_sample-bilinear-zeros-edges-transposed",
    "grid_sample-bilinear-border-corners-transposed",
    "grid_sample-bilinear-reflection-corners-transposed",
    "grid_sample-nearest-zeros-edges-transposed",
    "grid_sample-bicubic-zeros-corners-transposed",
    "grid_sample-bicubic-reflection-edges-transposed",
    "grid_sample-3d-transposed",
    "grid_sample-affine_grid-transposed",
    "grid_sample-affine_grid-sliced",
    "scatter_reduce-prod-with-self-transposed",
    "scatter_reduce-prod-without-self-transposed",
    "scatter_reduce-amax-with-self-transposed",
    "scatter_reduce-amax-without-self-transposed",
    "scatter_reduce-amin-with-self-transposed",
    "scatter_reduce-amin-without-self-transposed",
    "index_reduce-prod-transposed",
    "index_reduce-amax-transposed",
    "index_reduce-amin-transposed",
    "as_strided_-transposed",
    "as_strided_-overlapping-transposed",
    "maximum-2x3-transposed",
    "minimum-2x3-transposed",
    "maximum-3-transposed",
    "minimum-3-transposed",
    "maximum-1x3-transposed",
    "minimum-1x3-transposed",
    "maximum-2x1-transposed",
    "minimum-2x1-transposed",
    "maximum-0d-transposed",
    "minimum-0d-transposed",
    "pow-tensor-transposed",
    "relu-transposed",
    "erf-transposed",
    "clamp-both-transposed",
    "clamp-min-transposed",
    "clamp-max-transposed",
    "clamp_min-transposed",
    "clamp_max-transposed",
    "clamp_min-tensor-transposed",
    "clamp_max-tensor-transposed",
    "clip-transposed",
    "clamp-tensor-bounds-transposed",
    "clamp-tensor-min-transposed",
    "mm-transposed",
    "matmul-2d-2d-transposed",
    "matmul-1d-2d-transposed",
    "matmul-3d-2d-transposed",
    "addmm-transposed",
    "addmm-broadcast-bias-transposed",
    "addmm-beta-alpha-transposed",
    "max-transposed",
    "min-transposed",
    "clamp_-transposed",
    "clamp_-min-transposed",
    "relu_-transposed",
    "setitem-int-transposed",
    "setitem-int-broadcast-transposed",
    "setitem-slice-step-transposed",
    "setitem-slice-step-sliced",
    "setitem-ellipsis-transposed",
    "setitem-ellipsis-sliced",
    "setitem-mixed-transposed",
    "setitem-mixed-sliced",
    "setitem-number-transposed",
    "erf_-transposed",
    "as_strided-transposed",
    "as_strided-sliced",
    "as_strided-overlapping-transposed",
    "as_strided-transposed-layout-sliced",
    "mul_-row-view-transposed",
    "exp_-column-view-transposed",
    "div_-t-view-transposed",
    "copy_-unsqueeze-view-transposed",
    "setitem-into-view-transposed",
    "leaky_relu-transposed",
    "leaky_relu-inplace-transposed",
    "mse_loss-transposed",
    "mse_loss-sum-transposed",
    "binary_cross_entropy_with_logits-weights-transposed",
    "prod-transposed",
    "prod-dim-transposed",
    "prod-dim-keepdim-transposed",
    "cumprod-transposed",
    "logcumsumexp-transposed",
    "masked_select-transposed",
    "addmm-method-transposed",
    "var_mean-mean-only-transposed",
    "median-transposed",
    "take-transposed",
    "cross-dim0-transposed",
    "cross-dim0-sliced",
    "index_add_-alpha-transposed",
    "index_add_-alpha-sliced",
    "erfc-transposed",
    "erfinv-transposed",
    "erfinv_-transposed",
    "threshold-transposed",
    "threshold_-transposed",
    "sinc-transposed",
    "pow_-tensor-transposed",
    "smooth_l1_loss-transposed",
    "prelu-transposed",
    "prelu-one-weight-transposed",
    "relu_-function-transposed",
    "leaky_relu_-function-transposed",
    "linalg_solve-transposed",
    "linalg_solve-sliced",
    "linalg_solve-broadcast-transposed",
    "linalg_solve-broadcast-sliced",
    "linalg_solve-right-transposed",
    "linalg_solve-right-sliced",
    "linalg_cholesky-transposed",
    "linalg_cholesky-upper-transposed",
    "linalg_pinv-transposed",
    "linalg_pinv-sliced",
    "linalg_pinv-wide-transposed",
    "linalg_pinv-wide-sliced",
    "cholesky_solve-transposed",
    "cholesky_solve-upper-transposed",
    "cholesky_inverse-transposed",
    "rrelu-eval-transposed",
    "rrelu_-eval-transposed",
    "affine_grid-2d-transposed",
    "affine_grid-2d-sliced",
    "affine_grid-3d-transposed",
    "affine_grid-3d-sliced",
    "linalg_lu_solve-adjoint-batched-transposed",
    "linalg_lu_solve-adjoint-batched-sliced",
    "triangular_solve-transposed",
    "triangular_solve-sliced",
    "triangular_solve-lower-transpose-unit-transposed",
    "triangular_solve-lower-transpose-unit-sliced",
    "cholesky-legacy-transposed",
    "cdist-p0-transposed",
    "cdist-p1-transposed",
    "cdist-p2-transposed",
    "cdist-p3-transposed",
    "cdist-p0.5-transposed",
    "cdist-p1.5-transposed",
    "cdist-pinf-transposed",
    "cdist-batched-transposed",
    "cdist-mm-transposed",
    "matrix_power-2-transposed",
    "matrix_power-3-transposed",
    "matrix_power-5-transposed",
    "multi_dot-transposed",
    "multi_dot-4-transposed",
    "householder_product-transposed",
    "householder_product-fewer-transposed",
    "ormqr-transposed",
    "ormqr-sliced",
    "ormqr-transpose-transposed",
    "ormqr-transpose-sliced",
    "ormqr-right-transposed",
    "ormqr-right-sliced",
    "ormqr-right-transpose-transposed",
    "ormqr-right-transpose-sliced",
    "lstsq-transposed",
    "lstsq-sliced",
    "lstsq-wide-transposed",
    "lstsq-wide-sliced",
    "lstsq-vector-transposed",
    "lstsq-vector-sliced",
    "lstsq-residuals-transposed",
    "lstsq-residuals-sliced",
    "convolution3d-transposed",
    "convolution3d-sliced",
    "_convolution-3d-transposed",  # (the same convolution_backward as convolution3d)
    "_convolution-3d-sliced",
    "special.erfcx-transposed",
    "nextafter-transposed",
    "nextafter_-transposed",
    "angle-transposed",
    "nanmedian-transposed",
}

LAYOUTS = ("transposed", "sliced")


def laid_out(T, array, layout):
    """A leaf holding ``array`` in the given memory layout."""
    array = np.array(array, dtype=np.float64)
    if array.ndim == 0:
        return T.tensor(array).requires_grad_()
    if layout == "transposed":
        reversed_dims = tuple(reversed(range(array.ndim)))
        stored = T.tensor(array.transpose(reversed_dims).copy())
        return stored.permute(*reversed_dims).requires_grad_()
    wide = T.tensor(np.repeat(array, 2, axis=-1))
    return wide[..., ::2].requires_grad_()


def _outputs(value):
    values = value if isinstance(value, (tuple, list)) else (value,)
    return [v for v in values if hasattr(v, "is_floating_point") and v.is_floating_point()]


def _strides(t):
    """Strides along dims of size 2 or more (a dim of size 1 is never stepped along: README)."""
    return tuple(t.stride(d) if t.shape[d] > 1 else None for d in range(t.dim()))


def _layout(t):
    return (tuple(t.shape), _strides(t), t.is_contiguous())


def observe(T, case, layout):
    """What a user sees of ``case`` run on leaves laid out as ``layout``: each output's values
    and layout, the layouts of autograd.grad's gradients and of the leaves' .grad; or the error
    raised, as ("raised", type name, message)."""
    leaves = [laid_out(T, a, layout) for a in case.arrays]
    seen = {"leaves": [_layout(leaf) for leaf in leaves]}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outputs = _outputs(case.fn(*leaves))
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return {**seen, "raised": (type(error).__name__, str(error))}
    seen["outputs"] = [_layout(o) for o in outputs]
    seen["values"] = [o.detach().numpy() for o in outputs]
    differentiable = [o for o in outputs if o.requires_grad]
    if not differentiable:
        return seen
    rng = np.random.default_rng(0)
    cotangents = [T.tensor(rng.standard_normal(tuple(o.shape))) for o in differentiable]
    try:
        grads = T.autograd.grad(
            differentiable, leaves, cotangents, retain_graph=True, allow_unused=True
        )
        T.autograd.backward(differentiable, cotangents)
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return {**seen, "backward raised": (type(error).__name__, str(error))}
    seen["autograd.grad"] = [None if g is None else _layout(g) for g in grads]
    seen[".grad"] = [None if leaf.grad is None else _layout(leaf.grad) for leaf in leaves]
    seen["gradients"] = [None if leaf.grad is None else leaf.grad.numpy() for leaf in leaves]
    return seen


COMPARED = [
    (case_id, layout) for case_id in OURS if case_id not in NOT_COMPARABLE for layout in LAYOUTS
]


@pytest.mark.parametrize("case_id, layout", COMPARED, ids=[f"{c}-{lay}" for c, lay in COMPARED])
def test_layouts_match_pytorch(case_id, layout):
    theirs = observe(torch, THEIRS[case_id], layout)
    ours = observe(nbgrad, OURS[case_id], layout)
    assert ours["leaves"] == theirs["leaves"]  # the inputs themselves
    assert ours.get("raised") == theirs.get("raised")
    if "raised" in theirs:
        return
    assert ours["outputs"] == theirs["outputs"]
    if case_id not in RANDOM and case_id not in PYTORCH_VALUES_WRONG:
        for mine, real in zip(ours["values"], theirs["values"]):
            np.testing.assert_allclose(mine, real, rtol=1e-9, atol=1e-12)
        for mine, real in zip(ours.get("gradients", ()), theirs.get("gradients", ())):
            assert (mine is None) == (real is None)
            if real is not None:
                np.testing.assert_allclose(mine, real, rtol=1e-9, atol=1e-12)
    assert ours.get("backward raised") == theirs.get("backward raised")
    assert ours.get(".grad") == theirs.get(".grad")
    if f"{case_id}-{layout}" in RAW_GRADIENT_LAYOUT_DIFFERS:
        assert ours.get("autograd.grad") != theirs.get("autograd.grad"), (
            "now laid out as PyTorch's: remove it from RAW_GRADIENT_LAYOUT_DIFFERS"
        )
    else:
        assert ours.get("autograd.grad") == theirs.get("autograd.grad")


def test_every_case_is_compared_or_explained():
    """Both runs of the cases file made the same cases, and every exclusion names a case."""
    assert list(OURS) == list(THEIRS)
    assert set(OURS) >= set(NOT_COMPARABLE) | RANDOM | set(PYTORCH_VALUES_WRONG)
    assert {f"{c}-{layout}" for c, layout in COMPARED} >= RAW_GRADIENT_LAYOUT_DIFFERS


# --- calls the cases above do not make ------------------------------------------------------------
# Each expression sees a (2x3, stored transposed), s (2x3, every other element of a 2x6), v (3,
# every other element of a 6), c (2x3, contiguous), all leaves requiring grad, and T.

EXPRESSIONS = [
    "T.kron(a, c)",  # operands laid out unlike each other: PyTorch's view error
    "T.kron(a, a)",
    "T.kron(c, v)",
    "T.conv_tbc(a.unsqueeze(0).expand(2, 2, 3).transpose(0, 1), c.view(1, 3, 2), c[0, :2], 0)",
    "T.conv_tbc(a[None], T.ones(1, 3, 2), T.ones(2), 0)",  # float32 weight: PyTorch's dtype error
    "T.cartesian_prod(v, v)",  # meshgrid views a strided vector: ViewBackward0
    "T.meshgrid(v, v, indexing='ij')[1]",
    "T.nn.functional.rms_norm(a, (3,))",  # ATen ends with contiguous(): CloneBackward0
    "T._weight_norm(a, c[:1], 1)",  # ATen makes v contiguous first
    "T._weight_norm(a, c[:, :1], 0)",
    "T._weight_norm(a, T.ones(1, 3), 1)",  # a float32 g: PyTorch's dtype error
    "T.nn.functional.instance_norm(a.unsqueeze(0))",
    "a[0].t_()",  # an in-place reshape of a view of a leaf: PyTorch's error
    "a[0:1].transpose_(0, 1)",
    "a[0].unsqueeze_(0)",
    "a.t()[0].squeeze_()",
    "T.unsafe_split_with_sizes(a * 1, [1, 1])[1]",
    "a.double()",
    "s.double()",
    "v.double()",
    "a.float() * 1",
    "T.where(a > 0.5, c, s)",  # the condition's layout decides
    "T.where(a.t().contiguous().t() > 0.5, 1.0, c)",
    "a[[1, 0]]",
    "a[:, [2, 0]]",
    "a.t()[[0, 2], None]",
    "a[a > 0.5]",
    "a.flip(0).sum(0)",
    "a.sort(1)[1]",
    "a.cummax(1)[1]",
    "a.max(1)[1]",
    "T.slice_scatter(s, s[:1] * 2)",
    "T.slice_scatter(v, v[:1] * 2)",
    "a.t().softmax(0)",
    "(a * 1).cumsum(1)",
    "T.var_mean(a, 0)[1]",
    "a.mean()",
]


def _inputs(T):
    data = np.arange(1.0, 7.0).reshape(2, 3) / 7
    # (detached: leaves that are not views, whose strides are those of the view they were)
    return {
        "a": T.tensor(data.T.copy()).t().detach().requires_grad_(),
        "s": T.tensor(np.repeat(data, 2, axis=1))[:, ::2].detach().requires_grad_(),
        "v": T.tensor(np.repeat(data[0], 2))[::2].detach().requires_grad_(),
        "c": T.tensor(data * 0.5).requires_grad_(),
    }


def _node_names(fn):
    names, queue = [], [fn]
    while queue:
        node = queue.pop(0)
        if node is not None and type(node).__name__ not in names:
            names.append(type(node).__name__)
            queue.extend(child for child, _ in node.next_functions)
    return names


def outcome(T, expression):
    inputs = _inputs(T)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = eval(expression, {"T": T, **inputs})  # noqa: S307 - our own list
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return ("raised", type(error).__name__, str(error))
    seen = {"layout": _layout(result), "nodes": _node_names(result.grad_fn)}
    seen["values"] = result.detach().numpy().astype(np.float64)
    if result.requires_grad and result.is_floating_point():
        result.backward(T.ones_like(result))
        seen["grads"] = [_layout(t.grad) for t in inputs.values() if t.grad is not None]
    return seen


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_expression_layouts_match_pytorch(expression):
    ours, theirs = outcome(nbgrad, expression), outcome(torch, expression)
    if isinstance(theirs, tuple) or isinstance(ours, tuple):  # raised
        assert ours == theirs
        return
    np.testing.assert_allclose(ours.pop("values"), theirs.pop("values"), rtol=1e-9, atol=1e-12)
    assert ours == theirs


def test_unsafe_split_pieces_share_memory_but_not_versions():
    """As PyTorch's: a write into a piece shows in the input, whose version does not move."""
    seen = []
    for T in (nbgrad, torch):
        x = T.arange(6.0).reshape(2, 3)
        piece = T.unsafe_split_with_sizes(x, [1, 1])[1]
        piece.add_(10)
        seen.append((x.tolist(), x._version, piece._version, piece.stride()))
    assert seen[0] == seen[1] == ([[0.0, 1.0, 2.0], [13.0, 14.0, 15.0]], 0, 1, (3, 1))
