"""Process groups on communicators: init/destroy, new_group, ranks, barriers, ReduceOp, Backend, Work.

https://pytorch.org/docs/stable/distributed.html. Processes started by an MPI launcher (mpiexec, or
ember.distributed.run) run every backend name ember accepts ("mpi", "gloo", None) on MPI: the default
group is a duplicate of MPI_COMM_WORLD, a new_group an MPI communicator made from its members, rank and
world size are MPI's, and torch's RANK/WORLD_SIZE and the rank=/world_size= arguments are checked against
them. Processes started otherwise (mp.spawn, a launcher of their own) that give a rank and world size
rendezvous as torch's do, at MASTER_ADDR:MASTER_PORT (env://) or tcp://host:port, and their groups run
on ember's TCP transport (Note [TCP transport] in _tcp.py). A process given neither is a world of one on
MPI (MPI's singleton start).
"""
import datetime
import enum
import os
import sys
import time
import traceback

from . import _mpi
from ._mpi import mpi

default_pg_timeout = datetime.timedelta(minutes=30)


class DistError(RuntimeError):
    """torch.distributed.DistError."""


class DistBackendError(DistError):
    """torch.distributed.DistBackendError: the communication layer failed (MPI, a lost connection, a timeout)."""


class DistNetworkError(DistError):
    """torch.distributed.DistNetworkError: the rendezvous could not reach or gather the other ranks."""


class DistStoreError(DistError):
    """torch.distributed.DistStoreError: a store operation failed or timed out."""


class QueueEmptyError(DistStoreError):
    """torch.distributed.QueueEmptyError: a non-blocking queue_pop found its queue empty."""


for _cls in (DistError, DistBackendError, DistNetworkError, DistStoreError, QueueEmptyError):
    _cls.__module__ = "ember.distributed"  # the name tracebacks show
del _cls


# ---- names ------------------------------------------------------------------------------------------
class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self):
        return f"RedOpType.{self.name}"


class ReduceOp:
    """torch.distributed.ReduceOp: ReduceOp.SUM etc. are RedOpType members; ReduceOp(op) wraps one."""
    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM

    def __init__(self, op=RedOpType.SUM):
        self.op = as_red_op(op)

    def __eq__(self, other):
        if isinstance(other, (ReduceOp, RedOpType)):
            return self.op == as_red_op(other)
        return NotImplemented

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return repr(self.op)


def as_red_op(op):
    """The RedOpType of a ReduceOp or RedOpType argument (torch raises TypeError for anything else)."""
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"op must be a torch.distributed.ReduceOp, got {type(op).__name__}")


