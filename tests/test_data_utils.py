"""nbgrad.utils.data against torch.utils.data: the same batches (values, dtypes, shapes, count)
from the same data sets, shuffling that covers every sample once per epoch, the same errors; and
a model trained from a DataLoader with a scheduler."""

import collections
import warnings

import numpy as np
import pytest

import nbgrad
from nbgrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    random_split,
)

Point = collections.namedtuple("Point", ["x", "y"])


def assert_same_errors(ours, theirs):
    """Each pair of calls raises the same exception type with the same message."""
    for our_call, their_call in zip(ours, theirs, strict=True):
        raised = []
        for make in (our_call, their_call):
            with pytest.raises(Exception) as error:
                make()
            raised.append((type(error.value), str(error.value)))
        assert raised[0] == raised[1]


def _plain(value):
    """A comparable description: tensors as (dtype, shape, values), containers by type."""
    if isinstance(value, nbgrad.Tensor) or type(value).__name__ == "Tensor":
        return ("tensor", str(value.dtype), tuple(value.shape), value.tolist())
    if isinstance(value, dict):
        return (type(value).__name__, {key: _plain(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_plain(item) for item in value])
    return value


def _batches(loader):
    return [_plain(batch) for batch in loader]


def _arrays(n=10):
    rng = np.random.default_rng(3)
    images = rng.standard_normal((n, 2, 3)).astype(np.float32)
    labels = rng.integers(0, 5, n)
    weights = rng.random(n)  # float64
    return images, labels, weights


def _tensor_dataset(lib, n=10):
    return lib.utils.data.TensorDataset(*(lib.from_numpy(array) for array in _arrays(n)))


class _Records:
    """A custom data set (as tutorials write one) returning a dict, a tuple or plain numbers."""

    def __init__(self, lib, kind, n=7):
        self.lib, self.kind, self.n = lib, kind, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        lib = self.lib
        if self.kind == "tuple":
            return lib.arange(3.0) * i, i, i / 4, f"name{i}"
        if self.kind == "dict":
            return {
                "image": lib.ones(2, 2, dtype=lib.float64) * i,
                "label": i % 3,
                "flag": i % 2 == 0,
                "pixels": np.full(3, i, dtype=np.uint8),
                "scale": np.float32(i / 8),
                "count": np.int16(i),
                "point": Point(i, lib.tensor([i, -i])),
                "pair": [i * 1.5, (i, str(i))],
                "text": b"bytes",
            }
        return float(i) if self.kind == "float" else i


def _subclassing(lib, kind):
    """The same records as a subclass of the library's own Dataset."""

    class Records(lib.utils.data.Dataset):
        def __init__(self):
            self.records = _Records(lib, kind)

        def __len__(self):
            return len(self.records)

        def __getitem__(self, i):
            return self.records[i]

    return Records()


# --- the same batches as PyTorch -----------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [{}, {"batch_size": 3}, {"batch_size": 5}, {"batch_size": 4, "drop_last": True}],
    ids=repr,
)
def test_unshuffled_tensor_dataset_batches_equal_pytorchs(torch, options):
    ours = DataLoader(_tensor_dataset(nbgrad), **options)
    theirs = torch.utils.data.DataLoader(_tensor_dataset(torch), **options)
    assert len(ours) == len(theirs)
    batches = _batches(ours)
    assert batches == _batches(theirs)
    assert len(batches) == len(ours)


def test_tensor_dataset_batches_hold_the_right_rows():
    images, labels, _ = _arrays()
    images_batch, labels_batch, _ = list(DataLoader(_tensor_dataset(nbgrad), batch_size=4))[1]
    assert images_batch.shape == (4, 2, 3) and images_batch.dtype == nbgrad.float32
    np.testing.assert_array_equal(images_batch.numpy(), images[4:8])
    np.testing.assert_array_equal(labels_batch.numpy(), labels[4:8])


