"""torch.distributed.algorithms.join: training on uneven inputs (some ranks run out of batches first).

Note [Joining ranks]: each iteration, a Joinable (DistributedDataParallel) that has not joined first
calls Join.notify_join_context, an all-reduce of a one. A rank whose loop has ended runs Join.__exit__:
it all-reduces a zero in the same place, so the sum counts the ranks still training; while that count
is not zero it runs each joinable's main_hook, which issues the collectives the training ranks issue in
that iteration (for DDP: the buffer broadcast, the backward-sync flag, one all-reduce of zeros per
gradient bucket), so nobody waits on it. Once every rank has joined, post_hook(is_last_joiner) runs on
each (DDP: the model of the highest rank among the last to join is broadcast to all). MPI needs the
same collectives in the same order on every rank; the hooks are written against ember's own order.
"""
import abc
import warnings
from typing import NamedTuple

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """The two entry points a joinable gives the join context: main_hook() while some rank still trains
    (shadowing one iteration's collectives), post_hook(is_last_joiner) once all have joined."""

    def main_hook(self):
        """Shadow one training iteration's collective communications."""

    def post_hook(self, is_last_joiner):
        """Run after every rank has joined; is_last_joiner: whether this rank was among the last."""


class Joinable(abc.ABC):
    """A class that takes part in Join: join_hook(**kwargs), join_device and join_process_group."""

    @abc.abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abc.abstractmethod
    def join_hook(self, **kwargs):
        """The JoinHook of this joinable; kwargs are those given to Join."""

    @property
    @abc.abstractmethod
    def join_device(self):
        """The device of the join context's own collectives."""

    @property
    @abc.abstractmethod
    def join_process_group(self):
        """The process group of the join context's own collectives."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


def _dist():
    from ... import distributed
    return distributed


class Join:
    """Context manager around a training loop whose ranks may have different numbers of inputs; see
    Note [Joining ranks]. enable=False makes it do nothing; throw_on_early_termination=True makes every
    rank raise RuntimeError as soon as one has run out instead."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        for i, joinable in enumerate(joinables):
            joinable._join_config = _JoinConfig(enable, throw_on_early_termination, i == 0)
        groups = {id(j.join_process_group) for j in joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = joinables[0].join_process_group
        self._device = joinables[0].join_device
        self._rank = _dist().get_rank(self._process_group)

    def __enter__(self):
        return None

    def __exit__(self, kind, value, traceback):
        """Shadow the training ranks' iterations until every rank has joined, then run the post-hooks."""
        if not self._enable or kind is not None:
            return  # an exception propagates as it is
        is_last_joiner = True
        shadowed = 0
        while self._count_training_ranks() != 0:
            if shadowed == 1001:  # torch warns past 1000 shadowed iterations
                warnings.warn(f"Detected uneven input skew of greater than 1000. This means that rank {self._rank} "
                              "has at least 1000 fewer inputs than other currently-active ranks. This level of "
                              "skew could lead to performance degradation during training.", stacklevel=2)
            if self._throw_on_early_termination:
                self._notify_procs_to_terminate()
            for hook in self._join_hooks:
                hook.main_hook()
            is_last_joiner = False
            shadowed += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)

    def _count_training_ranks(self):
        from ... import zeros
        count = zeros(1)
        _dist().all_reduce(count, group=self._process_group)
        return count.item()

    def _notify_procs_to_terminate(self):
        from ... import ones
        _dist().all_reduce(ones(1), group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Called by a joinable before each iteration's collectives: tells the joined ranks this one still
        trains (the first joinable only; returns the all-reduce's Work, whose result() is the number of
        training ranks, else None). With throw_on_early_termination, raises RuntimeError on
        every training rank once some rank has joined."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the ``Joinable`` constructor")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        from ... import ones, zeros
        dist = _dist()
        group = joinable.join_process_group
        training = ones(1)
        work = dist.all_reduce(training, group=group, async_op=True)
        if config.throw_on_early_termination:
            joined = zeros(1)
            dist.all_reduce(joined, group=group)
            if joined.item():
                work.wait()
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work
