"""The ready queue: one backward step that makes 2,000 leaves ready at once.

``torch.cat`` of 2,000 small leaves, scaled and summed: backward runs ``SumBackward0``,
``MulBackward0``, then ``CatBackward0``, whose one call hands a gradient to 2,000
``AccumulateGrad`` nodes. The engine then holds 2,000 ready nodes and takes them in PyTorch's
order (nbgrad/autograd/ready_queue.py, the binary heap of ``std::priority_queue``): this measures
what that queue costs against PyTorch and against NumPy by hand (concatenate, multiply, sum; its
backward splits the gradient into the 2,000 pieces, which is the floor).

Run from the repository root:  python -m benchmarks.fan_out
"""

import numpy as np
import torch

import nbgrad
from benchmarks import harness

LEAVES = 2000
SIZE = 4


def program(T, leaves, scale):
    """The benchmarked program, for nbgrad or PyTorch (``T`` is the module)."""
    return (T.cat(leaves) * scale).sum()


def engines():
    """``name -> (forward, forward_and_backward, gradients)`` for each engine, on the same data."""
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(SIZE).astype(np.float32) for _ in range(LEAVES)]
    scale0 = np.linspace(0.5, 1.5, LEAVES * SIZE, dtype=np.float32)
    result = {}

    for name, T in (("nbgrad", nbgrad), ("PyTorch", torch)):
        leaves = [T.tensor(v, requires_grad=True) for v in values]
        scale = T.tensor(scale0)

        def forward(T=T, leaves=leaves, scale=scale):
            return program(T, leaves, scale)

        def step(T=T, leaves=leaves, scale=scale):
            for leaf in leaves:
                leaf.grad = None
            program(T, leaves, scale).backward()

        def gradients(leaves=leaves, step=step):
            step()
            return np.concatenate([leaf.grad.numpy() for leaf in leaves])

        result[name] = (forward, step, gradients)

    def numpy_forward():
        return (np.concatenate(values) * scale0).sum()

    def numpy_step():
        numpy_forward()
        grad = np.ones(LEAVES * SIZE, dtype=np.float32) * scale0  # d sum / d (cat * scale)
        return np.split(grad, LEAVES)  # CatBackward0: one piece per leaf

    def numpy_gradients():
        return np.concatenate(numpy_step())

    result["NumPy by hand"] = (numpy_forward, numpy_step, numpy_gradients)
    return result


def run(repeats=harness.REPEATS):
    """Check that the engines agree, time them, and return the results as Markdown."""
    candidates = engines()
    reference = candidates["NumPy by hand"][2]()
    for name in ("nbgrad", "PyTorch"):
        harness.same(f"fan-out {name} grads", candidates[name][2](), reference)

    with harness.one_thread(), harness.OthersLoad() as load:
        forward = harness.time_interleaved(
            {name: fns[0] for name, fns in candidates.items()}, repeats
        )
        full = harness.time_interleaved({name: fns[1] for name, fns in candidates.items()}, repeats)

    nbgrad_time, torch_time = full["nbgrad"].best, full["PyTorch"].best
    per_leaf = 1e6 / LEAVES  # seconds per step -> microseconds per leaf
    verdict = (
        f"nbgrad/PyTorch = {nbgrad_time / torch_time:.2f}; nbgrad at "
        f"{nbgrad_time * per_leaf:.2f} us per leaf, PyTorch at {torch_time * per_leaf:.2f} "
        "(forward and backward, including the ready queue's push and pop of every leaf's "
        "AccumulateGrad)"
    )
    return {
        "title": f"Backward into {LEAVES} ready leaves (torch.cat of {SIZE}-element leaves)",
        "table": harness.comparison_table(forward, full, per_leaf, "us/leaf"),
        "verdict": verdict,
        "others_load": load.fraction,
    }


def main():
    print(harness.PINNING)
    result = run()
    harness.print_result(result)


if __name__ == "__main__":
    main()
