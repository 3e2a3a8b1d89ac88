"""torch.distributed.algorithms._checkpoint: modules wrapped for activation checkpointing or offloading."""
