"""`python -m ember.distributed.run`: torchrun's command line, starting the processes through mpiexec.

https://pytorch.org/docs/stable/elastic/run.html. One invocation starts every process of the job:
`--nproc-per-node N` on each of `--nnodes` hosts (from `--hostfile`, or the batch scheduler mpiexec
detects), placed in blocks so RANK = node_rank * N + LOCAL_RANK, as torchrun numbers them. Each process
runs ember.distributed._bootstrap, which sets torch's environment variables (RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR, ...) from its MPI rank and then runs the script. Unlike torchrun it is run
once, on one node, not once per node; there is no elastic restart (--max-restarts must be 0).
"""
import argparse
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys


def _flag(parser, name, **kwargs):
    """A torchrun option under both its spellings (--nproc-per-node and --nproc_per_node)."""
    dashed = "--" + name
    underscored = "--" + name.replace("-", "_")
    spellings = [dashed] if dashed == underscored else [dashed, underscored]
    parser.add_argument(*spellings, dest=name.replace("-", "_"), **kwargs)


def parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start a torchrun-style training script on MPI processes.")
    _flag(p, "nnodes", default="1", help="number of nodes (torchrun's MIN:MAX form must have MIN == MAX)")
    _flag(p, "nproc-per-node", default="1", help="processes per node (an int, or 'cpu'/'auto': the CPU count)")
    _flag(p, "node-rank", type=int, default=0, help="must be 0: one invocation starts every node's processes")
    _flag(p, "master-addr", default="127.0.0.1", help="exported as MASTER_ADDR (MPI does the rendezvous)")
    _flag(p, "master-port", type=int, default=29500, help="exported as MASTER_PORT")
    _flag(p, "standalone", action="store_true", help="single node; MASTER_ADDR=localhost and a free MASTER_PORT")
    _flag(p, "hostfile", default=None, help="ember's addition: MPICH hostfile, one `host[:slots]` per line")
    _flag(p, "max-restarts", type=int, default=0, help="must be 0: MPI jobs are not restarted")
    _flag(p, "rdzv-backend", default=None, help="accepted and ignored: MPI does the rendezvous")
    _flag(p, "rdzv-endpoint", default=None, help="accepted and ignored: MPI does the rendezvous")
    _flag(p, "rdzv-id", default=None, help="exported as TORCHELASTIC_RUN_ID")
    _flag(p, "mpiexec", default=None, help="ember's addition: the mpiexec to use (default: the venv's)")
    _flag(p, "mpiexec-args", default="", help="ember's addition: extra mpiexec options, e.g. '-iface eth0'")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    _flag(p, "no-python", action="store_true", help="run the script as an executable, not with python")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nnodes(value):
    low, _, high = str(value).partition(":")
    if high and high != low:
        raise SystemExit(f"ember.distributed.run: --nnodes {value}: elastic node ranges are not supported "
                         f"(MPI jobs have a fixed size); give one number")
    return int(low)


def _nproc(value):
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    return int(value)


def _free_port():
    """A port number that is free now, for MASTER_PORT (--standalone); ember itself opens no socket on it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_mpiexec(explicit=None):
    """The mpiexec of this interpreter's environment (the mpich wheel's), else the first on PATH."""
    if explicit:
        return explicit
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise SystemExit("ember.distributed.run: no mpiexec found; pip install 'ember[distributed]'")
    return found


def command(args):
    """The mpiexec command line for parsed arguments (MPICH's Hydra options)."""
    nnodes = _nnodes(args.nnodes)
    nproc = _nproc(args.nproc_per_node)
    if args.node_rank != 0:
        raise SystemExit("ember.distributed.run: --node-rank must be 0. MPI starts every node's processes from "
                         "one invocation: run this once, on one node, with --nnodes and --hostfile")
    if args.max_restarts != 0:
        raise SystemExit("ember.distributed.run: --max-restarts must be 0 (MPI jobs are not restarted)")
    master_addr, master_port = args.master_addr, args.master_port
    if args.standalone:
        nnodes, master_addr, master_port = 1, "localhost", _free_port()
    env = {"MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port), "EMBER_NPROC_PER_NODE": str(nproc),
           "EMBER_NNODES": str(nnodes), "TORCHELASTIC_RUN_ID": args.rdzv_id or "none",
           "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RESTART_COUNT": "0"}
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = "1"  # torchrun's default: N processes must not each start a full BLAS pool
    cmd = [find_mpiexec(args.mpiexec), "-n", str(nnodes * nproc), "-ppn", str(nproc)]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    for name, value in env.items():
        cmd += ["-genv", name, value]
    cmd += shlex.split(args.mpiexec_args)
    cmd += [sys.executable, "-m", "ember.distributed._bootstrap"]
    if args.module:
        cmd.append("-m")
    elif args.no_python:
        cmd.append("--no-python")
    return cmd + [args.training_script] + args.training_script_args


def main(args=None):
    args = parser().parse_args(args)
    job = subprocess.Popen(command(args))

    def forward(signum, frame):
        job.send_signal(signum)  # mpiexec passes it on to every rank and ends the job

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    code = job.wait()
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
