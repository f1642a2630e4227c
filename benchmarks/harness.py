"""What every benchmark shares: BLAS pinned to one thread, interleaved timing, machine facts.

Timing rules (see README.md):

- every engine is measured in the same process, in turns (nbgrad, PyTorch, NumPy, nbgrad, ...),
  so that a slow moment of the machine hits all of them alike and their ratios stay honest;
- each sample times a batch of calls with ``time.perf_counter`` (``timeit``'s clock), the batch
  sized so that it lasts about ``TARGET_SECONDS``; ratios use the minimum (other processes
  can only add time to a sample), and the median is shown next to it as the spread;
- the garbage collector stays on, as in a training loop: an engine that makes many Python
  objects pays for their collection, and that cost is part of what a user sees;
- BLAS and OpenMP run one thread (``threadpool_limits(1)``, ``torch.set_num_threads(1)``).
"""

import contextlib
import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass

import numpy as np
import torch
from threadpoolctl import threadpool_info, threadpool_limits

REPEATS = 7  # samples per engine
TARGET_SECONDS = 0.05  # length of one sample (a batch of calls)

PINNING = (
    "BLAS and OpenMP pinned to 1 thread: threadpoolctl.threadpool_limits(1) around every "
    "measurement, and torch.set_num_threads(1)"
)


