"""ember's TCP transport: the part of mpi4py's MPI module that ember.distributed calls, on sockets.

Note [TCP transport]: torch's usual start -- processes made by mp.spawn or by a launcher, each calling
init_process_group with a rank and world size and MASTER_ADDR/MASTER_PORT (env://) or tcp://host:port --
has no MPI job behind it. Such a group runs on this module instead of MPI (init_process_group picks it
when the process was not started by mpiexec; _mpi.use() makes mpi() return it), and it speaks the subset of
mpi4py the collectives use: communicators (Get_rank, Dup, Get_group().Incl, Create_group, Free, Abort),
Isend/Irecv, the non-blocking collectives, requests (Test, Testall, Wait, Cancel), Status, datatypes (as
NumPy dtypes) and reduction ops (as ufuncs). So every collective, its agreement step and its error paths
run unchanged on either transport.

Rendezvous goes through a store (Note [Stores] in _store.py), as torch's: a TCPStore served by rank 0 at
MASTER_ADDR:MASTER_PORT (env://) or tcp://host:port, a FileStore (file://), or the store= given. Each
rank claims its rank (a second process with the same rank is refused), listens on a free port and
publishes (world size, address); once every rank's entry is there, rank j connects to every rank i < j.
Each pair of ranks keeps that one connection; the listeners close once the mesh stands.

Messages: a 24-byte frame head (context id, tag, payload bytes), then the payload. One thread per
connection reads frames and matches each against the receives posted for its (context, tag), in post
order, as MPI matches (a receive from any source takes the first arrival); an unmatched message waits,
in arrival order, for the receive that will take it. A send writes its frame at once; the readers always
drain their sockets, so it never waits for the peer to post a receive. Communicators made by Dup and
Create_group are context ids derived from their parent's and the call (every member computes the same).

A collective is one exchange of point-to-point messages tagged by its sequence number on the communicator
(negative: user tags are >= 0): at its start it posts its receives and writes its sends, every rank
sending its part straight to every rank that needs it; it completes when its receives have arrived, and
the thread that tests or waits for it then places the parts or combines them, in rank order, so every
rank computes the same bits (DDP's replicas stay identical). That is n - 1 messages per rank and
collective: meant for the few processes of a machine or a small cluster, not a ring or tree for many.
A connection that closes (its process died) fails every receive waiting on it with DistBackendError, at
once; a peer that hangs is caught by the group's timeout, as with MPI.
"""
import hashlib
import itertools
import os
import socket
import struct
import threading
import time

import numpy as np

from . import _sockets

_FRAME = struct.Struct("<qqQ")  # context id, tag, payload bytes


class _InPlace:
    def __repr__(self):
        return "IN_PLACE"


IN_PLACE = _InPlace()
ANY_SOURCE = -1

# datatypes: the NumPy dtype of the elements
C_BOOL = np.dtype(np.bool_)
UINT8_T = BYTE = np.dtype(np.uint8)
INT8_T = np.dtype(np.int8)
INT16_T = np.dtype(np.int16)
UINT16_T = np.dtype(np.uint16)
INT32_T = np.dtype(np.int32)
INT64_T = np.dtype(np.int64)
FLOAT = np.dtype(np.float32)
DOUBLE = np.dtype(np.float64)
C_FLOAT_COMPLEX = np.dtype(np.complex64)
C_DOUBLE_COMPLEX = np.dtype(np.complex128)

# reduction ops: ufuncs that fold a part into the accumulator in place
SUM, PROD, MIN, MAX = np.add, np.multiply, np.minimum, np.maximum
BAND, BOR, BXOR = np.bitwise_and, np.bitwise_or, np.bitwise_xor
LAND, LOR, LXOR = np.logical_and, np.logical_or, np.logical_xor

COMM_WORLD = None  # the world communicator once start() has made the mesh
_net = None


def _backend_error(message):
    from .distributed_c10d import DistBackendError
    return DistBackendError(message)


def _array(msg):
    """The flat array of a message [buffer, datatype] or [buffer, (counts, displacements), datatype]."""
    buf, dtype = msg[0], msg[-1]
    arr = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, np.uint8)
    return arr.reshape(-1).view(dtype)


