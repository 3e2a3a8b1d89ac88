"""torch.distributed.algorithms: the join context for uneven inputs (join), DDP communication hooks
(ddp_comm_hooks), activation-checkpointing wrappers (_checkpoint)."""
from .join import Join, JoinHook, Joinable

__all__ = ["Join", "JoinHook", "Joinable"]
