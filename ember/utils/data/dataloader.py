"""DataLoader: batches from a dataset through a sampler and a collate function.

See https://pytorch.org/docs/stable/data.html. The path from indices to a batch is
`_Fetcher.fetch` alone: the main process runs it when num_workers == 0, and each worker process
runs it (ember/utils/data/_worker.py) on index batches the main process draws from the sampler
with `_BaseDataLoaderIter._draw_index` and deals out round-robin; `_MultiProcessingDataLoaderIter`
hands the results back in sampler order. Batches come back in shared memory (Note [Shared
segments] in ember/_shared_memory.py).
"""
import atexit
import itertools
import math
import multiprocessing as python_multiprocessing
import multiprocessing.util  # noqa: F401  (its exit handler is registered first, so ours runs before it)
import os
import queue
import secrets
import signal
import threading
import time
import warnings
import weakref
from typing import Generic

import numpy as np

from ... import _dtype as D
from ... import _shared_memory as shm
from ..._tensor import Tensor
from . import _collate, _worker
from ._worker import ExceptionWrapper, get_worker_info
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _T_co

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

default_collate = _collate.default_collate
default_convert = _collate.default_convert

# How long (seconds) the main process waits on the result queue before checking its workers are alive.
MP_STATUS_CHECK_INTERVAL = 0.5
_CTRL_C_GRACE = 0.5  # seconds a worker's clean exit waits for our own Ctrl-C before it is an error
# How long shutdown waits for a worker to exit before terminating it.
WORKER_JOIN_TIMEOUT = 5.0

_now = time.monotonic


