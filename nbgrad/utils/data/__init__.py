"""nbgrad.utils.data: data sets, samplers and the DataLoader, as torch.utils.data."""

from nbgrad.utils.data.collate import default_collate, default_convert
from nbgrad.utils.data.dataloader import DataLoader, get_worker_info
from nbgrad.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from nbgrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
)