def _layout(msg):
    """(counts, displacements) of a v-message, as lists of ints."""
    counts, displs = msg[1]
    return [int(c) for c in counts], [int(d) for d in displs]


def _bytes(arr):
    """A flat contiguous array's bytes, as a uint8 view."""
    return arr.reshape(-1).view(np.uint8)


# ---- requests ---------------------------------------------------------------------------------------
class Status:
    """Where a receive's message came from (the communicator's rank) and its size."""

    def __init__(self):
        self.source = -1
        self.nbytes = 0

    def Get_source(self):
        return self.source

    def Get_count(self, datatype):
        return self.nbytes // np.dtype(datatype).itemsize


class Request:
    """A started operation. Testall/Test raise the operation's error (a lost connection, a truncation)."""
    done = True
    error = None

    @staticmethod
    def Testall(requests):
        done = True
        for r in requests:
            done = r.Test() and done
        return done

    def Test(self, status=None):
        if self.error is not None:
            raise self.error
        return self.done

    def Wait(self, status=None):
        while not self.Test(status):
            time.sleep(1e-4)

    def Cancel(self):
        pass

    def _block(self, seconds):
        """Wait up to `seconds` for completion (no polling); whether it completed."""
        return self.done


def wait_all(requests, deadline, status=None):
    """_mpi.wait's blocking form: every request done (True), or False once the monotonic deadline passes; errors
    and the first request's status as Test gives them."""
    for r in requests:
        while not r.Test():
            remaining = deadline - time.monotonic()
            if remaining < 0:
                return False
            r._block(min(1.0, remaining))
    if status is not None:
        requests[0].Test(status)
    return True


class _Recv(Request):
    """A posted receive: into `out` (a flat uint8 view) or, with out=None, keeping the payload."""

    def __init__(self, comm, source, tag, out):
        self.comm = comm
        self.source = source  # a world rank, or ANY_SOURCE
        self.tag = tag
        self.out = out
        self.done = False
        self.error = None
        self.sender = -1
        self.nbytes = 0
        self.payload = None

    def _deliver(self, sender, payload):
        self.sender = sender
        self.nbytes = len(payload)
        if self.out is None:
            self.payload = payload
        elif len(payload) > self.out.size:
            self.error = RuntimeError(f"message truncated: rank {sender} sent {len(payload)} bytes to a receive "
                                      f"of {self.out.size} bytes")
        elif len(payload):
            self.out[:len(payload)] = payload
        self.done = True

    def Test(self, status=None):
        if not self.done:
            lost = self.comm.net.lost(self.source)
            if lost is not None:
                raise _backend_error(lost)
            return False
        if self.error is not None:
            raise self.error
        if status is not None:
            status.source = self.comm.members.index(self.sender)
            status.nbytes = self.nbytes
        return True

    def Cancel(self):
        self.comm.net.cancel(self)

    def _block(self, seconds):
        net = self.comm.net
        with net.lock:
            if not self.done and net.lost(self.source) is None:
                net.arrived.wait(seconds)
        return self.done


class _Collective(Request):
    """A started collective: its sends are written; it completes once its receives ({comm rank: _Recv}) have
    arrived, when finish({comm rank: payload}) places or combines them (once, on the thread that tests it)."""

    def __init__(self, recvs, finish):
        self.recvs = recvs
        self.finish = finish
        self.done = False
        self.error = None
        self.lock = threading.Lock()

    def Test(self, status=None):
        if not self.done:
            if not all(r.Test() for r in self.recvs.values()):
                return False
            with self.lock:
                if not self.done:
                    try:
                        self.finish({p: r.payload for p, r in self.recvs.items()})
                    except BaseException as e:  # raised by this and every later Test
                        self.error = e
                    self.recvs, self.finish, self.done = {}, None, True
        if self.error is not None:
            raise self.error
        return True

    def _block(self, seconds):
        for r in list(self.recvs.values()):
            if not r._block(seconds):
                return False
        return True