@pytest.mark.parametrize("kind", ["tuple", "dict", "int", "float"])
@pytest.mark.parametrize("batch_size", [1, 3, None])
def test_custom_dataset_batches_equal_pytorchs(torch, kind, batch_size):
    ours = DataLoader(_Records(nbgrad, kind), batch_size=batch_size)
    theirs = torch.utils.data.DataLoader(_Records(torch, kind), batch_size=batch_size)
    assert len(ours) == len(theirs)
    assert _batches(ours) == _batches(theirs)


def test_subclass_of_dataset_and_workers_give_the_same_batches(torch):
    ours = DataLoader(_subclassing(nbgrad, "dict"), batch_size=2, num_workers=2)
    theirs = torch.utils.data.DataLoader(_subclassing(torch, "dict"), batch_size=2)
    assert _batches(ours) == _batches(theirs)
    assert len(_batches(ours)) == 4


def test_collated_types_match_pytorchs(torch):
    batch = _plain(next(iter(DataLoader(_Records(nbgrad, "dict"), batch_size=2))))[1]
    assert batch["label"][:2] == ("tensor", "torch.int64")
    assert batch["flag"][:2] == ("tensor", "torch.bool")
    assert batch["pixels"][:3] == ("tensor", "torch.uint8", (2, 3))
    assert batch["scale"][:2] == ("tensor", "torch.float32")
    assert batch["count"][:2] == ("tensor", "torch.int16")
    assert batch["point"][0] == "Point"
    assert batch["pair"][0] == "list"
    assert batch["pair"][1][0][:2] == ("tensor", "torch.float64")
    assert batch["text"] == ("list", [b"bytes", b"bytes"])


def test_default_collate_keeps_mapping_types(torch):
    samples = [collections.OrderedDict(a=1, b=2.0), collections.OrderedDict(a=3, b=4.0)]
    for lib_collate in (default_collate, torch.utils.data.default_collate):
        batch = lib_collate(samples)
        assert type(batch) is collections.OrderedDict
        assert batch["a"].tolist() == [1, 3]
    counts = collections.defaultdict(list, a=[1, 2])
    batch = default_collate([counts, counts])
    assert type(batch) is collections.defaultdict and batch.default_factory is list


def test_default_collate_errors_equal_pytorchs(torch):
    bad_batches = [
        [[1, 2], [3]],
        [np.array(["a", "b"]), np.array(["c", "d"])],
        [object(), object()],
        [{1, 2}, {3, 4}],
    ]
    for batch in bad_batches:
        raised = []
        for collate in (default_collate, torch.utils.data.default_collate):
            with pytest.raises(Exception) as error:
                collate(batch)
            raised.append((type(error.value), str(error.value)))
        assert raised[0] == raised[1]


# --- shuffling -----------------------------------------------------------------------------------


def _epoch_order(loader):
    """The label of every sample, in the order one epoch visits them."""
    return [label for _, label in loader for label in label.tolist()]


def _labelled(n):
    return TensorDataset(nbgrad.randn(n, 2), nbgrad.arange(n))


def test_shuffled_epochs_visit_every_sample_once_in_new_orders():
    loader = DataLoader(_labelled(50), batch_size=8, shuffle=True)
    epochs = [_epoch_order(loader) for _ in range(3)]
    for order in epochs:
        assert sorted(order) == list(range(50))
    assert epochs[0] != epochs[1] != epochs[2] != epochs[0]
    assert epochs[0] != list(range(50))
    assert [len(batch[1]) for batch in loader] == [8] * 6 + [2]


