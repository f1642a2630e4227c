"""Small array helpers of the shape functions."""

import numpy as np


def index_select_positions(repeats, size):
    """The positions ``repeat_interleave`` with a tensor of repeats reads, in order."""
    repeats = np.broadcast_to(np.asarray(repeats, np.int64).reshape(-1), (size,))
    if (repeats < 0).any():
        raise RuntimeError("repeats can not be negative")  # PyTorch's words for tensor repeats
    return np.repeat(np.arange(size), repeats)
