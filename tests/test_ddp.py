"""ember.nn.parallel.DistributedDataParallel against torch's, and DataParallel.

One module fixture starts every process once: torch's DDP on gloo (2 processes), ember's DDP on MPI
(mpiexec -n 2, then -n 4) and on its TCP transport (2 processes started as torch's are), all running
tests/_ddp_worker.py, which trains the same models from the same
per-rank weights on the same per-rank batches and saves every parameter, buffer and gradient after every
step. The tests compare those files: parameters and buffers to 1e-6 relative after every step, gradients,
bucket assignments, error types and messages; plus the checks that need no torch (N ranks with batch B ==
one process on N*B, no_sync accumulation == one step on the summed loss, all-reduce overlapping backward).
"""
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from ember.nn.parallel._reducer import compute_bucket_assignment_by_size

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _ddp_worker as worker  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 240  # seconds for all processes together: a hang fails the tests instead of blocking CI
EMBER_CHECKS = "configs,nosync,overlap,concat,mismatch"


def mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd, env, log):
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def finish(procs, deadline_s):
    """Wait for every process; on timeout kill their process groups. Returns the return codes."""
    codes = []
    try:
        for p in procs:
            codes.append(p.wait(timeout=deadline_s))
    except subprocess.TimeoutExpired:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        raise
    return codes


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The directory of the processes' results. Under pytest-xdist the workers share one run (the first
    to get here runs the processes, the others wait on a lock and read its files)."""
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if uid is None:
        out = tmp_path_factory.mktemp("ddp")
        run_processes(out)
        return out
    out = tmp_path_factory.getbasetemp().parent / f"ddp-{uid}"
    out.mkdir(exist_ok=True)
    with open(out / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "done").exists():
            run_processes(out)
            (out / "done").write_text("")
    return out


def run_processes(out):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                             "MASTER_PORT")}
    env.update(PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    logs = {name: open(out / f"{name}.log", "w") for name in ("torch0", "torch1", "ember2", "ember4", "tcp0", "tcp1")}
    (out / "tcp").mkdir(exist_ok=True)

    def torch_run():  # torch's reference: two gloo processes
        port = str(free_port())
        return [start([sys.executable, worker.__file__, "torch", str(out)],
                      dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(r), WORLD_SIZE="2"),
                      logs[f"torch{r}"]) for r in range(2)]
    try:
        torch_procs = torch_run()
        ember2 = start([mpiexec(), "-n", "2", sys.executable, worker.__file__, "ember", str(out), EMBER_CHECKS],
                       env, logs["ember2"])
        port = str(free_port())  # ember without mpiexec: the TCP transport (Note [TCP transport])
        tcp = [start([sys.executable, worker.__file__, "ember", str(out / "tcp"), EMBER_CHECKS],
                     dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(r), WORLD_SIZE="2"),
                     logs[f"tcp{r}"]) for r in range(2)]
        codes = finish([ember2] + tcp, TIMEOUT)
        ember4 = start([mpiexec(), "-n", "4", sys.executable, worker.__file__, "ember", str(out), "concat"],
                       env, logs["ember4"])
        codes += finish([ember4] + torch_procs, TIMEOUT)
        if any(codes[4:]):
            # torch's gloo processes once aborted in CI ("terminate called without an active exception", return
            # code -6, after the other rank had finished every collective): the reference runs once more, its files
            # rewritten; ember's processes are not retried
            for f in (logs["torch0"], logs["torch1"]):
                f.write(f"\n--- torch's reference failed (return codes {codes[4:]}); run again\n")
                f.flush()
            codes[4:] = finish(torch_run(), TIMEOUT)
    finally:
        for f in logs.values():
            f.close()
    if any(codes):
        text = "\n".join(f"--- {name}\n{(out / f'{name}.log').read_text()[-3000:]}" for name in logs)
        pytest.fail(f"a DDP process failed (return codes {codes}):\n{text}")


def close(a, b, rtol=1e-6):
    """|a - b| <= rtol * max|b| for the whole tensor (relative to its scale, so entries near 0 don't count
    more than the rest)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    if b.size == 0:
        return True
    return np.abs(a - b).max() <= rtol * max(np.abs(b).max(), 1e-30)


