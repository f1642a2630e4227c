"""nbgrad.optim.lr_scheduler against PyTorch's: the same learning rates step for step (alone and
chained on one optimizer), the same state_dict, errors and warnings."""

import math
import warnings

import pytest

import nbgrad

GROUP_LRS = (0.1, 0.03)


def _optimizer(lib, optimizer="SGD"):
    """Two parameter groups with different rates, so per-group bookkeeping shows."""
    first, second = lib.zeros(3, requires_grad=True), lib.zeros(2, requires_grad=True)
    groups = [{"params": [first], "lr": GROUP_LRS[0]}, {"params": [second], "lr": GROUP_LRS[1]}]
    return getattr(lib.optim, optimizer)(groups, lr=0.5)


def _lr_history(lib, make_schedulers, steps=40, metrics=None, optimizer="SGD"):
    """Each group's lr and each scheduler's get_last_lr() after construction and every step."""
    opt = _optimizer(lib, optimizer)
    schedulers = make_schedulers(lib.optim.lr_scheduler, opt)

    def snapshot():
        return [g["lr"] for g in opt.param_groups] + [
            lr for s in schedulers for lr in s.get_last_lr()
        ]

    history = [snapshot()]
    for step in range(steps):
        opt.step()
        for scheduler in schedulers:
            if metrics is None:
                scheduler.step()
            else:
                scheduler.step(metrics[step])
        history.append(snapshot())
    return history


def _assert_same_history(ours, theirs):
    assert len(ours) == len(theirs)
    for step, (mine, torchs) in enumerate(zip(ours, theirs)):
        assert mine == pytest.approx(torchs, rel=1e-12, abs=1e-15), f"step {step}"


class _Halving:
    """A callable object as lr_lambda: its attributes go into the state_dict."""

    def __init__(self, every):
        self.every = every

    def __call__(self, epoch):
        return 0.5 ** (epoch // self.every)


SCHEDULES = {
    "StepLR(7, 0.5)": lambda m, o: [m.StepLR(o, step_size=7, gamma=0.5)],
    "StepLR(1)": lambda m, o: [m.StepLR(o, step_size=1)],
    "StepLR(3, 0.9)": lambda m, o: [m.StepLR(o, 3, 0.9)],
    "MultiStepLR": lambda m, o: [m.MultiStepLR(o, milestones=[3, 10, 25], gamma=0.3)],
    "MultiStepLR repeated": lambda m, o: [m.MultiStepLR(o, [10, 5, 10, 30])],
    "ExponentialLR(0.9)": lambda m, o: [m.ExponentialLR(o, gamma=0.9)],
    "ExponentialLR(1.05)": lambda m, o: [m.ExponentialLR(o, 1.05)],
    "LambdaLR": lambda m, o: [m.LambdaLR(o, lr_lambda=lambda e: 1 / (1 + 0.3 * e))],
    "LambdaLR per group": lambda m, o: [m.LambdaLR(o, [lambda e: 0.95**e, _Halving(6)])],
    "MultiplicativeLR": lambda m, o: [m.MultiplicativeLR(o, lr_lambda=lambda e: 0.97)],
    "MultiplicativeLR by epoch": lambda m, o: [m.MultiplicativeLR(o, lambda e: 1 - 0.01 * e)],
    "CosineAnnealingLR(10)": lambda m, o: [m.CosineAnnealingLR(o, T_max=10)],
    "CosineAnnealingLR(7, eta_min)": lambda m, o: [m.CosineAnnealingLR(o, 7, eta_min=0.005)],
    "CosineAnnealingLR(40)": lambda m, o: [m.CosineAnnealingLR(o, 40, 1e-4)],
    "LinearLR default": lambda m, o: [m.LinearLR(o)],
    "LinearLR down": lambda m, o: [m.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=20)],
    "LinearLR to zero": lambda m, o: [m.LinearLR(o, 0.5, 0.0, 10)],
    "warm-up then cosine": lambda m, o: [m.LinearLR(o, 0.1, 1.0, 5), m.CosineAnnealingLR(o, 30)],
    "three chained": lambda m, o: [
        m.ExponentialLR(o, 0.98),
        m.MultiStepLR(o, [8, 16]),
        m.MultiplicativeLR(o, lambda e: 1.01),
    ],
    "step and cosine": lambda m, o: [m.StepLR(o, 4, 0.8), m.CosineAnnealingLR(o, 12, 0.001)],
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_learning_rates_equal_pytorchs(torch, name):
    make = SCHEDULES[name]
    _assert_same_history(_lr_history(nbgrad, make), _lr_history(torch, make))


@pytest.mark.parametrize("optimizer", ["Adam", "AdamW"])
def test_other_optimizers_are_scheduled_alike(torch, optimizer):
    make = SCHEDULES["warm-up then cosine"]
    ours = _lr_history(nbgrad, make, 30, optimizer=optimizer)
    _assert_same_history(ours, _lr_history(torch, make, 30, optimizer=optimizer))


def test_a_schedule_actually_changes_the_rate():
    history = _lr_history(nbgrad, SCHEDULES["StepLR(7, 0.5)"], steps=14)
    assert history[6][:2] == list(GROUP_LRS)
    assert history[7][:2] == pytest.approx([0.05, 0.015])
    assert history[14][:2] == pytest.approx([0.025, 0.0075])


def test_initial_lr_and_base_lrs_are_written_as_pytorchs(torch):
    for lib in (nbgrad, torch):
        opt = _optimizer(lib)
        scheduler = lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.5)
        assert [g["initial_lr"] for g in opt.param_groups] == list(GROUP_LRS)
        assert scheduler.base_lrs == list(GROUP_LRS)
        assert scheduler.last_epoch == 0
        assert scheduler.get_last_lr() == pytest.approx([0.05, 0.015])


