"""torch.distributed.checkpoint.default_planner: the default save and load planners (the only ones ember's DCP
runs; they are defined with save/load in ember/distributed/checkpoint/__init__.py)."""
from . import DefaultLoadPlanner, DefaultSavePlanner

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner"]
