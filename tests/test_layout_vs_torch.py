"""Results laid out in memory as PyTorch lays them out, for inputs that are not contiguous.

A result's strides are visible (``stride()``, ``is_contiguous()``) and decide what a later
``view``, ``reshape`` or ``contiguous()`` does, so they must be PyTorch's. The calls come from
``tests/test_gradcheck_ops.py``, whose cases reach every entry of the op table through the public
API: that file is run a second time with ``import nbgrad as torch`` giving real PyTorch, so each
case is the same call in both libraries. Every case then runs on leaves laid out two ways:

- transposed: stored with their dims reversed (dense, but not C-contiguous);
- sliced: every other element of a wider tensor along the last dim (not dense).

and must agree with PyTorch on each output's values, shape, strides (along dims of size 2 or
more: README) and ``is_contiguous()``; on the gradients ``autograd.grad`` returns (the backward
formulas' own layouts); and on the leaves' ``.grad`` after ``backward`` (AccumulateGrad's layout
rule). Where PyTorch raises for such an input, nbgrad must raise the same error.
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
    "sort-stable-descending": "torch.sort(x, dim, descending, stable=True): nbgrad accepts the "
    "positional descending with stable=, PyTorch's parser does not (README)",
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
    if case_id not in RANDOM:
        for mine, real in zip(ours["values"], theirs["values"]):
            np.testing.assert_allclose(mine, real, rtol=1e-9, atol=1e-12)
    assert ours.get("backward raised") == theirs.get("backward raised")
    assert ours.get("autograd.grad") == theirs.get("autograd.grad")
    assert ours.get(".grad") == theirs.get(".grad")


def test_every_case_is_compared_or_explained():
    """Both runs of the cases file made the same cases, and every exclusion names a case."""
    assert list(OURS) == list(THEIRS)
    assert set(OURS) >= set(NOT_COMPARABLE) | RANDOM
