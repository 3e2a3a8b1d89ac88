"""ember.utils.data: datasets, samplers and the DataLoader (https://pytorch.org/docs/stable/data.html)."""
from ._collate import default_collate, default_convert
from .dataloader import DataLoader, _DatasetKind, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info",
           "random_split"]