class Backend(str):
    """torch.distributed.Backend: a lower-case backend name. ember runs "gloo" (on MPI or TCP) and "mpi"."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"
    default_device_backend_map = {"cpu": "gloo", "cuda": "nccl", "xpu": "xccl", "mps": "gloo"}  # torch's names

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return str.__new__(cls, name.lower())  # any name, as torch (a third-party backend's); init checks it


def _runs_on_mpi(backend):
    """Whether ember can serve a requested backend: mpi and gloo (and "cpu:gloo,..." forms)."""
    if backend is None:
        return True
    value = Backend(backend)
    if ":" in value:
        devices = dict(part.split(":", 1) for part in value.split(","))
        return devices.get("cpu") in ("gloo", "mpi")
    return value in ("gloo", "mpi")


# ---- process groups ------------------------------------------------------------------------------
class ProcessGroup:
    """One MPI communicator and the global ranks of its members, in group-rank order."""

    def __init__(self, comm, ranks, backend, timeout, group_name):
        self.comm = comm
        self.ranks = ranks
        self.backend = backend
        self.timeout = timeout
        self.group_name = group_name
        self.ctrl = comm.Dup()  # ember's own messages (monitored_barrier, object p2p), apart from users' tags

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return len(self.ranks)

    def name(self):
        return self.backend

    def deadline(self, timeout=None):
        """The monotonic time an operation started now must finish by."""
        span = self.timeout if timeout is None else _seconds(timeout)
        return time.monotonic() + span

    def free(self):
        self.comm.Free()
        self.ctrl.Free()
        self.comm = None
        self.ctrl = None

    def __repr__(self):
        return f"<ember.distributed.ProcessGroup {self.group_name!r} ranks={self.ranks} backend={self.backend!r}>"


class _World:
    """The default group and the groups made from it."""
    default = None
    groups = []
    excepthook = None
    store = None  # the store the TCP transport's rendezvous went through


_world = _World()


class _WorldAttr(type):
    @property
    def WORLD(cls):
        return _world.default


class group(metaclass=_WorldAttr):
    """torch.distributed.group: group.WORLD is the default process group (None before init)."""


class GroupMember(metaclass=_WorldAttr):
    """torch.distributed.GroupMember: WORLD, and NON_GROUP_MEMBER, what new_group returns to non-members."""
    NON_GROUP_MEMBER = -100


def _seconds(timeout):
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout).__name__}")
    return timeout.total_seconds()


def _default():
    if _world.default is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _world.default


def resolve(group, opname=None):
    """The ProcessGroup a call works on, or None when this rank is not a member (torch then does nothing)."""
    if group is None or group is _world.default:
        return _default()
    if group is GroupMember.NON_GROUP_MEMBER:
        _default()
        if opname is not None:
            import warnings
            warnings.warn(f"Running {opname} on global rank {get_rank()} which does not belong to the given group.")
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    if group.comm is None:
        raise ValueError("Invalid process group specified: it was destroyed")
    return group


def is_available():
    """Whether ember.distributed can run: always (without the `distributed` extra, on TCP only)."""
    return True


def is_mpi_available():
    """Whether the `distributed` extra (mpi4py, mpich) is installed."""
    import importlib.util
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):  # ValueError: mpi4py blocked in sys.modules
        return False


def is_gloo_available():
    """"gloo" runs on ember's TCP transport (or on MPI under an MPI launcher): always available."""
    return True


def is_nccl_available():
    return False


def is_ucc_available():
    return False


def is_xccl_available():
    return False


def is_backend_available(backend):
    """Whether ember can run `backend`; a "cpu:gloo,cuda:nccl" form needs every device's backend (as torch)."""
    value = backend.lower()
    names = [part.split(":", 1)[-1] for part in value.split(",")] if ":" in value else [value]
    return all(_runs_on_mpi(name) and (name != "mpi" or is_mpi_available()) for name in names)


def is_initialized():
    return _world.default is not None


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank=None):
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
                       "and want the code to run locally instead.")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None, _ranks=None):
    """Make the default process group: MPI's world under an MPI launcher, else torch's rendezvous on TCP
    when a rank and world size are given (arguments or RANK/WORLD_SIZE), else a world of one on MPI.

    Installs an excepthook that aborts the whole job when a rank dies of an uncaught exception."""
    if _world.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if not _runs_on_mpi(backend):
        raise RuntimeError(f"backend {backend!r} is not available in ember: 'mpi', 'gloo' and None are")
    if store is not None and init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")  # torch's types, here and below
    span = _seconds(default_pg_timeout if timeout is None else timeout)
    if _on_tcp(backend, init_method, world_size, rank, store):
        world, rank, size = _tcp_world(init_method, world_size, rank, store, span)
    else:
        world = mpi().COMM_WORLD
        rank = world.Get_rank()
        size = world.Get_size()
        _check_agrees("rank", rank, os.environ.get("RANK"), rank, size)
        _check_agrees("world_size", world_size, os.environ.get("WORLD_SIZE"), size, size)
    name = Backend(backend) if backend is not None else Backend.UNDEFINED
    _world.default = ProcessGroup(world.Dup(), list(range(size)), name, span, group_name or "0")
    _world.groups = [_world.default]
    _world.excepthook = sys.excepthook
    sys.excepthook = _abort_job


