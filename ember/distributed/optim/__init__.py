"""torch.distributed.optim: ZeroRedundancyOptimizer (optimizer state sharded across ranks), DistributedOptimizer
(parameters on several RPC workers)."""
from .optimizer import DistributedOptimizer
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["DistributedOptimizer", "ZeroRedundancyOptimizer"]
