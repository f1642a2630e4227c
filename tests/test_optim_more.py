"""RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop step as torch.optim's do:
same model, same data, same parameters after each of 20 steps, same state_dict, and every
optimizer's parameters and state tensors at the same versions."""

import numpy as np
import pytest
from graph_compare import to_numpy
from test_optim import _loss, _model, _twins

import nbgrad

CONFIGS = {
    "rmsprop": ("RMSprop", {}),
    "rmsprop momentum centered": (
        "RMSprop",
        {"lr": 0.005, "momentum": 0.9, "centered": True, "weight_decay": 0.01},
    ),
    "rmsprop alpha maximize": ("RMSprop", {"alpha": 0.9, "eps": 1e-6, "maximize": True}),
    "adagrad": ("Adagrad", {}),
    "adagrad decay initial": (
        "Adagrad",
        {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.5},
    ),
    "adadelta": ("Adadelta", {}),
    "adadelta rho decay": ("Adadelta", {"lr": 0.5, "rho": 0.5, "weight_decay": 0.1}),
    "adamax": ("Adamax", {}),
    "adamax decay maximize": ("Adamax", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    "nadam": ("NAdam", {}),
    "nadam decay": ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}),
    "nadam decoupled": ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    "radam": ("RAdam", {}),
    "radam decay": ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1}),
    "radam decoupled": ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    "asgd": ("ASGD", {}),
    # averaging from step 5 on: ax becomes a running mean instead of a copy
    "asgd averaging decay": (
        "ASGD",
        {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.1, "maximize": True},
    ),
    "rprop": ("Rprop", {}),
    "rprop etas sizes": ("Rprop", {"lr": 0.05, "etas": (0.3, 1.7), "step_sizes": (1e-3, 0.2)}),
}

TOLERANCE = {"float64": {"rtol": 1e-10, "atol": 1e-12}, "float32": {"rtol": 1e-5, "atol": 1e-6}}


def _assert_same_state(mine, real, torch, dtype_name="float64"):
    """Same groups, keys, dtypes and values (float32 buffers to float32 rounding over 20 steps,
    where a momentum buffer sums differences of nearly equal numbers)."""
    assert mine["param_groups"] == real["param_groups"]
    assert list(mine["state"]) == list(real["state"])
    tolerance = {"rtol": 1e-3, "atol": 1e-5} if dtype_name == "float32" else {"rtol": 1e-9}
    for index, values in real["state"].items():
        assert list(mine["state"][index]) == list(values)
        for key, value in values.items():
            assert mine["state"][index][key].dtype.name == str(value.dtype).split(".")[1], key
            np.testing.assert_allclose(
                to_numpy(mine["state"][index][key]), to_numpy(value), err_msg=key, **tolerance
            )


def _assert_same_parameters(ours, theirs, dtype_name, step):
    for (name, mine), (_, real) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(
            to_numpy(mine), to_numpy(real), err_msg=f"step {step}: {name}", **TOLERANCE[dtype_name]
        )


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("name", CONFIGS)
def test_steps_match_torch_optim(torch, name, dtype_name):
    kind, options = CONFIGS[name]
    ours, theirs = _twins(torch, dtype_name)
    ours_opt = getattr(nbgrad.optim, kind)(ours.parameters(), **options)
    theirs_opt = getattr(torch.optim, kind)(theirs.parameters(), **options)
    assert ours_opt.defaults == theirs_opt.defaults
    for step in range(20):
        for T, model, opt in ((nbgrad, ours, ours_opt), (torch, theirs, theirs_opt)):
            opt.zero_grad()
            _loss(T, model, step, dtype_name).backward()
            opt.step()
        _assert_same_parameters(ours, theirs, dtype_name, step)
    _assert_same_state(ours_opt.state_dict(), theirs_opt.state_dict(), torch, dtype_name)
    assert repr(ours_opt) == repr(theirs_opt)


