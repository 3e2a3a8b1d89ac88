"""The transport of ember.distributed.rpc: TCP sockets between the workers, pickled messages, a thread pool.

Note [RPC agent]: rank 0 listens on the rendezvous address (MASTER_ADDR:MASTER_PORT, or init_method's
tcp://host:port); every other worker listens on a port of its own and sends rank 0 a join message with its
name, rank and address; once all have joined, rank 0 answers each with the table of every worker, so each
worker can reach every other. A request is one frame (8-byte length, then a pickle) sent on a connection
the caller opened to the callee (one per pair, made on first use, with a thread reading the replies); the
callee runs it on a pool of num_worker_threads threads and answers on the same connection, matching by
message id. A note (the RRef ledgers', Note [RRef lifetimes] in _ledger.py) travels the same way but is
handled by the reading thread at once, so notes from one worker are handled in the order it sent them. Functions travel by reference (module and name), as pickle sends them, so the callee must be
able to import them. A reply carries the value, or the error: ValueError and TypeError keep their type and
the rest arrive as RuntimeError (torch's rule), with the callee's traceback in the message.
"""
import concurrent.futures
import io
import itertools
import pickle
import socket
import sys
import threading
import traceback

from .. import _sockets


class _Pickler(pickle.Pickler):
    """pickle, with the tensors that require grad inside a distributed autograd context recorded as sent
    (Note [Distributed autograd]) and RRefs sent as forks (Note [RRef lifetimes] in _ledger.py)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rrefs = []  # the RRefs in the message: their forks count once it is pickled whole

    def reducer_override(self, obj):
        fork = getattr(type(obj), "_reduce_for_rpc", None)
        if fork is not None:
            self.rrefs.append(obj)
            return fork(obj)
        if _is_tensor(obj) and obj.requires_grad:
            dist_autograd = sys.modules.get("ember.distributed.autograd")
            reduced = None if dist_autograd is None else dist_autograd.reduce_sent_tensor(obj)
            if reduced is not None:
                return reduced
        return NotImplemented


def _is_tensor(obj):
    from ..._tensor import Tensor
    return isinstance(obj, Tensor)


def _send(sock, lock, message):
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dump(message)
    for rref in pickler.rrefs:
        rref._fork_sent()
    data = buffer.getvalue()
    with lock:
        sock.sendall(_sockets.HEADER.pack(len(data)) + data)


class Agent:
    """One worker's end of the RPC network (Note [RPC agent])."""

    def __init__(self, name, rank, world_size, options, handle, on_note):
        self.name = name
        self.rank = rank
        self.world_size = world_size
        self.options = options
        self.handle = handle  # handle(payload, reply): runs a request, then calls reply(ok, value)
        self.on_note = on_note  # on_note(payload): a note, handled on the reading thread in arrival order
        self.pool = concurrent.futures.ThreadPoolExecutor(options.num_worker_threads,
                                                          thread_name_prefix=f"rpc-{name}")
        self.ids = itertools.count()
        self.pending = {}  # message id -> ember Future of the reply
        self.lock = threading.Lock()
        self.conns = {}  # rank -> (socket, send lock), the connections this worker opened
        self.closed = False
        master = _sockets.rendezvous_address(options.init_method, "RPC")
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if rank == 0:
            self.listener.bind(("", master[1]))
        else:
            self.listener.bind(("", 0))
        self.listener.listen(max(16, world_size))
        self.joined = {}
        self.waiting = []  # rank 0: the join connections to answer with the table
        self.table_ready = threading.Condition()
        threading.Thread(target=self._accept, daemon=True, name=f"rpc-accept-{name}").start()
        me = (name, rank, (_sockets.local_host(master[0], "TP_SOCKET_IFNAME"), self.listener.getsockname()[1]))
        if rank == 0:
            self._register(me, None)
            with self.table_ready:
                if not self.table_ready.wait_for(lambda: len(self.joined) == world_size, options.rpc_timeout or None):
                    raise RuntimeError(f"RPC rendezvous timed out: {len(self.joined)} of {world_size} workers joined")
            self.table = {r: (n, a) for n, r, a in self.joined.values()}
        else:
            sock = _sockets.connect_when_up(master, options.rpc_timeout)
            _send(sock, threading.Lock(), ("join", me))
            reply = _sockets.recv_object(sock)
            sock.close()
            if reply[0] == "error":
                raise reply[1]
            self.table = reply[1]

    # ---- the listening side ---------------------------------------------------------------------
    def _accept(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return  # closed by shutdown
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _register(self, entry, sock):
        """Rank 0: a worker joined (sock: where to answer once all have); errors go back to it."""
        name, rank, _ = entry
        with self.table_ready:
            error = None
            if not 0 <= rank < self.world_size:
                error = ValueError(f"rank {rank} out of range for world_size {self.world_size}")
            elif rank in self.joined or any(n == name for n, _, _ in self.joined.values()):
                error = RuntimeError(f"RPC worker name {name!r} or rank {rank} is taken by another worker")
            if error is not None:
                _send(sock, threading.Lock(), ("error", error))
                return
            self.joined[rank] = entry
            if sock is not None:
                self.waiting.append(sock)
            if len(self.joined) == self.world_size:
                table = {r: (n, a) for n, r, a in self.joined.values()}
                for s in self.waiting:
                    _send(s, threading.Lock(), ("table", table))
                self.table_ready.notify_all()

    def _serve(self, sock):
        """Requests arriving on one connection: run each on the pool, answer on the same connection."""
        lock = threading.Lock()
        try:
            message = _sockets.recv_object(sock)
            if message[0] == "join":
                self._register(message[1], sock)
                return
            while True:  # ("call", message id, payload) or ("note", payload)
                if message[0] == "note":
                    self.on_note(message[1])
                else:
                    _, mid, payload = message
                    self.pool.submit(self.handle, payload, _replier(sock, lock, mid))
                message = _sockets.recv_object(sock)
        except (ConnectionError, OSError, EOFError):
            return
        except RuntimeError:  # the pool is shut down
            return

    # ---- the calling side -----------------------------------------------------------------------
    def _connection(self, rank):
        with self.lock:
            conn = self.conns.get(rank)
            if conn is None:
                sock = _sockets.connect(self.table[rank][1], self.options.rpc_timeout)
                conn = self.conns[rank] = (sock, threading.Lock())
                threading.Thread(target=self._read_replies, args=(sock,), daemon=True).start()
            return conn

    def _read_replies(self, sock):
        while True:
            try:
                ok, mid, value = _sockets.recv_object(sock)
            except (ConnectionError, OSError, EOFError):
                return
            with self.lock:
                future = self.pending.pop(mid, None)
            if future is not None:
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

    def call(self, rank, payload, future):
        """Send payload to `rank`; its reply completes `future`."""
        if self.closed:
            raise RuntimeError("RPC has not been initialized or has been shut down")
        mid = next(self.ids)
        with self.lock:
            self.pending[mid] = future
        sock, lock = self._connection(rank)
        _send(sock, lock, ("call", mid, payload))

    def note(self, rank, payload):
        """Send payload to `rank`'s on_note, after everything this worker sent there before; no reply."""
        if self.closed:
            return
        sock, lock = self._connection(rank)
        _send(sock, lock, ("note", payload))

    def outstanding(self):
        with self.lock:
            return list(self.pending.values())

    def close(self):
        self.closed = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for sock, _ in self.conns.values():
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
            self.conns.clear()
        self.pool.shutdown(wait=False)


def _replier(sock, lock, mid):
    def reply(ok, value):
        try:
            _send(sock, lock, (ok, mid, value))
        except (pickle.PicklingError, TypeError, AttributeError) as e:  # an unpicklable result or error
            _send(sock, lock, (False, mid, RuntimeError(f"the RPC result could not be pickled: {e}")))
        except OSError:
            pass  # the caller has gone
    return reply


def format_remote_error(worker, error):
    """The exception the caller gets: ValueError and TypeError keep their type (as torch's), every other
    becomes RuntimeError; the message names the callee and carries its traceback."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    message = f"On {worker}:\n{error!r}\n{text}"
    for kind in (ValueError, TypeError):
        if isinstance(error, kind):
            return kind(message)
    return RuntimeError(message)
