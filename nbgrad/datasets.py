"""Small real data sets for the tutorials, as nbgrad tensors."""

import collections

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.tensor import Tensor

Digits = collections.namedtuple("Digits", ["images", "labels"])

INSTALL_HINT = 'pip install "nbgrad[tutorials]"'


def digits(as_images=False, dtype=None):
    """The 1,797 hand-written digits (8x8 pixels, labels 0-9) that scikit-learn ships.

    Returns ``(images, labels)``: ``images`` float (the default dtype) in [0, 1], of shape
    (1797, 64), or (1797, 1, 8, 8) with ``as_images=True`` (for a Conv2d); ``labels`` int64 of
    shape (1797,). Needs scikit-learn (an optional extra, read offline from its package).
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as error:
        raise ImportError(
            "nbgrad.datasets.digits() reads the digits that scikit-learn ships; install the "
            f"tutorials extra: {INSTALL_HINT}"
        ) from error
    bunch = load_digits()
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    pixels = (bunch.images / 16.0).astype(dtype.numpy)  # the raw values are counts 0..16
    pixels = pixels.reshape(-1, 1, 8, 8) if as_images else pixels.reshape(-1, 64)
    return Digits(
        Tensor._make(np.ascontiguousarray(pixels)), Tensor._make(bunch.target.astype(np.int64))
    )
