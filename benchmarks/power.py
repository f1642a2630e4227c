"""``x ** n`` for small integer ``n``: the polynomial tutorials' operation.

PyTorch's "Tensors and autograd" tutorials fit a cubic: ``a + b * x + c * x ** 2 + d * x ** 3``
on 2,000 float32 values. The benchmark times ``(x ** n).sum()`` forward and backward for
n = 2, 3 and 4 in three engines:

- nbgrad and PyTorch eager on the CPU, written once as ``power(T, x, n)``;
- NumPy by hand: ``x ** n`` forward, ``n * x ** (n - 1)`` backward.

NumPy's float32 ``power`` has vector code only on CPUs with AVX-512; elsewhere it takes about
60 ns an element, so ``x ** 3`` cost 100x PyTorch's time. nbgrad computes ``x ** 3`` as PyTorch's
kernel does (``x * x * x``). The ratio for n = 3 is the one the target is about.

Run from the repository root:  python -m benchmarks.power
"""

import numpy as np
import torch

import nbgrad
from benchmarks import harness

SIZE = 2000
EXPONENTS = (2, 3, 4)


def power(T, x, n):
    return (x**n).sum()


def engines(n):
    """``name -> (forward, forward_and_backward, gradient)`` for each engine, on the same data."""
    x0 = np.linspace(-np.pi, np.pi, SIZE, dtype=np.float32)
    result = {}
    for name, T in (("nbgrad", nbgrad), ("PyTorch", torch)):
        x = T.tensor(x0, requires_grad=True)

        def forward(T=T, x=x):
            return power(T, x, n)

        def step(T=T, x=x):
            x.grad = None
            power(T, x, n).backward()

        def gradient(x=x, step=step):
            step()
            return x.grad.numpy()

        result[name] = (forward, step, gradient)

    def numpy_forward():
        return np.sum(x0**n)

    def numpy_step():
        np.sum(x0**n)
        return np.float32(n) * x0 ** (n - 1)

    result["NumPy by hand"] = (numpy_forward, numpy_step, numpy_step)
    return result


def run(repeats=harness.REPEATS):
    """Check that the engines agree, time them, and return the results as Markdown."""
    tables, verdicts, loads = [], [], []
    for n in EXPONENTS:
        candidates = engines(n)
        reference = candidates["NumPy by hand"][2]()
        for name in ("nbgrad", "PyTorch"):
            harness.same(f"x ** {n} {name} grad", candidates[name][2](), reference)
        with harness.one_thread(), harness.OthersLoad() as load:
            forward = harness.time_interleaved(
                {name: fns[0] for name, fns in candidates.items()}, repeats
            )
            full = harness.time_interleaved(
                {name: fns[1] for name, fns in candidates.items()}, repeats
            )
        loads.append(load.fraction)
        tables.append(f"x ** {n}:\n\n" + harness.comparison_table(forward, full, 1e6, "us"))
        ratio = full["nbgrad"].best / full["PyTorch"].best
        verdicts.append(f"x ** {n}: nbgrad/PyTorch = {ratio:.2f}")
    return {
        "title": f"x ** n, forward and backward, on {SIZE} float32 values",
        "table": "\n\n".join(tables),
        "verdict": "; ".join(verdicts) + " (target for small integer n: <= 1.00)",
        "others_load": max(loads),
    }


def main():
    print(harness.PINNING)
    harness.print_result(run())


if __name__ == "__main__":
    main()
