"""nbgrad.datasets.digits(): scikit-learn's 8x8 digits, as tensors."""

import sys

import numpy as np
import pytest

import nbgrad


def test_digits_shapes_dtypes_and_values():
    images, labels = nbgrad.datasets.digits()
    assert images.shape == (1797, 64) and images.dtype is nbgrad.float32
    assert labels.shape == (1797,) and labels.dtype is nbgrad.int64
    assert images._data.min() == 0.0 and images._data.max() == 1.0
    assert sorted(set(labels.tolist())) == list(range(10))
    assert np.bincount(labels._data).min() >= 170  # about 180 of each digit
    assert not images.requires_grad


def test_digits_as_images_and_dtype():
    images, labels = nbgrad.datasets.digits(as_images=True, dtype=nbgrad.float64)
    assert images.shape == (1797, 1, 8, 8) and images.dtype is nbgrad.float64
    flat, _ = nbgrad.datasets.digits()
    np.testing.assert_allclose(images._data.reshape(1797, 64), flat._data, rtol=1e-6)
    # The first digit of scikit-learn's set is a 0: a ring, dark in the middle.
    first = images._data[0, 0]
    assert labels[0].item() == 0 and first[3:5, 3:5].mean() < first.mean()


def test_digits_without_scikit_learn_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match=r'pip install "nbgrad\[tutorials\]"'):
        nbgrad.datasets.digits()