# ---- against torch's DDP (gloo) --------------------------------------------------------------------

# relative tolerance per config: float16-compressed gradients round the last float32 bits of each library's own
# gradients to float16, so they agree to a float16 step (2^-11 relative), not to float32's
TOLERANCE = {"hook_fp16": 2e-3, "hook_fp16_wrapper": 2e-3}


@pytest.mark.parametrize("config", list(worker.CONFIGS))
@pytest.mark.parametrize("rank", [0, 1])
def test_parameters_and_buffers_match_torch_after_every_step(runs, config, rank):
    ours = np.load(runs / f"ember_{config}_r{rank}.npz")
    theirs = np.load(runs / f"torch_{config}_r{rank}.npz")
    keys = [k for k in theirs.files if "_grad_" not in k and not k.startswith("buckets")]
    assert sorted(keys) == sorted(k for k in ours.files if "_grad_" not in k and not k.startswith("buckets"))
    last = worker.steps(config, rank) - 1
    assert last < 0 or any(k.startswith(f"s{last}_") for k in keys)
    assert config not in worker.JOIN or any(k.startswith("final_") for k in keys)
    text = [k for k in keys if theirs[k].dtype.kind == "U"]  # ZeRO's option groups (json) and error messages
    assert all(str(ours[k]) == str(theirs[k]) for k in text), [(str(ours[k]), str(theirs[k])) for k in text]
    bad = [k for k in keys if k not in text and not close(ours[k], theirs[k], TOLERANCE.get(config, 1e-6))]
    assert not bad, f"{config} rank {rank} differs from torch at {bad[:5]}"


@pytest.mark.parametrize("config", list(worker.CONFIGS))
@pytest.mark.parametrize("rank", [0, 1])
def test_gradients_match_torch_after_every_step(runs, config, rank):
    """Averaged (or, under no_sync, local) gradients; None where torch leaves None (unused parameters)."""
    ours = np.load(runs / f"ember_{config}_r{rank}.npz")
    theirs = np.load(runs / f"torch_{config}_r{rank}.npz")
    for step in range(worker.steps(config, rank)):
        keys = [k for k in theirs.files if k.startswith(f"s{step}_grad_")]
        scale = max(np.abs(theirs[k]).max() for k in keys if theirs[k].size)
        for k in keys:
            assert ours[k].shape == theirs[k].shape, k  # (0,) where .grad is None
            assert np.abs(ours[k] - theirs[k]).max(initial=0) <= TOLERANCE.get(config, 1e-6) * scale, k


def test_tcp_transport_gives_the_bits_of_mpi(runs):
    """The same two-rank runs on the TCP transport (processes started with torch's environment, no mpiexec)
    write every file bit for bit as on MPI: every parameter, buffer, gradient, bucket and error text after every
    step of every config, and the no_sync, overlap and mismatch checks (a sum of two ranks is the same sum in
    either order, so the transports agree exactly)."""
    files = sorted(f.name for f in runs.iterdir() if f.suffix in (".npz", ".json") and not f.name.startswith("torch")
                   and "_w4_" not in f.name)  # (the 4-rank run has no TCP twin)
    assert files and sorted(f.name for f in (runs / "tcp").iterdir()) == files
    for name in files:
        if name.endswith(".json"):
            assert (runs / "tcp" / name).read_text() == (runs / name).read_text(), name
            continue
        ours, mpi = np.load(runs / "tcp" / name), np.load(runs / name)
        assert sorted(ours.files) == sorted(mpi.files), name
        for k in mpi.files:
            assert ours[k].dtype == mpi[k].dtype and np.array_equal(ours[k], mpi[k], equal_nan=mpi[k].dtype.kind == "f"), \
                (name, k)


def test_initial_broadcast_gives_every_rank_rank0_weights(runs):
    state0 = np.load(runs / "ember_default_r0.npz")
    state1 = np.load(runs / "ember_default_r1.npz")
    model = worker.build(ember, "convbn")
    rank0 = worker.initial_weights(model, 0)
    rank1 = worker.initial_weights(model, 1)
    for k in rank0:
        assert np.array_equal(state1[f"init_{k}"], rank0[k]) and np.array_equal(state0[f"init_{k}"], rank0[k])
        assert not np.array_equal(rank0[k], rank1[k]) or not rank0[k].any()