_MPI_LAUNCHED = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK")  # set by MPICH's, PMIx's and Open MPI's launchers


def _on_tcp(backend, init_method, world_size, rank, store):
    """Whether the default group rendezvous on TCP: given a store, or not started by an MPI launcher, not asked
    for "mpi", and told where to meet or who it is (init_method, rank/world_size arguments, torch's environment)."""
    if store is not None:
        return True
    if any(name in os.environ for name in _MPI_LAUNCHED) or (backend is not None and Backend(backend) == "mpi"):
        return False
    return (init_method is not None or rank not in (-1, None) or world_size not in (-1, None)
            or "WORLD_SIZE" in os.environ or "RANK" in os.environ)


def _tcp_world(init_method, world_size, rank, store, span):
    """(world communicator, rank, size) after torch's rendezvous through a store, on the TCP transport."""
    import datetime
    from . import _sockets, _store, _tcp
    if store is not None:
        scheme = "store"
        if world_size in (-1, None) or int(world_size) <= 0:
            raise AssertionError("world_size must be positive if using store")
        if rank in (-1, None) or int(rank) < 0:
            raise AssertionError("rank must be non-negative if using store")
    else:
        method = "env://" if init_method is None else init_method
        scheme = method.split("://", 1)[0]
        if "://" not in method or scheme not in ("env", "tcp", "file"):
            raise RuntimeError(f"No rendezvous handler for {scheme}:// (ember supports env://, tcp:// and file://)")
    values = {}
    for what, given, env_name in (("rank", rank, "RANK"), ("world size", world_size, "WORLD_SIZE")):
        if given not in (-1, None):
            values[what] = int(given)
        elif scheme == "env" and env_name in os.environ:
            values[what] = int(os.environ[env_name])
        elif scheme == "env":
            raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable "
                             f"{env_name} expected, but not set")
        else:
            raise ValueError(f"Error initializing torch.distributed using {scheme}:// rendezvous: {what} parameter "
                             f"missing")
    rank, size = values["rank"], values["world size"]
    if size < 1 or not 0 <= rank < size:
        raise ValueError(f"init_process_group: rank {rank} is not in range for world_size {size}")
    timeout = datetime.timedelta(seconds=span)
    host = None  # no master to route to: the hostname's address (_sockets.local_host)
    if scheme == "file":
        store = _store.FileStore(method[len("file://"):], size)
    elif scheme in ("env", "tcp"):
        host, port = _sockets.rendezvous_address(None if scheme == "env" else method)
        store = _store.TCPStore(host, port, size, rank == 0, timeout, wait_for_workers=False)
    else:
        inner = store
        while isinstance(inner, _store.PrefixStore):
            inner = inner.underlying_store
        host = getattr(inner, "host", None)  # a TCPStore's master
    world = _tcp.start(rank, size, store, span, host, owned=scheme != "store")
    _mpi.use(_tcp)
    _world.store = store
    return world, rank, size


def _get_default_store():
    """The store the default group met through (TCP transport only)."""
    if _world.default is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    if _world.store is None:
        raise RuntimeError("the default process group runs on MPI, which has no store")
    return _world.store


def _check_agrees(what, arg, env, mpi_value, mpi_size):
    """torch's rank/world size from arguments or the environment must be what MPI says they are."""
    hint = ("start the processes with `python -m ember.distributed.run --nproc-per-node N script.py` or "
            "`mpiexec -n N python script.py`")
    if arg not in (-1, None) and int(arg) != mpi_value:
        raise ValueError(f"init_process_group: {what}={arg} but MPI gives {mpi_value} (world of {mpi_size}); {hint}")
    env_name = "RANK" if what == "rank" else "WORLD_SIZE"
    if env is not None and int(env) != mpi_value:
        raise ValueError(f"init_process_group: {env_name}={env} in the environment but MPI gives {mpi_value} "
                         f"(world of {mpi_size}); {hint}")


