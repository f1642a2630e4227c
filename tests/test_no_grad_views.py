"""Views made in no_grad (or inference) mode of a tensor that requires grad.

PyTorch 2.13 says such a view requires grad (a view requires grad when its base does), is a
leaf, has no grad_fn and no AccumulateGrad (its own flag is off), so ops on it in grad mode
record nodes whose edge to it is ``(None, 0)``, and backward stops there without an error.
Writing into it in grad mode raises; setting its own flag gives it an AccumulateGrad.

Each scenario runs on nbgrad and on real PyTorch and the observations are compared; the
expected observations are also written out (as PyTorch 2.13 gives them) so that the torch-free
runs check them too.
"""

import warnings

import pytest

import nbgrad


def _outcome(compute):
    try:
        return compute()
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return (type(error).__name__, str(error).split(".")[0])


def _edges(tensor):
    node = tensor.grad_fn
    return (
        None if node is None else [(n is not None and n.name(), i) for n, i in node.next_functions]
    )


def observations(T):
    """What a user sees of no_grad views, as plain data."""
    seen = {}
    x = T.ones(3, requires_grad=True)
    with T.no_grad():
        v = x[:2]
        vv = v[:1]
        expanded = x.expand(2, 3)
        first, second = x.split(2)
        not_a_view = x * 2
    seen["view"] = (v.requires_grad, v.is_leaf, v.grad_fn is None)
    seen["view of a view"] = (vv.requires_grad, vv.is_leaf)
    seen["split"] = (first.requires_grad, second.requires_grad, _edges(second * 2))
    seen["not a view"] = not_a_view.requires_grad
    seen["op on it"] = _edges(v * 3)
    seen["view of it in grad mode"] = (v[:1].requires_grad, _edges(v[:1]))
    y = (v * 3).sum()
    y.backward()  # runs, and stops at the view
    seen["after backward"] = (v.grad, x.grad)
    (expanded + 1).sum().backward()
    seen["expand backward"] = x.grad
    seen["retain_grad"] = (v.retain_grad(), v.retains_grad)
    seen["autograd.grad"] = _outcome(lambda: T.autograd.grad((v * 2).sum(), v))
    seen["autograd.grad allow_unused"] = T.autograd.grad((v * 2).sum(), v, allow_unused=True)
    seen["detach"] = v.detach().requires_grad
    seen["requires_grad_(False) keeps it"] = (
        v.requires_grad_(False).requires_grad,
        v.requires_grad,
    )

    with T.no_grad():
        own = x[:2]
    own.requires_grad_(True)  # its own flag: now an AccumulateGrad of its own
    seen["own flag"] = (own.requires_grad, _edges(own * 2))
    seen["own flag autograd.grad"] = T.autograd.grad((own * 2).sum(), own)[0].tolist()

    with T.inference_mode():
        in_inference = x[:2]
    seen["inference mode"] = (
        in_inference.requires_grad,
        in_inference.is_inference(),
        _edges(in_inference * 2),
    )

    plain = T.ones(3)
    with T.no_grad():
        of_plain = plain[:2]
    seen["base without grad"] = of_plain.requires_grad
    whole = T.ones(3, dtype=T.float64, requires_grad=True)
    with T.no_grad():
        as_long = whole[:2].long()
    seen["integer"] = as_long.requires_grad
    nonleaf = T.ones(3, requires_grad=True) * 2
    with T.no_grad():
        of_nonleaf = nonleaf[:2]
    seen["base not a leaf"] = (of_nonleaf.requires_grad, of_nonleaf.is_leaf, _edges(of_nonleaf * 2))
    seen["repr"] = repr(of_nonleaf)

    # Writing into one: refused in grad mode, allowed under no_grad; after such a write its
    # history would be regenerated from its base, which PyTorch refuses too.
    base = T.ones(3, requires_grad=True)
    with T.no_grad():
        written = base[:2]
    seen["in-place in grad mode"] = _outcome(lambda: written.mul_(2))
    with T.no_grad():
        written.mul_(2)
    seen["in-place under no_grad"] = (written.tolist(), base.tolist(), written._version)
    seen["used after a write"] = _outcome(lambda: written * 2)
    seen["after a write"] = (
        written.requires_grad,
        repr(written),
        _outcome(lambda: written.is_leaf),
    )
    return seen


def _plain(value):
    """Tensors as lists, so that both libraries' observations compare as data."""
    if hasattr(value, "tolist") and not isinstance(value, list):
        return value.tolist()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


REBASED = (
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled"
)
EXPECTED = {  # PyTorch 2.13's observations (the test against real PyTorch checks these)
    "view": [True, True, True],
    "view of a view": [True, True],
    "split": [True, True, [[False, 0], [False, 0]]],
    "not a view": False,
    "op on it": [[False, 0], [False, 0]],
    "view of it in grad mode": [True, [[False, 0]]],
    "after backward": [None, None],
    "expand backward": None,
    "retain_grad": [None, False],
    "autograd.grad": [
        "RuntimeError",
        "The differentiated Tensor at index 0 appears to not have been used in the graph",
    ],
    "autograd.grad allow_unused": [None],
    "detach": False,
    "requires_grad_(False) keeps it": [True, True],
    "own flag": [True, [["torch::autograd::AccumulateGrad", 0], [False, 0]]],
    "own flag autograd.grad": [2.0, 2.0],
    "inference mode": [True, False, [[False, 0], [False, 0]]],
    "base without grad": False,
    "integer": False,
    "base not a leaf": [True, True, [[False, 0], [False, 0]]],
    "repr": "tensor([2., 2.], requires_grad=True)",
    "in-place in grad mode": [
        "RuntimeError",
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled",
    ],
    "in-place under no_grad": [[2.0, 2.0], [2.0, 2.0, 1.0], 1],
    "after a write": [True, "tensor([2., 2.], grad_fn=<Invalid>)", ["RuntimeError", REBASED]],
    "used after a write": ["RuntimeError", REBASED],
}


def test_no_grad_views_behave_as_pytorch_says():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seen = {key: _plain(value) for key, value in observations(nbgrad).items()}
    assert seen == EXPECTED


def test_no_grad_views_against_real_pytorch(torch):
    seen = {key: _plain(value) for key, value in observations(torch).items()}
    assert seen == EXPECTED
    ours = {key: _plain(value) for key, value in observations(nbgrad).items()}
    assert ours == seen


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_a_loss_through_a_no_grad_view_of_a_weight_leaves_the_weight_alone(mode):
    """The everyday case: a transposed weight taken under no_grad and used in grad mode."""
    weight = nbgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with getattr(nbgrad, mode)():
        frozen = weight.t()
    x = nbgrad.tensor([[1.0, -1.0]], requires_grad=True)
    loss = (x @ frozen).sum()
    assert loss.requires_grad and loss.grad_fn.name() == "SumBackward0"
    loss.backward()
    assert weight.grad is None
    assert x.grad.tolist() == [[4.0, 6.0]]  # d/dx_i of sum(x @ W^T) = column i of W summed
