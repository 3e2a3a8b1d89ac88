"""Shared test setup: the torch oracle runs single-threaded (pytest-xdist already runs one
process per core, and torch's thread pool only adds contention on small tensors)."""
import torch

torch.set_num_threads(1)
