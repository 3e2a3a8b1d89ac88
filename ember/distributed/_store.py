"""torch.distributed's key-value stores: Store, HashStore, FileStore, TCPStore, PrefixStore.

Note [Stores]: a store maps string keys to byte values and is how processes find each other: the default
group's rendezvous (env://, tcp:// and file:// init methods, or init_process_group(store=)) publishes each
rank's address in one (_tcp.rendezvous). Every store applies the same operations (_apply, on a dict of
bytes) in one place: HashStore in this process, TCPStore in the master process's server (one thread per
client connection; the master itself applies them directly), FileStore in a pickled dict in a file that
each operation reads and rewrites under an exclusive flock. get/wait/multi_get block until their keys
exist, up to the store's timeout, then raise DistStoreError as torch's. Values are bytes (a str is stored
as its UTF-8); add keeps its counter as decimal text, so get returns b"5" after add(key, 5).
Queues (queue_push/queue_pop/queue_len) live beside the keys under their own names, as in torch: a key and a
queue may share a name, check/wait see a non-empty queue, num_keys/list_keys do not count queues; FileStore
has none (NotImplementedError, as torch's). barrier(key, n) counts arrivals in `key/num_members` and
releases everyone through `key/last_member`; clone() gives a second handle on the same data (a new
connection for TCPStore).
"""
import datetime
import fcntl
import os
import pickle
import socket
import threading
import time

from . import _sockets

_MISSING = object()
_DEFAULT_TIMEOUT = datetime.timedelta(minutes=5)


def _store_error(message):
    from .distributed_c10d import DistStoreError
    return DistStoreError(message)


def _as_bytes(value):
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):  # torch also takes a list of byte values
        return bytes(value)
    raise TypeError(f"a store value must be str or bytes, not {type(value).__name__}")


def _present(data, key):
    """Whether check/wait see `key`: a key, or a queue with something in it."""
    return key in data or (_QUEUE, key) in data


_QUEUE = "\0queue"  # data[(_QUEUE, name)]: a queue's values, oldest first (removed when emptied)


def _apply(data, op, args):
    """One store operation on `data` (key -> bytes); _MISSING where a key it reads is absent."""
    if op == "set":
        data[args[0]] = args[1]
        return None
    if op == "get":
        return data.get(args[0], _MISSING)
    if op == "add":
        key, amount = args
        try:
            value = int(data.get(key, b"0")) + amount
        except ValueError:
            raise ValueError(f"store key {key!r} does not hold an integer (add)") from None
        data[key] = str(value).encode()
        return value
    if op == "append":
        data[args[0]] = data.get(args[0], b"") + args[1]
        return None
    if op == "compare_set":
        key, expected, desired = args
        current = data.get(key, _MISSING)
        if current is _MISSING:
            if expected == b"":
                data[key] = desired
                return desired
            return expected
        if current == expected:
            data[key] = desired
            return desired
        return current
    if op == "check":
        return all(_present(data, k) for k in args[0])
    if op == "delete_key":
        return data.pop(args[0], _MISSING) is not _MISSING
    if op == "num_keys":
        return sum(1 for k in data if type(k) is str and not k.startswith("\0"))
    if op == "list_keys":
        return [k for k in data if type(k) is str and not k.startswith("\0")]
    if op == "queue_push":
        data.setdefault((_QUEUE, args[0]), []).append(args[1])
        return None
    if op == "queue_pop":
        queue = data.get((_QUEUE, args[0]))
        if not queue:
            return _MISSING
        value = queue.pop(0)
        if not queue:
            del data[(_QUEUE, args[0])]
        return value
    if op == "queue_len":
        return len(data.get((_QUEUE, args[0]), ()))
    if op == "multi_set":
        data.update(zip(args[0], args[1]))
        return None
    if op == "multi_get":
        values = [data.get(k, _MISSING) for k in args[0]]
        return _MISSING if any(v is _MISSING for v in values) else values
    raise ValueError(f"unknown store operation {op!r}")


