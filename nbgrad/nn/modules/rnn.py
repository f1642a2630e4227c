"""Recurrent layers: RNNCell, LSTMCell, GRUCell and the multi-layer RNN, LSTM and GRU.

Each is PyTorch's CPU decomposition (ATen's ``RNN.cpp``) into table ops, so that the graph is
PyTorch's node for node: a cell is two ``linear`` (AddmmBackward0) summed, split into gates
(UnsafeSplitBackward0) and combined by sigmoid, tanh, mul and add. A layer first applies the
input weights to the whole sequence at once, then unbinds it over time (UnbindBackward0) and runs
the cell step by step; the outputs are stacked (StackBackward0), so are the final hidden states
of the layers. Bidirectional layers run a second cell over the reversed sequence and concatenate
(CatBackward0). batch_first transposes in and out (TransposeBackward0).

PyTorch's float32 LSTM without projections runs oneDNN's fused kernel instead, one
``MkldnnRnnLayerBackward0`` node per layer and direction, and so does nbgrad's
(``LSTM._run_onednn``, the op of nbgrad/ops/rnn_kernels.py); packed sequences, projections and
float64 take the decomposition, as in PyTorch.
"""

import math
import numbers
import os
import sys
import warnings

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.nn import functional as F
from nbgrad.nn import init
from nbgrad.nn.modules.module import Module
from nbgrad.nn.parameter import Parameter
from nbgrad.nn.utils.rnn import PackedSequence
from nbgrad.ops import creation, rnn_kernels
from nbgrad.ops import functions as ops
from nbgrad.ops.derivatives import OPS
from nbgrad.warn_once import warn_once

# --- the multi-output shape ops the decomposition uses ----------------------------------------


def _unbind(x, dim=0):
    return ops.unbind(x, dim)


