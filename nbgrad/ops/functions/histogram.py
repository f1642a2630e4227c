"""``torch.histogram``: counts of a float tensor's values in equal-width (or given) bins.

Not differentiable; the counts and edges are plain tensors (PyTorch marks them with a
``NotImplemented`` grad_fn when the input requires grad: README, differences).
"""

import collections

import numpy as np

from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.public import public

HistogramResult = collections.namedtuple("histogram", ["hist", "bin_edges"])


@public(function=True, method=True)
def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A001, A002
    values = input._data
    if values.dtype.kind != "f":
        name = {
            "int64": "Long",
            "int32": "Int",
            "int16": "Short",
            "int8": "Char",
            "uint8": "Byte",
            "bool": "Bool",
        }.get(values.dtype.name, values.dtype.name)
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{name}'")
    weights = None if weight is None else weight._data.ravel()
    if isinstance(bins, Tensor):
        edges = bins._data.astype(values.dtype)
    else:
        if bins <= 0:
            raise RuntimeError(
                f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0"
            )
        if range is not None:
            low, high = float(range[0]), float(range[1])
        elif values.size:
            low, high = float(values.min()), float(values.max())
        else:
            low, high = 0.0, 0.0
        if low > high:
            raise RuntimeError(
                "torch.histogramdd: min should not exceed max, but got min "
                f"{low:g} max {high:g} for dimension 0"  # C++ prints 1.0 as 1
            )
        if low == high:  # one value: PyTorch widens the range by 0.5 on each side
            low, high = low - 0.5, high + 0.5
        edges = np.linspace(low, high, bins + 1).astype(values.dtype)
    counts, _ = np.histogram(values.ravel(), bins=edges, weights=weights)
    counts = counts.astype(values.dtype)
    if density:
        total = counts.sum()
        counts = counts / (total * np.diff(edges)) if total else counts
    return HistogramResult(
        Tensor._make(np.asarray(counts, values.dtype)), Tensor._make(np.asarray(edges))
    )