class Store:
    """torch.distributed.Store: the operations every store has; a subclass gives _do (one operation, not
    waiting) and _wait_keys (block until keys exist or `seconds` pass)."""

    def __init__(self, timeout=_DEFAULT_TIMEOUT):
        self._timeout = timeout

    @property
    def timeout(self):
        return self._timeout

    def set_timeout(self, timeout):
        self._timeout = timeout

    def set(self, key, value):
        self._do("set", (key, _as_bytes(value)))

    def get(self, key):
        return self._blocking("get", (key,), [key])

    def add(self, key, amount):
        return self._do("add", (key, int(amount)))

    def append(self, key, value):
        self._do("append", (key, _as_bytes(value)))

    def compare_set(self, key, expected_value, desired_value):
        return self._do("compare_set", (key, _as_bytes(expected_value), _as_bytes(desired_value)))

    def check(self, keys):
        return self._do("check", (list(keys),))

    def wait(self, keys, timeout=None):
        seconds = (self._timeout if timeout is None else timeout).total_seconds()
        if not self._wait_keys(list(keys), seconds):
            raise self._timed_out(list(keys), seconds, "wait")

    def delete_key(self, key):
        return self._do("delete_key", (key,))

    def num_keys(self):
        return self._do("num_keys", ())

    def multi_set(self, keys, values):
        self._do("multi_set", (list(keys), [_as_bytes(v) for v in values]))

    def multi_get(self, keys):
        return self._blocking("multi_get", (list(keys),), list(keys))

    def has_extended_api(self):
        return True

    def list_keys(self):
        return self._do("list_keys", ())

    def queue_push(self, key, value):
        self._do("queue_push", (key, _as_bytes(value)))

    def queue_pop(self, key, block=True):
        """The oldest value of the queue; waits for one up to the timeout, or with block=False raises
        QueueEmptyError at once."""
        if not block:
            value = self._do("queue_pop", (key,))
            if value is _MISSING:
                from .distributed_c10d import QueueEmptyError
                raise QueueEmptyError("queue is empty")
            return value
        return self._blocking("queue_pop", (key,), [key])

    def queue_len(self, key):
        return self._do("queue_len", (key,))

    def barrier(self, key, world_size, timeout=None):
        """Block until world_size callers have reached the barrier named key (within timeout, else the
        store's)."""
        self._arrive(key, world_size)
        self.wait([f"{key}/last_member"], timeout)

    def _arrive(self, key, world_size):
        """Count this caller in at barrier `key`; the world_size-th releases everyone."""
        if self.add(f"{key}/num_members", 1) == int(world_size):
            self.set(f"{key}/last_member", "1")

    def _blocking(self, op, args, keys):
        """An operation that reads keys: waited for until they exist, up to the timeout (again if another
        client took what came, as a queue_pop may)."""
        result = self._do(op, args)
        if result is not _MISSING:
            return result
        seconds = self._timeout.total_seconds()
        deadline = time.monotonic() + seconds
        while result is _MISSING:
            if not self._wait_keys(keys, max(0.0, deadline - time.monotonic())):
                raise self._timed_out(keys, seconds, op)
            result = self._do(op, args)
        return result

    def _timed_out(self, keys, seconds, op):
        """The error of a wait for keys that did not come: each store's torch type and wording."""
        return _store_error(f"Wait timeout after {seconds:g} s, keys: {keys}")


class HashStore(Store):
    """torch.distributed.HashStore: a store in this process's memory, shared by its threads."""

    def __init__(self):
        super().__init__()
        self._data = {}
        self._changed = threading.Condition()

    def clone(self):
        """Another handle on this store's data (torch's clone: one per thread)."""
        other = HashStore.__new__(HashStore)
        Store.__init__(other, self._timeout)
        other._data, other._changed = self._data, self._changed
        return other

    def _do(self, op, args):
        with self._changed:
            result = _apply(self._data, op, args)
            self._changed.notify_all()
        return result

    def _wait_keys(self, keys, seconds):
        with self._changed:
            return self._changed.wait_for(lambda: all(_present(self._data, k) for k in keys), seconds)


