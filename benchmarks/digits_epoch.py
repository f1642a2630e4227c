"""One epoch of the tutorials' digits MLP: nbgrad against PyTorch, the same code for both.

The model and loop a learner writes (``import nbgrad as torch``)::

    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for each batch of 64 of the 1,437 training digits (a fixed shuffle):
        loss = nn.CrossEntropyLoss()(model(x), y)
        optimizer.zero_grad(); loss.backward(); optimizer.step()

Both start from the same weights (PyTorch's, copied into nbgrad) and must end the epoch with the
same weights before anything is timed. The matrices are small (64 x 32), so this measures the
cost per operation of each framework more than arithmetic: 23 steps of about 12 ops each.

Run from the repository root:  python -m benchmarks.digits_epoch
"""

import numpy as np
import torch

import nbgrad
from benchmarks import harness

BATCH = 64


def make_data(seed=0):
    """The digits as NumPy arrays, shuffled once, and the training four fifths of them."""
    images, labels = nbgrad.datasets.digits()
    order = np.random.default_rng(seed).permutation(len(labels))
    images, labels = images.numpy()[order], labels.numpy()[order]
    held_out = len(labels) // 5
    return images[held_out:], labels[held_out:]


def setup(T, images, labels, initial_state):
    nn = T.nn
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    model.load_state_dict(initial_state)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    batches = [
        (T.tensor(images[i : i + BATCH]), T.tensor(labels[i : i + BATCH]))
        for i in range(0, len(labels), BATCH)
    ]

    def epoch():
        for x, y in batches:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss

    return model, epoch


def engines():
    images, labels = make_data()
    torch.manual_seed(0)
    reference = torch.nn.Sequential(
        torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)
    )
    initial = {k: v.detach().clone() for k, v in reference.state_dict().items()}
    return {
        name: setup(T, images, labels, initial)
        for name, T in (("nbgrad", nbgrad), ("PyTorch", torch))
    }


def run(repeats=harness.REPEATS):
    candidates = engines()
    for _, epoch in candidates.values():
        epoch()
    (ours, _), (theirs, _) = candidates["nbgrad"], candidates["PyTorch"]
    for (name, mine), (_, real) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        harness.same(f"digits epoch: {name}", mine.numpy(), real.numpy(), rtol=1e-3, atol=1e-4)

    with harness.one_thread(), harness.OthersLoad() as load:
        timings = harness.time_interleaved(
            {name: epoch for name, (_, epoch) in candidates.items()}, repeats
        )
    rows = [
        (
            name,
            f"{timing.best * 1e3:.3g}",
            f"{timing.median * 1e3:.3g}",
            harness.ratio(timing.best, timings["PyTorch"].best),
        )
        for name, timing in timings.items()
    ]
    ratio = timings["nbgrad"].best / timings["PyTorch"].best
    return {
        "title": "One epoch of the digits MLP 64-32-10 (Adam, batch 64, 23 steps), float32",
        "table": harness.markdown_table(
            ("engine", "epoch ms (min)", "epoch ms (median)", "vs PyTorch"), rows
        ),
        "verdict": f"nbgrad/PyTorch = {ratio:.2f} per epoch",
        "others_load": load.fraction,
    }


def main():
    print(harness.PINNING)
    result = run()
    harness.print_result(result)


if __name__ == "__main__":
    main()
