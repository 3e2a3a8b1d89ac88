"""DistributedSampler: each rank's share of a dataset, with torch's index assignment.

See https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler.
The indices (optionally a permutation from a Generator seeded with seed + epoch) are padded by
repeating them from the start, or cut with drop_last, to a multiple of num_replicas; rank r takes
every num_replicas-th index starting at r.
"""
import math

from .sampler import Sampler, _T_co

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[_T_co]):
    """The rank-th of num_replicas disjoint (up to padding) parts of range(len(dataset))."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _default_group_query("get_world_size")
        if rank is None:
            rank = _default_group_query("get_rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)  # the largest even split
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            from ... import Generator, randperm
            generator = Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - n
            repeats = math.ceil(padding / n) if n else 0
            indices += (indices * repeats)[:padding]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Set the epoch: with shuffle=True each epoch gets its own permutation (the same on every rank)."""
        self.epoch = epoch


def _default_group_query(name):
    """get_world_size()/get_rank() of the default process group, as torch reads them."""
    from ... import distributed as dist
    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return getattr(dist, name)()
