"""DataLoader with worker processes, against torch's DataLoader with workers.

Batch order, len, drop_last, collation, IterableDataset sharding, worker info and error messages
are compared with torch running the same dataset with the same number of workers. Seeding is
checked for its structure (torch's generator is not ember's, see Note [Random streams]). The
failure modes (exception, killed worker, early delete, Ctrl-C, interpreter exit) are checked for a
bounded time and for no shared-memory segment left in /dev/shm.
"""
import gc
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata
from ember import _shared_memory as shm
from ember._backend.numpy_cpu import storage_root

from ._mp_helpers import WorkerInfoDataset
from .test_data import describe

LIBS = ((torch, tdata), (ember, edata))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def segments():
    """Shared-memory names this process's DataLoaders own."""
    return shm.count(f"ember_{os.getpid()}_")


class Samples:
    """Map-style dataset of mixed samples (dict of array, int, tensor, str), the same for both libraries."""

    def __init__(self, lib, n=11):
        self.lib = lib
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.full((2, 3), i, dtype=np.float32), "y": i, "t": self.lib.tensor([i, -i]), "name": f"s{i}"}


class Squares:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=4, prefetch_factor=1),
    dict(batch_size=None), dict(batch_size=2, num_workers=3),
    dict(batch_sampler=[[3, 1], [0], [10, 9, 8, 2], [4, 5, 6, 7]]),
], ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_batches_len_and_collation_match_torch(kwargs):
    kwargs = dict(dict(num_workers=2), **kwargs)
    results = []
    for lib, data in LIBS:
        loader = data.DataLoader(Samples(lib), **kwargs)
        batches = [describe(b) for b in loader]
        results.append((len(loader), batches))
        assert len(batches) == len(loader)
    assert results[1] == results[0]


class Shards:
    """An IterableDataset that each worker reads a disjoint share of (via get_worker_info)."""

    def __init__(self, data, n=13, shard=True):
        self.data = data
        self.n = n
        self.shard = shard

    def __iter__(self):
        info = self.data.get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def _iterable(data, **kwargs):
    base = type("ShardsOf" + data.__name__.split(".")[0], (Shards, data.IterableDataset), {})
    return base(data, **kwargs)


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=2), dict(batch_size=3, drop_last=True), dict(batch_size=None),
    dict(batch_size=2, shard=False), dict(batch_size=4, n=5, num_workers=3),
], ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_iterable_dataset_sharding_matches_torch(kwargs):
    ds_kwargs = {k: kwargs.pop(k) for k in ("n", "shard") if k in kwargs}
    kwargs.setdefault("num_workers", 2)
    results = [[describe(b) for b in data.DataLoader(_iterable(data, **ds_kwargs), **kwargs)] for _, data in LIBS]
    assert results[1] == results[0]


class InfoProbe:
    """Returns what get_worker_info() says inside the worker that loads sample i."""

    def __init__(self, data):
        self.data_module = data.__name__  # a name: spawned workers unpickle the dataset

    @property
    def data(self):
        return sys.modules[self.data_module]

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = self.data.get_worker_info()
        try:
            info.id = 7
            frozen = None
        except Exception as e:
            frozen = type(e).__name__
        return [info.id, info.num_workers, info.seed, type(info.dataset).__name__, info.dataset is self,
                info.worker_method, info.rng, frozen]


def test_worker_info_fields_match_torch():
    seen = []
    for lib, data in LIBS:
        rows = [row for batch in data.DataLoader(InfoProbe(data), batch_size=None, num_workers=2) for row in [batch]]
        seen.append(rows)
        assert data.get_worker_info() is None
    for rows in seen:
        assert [r[0] for r in rows] == [0, 1, 0, 1] and all(r[1] == 2 for r in rows)
        assert rows[1][2] - rows[0][2] == 1  # seed = base seed + worker id
        assert rows[0][3:] == rows[1][3:]
    strip = [[r[:2] + r[3:] for r in rows] for rows in seen]
    assert strip[1] == strip[0]


def _random_triplet(i):
    return [random.random(), float(np.random.rand()), ember.rand(()).item(), edata.get_worker_info().seed]


class RandomAugment:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return _random_triplet(i)


def _epoch_of_draws(seed, **kwargs):
    ember.manual_seed(seed)
    return [b for b in edata.DataLoader(RandomAugment(), batch_size=None, num_workers=2, **kwargs)]


