"""Collective latency and bandwidth: ember on its TCP transport and on MPI against torch's gloo, 2 processes.

    python bench/collectives.py                  # all three, the table of medians and ember/torch time ratios
    python bench/collectives.py --sizes 8 1048576 --repeats 30

Each library runs in its own pair of processes (one intra-op thread each) started as a launcher would (torch
and ember-TCP: RANK/WORLD_SIZE/MASTER_*; ember-MPI: mpiexec -n 2); each times every operation `--repeats`
times after a barrier and reports rank 0's median. float32 all_reduce (sum) and broadcast.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(lib_name, sizes, repeats):
    """In each process: {op/size: median seconds}, printed by rank 0 as one RESULT line."""
    import numpy as np
    if lib_name == "torch":
        import torch as lib
        lib.set_num_threads(1)
    else:
        import ember as lib
    dist = lib.distributed
    dist.init_process_group("gloo")
    out = {}
    for n in sizes:
        t = lib.from_numpy(np.ones(n, dtype=np.float32))
        for name, op in (("all_reduce", lambda: dist.all_reduce(t)), ("broadcast", lambda: dist.broadcast(t, 0))):
            for _ in range(3):
                op()
            times = []
            for _ in range(repeats):
                dist.barrier()
                start = time.perf_counter()
                op()
                times.append(time.perf_counter() - start)
            out[f"{name} {n}"] = float(np.median(times))
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(kind, sizes, repeats):
    lib = "torch" if kind == "torch" else "ember"
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--repeats", str(repeats),
           "--sizes", *map(str, sizes)]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    if kind == "ember-mpi":
        procs = [subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "mpiexec"), "-n", "2"] + cmd,
                                  env=env, stdout=subprocess.PIPE, text=True)]
    else:
        port = str(_free_port())
        procs = [subprocess.Popen(cmd, env=dict(env, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                                MASTER_PORT=port), stdout=subprocess.PIPE, text=True)
                 for r in range(2)]
    text = "".join(p.communicate(timeout=1800)[0] for p in procs)
    line = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
    if not line:
        raise SystemExit(f"{kind} failed:\n{text[-2000:]}")
    return json.loads(line[0][7:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 65536, 6553600])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--worker", choices=["torch", "ember"])
    args = parser.parse_args()
    if args.worker:
        measure(args.worker, args.sizes, args.repeats)
        return
    results = {kind: run(kind, args.sizes, args.repeats) for kind in ("torch", "ember-tcp", "ember-mpi")}
    print("| operation, float32 elements | torch gloo (us) | ember TCP (us) | ember MPI (us) | TCP/torch | MPI/torch |")
    print("|---|---:|---:|---:|---:|---:|")
    for key in results["torch"]:
        t, e, m = (results[k][key] * 1e6 for k in ("torch", "ember-tcp", "ember-mpi"))
        print(f"| {key} | {t:,.0f} | {e:,.0f} | {m:,.0f} | {e / t:.2f} | {m / t:.2f} |")


if __name__ == "__main__":
    main()