class _DatasetKind:
    """Whether the loader indexes its dataset (Map) or reads it as a stream (Iterable)."""
    Map = 0
    Iterable = 1


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: an endless stream of None (the dataset decides what comes next)."""

    def __iter__(self):
        return itertools.repeat(None)


class _Fetcher:
    """Turn one index (or one list of indices, when auto-collating) into a collated batch.

    Map-style datasets are indexed (`__getitems__` if the dataset has it); iterable datasets are
    read from a single iterator kept across calls. StopIteration means the epoch is over.
    """

    def __init__(self, kind, dataset, auto_collation, collate_fn, drop_last):
        self._iterable = kind == _DatasetKind.Iterable
        self._dataset = dataset
        self._batched = auto_collation
        self._collate = collate_fn
        self._drop_last = drop_last
        # an iterable dataset's iterator is made when the epoch starts (iter(loader)), as in torch
        self._stream = iter(dataset) if self._iterable else None
        self._exhausted = False

    def fetch(self, index):
        if self._iterable:
            return self._collate(self._read_stream(index))
        fast = self._gather_tensor_rows(index)
        if fast is not None:
            return fast
        return self._collate(self._index_dataset(index))

    def _gather_tensor_rows(self, index):
        """A TensorDataset batch under the default collate, in the main process: each tensor gathered
        once at the batch's indices, which is the stack of its rows that collating the samples one
        by one would build (same values, dtype, shape, a fresh contiguous tensor), without a Python
        call per sample: 64-sample batches of 3x32x32 ~4x faster. None where that does not hold
        (a subclass, another collate_fn, a worker's shared-memory batch, tensors requiring grad)."""
        eligible = (self._batched and type(self._dataset) is TensorDataset
                    and self._collate is _collate.default_collate and get_worker_info() is None)
        if not eligible:
            return None
        columns = self._dataset.tensors
        if not columns or any(column.requires_grad for column in columns):
            return None
        try:
            rows = np.asarray(index)
        except (ValueError, TypeError):
            return None
        if rows.ndim != 1 or rows.size == 0 or rows.dtype.kind not in "iu":
            return None
        return [Tensor._make(np.take(column._data, rows, axis=0), column._dtype) for column in columns]

    def _index_dataset(self, index):
        """The sample at `index`, or the samples at a list of indices (one __getitems__ call if defined)."""
        if not self._batched:
            return self._dataset[index]
        getitems = getattr(self._dataset, "__getitems__", None)
        return getitems(index) if getitems is not None else [self._dataset[i] for i in index]

    def _read_stream(self, index):
        """The next sample, or the next len(index) samples; a short last batch is kept unless drop_last."""
        if self._exhausted:
            raise StopIteration
        if not self._batched:
            return next(self._stream)
        wanted = len(index)
        samples = list(itertools.islice(self._stream, wanted))
        if len(samples) < wanted:
            self._exhausted = True  # the stream ended inside this batch: the next call ends the epoch
        if not samples or (self._drop_last and len(samples) < wanted):
            raise StopIteration
        return samples


def _resolve_prefetch_factor(num_workers, timeout, prefetch_factor, persistent_workers):
    """Validates the worker options in torch's order; the prefetch factor, 2 by default with workers."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                         "multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if prefetch_factor is None:
        factor = 2 if num_workers > 0 else None
    elif num_workers == 0:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                         "to enable multiprocessing, otherwise set prefetch_factor to None.")
    elif prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    else:
        factor = prefetch_factor
    if num_workers == 0 and persistent_workers:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return factor


def _reject_iterable_options(shuffle, sampler, batch_sampler):
    """An IterableDataset orders itself: shuffle, sampler and batch_sampler must be left unspecified."""
    options = (("shuffle", shuffle, shuffle not in (False, None)),
               ("sampler", sampler, sampler is not None),
               ("batch_sampler", batch_sampler, batch_sampler is not None))
    for name, value, given in options:
        if given:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, but got "
                             f"{name}={value}")


def _resolve_batching(batch_size, shuffle, sampler, batch_sampler, drop_last):
    """(batch_size, drop_last) after the exclusivity checks: a batch_sampler decides both itself."""
    if shuffle and sampler is not None:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is None:
        if drop_last and batch_size is None:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        return batch_size, drop_last
    if batch_size != 1 or shuffle or sampler is not None or drop_last:
        raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                         "drop_last")
    return None, False


def _as_mp_context(value, num_workers):
    """A start method name or a multiprocessing context as a context (None stays None); only with workers."""
    if value is None:
        return None
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers "
                         f"> 0), but got num_workers={num_workers}")
    if isinstance(value, str):
        methods = python_multiprocessing.get_all_start_methods()
        if value not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                             f"{methods!r}, but got multiprocessing_context={value!r}")
        value = python_multiprocessing.get_context(value)
    if not isinstance(value, python_multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a string "
                        f"specifying the start method, but got multiprocessing_context={value}")
    return value


def _usable_cpus():
    """CPUs this process may run on (its affinity where the OS reports one), or None if unknown."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


# Set once at construction: assigning them later raises, as in torch.
_FROZEN_ATTRIBUTES = frozenset(("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                "persistent_workers"))


class DataLoader(Generic[_T_co]):
    """https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader

    pin_memory is accepted and has no effect (ember has no accelerator to pin for).
    """
    __configured = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        prefetch_factor = _resolve_prefetch_factor(num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.__mp_context = None
        self.multiprocessing_context = multiprocessing_context  # validated by the setter
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            _reject_iterable_options(shuffle, sampler, batch_sampler)
            self._dataset_kind = _DatasetKind.Iterable
        else:
            self._dataset_kind = _DatasetKind.Map
            shuffle = bool(shuffle)
        batch_size, drop_last = _resolve_batching(batch_size, shuffle, sampler, batch_sampler, drop_last)
        if sampler is None:
            sampler = self._default_sampler(shuffle, generator)
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.generator = generator
        if collate_fn is None:  # samples are stacked when batching, only converted otherwise
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__configured = True
        # len(self) of an IterableDataset loader, once asked: the iterator warns when it yields more.
        self._IterableDataset_len_called = None
        self._iterator = None  # the one reused iterator of persistent workers

    def _default_sampler(self, shuffle, generator):
        if self._dataset_kind == _DatasetKind.Iterable:
            return _InfiniteConstantSampler()
        if shuffle:
            return RandomSampler(self.dataset, generator=generator)
        return SequentialSampler(self.dataset)

    @property
    def multiprocessing_context(self):
        return self.__mp_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        """A start method name or a multiprocessing context, for num_workers > 0 only."""
        self.__mp_context = _as_mp_context(multiprocessing_context, self.num_workers)

    def __setattr__(self, attr, val):
        if attr in _FROZEN_ATTRIBUTES and self.__configured:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        """Whether samples are batched (and collated) by the loader."""
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterator draws from: index batches when auto-collating, single indices otherwise."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        """A fresh iterator for one epoch (torch's hook name: subclasses override it)."""
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        """A new iterator per epoch; persistent workers keep one iterator (and its processes) for
        the loader's lifetime and restart it each epoch."""
        if not (self.persistent_workers and self.num_workers > 0):
            return self._get_iterator()
        if self._iterator is not None:
            self._iterator._start_epoch(self)
        else:
            self._iterator = self._get_iterator()
        return self._iterator

    def check_worker_number_rationality(self):
        """Warn when num_workers exceeds the CPUs this process may run on, as torch does."""
        cpus = _usable_cpus()
        if cpus is None or self.num_workers <= cpus:
            return
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. Our suggested "
                      f"max number of worker in current system is {cpus}, which is smaller than what this "
                      "DataLoader is going to create. Please be aware that excessive worker creation might get "
                      "DataLoader running slow or even freeze, lower the worker number to avoid potential "
                      "slowness/freeze if necessary.", UserWarning, stacklevel=3)

    def __len__(self):
        if self._dataset_kind != _DatasetKind.Iterable:
            return len(self._index_sampler)
        # An IterableDataset's own len() (samples), in batches when batching; remembered for the warning.
        samples = len(self.dataset)
        self._IterableDataset_len_called = samples
        size = self.batch_size
        if size is None:
            return samples
        return samples // size if self.drop_last else math.ceil(samples / size)


class _BaseDataLoaderIter:
    """One epoch over a DataLoader: draws indices from the sampler and yields fetched batches."""

    def __init__(self, loader):
        self._configure(loader)
        self._start_epoch(loader, first=True)

    def _configure(self, loader):
        """Copies what the epoch needs from the loader, and draws the worker base seed."""
        from ... import empty
        self._dataset = loader.dataset
        self._kind = loader._dataset_kind
        # the arguments of every _Fetcher, here and in the workers
        self._fetch_args = (loader._dataset_kind, loader.dataset, loader._auto_collation, loader.collate_fn,
                            loader.drop_last)
        self._index_source = loader._index_sampler
        self._worker_count = loader.num_workers
        self._persistent = loader.persistent_workers
        self._wait_limit = loader.timeout
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        # One int64 drawn from the loader's generator per iterator, whether or not workers use it, so the
        # generator's stream advances exactly as torch's does.
        self._base_seed = empty((), dtype=D.int64).random_(generator=loader.generator).item()

    def _start_epoch(self, loader, first=False):
        """A fresh pass over the sampler."""
        self._indices = iter(self._index_source)
        self._yielded = 0
        self._reported_len = loader._IterableDataset_len_called

    def __iter__(self):
        return self

    def _draw_index(self):
        return next(self._indices)

    def _next_batch(self):
        raise NotImplementedError

    def __next__(self):
        batch = self._next_batch()
        self._yielded += 1
        if self._kind == _DatasetKind.Iterable and self._reported_len is not None:
            self._warn_if_past_reported_len()
        return batch

    def _warn_if_past_reported_len(self):
        """An IterableDataset yielding more than the len() it reported gets torch's warning (each extra batch)."""
        if self._yielded <= self._reported_len:
            return
        warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be {self._reported_len}(when "
                      f"accessing len(dataloader)), but {self._yielded} samples have been fetched. ", stacklevel=3)

    def __len__(self):
        return len(self._index_source)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Fetch in the calling process."""

    def __init__(self, loader):
        super().__init__(loader)
        if self._wait_limit != 0 and self._worker_count == 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = _Fetcher(*self._fetch_args)

    def _next_batch(self):
        return self._fetcher.fetch(self._draw_index())


# Iterators whose workers are running, shut down at interpreter exit (before multiprocessing's own
# exit handler terminates daemonic workers, so segments still in flight are swept).
_live_iterators = weakref.WeakSet()
_live_lock = threading.Lock()
# Their queues, held from here until shutdown: an iterator that dies in a reference cycle (an
# exception's traceback holds it) is finalized by the garbage collector, which would otherwise close
# its queues' feeder threads first, and the None telling each worker to exit would never be sent.
_live_queues = {}


@atexit.register
def _shutdown_live_iterators():
    with _live_lock:
        iterators = list(_live_iterators)
    for it in iterators:
        it._shutdown_workers()


def _signal_name(number):
    try:
        return signal.strsignal(number)
    except (ValueError, AttributeError):
        return f"signal {number}"


def _worker_death_message(pid, code):
    """torch's error for a worker that died unasked: killed by a signal (a SIGBUS hints at shared memory)
    or exited with a non-zero code."""
    if code is None or code >= 0:
        return (f"DataLoader worker (pid {pid}) exited unexpectedly with exit code {code}. Details are lost due "
                "to multiprocessing. Rerunning with num_workers=0 may give better error trace.")
    message = f"DataLoader worker (pid {pid}) is killed by signal: {_signal_name(-code)}."
    if -code == getattr(signal, "SIGBUS", None):
        message += (" It is possible that dataloader's workers are out of shared memory. Please try to raise "
                    "your shared memory limit.")
    return message


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Fetch in num_workers worker processes and yield their batches in sampler order.

    Task i (the i-th index batch of the epoch) goes to worker i mod num_workers (skipping workers
    whose IterableDataset copy is exhausted); at most prefetch_factor * num_workers tasks are out
    at once. Results arriving early wait in `_early` until their turn (or are yielded at once
    when in_order=False). While waiting, the main process checks every MP_STATUS_CHECK_INTERVAL
    seconds that its workers are alive, so a killed worker raises instead of hanging.

    `_workers`, `_send_idx` (tasks sent) and `_rcvd_idx` (the next task to yield) keep torch's names.
    """

    def __init__(self, loader):
        self._closed = True  # nothing to shut down until the workers exist
        self._configure(loader)
        self._owner_pid = os.getpid()
        self._max_in_flight = loader.prefetch_factor * self._worker_count
        self._keep_order = loader.in_order
        context = loader.multiprocessing_context
        if context is None:
            context = python_multiprocessing.get_context()
        self._segment_prefix = f"ember_{os.getpid()}_{secrets.token_hex(4)}_"
        self._result_queue = context.Queue()
        self._done_flag = context.RawValue("b", 0)  # lock-free: a killed worker cannot leave it locked
        self._task_queues = []
        self._workers = []
        self._told_to_exit = []
        self._returned_segments = []  # (worker id, segment name) the main process no longer maps
        self._closed = False
        with _live_lock:
            _live_iterators.add(self)
            _live_queues[id(self)] = (self._result_queue, self._task_queues)
        try:
            self._spawn_workers(context, loader.worker_init_fn)
        except BaseException:
            self._shutdown_workers()
            raise
        self._start_epoch(loader, first=True)

    def _spawn_workers(self, context, init_fn):
        kind, dataset, batched, collate, drop_last = self._fetch_args
        for worker_id in range(self._worker_count):
            tasks = context.Queue()
            tasks.cancel_join_thread()  # never block exit on tasks nobody will take
            process = context.Process(
                target=_worker._worker_loop, daemon=True,
                args=(kind, dataset, tasks, self._result_queue, self._done_flag, batched, collate, drop_last,
                      self._base_seed, init_fn, worker_id, self._worker_count, self._persistent,
                      self._segment_prefix))
            process.start()
            self._task_queues.append(tasks)
            self._workers.append(process)
            self._told_to_exit.append(False)

    def _start_epoch(self, loader, first=False):
        super()._start_epoch(loader, first)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._owner = {}  # task -> worker, from sending until the task is yielded or skipped
        self._early = {}  # task -> data that arrived before its turn
        self._in_flight = 0
        # False for a worker whose IterableDataset copy is exhausted this epoch
        self._active = [True] * self._worker_count
        self._load = [0] * self._worker_count  # tasks each worker holds
        self._rotation = itertools.cycle(range(self._worker_count))
        if not first:
            self._resume_workers()
        for _ in range(self._max_in_flight):
            self._dispatch_next()

    def _resume_workers(self):
        """Persistent workers: new fetchers for the new epoch. Results of an unfinished epoch still in
        flight arrive before the acknowledgements and are dropped (their segments go back to the workers)."""
        for tasks in self._task_queues:
            tasks.put(_worker._ResumeIteration())
        acknowledged = 0
        while acknowledged < self._worker_count:
            task, _ = self._receive()
            acknowledged += isinstance(task, _worker._ResumeIteration)

    def _pick_worker(self):
        """The next active worker in rotation (with spare capacity when order does not matter), or None."""
        for _ in range(self._worker_count):
            candidate = next(self._rotation)
            if not self._active[candidate]:
                continue
            if self._keep_order or self._load[candidate] < self._max_in_flight // sum(self._active):
                return candidate
        return None

    def _dispatch_next(self):
        """Send the sampler's next index batch to the next active worker, if any."""
        assert self._in_flight < self._max_in_flight, "more tasks in flight than prefetch_factor allows"
        try:
            index = self._draw_index()
        except StopIteration:
            return
        worker_id = self._pick_worker()
        if worker_id is None:
            return
        self._return_segments()
        task = self._send_idx
        self._task_queues[worker_id].put((task, index))
        self._owner[task] = worker_id
        self._load[worker_id] += 1
        self._in_flight += 1
        self._send_idx = task + 1

    def _return_segments(self):
        """Return segments whose tensors are gone to the workers that lent them (Note [Segment pool])."""
        if not self._returned_segments:
            return
        count = len(self._returned_segments)
        batch = self._returned_segments[:count]
        del self._returned_segments[:count]  # appends made meanwhile (a tensor dying in another thread) stay
        by_worker = {}
        for worker_id, name in batch:
            by_worker.setdefault(worker_id, []).append(name)
        for worker_id, names in by_worker.items():
            if not self._told_to_exit[worker_id]:
                self._task_queues[worker_id].put(_worker._Release(tuple(names)))

    def _advance_to_live_task(self):
        """Moves `_rcvd_idx` past tasks that will never be answered (sent to a worker whose IterableDataset
        copy ran out) or were already yielded out of order; False when no task is left this epoch."""
        while self._rcvd_idx < self._send_idx:
            task = self._rcvd_idx
            owner = self._owner.get(task)
            if owner is not None:
                if task in self._early or self._active[owner]:
                    return True
                del self._owner[task]
            self._rcvd_idx = task + 1
        return False

    def _next_batch(self):
        while True:
            if not self._advance_to_live_task():
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            turn = self._rcvd_idx
            if turn in self._early:
                self._rcvd_idx = turn + 1
                return self._complete(turn, self._early.pop(turn))
            assert not self._closed and self._in_flight > 0
            task, data = self._receive()
            self._in_flight -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._on_worker_exhausted(data.worker_id)
                continue
            if task == turn:
                self._rcvd_idx = turn + 1
                return self._complete(task, data)
            if not self._keep_order:
                return self._complete(task, data)
            self._early[task] = data  # early: wait for its turn

    def _on_worker_exhausted(self, worker_id):
        """A worker's IterableDataset copy ran out: send it nothing more this epoch (a non-persistent one
        is told to exit), and fill its slot from another worker."""
        if self._persistent:
            self._active[worker_id] = False
        else:
            self._retire(worker_id)
        self._dispatch_next()

    def _complete(self, task, data):
        """Releases the task's slot, sends the next one, and returns its data (re-raising a worker's error)."""
        self._load[self._owner.pop(task)] -= 1
        self._dispatch_next()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _receive(self):
        """The next (task index, data) from any worker, waiting at most `timeout` if one is set."""
        deadline = _now() + self._wait_limit if self._wait_limit > 0 else None
        while True:
            wait = MP_STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, max(deadline - _now(), 0.0))
            try:
                task, payload = self._result_queue.get(timeout=wait)
            except queue.Empty:
                self._raise_if_worker_died()
                if deadline is not None and _now() >= deadline:
                    raise RuntimeError(f"DataLoader timed out after {self._wait_limit} seconds") from None
                continue
            if payload is None:
                return task, None
            return task, _worker.load_result(payload, self._returned_segments)

    def _raise_if_worker_died(self):
        """Raise (after shutting everything down) if a worker that should be running has died."""
        for worker_id, process in enumerate(self._workers):
            if self._told_to_exit[worker_id] or process.is_alive():
                continue
            code = process.exitcode
            if code == 0:
                # Exiting cleanly unasked means a KeyboardInterrupt ended the worker's loop: a Ctrl-C to the
                # whole process group that may reach this process a moment later (the sleep is interruptible),
                # or that was swallowed here by a finalizer. Either way it surfaces as KeyboardInterrupt
                # (torch raises RuntimeError when a worker alone gets SIGINT).
                time.sleep(_CTRL_C_GRACE)
                self._shutdown_workers()
                raise KeyboardInterrupt from None  # (not chained to the queue.Empty being handled)
            self._shutdown_workers()
            raise RuntimeError(_worker_death_message(process.pid, code))

    def _retire(self, worker_id):
        """Tell a worker to exit (its IterableDataset copy is exhausted, or we are shutting down)."""
        if not self._told_to_exit[worker_id]:
            self._task_queues[worker_id].put(None)
            self._told_to_exit[worker_id] = True
        self._active[worker_id] = False

    def _shutdown_workers(self):
        """Stop the workers, close the queues and unlink segments that were never received.
        Safe to call more than once, and only acts in the process that started the workers."""
        if self._closed or os.getpid() != self._owner_pid:
            return
        self._closed = True
        try:
            self._done_flag.value = 1
            for worker_id in range(len(self._workers)):
                self._retire(worker_id)
            deadline = _now() + WORKER_JOIN_TIMEOUT
            for process in self._workers:
                process.join(timeout=max(deadline - _now(), 0.0))
        finally:
            self._stop_stragglers()
            for q in [*self._task_queues, self._result_queue]:
                q.cancel_join_thread()
                q.close()
            shm.sweep(self._segment_prefix)  # every worker is gone: whatever is left was never received
            with _live_lock:
                _live_iterators.discard(self)
                _live_queues.pop(id(self), None)

    def _stop_stragglers(self):
        """Terminates, then kills, workers still running after the join timeout."""
        for process in self._workers:
            if process.is_alive():
                process.terminate()
                process.join(timeout=WORKER_JOIN_TIMEOUT)
            if process.is_alive():
                process.kill()
                process.join()

    def __del__(self):
        if getattr(self, "_closed", True) is False:
            self._shutdown_workers()
