"""parallel.run's pool threads (Note [Worker hand-off]): every piece runs once, on a pool thread or the
caller; an error in any piece reaches the caller only after all pieces are done, and the pool's threads
come back to it; callers that find no idle thread run every piece themselves; a forked child starts
its own threads.
"""
import os
import textwrap
import threading
import time

import pytest

from ember._backend import parallel

from ._threads import threads  # noqa: F401  (the fixture)


def _pieces(length):
    """run() over range(length): how often each position ran, and the names of the threads that ran."""
    seen, names = [0] * length, set()
    lock = threading.Lock()

    def fn(a, b):
        with lock:
            names.add(threading.current_thread().name)
            for i in range(a, b):
                seen[i] += 1
    parallel.run(fn, length, 1 << 40)
    return seen, names


@pytest.mark.parametrize("threads", [2, 3], indirect=True)
def test_every_piece_once_on_the_pool(threads):
    for _ in range(50):  # the same threads, handed a piece again and again
        seen, names = _pieces(10)
        assert seen == [1] * 10
        assert threading.current_thread().name in names
        assert len(names) == threads and all(n.startswith("ember-intraop") for n in names - {"MainThread"})
    assert len(parallel._idle) >= threads - 1


@pytest.mark.parametrize("threads", [2, 3], indirect=True)
@pytest.mark.parametrize("failing", ["caller", "worker", "all"])
def test_errors_reach_the_caller_after_every_piece(threads, failing):
    done = []
    lock = threading.Lock()

    def fn(a, b):
        on_pool = threading.current_thread().name.startswith("ember-intraop")
        if not on_pool:
            time.sleep(0.01)  # the caller's piece ends last: its error must not skip the wait
        else:
            time.sleep(0.02)  # or first: the pieces on the pool are still running
        with lock:
            done.append(a)
        if failing == "all" or (failing == "worker") == on_pool:
            raise ValueError(f"piece {a} failed")

    with pytest.raises(ValueError, match="failed") as info:
        parallel.run(fn, 9, 1 << 40)
    assert len(done) == threads  # every piece ran to its end before run() raised
    if failing != "worker":
        assert str(info.value) == "piece 0 failed"  # the caller's own error first
    idle = len(parallel._idle)
    assert _pieces(6)[0] == [1] * 6  # the threads came back to the pool and run again
    assert len(parallel._idle) == idle


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_a_busy_pool_leaves_the_pieces_to_the_caller(threads, monkeypatch):
    """While another thread's split holds the only pool thread, a second caller runs its pieces itself."""
    monkeypatch.setattr(parallel, "_idle", [])  # a pool of its own (the threads made so far stay idle)
    monkeypatch.setattr(parallel, "_made", 0)
    started, release = threading.Event(), threading.Event()
    names = []

    def slow(a, b):
        if threading.current_thread().name.startswith("ember-intraop"):
            started.set()
            release.wait(10)

    holder = threading.Thread(target=parallel.run, args=(slow, 2, 1 << 40))
    holder.start()
    assert started.wait(10)
    try:
        # a plain thread (not a pool thread, so run() would split), with no idle pool thread left
        t = threading.Thread(target=lambda: names.extend(_pieces(8)[1]), name="second-caller")
        t.start()
        t.join(10)
        assert not t.is_alive() and names == ["second-caller"]
    finally:
        release.set()
        holder.join(10)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
