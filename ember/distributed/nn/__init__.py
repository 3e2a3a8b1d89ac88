"""torch.distributed.nn: RemoteModule (a module that lives on another RPC worker) and the collectives that
autograd differentiates (functional)."""
from . import functional
from .api.remote_module import RemoteModule
from .functional import (all_gather, all_reduce, all_to_all, all_to_all_single, broadcast, gather, reduce,
                         reduce_scatter, scatter)

__all__ = ["RemoteModule", "all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast", "functional",
           "gather", "reduce", "reduce_scatter", "scatter"]
