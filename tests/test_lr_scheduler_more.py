"""ConstantLR, PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR, SequentialLR and
ChainedScheduler against PyTorch's: the same rates (and cycled momentums) step for step."""

import pytest
from test_lr_scheduler import _assert_same_history, _lr_history, _optimizer

import nbgrad

SCHEDULES = {
    "ConstantLR default": lambda m, o: [m.ConstantLR(o)],
    "ConstantLR(0.5, 8)": lambda m, o: [m.ConstantLR(o, factor=0.5, total_iters=8)],
    "PolynomialLR default": lambda m, o: [m.PolynomialLR(o)],
    "PolynomialLR(30, 2)": lambda m, o: [m.PolynomialLR(o, total_iters=30, power=2.0)],
    "PolynomialLR(10, 0.5)": lambda m, o: [m.PolynomialLR(o, 10, 0.5)],
    "warm restarts": lambda m, o: [m.CosineAnnealingWarmRestarts(o, T_0=7)],
    "warm restarts doubling": lambda m, o: [m.CosineAnnealingWarmRestarts(o, 3, T_mult=2)],
    "warm restarts eta_min": lambda m, o: [m.CosineAnnealingWarmRestarts(o, 5, 3, eta_min=0.01)],
    "CyclicLR triangular": lambda m, o: [m.CyclicLR(o, 0.01, 0.1, step_size_up=4)],
    "CyclicLR triangular2": lambda m, o: [
        m.CyclicLR(o, [0.01, 0.001], [0.1, 0.05], 3, 5, mode="triangular2")
    ],
    "CyclicLR exp_range": lambda m, o: [m.CyclicLR(o, 0.01, 0.1, 5, mode="exp_range", gamma=0.97)],
    "CyclicLR scale_fn": lambda m, o: [
        m.CyclicLR(o, 0.01, 0.1, 4, scale_fn=lambda x: 0.9**x, scale_mode="iterations")
    ],
    "CyclicLR no momentum": lambda m, o: [m.CyclicLR(o, 0.01, 0.1, 6, cycle_momentum=False)],
    "OneCycleLR": lambda m, o: [m.OneCycleLR(o, max_lr=0.1, total_steps=41)],
    "OneCycleLR linear three phase": lambda m, o: [
        m.OneCycleLR(
            o,
            [0.1, 0.2],
            epochs=5,
            steps_per_epoch=9,
            anneal_strategy="linear",
            three_phase=True,
            pct_start=0.25,
        )
    ],  # fmt: skip
    "OneCycleLR no momentum": lambda m, o: [
        m.OneCycleLR(o, 1.0, 50, cycle_momentum=False, div_factor=10.0, final_div_factor=100.0)
    ],
    "SequentialLR warm-up then cosine": lambda m, o: [
        m.SequentialLR(
            o, [m.LinearLR(o, 0.1, 1.0, 5), m.CosineAnnealingLR(o, T_max=30)], milestones=[5]
        )
    ],
    "SequentialLR three": lambda m, o: [
        m.SequentialLR(
            o,
            [m.ConstantLR(o, 0.5, 3), m.ExponentialLR(o, 0.9), m.StepLR(o, 4, 0.5)],
            milestones=[6, 15],
        )
    ],
    "ChainedScheduler": lambda m, o: [
        m.ChainedScheduler([m.ConstantLR(o, 0.1, 4), m.ExponentialLR(o, 0.9)])
    ],
    "ChainedScheduler with optimizer": lambda m, o: [
        m.ChainedScheduler([m.PolynomialLR(o, 20, 2.0), m.StepLR(o, 5, 0.5)], optimizer=o)
    ],
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_learning_rates_equal_pytorchs(torch, name):
    make = SCHEDULES[name]
    _assert_same_history(_lr_history(nbgrad, make), _lr_history(torch, make))


def _momentum_history(lib, make, optimizer, steps=40):
    opt = _optimizer(lib, optimizer)
    [scheduler] = make(lib.optim.lr_scheduler, opt)

    def snapshot():
        if optimizer == "Adam":
            return [beta for g in opt.param_groups for beta in g["betas"]]
        return [g["momentum"] for g in opt.param_groups]

    history = [snapshot()]
    for _ in range(steps):
        opt.step()
        scheduler.step()
        history.append(snapshot())
    return history, [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize(
    "name",
    ["CyclicLR triangular", "CyclicLR triangular2", "OneCycleLR", "OneCycleLR linear three phase"],
)
def test_cycled_momentum_equals_pytorchs(torch, name, optimizer):
    make = SCHEDULES[name]
    ours, our_groups = _momentum_history(nbgrad, make, optimizer)
    theirs, their_groups = _momentum_history(torch, make, optimizer)
    for mine, real in zip(ours, theirs, strict=True):
        assert mine == pytest.approx(real, rel=1e-12)
    assert [sorted(g) for g in our_groups] == [sorted(g) for g in their_groups]


def test_rates_equal_with_adam_and_other_optimizers(torch):
    for name in ("CyclicLR exp_range", "OneCycleLR", "SequentialLR three"):
        make = SCHEDULES[name]
        for optimizer in ("Adam", "RMSprop", "NAdam"):
            _assert_same_history(
                _lr_history(nbgrad, make, optimizer=optimizer),
                _lr_history(torch, make, optimizer=optimizer),
            )


BAD = {
    "ConstantLR factor": lambda m, o: m.ConstantLR(o, factor=1.5),
    "warm restarts T_0": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0),
    "warm restarts T_mult": lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, T_mult=0),
    "warm restarts eta_min": lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, eta_min="a"),
    "CyclicLR mode": lambda m, o: m.CyclicLR(o, 0.01, 0.1, mode="sine"),
    "CyclicLR lists": lambda m, o: m.CyclicLR(o, [0.01], 0.1),
    "OneCycleLR no length": lambda m, o: m.OneCycleLR(o, 0.1),
    "OneCycleLR total_steps": lambda m, o: m.OneCycleLR(o, 0.1, total_steps=0),
    "OneCycleLR epochs": lambda m, o: m.OneCycleLR(o, 0.1, epochs=-1, steps_per_epoch=3),
    "OneCycleLR pct_start": lambda m, o: m.OneCycleLR(o, 0.1, 10, pct_start=1.5),
    "OneCycleLR anneal": lambda m, o: m.OneCycleLR(o, 0.1, 10, anneal_strategy="exp"),
    "SequentialLR empty": lambda m, o: m.SequentialLR(o, [], []),
    "SequentialLR milestones": lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], [3]),
    "SequentialLR plateau": lambda m, o: m.SequentialLR(
        o, [m.StepLR(o, 2), m.ReduceLROnPlateau(o)], [3]
    ),
    "ChainedScheduler empty": lambda m, o: m.ChainedScheduler([]),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_arguments_raise_pytorchs_errors(torch, name):
    with pytest.raises(Exception) as theirs:
        BAD[name](torch.optim.lr_scheduler, _optimizer(torch))
    with pytest.raises(Exception) as ours:
        BAD[name](nbgrad.optim.lr_scheduler, _optimizer(nbgrad))
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_one_cycle_refuses_steps_past_the_end(torch):
    for lib in (nbgrad, torch):
        opt = _optimizer(lib)
        scheduler = lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=3)
        for _ in range(3):
            opt.step()
            scheduler.step()
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            scheduler.step()


@pytest.mark.parametrize("name", ["SequentialLR three", "CyclicLR triangular2", "OneCycleLR"])
def test_state_dict_round_trip_resumes(name):
    make = SCHEDULES[name]
    opt = _optimizer(nbgrad)
    [first] = make(nbgrad.optim.lr_scheduler, opt)
    for _ in range(9):
        opt.step()
        first.step()
    saved_groups = [dict(g) for g in opt.param_groups]
    state = first.state_dict()
    second_opt = _optimizer(nbgrad)
    [second] = make(nbgrad.optim.lr_scheduler, second_opt)
    second.load_state_dict(state)
    for group, saved in zip(second_opt.param_groups, saved_groups):
        group.update({k: v for k, v in saved.items() if k != "params"})
    for _ in range(10):
        for o, s in ((opt, first), (second_opt, second)):
            o.step()
            s.step()
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in second_opt.param_groups]


def test_warm_restarts_fractional_epochs(torch):
    histories = []
    for lib in (nbgrad, torch):
        opt = _optimizer(lib)
        scheduler = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 4, T_mult=2)
        history = []
        for i in range(30):
            opt.step()
            scheduler.step(i / 3)
            history.append(scheduler.get_last_lr())
        histories.append(history)
    _assert_same_history(*histories)
