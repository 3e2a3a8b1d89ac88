"""torch.distributed.rpc on TCP sockets: init_rpc, rpc_sync, rpc_async, remote, RRef, shutdown.

https://pytorch.org/docs/stable/rpc.html. Workers are started by the user (mp.spawn, a launcher) and meet at
MASTER_ADDR:MASTER_PORT (Note [RPC agent] in _agent.py). Functions run on the callee's thread pool; an
@functions.async_execution function returns a Future and the reply waits for it. An RRef's value lives on
its owner while some worker holds an RRef to it (Note [RRef lifetimes] in _ledger.py).
Distributed autograd: ember.distributed.autograd; DistributedOptimizer: ember.distributed.optim. Not built:
RemoteModule, device maps. Needs no MPI.
"""
import contextlib
import enum
import itertools
import sys
import threading

from ...futures import Future
from . import functions
from ._agent import Agent, format_remote_error
from ._ledger import Ledger

__all__ = ["BackendType", "RRef", "RpcBackendOptions", "TensorPipeRpcBackendOptions", "WorkerInfo", "functions",
           "get_rpc_timeout", "get_worker_info", "init_rpc", "is_available", "remote", "rpc_async", "rpc_sync",
           "shutdown"]

DEFAULT_RPC_TIMEOUT_SEC = 60.0
UNSET_RPC_TIMEOUT = -1.0

_agent = None  # this process's Agent between init_rpc and shutdown
_ledger = None  # and its RRef ledger (Note [RRef lifetimes])
_owned = {}  # rref id -> Future of the value (this worker is its owner)
_owned_lock = threading.Lock()
_rref_ids = itertools.count()


def is_available():
    return True


class BackendType(enum.Enum):
    TENSORPIPE = "TENSORPIPE"


class RpcBackendOptions:
    def __init__(self, rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC, init_method="env://"):
        self.rpc_timeout = rpc_timeout
        self.init_method = init_method


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """torch's options object; ember uses num_worker_threads, rpc_timeout and init_method (no devices)."""

    def __init__(self, *, num_worker_threads=16, rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC, init_method="env://",
                 device_maps=None, devices=None, _transports=None, _channels=None):
        super().__init__(rpc_timeout, init_method)
        if device_maps or devices:
            raise ValueError("ember's RPC has CPU tensors only: device_maps and devices are not supported")
        self.num_worker_threads = num_worker_threads
        self.device_maps = {}
        self.devices = []


class WorkerInfo:
    """A worker's name and id (its rank)."""
    __slots__ = ("name", "id")

    def __init__(self, name, id):
        self.name = name
        self.id = id

    def __eq__(self, other):
        return isinstance(other, WorkerInfo) and (self.name, self.id) == (other.name, other.id)

    def __hash__(self):
        return hash((self.name, self.id))

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def __reduce__(self):
        return WorkerInfo, (self.name, self.id)


# ---- start and stop -------------------------------------------------------------------------------

