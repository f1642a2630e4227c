"""torch.utils.benchmark's Timer and Measurement: the same measuring loops and printout as
PyTorch's, checked with a clock that advances by fixed steps (so both libraries measure the
same times when they read the clock at the same moments)."""

import importlib
import re

import pytest

import nbgrad
from nbgrad.utils.benchmark import Measurement, Timer


class SteppingClock:
    """A clock whose reading advances by the next of ``steps`` (seconds) at each call, after
    ``quiet`` calls that advance it by a tenth of a microsecond: the autoranges first time an
    empty loop five times (the timer's own cost, 10 calls), and then pick the first block size
    whose time dwarfs it; with these steps that is one run, whatever work a run does."""

    def __init__(self, steps, quiet=10):
        self.steps, self.quiet, self.calls, self.now = steps, quiet, 0, 0.0

    def __call__(self):
        if self.calls < self.quiet:
            self.now += 1e-7
        else:
            self.now += self.steps[(self.calls - self.quiet) % len(self.steps)]
        self.calls += 1
        return self.now


STEPS = [0.5, 0.7, 0.4, 0.6, 0.55, 0.9, 0.45]

CASES = {
    "timeit": lambda timer: timer.timeit(100),
    "timeit once": lambda timer: timer.timeit(1),
    "blocked_autorange": lambda timer: timer.blocked_autorange(min_run_time=3),
    "blocked_autorange, default": lambda timer: timer.blocked_autorange(),
    "adaptive_autorange": lambda timer: timer.adaptive_autorange(threshold=0.3, min_run_time=2),
    "adaptive_autorange, capped": lambda timer: timer.adaptive_autorange(max_run_time=4),
}

TIMERS = {
    "a statement": {"stmt": "x * 2"},
    "labelled, with setup": {
        "stmt": "x * 2",
        "setup": "y = 1",
        "label": "Broadcasting",
        "sub_label": "small",
        "description": "a vector",
    },
    "indented block": {"stmt": "\n    y = x * 2\n    y = y + 1\n    ", "sub_label": "two lines"},
    "multi-line setup": {"stmt": "x + y", "setup": "y = 1\nz = 2"},
}


def _benchmark(lib):
    return importlib.import_module(f"{lib.__name__}.utils.benchmark")  # not imported with torch


def printed(lib, timer_arguments, measure):
    clock = SteppingClock(STEPS)
    timer = _benchmark(lib).Timer(timer=clock, globals={"x": lib.ones(3)}, **timer_arguments)
    measurement = measure(timer)
    text = re.sub(r"object at 0x[0-9a-f]+", "object at ADDRESS", repr(measurement))
    numbers = (
        measurement.number_per_run,
        measurement.raw_times,
        measurement.times,
        measurement.median,
        measurement.mean,
        measurement.iqr,
        measurement.has_warnings,
        measurement.title,
        measurement.as_row_name,
        measurement.env,
    )
    return text, numbers, clock.calls


@pytest.mark.parametrize("measure", list(CASES))
@pytest.mark.parametrize("timer", list(TIMERS))
def test_same_measurement_as_pytorch(torch, timer, measure):
    ours = printed(nbgrad, TIMERS[timer], CASES[measure])
    theirs = printed(torch, TIMERS[timer], CASES[measure])
    assert ours[0] == theirs[0]
    assert ours[2] == theirs[2]  # the clock read as often
    for mine, real in zip(ours[1], theirs[1], strict=True):
        assert mine == pytest.approx(real, rel=1e-12) if isinstance(real, float) else mine == real


def test_errors_match_pytorch(torch):
    for lib in (nbgrad, torch):
        with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
            _benchmark(lib).Timer(stmt=lambda: 1)
        with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
            _benchmark(lib).Timer(stmt="1", global_setup="int x;")
        with pytest.raises(NotImplementedError, match="See `Timer.blocked_autorange.`"):
            _benchmark(lib).Timer().repeat()


def test_a_real_statement_is_timed():
    measurement = Timer(stmt="sum(range(1000))").timeit(200)
    assert isinstance(measurement, Measurement)
    assert 1e-7 < measurement.median < 1e-2  # summing 1,000 numbers: microseconds
    assert measurement.number_per_run == 200 and len(measurement.raw_times) == 1


def test_merge_joins_the_times_of_one_statement():
    clock = SteppingClock(STEPS)
    timer = Timer(stmt="pass", timer=clock)
    first, second = timer.timeit(10), timer.timeit(20)
    (merged,) = Measurement.merge([first, second])
    assert merged.number_per_run == 1
    assert merged.times == pytest.approx(first.times + second.times)