def test_worker_seeds_differ_per_worker_and_reproduce_under_manual_seed():
    a = _epoch_of_draws(0)
    # samples 0 and 2 come from worker 0, 1 and 3 from worker 1: every stream differs between workers
    for k in range(3):
        assert a[0][k] != a[1][k] and a[2][k] != a[3][k]
        assert a[0][k] != a[2][k]  # and moves on within a worker
    assert _epoch_of_draws(0) == a
    assert _epoch_of_draws(1) != a
    # the base seed is the first draw of ember's default generator, as in torch
    ember.manual_seed(0)
    base = ember.empty((), dtype=ember.int64).random_().item()
    assert [row[3] for row in a] == [base, base + 1, base, base + 1]
    # a loader generator decides the base seed instead of the default generator
    g = [b[3] for b in edata.DataLoader(RandomAugment(), batch_size=None, num_workers=2,
                                         generator=ember.Generator().manual_seed(5))]
    expected = ember.empty((), dtype=ember.int64).random_(generator=ember.Generator().manual_seed(5)).item()
    assert g == [expected, expected + 1] * 2


_init_calls = []


def _record_init(worker_id):
    _init_calls.append(worker_id)


class InitProbe:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return list(_init_calls)


def test_worker_init_fn_runs_once_in_each_worker():
    rows = list(edata.DataLoader(InitProbe(), batch_size=None, num_workers=2, worker_init_fn=_record_init))
    assert rows == [[0], [1], [0], [1]]
    assert _init_calls == []  # it ran in the workers, not here


def _failing_init(worker_id):
    raise ValueError(f"cannot set up worker {worker_id}")


def test_worker_init_fn_failure_is_reported_like_torch():
    texts = []
    for lib, data in LIBS:
        it = iter(data.DataLoader(Squares(4), batch_size=2, num_workers=2, worker_init_fn=_failing_init))
        try:
            next(it)
        except ValueError as e:
            texts.append(str(e))
        it._shutdown_workers()  # see test_worker_exception_reraised_with_traceback_like_torch
    assert len(texts) == 2
    for text in texts:
        assert text.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback")
        assert text.endswith("ValueError: cannot set up worker 0\n")


class Failing:
    def __init__(self, exc, at=3, n=8):
        self.exc = exc
        self.at = at
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.at:
            raise self.exc
        return i


class NeedsTwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


@pytest.mark.parametrize("exc", [ValueError("bad sample 3"), KeyError("missing"), IndexError("out of range")],
                         ids=lambda e: type(e).__name__)
def test_worker_exception_reraised_with_traceback_like_torch(exc):
    messages = []
    for lib, data in LIBS:
        it = iter(data.DataLoader(Failing(exc), batch_size=2, num_workers=2))
        assert next(it).tolist() == [0, 1]
        caught = None
        try:  # not pytest.raises: its traceback would keep the iterator (and torch's workers) alive
            next(it)
        except Exception as e:
            caught = (type(e), str(e))
        assert caught is not None and caught[0] is type(exc)
        messages.append(caught[1])
        assert next(it).tolist() == [4, 5]  # the loader goes on after a failed batch, as torch's
        # torch's re-raise leaves its iterator in a reference cycle; a later gc pass would shut its workers
        # down only after closing their queues (5 s join timeouts), so shut them down now
        it._shutdown_workers()
    for text in messages:
        lines = text.splitlines()
        assert lines[0] == f"Caught {type(exc).__name__} in DataLoader worker process 1."
        assert lines[1] == "Original Traceback (most recent call last):"
        assert "in __getitem__" in text and "raise self.exc" in text
        assert lines[-1] == f"{type(exc).__name__}: {exc}"


def test_exception_that_cannot_take_the_message_becomes_runtime_error():
    it = iter(edata.DataLoader(Failing(NeedsTwoArgs(1, 2), at=0), batch_size=2, num_workers=1))
    with pytest.raises(RuntimeError, match="Caught NeedsTwoArgs in DataLoader worker process 0"):
        next(it)


def test_unpicklable_batch_is_an_error_not_a_hang():
    loader = edata.DataLoader(Squares(4), batch_size=2, num_workers=1, collate_fn=lambda b: (lambda: b))
    with pytest.raises(Exception, match=r"in DataLoader worker process 0 \(sending a batch\)"):
        next(iter(loader))
    gc.collect()
    assert segments() == 0