def test_shuffling_repeats_with_the_seed_or_a_generator():
    dataset = _labelled(20)
    nbgrad.manual_seed(5)
    first = _epoch_order(DataLoader(dataset, batch_size=3, shuffle=True))
    nbgrad.manual_seed(5)
    assert _epoch_order(DataLoader(dataset, batch_size=3, shuffle=True)) == first

    def with_generator():
        generator = np.random.default_rng(11)
        return _epoch_order(DataLoader(dataset, batch_size=3, shuffle=True, generator=generator))

    ordered = with_generator()
    nbgrad.randn(3)  # the global generator moves; a loader with its own does not care
    assert with_generator() == ordered
    assert sorted(ordered) == list(range(20))


def test_shuffled_drop_last_drops_the_short_batch():
    loader = DataLoader(_labelled(10), batch_size=4, shuffle=True, drop_last=True)
    assert len(loader) == 2
    order = _epoch_order(loader)
    assert len(order) == 8 and len(set(order)) == 8


def test_random_sampler_with_replacement_and_num_samples(torch):
    data = list(range(6))
    drawn = list(RandomSampler(data, replacement=True, num_samples=100))
    assert len(drawn) == 100 and set(drawn) <= set(data) and len(set(drawn)) == 6
    longer = list(RandomSampler(data, num_samples=15))
    assert len(longer) == 15 and sorted(longer[:6]) == data and sorted(longer[6:12]) == data
    assert len(RandomSampler(data, num_samples=15)) == len(
        torch.utils.data.RandomSampler(data, num_samples=15)
    )


def test_random_sampler_with_replacement_draws_lazily():
    """makemore's endless loader asks for 10**10 samples and takes a few batches."""
    import itertools

    endless = RandomSampler(list(range(5)), replacement=True, num_samples=int(1e10))
    first = list(itertools.islice(iter(endless), 70))
    assert len(first) == 70 and set(first) <= set(range(5))
    assert len(endless) == 10**10


def test_subset_random_sampler_draws_each_index_once():
    indices = [3, 8, 9, 20]
    drawn = [list(SubsetRandomSampler(indices)) for _ in range(6)]
    assert all(sorted(order) == indices for order in drawn)
    assert len({tuple(order) for order in drawn}) > 1


