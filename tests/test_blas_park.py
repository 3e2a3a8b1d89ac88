"""Parking NumPy's OpenBLAS workers while ember's pool runs pieces (Note [Parked BLAS workers]): the spin budget
is found in the library's symbol table, is 0 inside every split (caller and pool thread alike) and comes back
after it, errors included; a budget that is not what OpenBLAS put there is never written; and a parked worker
really sleeps (its /proc state) until the next threaded GEMM.
"""
import os
import subprocess
import sys
import threading

import pytest

from ember._backend import blas, parallel

from ._threads import threads  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(blas._timeout_cell() is None,
                                reason="NumPy's BLAS is not an OpenBLAS (pthreads) with its symbol table")


def test_the_budget_is_openblas_own():
    lib = blas._find()
    syms = blas._elf_symbols(lib._name, ["thread_timeout", "no_such_symbol_here"])
    assert set(syms) == {"thread_timeout"} and syms["thread_timeout"][1] == 4
    assert blas._timeout_cell().value == blas._expected_budget()


def test_expected_budget_follows_the_environment(monkeypatch):
    for env, want in (("", 1 << 28), ("16", 1 << 16), ("2", 1 << 4), ("40", 1 << 30), ("x", 1 << 28)):
        monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", env)
        assert blas._expected_budget() == want


def _budgets_seen(length, fail_at=None):
    """run() over range(length) on the pool, each piece recording the budget it sees; one may raise."""
    seen = []

    def fn(a, b):
        seen.append((threading.current_thread().name, blas._cell.value))
        if fail_at is not None and a <= fail_at < b:
            raise ValueError("piece failed")
    parallel.run(fn, length, 1 << 40)
    return seen


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_a_split_parks_and_restores(threads):
    budget = blas._timeout_cell().value
    seen = _budgets_seen(4)
    assert len(seen) == 2 and {v for _, v in seen} == {0}
    assert any(name.startswith("ember-intraop") for name, _ in seen)
    assert blas._cell.value == budget and blas._parked == 0
    with pytest.raises(ValueError, match="piece failed"):
        _budgets_seen(4, fail_at=3)  # the pool thread's piece
    assert blas._cell.value == budget and blas._parked == 0


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_park_off_leaves_the_budget(threads, monkeypatch):
    budget = blas._timeout_cell().value
    monkeypatch.setattr(blas, "PARK", False)
    assert {v for _, v in _budgets_seen(4)} == {budget}


@pytest.mark.parametrize("threads", [1], indirect=True)
def test_no_split_no_park(threads):
    budget = blas._timeout_cell().value
    assert {v for _, v in _budgets_seen(4)} == {budget}


def test_a_budget_not_openblas_is_never_written(monkeypatch):
    cell = blas._timeout_cell()
    budget = cell.value
    monkeypatch.setattr(blas, "_cell", None)
    monkeypatch.setattr(blas, "_expected_budget", lambda: budget + 1)
    assert blas._timeout_cell() is None
    blas.park()
    assert cell.value == budget and blas._parked == 0
    blas.unpark()
    assert cell.value == budget


_SLEEP_CHECK = r"""
import os, threading, time
import numpy as np
import ember
from ember._backend import blas

def spinning():
    # whether a thread Python did not start (OpenBLAS's workers: only NumPy and ember are loaded here) is running
    ours = {t.native_id for t in threading.enumerate()} | {os.getpid()}
    states = []
    for tid in os.listdir("/proc/self/task"):
        if int(tid) not in ours:
            with open(f"/proc/self/task/{tid}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
    return "R" in states

def within(pred, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.001)
    return pred()

ember.set_num_threads(2)
cell = blas._timeout_cell()
cell.value = 1 << 30  # a spin of ~0.3-0.5 s after each call, so that "still spinning" is seen for sure
a = np.random.default_rng(0).standard_normal((256, 256), dtype=np.float32)
seen = []
a @ a  # a threaded GEMM: OpenBLAS's worker runs, then spins
time.sleep(0.05)
seen.append(spinning())  # not parked: spinning
blas.park()
seen.append(not within(lambda: not spinning(), 0.1))  # parked: asleep within 0.1 s
blas.unpark()
seen.append(cell.value == 1 << 30)
time.sleep(0.01)
seen.append(spinning())  # unparking does not wake it
a @ a
time.sleep(0.05)
seen.append(spinning())  # the next GEMM does
print(seen)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_a_parked_worker_sleeps_until_the_next_gemm():
    # in a fresh interpreter, where no other library's threads (torch's OpenMP pool) can be mistaken for OpenBLAS's
    out = subprocess.run([sys.executable, "-c", _SLEEP_CHECK], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "[True, False, True, False, True]"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_parked_gets_the_budget_back():
    budget = blas._timeout_cell().value
    blas.park()
    try:
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status
            os._exit(0 if blas._cell.value == budget and blas._parked == 0 else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        blas.unpark()
    assert os.WEXITSTATUS(status) == 0
    assert blas._cell.value == budget
