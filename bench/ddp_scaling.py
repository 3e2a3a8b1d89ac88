"""Data-parallel scaling of ember's DistributedDataParallel: samples/s on 1, 2, 4 MPI (or TCP) processes.

    python bench/ddp_scaling.py                      # launches mpiexec -n 1, 2, 4 and prints the table
    python bench/ddp_scaling.py --model mlp --procs 1 2 --steps 30
    python bench/ddp_scaling.py --transport tcp      # processes started as torchrun would: the TCP transport
    mpiexec -n 2 python bench/ddp_scaling.py --worker --model resnet   # one measurement

Weak scaling, as DDP is used: every process trains on its own batch of --batch samples, so N processes
process N times the samples per step; efficiency = samples/s on N / (N x samples/s on 1). Each process
runs with one intra-op thread (OMP_NUM_THREADS=1), so N processes ask for N cores. The last column is the
share of the time spent in DDP's end-of-backward callback (waiting for the buckets' all-reduces, then
copying the averages into .grad), mean over the ranks. Samples per CPU-second divides by the CPU time all
processes used (MPI's busy waiting included): on a machine shared with other jobs it still says what
data parallelism costs, where samples/s mostly says how much of the machine the processes got.
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def measure(model_name, batch, steps, warmup):
    """Run in every process: samples/s of DDP training steps, over all processes."""
    import numpy as np

    import ember
    import ember.distributed as dist
    from bench import models
    from ember.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    if model_name == "resnet":
        net = models.resnet(ember)
        x, y = models.np_images(batch, 32, 10, seed=rank)
    else:
        net = models.mlp(ember)
        rng = np.random.default_rng(rank)
        x = rng.standard_normal((batch, 784)).astype(np.float32)
        y = rng.integers(0, 10, batch)
    model = DDP(net)
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = ember.tensor(x), ember.tensor(y)

    def step():
        opt.zero_grad()
        ember.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(warmup):
        step()
    waited = [0.0]
    finalize = model.reducer.finalize

    def timed_finalize():  # the end-of-backward callback: wait for the buckets, copy into .grad
        t = time.perf_counter()
        finalize()
        waited[0] += time.perf_counter() - t
    model.reducer.finalize = timed_finalize
    dist.barrier()
    start = time.perf_counter()
    cpu_start = time.process_time()
    for _ in range(steps):
        step()
    cpu = time.process_time() - cpu_start
    dist.barrier()
    elapsed = time.perf_counter() - start
    share = ember.tensor([waited[0] / elapsed])
    dist.all_reduce(share, op=dist.ReduceOp.AVG)
    cpu_total = ember.tensor([cpu], dtype=ember.float64)
    dist.all_reduce(cpu_total)
    if rank == 0:
        params = sum(p.numel() for p in net.parameters())
        samples = batch * world * steps
        print(f"RESULT {model_name} {world} {samples / elapsed:.1f} {params} {share.item():.3f} "
              f"{samples / cpu_total.item():.1f}", flush=True)
    dist.destroy_process_group()


def launch(args):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rows = []
    for n in args.procs:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", args.model,
               "--batch", str(args.batch), "--steps", str(args.steps), "--warmup", str(args.warmup)]
        if args.transport == "mpi":
            out = subprocess.run([mpiexec, "-n", str(n)] + cmd, env=env, capture_output=True, text=True, timeout=1800)
            code, stdout, stderr = out.returncode, out.stdout, out.stderr
        else:
            code, stdout, stderr = _run_tcp(cmd, n, env)
        line = [ln for ln in stdout.splitlines() if ln.startswith("RESULT")]
        if code or not line:
            raise SystemExit(f"{n} {args.transport} processes failed:\n{stdout[-2000:]}\n{stderr[-2000:]}")
        fields = line[0].split()
        rows.append((n, float(fields[3]), int(fields[4]), float(fields[5]), float(fields[6])))
    base = rows[0][1] / rows[0][0]
    print(f"{args.model} ({rows[0][2]:,} parameters), batch {args.batch} per process, {args.steps} steps")
    print("| processes | samples/s | speed-up | efficiency | end-of-backward wait + copy | samples per CPU-s "
          "| CPU efficiency |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, rate, _, waiting, per_cpu in rows:
        print(f"| {n} | {rate:.0f} | {rate / rows[0][1]:.2f}x | {rate / (n * base):.0%} | {waiting:.0%} "
              f"| {per_cpu:.0f} | {per_cpu / rows[0][4]:.0%} |")


def _run_tcp(cmd, n, env):
    """n processes given torch's RANK/WORLD_SIZE/MASTER_* (ember's TCP transport): (code, stdout, stderr)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen(cmd, env=dict(env, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                                            MASTER_PORT=str(port)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for r in range(n)]
    outs = [p.communicate(timeout=1800) for p in procs]
    return max(p.returncode for p in procs), "".join(o for o, _ in outs), "".join(e for _, e in outs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["resnet", "mlp"], default="resnet")
    parser.add_argument("--batch", type=int, default=32, help="samples per process per step")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--procs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--transport", choices=["mpi", "tcp"], default="mpi")
    parser.add_argument("--worker", action="store_true", help="measure in this (launched) process")
    args = parser.parse_args()
    if args.worker:
        measure(args.model, args.batch, args.steps, args.warmup)
    else:
        launch(args)


if __name__ == "__main__":
    main()
