"""Conv2d forward and backward: batch 32, 1x28x28 images, 16 output channels, 3x3 kernel, float32.

Three engines compute the same thing:

- nbgrad: ``nn.functional.conv2d`` (one ConvolutionBackward0 node; unfold with NumPy stride
  tricks, then one matrix multiply, see nbgrad/ops/nn_kernels.py);
- PyTorch eager on the CPU (its own convolution kernels);
- NumPy by hand: the same unfold + matmul written directly, forward and backward (the columns
  of the forward are kept for the weight gradient; the input gradient is col2im): the floor an
  engine built on NumPy can reach. Target: nbgrad within 1.2x of it.

Two cases: the first layer of a network (the images need no gradient: weight and bias only), and
a layer inside one (the input's gradient too). All engines must agree on the output and the
gradients before anything is timed.

Run from the repository root:  python -m benchmarks.conv
"""

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view

import nbgrad
from benchmarks import harness

BATCH, IN_CHANNELS, SIZE, OUT_CHANNELS, KERNEL = 32, 1, 28, 16, 3
TARGET = 1.2  # nbgrad / NumPy by hand, forward + backward


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, IN_CHANNELS, SIZE, SIZE)).astype(np.float32)
    weight = (rng.standard_normal((OUT_CHANNELS, IN_CHANNELS, KERNEL, KERNEL)) / 3).astype(
        np.float32
    )
    bias = rng.standard_normal(OUT_CHANNELS).astype(np.float32)
    out_size = SIZE - KERNEL + 1
    grad_out = rng.standard_normal((BATCH, OUT_CHANNELS, out_size, out_size)).astype(np.float32)
    return x, weight, bias, grad_out


# --- NumPy by hand ---------------------------------------------------------------------------


def numpy_forward(x, weight, bias):
    """Unfold into columns (N, C*k*k, L), one batched matmul, add the bias."""
    n, c, h, w = x.shape
    k = weight.shape[-1]
    oh, ow = h - k + 1, w - k + 1
    windows = sliding_window_view(x, (k, k), axis=(2, 3))  # (n, c, oh, ow, k, k), no copy
    columns = windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * k * k, oh * ow)
    out = np.matmul(weight.reshape(weight.shape[0], -1), columns)
    out = out.reshape(n, weight.shape[0], oh, ow)
    out += bias[:, None, None]
    return out, columns


def numpy_backward(grad_out, x, weight, columns, input_grad):
    """Weight and bias gradients from the kept columns; the input's by col2im."""
    n, oc, oh, ow = grad_out.shape
    k = weight.shape[-1]
    grads = grad_out.reshape(n, oc, oh * ow)
    grad_weight = np.matmul(grads, columns.transpose(0, 2, 1)).sum(axis=0).reshape(weight.shape)
    grad_bias = grads.sum(axis=(0, 2))
    if not input_grad:
        return grad_weight, grad_bias, None
    taps = np.matmul(weight.reshape(oc, -1).T, grads).reshape(n, x.shape[1], k, k, oh, ow)
    grad_x = np.zeros_like(x)
    for i in range(k):
        for j in range(k):
            grad_x[:, :, i : i + oh, j : j + ow] += taps[:, :, i, j]
    return grad_weight, grad_bias, grad_x


# --- the three engines -------------------------------------------------------------------------


def engines(input_grad):
    """``name -> (forward, forward_and_backward, output_and_gradients)`` on the same data."""
    x0, weight0, bias0, grad0 = make_data()
    result = {}
    for name, T in (("nbgrad", nbgrad), ("PyTorch", torch)):
        x = T.tensor(x0, requires_grad=input_grad)
        weight = T.tensor(weight0, requires_grad=True)
        bias = T.tensor(bias0, requires_grad=True)
        grad_out = T.tensor(grad0)
        leaves = (weight, bias, x) if input_grad else (weight, bias)

        def forward(T=T, x=x, weight=weight, bias=bias):
            return T.nn.functional.conv2d(x, weight, bias)

        def step(forward=forward, leaves=leaves, grad_out=grad_out):
            for leaf in leaves:
                leaf.grad = None
            out = forward()
            out.backward(grad_out)
            return out

        def results(step=step, leaves=leaves):
            out = step()
            return [out.detach().numpy()] + [leaf.grad.numpy() for leaf in leaves]

        result[name] = (forward, step, results)

    def numpy_step():
        out, columns = numpy_forward(x0, weight0, bias0)
        return out, numpy_backward(grad0, x0, weight0, columns, input_grad)

    def numpy_results():
        out, grads = numpy_step()
        return [out] + [g for g in grads if g is not None]

    result["NumPy by hand"] = (lambda: numpy_forward(x0, weight0, bias0), numpy_step, numpy_results)
    return result


def run(input_grad, repeats=harness.REPEATS):
    candidates = engines(input_grad)
    reference = candidates["NumPy by hand"][2]()
    for name in ("nbgrad", "PyTorch"):
        for i, (mine, real) in enumerate(zip(candidates[name][2](), reference)):
            harness.same(f"conv2d {name} result {i}", mine, real, rtol=1e-4, atol=2e-3)

    with harness.one_thread(), harness.OthersLoad() as load:
        forward = harness.time_interleaved({n: fns[0] for n, fns in candidates.items()}, repeats)
        full = harness.time_interleaved({n: fns[1] for n, fns in candidates.items()}, repeats)

    ours, by_hand = full["nbgrad"].best, full["NumPy by hand"].best
    verdict = (
        f"nbgrad/NumPy by hand = {ours / by_hand:.2f} (target <= {TARGET}: "
        f"{'met' if ours <= TARGET * by_hand else 'not met'}); "
        f"nbgrad/PyTorch = {ours / full['PyTorch'].best:.2f}"
    )
    case = "input needs a gradient too" if input_grad else "first layer: weight and bias grads"
    return {
        "title": f"Conv2d {IN_CHANNELS}->{OUT_CHANNELS} channels, {KERNEL}x{KERNEL}, batch {BATCH} "
        f"of {SIZE}x{SIZE}, float32 ({case})",
        "table": harness.comparison_table(
            forward, full, 1e3, "ms", baselines=("NumPy by hand", "PyTorch")
        ),
        "verdict": verdict,
        "others_load": load.fraction,
    }


def main():
    print(harness.PINNING)
    for input_grad in (False, True):
        result = run(input_grad)
        harness.print_result(result)


if __name__ == "__main__":
    main()