@pytest.mark.parametrize("threads", [2], indirect=True)
def test_forked_child_starts_its_own_threads(threads):
    _pieces(4)  # the parent's pool thread exists
    pid = os.fork()
    if pid == 0:  # the child: the parent's thread is gone; a split must not wait on it
        try:
            seen, names = _pieces(4)
            os._exit(0 if seen == [1] * 4 and len(names) == 2 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_pieces_are_not_kept_alive_after_the_split(threads):
    """A pool thread drops its piece once run: arrays the piece captured are freed when the caller lets go
    (held until the next split, they raised a ResNet-8 step's peak memory by 2.8 MB)."""
    import gc
    import weakref

    import numpy as np

    def piece_of(array):  # the piece holds the array itself (not a cell of this test's frame)
        return lambda a, b: array[a:b].sum()

    array = np.ones(1000)
    ref = weakref.ref(array)
    parallel.run(piece_of(array), 1000, 1 << 40)
    del array
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("threads", [2, 3], indirect=True)
@pytest.mark.parametrize("in_context", [True, False])
def test_pieces_run_under_the_callers_error_state(threads, in_context, monkeypatch):
    """NumPy's error state does not pass to a new thread: every piece, on the pool or the caller, sees the
    caller's, through a copy of the caller's context (NumPy 2) or np.errstate set again (the NumPy 1 way);
    the pool threads keep their own state afterwards, and an error a piece raises under it reaches the caller."""
    import numpy as np
    if in_context and int(np.__version__.split(".")[0]) < 2:
        pytest.skip("NumPy 1 keeps the error state per thread")
    monkeypatch.setattr(parallel, "_ERRSTATE_IN_CONTEXT", in_context)
    for _ in range(3):  # the same pool threads each time: none may keep the previous call's state
        seen = []

        def fn(a, b):
            seen.append((threading.current_thread().name, np.geterr()["divide"], np.geterr()["over"]))
        with np.errstate(divide="raise", over="ignore"):
            parallel.run(fn, 10, 1 << 40)
        assert len({name for name, _, _ in seen}) == threads
        assert {(d, o) for _, d, o in seen} == {("raise", "ignore")}
        after = []
        parallel.run(lambda a, b: after.append(np.geterr()["divide"]), 10, 1 << 40)
        assert set(after) == {np.geterr()["divide"]} != {"raise"}

    def divide(a, b):
        if threading.current_thread().name.startswith("ember-intraop"):
            np.float64(1.0) / np.float64(0.0)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        parallel.run(divide, 10, 1 << 40)


def test_spin_until_sees_another_threads_write_and_gives_up_after_its_budget():
    """spin_jit.spin_until (Note [Spinning hand-off]) returns True once another thread writes the cell, False when
    its reads run out, and releases the GIL meanwhile (the writer is a Python thread)."""
    import numpy as np
    from ember._backend import jit
    kernels = jit.load("spin_jit")
    if kernels is None or kernels.YIELD is None or __import__("numba").config.DISABLE_JIT:
        pytest.skip("needs ember[jit] (compiled) and sched_yield")
    cells = np.zeros(2, np.int64)
    assert not kernels.spin_until(cells, 1, 5, 1000)
    writer = threading.Timer(0.02, lambda: cells.__setitem__(1, 5))
    writer.start()
    assert kernels.spin_until(cells, 1, 5, 10**9)  # would run for minutes if the write were never seen
    writer.join()
    assert kernels.reads_per_us() > 0


@pytest.mark.parametrize("threads", [2, 3], indirect=True)
@pytest.mark.parametrize("mode", ["spin", "sleep", "no compiled wait"])
def test_hand_offs_spinning_or_sleeping_run_every_piece_once(threads, mode, monkeypatch):
    """The pool runs every piece once and hands errors back whether the workers spin between pieces (a gap
    threshold every gap meets), sleep at once (budgets 0), or have no compiled wait; with pauses longer than the
    spin between splits, so that the workers' spins run out and they sleep, and without."""
    if mode == "spin" and not parallel._spin:
        parallel._configure_spin()
        if not parallel._spin:
            pytest.skip("needs ember[jit]")
    if mode == "spin":
        monkeypatch.setattr(parallel, "SPIN_GAP_US", 10**9)
        monkeypatch.setattr(parallel, "SPIN_WORKER_US", 2000)
    elif mode == "sleep":
        monkeypatch.setattr(parallel, "SPIN_WORKER_US", 0)
        monkeypatch.setattr(parallel, "SPIN_CALLER_US", 0)
    else:
        monkeypatch.setattr(parallel, "_spin", False)
    for pause in (0, 0.005, 0):
        for _ in range(20):
            seen, names = _pieces(12)
            assert seen == [1] * 12 and len(names) == threads
            time.sleep(pause)

    def fail(a, b):
        if threading.current_thread().name.startswith("ember-intraop"):
            raise KeyError("piece failed")
    with pytest.raises(KeyError, match="piece failed"):
        parallel.run(fail, 12, 1 << 40)
    assert _pieces(12)[0] == [1] * 12


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_workers_spin_only_after_pieces_that_came_close_together(threads, monkeypatch):
    """A worker's wait after a piece spins SPIN_WORKER_US when that piece came less than SPIN_GAP_US after the one
    before, and not at all otherwise (nor after its first piece); the caller's wait spins SPIN_CALLER_US."""
    waits = []
    real = parallel._wait_for

    def spy(cells, i, want, us):
        waits.append((threading.current_thread().name.startswith("ember-intraop"), us))
        return real(cells, i, want, us)
    monkeypatch.setattr(parallel, "_wait_for", spy)
    monkeypatch.setattr(parallel, "SPIN_WORKER_US", 1234)
    monkeypatch.setattr(parallel, "SPIN_CALLER_US", 567)
    for gap_us in (10**9, 0):
        monkeypatch.setattr(parallel, "SPIN_GAP_US", gap_us)
        parallel._idle.clear()  # a fresh worker: its first piece has no gap before it
        monkeypatch.setattr(parallel, "_made", 0)
        waits.clear()
        for _ in range(4):
            _pieces(4)
        time.sleep(0.05)  # the worker's wait after its last piece has begun
        worker = [us for on_pool, us in waits if on_pool]
        caller = [us for on_pool, us in waits if not on_pool]
        assert caller == [567] * 4
        assert worker[:2] == [0, 0]  # before its first piece, and after it
        assert set(worker[2:]) == ({1234} if gap_us else {0})


def test_hand_offs_survive_thread_switches_between_any_two_lines():
    """A flag read after its lock is let go may already be cleared by the other side: with the interpreter switching
    threads every microsecond and both sides going straight to their locks, 20,000 splits each run both pieces once
    and the worker never wakes without a piece (a subprocess: a worker lost that way would hang the caller)."""
    import subprocess
    import sys
    code = textwrap.dedent("""
        import sys
        import ember
        from ember._backend import parallel
        ember.set_num_threads(2)
        parallel.SPIN_WORKER_US = parallel.SPIN_CALLER_US = 0
        sys.setswitchinterval(1e-6)
        out = [0, 0]
        for i in range(1, 20001):
            def fn(a, b):
                for k in range(a, b):
                    out[k] = i
            parallel.run(fn, 2, 1 << 40)
            assert out == [i, i], (i, out)
        print("ok")
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