def _abort_job(exc_type, exc, tb):
    """sys.excepthook while a group exists: print the traceback as torch does ([rankN]: ...), abort the job
    (on TCP: end this process, whose closed connections fail the other ranks' next collective)."""
    rank = mpi().COMM_WORLD.Get_rank()
    lines = "".join(traceback.format_exception(exc_type, exc, tb)).splitlines()
    sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in lines))
    sys.stderr.flush()
    if mpi().COMM_WORLD.Get_size() > 1:
        mpi().COMM_WORLD.Abort(1)  # mpiexec then ends every other rank: the job fails instead of hanging


def destroy_process_group(group=None):
    """Free a group's communicator; with no group (or WORLD), every group, and uninstall the excepthook."""
    if group is None or group is _world.default:
        if _world.default is None:
            raise AssertionError("Process group cannot be None")
        for pg in _world.groups:
            pg.free()
        _world.default = None
        _world.groups = []
        if sys.excepthook is _abort_job:
            sys.excepthook = _world.excepthook
        if _mpi.on_tcp():
            _mpi.mpi().shutdown()
            _mpi.use(None)
            _world.store = None
        return
    pg = resolve(group)
    if pg is None:
        return
    pg.free()
    _world.groups.remove(pg)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A group of some global ranks: an MPI communicator made by its members (MPI_Comm_create_group)."""
    world = _default()
    size = world.size()
    if ranks is None:
        ranks = list(range(size))
    ranks = [int(r) for r in ranks]
    for r in ranks:
        if not 0 <= r < size:
            raise ValueError("The new group's rank should be within the world_size set by init_process_group")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks must be distinct, got {ranks}")
    if sort_ranks:
        ranks = sorted(ranks)
    if not _runs_on_mpi(backend):
        raise RuntimeError(f"backend {backend!r} is not available in ember: 'mpi', 'gloo' and None are")
    if world.rank() not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    members = world.comm.Get_group().Incl(ranks)
    comm = world.comm.Create_group(members)
    members.Free()
    span = world.timeout if timeout is None else _seconds(timeout)
    name = world.backend if backend is None else Backend(backend)
    pg = ProcessGroup(comm, ranks, name, span, group_desc or str(len(_world.groups)))
    _world.groups.append(pg)
    return pg


def get_rank(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group).rank()


def get_world_size(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group).size()


def get_default_backend_for_device(device):
    """The backend torch picks for a device type ('gloo' for cpu)."""
    from .. import _device
    kind = device.type if isinstance(device, _device.device) else _device.device(device).type
    backend = Backend.default_device_backend_map.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def get_backend(group=None):
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend


def get_process_group_ranks(group):
    return list(resolve(group).ranks)


def get_global_rank(group, group_rank):
    pg = resolve(group)
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.ranks}")
    return pg.ranks[group_rank]


def get_group_rank(group, global_rank):
    pg = resolve(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.ranks}")
    return pg.ranks.index(global_rank)


def group_root(pg, global_rank, group_rank):
    """The group rank of a collective's root given as a global rank or a group rank (exactly one)."""
    if global_rank is None and group_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    if global_rank is not None and group_rank is not None:
        raise ValueError("Can only specify one of global_rank or group_rank")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg.ranks}")
        return group_rank
    if global_rank not in pg.ranks:
        if pg is _world.default:
            raise RuntimeError(f"invalid root rank: {global_rank}")
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.ranks}")
    return pg.ranks.index(global_rank)