@contextlib.contextmanager
def one_thread():
    """Run the block with every BLAS / OpenMP pool (NumPy's and PyTorch's) limited to 1 thread."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(previous)


@dataclass
class Timing:
    """Seconds per call of one candidate: every sample, and their median and minimum."""

    samples: list

    @property
    def median(self):
        return statistics.median(self.samples)

    @property
    def best(self):
        return min(self.samples)


def calls_per_sample(fn, target_seconds=TARGET_SECONDS):
    """How many calls of ``fn`` last about ``target_seconds`` (``fn`` is called once first)."""
    fn()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= target_seconds / 4:
            return max(1, round(calls * target_seconds / elapsed))
        calls *= 2


def time_interleaved(candidates, repeats=REPEATS):
    """Time each ``name -> fn`` of ``candidates``, taking their samples in turns.

    Returns ``name -> Timing``. Call it inside ``one_thread()``.
    """
    calls = {name: calls_per_sample(fn) for name, fn in candidates.items()}
    samples = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            n = calls[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - start) / n)
    return {name: Timing(s) for name, s in samples.items()}


def same(name, ours, reference, rtol=1e-4, atol=1e-6):
    """Stop the benchmark if two engines disagree: timing different computations proves nothing."""
    ours, reference = np.asarray(ours), np.asarray(reference)
    if ours.shape != reference.shape or not np.allclose(ours, reference, rtol=rtol, atol=atol):
        worst = np.max(np.abs(ours - reference)) if ours.shape == reference.shape else "shape"
        raise SystemExit(f"{name}: results differ (max abs difference {worst}); not timing")


def markdown_table(headers, rows):
    """A Markdown table with aligned columns (readable in a terminal and on GitHub)."""
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def ratio(a, b):
    return f"{a / b:.2f}x"


def comparison_table(forward, full, scale, unit, baselines=("PyTorch", "NumPy by hand")):
    """The results table: per engine, forward and forward + backward times, and ratios.

    Ratios are of the minimum: other processes can only add time to a sample, so the minimum
    is the estimate they disturb least; the median is shown next to it, as the spread.
    """
    headers = (
        "engine",
        f"forward {unit} (min)",
        f"fwd+bwd {unit} (min)",
        f"fwd+bwd {unit} (median)",
        *(f"vs {b}" for b in baselines),
    )
    rows = [
        (
            name,
            f"{forward[name].best * scale:.3g}",
            f"{full[name].best * scale:.3g}",
            f"{full[name].median * scale:.3g}",
            *(ratio(full[name].best, full[b].best) for b in baselines),
        )
        for name in full
    ]
    return markdown_table(headers, rows)


class OthersLoad:
    """How busy other processes kept the cores while the block ran (Linux; else None).

    ``fraction`` is the share of all cores used by everything but this process: tests run
    alongside on a 2-core machine make timings noisy, and the results record this next to them.
    """

    fraction = None

    def __enter__(self):
        self._start = _cpu_ticks()
        return self

    def __exit__(self, *exc):
        end = _cpu_ticks()
        if self._start is not None and end is not None:
            busy, total, own = (b - a for a, b in zip(self._start, end))
            self.fraction = max(0.0, (busy - own) / max(1, total))
        return False


def _cpu_ticks():
    """(busy ticks of all cores, all ticks, this process's CPU ticks), from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values), time.process_time() * tick


def cpu_busy(seconds=1.0):
    """Share of the cores that other processes use over the next ``seconds``, or None."""
    with OthersLoad() as load:
        time.sleep(seconds)
    return load.fraction


def load_note(fraction):
    """One line on how busy other processes kept the machine during a measurement."""
    if fraction is None:
        return "other processes' CPU use during the measurement: unknown"
    note = " (busy: absolute times are noisy, rerun on a quiet machine)" if fraction > 0.15 else ""
    return f"other processes' CPU use during the measurement: {fraction:.0%} of the cores{note}"


def print_result(result):
    """A benchmark's result (the dict its ``run()`` returns), as its script prints it."""
    print(f"\n{result['title']}\n")
    print(result["table"])
    print("\n" + result["verdict"])
    print(load_note(result["others_load"]))


def wait_until_quiet(limit=0.15, max_seconds=300):
    """Wait (up to ``max_seconds``) until other processes use under ``limit`` of the cores."""
    deadline = time.monotonic() + max_seconds
    busy = cpu_busy()
    while busy is not None and busy > limit and time.monotonic() < deadline:
        print(f"machine busy ({busy:.0%} of the cores used by other processes); waiting...")
        busy = cpu_busy(5.0)
    return busy


# --- the machine ---------------------------------------------------------------------------------


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit():
    """The commit of the nbgrad that was measured, flagged if nbgrad/ has uncommitted changes."""
    import nbgrad

    package = os.path.dirname(os.path.abspath(nbgrad.__file__))

    def git(*args):
        return subprocess.run(
            ["git", "-C", package, *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("log", "-1", "--format=%h %s")
        dirty = git("status", "--porcelain", "--", ".")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return commit + (" + uncommitted changes in nbgrad/" if dirty else "")


def blas_description():
    """Which BLAS NumPy and PyTorch loaded, and which kernel it runs, from threadpoolctl."""
    parts = []
    for pool in threadpool_info():
        name = pool.get("internal_api")
        details = [f"version {pool.get('version')}"]
        if pool.get("architecture"):
            details.append(f"kernel {pool['architecture']}")
        if pool.get("threading_layer"):
            details.append(f"threading {pool['threading_layer']}")
        details.append(f"{pool.get('num_threads')} threads unpinned")
        details.append(os.path.basename(pool.get("filepath", "")))
        parts.append(f"{name} ({', '.join(details)})")
    return "; ".join(parts)


def machine_lines():
    """Facts about this run, as Markdown list items."""
    env = {k: os.environ.get(k, "not set") for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    import nbgrad

    return [
        f"CPU: {_cpu_model()}, {os.cpu_count()} logical cores (nproc)",
        f"Python {platform.python_version()}, NumPy {np.__version__}, PyTorch {torch.__version__}"
        f", nbgrad from {os.path.dirname(nbgrad.__file__)}",
        f"nbgrad commit: {_git_commit()}",
        f"BLAS / OpenMP (threadpoolctl): {blas_description()}",
        f"environment: OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']}, "
        f"OPENBLAS_L2_SIZE={env['OPENBLAS_L2_SIZE']} (left as found)",
        PINNING,
        f"timing: {REPEATS} samples per engine, taken in turns, each a batch of about "
        f"{TARGET_SECONDS * 1000:.0f} ms; garbage collector on",
    ]
