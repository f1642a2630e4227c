"""``torch.utils.benchmark``: ``Timer`` and the ``Measurement`` it returns, for Python
statements, with PyTorch's measuring loops and printout.

``Timer(stmt, setup, globals=...)`` compiles the statements once (``timeit.Timer``);
``timeit(number)`` runs ``stmt`` ``number`` times after a warm-up, ``blocked_autorange`` picks a
block size that makes the timer's own cost negligible and times blocks until ``min_run_time``,
``adaptive_autorange`` goes on until the spread of the blocks is small. A ``Measurement`` keeps
the times of its blocks and prints as PyTorch's does (median, interquartile range and a warning
when the spread is large). C++ statements (``language="c++"``) and ``Compare`` tables are not
here.
"""

import math
import textwrap
import time
import timeit as _timeit

import numpy as np

__all__ = ["Measurement", "Timer"]

# Spread (interquartile range over median) above which a Measurement warns.
_SPREAD_WARNING = 0.1
_SPREAD_GROSS_WARNING = 0.25


class TaskSpec:
    """What a Timer measures, as a Measurement describes it."""

    def __init__(self, stmt, setup, label, sub_label, description, env, num_threads):
        self.stmt = stmt
        self.setup = setup
        self.global_setup = ""
        self.label = label
        self.sub_label = sub_label
        self.description = description
        self.env = env
        self.num_threads = num_threads

    @property
    def title(self):
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        named = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{named}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self):
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self):
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


def select_unit(seconds):
    """The unit that gives ``seconds`` one to three digits before the point, and its scale."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(seconds) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


class Measurement:
    """The result of a Timer: ``raw_times`` (seconds per block of ``number_per_run`` runs) and
    their statistics per run (``times``, ``mean``, ``median``, ``iqr``)."""

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    def __getattr__(self, name):
        if name in (
            "stmt",
            "setup",
            "global_setup",
            "label",
            "sub_label",
            "description",
            "num_threads",
        ):
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q):
        return float(np.quantile(np.array(self.times, dtype=np.float64), q))

    @property
    def median(self):
        return self._quantile(0.5)

    @property
    def mean(self):
        return float(np.mean(np.array(self.times, dtype=np.float64)))

    @property
    def iqr(self):
        return self._quantile(0.75) - self._quantile(0.25)

    def meets_confidence(self, threshold=_SPREAD_WARNING):
        return self.iqr / self.median < threshold

    @property
    def has_warnings(self):
        return bool(self._warnings())

    def _warnings(self):
        if not self.raw_times:
            return []
        if not self.meets_confidence(_SPREAD_GROSS_WARNING):
            why = "This suggests significant environmental influence."
        elif not self.meets_confidence(_SPREAD_WARNING):
            why = "This could indicate system fluctuation."
        else:
            return []
        spread = self.iqr / self.median * 100
        return [
            f"  WARNING: Interquartile range is {spread:.1f}% of the median measurement.\n"
            f"           {why}"
        ]

    @property
    def title(self):
        return self.task_spec.title

    @property
    def env(self):
        return self.task_spec.env  # None when not given, as PyTorch's reads

    @property
    def as_row_name(self):
        return self.task_spec.sub_label or self.task_spec.stmt or "[Unknown]"

    def __repr__(self):
        count = len(self.raw_times)
        unit, scale = select_unit(self.median)
        threads = self.task_spec.num_threads
        lines = [
            f"<torch.utils.benchmark.utils.common.Measurement object at {id(self):#x}>",
            self.task_spec.summarize(),
            f"  {'Median: ' if count > 1 else ''}{self.median / scale:.2f} {unit}",
        ]
        if count >= 4:
            lines.append(
                f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._quantile(0.25) / scale:.2f} to "
                f"{self._quantile(0.75) / scale:.2f})"
            )
        lines.append(
            f"  {count} measurement{'s' if count > 1 else ''}, {self.number_per_run} runs "
            f"{'per measurement,' if count > 1 else ','} {threads} thread"
            f"{'s' if threads > 1 else ''}"
        )
        lines += self._warnings()
        return "\n".join(line for line in "\n".join(lines).strip().splitlines())

    @staticmethod
    def merge(measurements):
        """Measurements of the same statement joined, each time per single run."""
        groups = {}
        for m in measurements:
            key = (
                m.task_spec.stmt,
                m.task_spec.setup,
                m.task_spec.label,
                m.task_spec.sub_label,
                m.task_spec.description,
                m.task_spec.env,
                m.task_spec.num_threads,
            )
            groups.setdefault(key, (m.task_spec, []))[1].extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.values()]


def _dedented(code):
    """``code`` dedented, without the newline that opens a triple-quoted block or trailing
    blanks (what a Measurement prints)."""
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


class Timer:
    """Times a Python statement ``stmt`` after ``setup``, both run in a copy of ``globals``
    (with ``torch`` in it unless given)."""

    def __init__(
        self,
        stmt="pass",
        setup="pass",
        global_setup="",
        timer=time.perf_counter,
        globals=None,
        label=None,
        sub_label=None,
        description=None,
        env=None,  # noqa: A002
        num_threads=1,
        language="python",
    ):
        import nbgrad

        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language not in ("python", "py"):
            raise NotImplementedError("nbgrad's Timer times Python statements only")
        if global_setup:
            raise ValueError(
                f"global_setup is C++ only, got `{global_setup}`. Most likely this code can "
                "simply be moved to `setup`."
            )
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", nbgrad)
        # Statements written indented in a function body, as PyTorch allows.
        stmt, setup = _dedented(stmt), _dedented(setup)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt, setup, label, sub_label, description, env, num_threads)

    def _timeit(self, number):
        return max(self._timer.timeit(number), 1e-9)  # a zero would break the statistics

    def timeit(self, number=1000000):
        """``stmt`` run ``number`` times (after a warm-up of a hundredth as many)."""
        self._timeit(max(number // 100, 2))
        return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time):
        """Runs per block: ten times more until the timer's own cost is under 0.01% of a block
        (and a block lasts a thousandth of ``min_run_time``), or a block lasts longer than
        ``min_run_time``."""
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            taken = self._timeit(number)
            if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                return number
            if taken > min_run_time or number * 10 > 2147483647:
                return number
            number *= 10

    def _blocks(self, number, enough, min_run_time, max_run_time=None, callback=None):
        total, times, can_stop = 0.0, [], False
        while total < min_run_time or not can_stop:
            spent = self._timeit(number)
            times.append(spent)
            total += spent
            if callback:
                callback(number, spent)
            can_stop = enough(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of ``stmt`` timed until ``min_run_time`` seconds have been spent."""
        number = self._block_size(min_run_time)
        times = self._blocks(number, lambda times: True, min_run_time, callback=callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(
        self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None
    ):
        """Blocks timed until their interquartile range is under ``threshold`` of their median
        (after four blocks and ``min_run_time`` seconds), or ``max_run_time`` is spent."""
        number = self._block_size(0.05)

        def enough(times):
            return len(times) > 3 and Measurement(number, times, self._task_spec).meets_confidence(
                threshold
            )

        times = self._blocks(number, enough, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)
