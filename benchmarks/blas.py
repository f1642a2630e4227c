"""The MLP step's matrix products alone: NumPy's BLAS against PyTorch's, one thread each.

nbgrad multiplies matrices with NumPy, whose wheels bring OpenBLAS; PyTorch's CPU wheels bring
their own BLAS (Intel's MKL on x86). No engine code runs here: this is how much of the gap
between nbgrad and PyTorch on the MLP benchmark comes from the libraries' matrix products, not
from either engine. The products are those of the 784-128-10 step in ``mlp.py``: the two
forward products and the two weight gradients that dominate its time.

Run from the repository root:  python -m benchmarks.blas
"""

import numpy as np
import torch

from benchmarks import harness
from benchmarks.mlp import BATCH, HIDDEN, IN, OUT


def products():
    """``name -> (NumPy call, PyTorch call)`` for the step's four large products."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, IN)).astype(np.float32)
    w1 = rng.standard_normal((IN, HIDDEN)).astype(np.float32)
    hidden = rng.standard_normal((BATCH, HIDDEN)).astype(np.float32)
    w2 = rng.standard_normal((HIDDEN, OUT)).astype(np.float32)
    d_logits = rng.standard_normal((BATCH, OUT)).astype(np.float32)
    d_hidden = rng.standard_normal((BATCH, HIDDEN)).astype(np.float32)
    arrays = {"x": x, "w1": w1, "hidden": hidden, "w2": w2, "dl": d_logits, "dh": d_hidden}
    t = {name: torch.from_numpy(a) for name, a in arrays.items()}
    a = arrays
    return {
        "x @ W1 (64x784 @ 784x128)": (lambda: a["x"] @ a["w1"], lambda: t["x"] @ t["w1"]),
        "x.T @ dh (784x64 @ 64x128)": (lambda: a["x"].T @ a["dh"], lambda: t["x"].T @ t["dh"]),
        "hidden @ W2 (64x128 @ 128x10)": (
            lambda: a["hidden"] @ a["w2"],
            lambda: t["hidden"] @ t["w2"],
        ),
        "dl @ W2.T (64x10 @ 10x128)": (lambda: a["dl"] @ a["w2"].T, lambda: t["dl"] @ t["w2"].T),
    }


def run(repeats=harness.REPEATS):
    rows = []
    total = {"NumPy": 0.0, "PyTorch": 0.0}
    with harness.one_thread(), harness.OthersLoad() as load:
        for name, (ours, theirs) in products().items():
            np.testing.assert_allclose(ours(), theirs().numpy(), rtol=1e-4, atol=1e-3)
            timing = harness.time_interleaved({"NumPy": ours, "PyTorch": theirs}, repeats)
            numpy_us, torch_us = timing["NumPy"].best * 1e6, timing["PyTorch"].best * 1e6
            total["NumPy"] += numpy_us
            total["PyTorch"] += torch_us
            rows.append((name, f"{numpy_us:.1f}", f"{torch_us:.1f}", f"{numpy_us / torch_us:.2f}x"))
    rows.append(
        (
            "all four",
            f"{total['NumPy']:.1f}",
            f"{total['PyTorch']:.1f}",
            f"{total['NumPy'] / total['PyTorch']:.2f}x",
        )
    )
    table = harness.markdown_table(
        ("product (float32)", "NumPy us (min)", "PyTorch us (min)", "NumPy / PyTorch"), rows
    )
    return {
        "title": "The MLP step's matrix products: NumPy's BLAS vs PyTorch's, one thread",
        "table": table,
        "verdict": (
            f"NumPy spends {total['NumPy'] - total['PyTorch']:.0f} us more than PyTorch on these "
            f"products per step (PyTorch built with MKL: {torch.backends.mkl.is_available()}; "
            "NumPy's BLAS is in the machine facts of run_all)"
        ),
        "others_load": load.fraction,
    }


def main():
    print(harness.PINNING)
    harness.print_result(run())


if __name__ == "__main__":
    main()
