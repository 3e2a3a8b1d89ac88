"""Datasets and process targets for the spawn/forkserver tests.

Spawned children import the module a pickled function or class comes from; this one imports only
ember (the test modules import torch, which would make every spawned child slow to start).
"""
import multiprocessing
import os
import signal
import sys
import time

import ember
import ember.utils.data as edata


class WorkerInfoDataset:
    """Sample i: [worker id, num_workers, seed, is the shared-memory allocator named?] in its worker."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = edata.get_worker_info()
        from ember import _shared_memory as shm
        return [info.id, info.num_workers, info.seed, shm._worker_prefix is not None]


def fill_slot(i, t, value):
    """mp.spawn target: write value + i into slot i of a shared tensor."""
    t[i] = value + i


def fail_in_child(i, mode):
    """mp.spawn target: process 1 fails the way `mode` says; the others wait to be stopped."""
    if i != 1:
        import time
        time.sleep(30)
        return
    if mode == "raise":
        raise ValueError(f"child {i} failed")
    if mode == "signal":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(3)


def add_in_child(inbox, outbox, done):
    """Adds 10 to the tensor and doubles the Parameter it receives, then reports what it got."""
    t = inbox.get()
    assert t.is_shared()
    t.add_(10)
    p = inbox.get()
    p.data.mul_(2)
    outbox.put((type(p).__name__, p.requires_grad, p.is_shared()))
    done.wait(60)


def echo_slice(conn):
    """Sends back t[2:] of the tensor it receives, and waits until told to exit."""
    t = conn.recv()
    conn.send(t[2:])
    conn.recv()


def _segment_fds():
    """The descriptors of shared-memory segments (ember's memfds): what a received tensor may hold open (pipes
    and other descriptors are not counted)."""
    n = 0
    for f in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{f}").startswith(("/memfd:", "/dev/shm/"))
        except OSError:  # closed while listing
            pass
    return n


def _segment_fds_settled(expected, timeout=5.0):
    """_segment_fds() once it equals expected, or after timeout: multiprocessing's resource sharer closes the
    sender's duplicate of a passed descriptor on its own thread after the receiver has it, so right after recv()
    one more may still be open (seen under load)."""
    deadline = time.monotonic() + timeout
    n = _segment_fds()
    while n != expected and time.monotonic() < deadline:
        time.sleep(0.01)
        n = _segment_fds()
    return n


def count_received_segment_descriptors():
    """A received shared tensor holds one descriptor while it lives (test_multiprocessing.py runs this in a
    fresh interpreter)."""
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    t = ember.zeros(1000).share_memory_()
    fds = _segment_fds()
    for _ in range(50):
        here.send(t)
        copy = there.recv()  # same process: the received descriptor maps the same file
        assert copy.data_ptr() == t.data_ptr()
        del copy
    assert _segment_fds_settled(fds) == fds
    fresh = []
    for _ in range(5):
        here.send(ember.zeros(10))  # new segments each time
        fresh.append(there.recv())
    # one descriptor per live shared storage, as torch's file_descriptor strategy
    assert _segment_fds_settled(fds + 5) == fds + 5
    del fresh
    assert _segment_fds_settled(fds) == fds
