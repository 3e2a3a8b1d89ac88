"""ember.distributed without an MPI launcher: the TCP transport (Note [TCP transport] in ember/distributed/_tcp.py).

The collectives' whole check list runs on it in tests/test_distributed.py and DDP's runs against MPI's in
tests/test_ddp.py; here: a tutorial-style mp.spawn DDP script against torch's, torch's rendezvous errors,
and what happens when a peer never comes or dies.
"""
import datetime
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import ember
from .test_distributed import env, free_port, tcp_env

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SPAWN_DDP = os.path.join(HERE, "_distributed", "spawn_ddp.py")


def test_spawn_ddp_script_matches_torch(tmp_path):
    """mp.spawn, init_process_group(rank=, world_size=) at tcp://, DDP training, all_gather_object and
    all_reduce: the trained weights and the gathered losses are torch's."""
    procs = [subprocess.Popen([sys.executable, SPAWN_DDP, lib, str(tmp_path), f"tcp://127.0.0.1:{free_port()}"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), cwd=ROOT)
             for lib in ("torch", "ember")]
    for p in procs:
        out = p.communicate(timeout=240)[0]
        assert p.returncode == 0, out[-3000:]
    ours, theirs = np.load(tmp_path / "ember.npz"), np.load(tmp_path / "torch.npz")
    assert sorted(ours.files) == sorted(theirs.files)
    for k in theirs.files:
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-5, atol=1e-6, err_msg=k)


RENDEZVOUS_CASES = [
    ({"RANK": "0"}, {}),
    ({"RANK": "0", "WORLD_SIZE": "2"}, {}),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}, {}),
    ({}, {"rank": 0, "world_size": 1}),
    ({}, {"init_method": "tcp://127.0.0.1:1"}),
    ({}, {"init_method": "tcp://127.0.0.1:1", "rank": 0}),
    ({}, {"init_method": "foo://x", "rank": 0, "world_size": 1}),
]


@pytest.mark.parametrize("environ,kwargs", RENDEZVOUS_CASES)
def test_rendezvous_errors_match_torch(monkeypatch, environ, kwargs):
    """Missing rendezvous variables or parameters and unknown init methods: torch's type and message (ember's may
    add what it supports)."""
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    errors = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as info:
            lib.distributed.init_process_group("gloo", timeout=datetime.timedelta(seconds=5), **kwargs)
        errors.append(info.value)
        assert not lib.distributed.is_initialized()
    theirs, ours = errors
    assert type(ours).__name__ == type(theirs).__name__ and str(ours).startswith(str(theirs)), (ours, theirs)


def test_error_classes_are_torchs():
    for name in ("DistError", "DistBackendError", "DistNetworkError"):
        ours, theirs = getattr(ember.distributed, name), getattr(torch.distributed, name)
        assert [c.__name__ for c in ours.__mro__[:-2]] == [c.__name__ for c in theirs.__mro__[:-2]]


def test_rank_whose_peers_never_come_times_out(monkeypatch):
    """Rank 1 of 2 with nobody at the rendezvous address: DistNetworkError after the group's timeout."""
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    start = time.monotonic()
    with pytest.raises(ember.distributed.DistNetworkError, match="did not answer within"):
        ember.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=1,
                                             world_size=2, timeout=datetime.timedelta(seconds=1))
    assert time.monotonic() - start < 30
    assert not ember.distributed.is_initialized()


DIES = """
import datetime, sys, time, ember, ember.distributed as d
d.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
t = ember.ones(2)
d.all_reduce(t)
if d.get_rank() == 1:
    raise KeyError("rank 1 fails")  # uncaught: the excepthook ends this process
start = time.monotonic()
try:
    d.all_reduce(t)
except d.DistBackendError as e:
    print("caught", type(e).__name__, round(time.monotonic() - start), str(e))
"""


def test_rank_that_dies_fails_the_others_next_collective_at_once(tmp_path):
    """A rank dying of an uncaught exception prints its traceback as torch's ([rank1]: ...) and ends; the other
    rank's next collective raises DistBackendError at once (its connection closed), not after the 120 s timeout."""
    port = free_port()
    procs = [subprocess.Popen([sys.executable, "-c", DIES], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=tcp_env(r, 2, port), cwd=ROOT) for r in range(2)]
    (out0, err0), (out1, err1) = [p.communicate(timeout=100) for p in procs]
    assert procs[1].returncode == 1 and "[rank1]: KeyError: 'rank 1 fails'" in err1, err1
    assert procs[0].returncode == 0 and out0.startswith("caught DistBackendError"), out0 + err0
    assert int(out0.split()[2]) < 30 and "rank 1" in out0, out0


def test_missing_ranks_are_named_when_the_rendezvous_times_out(monkeypatch, tmp_path):
    """Rank 0 of 3 alone at a file:// rendezvous: DistStoreError naming ranks 1 and 2 after the timeout."""
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ember.distributed.DistStoreError, match=r"ranks \[1, 2\] of 3 did not join"):
        ember.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'r'}", rank=0, world_size=3,
                                             timeout=datetime.timedelta(seconds=0.5))
    assert not ember.distributed.is_initialized()
