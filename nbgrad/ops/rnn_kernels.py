"""One layer of an LSTM in one direction, as one op: PyTorch's ``mkldnn_rnn_layer``.

PyTorch runs a float32 LSTM on the CPU through oneDNN's fused kernel, one call per layer and
direction, and records one ``MkldnnRnnLayerBackward0`` node for it (float64, RNN and GRU run the
step-by-step decomposition of nbgrad/nn/modules/rnn.py instead). The node's backward is
backpropagation through time over the whole sequence. Here both are written out in NumPy
(``lstm_layer``, ``lstm_layer_backward``), and the backward once more in differentiable Tensor
operations (``lstm_layer_backward_tensors``) so that ``create_graph=True`` works through it.

The step, for gates ``i, f, g, o`` (input, forget, cell, output) split from one projection:

    gates = x_t W_ih^T + b_ih + h W_hh^T + b_hh
    i, f, o = sigmoid(...), g = tanh(...)
    c' = f * c + i * g
    h' = o * tanh(c')

oneDNN keeps what its backward needs in an opaque byte buffer, the op's fourth output
(``_saved_result3``, uint8); ours holds the gates' activations and the cell states, as float
bytes. Its length differs from oneDNN's (whose layout is its own).
"""

import numpy as np

LSTM_MODE = 2  # cuDNN's and oneDNN's number for an LSTM (RNN_RELU 0, RNN_TANH 1, GRU 3)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _steps(length, reverse):
    return range(length - 1, -1, -1) if reverse else range(length)


def lstm_layer(input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, has_biases):
    """``input`` (T, B, I), states (B, H) -> ([output (T, B, H), h_T, c_T], workspace)."""
    length, batch = input.shape[:2]
    hidden = hx.shape[-1]
    projected = input @ w_ih.T
    if has_biases:
        projected = projected + (b_ih + b_hh)
    activations = np.empty((length, batch, 4 * hidden), dtype=input.dtype)
    cells = np.empty((length, batch, hidden), dtype=input.dtype)
    output = np.empty((length, batch, hidden), dtype=input.dtype)
    h, c = hx, cx
    for t in _steps(length, reverse):
        gates = projected[t] + h @ w_hh.T
        i, f, g, o = np.split(gates, 4, axis=-1)
        i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        c = f * c + i * g
        h = o * np.tanh(c)
        activations[t] = np.concatenate([i, f, g, o], axis=-1)
        cells[t], output[t] = c, h
    workspace = np.concatenate([activations.ravel(), cells.ravel()]).view(np.uint8)
    return [output, np.ascontiguousarray(h), np.ascontiguousarray(c)], workspace


def _read_workspace(workspace, dtype, length, batch, hidden):
    values = workspace.view(dtype)
    split = length * batch * 4 * hidden
    activations = values[:split].reshape(length, batch, 4 * hidden)
    cells = values[split:].reshape(length, batch, hidden)
    return activations, cells


def lstm_layer_backward(input, w_ih, w_hh, hx, cx, output, grads, reverse, has_biases,
                        workspace):  # fmt: skip
    """The seven gradients (input, w_ih, w_hh, b_ih, b_hh, hx, cx) from the gradients of the
    three outputs (``grads``, None for an output that got none)."""
    length, batch = input.shape[:2]
    hidden = hx.shape[-1]
    activations, cells = _read_workspace(workspace, input.dtype, length, batch, hidden)
    grad_output, grad_h, grad_c = grads
    grad_h = np.zeros_like(hx) if grad_h is None else grad_h
    grad_c = np.zeros_like(cx) if grad_c is None else grad_c
    grad_input = np.empty_like(input)
    grad_w_ih, grad_w_hh = np.zeros_like(w_ih), np.zeros_like(w_hh)
    grad_bias = np.zeros(4 * hidden, dtype=input.dtype)
    order = list(_steps(length, reverse))
    for k in range(length - 1, -1, -1):
        t = order[k]
        h_before = hx if k == 0 else output[order[k - 1]]
        c_before = cx if k == 0 else cells[order[k - 1]]
        i, f, g, o = np.split(activations[t], 4, axis=-1)
        dh = grad_h if grad_output is None else grad_h + grad_output[t]
        tanh_c = np.tanh(cells[t])
        dc = grad_c + dh * o * (1 - tanh_c * tanh_c)
        dgates = np.concatenate(
            [dc * g * i * (1 - i), dc * c_before * f * (1 - f), dc * i * (1 - g * g),
             dh * tanh_c * o * (1 - o)], axis=-1)  # fmt: skip
        grad_input[t] = dgates @ w_ih
        grad_w_ih += dgates.T @ input[t]
        grad_w_hh += dgates.T @ h_before
        grad_bias += dgates.sum(0)
        grad_h = dgates @ w_hh
        grad_c = dc * f
    bias_grads = (grad_bias, grad_bias.copy()) if has_biases else (None, None)
    return grad_input, grad_w_ih, grad_w_hh, *bias_grads, grad_h, grad_c


