"""Turning a list of samples into a batch (``default_collate``) and one sample's NumPy parts into
tensors (``default_convert``), with PyTorch's rules.

``default_collate`` keeps the structure of a sample and stacks what is inside it, so a batch of
``(image, label)`` tuples becomes ``[images, labels]``:

- tensors: stacked along a new first dimension
- NumPy arrays and NumPy scalars: made tensors (same dtype), then stacked
- Python floats: a float64 tensor; ints: int64; bools: bool
- strings and bytes: left as they are, in the list (or tuple) that holds them
- mappings: the same keys, each collated (the mapping's own type where it can be copied)
- namedtuples: the same namedtuple type; other tuples: a list; lists and other sequences: the
  same type, collated position by position
"""

import collections.abc
import copy
import re

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.creation import as_tensor, tensor
from nbgrad.ops.functions import stack

# NumPy dtypes of strings, bytes and Python objects, which make no tensor.
_NON_NUMERIC_DTYPE = re.compile(r"[SaUO]")

_UNSUPPORTED = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def default_collate(batch):
    """One batch from a list of samples (see the module's docstring for the rules)."""
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(batch, 0)
    if isinstance(first, np.ndarray):
        if _NON_NUMERIC_DTYPE.search(first.dtype.str):
            raise TypeError(_UNSUPPORTED.format(first.dtype))
        return default_collate([as_tensor(array) for array in batch])
    # Before float and int: np.float64 is a float and np.bool_ is not an int.
    if isinstance(first, (np.bool_, np.number, np.object_)):
        return as_tensor(batch)
    if isinstance(first, float):
        return tensor(batch, dtype=dtypes.float64)
    if isinstance(first, int):  # bools too: a bool tensor
        return tensor(batch)
    if isinstance(first, (str, bytes)):
        return batch
    if isinstance(first, collections.abc.Mapping):
        collated = {key: default_collate([sample[key] for sample in batch]) for key in first}
        return _same_mapping(first, collated)
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple
        return type(first)(*(default_collate(field) for field in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        if any(len(sample) != len(first) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # Each position's values go on as a tuple (a batch of strings stays one, as in PyTorch).
        collated = [default_collate(position) for position in zip(*batch)]
        if isinstance(first, tuple):
            return collated
        return _same_sequence(first, collated)
    raise TypeError(_UNSUPPORTED.format(type(first)))


def default_convert(data):
    """A sample with its NumPy arrays and scalars made tensors, for ``batch_size=None``."""
    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        if isinstance(data, np.ndarray) and _NON_NUMERIC_DTYPE.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(item) for item in data))
    if isinstance(data, tuple):
        return [default_convert(item) for item in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_sequence(data, [default_convert(item) for item in data])
    return data


def _same_mapping(original, values):
    """``values`` (a dict) in the type of ``original`` where that type can be made; else a dict."""
    try:
        if isinstance(original, collections.abc.MutableMapping):
            # A copy keeps what the constructor may not take, such as a defaultdict's factory.
            clone = copy.copy(original)
            clone.update(values)
            return clone
        return type(original)(values)
    except TypeError:
        return values


def _same_sequence(original, items):
    try:
        if isinstance(original, collections.abc.MutableSequence):
            clone = copy.copy(original)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(original)(items)
    except TypeError:
        return items