# ---- the connections ----------------------------------------------------------------------------------
class _Net:
    """This process's connections to every other rank, the readers, and the matching of messages."""

    def __init__(self, rank, size, socks):
        self.rank = rank
        self.size = size
        self.socks = socks
        self.send_locks = {p: threading.Lock() for p in socks}
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.posted = {}  # (context, tag) -> receives not yet matched, in post order
        self.unexpected = {}  # (context, tag) -> (sender, payload) not yet received, in arrival order
        self.dead = {}  # rank -> why its connection is gone
        self.closed = False
        for peer, sock in socks.items():
            threading.Thread(target=self._read, args=(peer, sock), daemon=True,
                             name=f"ember-tcp-read-{peer}").start()

    def send(self, context, dest, tag, data):
        """Write one message (a flat array's bytes) to world rank `dest` (to ourselves: filed directly)."""
        payload = _bytes(data)
        if dest == self.rank:
            self._arrive(context, dest, tag, payload.copy())
            return
        why = self.dead.get(dest)
        if why is not None or self.closed:
            raise _backend_error(why or "the process group was destroyed")
        try:
            with self.send_locks[dest]:
                self.socks[dest].sendall(_FRAME.pack(context, tag, payload.size))
                if payload.size:
                    self.socks[dest].sendall(payload)
        except OSError as e:
            raise _backend_error(f"sending to rank {dest} failed: {e}") from None

    def _read(self, peer, sock):
        head = bytearray(_FRAME.size)
        try:
            while True:
                _sockets.read_into(sock, memoryview(head))
                context, tag, n = _FRAME.unpack(head)
                payload = np.empty(n, np.uint8)  # (a bytearray would be zeroed first)
                _sockets.read_into(sock, memoryview(payload))
                self._arrive(context, peer, tag, payload)
        except (OSError, ConnectionError):
            with self.lock:
                if not self.closed:
                    self.dead[peer] = f"the connection to rank {peer} was closed (its process ended or failed)"
                self.arrived.notify_all()

    def _arrive(self, context, sender, tag, payload):
        key = (context, tag)
        with self.lock:
            waiting = self.posted.get(key)
            if waiting:
                for i, r in enumerate(waiting):
                    if r.source == sender or r.source == ANY_SOURCE:
                        _take(self.posted, key, i)
                        r._deliver(sender, payload)
                        self.arrived.notify_all()
                        return
            self.unexpected.setdefault(key, []).append((sender, payload))

    def post(self, comm, source, tag, out):
        """Start a receive on comm's context from world rank `source` (or ANY_SOURCE)."""
        r = _Recv(comm, source, tag, out)
        key = (comm.context, tag)
        with self.lock:
            filed = self.unexpected.get(key)
            if filed:
                for i, (sender, payload) in enumerate(filed):
                    if source == sender or source == ANY_SOURCE:
                        _take(self.unexpected, key, i)
                        r._deliver(sender, payload)
                        return r
            self.posted.setdefault(key, []).append(r)
        return r

    def cancel(self, r):
        with self.lock:
            waiting = self.posted.get((r.comm.context, r.tag), [])
            if r in waiting:
                _take(self.posted, (r.comm.context, r.tag), waiting.index(r))
                r.done = True

    def lost(self, source):
        """Why a receive from `source` can never complete (its connection is gone), or None."""
        if self.closed:
            return "the process group was destroyed"
        if source == ANY_SOURCE:
            return next(iter(self.dead.values()), None) if len(self.dead) == self.size - 1 else None
        return self.dead.get(source)

    def close(self):
        with self.lock:
            self.closed = True
            self.arrived.notify_all()
        for sock in self.socks.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _take(queues, key, i):
    """Remove entry i of queues[key], and the key once its list is empty (a collective's tag is used once)."""
    del queues[key][i]
    if not queues[key]:
        del queues[key]


# ---- communicators --------------------------------------------------------------------------------
class _Group:
    """Get_group()'s result: the world ranks of a communicator's members, for Incl and Create_group."""

    def __init__(self, members):
        self.members = members

    def Incl(self, ranks):
        return _Group([self.members[r] for r in ranks])

    def Free(self):
        pass


