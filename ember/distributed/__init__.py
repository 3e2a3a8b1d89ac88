"""ember.distributed: torch.distributed's API on MPI (mpi4py, MPICH) or TCP, for processes on one or many machines.

https://pytorch.org/docs/stable/distributed.html. MPI needs the `distributed` extra (is_mpi_available() says
whether it is installed); mpi4py is imported, and MPI initialized, by init_process_group, not here.
Where ember differs: every backend name it accepts ("mpi", "gloo", None) runs on MPI under an MPI launcher
and on ember's TCP transport for processes started otherwise (Note [TCP transport] in _tcp.py); each collective
first agrees a small header with the other ranks (Note [Collective agreement] in _check.py); float16
and bfloat16 are reduced in float32 (Note [Buffers to MPI] in _mpi.py); a rank that dies of an uncaught
exception ends the whole job, and a collective whose peers never come raises after the group's timeout.
"""
from ._store import FileStore, HashStore, PrefixStore, Store, TCPStore
from .distributed_c10d import (Backend, DistBackendError, DistError, DistNetworkError, DistStoreError, GroupMember, ProcessGroup,
                               QueueEmptyError, RedOpType,
                               ReduceOp, Work, barrier, default_pg_timeout, destroy_process_group, get_backend,
                               get_default_backend_for_device,
                               get_global_rank, get_group_rank, get_node_local_rank, get_process_group_ranks,
                               get_rank, get_world_size, group, init_process_group, is_available,
                               is_backend_available, is_gloo_available, is_initialized, is_mpi_available,
                               is_nccl_available, is_torchelastic_launched, is_ucc_available, is_xccl_available,
                               monitored_barrier, new_group)
from ._collectives import (all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single,
                           broadcast, gather, reduce, reduce_scatter, reduce_scatter_tensor, scatter)
from ._p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from ._grad_bucket import GradBucket
from .device_mesh import DeviceMesh, init_device_mesh
from ._objects import (all_gather_object, broadcast_object_list, gather_object, recv_object_list,
                       scatter_object_list, send_object_list)

__all__ = ["Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "FileStore", "HashStore",
           "DeviceMesh", "PrefixStore", "QueueEmptyError", "Store", "TCPStore", "GradBucket", "GroupMember", "ProcessGroup", "RedOpType", "ReduceOp",
           "Work", "P2POp", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
           "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
           "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend", "get_default_backend_for_device",
           "get_global_rank", "get_group_rank", "get_node_local_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_device_mesh", "init_process_group", "irecv", "is_available", "is_backend_available",
           "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "is_ucc_available", "is_xccl_available", "isend", "monitored_barrier",
           "new_group", "recv", "recv_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
           "scatter_object_list", "send", "send_object_list"]
