"""Per-operation overhead: a chain of 100 element-wise ops on 10-element float32 tensors.

On tensors this small the arithmetic is almost free, so the time per op is what the engine
itself costs: making the result tensor and its grad_fn node in forward, and running the node
in backward. Three engines run the same program:

- nbgrad, and PyTorch eager on the CPU, written once as ``chain(T, x, w)``;
- NumPy by hand: the same forward, saving what backward needs, and its backward written out
  by hand. No engine at all: the floor that NumPy's own call overhead sets.

Run from the repository root:  python -m benchmarks.chain
"""

import numpy as np
import torch

import nbgrad
from benchmarks import harness

BLOCKS = 10  # the block below has 10 ops, so the chain has 100
OPS = 10 * BLOCKS
SIZE = 10


def chain(T, x, w):
    """The benchmarked program, for nbgrad or PyTorch (``T`` is the module).

    A fixed mix of the element-wise ops a small model uses: tensor * tensor, tensor - tensor,
    scalar arithmetic, tanh, sigmoid and exp. The block keeps values in range, so that the
    gradients of both ``x`` and ``w`` stay of order 1 and can be compared.
    """
    h = x
    for _ in range(BLOCKS):
        h = h * w
        h = T.tanh(h)
        h = T.sigmoid(h)
        h = h - 0.5
        h = h * 4.0
        h = T.exp(h)
        h = h - w
        h = h * 1.1
        h = T.tanh(h)
        h = h + 0.05
    return h


def numpy_forward(x, w):
    """The same chain in NumPy, keeping per block what backward will read."""
    tape = []
    h = x
    for _ in range(BLOCKS):
        a = h
        h = h * w
        h = np.tanh(h)
        t1 = h
        h = 1 / (1 + np.exp(-h))
        s = h
        h = h - 0.5
        h = h * 4.0
        h = np.exp(h)
        e = h
        h = h - w
        h = h * 1.1
        h = np.tanh(h)
        t2 = h
        h = h + 0.05
        tape.append((a, t1, s, e, t2))
    return h, tape


def numpy_backward(tape, w, grad):
    """The chain's backward by hand: the blocks in reverse, each op's derivative in reverse."""
    grad_w = np.zeros_like(w)
    g = grad
    for a, t1, s, e, t2 in reversed(tape):
        # h + 0.05: the gradient passes unchanged
        g = g * (1 - t2 * t2)  # tanh
        g = g * 1.1
        grad_w = grad_w - g  # h - w
        g = g * e  # exp
        g = g * 4.0
        # h - 0.5: unchanged
        g = g * s * (1 - s)  # sigmoid
        g = g * (1 - t1 * t1)  # tanh
        grad_w = grad_w + g * a  # h * w
        g = g * w
    return g, grad_w


def engines():
    """``name -> (forward, forward_and_backward, gradients)`` for each engine, on the same data."""
    x0 = np.linspace(-0.5, 0.5, SIZE, dtype=np.float32)
    w0 = np.linspace(0.9, 1.1, SIZE, dtype=np.float32)
    result = {}

    for name, T in (("nbgrad", nbgrad), ("PyTorch", torch)):
        x = T.tensor(x0, requires_grad=True)
        w = T.tensor(w0, requires_grad=True)
        seed = T.ones(SIZE)

        def forward(T=T, x=x, w=w):
            return chain(T, x, w)

        def step(T=T, x=x, w=w, seed=seed):
            x.grad = None
            w.grad = None
            chain(T, x, w).backward(seed)

        def gradients(x=x, w=w, step=step):
            step()
            return x.grad.numpy(), w.grad.numpy()

        result[name] = (forward, step, gradients)

    seed = np.ones(SIZE, dtype=np.float32)

    def numpy_step():
        _, tape = numpy_forward(x0, w0)
        return numpy_backward(tape, w0, seed)

    result["NumPy by hand"] = (lambda: numpy_forward(x0, w0), numpy_step, numpy_step)
    return result


def run(repeats=harness.REPEATS):
    """Check that the engines agree, time them, and return the results as Markdown."""
    candidates = engines()
    reference = candidates["NumPy by hand"][2]()
    for name in ("nbgrad", "PyTorch"):
        ours = candidates[name][2]()
        harness.same(f"chain {name} grad x", ours[0], reference[0])
        harness.same(f"chain {name} grad w", ours[1], reference[1])

    with harness.one_thread(), harness.OthersLoad() as load:
        forward = harness.time_interleaved(
            {name: fns[0] for name, fns in candidates.items()}, repeats
        )
        full = harness.time_interleaved({name: fns[1] for name, fns in candidates.items()}, repeats)

    nbgrad_time, torch_time = full["nbgrad"].best, full["PyTorch"].best
    per_op = 1e6 / OPS  # seconds per chain -> microseconds per op
    verdict = (
        f"nbgrad/PyTorch = {nbgrad_time / torch_time:.2f} (target <= 1.00: "
        f"{'met' if nbgrad_time <= torch_time else 'not met'}); nbgrad at "
        f"{nbgrad_time * per_op:.2f} us/op, PyTorch at {torch_time * per_op:.2f} us/op "
        f"(goal: ~3 us/op for nbgrad where PyTorch takes ~4.4)"
    )
    return {
        "title": f"Chain of {OPS} element-wise ops on {SIZE}-element float32 tensors",
        "table": harness.comparison_table(forward, full, per_op, "us/op"),
        "verdict": verdict,
        "others_load": load.fraction,
    }


def main():
    print(harness.PINNING)
    result = run()
    harness.print_result(result)


if __name__ == "__main__":
    main()