def test_alias_and_module_access():
    assert nbgrad.optim.lr_scheduler.StepLR.__module__ == "nbgrad.optim.lr_scheduler"
    assert issubclass(nbgrad.optim.lr_scheduler._LRScheduler, nbgrad.optim.lr_scheduler.LRScheduler)
    assert issubclass(
        nbgrad.optim.lr_scheduler.ReduceLROnPlateau, nbgrad.optim.lr_scheduler.LRScheduler
    )


# --- ReduceLROnPlateau -------------------------------------------------------------------------

FALLING_THEN_FLAT = [1.0 / (1 + i) for i in range(10)] + [0.1] * 15 + [0.0999] * 5 + [0.2] * 10
NOISY = [math.sin(i) * 0.1 + 1 - 0.01 * i for i in range(40)]
RISING = [min(i, 12) * 0.5 + (i % 3) * 0.01 for i in range(40)]

PLATEAUS = {
    "defaults": ({}, FALLING_THEN_FLAT),
    "patience 2": ({"patience": 2}, FALLING_THEN_FLAT),
    "abs threshold, cooldown": (
        {"patience": 1, "threshold": 0.05, "threshold_mode": "abs", "cooldown": 3},
        NOISY,
    ),
    "max mode": ({"mode": "max", "patience": 2, "factor": 0.5}, RISING),
    "max abs, min_lr": (
        {"mode": "max", "threshold_mode": "abs", "threshold": 0.2, "patience": 0, "min_lr": 0.01},
        RISING,
    ),
    "min_lr per group": ({"patience": 0, "factor": 0.5, "min_lr": [0.02, 0.001]}, NOISY),
    "eps stops tiny changes": ({"patience": 0, "factor": 0.9, "eps": 0.005}, RISING),
}


@pytest.mark.parametrize("name", PLATEAUS)
def test_reduce_on_plateau_equals_pytorch(torch, name):
    settings, metrics = PLATEAUS[name]

    def make(m, o):
        return [m.ReduceLROnPlateau(o, **settings)]

    ours = _lr_history(nbgrad, make, metrics=metrics)
    _assert_same_history(ours, _lr_history(torch, make, metrics=metrics))
    assert ours[-1] != ours[0], "the setting should reduce the rate at least once"


