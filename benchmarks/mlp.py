"""A training step's forward and backward: a 784-128-10 MLP on a batch of 64, float32.

Here the matrix products dominate, so an engine should come close to NumPy by hand. The model,
written with the ops nbgrad has (no ``nn`` module yet), the same for nbgrad and PyTorch:

    hidden = relu(addmm(b1, x, W1))            # Linear 784 -> 128, ReLU
    logits = addmm(b2, hidden, W2)             # Linear 128 -> 10
    loss   = -(log_softmax(logits, 1) * onehot).sum(1).mean()   # cross-entropy

The NumPy version computes the same forward and writes the backward by hand (softmax minus
one-hot, then the two layers): the floor an engine on NumPy can reach. The input ``x`` needs no
gradient; the four parameters do. Two more rows: "NumPy, op by op" calls, without any engine,
exactly the NumPy an engine runs for this graph (unfused); the minimal tape engine
(minimal_tape.py) runs the same model on the least Python any tape engine needs, the floor for
engines of its kind.
All must agree on the loss and the gradients before anything is timed.

A second variant, ``--style nn``, writes the same model as users write it with
``nn.functional`` (``F.linear`` with weights stored (out, in), ``F.relu``, ``F.cross_entropy``
on class indices): fewer, larger ops. It runs when nbgrad has ``nn.functional``.

Run from the repository root:  python -m benchmarks.mlp [--style addmm|nn]
"""

import argparse

import numpy as np
import torch

import nbgrad
from benchmarks import harness, minimal_tape

BATCH, IN, HIDDEN, OUT = 64, 784, 128, 10