class Slow:
    def __init__(self, n=40, delay=0.02):
        self.n = n
        self.delay = delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        return ember.full((256,), float(i))


def test_killed_worker_raises_clear_error_within_seconds():
    it = iter(edata.DataLoader(Slow(), batch_size=2, num_workers=2))
    next(it)
    victim = it._workers[1]
    os.kill(victim.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid {victim.pid}\) is killed by signal: Killed\."):
        for _ in it:
            pass
    assert time.monotonic() - start < 5
    assert not any(w.is_alive() for w in it._workers)  # the survivor is shut down too
    assert segments() == 0


def test_worker_that_exits_is_reported_with_its_exit_code():
    class Exits(Squares):
        def __getitem__(self, i):
            if i == 2:
                os._exit(3)
            return i
    it = iter(edata.DataLoader(Exits(6), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match=r"exited unexpectedly with exit code 3"):
        list(it)


def test_worker_stopped_by_ctrl_c_raises_keyboard_interrupt():
    """A worker ends cleanly unasked only on a Ctrl-C; if this process's own was lost (swallowed in a
    finalizer), the loader raises it instead of reporting an error about exit code 0."""
    class Interrupted(Squares):
        def __getitem__(self, i):
            if i == 2:
                os.kill(os.getpid(), signal.SIGINT)  # this worker alone
            return i
    it = iter(edata.DataLoader(Interrupted(6), batch_size=2, num_workers=2))
    with pytest.raises(KeyboardInterrupt):
        list(it)
    assert not any(w.is_alive() for w in it._workers)


def test_full_shared_memory_is_an_error_not_a_crash(monkeypatch):
    import errno

    def no_space(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "posix_fallocate", no_space)  # fork workers inherit the patch
    it = iter(edata.DataLoader(Slow(4, 0), batch_size=2, num_workers=1))
    with pytest.raises(OSError, match=r"(?s)Caught OSError in DataLoader worker process 0.*no space left in"):
        next(it)
    it._shutdown_workers()
    assert segments() == 0


def test_timeout_raises():
    it = iter(edata.DataLoader(Slow(4, delay=0.5), batch_size=2, num_workers=1, timeout=0.2))
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        next(it)  # the batch itself would take 1 s
    assert time.monotonic() - start < 3.0  # slack for a loaded machine


def test_no_segment_left_after_any_ending():
    before = segments()
    assert before == 0
    # exhausted normally
    assert [b[0, 0].item() for b in edata.DataLoader(Slow(6, 0), batch_size=2, num_workers=2)] == [0, 2, 4]
    assert segments() == 0
    # an exception: the iterator stays usable, its segments go when it does
    it = iter(edata.DataLoader(Failing(ValueError("x"), at=1), batch_size=1, num_workers=2))
    with pytest.raises(ValueError):
        for _ in it:
            pass
    del it
    gc.collect()
    assert segments() == 0
    # deleted early with prefetched batches waiting in shared memory
    it = iter(edata.DataLoader(Slow(40, 0), batch_size=2, num_workers=2))
    next(it)
    deadline = time.monotonic() + 5
    while segments() < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert segments() >= 2  # in flight: the check below could fail
    workers = it._workers
    del it
    assert segments() == 0 and not any(w.is_alive() for w in workers)
    # breaking out of the loop
    for _ in edata.DataLoader(Slow(40, 0), batch_size=2, num_workers=2):
        break
    assert segments() == 0
    # a killed worker is covered by test_killed_worker_raises_clear_error_within_seconds


def test_batches_are_zero_copy_views_of_unlinked_shared_memory():
    x = ember.arange(24.0).reshape(6, 4)
    loader = edata.DataLoader(edata.TensorDataset(x, ember.arange(6)), batch_size=3, num_workers=1)
    for xb, yb in loader:
        for t in (xb, yb):
            assert t.is_shared()
            seg = shm.segment_of(t._data)
            assert isinstance(seg, shm.Segment) and seg.fd is None  # no descriptor held per batch
            assert storage_root(t._data).ctypes.data == seg.address  # the array views the mapping itself
            assert not os.path.exists(os.path.join(shm.SHM_DIR, seg.name or "-"))
        assert xb.is_contiguous() and xb.storage_offset() == 0
        xb.add_(1)  # writable
    assert segments() == 0


def test_workers_reuse_handed_back_segments_but_never_live_ones():
    kept = []
    most = 0
    for k, b in enumerate(edata.DataLoader(Slow(120, 0), batch_size=2, num_workers=2)):
        assert b[:, 0].tolist() == [2 * k, 2 * k + 1]
        if k % 4 == 0:
            kept.append((k, b))  # still mapped here: its segment must not be refilled
        most = max(most, segments())
    for k, b in kept:
        assert b[:, 0].tolist() == [2 * k, 2 * k + 1] and b[:, -1].tolist() == [2 * k, 2 * k + 1]
    # 60 batches, 15 kept: without reuse every batch would leave a segment until shutdown; with it,
    # besides the kept ones: the current batch, 4 in flight, a couple not yet handed back, 4 spares a worker
    assert most <= len(kept) + 20
    assert segments() == 0


def test_persistent_workers_reuse_processes_across_epochs():
    loader = edata.DataLoader(Slow(8, 0), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b[0, 0].item() for b in loader]
    pids = [w.pid for w in loader._iterator._workers]
    assert all(w.is_alive() for w in loader._iterator._workers)
    for _ in loader:  # an epoch left unfinished: its in-flight batches are dropped next time
        break
    assert [b[0, 0].item() for b in loader] == first == [0, 2, 4, 6]
    assert [w.pid for w in loader._iterator._workers] == pids
    workers = loader._iterator._workers
    del loader
    gc.collect()
    assert not any(w.is_alive() for w in workers) and segments() == 0


class Uneven:
    """Sample i takes longer when i // 2 is even: with batch_size=2 and 2 workers, worker 0 is slow."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        time.sleep(0.03 if (i // 2) % 2 == 0 else 0.0)
        return i


def test_sampler_order_kept_when_workers_finish_out_of_order():
    def epoch(workers):
        g = ember.Generator().manual_seed(3)
        return [b.tolist() for b in edata.DataLoader(Uneven(), batch_size=2, shuffle=True, generator=g,
                                                      num_workers=workers)]
    assert epoch(2) == epoch(0)


def test_prefetch_factor_bounds_tasks_in_flight():
    for lib, data in LIBS:
        assert data.DataLoader(Squares(4), num_workers=2).prefetch_factor == 2
    it = iter(edata.DataLoader(Slow(40, 0.01), batch_size=2, num_workers=2, prefetch_factor=3))
    assert it._send_idx == 6  # primed with prefetch_factor batches per worker
    for _ in it:
        assert it._send_idx - it._rcvd_idx <= 6


def test_in_order_false_yields_every_batch():
    loader = edata.DataLoader(Slow(12, 0), batch_size=2, num_workers=2, in_order=False)
    assert sorted(b[0, 0].item() for b in loader) == [0, 2, 4, 6, 8, 10]


def test_multiprocessing_context_argument_errors_match_torch():
    for lib, data in LIBS:
        with pytest.raises(ValueError):
            data.DataLoader(Squares(4), num_workers=1, multiprocessing_context="no-such-method")
        with pytest.raises(TypeError):
            data.DataLoader(Squares(4), num_workers=1, multiprocessing_context=object())
        with pytest.raises(ValueError):
            data.DataLoader(Squares(4), multiprocessing_context="fork")
    import multiprocessing
    loader = edata.DataLoader(Squares(4), num_workers=1, multiprocessing_context="fork")
    assert loader.multiprocessing_context is multiprocessing.get_context("fork")


def test_too_many_workers_warns():
    loader = edata.DataLoader(Squares(4), num_workers=os.cpu_count() + 1)
    with pytest.warns(UserWarning, match="worker processes in total"):
        loader.check_worker_number_rationality()


def test_spawn_context_by_name():
    loader = edata.DataLoader(WorkerInfoDataset(), batch_size=None, num_workers=2, multiprocessing_context="spawn")
    rows = list(loader)
    assert [r[:2] for r in rows] == [[0, 2], [1, 2], [0, 2], [1, 2]]
    assert rows[1][2] - rows[0][2] == 1 and all(r[3] for r in rows)
    assert segments() == 0


def test_forkserver_context_object_and_shared_dataset_tensors():
    import multiprocessing
    x = ember.arange(12.0).reshape(6, 2)
    loader = edata.DataLoader(edata.TensorDataset(x), batch_size=4, num_workers=1,
                              multiprocessing_context=multiprocessing.get_context("forkserver"))
    assert [b[0].tolist() for b in loader] == [x[:4].tolist(), x[4:].tolist()]
    assert x.is_shared()  # the dataset went to the worker by shared memory, as torch moves it


_SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    import ember
    from ember.utils.data import DataLoader

    class Slow:
        def __len__(self):
            return 1000
        def __getitem__(self, i):
            time.sleep(0.05)
            return ember.full((1024,), float(i))

    it = iter(DataLoader(Slow(), batch_size=2, num_workers=2))
    next(it)
    print(" ".join(str(w.pid) for w in it._workers), flush=True)
    if sys.argv[1] == "exit":
        sys.exit(0)  # the iterator is still alive: interpreter exit must shut it down
    for batch in it:
        pass
""")


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] == "Z"  # a zombie has exited


