"""ember.nn.parallel (torch.nn.parallel): DistributedDataParallel on ember.distributed, and DataParallel as
torch runs it without accelerators (a pass-through)."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