def test_reduce_on_plateau_reads_a_tensor_metric_and_counts(torch):
    counters = []
    for lib in (nbgrad, torch):
        opt = _optimizer(lib)
        scheduler = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1, cooldown=2)
        for value in [3.0, 2.0, 2.5, 2.5, 2.5, 2.5, 1.0]:
            scheduler.step(lib.tensor(value))
            counters.append(
                (scheduler.best, scheduler.num_bad_epochs, scheduler.cooldown_counter)
                + (scheduler.last_epoch, scheduler.in_cooldown, tuple(scheduler.get_last_lr()))
            )
    assert counters[:7] == counters[7:]


# --- state ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["StepLR(3, 0.9)", "MultiStepLR", "LambdaLR per group", "CosineAnnealingLR(7, eta_min)"]
)
def test_state_dict_round_trip_resumes_the_schedule(name):
    make = SCHEDULES[name]
    uninterrupted = _lr_history(nbgrad, make, steps=25)

    opt = _optimizer(nbgrad)
    (scheduler,) = make(nbgrad.optim.lr_scheduler, opt)
    for _ in range(10):
        opt.step()
        scheduler.step()
    saved_optimizer, saved_scheduler = opt.state_dict(), scheduler.state_dict()

    resumed_opt = _optimizer(nbgrad)
    (resumed,) = make(nbgrad.optim.lr_scheduler, resumed_opt)
    resumed_opt.load_state_dict(saved_optimizer)
    resumed.load_state_dict(saved_scheduler)
    assert resumed.last_epoch == 10
    for step in range(10, 25):
        resumed_opt.step()
        resumed.step()
        lrs = [g["lr"] for g in resumed_opt.param_groups]
        assert lrs == pytest.approx(uninterrupted[step + 1][:2], rel=1e-12)


def test_state_dict_has_pytorchs_keys(torch):
    def keys(lib, make):
        (scheduler,) = make(lib.optim.lr_scheduler, _optimizer(lib))
        return sorted(scheduler.state_dict())

    for name in ["StepLR(7, 0.5)", "LambdaLR", "CosineAnnealingLR(10)", "LinearLR default"]:
        assert keys(nbgrad, SCHEDULES[name]) == keys(torch, SCHEDULES[name])

    def plateau(m, o):
        return [m.ReduceLROnPlateau(o)]

    assert keys(nbgrad, plateau) == keys(torch, plateau)


def test_lambda_state_dict_saves_callable_objects_not_functions():
    opt = _optimizer(nbgrad)
    halving = _Halving(6)
    scheduler = nbgrad.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0, halving])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [None, {"every": 6}]
    state["lr_lambdas"] = [None, {"every": 2}]
    scheduler.load_state_dict(state)
    assert halving.every == 2
    assert "lr_lambdas" in state  # the caller's dict is left whole


def test_reduce_on_plateau_state_dict_round_trip():
    opt = _optimizer(nbgrad)
    scheduler = nbgrad.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", patience=0)
    for value in [1.0, 2.0, 1.5]:
        scheduler.step(value)
    state = scheduler.state_dict()
    fresh = nbgrad.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(nbgrad))
    fresh.load_state_dict(state)
    assert (fresh.mode, fresh.best, fresh.last_epoch) == ("max", 2.0, 3)
    assert fresh.mode_worse == -math.inf
    assert fresh.get_last_lr() == pytest.approx([0.01, 0.003])


def test_resuming_with_last_epoch_needs_initial_lr(torch):
    messages = []
    for lib in (nbgrad, torch):
        with pytest.raises(KeyError) as error:
            lib.optim.lr_scheduler.StepLR(_optimizer(lib), 3, last_epoch=4)
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    assert "param 'initial_lr' is not specified in param_groups[0]" in messages[0]


def test_resuming_with_last_epoch_continues_the_schedule(torch):
    def make(m, o):
        for group in o.param_groups:
            group["initial_lr"] = group["lr"] * 2
        return [m.StepLR(o, 3, 0.5, last_epoch=5), m.ExponentialLR(o, 0.9, last_epoch=5)]

    _assert_same_history(_lr_history(nbgrad, make, 20), _lr_history(torch, make, 20))