def init_rpc(name, backend=None, rank=-1, world_size=None, rpc_backend_options=None):
    """Join the RPC network as worker `name` with id `rank` out of `world_size` (blocks until all have)."""
    global _agent, _ledger
    import os
    if _agent is not None:
        raise RuntimeError("RPC is already initialized")
    if backend is not None and backend != BackendType.TENSORPIPE:
        raise TypeError(f"Argument backend must be a member of BackendType, but got {backend}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"worker name must be a non-empty string, got {name!r}")
    rank = int(os.environ.get("RANK", -1)) if rank == -1 else rank
    if world_size is None:
        world_size = int(os.environ["WORLD_SIZE"]) if "WORLD_SIZE" in os.environ else None
    if rank < 0 or world_size is None:
        raise ValueError("init_rpc needs rank and world_size (arguments, or RANK and WORLD_SIZE in the environment)")
    options = rpc_backend_options if rpc_backend_options is not None else TensorPipeRpcBackendOptions()
    if isinstance(options, RpcBackendOptions) and not hasattr(options, "num_worker_threads"):
        options.num_worker_threads = 16
    with _owned_lock:
        _owned.clear()
    _agent = Agent(name, rank, world_size, options, _handle, _on_note)
    _ledger = Ledger(rank, _agent.note, _drop_owned)


def shutdown(graceful=True, timeout=0):
    """Leave the RPC network. graceful: wait for this worker's outstanding calls and for every worker to
    reach shutdown first (so nobody still needs anyone)."""
    global _agent, _ledger
    agent = _require()
    try:
        if graceful:
            for future in agent.outstanding():
                try:
                    future.wait()
                except Exception:  # noqa: BLE001 -- its caller sees the error
                    pass
            rpc_sync(0, _arrive_at_shutdown, args=(agent.rank,), timeout=0)
    finally:
        agent.close()
        _ledger.stop()
        _agent = _ledger = None
        with _owned_lock:
            _owned.clear()


_arrivals = []
_arrivals_lock = threading.Lock()


@functions.async_execution
def _arrive_at_shutdown(rank):
    """On worker 0: a Future completed once every worker has arrived. Worker 0's own arrival completes last:
    completing a Future sends its reply (inline), so by the time worker 0 leaves shutdown, and its process
    perhaps exits, every other worker's reply is already written to its socket."""
    future = Future()
    with _arrivals_lock:
        _arrivals.append((rank, future))
        if len(_arrivals) == _agent.world_size:
            ready = sorted(_arrivals, key=lambda arrival: arrival[0] == 0)  # stable: worker 0 moves to the end
            _arrivals.clear()
        else:
            ready = []
    for _, f in ready:
        f.set_result(None)
    return future


def _require():
    if _agent is None:
        raise RuntimeError("RPC has not been initialized. Call torch.distributed.rpc.init_rpc first.")
    return _agent


# ---- workers --------------------------------------------------------------------------------------

def get_worker_info(worker_name=None):
    """This worker's WorkerInfo, or that of the worker named worker_name."""
    agent = _require()
    if worker_name is None:
        return WorkerInfo(agent.name, agent.rank)
    for rank, (name, _) in agent.table.items():
        if name == worker_name:
            return WorkerInfo(name, rank)
    raise RuntimeError(f"Unknown destination worker {worker_name}")


def get_rpc_timeout():
    return _require().options.rpc_timeout


def _rank_of(to):
    agent = _require()
    if isinstance(to, WorkerInfo):
        return to.id
    if isinstance(to, int):
        if to not in agent.table:
            raise RuntimeError(f"Unknown destination worker id {to}")
        return to
    return get_worker_info(to).id


# ---- calls ----------------------------------------------------------------------------------------

def rpc_async(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run func(*args, **kwargs) on worker `to`; a Future of its result (its error raised by wait())."""
    if not callable(func):
        raise TypeError("function should be callable.")
    agent = _require()
    future = _Reply(agent, timeout)
    rank = _rank_of(to)
    context_id = _autograd_context(rank)
    agent.call(rank, (func, tuple(args or ()), dict(kwargs or {}), context_id), future)
    return future


def _autograd_context(rank):
    """The distributed autograd context of this thread (None outside one), now reaching `rank`."""
    dist_autograd = sys.modules.get("ember.distributed.autograd")
    if dist_autograd is None or dist_autograd.current_context_id() is None:
        return None
    dist_autograd.note_destination(rank)
    return dist_autograd.current_context_id()


def _in_context(context_id):
    """A with-block inside the caller's distributed autograd context (nothing outside one)."""
    if context_id is None:
        return contextlib.nullcontext()
    from .. import autograd as dist_autograd
    return dist_autograd._Entered(context_id)


def rpc_sync(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run func(*args, **kwargs) on worker `to` and return its result (its error raised here)."""
    return rpc_async(to, func, args, kwargs, timeout).wait()


def remote(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run func(*args, **kwargs) on worker `to`, keeping the result there; an RRef to it."""
    if not callable(func):
        raise TypeError("function should be callable.")
    agent = _require()
    owner = _rank_of(to)
    rref = RRef._existing(owner, (agent.rank, next(_rref_ids)), None)
    if owner == agent.rank:  # our own hold came with the object; one more while the value is made
        _ledger.post("hold", rref._id, 1)
    else:  # this worker's hold and the making's, registered before the call (Note [RRef lifetimes])
        agent.note(owner, ("hold", rref._id, 2))
    rref._created = rpc_async(owner, _rref_create, (rref._id, func, tuple(args or ()), dict(kwargs or {})),
                              timeout=timeout)
    return rref


class _Reply(Future):
    """A call's Future: completed by the agent's reader thread; wait() bounded by the call's timeout."""

    def __init__(self, agent, timeout):
        super().__init__()
        self._timeout = agent.options.rpc_timeout if timeout == UNSET_RPC_TIMEOUT else timeout

    def wait(self):
        if not self._done and not self._block(self._timeout or None):
            raise RuntimeError(f"RPC ran for more than its timeout of {self._timeout} seconds and timed out.")
        return super().wait()


def _handle(payload, reply):
    """The callee's side of one request (on a pool thread): run it, answer with the value or the error; an
    async_execution function (or an RRef method that is one) answers when its Future completes."""
    func, args, kwargs, context_id = payload
    with _in_context(context_id):
        _run_request(func, args, kwargs, reply, context_id)


def _run_request(func, args, kwargs, reply, context_id):
    try:
        result = func(*args, **kwargs)
        asynchronous = hasattr(func, "_wrapped_async_rpc_function") or isinstance(result, _Async)
        if isinstance(result, _Async):
            result = result.future
    except Exception as e:  # noqa: BLE001 -- sent back to the caller
        reply(False, format_remote_error(get_worker_info(), e))
        return
    if not asynchronous:
        reply(True, result)
        return
    if not isinstance(result, Future):
        reply(False, RuntimeError(f"An async_execution function must return a Future, got {type(result).__name__}"))
        return

    def answer(f):
        with _in_context(context_id):
            try:
                reply(True, f.value())
            except Exception as e:  # noqa: BLE001
                reply(False, format_remote_error(get_worker_info(), e))
    result.add_done_callback(answer)


class _Async:
    """A Future returned by an async_execution method called through an RRef proxy."""
    __slots__ = ("future",)

    def __init__(self, future):
        self.future = future


# ---- remote references ----------------------------------------------------------------------------

def _owned_future(rref_id):
    with _owned_lock:
        future = _owned.get(rref_id)
        if future is None:
            future = _owned[rref_id] = Future()
        return future


def _rref_create(rref_id, func, args, kwargs):
    """On the owner: run func and keep its result as the value of rref_id (then the making's hold ends)."""
    future = _owned_future(rref_id)
    try:
        try:
            value = func(*args, **kwargs)
            if hasattr(func, "_wrapped_async_rpc_function"):
                value = value.wait()
        except Exception as e:
            future.set_exception(e)
            raise
        future.set_result(value)
    finally:
        _ledger.post("hold", rref_id, -1)


def _drop_owned(rref_id):
    """On the owner: nobody holds rref_id any more (the ledger's call)."""
    with _owned_lock:
        _owned.pop(rref_id, None)


def _on_note(note):
    """A ledger note from another worker (the agent's reader thread, in arrival order)."""
    if _ledger is not None:
        _ledger.post(*note)


def _rref_context_get_debug_info():
    """torch's counts of this worker's RRef bookkeeping (strings, as torch's): owned values another worker
    holds, those holds, values still being made, this worker's forks not yet confirmed by an owner."""
    info = _ledger.debug_info()
    with _owned_lock:
        info["num_pending_futures"] = str(sum(1 for f in _owned.values() if not f.done()))
    return info


@functions.async_execution
def _rref_fetch(rref_id):
    """On the owner: a Future of the value (the remote() that makes it may still be running)."""
    return _owned_future(rref_id)


def _rref_call(rref, name, args, kwargs):
    """On the owner: value.name(*args, **kwargs); an async_execution method answers when its Future does."""
    method = getattr(type(rref.local_value()), name, None)
    result = getattr(rref.local_value(), name)(*args, **kwargs)
    if method is not None and hasattr(method, "_wrapped_async_rpc_function"):
        return _Async(result)
    return result


class RRef:
    """A reference to a value on one worker (its owner). RRef(value) makes this worker the owner; remote()
    makes one owned by another. to_here() fetches a copy; rpc_sync()/rpc_async()/remote() give proxies that
    call the value's methods on the owner."""

    def __init__(self, value, type_hint=None):
        agent = _require()
        self._owner = agent.rank
        self._id = (agent.rank, next(_rref_ids))
        self._created = None
        self._ledger = _ledger
        _owned_future(self._id).set_result(value)
        _ledger.post("new", self._id, self._owner, None)

    @classmethod
    def _existing(cls, owner, rref_id, sender):
        """The RRef object for an id: made by remote() (sender None) or unpickled from a fork by sender."""
        rref = object.__new__(cls)
        rref._owner = owner
        rref._id = rref_id
        rref._created = None
        rref._ledger = _ledger
        if _ledger is not None:
            _ledger.post("new", rref_id, owner, sender)
        return rref

    def __del__(self):
        ledger = getattr(self, "_ledger", None)
        if ledger is not None and ledger is _ledger:  # (not one of an RPC session that has ended)
            ledger.post("gone", self._id, self._owner)

    def __reduce__(self):
        raise RuntimeError("Can not pickle rref in python pickler, rref can only be pickled when using RPC")

    def _reduce_for_rpc(self):
        """How the agent's pickler sends this RRef: a fork from this worker (_fork_sent once the message is
        pickled whole, before it goes)."""
        return RRef._existing, (self._owner, self._id, _ledger.rank)

    def _fork_sent(self):
        _ledger.post("forked", self._id)

    def is_owner(self):
        return self._owner == _require().rank

    def owner(self):
        return WorkerInfo(_require().table[self._owner][0], self._owner)

    def owner_name(self):
        return self.owner().name

    def confirmed_by_owner(self):
        return self.is_owner() or self._created is None or self._created.done()

    def local_value(self):
        """The value itself; on its owner only."""
        if not self.is_owner():
            raise RuntimeError(f"Call it on {self.owner()}, but this worker is {get_worker_info()}: local_value() "
                               "works on the owner of the RRef only")
        return _owned_future(self._id).wait()

    def to_here(self, timeout=UNSET_RPC_TIMEOUT):
        """A copy of the value (blocks until the owner has it)."""
        if self.is_owner():
            return self.local_value()
        return rpc_sync(self._owner, _rref_fetch, (self._id,), timeout=timeout)

    def rpc_sync(self, timeout=UNSET_RPC_TIMEOUT):
        return _Proxy(self, rpc_sync, timeout)

    def rpc_async(self, timeout=UNSET_RPC_TIMEOUT):
        return _Proxy(self, rpc_async, timeout)

    def remote(self, timeout=UNSET_RPC_TIMEOUT):
        return _Proxy(self, remote, timeout)

    def __repr__(self):
        kind = "OwnerRRef" if _agent is not None and self.is_owner() else "UserRRef"
        return f"{kind}(RRefId = GloballyUniqueId(created_on={self._id[0]}, local_id={self._id[1]}))"


class _Proxy:
    """rref.rpc_sync().method(*args): the method called on the owner's value through `call`."""

    def __init__(self, rref, call, timeout):
        self._rref = rref
        self._call = call
        self._timeout = timeout

    def __getattr__(self, name):
        def method(*args, **kwargs):
            return self._call(self._rref._owner, _rref_call, (self._rref, name, args, kwargs), timeout=self._timeout)
        return method
