"""`python -m ember.distributed.run`: torchrun's command line, starting the processes through mpiexec or,
as torchrun does, as local processes that meet over TCP.

https://pytorch.org/docs/stable/elastic/run.html. With MPI (`--transport mpi`, the default when an mpiexec
is installed) one invocation starts every process of the job: `--nproc-per-node N` on each of `--nnodes`
hosts (from `--hostfile`, or the batch scheduler mpiexec detects), placed in blocks so RANK = node_rank * N
+ LOCAL_RANK, as torchrun numbers them. Each process runs ember.distributed._bootstrap, which sets torch's
environment variables (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...) from its MPI rank and then runs the
script; unlike torchrun it is run once, on one node, not once per node. With `--transport tcp` (the default
without an mpiexec) it is torchrun's own model: run once per node with its `--node-rank`; it starts that
node's N processes with torch's environment, their groups meet at MASTER_ADDR:MASTER_PORT on ember's TCP
transport, and when one process fails the others on the node are stopped. Neither restarts (--max-restarts
must be 0).
"""
import argparse
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time


def _flag(parser, name, **kwargs):
    """A torchrun option under both its spellings (--nproc-per-node and --nproc_per_node)."""
    dashed = "--" + name
    underscored = "--" + name.replace("-", "_")
    spellings = [dashed] if dashed == underscored else [dashed, underscored]
    parser.add_argument(*spellings, dest=name.replace("-", "_"), **kwargs)


def parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start a torchrun-style training script on MPI or TCP processes.")
    _flag(p, "nnodes", default="1", help="number of nodes (torchrun's MIN:MAX form must have MIN == MAX)")
    _flag(p, "nproc-per-node", default="1", help="processes per node (an int, or 'cpu'/'auto': the CPU count)")
    _flag(p, "node-rank", type=int, default=0, help="this node's rank (tcp); must be 0 with mpi, whose one "
                                                    "invocation starts every node's processes")
    _flag(p, "master-addr", default="127.0.0.1", help="exported as MASTER_ADDR (tcp: where the ranks meet)")
    _flag(p, "master-port", type=int, default=29500, help="exported as MASTER_PORT")
    _flag(p, "standalone", action="store_true", help="single node; MASTER_ADDR=localhost and a free MASTER_PORT")
    _flag(p, "hostfile", default=None, help="ember's addition: MPICH hostfile, one `host[:slots]` per line")
    _flag(p, "max-restarts", type=int, default=0, help="must be 0: MPI jobs are not restarted")
    _flag(p, "rdzv-backend", default=None, help="accepted and ignored")
    _flag(p, "rdzv-endpoint", default=None, help="tcp: host:port where the ranks meet (instead of --master-*); "
                                                 "ignored with mpi, where MPI does the rendezvous")
    _flag(p, "rdzv-id", default=None, help="exported as TORCHELASTIC_RUN_ID")
    _flag(p, "transport", choices=("mpi", "tcp"), default=None,
          help="ember's addition: mpi (one mpiexec job) or tcp (this node's processes, as torchrun); default mpi "
               "when an mpiexec is installed")
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


def transport(args):
    """The transport asked for, else mpi when an mpiexec is installed, else tcp."""
    if args.transport is not None:
        return args.transport
    if args.mpiexec or os.path.exists(os.path.join(os.path.dirname(sys.executable), "mpiexec")) \
            or shutil.which("mpiexec"):
        return "mpi"
    return "tcp"


def local_commands(args):
    """[(environment, command)] of this node's processes under torchrun's own model (the TCP transport)."""
    nnodes = _nnodes(args.nnodes)
    nproc = _nproc(args.nproc_per_node)
    if args.max_restarts != 0:
        raise SystemExit("ember.distributed.run: --max-restarts must be 0 (failed processes are not restarted)")
    master_addr, master_port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, port = args.rdzv_endpoint.rpartition(":")
        master_addr, master_port = (host, int(port)) if host else (port, master_port)
    if args.standalone:
        nnodes, master_addr, master_port = 1, "localhost", _free_port()
    if not 0 <= args.node_rank < nnodes:
        raise SystemExit(f"ember.distributed.run: --node-rank {args.node_rank} is not in range for --nnodes {nnodes}")
    world = nnodes * nproc
    common = {"MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port), "WORLD_SIZE": str(world),
              "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(args.node_rank), "GROUP_WORLD_SIZE": str(nnodes),
              "ROLE_NAME": "default", "ROLE_WORLD_SIZE": str(world), "TORCHELASTIC_RUN_ID": args.rdzv_id or "none",
              "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RESTART_COUNT": "0"}
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        common["OMP_NUM_THREADS"] = "1"  # torchrun's default: N processes must not each start a full BLAS pool
    if args.module:
        program = [sys.executable, "-m", args.training_script]
    elif args.no_python:
        program = [args.training_script]
    else:
        program = [sys.executable, args.training_script]
    commands = []
    for local in range(nproc):
        rank = args.node_rank * nproc + local
        env = dict(common, RANK=str(rank), LOCAL_RANK=str(local), ROLE_RANK=str(rank))
        commands.append((env, program + args.training_script_args))
    return commands


def _run_local(commands):
    """Start this node's processes; when one fails, stop the others (SIGTERM, then SIGKILL after 5 s). Returns the
    exit status: 0, or that of the first process to fail."""
    import queue
    import threading
    procs = [subprocess.Popen(cmd, env=dict(os.environ, **env)) for env, cmd in commands]
    ended = queue.SimpleQueue()  # local ranks in the order their processes ended
    for local, p in enumerate(procs):
        threading.Thread(target=lambda local, p: (p.wait(), ended.put(local)), args=(local, p), daemon=True).start()

    def forward(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    failed = 0
    deadline = None
    for _ in procs:
        while True:
            try:
                local = ended.get(timeout=0.1)
                break
            except queue.Empty:
                if deadline is not None and time.monotonic() > deadline:
                    forward(signal.SIGKILL, None)
        code = procs[local].returncode
        if code and not failed:
            failed = code if code > 0 else 128 - code
            how = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
            sys.stderr.write(f"ember.distributed.run: local rank {local} (RANK {commands[local][0]['RANK']}) {how}; "
                             f"stopping the other processes\n")
            sys.stderr.flush()
            forward(signal.SIGTERM, None)
            deadline = time.monotonic() + 5
    return failed


def main(args=None):
    args = parser().parse_args(args)
    if transport(args) == "tcp":
        sys.exit(_run_local(local_commands(args)))
    job = subprocess.Popen(command(args))

    def forward(signum, frame):
        job.send_signal(signum)  # mpiexec passes it on to every rank and ends the job

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    code = job.wait()
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