@pytest.mark.parametrize("ending", ["ctrl-c", "exit"])
def test_ctrl_c_and_interpreter_exit_shut_workers_down(ending):
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT.format(root=ROOT), ending], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        if ending == "ctrl-c":
            time.sleep(0.2)
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if ending == "ctrl-c":
        assert "KeyboardInterrupt" in err and proc.returncode != 0
        assert "Traceback" not in err.split("KeyboardInterrupt")[-1]
    else:
        assert proc.returncode == 0, err
        assert err == ""
    deadline = time.monotonic() + 5
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in pids)
    assert shm.count(f"ember_{proc.pid}_") == 0


def test_workers_outlast_a_pause_longer_than_their_status_check(monkeypatch):
    """A worker whose index queue stays empty past its status-check interval checks that its parent
    lives and waits on (torch's too): a slow training step between batches loses no worker. (The
    interval is shortened so that the pause spans several checks even on a loaded machine.)"""
    monkeypatch.setattr(ember.utils.data._worker, "WORKER_STATUS_CHECK_INTERVAL", 0.2)
    results = []
    for lib, data in LIBS:
        loader = data.DataLoader(Samples(lib), batch_size=4, num_workers=1, prefetch_factor=1)
        batches = []
        for i, b in enumerate(loader):
            batches.append(describe(b))
            if i == 0 and lib is ember:
                time.sleep(1.5)
        results.append(batches)
    assert results[1] == results[0]


