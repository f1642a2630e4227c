"""What recording costs: one training step of a 784-128-10 MLP, in a ``%%autograd`` cell versus
the same cell without the magic.

The step (batch 64, float32) is the one of ``benchmarks/mlp.py`` plus the SGD update, written in
the cell itself as a learner would write it:

    hidden = torch.relu(torch.addmm(b1, x, W1))
    logits = torch.addmm(b2, hidden, W2)
    loss = -(torch.log_softmax(logits, 1) * onehot).sum(1).mean()
    loss.backward()
    with torch.no_grad(): p -= 0.1 * p.grad; p.grad = None      (for each parameter)

Both cells run through a real IPython shell (``run_cell``), so both pay IPython's own cost per
cell; the recorded one also pays the recording, naming the tensors when the cell ends, and
(second line of the table) the text summary that a ``%%autograd`` cell displays. Samples are
interleaved (plain, recorded, plain, ...) so that a slow moment of the machine hits both; BLAS
runs on one thread (threadpoolctl). Medians and minimums of 15 samples of about 0.3 s each are
reported, with their ratios to the plain cell (on a busy machine, the minimums are the fairer
comparison). The target of issue 4 is a ratio of at most 1.5.

With ``--engine torch`` the same step is written on real PyTorch (``import torch``) and the
recorded cell records PyTorch's graph (nbgrad.trace.torch_recorder); the goal of issue 7 is a
ratio of at most 2. PyTorch runs on one thread too (``torch.set_num_threads(1)``).

A cell run again is not parsed again by ``%%autograd`` (a plain cell is, by IPython), and what
was found for its expressions (labels, positions) is kept. ``--fresh-text`` gives every run a
new text (a comment with a counter), as a notebook does with a new execution count: nothing kept
by the cell's whole text serves (its parse), what is kept per statement and per compiled code
still does. Code never run before pays all of it once (see benchmarks/README.md).

Run from the repository root:  python -m benchmarks.record_overhead [--engine torch] [--fresh-text]
"""

import argparse
import gc
import itertools
import statistics
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

SETUP = """
import numpy as np
import nbgrad as torch
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((64, 784)).astype(np.float32))
onehot = torch.tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)])
W1 = torch.tensor((rng.standard_normal((784, 128)) / 28).astype(np.float32), requires_grad=True)
b1 = torch.full((128,), 0.01, requires_grad=True)
W2 = torch.tensor((rng.standard_normal((128, 10)) / 11.3).astype(np.float32), requires_grad=True)
b2 = torch.zeros(10, requires_grad=True)
params = [W1, b1, W2, b2]
"""

STEP = """\
hidden = torch.relu(torch.addmm(b1, x, W1))
logits = torch.addmm(b2, hidden, W2)
loss = -(torch.log_softmax(logits, 1) * onehot).sum(1).mean()
loss.backward()
with torch.no_grad():
    for p in params:
        p -= 0.1 * p.grad
        p.grad = None
"""

TORCH_SETUP = SETUP.replace("import nbgrad as torch", "import torch\ntorch.set_num_threads(1)")


def cells_for(step):
    return {
        "plain cell": step,
        "%%autograd --no-show": "%%autograd --no-show\n" + step,
        "%%autograd (text summary built)": "%%autograd --no-show\n" + step + "_ = repr_summary()\n",
    }


CELLS = cells_for(STEP)

SAMPLES = 15
SAMPLE_SECONDS = 0.3


def _shell(setup=SETUP):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext nbgrad", store_history=False)
    result = shell.run_cell(setup, store_history=False)
    if not result.success:
        raise SystemExit(f"the setup cell failed: {result.error_in_exec!r}")
    shell.user_ns["repr_summary"] = lambda: __import__("nbgrad").last_trace().summary()
    return shell


_runs = itertools.count()


def _run(shell, cell, repeats, fresh_text=False):
    # fresh_text: each run of the cell ends with a different comment, so that nothing kept by
    # the cell's whole text (its parse) serves.
    cells = [cell + f"# run {next(_runs)}\n" if fresh_text else cell for _ in range(repeats)]
    start = time.perf_counter()
    for text in cells:
        result = shell.run_cell(text, store_history=False, silent=True)
        if not result.success:
            raise SystemExit(f"the benchmarked cell failed: {result.error_in_exec!r}")
    return (time.perf_counter() - start) / repeats


def measure(setup=SETUP, cells=CELLS, fresh_text=False):
    shell = _shell(setup)
    with threadpool_limits(1):
        repeats = {}
        for label, cell in cells.items():
            _run(shell, cell, 3, fresh_text)  # warm up
            once = _run(shell, cell, 5, fresh_text)
            repeats[label] = max(1, int(SAMPLE_SECONDS / once))
        samples = {label: [] for label in cells}
        for _ in range(SAMPLES):
            for label, cell in cells.items():
                samples[label].append(_run(shell, cell, repeats[label], fresh_text))
                gc.collect()
    return {label: (statistics.median(times), min(times)) for label, times in samples.items()}


def check_recording(setup=SETUP, engine="nbgrad"):
    """The recorded cell must record what it claims: the whole step, forward and backward."""
    shell = _shell(setup)
    shell.run_cell("%%autograd --no-show\n" + STEP, store_history=False)
    import nbgrad

    trace = nbgrad.last_trace()
    assert trace.error is None and trace.truncated is None, trace
    assert (trace.engine or ("nbgrad",))[0] == engine, trace.engine
    assert "loss" in trace.tensors and len(trace.accumulations["W1"]) == 1
    assert len(trace.backward_steps) >= 10, trace
    assert np.isfinite(trace.tensors["loss"].value).all()
    return trace


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=("nbgrad", "torch"), default="nbgrad")
    parser.add_argument(
        "--fresh-text",
        action="store_true",
        help="give every run of a cell a new text (a comment): nothing kept by its text serves",
    )
    args = parser.parse_args()
    engine = args.engine
    setup = TORCH_SETUP if engine == "torch" else SETUP
    trace = check_recording(setup, engine)
    timings = measure(setup, CELLS, fresh_text=args.fresh_text)
    plain_median, plain_min = timings["plain cell"]
    python = sys.version.split()[0]
    version = trace.engine[1] if trace.engine else "nbgrad"
    print(
        f"784-128-10 MLP training step on {engine} ({version}), batch 64, float32, "
        f"BLAS on 1 thread, Python {python}"
    )
    print(
        f"recorded: {len(trace.ops)} ops, {len(trace.nodes)} nodes, "
        f"{len(trace.backward_steps)} backward steps, JSON {len(trace.to_json())} bytes"
    )
    print(f"{'cell':<34}{'median ms':>10}{'ratio':>8}{'min ms':>9}{'ratio':>8}")
    for label, (median, least) in timings.items():
        print(
            f"{label:<34}{median * 1e3:>10.3f}{median / plain_median:>8.2f}"
            f"{least * 1e3:>9.3f}{least / plain_min:>8.2f}"
        )


if __name__ == "__main__":
    main()
