"""ember.distributed's collectives on 2 and 4 MPI processes and on 2 and 3 processes of the TCP transport,
against the same reductions in NumPy.

Each (transport, process count) is ONE launch of tests/_distributed/collectives.py that runs every check
(start-up dominates the cost): `mpiexec -n N`, or N processes given torch's RANK/WORLD_SIZE/MASTER_ADDR/
MASTER_PORT as mp.spawn or a launcher would; the per-check results become one pytest test each. The test
environment always has the `distributed` extra: nothing here skips when mpi4py is missing, it fails.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile

import pytest

from ._distributed.once import once

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_distributed", "collectives.py")
ROOT = os.path.dirname(HERE)

KINDS = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
         "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "send_recv"]
VARIANTS = [f"{d}-{layout}-{mode}" for d in ("float32", "float64", "int64", "bfloat16")
            for layout in ("contig", "strided") for mode in ("sync", "async")]
OTHERS = ["zero_copy", "other_dtypes", "bfloat16_avg_rounds_once", "version_and_work", "reduce_op_errors", "mismatched_shapes",
          "mismatched_dtypes", "mismatched_collectives", "mismatched_roots_and_ops", "one_rank_bad_arguments",
          "all_to_all_counts_disagree", "new_group", "barriers", "monitored_barrier_names_late_rank", "objects",
          "p2p_errors", "state"]


def mpiexec():
    """The mpiexec of the venv running the tests (the mpich wheel's), not whatever MPI is first on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else "mpiexec"


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        e.pop(name, None)
    return e


LAUNCHES = [("mpi", 2), ("mpi", 4), ("tcp", 2), ("tcp", 3)]


def results(launch):
    """Run the worker once per (transport, process count): (returncode, stdout, stderr, {check: failure or ''})."""
    transport, nproc = launch
    return once(f"distributed-collectives-{transport}-{nproc}",
                lambda: _launch(nproc) if transport == "mpi" else _launch_tcp(nproc))


def _launch(nproc):
    proc = subprocess.run([mpiexec(), "-n", str(nproc), sys.executable, WORKER], capture_output=True, text=True,
                          timeout=240, env=env(), cwd=ROOT)
    lines = re.findall(r"^CHECK (\S+) (ok|FAIL) ?(.*)$", proc.stdout, re.M)
    checks = {name: (msg if status == "FAIL" else "") for name, status, msg in lines}
    return proc.returncode, proc.stdout, proc.stderr, checks


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tcp_env(rank, nproc, port):
    """torch's launcher environment for one of nproc processes meeting at 127.0.0.1:port (no MPI launcher)."""
    e = env()
    e.update(RANK=str(rank), WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    return e


def _launch_tcp(nproc):
    """nproc processes started as a launcher would (no mpiexec); each writes its results, merged here."""
    port = free_port()
    with tempfile.TemporaryDirectory() as report:
        procs = []
        for rank in range(nproc):
            e = tcp_env(rank, nproc, port)
            e["REPORT_DIR"] = report
            procs.append(subprocess.Popen([sys.executable, WORKER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True, env=e, cwd=ROOT))
        outs = [p.communicate(timeout=240) for p in procs]
        per_rank = []
        for rank in range(nproc):
            path = os.path.join(report, f"rank{rank}.json")
            per_rank.append(json.load(open(path))["results"] if os.path.exists(path) else {})
    checks = {name: json.dumps({r: res[name] for r, res in enumerate(per_rank) if res.get(name)})
              if any(res.get(name) for res in per_rank) else "" for name in per_rank[0]}
    code = max(p.returncode for p in procs) or (0 if all(per_rank) else 1)
    return code, "".join(o for o, _ in outs), "".join(e for _, e in outs), checks


@pytest.mark.parametrize("launch", LAUNCHES, ids=lambda launch: f"{launch[0]}{launch[1]}")
def test_launch_succeeds(launch):
    code, out, err, checks = results(launch)
    assert code == 0, out[-3000:] + err[-3000:]
    expected = {f"{k}[{v}]" for k in KINDS for v in VARIANTS} | set(OTHERS)
    assert set(checks) == expected, sorted(set(checks) ^ expected)


@pytest.mark.parametrize("launch", LAUNCHES, ids=lambda launch: f"{launch[0]}{launch[1]}")
@pytest.mark.parametrize("kind", KINDS)
def test_collective(launch, kind):
    """Every dtype, contiguous and strided, sync and async, equals NumPy's result on every rank."""
    code, out, err, checks = results(launch)
    mine = {name: msg for name, msg in checks.items() if name.startswith(kind + "[")}
    assert len(mine) == len(VARIANTS), (out[-2000:], err[-2000:])
    failed = {name: msg for name, msg in mine.items() if msg}
    assert not failed, failed


@pytest.mark.parametrize("launch", LAUNCHES, ids=lambda launch: f"{launch[0]}{launch[1]}")
@pytest.mark.parametrize("check", OTHERS)
def test_behaviour(launch, check):
    """Other dtypes, error types, mismatches raising on every rank, groups, barriers, objects, state."""
    code, out, err, checks = results(launch)
    assert check in checks, (out[-2000:], err[-2000:])
    assert not checks[check], checks[check]


def test_import_does_not_load_mpi():
    code = ("import sys, ember; assert 'mpi4py' not in sys.modules; import ember.distributed as d; "
            "assert 'mpi4py' not in sys.modules and ember.distributed is d and d.is_available(); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env())
    assert out.stdout.strip() == "ok", out.stderr


def test_missing_extra_is_named():
    """Without mpi4py, ember.distributed is available on TCP (a world of one meets at a tcp:// address and
    reduces), is_mpi_available() says MPI is not, and a start that needs MPI names the extra."""
    code = ("import sys, socket; sys.modules['mpi4py'] = None; import ember, ember.distributed as d\n"
            "assert d.is_available() and d.is_gloo_available() and not d.is_mpi_available()\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()\n"
            "d.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=0, world_size=1)\n"
            "t = ember.ones(2); d.all_reduce(t); print(d.get_world_size(), t.tolist()); d.destroy_process_group()\n"
            "try:\n    d.init_process_group()\nexcept RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env())
    lines = out.stdout.splitlines()
    assert lines[:1] == ["1 [1.0, 1.0]"] and "pip install 'ember[distributed]'" in out.stdout, out.stdout + out.stderr


def test_single_process_without_launcher():
    """`python script.py` (no mpiexec) is a world of one, as MPI's singleton start makes it; a destroyed
    default group can be made again."""
    code = ("import ember, ember.distributed as d\n"
            "for backend in ('mpi', None):\n"
            "    d.init_process_group(backend); t = ember.ones(2); d.all_reduce(t)\n"
            "    print(d.get_rank(), d.get_world_size(), d.get_backend(), t.tolist()); d.destroy_process_group()\n"
            "print(d.is_initialized())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env())
    assert out.stdout.splitlines() == ["0 1 mpi [1.0, 1.0]", "0 1 undefined [1.0, 1.0]", "False"], \
        out.stdout + out.stderr


def test_rank_must_agree_with_mpi():
    """Under an MPI launcher, torch's RANK/WORLD_SIZE must be MPI's (without one they would mean a TCP start)."""
    code = "import ember.distributed as d; d.init_process_group('gloo')"
    e = env()
    e.update(RANK="1", WORLD_SIZE="2")
    out = subprocess.run([mpiexec(), "-n", "1", sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=e)
    assert out.returncode != 0 and "ValueError" in out.stderr and "ember.distributed.run" in out.stderr, out.stderr
