"""ember.multiprocessing: the standard multiprocessing module, with tensors shared, not copied.

https://pytorch.org/docs/stable/multiprocessing.html. Everything of `multiprocessing` is
re-exported; importing this package registers ForkingPickler reducers (reductions.py), so a
tensor put on any multiprocessing Queue/Pipe, or passed to a spawned Process, is moved to shared
memory and the receiver maps the same memory. ember shares by file descriptor only: the
"file_system" strategy (segments kept by name) is not implemented.
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException, spawn,
                    start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException"] + list(multiprocessing.__all__)

_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor"}


def set_sharing_strategy(new_strategy):
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_all_sharing_strategies} (ember does not implement 'file_system')")
    global _sharing_strategy
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return set(_all_sharing_strategies)


init_reductions()
