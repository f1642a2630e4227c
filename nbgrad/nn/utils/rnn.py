"""Sequence helpers for recurrent layers. ``pad_sequence`` as ATen's: a tensor filled with
``padding_value``, each sequence copied into its slice (a chain of CopySlices nodes)."""

from nbgrad.autograd import grad_mode
from nbgrad.ops import creation
from nbgrad.ops import functions as ops


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
    with grad_mode.no_grad():
        out = creation.full(shape, padding_value, dtype=sequences[0].dtype)
    for i, sequence in enumerate(sequences):
        length = sequence.shape[0]
        start = longest - length if padding_side == "left" else 0
        row = ops.select(out, 0 if batch_first else 1, i)
        ops.narrow(row, 0, start, length).copy_(sequence)
    return out
