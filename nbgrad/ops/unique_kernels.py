"""The kernels of torch.unique and torch.unique_consecutive, as ATen's CPU kernels give them:
sorted values (NaNs last, each its own value), the inverse indices and the counts as int64, an
empty int64 tensor for what was not asked for."""

import numpy as np

_NOTHING = np.empty(0, np.int64)


def _asked(asked, array):
    return array.astype(np.int64, copy=False) if asked else _NOTHING.copy()


def unique2(x, sorted, return_inverse, return_counts):  # noqa: A002
    """torch._unique2 (what torch.unique runs without dim). ATen's CPU kernel sorts whether or
    not ``sorted`` is asked for."""
    values, inverse, counts = np.unique(
        x.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False
    )
    return values, _asked(return_inverse, inverse.reshape(x.shape)), _asked(return_counts, counts)


def unique_sorted(x, sorted, return_inverse):  # noqa: A002
    """torch._unique: values and inverse indices."""
    values, inverse, _ = unique2(x, sorted, return_inverse, False)
    return values, inverse


def unique_dim(x, dim, sorted, return_inverse, return_counts):  # noqa: A002
    """Unique slices along ``dim``, sorted lexicographically."""
    if x.shape[dim] == 0:
        return x.copy(), _asked(return_inverse, _NOTHING), _asked(return_counts, _NOTHING)
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
    return values, _asked(return_inverse, inverse.reshape(-1)), _asked(return_counts, counts)


def unique_consecutive(x, return_inverse, return_counts, dim):
    """The first of each run of equal values (of equal slices along ``dim``), in order."""
    if dim is None:
        rows = x.reshape(-1, 1)
    else:
        rows = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
    starts = np.ones(rows.shape[0], bool)
    if rows.shape[0] > 1:  # (NaN differs from NaN, as in ATen)
        starts[1:] = np.any(rows[1:] != rows[:-1], axis=1)
    positions = np.flatnonzero(starts)
    inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(positions, rows.shape[0]))
    if dim is None:
        values = x.reshape(-1)[positions]
        inverse = inverse.reshape(x.shape)
    else:
        values = np.take(x, positions, axis=dim)
    return values, _asked(return_inverse, inverse), _asked(return_counts, counts)