# --- samplers and the loader's sampler arguments -------------------------------------------------


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 4, 12])
def test_batch_sampler_equals_pytorchs(torch, batch_size, drop_last):
    order = [5, 1, 9, 0, 2, 2, 7, 3, 8, 4]
    ours = BatchSampler(order, batch_size, drop_last)
    theirs = torch.utils.data.BatchSampler(order, batch_size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


def test_sampler_and_batch_sampler_arguments_equal_pytorchs(torch):
    order = [9, 0, 4, 4, 2]
    for options in (
        {"sampler": order, "batch_size": 2},
        {"sampler": order, "batch_size": None},
        {"batch_sampler": [[1, 2, 3], [0], [9, 8]]},
        {"sampler": SequentialSampler(range(4)), "batch_size": 3},
    ):
        torch_options = dict(options)
        if isinstance(options.get("sampler"), SequentialSampler):
            torch_options["sampler"] = torch.utils.data.SequentialSampler(range(4))
        ours = DataLoader(_tensor_dataset(nbgrad), **options)
        theirs = torch.utils.data.DataLoader(_tensor_dataset(torch), **torch_options)
        assert _batches(ours) == _batches(theirs)
        assert len(ours) == len(theirs)


def test_iterable_dataset_batches_equal_pytorchs(torch):
    def stream(lib):
        class Squares(lib.utils.data.IterableDataset):
            def __iter__(self):
                return iter([(i, i * i * 0.5) for i in range(7)])

            def __len__(self):
                return 7

        return Squares()

    for options in ({"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}):
        ours = DataLoader(stream(nbgrad), **options)
        theirs = torch.utils.data.DataLoader(stream(torch), **options)
        assert _batches(ours) == _batches(theirs)
        assert len(ours) == len(theirs)
    chained = stream(nbgrad) + stream(nbgrad)
    assert len(chained) == 14 and len(list(chained)) == 14


# --- data sets -----------------------------------------------------------------------------------


def test_tensor_dataset_indexing_and_length():
    x, y = nbgrad.arange(12.0).reshape(4, 3), nbgrad.tensor([1, 0, 1, 1])
    dataset = TensorDataset(x, y)
    assert len(dataset) == 4
    row, label = dataset[2]
    assert row.tolist() == [6.0, 7.0, 8.0] and label.item() == 1


def test_concat_and_subset_datasets(torch):
    for lib in (nbgrad, torch):
        data = lib.utils.data
        a = data.TensorDataset(lib.arange(3))
        b = data.TensorDataset(lib.arange(10, 15))
        both = a + b
        assert isinstance(both, data.ConcatDataset)
        assert len(both) == 8 and both.cumulative_sizes == [3, 8]
        assert [both[i][0].item() for i in (0, 2, 3, 7, -1, -8)] == [0, 2, 10, 14, 14, 0]
        subset = data.Subset(both, [7, 0, 4])
        assert len(subset) == 3 and [s[0].item() for s in subset] == [14, 0, 11]
        assert [batch[0].tolist() for batch in data.DataLoader(subset, batch_size=2)] == [
            [14, 0],
            [11],
        ]


def test_subset_fetches_batches_through_the_dataset_below():
    class Counting(nbgrad.utils.data.Dataset):
        def __init__(self):
            self.batched_calls = 0

        def __getitem__(self, i):
            return i

        def __getitems__(self, indices):
            self.batched_calls += 1
            return [i * 10 for i in indices]

        def __len__(self):
            return 6

    base = Counting()
    loader = DataLoader(Subset(base, [5, 4, 3]), batch_size=2)
    assert [batch.tolist() for batch in loader] == [[50, 40], [30]]
    assert base.batched_calls == 2


def test_data_set_errors_equal_pytorchs(torch):
    def cases(lib):
        data = lib.utils.data
        pair = data.TensorDataset(lib.zeros(3), lib.zeros(3))
        return [
            lambda: data.TensorDataset(lib.zeros(3), lib.zeros(4)),
            lambda: data.ConcatDataset([]),
            lambda: data.ConcatDataset([pair])[-4],
            lambda: data.Dataset()[0],
            lambda: data.random_split(range(10), [3, 3]),
            lambda: data.random_split(range(10), [1.2, -0.2]),
            lambda: data.random_split(range(10), [0.5, 0.6]),
        ]

    assert_same_errors(cases(nbgrad), cases(torch))


@pytest.mark.parametrize(
    "lengths", [[3, 7], [0, 10], [0.3, 0.7], [0.25, 0.25, 0.5], [1 / 3] * 3, [0.1] * 10, [0.5] * 2]
)
def test_random_split_lengths_equal_pytorchs_and_cover_the_data(torch, lengths):
    data = list(range(10, 20))
    ours = random_split(data, lengths)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.utils.data.random_split(data, lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(x for subset in ours for x in subset) == data


def test_random_split_remainder_goes_round_robin_and_repeats_with_the_seed():
    nbgrad.manual_seed(2)
    splits = random_split(range(11), [1 / 3] * 3)
    assert [len(s) for s in splits] == [4, 4, 3]  # 3 each, and the two left over
    nbgrad.manual_seed(2)
    assert [list(s) for s in random_split(range(11), [1 / 3] * 3)] == [list(s) for s in splits]
    assert [list(s) for s in splits] != [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]


def test_random_split_warns_about_empty_splits(torch):
    for lib in (nbgrad, torch):
        with pytest.warns(UserWarning) as caught:
            lib.utils.data.random_split(range(3), [0.9, 0.05, 0.05])
        assert [str(w.message)[:30] for w in caught] == [
            "Length of split at index 1 is ",
            "Length of split at index 2 is ",
        ]


# --- DataLoader arguments ------------------------------------------------------------------------

BAD_LOADERS = [
    {"batch_size": 0},
    {"batch_size": -2},
    {"batch_size": 2.5},
    {"batch_size": True},
    {"drop_last": "yes"},
    {"shuffle": True, "sampler": [0, 1]},
    {"batch_sampler": [[0]], "batch_size": 2},
    {"batch_sampler": [[0]], "shuffle": True},
    {"batch_sampler": [[0]], "drop_last": True},
    {"batch_size": None, "drop_last": True},
    {"num_workers": -1},
    {"timeout": -1},
    {"prefetch_factor": 2},
    {"num_workers": 2, "prefetch_factor": -1},
    {"persistent_workers": True},
    {"multiprocessing_context": "spawn"},
]


@pytest.mark.parametrize("options", BAD_LOADERS, ids=repr)
def test_bad_loader_arguments_raise_pytorchs_errors(torch, options):
    raised = []
    for lib in (nbgrad, torch):
        with pytest.raises(Exception) as error:
            lib.utils.data.DataLoader(_tensor_dataset(lib), **options)
        raised.append((type(error.value), str(error.value)))
    assert raised[0] == raised[1]


def test_other_argument_errors_equal_pytorchs(torch):
    def cases(lib):
        data = lib.utils.data
        return [
            lambda: data.DataLoader(data.TensorDataset(lib.zeros(0)), shuffle=True),
            lambda: data.RandomSampler(range(3), replacement=1),
            lambda: setattr(data.DataLoader(range(3)), "batch_size", 2),
            lambda: data.DataLoader(_iterable(lib), shuffle=True),
            lambda: data.DataLoader(_iterable(lib), sampler=[0]),
            lambda: data.ConcatDataset([_iterable(lib)]),
        ]

    assert_same_errors(cases(nbgrad), cases(torch))


def _iterable(lib):
    class Empty(lib.utils.data.IterableDataset):
        def __iter__(self):
            return iter([])

    return Empty()


def test_loader_keeps_its_settings_and_accepts_worker_options():
    loader = DataLoader(range(5), batch_size=2, num_workers=3, pin_memory=True, timeout=5)
    assert (loader.batch_size, loader.num_workers, loader.prefetch_factor) == (2, 3, 2)
    assert [batch.tolist() for batch in loader] == [[0, 1], [2, 3], [4]]
    assert nbgrad.utils.data.get_worker_info() is None
    loader.num_workers = 0  # not one of the settings PyTorch fixes
    assert len(loader) == 3


def test_torch_style_access_through_the_package():
    import nbgrad as torch_like

    assert torch_like.utils.data.DataLoader is DataLoader
    assert torch_like.utils.data.ConcatDataset is ConcatDataset


# --- end to end ----------------------------------------------------------------------------------


def test_digits_mlp_trained_from_a_data_loader_with_a_scheduler():
    pytest.importorskip("sklearn")
    nbgrad.manual_seed(0)
    images, labels = nbgrad.datasets.digits()
    train, held_out = random_split(TensorDataset(images, labels), [0.8, 0.2])
    loader = DataLoader(train, batch_size=64, shuffle=True)
    model = nbgrad.nn.Sequential(
        nbgrad.nn.Linear(64, 32), nbgrad.nn.ReLU(), nbgrad.nn.Linear(32, 10)
    )
    optimizer = nbgrad.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = nbgrad.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.3)
    loss_fn = nbgrad.nn.CrossEntropyLoss()

    for _ in range(10):
        for batch_images, batch_labels in loader:
            loss = loss_fn(model(batch_images), batch_labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()

    test_images, test_labels = next(iter(DataLoader(held_out, batch_size=len(held_out))))
    with nbgrad.no_grad():
        accuracy = (model(test_images).argmax(1) == test_labels).float().mean().item()
    assert len(held_out) == 359 and test_images.shape == (359, 64)
    assert scheduler.get_last_lr() == pytest.approx([1e-2 * 0.3**2])
    assert accuracy >= 0.9