def test_step_with_epoch_uses_the_closed_form_and_warns(torch):
    rates = []
    for lib in (nbgrad, torch):
        for make in (
            lambda m, o: m.StepLR(o, 3, 0.5),
            lambda m, o: m.MultiStepLR(o, [2, 5]),
            lambda m, o: m.ExponentialLR(o, 0.9),
            lambda m, o: m.CosineAnnealingLR(o, 10, 0.01),
            lambda m, o: m.LinearLR(o, 0.25, 1.0, 8),
            lambda m, o: m.LambdaLR(o, lambda e: 1 / (e + 1)),
        ):
            opt = _optimizer(lib)
            scheduler = make(lib.optim.lr_scheduler, opt)
            opt.step()
            with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step"):
                scheduler.step(6)
            rates.append(scheduler.get_last_lr())
    half = len(rates) // 2
    for mine, torchs in zip(rates[:half], rates[half:]):
        assert mine == pytest.approx(torchs, rel=1e-12)


# --- warnings and errors -----------------------------------------------------------------------


def test_stepping_the_scheduler_before_the_optimizer_warns_as_pytorch(torch):
    messages = []
    for lib in (nbgrad, torch):
        scheduler = lib.optim.lr_scheduler.StepLR(_optimizer(lib), 2)
        with pytest.warns(UserWarning) as caught:
            scheduler.step()
        messages.append(str(caught[0].message))
    assert messages[0] == messages[1]
    assert messages[0].startswith("Detected call of `lr_scheduler.step()` before")


def test_the_right_order_does_not_warn():
    opt = _optimizer(nbgrad)
    scheduler = nbgrad.optim.lr_scheduler.StepLR(opt, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.step()
            scheduler.step()


def test_get_lr_outside_step_warns(torch):
    for lib in (nbgrad, torch):
        scheduler = lib.optim.lr_scheduler.ExponentialLR(_optimizer(lib), 0.5)
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            scheduler.get_lr()


BAD_ARGUMENTS = [
    lambda m, o: m.StepLR("not an optimizer", 3),
    lambda m, o: m.ReduceLROnPlateau("not an optimizer"),
    lambda m, o: m.LambdaLR(o, [lambda e: 1.0]),
    lambda m, o: m.MultiplicativeLR(o, [lambda e: 1.0]),
    lambda m, o: m.MultiplicativeLR(o, 0.9),
    lambda m, o: m.MultiplicativeLR(o, [lambda e: 1.0, 0.9]),
    lambda m, o: m.MultiplicativeLR(o, [0.9]),
    lambda m, o: m.LinearLR(o, start_factor=0),
    lambda m, o: m.LinearLR(o, start_factor=1.5),
    lambda m, o: m.LinearLR(o, end_factor=-0.1),
    lambda m, o: m.ReduceLROnPlateau(o, factor=1.0),
    lambda m, o: m.ReduceLROnPlateau(o, mode="up"),
    lambda m, o: m.ReduceLROnPlateau(o, threshold_mode="relative"),
    lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1]),
]


@pytest.mark.parametrize("make", BAD_ARGUMENTS)
def test_bad_arguments_raise_pytorchs_errors(torch, make):
    raised = []
    for lib in (nbgrad, torch):
        with pytest.raises(Exception) as error:
            make(lib.optim.lr_scheduler, _optimizer(lib))
        raised.append((type(error.value), str(error.value)))
    assert raised[0] == raised[1]


def test_an_optimizer_with_a_scheduler_still_pickles_and_copies_on_its_own():
    import copy
    import pickle

    param = nbgrad.nn.Parameter(nbgrad.ones(2))
    optimizer = nbgrad.optim.SGD([param], lr=0.1)
    nbgrad.optim.lr_scheduler.StepLR(optimizer, step_size=1)
    restored = pickle.loads(pickle.dumps(optimizer))
    assert restored.param_groups[0]["lr"] == 0.1
    twin = copy.deepcopy(optimizer)
    twin.param_groups[0]["params"][0].grad = nbgrad.ones(2)
    param.grad = nbgrad.ones(2) * 100
    twin.step()  # moves the copy's parameter, not the original's
    assert param.tolist() == [1.0, 1.0]
    assert twin.param_groups[0]["params"][0].tolist() == pytest.approx([0.9, 0.9])