class Comm:
    """A communicator: its members (world ranks, in its rank order) and a context id of its messages."""

    def __init__(self, net, members, context):
        self.net = net
        self.members = list(members)
        self.context = context
        self.rank = self.members.index(net.rank)
        self.made = {}  # (kind, key) -> how many communicators this one made so
        self.sequence = itertools.count()

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return len(self.members)

    def _child(self, kind, key=()):
        count = self.made.get((kind, key), 0)
        self.made[(kind, key)] = count + 1
        digest = hashlib.blake2b(repr((self.context, kind, key, count)).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little", signed=True)

    def Dup(self):
        return Comm(self.net, self.members, self._child("dup"))

    def Get_group(self):
        return _Group(self.members)

    def Create_group(self, group):
        return Comm(self.net, group.members, self._child("group", tuple(group.members)))

    def Free(self):
        pass

    def Abort(self, code=1):
        """End this process now; the other ranks' pending receives from it fail as its connections close."""
        self.net.close()
        os._exit(code)

    # ---- point to point ------------------------------------------------------------------------
    def Isend(self, msg, dest, tag):
        self.net.send(self.context, self.members[dest], tag, _array(msg))
        return Request()

    def Irecv(self, msg, source, tag):
        world = ANY_SOURCE if source == ANY_SOURCE else self.members[source]
        return self.net.post(self, world, tag, _bytes(_array(msg)))

    def _send(self, rank, tag, data):
        self.net.send(self.context, self.members[rank], tag, data)

    def _start(self, algorithm, *args):
        """Run a collective's start (its receives posted, its sends written) under the next sequence tag."""
        return algorithm(-1 - next(self.sequence), *args)

    def _exchange(self, tag, sends, sources, finish):
        """Post a receive from each comm rank in sources, write sends ({comm rank: array}); the collective that
        completes with finish({comm rank: payload})."""
        recvs = {p: self.net.post(self, self.members[p], tag, None) for p in sources}
        for p, data in sends.items():
            self._send(p, tag, data)
        return _Collective(recvs, finish)

    def _peers(self):
        return [p for p in range(len(self.members)) if p != self.rank]

    def _part(self, got, p, dtype, count):
        """The payload comm rank p sent, as `count` elements of dtype."""
        part = got[p].view(dtype)
        if part.size != count:
            raise _backend_error(f"rank {self.members[p]} sent {part.size} elements where {count} were expected")
        return part

    def Iallreduce(self, sendbuf, recvbuf, op):
        return self._start(self._allreduce, sendbuf, recvbuf, op)

    def _allreduce(self, tag, sendbuf, recvbuf, op):
        out = _array(recvbuf)
        mine = out if sendbuf is IN_PLACE else _array(sendbuf)
        peers = self._peers()

        def finish(got):
            parts = [self._part(got, p, out.dtype, out.size) for p in range(self.rank)]
            parts += [mine if self.rank < 2 or sendbuf is not IN_PLACE else mine.copy()]  # out is overwritten first
            parts += [self._part(got, p, out.dtype, out.size) for p in range(self.rank + 1, len(self.members))]
            _fold(parts, op, out)
        return self._exchange(tag, {p: mine for p in peers}, peers, finish)

    def Ibcast(self, buf, root):
        return self._start(self._bcast, buf, root)

    def _bcast(self, tag, buf, root):
        arr = _array(buf)
        if self.rank == root:
            return self._exchange(tag, {p: arr for p in self._peers()}, [], lambda got: None)

        def finish(got):
            arr[...] = self._part(got, root, arr.dtype, arr.size)
        return self._exchange(tag, {}, [root], finish)

    def Ireduce(self, sendbuf, recvbuf, op, root):
        return self._start(self._reduce, sendbuf, recvbuf, op, root)

    def _reduce(self, tag, sendbuf, recvbuf, op, root):
        if self.rank != root:
            return self._exchange(tag, {root: _array(sendbuf)}, [], lambda got: None)
        out = _array(recvbuf)
        mine = out if sendbuf is IN_PLACE else _array(sendbuf)

        def finish(got):
            parts = [mine.copy() if p == root and root >= 2 and sendbuf is IN_PLACE else mine if p == root
                     else self._part(got, p, out.dtype, out.size) for p in range(len(self.members))]
            _fold(parts, op, out)
        return self._exchange(tag, {}, self._peers(), finish)

    def Iallgather(self, sendbuf, recvbuf):
        return self._start(self._allgather, sendbuf, recvbuf)

    def _allgather(self, tag, sendbuf, recvbuf):
        mine, out = _array(sendbuf), _array(recvbuf)
        k = mine.size
        out[self.rank * k:(self.rank + 1) * k] = mine
        size = len(self.members)
        return self._exchange(tag, {p: mine for p in self._peers()}, self._peers(),
                              self._placer(out, [k] * size, [p * k for p in range(size)]))

    def Iallgatherv(self, sendbuf, recvbuf):
        return self._start(self._allgatherv, sendbuf, recvbuf)

    def _allgatherv(self, tag, sendbuf, recvbuf):
        mine, out = _array(sendbuf), _array(recvbuf)
        counts, displs = _layout(recvbuf)
        out[displs[self.rank]:displs[self.rank] + counts[self.rank]] = mine
        return self._exchange(tag, {p: mine for p in self._peers()}, self._peers(), self._placer(out, counts, displs))

    def _placer(self, out, counts, displs):
        """A finish that copies each received part to its place in out."""
        def finish(got):
            for p in got:
                out[displs[p]:displs[p] + counts[p]] = self._part(got, p, out.dtype, counts[p])
        return finish

    def Igather(self, sendbuf, recvbuf, root):
        return self._start(self._gather, sendbuf, recvbuf, root, False)

    def Igatherv(self, sendbuf, recvbuf, root):
        return self._start(self._gather, sendbuf, recvbuf, root, True)

    def _gather(self, tag, sendbuf, recvbuf, root, varying):
        mine = _array(sendbuf)
        if self.rank != root:
            return self._exchange(tag, {root: mine}, [], lambda got: None)
        out = _array(recvbuf)
        size = len(self.members)
        counts, displs = _layout(recvbuf) if varying else ([mine.size] * size, [p * mine.size for p in range(size)])
        out[displs[root]:displs[root] + counts[root]] = mine
        return self._exchange(tag, {}, self._peers(), self._placer(out, counts, displs))

    def Iscatter(self, sendbuf, recvbuf, root):
        return self._start(self._scatter, sendbuf, recvbuf, root, False)

    def Iscatterv(self, sendbuf, recvbuf, root):
        return self._start(self._scatter, sendbuf, recvbuf, root, True)

    def _scatter(self, tag, sendbuf, recvbuf, root, varying):
        out = _array(recvbuf)
        if self.rank != root:
            def finish(got):
                out[...] = self._part(got, root, out.dtype, out.size)
            return self._exchange(tag, {}, [root], finish)
        src = _array(sendbuf)
        size = len(self.members)
        counts, displs = _layout(sendbuf) if varying else ([out.size] * size, [p * out.size for p in range(size)])
        out[...] = src[displs[root]:displs[root] + counts[root]]
        sends = {p: src[displs[p]:displs[p] + counts[p]] for p in self._peers()}
        return self._exchange(tag, sends, [], lambda got: None)

    def Ireduce_scatter_block(self, sendbuf, recvbuf, op):
        return self._start(self._reduce_scatter_block, sendbuf, recvbuf, op)

    def _reduce_scatter_block(self, tag, sendbuf, recvbuf, op):
        out, src = _array(recvbuf), _array(sendbuf)
        k = out.size

        def finish(got):
            parts = [src[p * k:(p + 1) * k] if p == self.rank else self._part(got, p, out.dtype, k)
                     for p in range(len(self.members))]
            _fold(parts, op, out)
        return self._exchange(tag, {p: src[p * k:(p + 1) * k] for p in self._peers()}, self._peers(), finish)

    def Ialltoallv(self, sendbuf, recvbuf):
        return self._start(self._alltoallv, sendbuf, recvbuf)

    def _alltoallv(self, tag, sendbuf, recvbuf):
        src, out = _array(sendbuf), _array(recvbuf)
        (scounts, sdispls), (rcounts, rdispls) = _layout(sendbuf), _layout(recvbuf)
        me = self.rank
        out[rdispls[me]:rdispls[me] + rcounts[me]] = src[sdispls[me]:sdispls[me] + scounts[me]]
        sends = {p: src[sdispls[p]:sdispls[p] + scounts[p]] for p in self._peers()}
        return self._exchange(tag, sends, self._peers(), self._placer(out, rcounts, rdispls))


def _fold(parts, op, out):
    """out = parts[0] op parts[1] op ... in rank order (the same bits on every rank); out may be one of the
    first two parts (an elementwise op reads each element before writing it)."""
    if len(parts) == 1:
        if parts[0] is not out:
            np.copyto(out, parts[0])
        return
    op(parts[0], parts[1], out=out)
    for part in parts[2:]:
        op(out, part, out=out)


# ---- rendezvous ---------------------------------------------------------------------------------------
def start(rank, size, store, timeout, host_hint, owned):
    """Join the world of `size` processes through `store` (Note [TCP transport]); sets COMM_WORLD. owned: the
    store was made for this group (closed when it ends, or at once if the rendezvous fails)."""
    global COMM_WORLD, _net, _joined
    import datetime
    import pickle
    import uuid
    token = uuid.uuid4().hex
    live = f"ember/tcp/{rank}/live"
    if store.compare_set(live, "", token) != token.encode():
        if owned:
            store.close()
        raise ValueError(f"a second process joined as rank {rank} (world_size {size})")
    listener = socket.socket()
    try:
        listener.bind(("", 0))
        listener.listen(max(16, size))
        generation = store.add(f"ember/tcp/{rank}/inits", 1)  # the n-th group of this rank on this store
        key = f"ember/tcp/{generation}/{{}}".format
        store.set(key(rank), pickle.dumps((size, (_sockets.local_host(host_hint), listener.getsockname()[1]))))
        try:
            store.wait([key(p) for p in range(size)], datetime.timedelta(seconds=timeout))
        except Exception as e:
            missing = [p for p in range(size) if not store.check([key(p)])]
            from .distributed_c10d import DistStoreError
            raise DistStoreError(f"rendezvous timed out after {timeout:g} s: ranks {missing} of {size} did not join "
                                 f"({e})") from None
        table = {}
        for p, value in enumerate(store.multi_get([key(p) for p in range(size)])):
            peer_size, table[p] = pickle.loads(value)
            if peer_size != size:
                raise ValueError(f"rank {p} was started with world_size={peer_size}, rank {rank} with {size}")
        socks = _mesh(listener, rank, size, table, time.monotonic() + timeout)
    except BaseException:
        store.delete_key(live)
        if owned:
            store.close()  # rank 0's TCPStore server must not keep the port
        raise
    finally:
        listener.close()
    _net = _Net(rank, size, socks)
    _joined = (store, live, owned)
    COMM_WORLD = Comm(_net, range(size), 0)
    return COMM_WORLD


def _mesh(listener, rank, size, table, deadline):
    """Connect to every lower rank (sending our rank), accept every higher one: {rank: socket}."""
    socks = {}
    for peer in range(rank):
        sock = _sockets.connect(tuple(table[peer]), max(0.1, deadline - time.monotonic()))
        _sockets.send_object(sock, rank)
        socks[peer] = sock
    while len(socks) < size - 1:
        listener.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            from .distributed_c10d import DistNetworkError
            missing = sorted(set(range(size)) - set(socks) - {rank})
            raise DistNetworkError(f"rendezvous: ranks {missing} did not connect to rank {rank}") from None
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks[_sockets.recv_object(sock)] = sock
    return socks


_joined = None  # (store, this rank's key in it, whether the group owns the store) while a group exists


def shutdown():
    """Close the connections and leave the store (destroy_process_group of the default group)."""
    global COMM_WORLD, _net, _joined
    if _net is not None:
        _net.close()
    if _joined is not None:
        store, live, owned = _joined
        try:
            store.delete_key(live)
        except Exception:  # the store's server (rank 0) may be gone already
            pass
        if owned:
            store.close()
    _net = COMM_WORLD = _joined = None
