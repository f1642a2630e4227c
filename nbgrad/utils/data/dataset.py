"""Data sets: ``Dataset``, ``TensorDataset``, ``Subset``, ``ConcatDataset``, ``random_split``
and the streamed ``IterableDataset`` / ``ChainDataset``, as in torch.utils.data.

A map-style data set is anything with ``__getitem__(index)`` and ``__len__()``; the DataLoader
asks it for samples one index at a time (or for a whole batch through ``__getitems__``, if it
has one).
"""

import bisect
import itertools
import math
import warnings

from nbgrad.ops import creation


class Dataset:
    """The base of map-style data sets: subclasses define ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A data set read as a stream: subclasses define ``__iter__`` (and may define ``__len__``).

    The DataLoader batches what ``__iter__`` yields, in that order.
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """The samples of several iterable data sets, one after the other."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from dataset

    def __len__(self):
        if not all(isinstance(dataset, IterableDataset) for dataset in self.datasets):
            raise AssertionError("ChainDataset only supports IterableDataset")
        return sum(len(dataset) for dataset in self.datasets)


class TensorDataset(Dataset):
    """Sample ``i`` is ``(t[i] for t in tensors)``: the tensors share their first dimension."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        # Pass a whole batch on when the data set underneath can fetch batches itself.
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several data sets, one after the other (``a + b`` makes one)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(dataset, IterableDataset) for dataset in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][index - start]


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping ``Subset``s of the given lengths, in random order.

    ``lengths`` are sample counts adding up to ``len(dataset)``, or fractions adding up to 1: each
    split gets ``floor(len(dataset) * fraction)`` samples and the samples left over go one each
    to the splits in turn, from the first (PyTorch's rule). The order comes from
    ``nbgrad.randperm`` (the default generator, or ``generator``, an nbgrad Generator): repeatable
    with ``nbgrad.manual_seed``, but not the split PyTorch makes for the same seed.
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = creation.randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - length : end]) for end, length in zip(ends, lengths)]


def _lengths_from_fractions(total, fractions):
    lengths = []
    for i, fraction in enumerate(fractions):
        if fraction < 0 or fraction > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(total * fraction))
    for i in range(total - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(
                f"Length of split at index {i} is 0. This might result in an empty dataset.",
                stacklevel=3,
            )
    return lengths
