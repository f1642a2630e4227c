"""Sequence helpers for recurrent layers. ``pad_sequence`` as ATen's: a tensor filled with
``padding_value``, each sequence copied into its slice (a chain of CopySlices nodes).

Packed sequences as PyTorch's: ``pack_padded_sequence`` is one table op
(PackPaddedSequenceBackward0, after an IndexSelectBackward0 that sorts the batch when
``enforce_sorted=False``); ``pad_packed_sequence`` is ATen's composition (a tensor of
``padding_value``, each run of steps with the same batch size copied in: SliceBackward0,
ViewBackward0 and CopySlices nodes); the recurrent layers take and return a ``PackedSequence``.
"""

from typing import NamedTuple

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd import grad_mode
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops import creation
from nbgrad.ops import functions as ops
from nbgrad.ops.derivatives import OPS

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def _map(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(_PackedSequenceFields):
    """A batch of sequences of different lengths, packed step by step: ``data`` holds the steps'
    rows one after another, ``batch_sizes`` (an int64 tensor) how many sequences each step has;
    ``sorted_indices`` / ``unsorted_indices`` map the batch to its sorted order and back (None
    when it came sorted)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch's older form: PackedSequence((data, batch_sizes))
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data.to(...)``; self when that changes nothing, as PyTorch's."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self, *args, **kwargs):
        return self.to("cpu", *args, **kwargs)

    def cuda(self, *args, **kwargs):
        return self.to("cuda", *args, **kwargs)

    def pin_memory(self):
        return type(self)(
            self.data.pin_memory(),
            self.batch_sizes,
            _map(self.sorted_indices, lambda t: t.pin_memory()),
            _map(self.unsorted_indices, lambda t: t.pin_memory()),
        )

    def double(self):
        return self.to(dtype=dtypes.float64)

    def float(self):
        return self.to(dtype=dtypes.float32)

    def half(self):
        return self.to(dtype=dtypes.float16)

    def long(self):
        return self.to(dtype=dtypes.int64)

    def int(self):
        return self.to(dtype=dtypes.int32)

    def short(self):
        return self.to(dtype=dtypes.int16)

    def char(self):
        return self.to(dtype=dtypes.int8)

    def byte(self):
        return self.to(dtype=dtypes.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    inverse = np.empty_like(permutation._data)
    inverse[permutation._data] = np.arange(permutation.numel())
    return creation.tensor(inverse)


def _lengths_array(lengths):
    if isinstance(lengths, Tensor):
        lengths = lengths.to(dtype=dtypes.int64)
    else:
        lengths = creation.as_tensor(lengths, dtype=dtypes.int64)
    return lengths


def _check_lengths(input, lengths, batch_first):
    """ATen's checks, in its order."""
    if lengths.dim() != 1:
        raise RuntimeError(
            "'lengths' argument should be a 1D CPU int64 tensor, but got "
            f"{lengths.dim()}D cpu Long tensor"
        )
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    batch_size = input.shape[0 if batch_first else 1]
    values = lengths._data
    if values.shape[0] != batch_size:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {values.shape[0]} "
            f"(batch_size={batch_size})"
        )
    if values[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    if np.any(values[:-1] < values[1:]):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
            "sidestep this requirement if you do not need ONNX exportability."
        )


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *)) of sequences of the given lengths."""
    lengths = _lengths_array(lengths)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = ops.sort(lengths, descending=True)
        input = ops.index_select(input, 0 if batch_first else 1, sorted_indices)
    if input.dim() < 2:  # ATen transposes (or reads dim 1) first
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    _check_lengths(input, lengths, batch_first)
    data, batch_sizes = run_op(
        OPS["pack_padded_sequence"],
        (input,),
        (tuple(int(n) for n in lengths._data), bool(batch_first)),
    )
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: (padded batch, lengths), in the batch's original order."""
    batch_sizes = sequence.batch_sizes._data
    max_length = batch_sizes.shape[0]
    if total_length is not None:
        if total_length < max_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_length}"
            )
        max_length = total_length
    data = sequence.data
    batch = int(batch_sizes[0])
    padded = _filled((max_length, batch, *data.shape[1:]), padding_value, data.dtype)
    # ATen copies each run of steps with the same batch size at once: rows of data viewed as
    # (steps, batch, *) into padded[first step:, :batch].
    offset, start = 0, 0
    for t in range(1, batch_sizes.shape[0] + 1):
        if t < batch_sizes.shape[0] and batch_sizes[t] == batch_sizes[start]:
            continue
        size = int(batch_sizes[start])
        rows = (t - start) * size
        block = ops.narrow(data, 0, offset, rows).view(t - start, size, *data.shape[1:])
        target = ops.narrow(ops.narrow(padded, 0, start, t - start), 1, 0, size)
        target.copy_(block)
        offset += rows
        start = t
    lengths = creation.tensor((batch_sizes[None, :] > np.arange(batch)[:, None]).sum(axis=1))
    if batch_first:
        padded = ops.transpose(padded, 0, 1)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        return (
            ops.index_select(padded, 0 if batch_first else 1, unsorted),
            creation.tensor(lengths._data[unsorted._data]),
        )
    return padded, lengths


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences (L_i, *): ``pack_padded_sequence(pad_sequence(sequences))``."""
    lengths = creation.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences in a padded batch, each cut to its length.

    As PyTorch does, a batch that is not batch_first is transposed in place (``transpose_``,
    TransposeBackward1): the caller's tensor becomes (batch, length, ...)."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    steps = creation.arange(padded_sequences.shape[1])
    # Iterating over a tensor in PyTorch unbinds it (one UnbindBackward0 node).
    sequences = ops.unbind(padded_sequences, 0)
    return [sequence[steps < length] for sequence, length in zip(sequences, lengths, strict=True)]


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def _filled(shape, value, dtype):
    """ATen's ``at::full`` inside these functions: an empty tensor filled in place, so its
    version is 1 before anything is copied in (PyTorch's padded results show it)."""
    with grad_mode.no_grad():
        out = creation.full(shape, value, dtype=dtype)
    out._version_counter.value += 1
    return out


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths (L_i, *) into (T, B, *) (or (B, T, *)), padded."""
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    shape = (
        (len(sequences), longest, *trailing)
        if batch_first
        else (longest, len(sequences), *trailing)
    )
    out = _filled(shape, padding_value, sequences[0].dtype)
    for i, sequence in enumerate(sequences):
        length = sequence.shape[0]
        start = longest - length if padding_side == "left" else 0
        row = ops.select(out, 0 if batch_first else 1, i)
        ops.narrow(row, 0, start, length).copy_(sequence)
    return out