@pytest.mark.parametrize("name", ["rmsprop momentum centered", "nadam", "adagrad"])
def test_state_dict_round_trip_continues_identically(name):
    kind, options = CONFIGS[name]
    models = [_model(nbgrad).double() for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    first = getattr(nbgrad.optim, kind)(models[0].parameters(), **options)
    for step in range(3):
        first.zero_grad()
        _loss(nbgrad, models[0], step, "float64").backward()
        first.step()
    models[1].load_state_dict(models[0].state_dict())
    second = getattr(nbgrad.optim, kind)(models[1].parameters(), **options)
    second.load_state_dict(first.state_dict())
    for step in range(3, 6):
        for model, opt in zip(models, (first, second)):
            opt.zero_grad()
            _loss(nbgrad, model, step, "float64").backward()
            opt.step()
    for a, b in zip(*(m.parameters() for m in models)):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_param_groups_with_their_own_settings(torch):
    ours, theirs = _twins(torch)
    optimizers = []
    for T, model in ((nbgrad, ours), (torch, theirs)):
        groups = [
            {"params": model[0].parameters()},
            {"params": model[2].parameters(), "lr": 0.05, "momentum": 0.5},
        ]
        optimizers.append(T.optim.RMSprop(groups, lr=0.01))
    for step in range(5):
        for T, model, opt in zip((nbgrad, torch), (ours, theirs), optimizers):
            opt.zero_grad()
            _loss(T, model, step, "float64").backward()
            opt.step()
    _assert_same_parameters(ours, theirs, "float64", 5)
    _assert_same_state(optimizers[0].state_dict(), optimizers[1].state_dict(), torch)


BAD_ARGUMENTS = [
    ("RMSprop", {"lr": -1}),
    ("RMSprop", {"eps": -1}),
    ("RMSprop", {"momentum": -1}),
    ("RMSprop", {"weight_decay": -1}),
    ("RMSprop", {"alpha": -1}),
    ("Adagrad", {"lr_decay": -1}),
    ("Adagrad", {"initial_accumulator_value": -1}),
    ("Adagrad", {"eps": -1}),
    ("Adadelta", {"rho": 1.5}),
    ("Adadelta", {"weight_decay": -0.5}),
    ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"betas": (0.9, -0.1)}),
    ("NAdam", {"momentum_decay": -1}),
    ("NAdam", {"eps": -1}),
    ("RAdam", {"betas": (0.9, 1.0)}),
    ("RAdam", {"lr": -0.1}),
    ("ASGD", {"lr": -0.1}),
    ("ASGD", {"weight_decay": -1}),
    ("Rprop", {"etas": (1.5, 2.0)}),
    ("Rprop", {"etas": (0.5, 0.9)}),
    ("Rprop", {"lr": -1}),
]


@pytest.mark.parametrize(("kind", "options"), BAD_ARGUMENTS)
def test_bad_arguments_raise_pytorchs_errors(torch, kind, options):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, kind)(_model(torch).parameters(), **options)
    with pytest.raises(ValueError) as ours:
        getattr(nbgrad.optim, kind)(_model(nbgrad).parameters(), **options)
    assert str(ours.value) == str(theirs.value)


def test_adagrad_fills_its_state_at_construction(torch):
    ours = nbgrad.optim.Adagrad(_model(nbgrad).parameters(), initial_accumulator_value=0.1)
    theirs = torch.optim.Adagrad(_model(torch).parameters(), initial_accumulator_value=0.1)
    _assert_same_state(ours.state_dict(), theirs.state_dict(), torch)


VERSION_CONFIGS = [
    ("SGD", {}),
    ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("SGD", {"momentum": 0.9, "dampening": 0.1, "weight_decay": 0.1}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {}),
    ("AdamW", {"amsgrad": True}),
    *CONFIGS.values(),
]


@pytest.mark.parametrize(("kind", "options"), VERSION_CONFIGS)
def test_versions_after_each_step_as_pytorchs(torch, kind, options):
    """Each step writes the parameter and every state tensor in place as many times as
    PyTorch's single-tensor step does (a version shows in PyTorch's "modified by an inplace
    operation ... is at version N" error)."""

    def versions(T):
        model = _model(T).double()
        optimizer = getattr(T.optim, kind)(model.parameters(), **options)
        seen = []
        for step in range(3):
            optimizer.zero_grad()
            _loss(T, model, step, "float64").backward()
            optimizer.step()
            for param in model.parameters():
                state = optimizer.state[param]
                seen.append(
                    (
                        param._version,
                        sorted((k, v._version) for k, v in state.items() if hasattr(v, "_version")),
                    )
                )
        return seen

    assert versions(nbgrad) == versions(torch)
