"""DataLoader: batches from a dataset through a sampler and a collate function.

See https://pytorch.org/docs/stable/data.html. The path from indices to a batch is
`_Fetcher.fetch` alone: the main process runs it when num_workers == 0, and each worker process
runs it (ember/utils/data/_worker.py) on index batches the main process draws from the sampler
with `_BaseDataLoaderIter._next_index` and sends round-robin; `_MultiProcessingDataLoaderIter`
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
_CTRL_C_GRACE = 0.5  # seconds a worker's clean exit waits for our own Ctrl-C before it is an error (_check_workers_alive)
# How long shutdown waits for a worker to exit before terminating it.
WORKER_JOIN_TIMEOUT = 5.0


class _DatasetKind:
    Map = 0
    Iterable = 1


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: an endless stream of None (the dataset decides what comes next)."""

    def __iter__(self):
        while True:
            yield None


class _Fetcher:
    """Turn one index (or one list of indices, when auto-collating) into a collated batch.

    Map-style datasets are indexed (`__getitems__` if the dataset has it); iterable datasets are
    read from a single iterator kept across calls. StopIteration means the epoch is over.
    """

    def __init__(self, kind, dataset, auto_collation, collate_fn, drop_last):
        self.kind = kind
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        # an iterable dataset's iterator is made when the epoch starts (iter(loader)), as in torch
        self.dataset_iter = iter(dataset) if kind == _DatasetKind.Iterable else None
        self.ended = False

    def fetch(self, index):
        if self.kind == _DatasetKind.Map:
            batch = self._tensor_dataset_batch(index)
            if batch is not None:
                return batch
            data = self._fetch_map(index)
        else:
            data = self._fetch_iterable(index)
        return self.collate_fn(data)

    def _tensor_dataset_batch(self, index):
        """A TensorDataset batch under the default collate, in the main process: each tensor gathered
        once at the batch's indices, which is the stack of its rows that collating the samples one
        by one would build (same values, dtype, shape, a fresh contiguous tensor), without a Python
        call per sample: 64-sample batches of 3x32x32 ~4x faster. None where that does not hold
        (a subclass, another collate_fn, a worker's shared-memory batch, tensors requiring grad)."""
        dataset = self.dataset
        if not self.auto_collation or type(dataset) is not TensorDataset or \
                self.collate_fn is not _collate.default_collate or get_worker_info() is not None:
            return None
        tensors = dataset.tensors
        if not tensors or any(t.requires_grad for t in tensors):
            return None
        try:
            idx = np.asarray(index)
        except (TypeError, ValueError):
            return None
        if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
            return None
        return [Tensor._make(np.take(t._data, idx, axis=0), t._dtype) for t in tensors]

    def _fetch_map(self, index):
        if not self.auto_collation:
            return self.dataset[index]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(index)
        return [self.dataset[i] for i in index]

    def _fetch_iterable(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return next(self.dataset_iter)
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if len(data) == 0 or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return data


class DataLoader(Generic[_T_co]):
    """https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader

    pin_memory is accepted and has no effect (ember has no accelerator to pin for).
    """
    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.__multiprocessing_context = None
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None  # the len() reported to the user, to warn if exceeded
        self._iterator = None

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        """A start method name or a multiprocessing context, for num_workers > 0 only."""
        if multiprocessing_context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers "
                                 f"> 0), but got num_workers={self.num_workers}")
            if isinstance(multiprocessing_context, str):
                valid_start_methods = python_multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid_start_methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{valid_start_methods!r}, but got "
                                     f"multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = python_multiprocessing.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, python_multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={multiprocessing_context}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterator draws from: index batches when auto-collating, single indices otherwise."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        """A new iterator per epoch; persistent workers keep one iterator (and its processes) for
        the loader's lifetime and reset it each epoch."""
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def check_worker_number_rationality(self):
        """Warn when num_workers exceeds the CPUs this process may run on, as torch does."""
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count()
        if cpus is not None and self.num_workers > cpus:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. Our suggested "
                          f"max number of worker in current system is {cpus}, which is smaller than what this "
                          "DataLoader is going to create. Please be aware that excessive worker creation might get "
                          "DataLoader running slow or even freeze, lower the worker number to avoid potential "
                          "slowness/freeze if necessary.", UserWarning, stacklevel=3)

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    """One epoch over a DataLoader: draws indices from the sampler and yields fetched batches."""

    def __init__(self, loader):
        self._init_state(loader)
        self._reset(loader, first_iter=True)

    def _init_state(self, loader):
        from ... import empty
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        self._pin_memory = False
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        # torch draws a base seed (for worker seeding) from the loader's generator once per iterator;
        # ember draws it too, so the generator's stream advances exactly as torch's does
        self._base_seed = empty((), dtype=D.int64).random_(generator=loader.generator).item()
        self._persistent_workers = loader.persistent_workers

    def _reset(self, loader, first_iter=False):
        """Start an epoch: a fresh pass over the sampler."""
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def __iter__(self):
        return self

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        reported = self._IterableDataset_len_called
        if self._dataset_kind == _DatasetKind.Iterable and reported is not None and self._num_yielded > reported:
            warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be {reported}(when accessing "
                          f"len(dataloader)), but {self._num_yielded} samples have been fetched. ", stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Fetch in the calling process."""

    def __init__(self, loader):
        super().__init__(loader)
        if self._num_workers == 0 and self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = _Fetcher(self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
                                 self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


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


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Fetch in num_workers worker processes and yield their batches in sampler order.

    Task i (the i-th index batch of the epoch) goes to worker i mod num_workers (skipping workers
    whose IterableDataset copy is exhausted); at most prefetch_factor * num_workers tasks are out
    at once. Results arriving early wait in `_task_info` until their turn (or are yielded at once
    when in_order=False). While waiting, the main process checks every MP_STATUS_CHECK_INTERVAL
    seconds that its workers are alive, so a killed worker raises instead of hanging.
    """

    def __init__(self, loader):
        self._shutdown = True  # nothing to shut down until the workers exist
        self._init_state(loader)
        self._owner_pid = os.getpid()
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = python_multiprocessing.get_context()
        self._shm_prefix = f"ember_{os.getpid()}_{secrets.token_hex(4)}_"
        self._data_queue = ctx.Queue()
        self._workers_done = ctx.RawValue("b", 0)  # lock-free: a killed worker cannot leave it locked
        self._index_queues = []
        self._workers = []
        self._exit_sent = []
        self._released = []  # (worker id, segment name) the main process no longer maps
        self._shutdown = False
        with _live_lock:
            _live_iterators.add(self)
            _live_queues[id(self)] = (self._data_queue, self._index_queues)
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()  # never block exit on tasks nobody will take
                w = ctx.Process(target=_worker._worker_loop, daemon=True,
                                args=(self._dataset_kind, self._dataset, index_queue, self._data_queue,
                                      self._workers_done, self._auto_collation, self._collate_fn, self._drop_last,
                                      self._base_seed, loader.worker_init_fn, i, self._num_workers,
                                      self._persistent_workers, self._shm_prefix))
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
                self._exit_sent.append(False)
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the next task to send
        self._rcvd_idx = 0  # the next task to yield
        # task -> (worker id,) while outstanding, (worker id, data) once it arrived out of order
        self._task_info = {}
        self._tasks_outstanding = 0
        # False for a worker whose IterableDataset copy is exhausted this epoch
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers: new fetchers for the new epoch; results of an unfinished epoch
            # still in flight come first and are dropped (their segments go back to the workers)
            for q in self._index_queues:
                q.put(_worker._ResumeIteration())
            waiting = self._num_workers
            while waiting > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _worker._ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        """Send the sampler's next index batch to the next active worker, if any."""
        max_tasks = self._prefetch_factor * self._num_workers
        assert self._tasks_outstanding < max_tasks
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status):
                    break  # out of order: only to a worker with spare capacity
        else:
            return
        self._hand_back_segments()
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _hand_back_segments(self):
        """Return segments whose tensors are gone to the workers that lent them (Note [Segment pool])."""
        if not self._released:
            return
        count = len(self._released)
        released = self._released[:count]
        del self._released[:count]  # appends made meanwhile (a tensor dying in another thread) stay
        names = {}
        for worker_id, name in released:
            names.setdefault(worker_id, []).append(name)
        for worker_id, group in names.items():
            if not self._exit_sent[worker_id]:
                self._index_queues[worker_id].put(_worker._Release(tuple(group)))

    def _next_data(self):
        while True:
            # skip tasks of workers that ran out of data (IterableDataset) without answering them
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            assert not self._shutdown and self._tasks_outstanding > 0
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            if not self._in_order:
                worker_id = self._task_info.pop(idx)[0]
                return self._process_data(data, worker_id)
            self._task_info[idx] += (data,)  # early: wait for its turn

    def _process_data(self, data, worker_id):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _get_data(self):
        """The next (task index, data) from any worker, waiting at most `timeout` if one is set."""
        deadline = None if self._timeout <= 0 else _now() + self._timeout
        while True:
            wait = MP_STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, max(deadline - _now(), 0.0))
            try:
                idx, payload = self._data_queue.get(timeout=wait)
            except queue.Empty:
                self._check_workers_alive()
                if deadline is not None and _now() >= deadline:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
                continue
            data = None if payload is None else _worker.load_result(payload, self._released)
            return idx, data

    def _check_workers_alive(self):
        """Raise (after shutting everything down) if a worker that should be running has died."""
        for worker_id, w in enumerate(self._workers):
            if self._exit_sent[worker_id] or w.is_alive():
                continue
            code = w.exitcode
            if code == 0:
                # a worker leaves cleanly unasked only when a KeyboardInterrupt ended its loop: a Ctrl-C sent to the
                # whole process group, on its way to this process too, which a loaded machine may schedule after
                # the worker. A moment's wait lets it raise here as a plain Ctrl-C (time.sleep is interruptible).
                # Ours can also be lost: landing in a finalizer (a shared memory segment's __del__ runs Python),
                # Python prints it as "Exception ignored" and goes on. So the Ctrl-C is raised here for it.
                # (torch raises RuntimeError when a worker alone gets SIGINT; ember raises KeyboardInterrupt.)
                time.sleep(_CTRL_C_GRACE)
                self._shutdown_workers()
                raise KeyboardInterrupt from None  # (not chained to the queue.Empty being handled)
            self._shutdown_workers()
            if code is not None and code < 0:
                try:
                    name = signal.strsignal(-code)
                except (ValueError, AttributeError):
                    name = f"signal {-code}"
                msg = f"DataLoader worker (pid {w.pid}) is killed by signal: {name}."
                if -code == getattr(signal, "SIGBUS", None):
                    msg += (" It is possible that dataloader's workers are out of shared memory. Please try to raise "
                            "your shared memory limit.")
                raise RuntimeError(msg)
            raise RuntimeError(f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {code}. Details "
                               "are lost due to multiprocessing. Rerunning with num_workers=0 may give better error "
                               "trace.")

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False):
        """Tell a worker to exit (its IterableDataset copy is exhausted, or we are shutting down)."""
        if not self._exit_sent[worker_id]:
            self._index_queues[worker_id].put(None)
            self._exit_sent[worker_id] = True
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        """Stop the workers, close the queues and unlink segments that were never received.
        Safe to call more than once, and only acts in the process that started the workers."""
        if self._shutdown or os.getpid() != self._owner_pid:
            return
        self._shutdown = True
        try:
            self._workers_done.value = 1
            for worker_id in range(len(self._workers)):
                self._mark_worker_as_unavailable(worker_id, shutdown=True)
            deadline = _now() + WORKER_JOIN_TIMEOUT
            for w in self._workers:
                w.join(timeout=max(deadline - _now(), 0.0))
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=WORKER_JOIN_TIMEOUT)
                if w.is_alive():
                    w.kill()
                    w.join()
            for q in self._index_queues + [self._data_queue]:
                q.cancel_join_thread()
                q.close()
            shm.sweep(self._shm_prefix)  # every worker is gone: whatever is left was never received
            with _live_lock:
                _live_iterators.discard(self)
                _live_queues.pop(id(self), None)

    def __del__(self):
        if getattr(self, "_shutdown", True) is False:
            self._shutdown_workers()


_now = time.monotonic
