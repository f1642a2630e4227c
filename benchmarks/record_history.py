"""What keeping the history costs: a training loop recorded with and without the per-parameter
numbers of every backward pass (``trace.history``, nbgrad/trace/history.py).

A recording keeps its first ``max_passes`` (3) backward passes in full; the loop then runs on
unrecorded, except that the history reads, after every pass, each parameter's grad norm, value
norm and the size of its last update (two norms, a difference with a copy of the values and a
copy). This measures what that adds to the loop:

- ``plain loop``: the loop, not recorded at all;
- ``history only``: the loop with only the history watching its parameters: what runs in
  every step past ``max_passes`` (the headline number: its extra time over the plain loop);
- ``recorded, no history``: inside ``nbgrad.record(history=False)``: 3 passes recorded in full,
  the rest unrecorded;
- ``recorded, with history``: the same with the history (the default);
- ``array floor``: the plain loop plus, after each backward, only the five NumPy calls per
  parameter that exact numbers need (``array_floor``): what any history reading exact update
  sizes with NumPy costs at the least, shown as its share of a plain step beside the history's.

The history's cost per step is ``history only`` minus ``plain loop``, given per step and as a
share of a plain step. The two recorded loops differ only by the history too, and their
difference says the same with the recording around it (noisier: recording the 3 passes in full
costs as much as many plain steps). The goal of issue 18 is under 10%. Two models, on both
engines (nbgrad's and real PyTorch's, SGD from each one's ``optim``): the 784-128-10 MLP of
``benchmarks/mlp.py`` (batch 64, float32), where the arrays dominate, and a small 8-16-1 MLP
(batch 8), where the fixed Python cost per parameter dominates: the worst case for the history.

Timing as benchmarks/README.md says: the loops in the same process, in turns
(harness.time_interleaved), minimum of 7 samples, BLAS and OpenMP on one thread.

Run from the repository root:  python -m benchmarks.record_history
"""

import math
import time

import numpy as np

from benchmarks.harness import (
    REPEATS,
    OthersLoad,
    Timing,
    calls_per_sample,
    load_note,
    markdown_table,
    one_thread,
)

STEPS = 40  # training steps per loop
MAX_PASSES = 3
MODELS = {
    "MLP 784-128-10, batch 64": (784, 128, 10, 64),
    "MLP 8-16-1, batch 8": (8, 16, 1, 8),
}


def make_loop(lib, sizes, seed=0, after_backward=None):
    """A training loop on ``lib`` (nbgrad or torch): its parameters, and a function running
    ``STEPS`` SGD steps of a two-layer MLP with a squared-error loss (calling
    ``after_backward(parameters)`` after each backward, when given)."""
    n_in, n_hidden, n_out, batch = sizes
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((batch, n_in)).astype(np.float32))
    y = lib.tensor(rng.standard_normal((batch, n_out)).astype(np.float32))
    model = lib.nn.Sequential(
        lib.nn.Linear(n_in, n_hidden), lib.nn.ReLU(), lib.nn.Linear(n_hidden, n_out)
    )
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01)
    parameters = list(model.parameters())

    def loop():
        for _ in range(STEPS):
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            if after_backward is not None:
                after_backward(parameters)
            optimizer.step()
        return loss

    return model, loop


def recorded(engine, loop, history):
    import nbgrad

    def run():
        with nbgrad.record(engine=engine, max_passes=MAX_PASSES, history=history) as trace:
            loop()
        return trace

    return run


def time_interleaved_both(candidates, repeats=REPEATS):
    """``harness.time_interleaved``, each sample read on two clocks: the wall clock
    (``perf_counter``, as every benchmark here) and this thread's CPU time (``thread_time``).
    With BLAS and OpenMP on one thread all the work runs in this thread, so its CPU time leaves
    out the time other processes held the cores: on a busy machine (six helpers on two cores)
    the wall clock measures them as much as the loop. Returns (wall, cpu): name -> Timing."""
    calls = {name: calls_per_sample(fn) for name, fn in candidates.items()}
    wall = {name: [] for name in candidates}
    cpu = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            n = calls[name]
            start_wall, start_cpu = time.perf_counter(), time.thread_time()
            for _ in range(n):
                fn()
            cpu[name].append((time.thread_time() - start_cpu) / n)
            wall[name].append((time.perf_counter() - start_wall) / n)
    return (
        {name: Timing(samples) for name, samples in wall.items()},
        {name: Timing(samples) for name, samples in cpu.items()},
    )


def history_only(engine, model, loop):
    """The loop with only the history running, as it runs past ``max_passes``."""
    from nbgrad.trace.history import NbgradHistory, TorchHistory

    tracker_class = TorchHistory if engine == "torch" else NbgradHistory

    def run():
        tracker = tracker_class()
        tracker.start()
        for parameter in model.parameters():
            tracker.watch(parameter, None)
        loop()
        return tracker.finish({})

    return run