@pytest.mark.parametrize("config", list(worker.CONFIGS))
def test_buckets_match_torch(runs, config):
    """Bucket byte sizes before the rebuild; each bucket's parameters after it (as sets: within a bucket
    the order is the gradient-ready order, and ember's engine runs the leaves of one node in another order)."""
    rank = 0 if worker.steps(config, 0) > 3 else 1
    ours = np.load(runs / f"ember_{config}_r{rank}.npz")
    theirs = np.load(runs / f"torch_{config}_r{rank}.npz")
    assert str(ours["buckets_s0"]) == str(theirs["buckets_s0"])

    def sets(text):
        return [set(part.split()) for part in str(text).split(",")]
    assert sets(ours["buckets_s2"]) == sets(theirs["buckets_s2"])
    assert sets(ours["buckets_s3"]) == sets(theirs["buckets_s3"])


@pytest.mark.parametrize("rank", [0, 1])
def test_errors_state_dict_and_sampler_defaults_match_torch(runs, rank):
    ours = json.loads((runs / f"ember_surface_r{rank}.json").read_text())
    theirs = json.loads((runs / f"torch_surface_r{rank}.json").read_text())
    assert ours["state_dict"][0].startswith("module.")
    assert ours["sampler"][:2] == [2, rank]
    assert ours == theirs


def test_models_that_differ_across_ranks_fail_on_every_rank(runs):
    for rank in range(2):
        message = json.loads((runs / f"mismatch_r{rank}.json").read_text())
        assert message is not None and "appears not to match sizes of the same param in process" in message


# ---- checks without torch --------------------------------------------------------------------------

@pytest.mark.parametrize("world", [2, 4])
def test_n_ranks_equal_one_process_on_the_concatenated_batch(runs, world):
    for rank in range(world):
        record = np.load(runs / f"concat_w{world}_r{rank}.npz")
        ddp_keys = [k for k in record.files if "_ddp_" in k]
        assert len(ddp_keys) == 5 * 6
        for k in ddp_keys:
            assert close(record[k], record[k.replace("_ddp_", "_single_")]), k


@pytest.mark.parametrize("rank", [0, 1])
def test_no_sync_accumulation_equals_one_step_on_the_sum(runs, rank):
    record = np.load(runs / f"nosync_r{rank}.npz")
    n = len([k for k in record.files if k.startswith("sum_")])
    assert n == 6
    for i in range(n):
        assert close(record[f"accumulate_{i}"], record[f"sum_{i}"]), i
        # under no_sync the gradient stayed local: the plain sum of this rank's micro-batch gradients
        assert close(record[f"local_{i}"], record[f"plain_{i}"])
        assert not close(record[f"local_{i}"], record[f"sum_{i}"], rtol=1e-3)


@pytest.mark.parametrize("rank", [0, 1])
def test_all_reduce_overlaps_backward_in_reverse_parameter_order(runs, rank):
    record = json.loads((runs / f"overlap_r{rank}.json").read_text())
    events = record["events"]
    sizes = {name: None for name in record["names"]}
    start = events.index(["iteration", 1])
    first = events[:start]
    second = events[start:]
    # iteration 0: one bucket holding every parameter, launched once all gradients are in
    launches = [e for e in first if e[0] == "launch"]
    computed = [i for i, e in enumerate(first) if e[0] == "computed"]
    assert len(launches) == 1 and first.index(launches[0]) > computed[-1]
    # iteration 1 (rebuilt, one parameter per bucket): each bucket starts as soon as its gradient is
    # computed, before the next gradient is, in reverse order of the parameters
    for e in second:
        if e[0] == "computed":
            sizes[e[1]] = e[2]
    expected = [sizes[name] for name in reversed(record["names"])]
    kinds = [e[0] for e in second]
    launch_sizes = [e[1] for e in second if e[0] == "launch"]
    assert launch_sizes == expected
    assert all(e[2] for e in second if e[0] == "launch")  # async_op=True
    last_computed = max(i for i, k in enumerate(kinds) if k == "computed")
    assert kinds.index("launch") < last_computed  # communication started while backward was running
    assert kinds[1:2 * len(expected) + 1] == ["computed", "launch"] * len(expected)
    waits = [i for i, k in enumerate(kinds) if k == "wait"]
    assert len(waits) == len(expected) and min(waits) > last_computed  # waited for at the end of backward
    assert kinds[-1] == "backward returned" and max(waits) < len(kinds) - 1