def make_data(seed=0):
    """The input, the one-hot targets and the parameters (weights stored (in, out))."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, IN)).astype(np.float32)
    onehot = np.eye(OUT, dtype=np.float32)[rng.integers(0, OUT, BATCH)]
    params = {
        "W1": (rng.standard_normal((IN, HIDDEN)) / np.sqrt(IN)).astype(np.float32),
        "b1": np.full(HIDDEN, 0.01, dtype=np.float32),
        "W2": (rng.standard_normal((HIDDEN, OUT)) / np.sqrt(HIDDEN)).astype(np.float32),
        "b2": np.zeros(OUT, dtype=np.float32),
    }
    return x, onehot, params


def model_loss(T, x, onehot, p):
    """The benchmarked model, for nbgrad or PyTorch (``T`` is the module)."""
    hidden = T.relu(T.addmm(p["b1"], x, p["W1"]))
    logits = T.addmm(p["b2"], hidden, p["W2"])
    return -(T.log_softmax(logits, 1) * onehot).sum(1).mean()


def model_loss_nn(T, x, target, p):
    """The same model with ``nn.functional``: ``p`` holds the weights transposed, (out, in),
    as ``nn.Linear`` stores them, and ``target`` the class indices."""
    F = T.nn.functional
    hidden = F.relu(F.linear(x, p["W1"], p["b1"]))
    return F.cross_entropy(F.linear(hidden, p["W2"], p["b2"]), target)


STYLES = {
    # style -> (model, weights stored transposed (out, in) as nn.Linear does, targets as indices)
    "addmm": (model_loss, False, False),
    "nn": (model_loss_nn, True, True),
}


def has_style(style):
    return style == "addmm" or hasattr(getattr(nbgrad, "nn", None), "functional")


def numpy_forward(x, onehot, p, transposed=False):
    """The same forward in NumPy; returns the loss and what backward reads.

    ``transposed``: the weights are stored (out, in), as the ``nn`` style stores them.
    """
    W1, W2 = (p["W1"].T, p["W2"].T) if transposed else (p["W1"], p["W2"])
    z1 = x @ W1
    z1 += p["b1"]
    hidden = np.maximum(z1, 0)
    logits = hidden @ W2
    logits += p["b2"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    log_probs = shifted - np.log(total)
    loss = -(log_probs * onehot).sum() / BATCH
    return loss, (hidden, exp / total)


def numpy_backward(x, onehot, p, saved, transposed=False):
    """The gradients of the loss with respect to the four parameters, by hand, each in the
    layout of its parameter."""
    hidden, probs = saved
    d_logits = (probs - onehot) / BATCH  # softmax cross-entropy
    grads = {"b2": d_logits.sum(axis=0)}
    grads["W2"] = d_logits.T @ hidden if transposed else hidden.T @ d_logits
    d_hidden = d_logits @ (p["W2"] if transposed else p["W2"].T)
    d_hidden *= hidden > 0  # ReLU (a multiply by the mask: the fastest NumPy way)
    grads["W1"] = d_hidden.T @ x if transposed else x.T @ d_hidden
    grads["b1"] = d_hidden.sum(axis=0)
    return grads


def engines(style="addmm"):
    """``name -> (forward, forward_and_backward, loss_and_gradients)``, on the same data."""
    model, transposed, indices = STYLES[style]
    x0, onehot0, params0 = make_data()
    if transposed:
        params0 = {k: v.T.copy() if k.startswith("W") else v for k, v in params0.items()}
    result = {}

    for name, T in (("nbgrad", nbgrad), ("PyTorch", torch)):
        x = T.tensor(x0)
        target = T.tensor(onehot0.argmax(axis=1)) if indices else T.tensor(onehot0)
        params = {k: T.tensor(v, requires_grad=True) for k, v in params0.items()}

        def forward(T=T, x=x, target=target, params=params):
            return model(T, x, target, params)

        def step(forward=forward, params=params):
            for param in params.values():
                param.grad = None
            loss = forward()
            loss.backward()
            return loss

        def loss_and_gradients(step=step, params=params):
            loss = step()
            return loss.item(), {k: v.grad.numpy() for k, v in params.items()}

        result[name] = (forward, step, loss_and_gradients)

    def numpy_step():
        loss, saved = numpy_forward(x0, onehot0, params0, transposed)
        return loss, numpy_backward(x0, onehot0, params0, saved, transposed)

    result["NumPy by hand"] = (
        lambda: numpy_forward(x0, onehot0, params0, transposed),
        numpy_step,
        numpy_step,
    )
    if style == "addmm":
        result[OP_BY_OP] = (
            lambda: numpy_forward(x0, onehot0, params0),
            lambda: numpy_op_by_op(x0, onehot0, params0),
            lambda: numpy_op_by_op(x0, onehot0, params0),
        )
        result[MINIMAL] = _minimal_tape_engine(x0, onehot0, params0)
    return result


OP_BY_OP = "NumPy, op by op"


def numpy_op_by_op(x, onehot, p):
    """The NumPy work an engine does for ``model_loss``, without the engine: each forward op and
    each backward formula as a separate NumPy call (log-softmax's own backward, the mean's and
    the sum's broadcasts), where the hand-written step fuses softmax and one-hot into one line.
    Its time over NumPy by hand is what the unfused graph itself costs."""
    z1 = x @ p["W1"]
    z1 += p["b1"]
    hidden = np.maximum(z1, 0)
    logits = hidden @ p["W2"]
    logits += p["b2"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    row_sums = (log_probs * onehot).sum(axis=1)
    loss = -(np.add.reduce(row_sums, axis=None) / row_sums.size)
    grad = -np.ones((), np.float32)  # NegBackward0 of the seed
    grad = np.broadcast_to(grad / row_sums.size, row_sums.shape)  # MeanBackward0
    grad = np.broadcast_to(grad[:, None], log_probs.shape)  # SumBackward1
    grad = grad * onehot  # MulBackward0
    grad = grad - np.exp(log_probs) * grad.sum(axis=1, keepdims=True)  # LogSoftmaxBackward0
    grads = {"b2": np.add.reduce(grad, axis=0), "W2": hidden.T @ grad}  # AddmmBackward0
    grad = (grad @ p["W2"].T) * (hidden > 0)  # ... and ReluBackward0
    grads["b1"] = np.add.reduce(grad, axis=0)
    grads["W1"] = x.T @ grad  # AddmmBackward0 (x needs no gradient)
    return loss, grads


MINIMAL = "minimal tape engine"


def _minimal_tape_engine(x0, onehot0, params0):
    """The reference row: minimal_tape.py, the least Python any tape engine runs."""
    x = minimal_tape.Value(x0)
    params = {k: minimal_tape.Value(v) for k, v in params0.items()}

    def step():
        for param in params.values():
            param.grad = None
        loss = minimal_tape.model_loss(x, onehot0, params)
        minimal_tape.backward(loss)
        return loss

    def loss_and_gradients():
        loss = step()
        return float(loss.data), {k: v.grad for k, v in params.items()}

    return (lambda: minimal_tape.model_loss(x, onehot0, params), step, loss_and_gradients)


def run(style="addmm", repeats=harness.REPEATS):
    """Check that the engines agree, time them, and return the results as Markdown."""
    candidates = engines(style)
    ref_loss, ref_grads = candidates["NumPy by hand"][2]()
    for name in [n for n in candidates if n != "NumPy by hand"]:
        loss, grads = candidates[name][2]()
        harness.same(f"mlp ({style}) {name} loss", loss, ref_loss)
        for k in ref_grads:
            harness.same(f"mlp ({style}) {name} grad {k}", grads[k], ref_grads[k])

    with harness.one_thread(), harness.OthersLoad() as load:
        forward = harness.time_interleaved(
            {name: fns[0] for name, fns in candidates.items()}, repeats
        )
        full = harness.time_interleaved({name: fns[1] for name, fns in candidates.items()}, repeats)

    nbgrad_time = full["nbgrad"].best
    numpy_time, torch_time = full["NumPy by hand"].best, full["PyTorch"].best
    verdict = (
        f"nbgrad/NumPy by hand = {nbgrad_time / numpy_time:.2f} (target <= 1.15: "
        f"{'met' if nbgrad_time <= 1.15 * numpy_time else 'not met'}); "
        f"nbgrad/PyTorch = {nbgrad_time / torch_time:.2f} (target <= 1.00: "
        f"{'met' if nbgrad_time <= torch_time else 'not met'})"
    )
    if MINIMAL in full:
        floor = full[MINIMAL].best
        verdict += f"; NumPy op by op: {full[OP_BY_OP].best / numpy_time:.2f}x NumPy by hand"
        verdict += (
            f"; the minimal tape engine, the floor of any engine of its kind: "
            f"{floor / numpy_time:.2f}x NumPy by hand, {floor / torch_time:.2f}x PyTorch"
        )
    return {
        "title": f"MLP {IN}-{HIDDEN}-{OUT}, batch {BATCH}, float32, softmax cross-entropy, "
        + (
            "written with addmm, relu, log_softmax, mul, sum, mean"
            if style == "addmm"
            else "written with nn.functional (linear, relu, cross_entropy)"
        ),
        "table": harness.comparison_table(
            forward, full, 1e3, "ms", baselines=("NumPy by hand", "PyTorch")
        ),
        "verdict": verdict,
        "others_load": load.fraction,
    }


def main():
    parser = argparse.ArgumentParser(description="MLP forward + backward benchmark")
    parser.add_argument("--style", choices=sorted(STYLES), default="addmm")
    style = parser.parse_args().style
    if not has_style(style):
        raise SystemExit(f"this nbgrad has no nn.functional: --style {style} cannot run")
    print(harness.PINNING)
    result = run(style)
    harness.print_result(result)


if __name__ == "__main__":
    main()