def array_floor(engine, lib, sizes):
    """The loop doing, after each backward, only the array work of an exact history and none
    of its bookkeeping: per parameter its value norm, the difference with a copy of its values
    at the step before, that difference's norm, the new copy and its grad's norm (five NumPy
    calls in its own dtype, as the history reads a large parameter). What no reading of exact
    update sizes with NumPy can go below: the copy is a second array as large as the
    parameters that the next step's forward and backward compete with for the cache."""
    copies = {}

    def numbers(parameters):
        for parameter in parameters:
            if engine == "torch":
                values, grad = parameter.detach().numpy(), parameter.grad.numpy()
            else:
                values, grad = parameter._data, parameter.grad._data
            values, grad = values.reshape(-1), grad.ravel(order="K")
            previous = copies.get(id(parameter))
            if previous is None:
                copies[id(parameter)] = values.copy()
                continue
            np.dot(values, values)
            np.subtract(values, previous, out=previous)
            np.dot(previous, previous)
            np.copyto(previous, values)
            np.dot(grad, grad)

    return make_loop(lib, sizes, after_backward=numbers)[1]


def check(engine, lib, sizes):
    """Before timing: the history has every step of every parameter, and its last grad norms
    are those of the parameters' .grad computed by hand after the loop."""
    model, loop = make_loop(lib, sizes)
    trace = recorded(engine, loop, history=True)()
    rows = trace.history
    if not isinstance(rows, list):  # a pandas DataFrame when pandas is installed
        rows = rows.to_dict("records")
    parameters = list(model.parameters())
    if len(rows) != STEPS * len(parameters):
        raise SystemExit(f"{engine}: history has {len(rows)} rows, expected {STEPS * 4}")
    last = [row["grad_norm"] for row in rows if row["step"] == STEPS - 1]
    by_hand = sorted(float(np.linalg.norm(np.asarray(p.grad.detach()))) for p in parameters)
    if not np.allclose(sorted(last), by_hand, rtol=1e-5):
        raise SystemExit(f"{engine}: history's grad norms differ from the .grad's; not timing")


def measure(engine, lib, sizes):
    check(engine, lib, sizes)
    model, loop = make_loop(lib, sizes)
    candidates = {
        "plain loop": loop,
        "history only": history_only(engine, model, loop),
        "array floor": array_floor(engine, lib, sizes),
        "recorded, no history": recorded(engine, loop, history=False),
        "recorded, with history": recorded(engine, loop, history=True),
    }
    with one_thread(), OthersLoad() as load:
        wall, cpu = time_interleaved_both(candidates)
    return wall, cpu, load.fraction


def main():
    import torch

    import nbgrad

    print(
        f"Training loops of {STEPS} SGD steps, the first {MAX_PASSES} backward passes recorded "
        "in full; ratios of the minimum of 7 interleaved samples, BLAS on 1 thread.\n"
    )
    rows = {"wall": [], "cpu": []}
    loads = []
    for engine, lib in (("nbgrad", nbgrad), ("torch", torch)):
        for title, sizes in MODELS.items():
            wall, cpu, load = measure(engine, lib, sizes)
            loads.append(load)
            for clock, timings in (("wall", wall), ("cpu", cpu)):
                rows[clock].append(_row(engine, title, timings))
    headers = (
        "engine",
        "model",
        "plain ms/step",
        "history only ms/step",
        "history us/step",
        "history / plain step",
        "array floor / plain step",
        "recorded, no history ms/step",
        "recorded, with history ms/step",
        "recorded difference / plain",
    )
    print("Wall clock (perf_counter):\n")
    print(markdown_table(headers, rows["wall"]))
    print("\nThis thread's CPU time (thread_time; the fairer clock on a busy machine):\n")
    print(markdown_table(headers, rows["cpu"]))
    known = [x for x in loads if x is not None]
    print("\n" + load_note(max(known) if known else None))
    for clock in ("wall", "cpu"):
        worst = max(float(row[5].rstrip("%")) for row in rows[clock])
        verdict = "met" if worst < 10 and not math.isnan(worst) else "not met"
        print(
            f"{clock}: largest history cost {worst:.1f}% of a plain step "
            f"(goal: under 10%: {verdict})"
        )


def _row(engine, title, timings):
    plain = timings["plain loop"].best
    alone = timings["history only"].best
    without = timings["recorded, no history"].best
    with_history = timings["recorded, with history"].best
    return (
        engine,
        title,
        f"{plain / STEPS * 1e3:.3f}",
        f"{alone / STEPS * 1e3:.3f}",
        f"{(alone - plain) / STEPS * 1e6:.1f}",
        f"{(alone - plain) / plain:.1%}",
        f"{(timings['array floor'].best - plain) / plain:.1%}",
        f"{without / STEPS * 1e3:.3f}",
        f"{with_history / STEPS * 1e3:.3f}",
        f"{(with_history - without) / plain:.1%}",
    )


if __name__ == "__main__":
    main()
