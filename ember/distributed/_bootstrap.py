"""Per-process start of ember.distributed.run: set torch's environment variables from the MPI rank,
then run the training script (a path, `-m module`, or `--no-python` executable) as torchrun would.

The rank comes from the process manager's environment (PMI_RANK/PMI_SIZE under MPICH's mpiexec,
OMPI_COMM_WORLD_* under Open MPI), so MPI itself is initialized later, by init_process_group.
"""
import os
import runpy
import sys


def _mpi_rank_and_size():
    for rank, size in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    from ._mpi import mpi
    world = mpi().COMM_WORLD
    return world.Get_rank(), world.Get_size()


def set_environment():
    """RANK, LOCAL_RANK, GROUP_RANK ... as torchrun sets them, for block placement of nproc ranks per node."""
    rank, size = _mpi_rank_and_size()
    nproc = int(os.environ.get("EMBER_NPROC_PER_NODE", size))
    values = {"RANK": rank, "WORLD_SIZE": size, "LOCAL_RANK": rank % nproc, "LOCAL_WORLD_SIZE": nproc,
              "GROUP_RANK": rank // nproc, "GROUP_WORLD_SIZE": size // nproc, "ROLE_RANK": rank,
              "ROLE_WORLD_SIZE": size, "ROLE_NAME": "default"}
    for name, value in values.items():
        os.environ[name] = str(value)


def main(argv):
    set_environment()
    if argv[0] == "--no-python":
        os.execvp(argv[1], argv[1:])
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")


def _abort_on_failed_exit(code):
    """sys.exit(nonzero) on one rank: end the whole job now (mpiexec only ends it for a crash or an Abort)."""
    failed = code not in (None, 0)
    if failed and "mpi4py.MPI" in sys.modules:
        from ._mpi import mpi
        if mpi().Is_initialized() and not mpi().Is_finalized() and mpi().COMM_WORLD.Get_size() > 1:
            sys.stderr.write(f"[rank{os.environ.get('RANK')}]: exited with {code!r}; aborting the job\n")
            sys.stderr.flush()
            mpi().COMM_WORLD.Abort(code if isinstance(code, int) else 1)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SystemExit as e:
        _abort_on_failed_exit(e.code)
        raise
