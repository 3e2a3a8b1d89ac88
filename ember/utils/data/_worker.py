"""DataLoader worker processes: the loop a worker runs, its seeding, and how batches travel.

A worker takes (task index, sampler indices) from its own index queue, fetches and collates with
the same `_Fetcher` as single-process loading, and puts (task index, payload) on the shared result
queue. The payload is a pickle in which every tensor is a reference to a named shared-memory
segment (Note [Shared segments] in ember/_shared_memory.py): collate stacks a batch straight into
such a segment, any other tensor is copied into one, and the main process maps the segments
(zero-copy) as it unpickles and hands each back once its tensors are gone (Note [Segment pool]).
Exceptions travel as ExceptionWrapper text.
"""
import dataclasses
import functools
import io
import os
import pickle
import queue
import random
import sys
import traceback
from multiprocessing import reduction

import numpy as np

from ... import _shared_memory as shm
from ..._tensor import Tensor

__all__ = ["WorkerInfo", "get_worker_info"]

# How often (seconds) a waiting worker checks that the main process is still alive.
WORKER_STATUS_CHECK_INTERVAL = 1.0

_worker_info = None  # this worker's WorkerInfo; None in the main process


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What a worker knows about itself (https://pytorch.org/docs/stable/data.html#torch.utils.data.get_worker_info)."""
    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    """This DataLoader worker's WorkerInfo; None in the main process."""
    return _worker_info


@dataclasses.dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's IterableDataset copy is exhausted: send it no more tasks this epoch."""
    worker_id: int


@dataclasses.dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers when a new epoch starts; echoed back as an acknowledgement."""
    seed: object = None


class KeyErrorMessage(str):
    """A KeyError prints repr() of its message; this keeps the traceback text readable."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried as its type and formatted traceback."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the original exception type with the worker's traceback in the message
        (a RuntimeError when the type cannot be built from one message string)."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            del exception  # else exception -> traceback -> this frame -> exception: a cycle holding the iterator

    def __reduce__(self):
        try:  # a class that cannot be imported by name on the other side travels as RuntimeError
            pickle.dumps(self.exc_type)
            exc_type = self.exc_type
        except Exception:
            exc_type = RuntimeError
        return (_rebuild_exception_wrapper, (exc_type, self.exc_msg, self.where))


def _rebuild_exception_wrapper(exc_type, exc_msg, where):
    w = ExceptionWrapper.__new__(ExceptionWrapper)
    w.exc_type = exc_type
    w.exc_msg = exc_msg
    w.where = where
    return w


# ---- batch transport -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Release:
    """From the main process: segments it no longer maps, back to their worker (Note [Segment pool])."""
    names: tuple


class _NamedHandle:
    """A worker's segment inside a message: written as the persistent id (worker id, name, size)."""
    __slots__ = ("worker_id", "name", "nbytes")

    def __init__(self, seg):
        self.worker_id = _worker_info.id
        self.name = seg.name
        self.nbytes = seg.nbytes


class _BatchPickler(reduction.ForkingPickler):
    """Pickles a worker's result with every tensor in a named segment (the one collate stacked into,
    or a copy); `segments` lists the segments the message lends to the main process."""

    def __init__(self, file):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self.handles = {}  # id(segment) -> handle, so a segment is sent once per message
        self.segments = []

    def persistent_id(self, obj):
        if type(obj) is _NamedHandle:
            return (obj.worker_id, obj.name, obj.nbytes)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        return NotImplemented

    def _reduce_tensor(self, t):
        from ...multiprocessing.reductions import check_serializable, rebuild_tensor, tensor_args
        check_serializable(t)
        seg = shm.segment_of(t._data)
        handle = self.handles.get(id(seg)) if seg is not None else None
        if handle is None:
            if seg is None or seg.name is None or seg.sent:
                # private memory, an anonymous segment, or one already lent with an earlier message
                t = _copied(t)
                seg = shm.segment_of(t._data)
            handle = self.handles[id(seg)] = _NamedHandle(seg)
            self.segments.append(seg)
        return (rebuild_tensor, tensor_args(t, handle))


class _BatchUnpickler(pickle.Unpickler):
    """Rebuilds a worker's result in the main process, mapping each segment it names once; when a
    mapping goes, (worker id, name) is appended to `released`."""

    def __init__(self, file, released):
        super().__init__(file)
        self.released = released
        self.segments = {}

    def persistent_load(self, pid):
        worker_id, name, nbytes = pid
        seg = self.segments.get(name)
        if seg is None:
            on_free = functools.partial(self.released.append, (worker_id, name))
            seg = self.segments[name] = shm.open_lent(name, nbytes, on_free)
        return seg


def _copied(t):
    """A tensor like t (same class, dtype, flags, attributes) over a copy of its data in a new segment."""
    c = object.__new__(type(t))
    Tensor._init_copy(c, shm.copy(t._data), t._dtype, t._requires_grad)
    if t.__dict__:
        c.__dict__.update(t.__dict__)
    return c


def dump_result(data):
    """The payload for data, lending its segments; a failure to pickle becomes the payload of an
    ExceptionWrapper."""
    buf = io.BytesIO()
    pickler = _BatchPickler(buf)
    try:
        pickler.dump(data)
    except Exception:
        wrapper = ExceptionWrapper(where=f"in DataLoader worker process {_worker_info.id} (sending a batch)")
        return pickle.dumps(wrapper, pickle.HIGHEST_PROTOCOL)
    for seg in pickler.segments:
        shm.lend(seg)
    return buf.getvalue()


def load_result(payload, released):
    """Rebuild a worker's result in the main process over the segments it names (zero-copy)."""
    return _BatchUnpickler(io.BytesIO(payload), released).load()


# ---- the worker's loop -----------------------------------------------------------------------

def _numpy_seed(base_seed, worker_id):
    """Four 32-bit words for np.random.seed, mixed from the base seed and worker id by NumPy's
    SeedSequence (so NumPy's stream differs from `random`'s, seeded with base_seed + worker_id)."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, (base_seed >> 32) & 0xFFFFFFFF]
    return np.random.SeedSequence(entropy).generate_state(4)


def _seed_worker(base_seed, worker_id):
    from ... import manual_seed, set_num_threads
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_numpy_seed(base_seed, worker_id))
    set_num_threads(1)
    return seed


def _parent_alive(parent_pid):
    return os.getppid() == parent_pid


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, done_flag, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers, persistent_workers, shm_prefix):
    """Run in a worker process until the main process sends None (or dies)."""
    global _worker_info
    from .dataloader import _DatasetKind, _Fetcher
    parent_pid = os.getppid()
    shm._worker_prefix = f"{shm_prefix}w{worker_id}_"
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = None  # worker_init_fn or the fetcher failed: every task reports it
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _Fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        # a worker whose IterableDataset copy is exhausted waits for None without fetching more
        iteration_end = False
        while True:
            try:
                r = index_queue.get(timeout=WORKER_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if not _parent_alive(parent_pid):
                    shm.sweep(shm._worker_prefix)  # nobody will receive what is still in flight
                    return
                if done_flag.value:
                    break  # shutting down, and the None meant for us was lost
                continue
            if r is None:
                break
            if isinstance(r, _Release):
                shm.take_back(r.names)
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                if fetcher is not None:  # (None: worker_init_fn failed, and that stays reported)
                    try:  # a fresh fetcher: an IterableDataset starts a new iterator
                        fetcher = _Fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                        init_exception = None
                    except Exception:
                        init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
                continue
            if done_flag.value or iteration_end:
                continue  # shutting down: skip the remaining tasks until None arrives
            idx, index = r
            if init_exception is not None:
                data = init_exception
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            payload = dump_result(data)
            del data
            data_queue.put((idx, payload))
            del idx, index, r, payload
    except KeyboardInterrupt:
        pass  # the main process got the same Ctrl-C and shuts the workers down
    if done_flag.value:
        data_queue.cancel_join_thread()  # nobody reads any more: do not wait to flush at exit
        data_queue.close()
