"""Samplers: the order in which a DataLoader visits a data set's indices, and its batches."""

import itertools

from nbgrad.ops import creation


class Sampler:
    """The base of samplers: iterating one yields indices (or lists of indices, for batches)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random order of the indices on every iteration (every epoch).

    Without replacement, each index comes once per ``len(data_source)`` samples; with
    ``replacement=True``, ``num_samples`` indices are drawn independently. The numbers come from
    nbgrad's generator (or ``generator``, an nbgrad Generator), not PyTorch's.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                "num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = creation.rng_of(self.generator)
        if self.replacement:
            # Drawn 32 at a time, as PyTorch draws them: a sampler of 10**10 samples (makemore's
            # endless loader) must not make them all at once.
            left = self.num_samples
            while left > 0:
                yield from rng.integers(0, n, min(32, left)).tolist()
                left -= 32
            return
        full_passes, rest = divmod(self.num_samples, n)
        for _ in range(full_passes):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:rest].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a new random order on every iteration."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        rng = creation.rng_of(self.generator)
        for i in rng.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size`` (the last one may be
    shorter, unless ``drop_last``)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