class FileStore(Store):
    """torch.distributed.FileStore: a store in a file every process of the group can open (a local or shared
    file system). The file goes away when `world_size` stores over it have been closed or collected (with
    world_size -1: when the last one open is)."""

    _POLL = 0.01

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        self.path = os.fspath(file_name)
        self.world_size = int(world_size)
        self._closed = False
        self._do("add", ("\0users", 1))

    def _do(self, op, args):
        with open(self.path, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            raw = f.read()
            data = pickle.loads(raw) if raw else {}
            before = dict(data)
            result = _apply(data, op, args)
            if data != before:
                f.seek(0)
                f.truncate()
                f.write(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
                f.flush()
        return result

    def _timed_out(self, keys, seconds, op):
        if op == "wait":
            return RuntimeError(f"Wait timeout after {seconds:g} s, keys: {keys}")
        return RuntimeError(f"Timeout waiting for key: {keys[0]} after {seconds * 1000:.0f} ms")

    def has_extended_api(self):
        return False  # (torch's FileStore answers so)

    def queue_push(self, *args, **kwargs):
        raise NotImplementedError("queue support is not implemented.")

    queue_pop = queue_len = queue_push

    def clone(self):
        """Another handle on the same file, with the default timeout (as torch's); it does not count as one of
        the world_size users."""
        other = FileStore.__new__(FileStore)
        Store.__init__(other)
        other.path, other.world_size, other._closed = self.path, self.world_size, True
        return other

    def delete_key(self, key):
        """Remove key; True whether or not it was there (torch's FileStore answers so)."""
        self._do("delete_key", (key,))
        return True

    def _wait_keys(self, keys, seconds):
        deadline = time.monotonic() + seconds
        while not self._do("check", (keys,)):
            if time.monotonic() > deadline:
                return False
            time.sleep(self._POLL)
        return True

    def close(self):
        """Count this store out; the last one removes the file."""
        if self._closed:
            return
        self._closed = True
        try:
            active = self._do("add", ("\0users", -1))
            done = self._do("add", ("\0done", 1))
        except OSError:
            return
        if (done >= self.world_size) if self.world_size > 0 else active <= 0:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class TCPStore(Store):
    """torch.distributed.TCPStore: the master process serves the store on `port` (0: a free one, see .port);
    the others connect to host_name:port, retrying until the timeout. With a world_size and
    wait_for_workers, the master waits until world_size stores (its own included) have connected."""

    def __init__(self, host_name, port, world_size=None, is_master=False, timeout=_DEFAULT_TIMEOUT,
                 wait_for_workers=True, multi_tenant=False, master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        self.host = host_name
        self.libuvBackend = False
        self._lock = threading.Lock()
        self._server = None
        seconds = timeout.total_seconds()
        if is_master:
            self._server = _Server(port)
            self.port = self._server.port
            if world_size and wait_for_workers:
                if not self._server.wait_clients(world_size - 1, seconds):
                    joined = self._server.clients + 1
                    self._server.close()
                    raise _store_error(f"Timed out after {seconds:g} seconds waiting for clients. "
                                       f"{joined}/{world_size} clients joined.")
            self._sock = None
        else:
            self.port = port
            from .distributed_c10d import DistNetworkError
            self._sock = _sockets.connect_when_up((host_name, port), seconds, "TCPStore: the master",
                                                  DistNetworkError)
            _sockets.send_object(self._sock, ("hello",))

    def _do(self, op, args):
        if self._server is not None:
            return self._server.apply(op, args)
        with self._lock:
            _sockets.send_object(self._sock, (op, args))
            ok, value = _sockets.recv_object(self._sock)
        if not ok:
            raise value
        return _MISSING if value == ("\0missing",) else value

    def _timed_out(self, keys, seconds, op):
        return _store_error(f"wait timeout after {seconds * 1000:.0f}ms, keys: {keys}")

    def barrier(self, key, world_size, timeout=None):
        self._arrive(key, world_size)
        seconds = (self._timeout if timeout is None else timeout).total_seconds()
        if not self._wait_keys([f"{key}/last_member"], seconds):
            raise _store_error(f"barrier timeout after {seconds * 1000:.0f}ms, key: {key}")

    def clone(self):
        """A new client connection to the same server."""
        return TCPStore(self.host, self.port, None, False, self._timeout)

    def _wait_keys(self, keys, seconds):
        if self._server is not None:
            return self._server.wait_keys(keys, seconds)
        return self._do("\0wait", (keys, seconds))

    def close(self):
        if self._server is not None:
            self._server.close()
        elif self._sock is not None:
            self._sock.close()


class _Server:
    """TCPStore's master: the data (a HashStore), and a thread per client connection answering its requests."""

    def __init__(self, port):
        self.table = HashStore()  # the data, its operations and waits
        self.apply = self.table._do
        self.wait_keys = self.table._wait_keys
        self.joined = threading.Condition()
        self.clients = 0
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind(("", port))
        except OSError as e:
            from .distributed_c10d import DistNetworkError
            self.listener.close()
            raise DistNetworkError(f"TCPStore: the master could not listen on port {port}: {e}") from None
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True, name="ember-tcpstore").start()

    def _accept(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True, name="ember-tcpstore-client").start()

    def _serve(self, sock):
        try:
            _sockets.recv_object(sock)  # hello
            with self.joined:
                self.clients += 1
                self.joined.notify_all()
            while True:
                op, args = _sockets.recv_object(sock)
                try:
                    value = self.wait_keys(*args) if op == "\0wait" else self.apply(op, args)
                    reply = (True, ("\0missing",) if value is _MISSING else value)
                except Exception as e:
                    reply = (False, e)
                _sockets.send_object(sock, reply)
        except (OSError, ConnectionError, EOFError):
            sock.close()

    def wait_clients(self, n, seconds):
        with self.joined:
            return self.joined.wait_for(lambda: self.clients >= n, seconds)

    def close(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()


class PrefixStore(Store):
    """torch.distributed.PrefixStore: another store's keys under `prefix/`."""

    def __init__(self, prefix, store):
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _key(self, key):
        return f"{self.prefix}/{key}"

    def set(self, key, value):
        self.underlying_store.set(self._key(key), value)

    def get(self, key):
        return self.underlying_store.get(self._key(key))

    def add(self, key, amount):
        return self.underlying_store.add(self._key(key), amount)

    def append(self, key, value):
        self.underlying_store.append(self._key(key), value)

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._key(key), expected_value, desired_value)

    def check(self, keys):
        return self.underlying_store.check([self._key(k) for k in keys])

    def wait(self, keys, timeout=None):
        self.underlying_store.wait([self._key(k) for k in keys], timeout)

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._key(key))

    def num_keys(self):
        return self.underlying_store.num_keys()

    def multi_set(self, keys, values):
        self.underlying_store.multi_set([self._key(k) for k in keys], values)

    def multi_get(self, keys):
        return self.underlying_store.multi_get([self._key(k) for k in keys])

    @property
    def timeout(self):
        return self.underlying_store.timeout

    def set_timeout(self, timeout):
        self.underlying_store.set_timeout(timeout)

    def list_keys(self):
        head = f"{self.prefix}/"
        return [k[len(head):] for k in self.underlying_store.list_keys() if k.startswith(head)]

    def queue_push(self, key, value):
        self.underlying_store.queue_push(self._key(key), value)

    def queue_pop(self, key, block=True):
        return self.underlying_store.queue_pop(self._key(key), block)

    def queue_len(self, key):
        return self.underlying_store.queue_len(self._key(key))

    def clone(self):
        return PrefixStore(self.prefix, self.underlying_store.clone())