class _TorchRandomAugment(RandomAugment):
    def __getitem__(self, i):
        return [random.random(), float(np.random.rand()), torch.rand(()).item(), tdata.get_worker_info().seed]


def test_worker_seeds_match_torch():
    """test_worker_seeds_differ_per_worker_and_reproduce_under_manual_seed against torch's workers: under the same
    manual_seed (or loader generator) each worker's seed and its Python, NumPy and library draws are torch's."""
    def epoch(lib, data, dataset, **kwargs):
        lib.manual_seed(0)
        return [b for b in data.DataLoader(dataset, batch_size=None, num_workers=2, **kwargs)]
    assert epoch(ember, edata, RandomAugment()) == epoch(torch, tdata, _TorchRandomAugment())
    assert epoch(ember, edata, RandomAugment(), generator=ember.Generator().manual_seed(5)) == \
        epoch(torch, tdata, _TorchRandomAugment(), generator=torch.Generator().manual_seed(5))


class _TorchSlow(Slow):
    def __getitem__(self, i):
        time.sleep(self.delay)
        return torch.full((256,), float(i))


def test_worker_order_init_fn_in_order_and_warnings_match_torch():
    """test_sampler_order_kept_when_workers_finish_out_of_order, test_worker_init_fn_runs_once_in_each_worker,
    test_in_order_false_yields_every_batch and test_too_many_workers_warns against torch's workers."""
    def story(lib, data, slow):
        g = lib.Generator().manual_seed(3)
        ordered = [b.tolist() for b in data.DataLoader(Uneven(), batch_size=2, shuffle=True, generator=g,
                                                        num_workers=2)]
        init = list(data.DataLoader(InitProbe(), batch_size=None, num_workers=2, worker_init_fn=_record_init))
        unordered = sorted(b[0, 0].item() for b in data.DataLoader(slow(12, 0), batch_size=2, num_workers=2,
                                                                   in_order=False))
        loader = data.DataLoader(Squares(4), num_workers=os.cpu_count() + 1)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            loader.check_worker_number_rationality()
        return [ordered, init, list(_init_calls), unordered, [c.category.__name__ for c in w]]
    assert story(ember, edata, Slow) == story(torch, tdata, _TorchSlow)