def _unsafe_chunk(x, chunks, dim):
    """ATen's unsafe_chunk: one UnsafeSplitBackward0 node for all the pieces."""
    return run_op(OPS["unsafe_split"], (x,), (x.shape[dim] // chunks, dim))


# --- cells (ATen's SimpleCell, LSTMCell, GRUCell) --------------------------------------------


def _gates(input, hidden, w_ih, w_hh, b_ih, b_hh, pre_computed):
    """``linear_hh(hidden) + linear_ih(input)`` (the input already projected if pre_computed)."""
    projected = input if pre_computed else F.linear(input, w_ih, b_ih)
    return F.linear(hidden, w_hh, b_hh) + projected


def rnn_cell(input, hidden, params, nonlinearity, pre_computed=False):
    gates = _gates(input, hidden, *params, pre_computed)
    return ops.tanh(gates) if nonlinearity == "tanh" else F.relu(gates)


def lstm_cell(input, hidden, params, pre_computed=False):
    """``params`` is (w_ih, w_hh, b_ih, b_hh), and w_hr after them for an LSTM with proj_size:
    the hidden state is then projected, ``h W_hr^T`` (MmBackward0)."""
    hx, cx = hidden
    gates = _gates(input, hx, *params[:4], pre_computed)
    ingate, forgetgate, cellgate, outgate = _unsafe_chunk(gates, 4, 1)
    ingate, forgetgate = ops.sigmoid(ingate), ops.sigmoid(forgetgate)
    cellgate, outgate = ops.tanh(cellgate), ops.sigmoid(outgate)
    cy = forgetgate * cx + ingate * cellgate
    hy = outgate * ops.tanh(cy)
    if len(params) > 4:
        hy = ops.matmul(hy, params[4].t())
    return hy, cy


def gru_cell(input, hidden, params, pre_computed=False):
    w_ih, w_hh, b_ih, b_hh = params
    igates = _unsafe_chunk(input if pre_computed else F.linear(input, w_ih, b_ih), 3, 1)
    hgates = _unsafe_chunk(F.linear(hidden, w_hh, b_hh), 3, 1)
    reset_gate = ops.sigmoid(hgates[0] + igates[0])
    input_gate = ops.sigmoid(hgates[1] + igates[1])
    new_gate = ops.tanh(igates[2] + hgates[2] * reset_gate)
    return (hidden - new_gate) * input_gate + new_gate


def _hidden_narrow(hidden, start, length):
    """Rows [start, start + length) of a hidden state, or of both of an LSTM's (h, c)."""
    if isinstance(hidden, tuple):
        return tuple(ops.narrow(h, 0, start, length) for h in hidden)
    return ops.narrow(hidden, 0, start, length)


def _hidden_cat(hiddens):
    if isinstance(hiddens[0], tuple):
        return tuple(ops.cat(list(parts), 0) for parts in zip(*hiddens))
    return ops.cat(list(hiddens), 0)


def _hidden_output(hidden):
    return hidden[0] if isinstance(hidden, tuple) else hidden


def _permute_hidden(hidden, permutation):
    """PyTorch's permute_hidden: the batch (dim 1) reordered, for a packed batch that was sorted."""
    if permutation is None:
        return hidden
    if isinstance(hidden, tuple):
        return tuple(ops.index_select(h, 1, permutation) for h in hidden)
    return ops.index_select(hidden, 1, permutation)


def _warn_projection_once():
    """PyTorch's float32 LSTM with proj_size cannot run oneDNN's kernel, and says so once per
    process (from C++: the warning points at the caller's line)."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frame, level = sys._getframe(0), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    warn_once(
        "LSTM with projections is not supported with oneDNN. Using default implementation.",
        stacklevel=level,
    )


# --- cell modules -----------------------------------------------------------------------------


class RNNCellBase(Module):
    _gate_count = 1

    def __init__(self, input_size, hidden_size, bias, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = self._gate_count * hidden_size
        self.weight_ih = Parameter(creation.empty(gates, input_size, dtype=dtype))
        self.weight_hh = Parameter(creation.empty(gates, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(creation.empty(gates, dtype=dtype))
            self.bias_hh = Parameter(creation.empty(gates, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias uniform in +-1/sqrt(hidden_size), as PyTorch's."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def _params(self):
        return (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)

    def _check_input(self, input, hx):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and isinstance(hx, Tensor) and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")

    def _check_sizes(self, input, hiddens):
        if input.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[1]} expected "
                f"{self.input_size}"
            )
        for i, hidden in enumerate(hiddens):
            if hidden.shape[0] != input.shape[0]:
                raise RuntimeError(
                    f"Input batch size {input.shape[0]} doesn't match hidden{i} batch size "
                    f"{hidden.shape[0]}"
                )
            if hidden.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{i} has inconsistent hidden_size: got {hidden.shape[1]}, expected "
                    f"{self.hidden_size}"
                )

    def _zeros(self, input):
        return creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        self._check_input(input, hx)
        batched = input.dim() == 2
        if not batched:
            input = ops.unsqueeze(input, 0)
        hx = self._zeros(input) if hx is None else (hx if batched else ops.unsqueeze(hx, 0))
        self._check_sizes(input, (hx,))
        out = rnn_cell(input, hx, self._params(), self.nonlinearity)
        return out if batched else ops.squeeze(out, 0)


class LSTMCell(RNNCellBase):
    """The LSTM step: input, forget, cell and output gates from one ``(4 * hidden)`` projection;
    returns ``(h', c')``."""

    _gate_count = 4

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        self._check_input(input, None)
        if hx is not None:
            if isinstance(hx, Tensor):
                raise TypeError(
                    "lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor"
                )
            for h in hx:
                if h.dim() not in (1, 2):
                    raise ValueError(
                        f"LSTMCell: Expected hx[0] to be 1D or 2D, got {h.dim()}D instead"
                    )
        batched = input.dim() == 2
        if not batched:
            input = ops.unsqueeze(input, 0)
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        elif not batched:
            hx = (ops.unsqueeze(hx[0], 0), ops.unsqueeze(hx[1], 0))
        self._check_sizes(input, hx)
        hy, cy = lstm_cell(input, tuple(hx), self._params())
        return (hy, cy) if batched else (ops.squeeze(hy, 0), ops.squeeze(cy, 0))


class GRUCell(RNNCellBase):
    """The GRU step: reset, update and new gates from ``(3 * hidden)`` projections."""

    _gate_count = 3

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        self._check_input(input, hx)
        batched = input.dim() == 2
        if not batched:
            input = ops.unsqueeze(input, 0)
        hx = self._zeros(input) if hx is None else (hx if batched else ops.unsqueeze(hx, 0))
        self._check_sizes(input, (hx,))
        out = gru_cell(input, hx, self._params())
        out._version_counter.value = 2  # PyTorch's GRUCell finishes its output in place twice
        return out if batched else ops.squeeze(out, 0)


# --- multi-layer modules ------------------------------------------------------------------------


class RNNBase(Module):
    """Layers of cells over a sequence (T, N, input_size), or (N, T, input_size) with
    ``batch_first``, or unbatched (T, input_size)."""

    _gate_count = 1

    def __init__(
        self,
        mode,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if (
            not isinstance(dropout, numbers.Number)
            or not 0 <= dropout <= 1
            or isinstance(dropout, bool)
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects num_layers greater than 1, but got dropout="
                f"{dropout} and num_layers={num_layers}",
                UserWarning,
                stacklevel=2,
            )
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gates = self._gate_count * hidden_size
        directions = 2 if bidirectional else 1
        # With proj_size, an LSTM's hidden state (what the next step and layer read) is
        # projected from hidden_size to proj_size by weight_hr.
        state_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else state_size * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [
                    (f"weight_ih_l{layer}{suffix}", (gates, layer_input)),
                    (f"weight_hh_l{layer}{suffix}", (gates, state_size)),
                ]
                if bias:
                    shapes += [
                        (f"bias_ih_l{layer}{suffix}", (gates,)),
                        (f"bias_hh_l{layer}{suffix}", (gates,)),
                    ]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, Parameter(creation.empty(*shape, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self):
        """PyTorch packs the weights for cuDNN; nothing to do here."""

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        per_direction = (4 if self.bias else 2) + (1 if self.proj_size > 0 else 0)
        weights = self._flat_weights
        return [weights[i : i + per_direction] for i in range(0, len(weights), per_direction)]

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text

    # --- forward --------------------------------------------------------------------------

    def _layer_params(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        names = (f"weight_ih_l{layer}", f"weight_hh_l{layer}", f"bias_ih_l{layer}",
                 f"bias_hh_l{layer}")  # fmt: skip
        params = tuple(getattr(self, n + suffix, None) if self.bias or "weight" in n else None
                       for n in names)  # fmt: skip
        if self.proj_size > 0:
            params += (getattr(self, f"weight_hr_l{layer}{suffix}"),)
        return params

    def _cell(self, input, hidden, params):
        raise NotImplementedError

    def _run_direction(self, input, hidden, params, reverse):
        """ATen's FullLayer (or ReversedFullLayer): project the whole sequence, then step."""
        projected = F.linear(input, params[0], params[2])
        steps = _unbind(projected, 0)
        outputs = [None] * len(steps)
        order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
        for t in order:
            hidden = self._cell(steps[t], hidden, params)
            outputs[t] = hidden[0] if isinstance(hidden, tuple) else hidden
        return ops.stack(outputs, 0), hidden

    # --- packed input (ATen's PackedLayer, ReversedPackedLayer) --------------------------------

    def _run_packed_direction(self, data, batch_sizes, hidden, params, reverse):
        """One direction over packed ``data``: step t takes the next batch_sizes[t] rows. Going
        forward, the states of sequences that have ended are sliced off the hidden state
        (SliceBackward0) and kept; going backward, they join it as their sequences start
        (CatBackward0). Returns (the steps' outputs concatenated, the final states)."""
        projected = F.linear(data, params[0], params[2])
        outputs = []
        if not reverse:
            offset, last, ended = 0, batch_sizes[0], []
            for size in batch_sizes:
                step = ops.narrow(projected, 0, offset, size)
                offset += size
                if size < last:
                    ended.append(_hidden_narrow(hidden, size, last - size))
                    hidden = _hidden_narrow(hidden, 0, size)
                last = size
                hidden = self._cell(step, hidden, params)
                outputs.append(_hidden_output(hidden))
            ended.append(hidden)
            return ops.cat(outputs, 0), _hidden_cat(ended[::-1])
        offset, last = data.shape[0], batch_sizes[-1]
        initial, hidden = hidden, _hidden_narrow(hidden, 0, last)
        for size in reversed(batch_sizes):
            if size > last:
                hidden = _hidden_cat([hidden, _hidden_narrow(initial, last, size - last)])
            step = ops.narrow(projected, 0, offset - size, size)
            offset -= size
            last = size
            hidden = self._cell(step, hidden, params)
            outputs.append(_hidden_output(hidden))
        return ops.cat(outputs[::-1], 0), hidden

    def _run_packed(self, data, batch_sizes, hiddens):
        """Every layer over packed data (ATen's packed layer stack): returns (data, finals)."""
        directions = 2 if self.bidirectional else 1
        sizes = [int(n) for n in batch_sizes._data]
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                out, final = self._run_packed_direction(
                    data,
                    sizes,
                    hiddens[layer * directions + direction],
                    self._layer_params(layer, direction),
                    direction == 1,
                )
                outputs.append(out)
                finals.append(final)
            data = outputs[0] if directions == 1 else ops.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                data = F.dropout(data, self.dropout, True)
        return data, finals

    def _check_packed(self, data, batch_sizes):
        """PyTorch's check_input for packed data (2-d rows) and the expected hidden shape."""
        if data.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.dim()}")
        if data.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                f"{data.shape[-1]}"
            )

    def _packed_hidden_shape(self, batch_sizes, size=None):
        directions = 2 if self.bidirectional else 1
        batch = int(batch_sizes._data[0])
        return (self.num_layers * directions, batch, size or self.hidden_size)

    def _check_forward(self, input):
        name = type(self).__name__
        if input.dim() not in (2, 3):
            word = " tensor" if name == "RNN" else ""
            raise ValueError(
                f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{word} instead"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                f"{input.shape[-1]}"
            )

    def _check_hidden(self, hidden, expected, message="Expected hidden size {}, got {}"):
        if tuple(hidden.shape) != expected:
            raise RuntimeError(message.format(expected, list(hidden.shape)))

    def _run(self, input, hiddens):
        """Run every layer; ``hiddens`` lists each (layer, direction)'s initial state."""
        directions = 2 if self.bidirectional else 1
        if self.batch_first:
            input = ops.transpose(input, 0, 1)
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                params = self._layer_params(layer, direction)
                out, final = self._run_direction(
                    input, hiddens[layer * directions + direction], params, direction == 1
                )
                outputs.append(out)
                finals.append(final)
            input = outputs[0] if directions == 1 else ops.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                input = F.dropout(input, self.dropout, True)
        if self.batch_first:
            # ATen transposes RNN and GRU outputs back in place, LSTM's out of place.
            if self.mode == "LSTM":
                input = ops.transpose(input, 0, 1)
            else:
                input = run_op(OPS["transpose_inplace"], (input,), (0, 1))
        return input, finals

    def _initial(self, input, hx, batched, size=None):
        directions = 2 if self.bidirectional else 1
        batch = input.shape[0 if self.batch_first else 1] if batched else 1
        shape = (self.num_layers * directions, batch, size or self.hidden_size)
        if hx is None:
            return creation.zeros(*shape, dtype=input.dtype), shape
        return hx, shape


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_(t-1) W_hh^T + b_hh)`` (or relu), per
    layer. Returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(mode, *args, **kwargs)

    def _cell(self, input, hidden, params):
        return rnn_cell(input, hidden, params, self.nonlinearity, pre_computed=True)

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = creation.zeros(*self._packed_hidden_shape(batch_sizes), dtype=data.dtype)
            else:
                hx = _permute_hidden(hx, sorted_indices)
            self._check_packed(data, batch_sizes)
            self._check_hidden(hx, self._packed_hidden_shape(batch_sizes))
            data, finals = self._run_packed(data, batch_sizes, _unbind(hx, 0))
            h_n = ops.stack(finals, 0)
            packed = PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)
            return packed, _permute_hidden(h_n, unsorted_indices)
        self._check_forward(input)
        batched = input.dim() == 3
        if not batched:
            # PyTorch adds the batch dim where batch_first says it is.
            input = ops.unsqueeze(input, 0 if self.batch_first else 1)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(
                        f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D "
                        "tensor"
                    )
                hx = ops.unsqueeze(hx, 1)
        elif hx is not None and hx.dim() != 3:
            raise RuntimeError(
                f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor"
            )
        hx, shape = self._initial(input, hx, True)
        self._check_hidden(hx, shape)
        output, finals = self._run(input, _unbind(hx, 0))
        h_n = ops.stack(finals, 0)
        if not batched:
            return ops.squeeze(output, 0 if self.batch_first else 1), ops.squeeze(h_n, 1)
        return output, h_n


