"""The optimizers step exactly as torch.optim does: same model, same data, same parameters after
every step; and the Optimizer API (groups, zero_grad, state_dict) reads the same."""

import numpy as np
import pytest
from graph_compare import to_numpy

import nbgrad

CONFIGS = {
    "sgd": ("SGD", {"lr": 0.1}),
    "sgd momentum": ("SGD", {"lr": 0.05, "momentum": 0.9}),
    "sgd dampening decay": (
        "SGD",
        {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.01},
    ),
    "sgd nesterov": ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
    "sgd maximize": ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    "adam": ("Adam", {}),
    "adam lr betas": ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6}),
    "adam weight decay": ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    "adam amsgrad": ("Adam", {"lr": 0.01, "amsgrad": True}),
    "adam maximize": ("Adam", {"lr": 0.01, "maximize": True}),
    "adamw": ("AdamW", {"lr": 0.01}),
    "adamw amsgrad decay": ("AdamW", {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True}),
}


def _model(T):
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.Linear(4, 5), T.nn.Tanh(), T.nn.Linear(5, 3))


def _twins(torch, dtype_name="float64"):
    theirs = _model(torch).to(getattr(torch, dtype_name))
    ours = _model(nbgrad).to(getattr(nbgrad, dtype_name))
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def _loss(T, model, step, dtype_name):
    rng = np.random.default_rng(step)
    x = T.tensor(rng.standard_normal((6, 4)), dtype=getattr(T, dtype_name))
    target = T.tensor(rng.integers(0, 3, 6))
    return T.nn.functional.cross_entropy(model(x), target)


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("name", CONFIGS)
def test_steps_match_torch_optim(torch, name, dtype_name):
    kind, options = CONFIGS[name]
    ours, theirs = _twins(torch, dtype_name)
    ours_opt = getattr(nbgrad.optim, kind)(ours.parameters(), **options)
    theirs_opt = getattr(torch.optim, kind)(theirs.parameters(), **options)
    tolerance = (
        {"rtol": 1e-10, "atol": 1e-12} if dtype_name == "float64" else {"rtol": 1e-5, "atol": 1e-6}
    )
    for step in range(5):
        for T, model, opt in ((nbgrad, ours, ours_opt), (torch, theirs, theirs_opt)):
            opt.zero_grad()
            _loss(T, model, step, dtype_name).backward()
            opt.step()
        for (name_ours, mine), (_, real) in zip(ours.named_parameters(), theirs.named_parameters()):
            np.testing.assert_allclose(
                to_numpy(mine), to_numpy(real), err_msg=f"step {step}: {name_ours}", **tolerance
            )
    _assert_same_state(ours_opt.state_dict(), theirs_opt.state_dict(), torch)


def _assert_same_state(mine, real, torch):
    assert mine["param_groups"] == real["param_groups"]
    assert list(mine["state"]) == list(real["state"])
    for index, values in real["state"].items():
        assert list(mine["state"][index]) == list(values)
        for key, value in values.items():
            assert mine["state"][index][key].dtype.name == str(value.dtype).split(".")[1], key
            np.testing.assert_allclose(
                to_numpy(mine["state"][index][key]), to_numpy(value), rtol=1e-5, atol=1e-7
            )


def test_repr_matches_torch(torch):
    for kind, options in CONFIGS.values():
        ours = getattr(nbgrad.optim, kind)(_model(nbgrad).parameters(), **options)
        theirs = getattr(torch.optim, kind)(_model(torch).parameters(), **options)
        assert repr(ours) == repr(theirs)


def test_param_groups_with_their_own_settings(torch):
    ours, theirs = _twins(torch)
    optimizers = []
    for T, model in ((nbgrad, ours), (torch, theirs)):
        groups = [
            {"params": model[0].parameters()},
            {"params": model[2].parameters(), "lr": 0.5, "momentum": 0.0},
        ]
        optimizers.append(T.optim.SGD(groups, lr=0.05, momentum=0.9))
    for step in range(3):
        for T, model, opt in zip((nbgrad, torch), (ours, theirs), optimizers):
            opt.zero_grad()
            _loss(T, model, step, "float64").backward()
            opt.step()
    for mine, real in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-10)
    assert optimizers[0].state_dict()["param_groups"] == optimizers[1].state_dict()["param_groups"]
    assert [g["lr"] for g in optimizers[0].param_groups] == [0.05, 0.5]


def test_add_param_group_and_duplicates():
    model = _model(nbgrad)
    opt = nbgrad.optim.Adam(model[0].parameters(), lr=0.1)
    opt.add_param_group({"params": model[2].parameters(), "lr": 0.01})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [model[0].weight]})


def test_zero_grad_defaults_to_none():
    model = _model(nbgrad)
    opt = nbgrad.optim.SGD(model.parameters(), lr=0.1)
    _loss(nbgrad, model, 0, "float32").backward()
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    _loss(nbgrad, model, 0, "float32").backward()
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad._data.any() for p in model.parameters())


def test_gradients_accumulate_without_zero_grad():
    """The tutorials' lesson: backward adds into .grad until something clears it."""
    model = _model(nbgrad)
    _loss(nbgrad, model, 0, "float32").backward()
    once = model[0].weight.grad._data.copy()
    _loss(nbgrad, model, 0, "float32").backward()
    np.testing.assert_allclose(model[0].weight.grad._data, 2 * once, rtol=1e-6)


def test_parameters_without_grad_are_skipped():
    model = _model(nbgrad)
    opt = nbgrad.optim.Adam(model.parameters(), lr=0.1)
    before = model[2].bias._data.copy()
    model[0](nbgrad.randn(2, 4)).sum().backward()  # only the first layer gets grads
    opt.step()
    np.testing.assert_array_equal(model[2].bias._data, before)
    assert model[2].bias not in opt.state and model[0].weight in opt.state


def test_state_dict_round_trip_continues_identically():
    first, second = _model(nbgrad), _model(nbgrad)
    opt_first = nbgrad.optim.Adam(first.parameters(), lr=0.05)
    for step in range(2):
        opt_first.zero_grad()
        _loss(nbgrad, first, step, "float32").backward()
        opt_first.step()
    second.load_state_dict(first.state_dict())
    opt_second = nbgrad.optim.Adam(second.parameters(), lr=0.05)
    opt_second.load_state_dict(opt_first.state_dict())
    for model, opt in ((first, opt_first), (second, opt_second)):
        opt.zero_grad()
        _loss(nbgrad, model, 2, "float32").backward()
        opt.step()
    for mine, theirs in zip(first.parameters(), second.parameters()):
        np.testing.assert_array_equal(mine._data, theirs._data)
    assert opt_second.state_dict()["state"][0]["step"].item() == 3.0


def test_step_changes_parameter_version():
    """An optimizer step is an in-place change: a graph that saved the parameter sees it."""
    layer = nbgrad.nn.Linear(2, 2)
    opt = nbgrad.optim.SGD(layer.parameters(), lr=0.1)
    x = nbgrad.randn(3, 2, requires_grad=True)
    out = (layer(x) ** 2).sum()
    out.backward(retain_graph=True)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_closure_is_called_with_grad_enabled():
    model = _model(nbgrad)
    opt = nbgrad.optim.SGD(model.parameters(), lr=0.1)

    def closure():
        opt.zero_grad()
        loss = _loss(nbgrad, model, 0, "float32")
        loss.backward()
        return loss

    with nbgrad.no_grad():
        loss = opt.step(closure)
    assert loss.grad_fn is not None
