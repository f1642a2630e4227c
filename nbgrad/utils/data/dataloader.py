"""``DataLoader``: batches of a data set, in order or shuffled anew every epoch, as PyTorch's.

Worker processes are not started: whatever ``num_workers`` says, samples are loaded in the main
process, one batch when it is asked for (the batches are the same; PyTorch checks the same
arguments). ``worker_init_fn`` is therefore never called and ``get_worker_info()`` is None;
``pin_memory`` changes nothing (there is only the CPU).
"""

from nbgrad.utils.data.collate import default_collate, default_convert
from nbgrad.utils.data.dataset import IterableDataset
from nbgrad.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler

# Settings that define which batches come out: PyTorch refuses to change them afterwards.
_FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset")


def get_worker_info():
    """None: data is always loaded in the main process (see the module's docstring)."""
    return None


class DataLoader:
    """Iterating gives the batches of one epoch: ``collate_fn`` of ``batch_size`` samples each.

    ``shuffle=True`` visits the samples in a new order every epoch (nbgrad's generator, or
    ``generator``, an nbgrad Generator); ``batch_size=None`` gives the samples one by one, not
    batched; ``sampler`` / ``batch_sampler`` choose the indices (or index lists) yourself.
    """

    _initialized = False

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers=False,
        pin_memory_device="",
        in_order=True,
    ):
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError(
                "multiprocessing_context can only be used with multi-process loading "
                f"(num_workers > 0), but got num_workers={num_workers}"
            )
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if num_workers > 0 and prefetch_factor is None else prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator

        is_iterable = isinstance(dataset, IterableDataset)
        if is_iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if sampler is None and not is_iterable:
            if shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not is_iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._batches_samples() else default_convert
        self.collate_fn = collate_fn
        self._initialized = True

    def __setattr__(self, name, value):
        if self._initialized and name in _FIXED_AFTER_INIT:
            raise ValueError(
                f"{name} attribute should not be set after {type(self).__name__} is initialized"
            )
        super().__setattr__(name, value)

    def _batches_samples(self):
        """Whether samples are gathered into batches (not with ``batch_size=None``)."""
        if isinstance(self.dataset, IterableDataset):
            return self.batch_size is not None
        return self.batch_sampler is not None

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            yield from self._iterable_batches()
            return
        if not self._batches_samples():
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])
            return
        for indices in self.batch_sampler:
            yield self.collate_fn(self._fetch(indices))

    def _fetch(self, indices):
        # A data set can fetch a whole batch at once by defining __getitems__.
        if getattr(self.dataset, "__getitems__", None):
            return self.dataset.__getitems__(indices)
        return [self.dataset[index] for index in indices]

    def _iterable_batches(self):
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            samples = len(self.dataset)
            if self.batch_size is None:
                return samples
            if self.drop_last:
                return samples // self.batch_size
            return -(-samples // self.batch_size)
        if self._batches_samples():
            return len(self.batch_sampler)
        return len(self.sampler)


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers):
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to disable "
            "multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing.let num_workers > "
            "0 to enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _check_iterable_options(shuffle, sampler, batch_sampler):
    """An iterable data set decides its own order: no shuffle or samplers."""
    if shuffle not in {False, None}:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified shuffle option, but got "
            f"shuffle={shuffle}"
        )
    if sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified sampler option, but got "
            f"sampler={sampler}"
        )
    if batch_sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
            f"batch_sampler={batch_sampler}"
        )