class GRU(RNN):
    """Gated recurrent units, per layer. Returns ``(output, h_n)``."""

    _gate_count = 3

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if "nonlinearity" in kwargs:
            raise ValueError("The nonlinearity argument is not supported by GRU.")
        RNNBase.__init__(self, "GRU", *args, **kwargs)

    def _cell(self, input, hidden, params):
        return gru_cell(input, hidden, params, pre_computed=True)


class LSTM(RNNBase):
    """Long short-term memory, per layer. Returns ``(output, (h_n, c_n))``."""

    _gate_count = 4

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def _cell(self, input, hidden, params):
        return lstm_cell(input, hidden, params, pre_computed=True)

    def _run_onednn(self, input, h0, c0):
        """PyTorch's float32 LSTM (without projections) on the CPU: oneDNN's kernel, one call
        and one MkldnnRnnLayerBackward0 node per layer and direction (ATen's mkldnn_impl);
        each takes its initial state as ``hx[index]`` (SelectBackward0), and the final states
        are stacked. Returns ``(output, (h_n, c_n))``."""
        directions = 2 if self.bidirectional else 1
        if self.batch_first:
            input = ops.transpose(input, 0, 1)
        final_h, final_c = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                w_ih, w_hh, b_ih, b_hh = self._layer_params(layer, direction)[:4]
                if not self.bias:  # ATen passes zeros shaped as the weights, unused
                    b_ih = creation.zeros(*w_ih.shape, dtype=w_ih.dtype)
                    b_hh = creation.zeros(*w_hh.shape, dtype=w_hh.dtype)
                attrs = (direction == 1, (), rnn_kernels.LSTM_MODE, self.hidden_size,
                         self.num_layers, self.bias, self.bidirectional, self.batch_first,
                         self.training)  # fmt: skip
                # oneDNN reads the input contiguous: a batch_first one is cloned (CloneBackward0)
                input = input.contiguous()
                out, h, c = run_op(
                    OPS["mkldnn_rnn_layer"], (input, w_ih, w_hh, b_ih, b_hh, h0[index], c0[index]),
                    attrs,
                )  # fmt: skip
                outputs.append(out)
                final_h.append(h)
                final_c.append(c)
            input = outputs[0] if directions == 1 else ops.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                input = F.dropout(input, self.dropout, True)
        if self.batch_first:
            input = ops.transpose(input, 0, 1)
        return input, (ops.stack(final_h, 0), ops.stack(final_c, 0))

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            # PyTorch checks nothing here: a wrong size fails inside the layers.
            data, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = (
                    creation.zeros(
                        *self._packed_hidden_shape(batch_sizes, self.proj_size), dtype=data.dtype
                    ),
                    creation.zeros(*self._packed_hidden_shape(batch_sizes), dtype=data.dtype),
                )
            else:
                hx = _permute_hidden(tuple(hx), sorted_indices)
            pairs = list(zip(_unbind(hx[0], 0), _unbind(hx[1], 0)))
            data, finals = self._run_packed(data, batch_sizes, pairs)
            h_n = ops.stack([h for h, _ in finals], 0)
            c_n = ops.stack([c for _, c in finals], 0)
            packed = PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)
            return packed, _permute_hidden((h_n, c_n), unsorted_indices)
        self._check_forward(input)
        batched = input.dim() == 3
        if not batched:
            # PyTorch adds the batch dim where batch_first says it is.
            input = ops.unsqueeze(input, 0 if self.batch_first else 1)
        if hx is not None:
            if isinstance(hx, Tensor) or len(hx) != 2:
                raise RuntimeError("LSTM expects hx to be a tuple (h_0, c_0)")
            want = 3 if batched else 2
            for h in hx:
                if h.dim() != want:
                    raise RuntimeError(
                        f"For {'batched 3' if batched else 'unbatched 2'}-D input, hx and cx "
                        f"should also be {want}-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) "
                        "tensors"
                    )
            if not batched:
                hx = (ops.unsqueeze(hx[0], 1), ops.unsqueeze(hx[1], 1))
            h0, c0 = hx
            self._check_hidden(
                h0, self._initial(input, h0, True, self.proj_size)[1],
                "Expected hidden[0] size {}, got {}",
            )  # fmt: skip
            self._check_hidden(
                c0, self._initial(input, c0, True)[1], "Expected hidden[1] size {}, got {}"
            )
        else:
            h0 = self._initial(input, None, True, self.proj_size)[0]
            c0 = self._initial(input, None, True)[0]
        if self.proj_size > 0 and input.dtype == dtypes.float32:
            _warn_projection_once()
        if self.proj_size == 0 and input.dtype == dtypes.float32:
            output, (h_n, c_n) = self._run_onednn(input, h0, c0)
        else:
            pairs = list(zip(_unbind(h0, 0), _unbind(c0, 0)))
            output, finals = self._run(input, pairs)
            h_n = ops.stack([h for h, _ in finals], 0)
            c_n = ops.stack([c for _, c in finals], 0)
        if not batched:
            return ops.squeeze(output, 0 if self.batch_first else 1), (
                ops.squeeze(h_n, 1),
                ops.squeeze(c_n, 1),
            )
        return output, (h_n, c_n)