def lstm_layer_backward_tensors(input, w_ih, w_hh, b_ih, b_hh, hx, cx, grads, reverse,
                                has_biases):  # fmt: skip
    """``lstm_layer_backward`` in differentiable Tensor operations: the forward is run again
    from the saved inputs (the workspace's bytes have no gradient), then the same recursion."""
    import nbgrad as nb

    length = input.shape[0]
    order = list(_steps(length, reverse))
    projected = nb.matmul(input, w_ih.t())
    if has_biases:
        projected = projected + (b_ih + b_hh)
    h, c = hx, cx
    states = []  # per position k: (h before, c before, i, f, g, o, c after)
    for t in order:
        gates = projected[t] + nb.matmul(h, w_hh.t())
        i, f, g, o = gates.chunk(4, -1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c_after = f * c + i * g
        states.append((h, c, i, f, g, o, c_after))
        h, c = o * c_after.tanh(), c_after
    grad_output, grad_h, grad_c = grads
    grad_h = nb.zeros_like(hx) if grad_h is None else grad_h
    grad_c = nb.zeros_like(cx) if grad_c is None else grad_c
    grad_inputs = [None] * length
    grad_w_ih = grad_w_hh = grad_bias = None
    for k in range(length - 1, -1, -1):
        t = order[k]
        h_before, c_before, i, f, g, o, c_after = states[k]
        dh = grad_h if grad_output is None else grad_h + grad_output[t]
        tanh_c = c_after.tanh()
        dc = grad_c + dh * o * (1 - tanh_c * tanh_c)
        dgates = nb.cat([dc * g * i * (1 - i), dc * c_before * f * (1 - f), dc * i * (1 - g * g),
                         dh * tanh_c * o * (1 - o)], -1)  # fmt: skip
        grad_inputs[t] = nb.matmul(dgates, w_ih)
        step_w_ih, step_w_hh = nb.matmul(dgates.t(), input[t]), nb.matmul(dgates.t(), h_before)
        step_bias = dgates.sum(0)
        if grad_w_ih is None:
            grad_w_ih, grad_w_hh, grad_bias = step_w_ih, step_w_hh, step_bias
        else:
            grad_w_ih, grad_w_hh = grad_w_ih + step_w_ih, grad_w_hh + step_w_hh
            grad_bias = grad_bias + step_bias
        grad_h = nb.matmul(dgates, w_hh)
        grad_c = dc * f
    bias_grads = (grad_bias, grad_bias) if has_biases else (None, None)
    return nb.stack(grad_inputs), grad_w_ih, grad_w_hh, *bias_grads, grad_h, grad_c


class _LastCall:
    """The backward's seven gradients come from one recursion, but the table asks for them one
    input at a time: the last call's results are kept while its arguments are the same
    objects (held here, so that their ids cannot be reused)."""

    def __init__(self, function):
        self.function = function
        self.arguments = None
        self.results = None

    def __call__(self, *arguments):
        known = self.arguments
        if (
            known is None
            or len(known) != len(arguments)
            or any(a is not b for a, b in zip(known, arguments))
        ):
            self.results = self.function(*arguments)
            self.arguments = arguments
        return self.results


def _array_backward(input, weight0, weight1, weight2, weight3, hx_, cx_, result0, result1,
                    result2, grad_output, grad_hy, grad_cy, reverse, mode, hidden_size,
                    num_layers, has_biases, train, bidirectional, batch_sizes, batch_first,
                    workspace):  # fmt: skip
    grads = (grad_output, grad_hy, grad_cy)
    return lstm_layer_backward(input, weight0, weight1, hx_, cx_, result0, grads, reverse,
                               has_biases, workspace)  # fmt: skip


def _tensor_backward(input, weight0, weight1, weight2, weight3, hx_, cx_, result0, result1,
                     result2, grad_output, grad_hy, grad_cy, reverse, mode, hidden_size,
                     num_layers, has_biases, train, bidirectional, batch_sizes, batch_first,
                     workspace):  # fmt: skip
    grads = (grad_output, grad_hy, grad_cy)
    return lstm_layer_backward_tensors(input, weight0, weight1, weight2, weight3, hx_, cx_, grads,
                                       reverse, has_biases)  # fmt: skip


_last_array_backward = _LastCall(_array_backward)
_last_tensor_backward = _LastCall(_tensor_backward)


# The formulas call PyTorch's name for it, with PyTorch's arguments (derivatives.yaml).
def mkldnn_rnn_layer_backward(*arguments):
    return _last_array_backward(*arguments)


# --- Tensor versions ---------------------------------------------------------------------------


def mkldnn_rnn_layer_backward_tensor(*arguments):
    return _last_tensor_backward(*arguments)


ARRAY_FUNCTIONS = {"mkldnn_rnn_layer_backward": mkldnn_rnn_layer_backward}


def tensor_namespace():
    return {"mkldnn_rnn_layer_backward": mkldnn_rnn_layer_backward_tensor}