# ---- in this process ---------------------------------------------------------------------------------

@pytest.mark.parametrize("lib", [torch, ember], ids=lambda m: m.__name__)
def test_construction_before_init_process_group_raises(lib):
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        lib.nn.parallel.DistributedDataParallel(lib.nn.Linear(2, 2))


def test_namespace_paths_as_torch():
    from ember.nn.parallel import DataParallel, DistributedDataParallel, data_parallel  # noqa: F401
    assert ember.nn.DataParallel is ember.nn.parallel.DataParallel
    assert issubclass(DistributedDataParallel, ember.nn.Module)
    for lib in (torch, ember):  # the same paths and relations in torch
        assert lib.nn.DataParallel is lib.nn.parallel.DataParallel
        assert lib.nn.parallel.DistributedDataParallel is lib.nn.parallel.distributed.DistributedDataParallel
        assert issubclass(lib.nn.parallel.DistributedDataParallel, lib.nn.Module)
        assert callable(lib.nn.parallel.data_parallel)


def test_data_parallel_is_a_pass_through_as_torch_without_accelerators():
    results = {}
    for lib in (torch, ember):
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
        worker.load(lib, net, worker.initial_weights(net, 0))
        dp = lib.nn.DataParallel(net)
        x = lib.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3))
        out = dp(x)
        out.sum().backward()
        results[lib.__name__] = (out.detach().numpy(), net[0].weight.grad.numpy(), list(dp.state_dict()),
                                 dp.device_ids, dp.module is net)
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.nn.parallel.data_parallel(net, x)
    ours, theirs = results["ember"], results["torch"]
    assert close(ours[0], theirs[0]) and close(ours[1], theirs[1])
    assert ours[2:] == theirs[2:]


@pytest.mark.parametrize("limits", [[104], [1024, 4096], [1], [10 ** 9], [200, 100, 3000]])
@pytest.mark.parametrize("order", [None, "reversed", "shuffled"])
@pytest.mark.parametrize("mixed", [False, True])
def test_bucket_assignment_matches_torch(limits, order, mixed):
    """As torch's _compute_bucket_assignment_by_size; given an order (a rebuild), torch takes the tensors in
    that order and emits the buckets left open at the end in hash-map order, so with several dtypes the
    buckets are compared as a collection."""
    import torch.distributed as tdist
    shapes = [(16, 12), (16,), (3, 16), (3,), (40,), (7, 7), (2,), (64, 64), (5,)]
    dtypes = ["float32", "float32", "float64", "float32", "float64", "float32", "float16", "float32", "float32"]
    if not mixed:
        dtypes = ["float32"] * len(shapes)
    tensors = [torch.zeros(s, dtype=getattr(torch, d)) for s, d in zip(shapes, dtypes)]
    ours_in = [ember.zeros(s, dtype=getattr(ember, d)) for s, d in zip(shapes, dtypes)]
    if order is None:
        theirs, _ = tdist._compute_bucket_assignment_by_size(tensors, limits, [False] * len(tensors))
        assert compute_bucket_assignment_by_size(ours_in, limits) == [list(b) for b in theirs]
        return
    indices = list(reversed(range(len(shapes)))) if order == "reversed" else [4, 0, 8, 2, 6, 1, 7, 3, 5]
    theirs, _ = tdist._compute_bucket_assignment_by_size([tensors[i] for i in indices], limits,
                                                         [False] * len(tensors), indices)
    theirs = [list(b) for b in theirs]
    ours = compute_bucket_assignment_by_size(ours_in, limits, order=indices)
    if mixed:
        ours, theirs = sorted(ours), sorted(theirs)
    assert ours == theirs