# ---- Work ---------------------------------------------------------------------------------------
class Work:
    """A started operation (MPI or TCP-transport requests): wait() blocks, bounded by the group's timeout; is_completed() polls.

    `finish` runs once, when the requests complete: it copies strided or widened buffers back into the
    tensors (Note [Buffers to MPI]) and finishes AVG. MPICH has no progress thread: a started operation
    advances whenever this process calls into MPI (another collective, is_completed(), wait())."""

    def __init__(self, pg, requests, what, finish=None, result=(), status=None, keep=()):
        self._pg = pg
        self._keep = keep  # buffers MPI reads or writes until the requests complete
        self._requests = requests
        self._what = what
        self._finish = finish
        self._result = list(result)
        self._status = status
        self._deadline = pg.deadline()
        self._done = False

    def _complete(self):
        self._done = True
        self._keep = ()
        if self._finish is not None:
            finish = self._finish
            self._finish = None
            finish()

    def wait(self, timeout=None):
        if not self._done:
            deadline = self._deadline if timeout is None else time.monotonic() + _seconds(timeout)
            _mpi.wait(self._requests, deadline, self._what, self._status)
            self._complete()
        return True

    def is_completed(self):
        if not self._done:
            if self._status is not None:  # one receive: its status (sender, size) is what finish reads
                done = self._requests[0].Test(self._status)
            else:
                done = mpi().Request.Testall(self._requests)
            if done:
                self._complete()
        return self._done

    def is_success(self):
        return self.is_completed()

    def exception(self):
        return None

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        """A torch.futures.Future of the operation's result (the list of its tensors), completed when it is:
        polled by done(), waited on by wait() (ember/futures.py)."""
        from ..futures import Future
        return Future._of(self.is_completed, self.result)

    def source_rank(self):
        """The global rank a receive got its message from (irecv with src=None)."""
        if self._status is None:
            raise ValueError("source_rank is only available for recv work")
        self.wait()
        return self._pg.ranks[self._status.Get_source()]

    def synchronize(self):
        self.wait()


def run(pg, requests, what, finish, async_op, result=(), status=None, keep=()):
    """A collective's end: a Work for async_op, else wait for it (bounded by the timeout) and return None."""
    work = Work(pg, requests, what, finish, result, status, keep)
    if async_op:
        return work
    work.wait()
    return None


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """The agreement exchange alone (Note [Collective agreement]): it completes once every rank has joined,
    and a rank that is in a different collective makes every rank raise instead of hang."""
    pg = resolve(group, "barrier")
    if pg is None:
        return None
    from ._check import start
    request, compare = start(pg, "barrier")
    work = Work(pg, [request], "barrier", compare)
    if timeout is not None:
        work._deadline = pg.deadline(timeout)
    if async_op:
        return work
    work.wait()
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier in which group rank 0 names the ranks that did not arrive within the timeout."""
    pg = resolve(group, "monitored_barrier")
    if pg is None:
        return None
    MPI = mpi()
    comm = pg.ctrl
    deadline = pg.deadline(timeout)
    span = int(round((deadline - time.monotonic()) * 1000))
    if pg.rank() != 0:
        _mpi.wait([comm.Isend([b"", MPI.BYTE], 0, 1)], deadline, "monitored_barrier (arrive)")
        release = comm.Irecv([bytearray(0), MPI.BYTE], 0, 2)
        try:
            _mpi.wait([release], deadline, "monitored_barrier (wait for rank 0)")
        except DistBackendError:
            release.Cancel()  # rank 0 gave up: this receive must not match a later barrier's release
            release.Wait()
            raise
        return None
    arrivals = {r: comm.Irecv([bytearray(0), MPI.BYTE], r, 1) for r in range(1, pg.size())}
    late = []
    for r, request in arrivals.items():
        try:
            _mpi.wait([request], deadline, "monitored_barrier")
        except DistBackendError:
            late.append(pg.ranks[r])
            if not wait_all_ranks:
                break
    for request in arrivals.values():  # a late arrival must not match a later monitored_barrier
        if not request.Test():
            request.Cancel()
            request.Wait()
    if late:
        if wait_all_ranks:
            raise RuntimeError(f"Ranks {', '.join(map(str, late))} failed to pass monitoredBarrier in {span} ms")
        raise RuntimeError(f"Rank {late[0]} failed to pass monitoredBarrier in {span} ms")
    releases = [comm.Isend([b"", MPI.BYTE], r, 2) for r in range(1, pg.size())]
    _mpi.wait(releases, deadline, "monitored_barrier (release)")
    return None
