"""torch.distributed's stores (HashStore, FileStore, TCPStore, PrefixStore) against torch's, and the rendezvous
through them: init_process_group(store=), file://, a rank claimed twice."""
import datetime
import os
import socket
import subprocess
import sys
import threading

import pytest
import torch
import torch.distributed as tdist

import ember
import ember.distributed as edist
from .test_distributed import env, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHORT = datetime.timedelta(seconds=0.3)


def script(store, skip=()):
    """The same operations on a store of either library: [(operation, result or exception type name)]."""
    out = []

    def do(name, fn):
        if name in skip:
            return
        try:
            out.append((name, fn()))
        except Exception as e:
            out.append((name, type(e).__name__))
    do("set", lambda: store.set("a", "x"))
    do("get", lambda: store.get("a"))
    do("set bytes", lambda: store.set("b", b"\x00\xff"))
    do("get bytes", lambda: store.get("b"))
    do("add", lambda: store.add("n", 2))
    do("add again", lambda: store.add("n", -5))
    do("get counter", lambda: store.get("n"))
    do("add to text", lambda: store.add("a", 1))
    do("compare_set equal", lambda: store.compare_set("a", "x", "y"))
    do("compare_set unequal", lambda: store.compare_set("a", "zz", "w"))
    do("compare_set new", lambda: store.compare_set("c", "", "v"))
    do("compare_set missing", lambda: store.compare_set("d", "q", "v"))
    do("after compare_set", lambda: [store.get(k) for k in ("a", "c")])
    do("append", lambda: (store.append("ap", "12"), store.append("ap", b"34"), store.get("ap"))[-1])
    do("multi_set", lambda: store.multi_set(["k1", "k2"], ["v1", b"v2"]))
    do("multi_get", lambda: store.multi_get(["k1", "k2"]))
    do("check", lambda: (store.check(["a", "k1"]), store.check(["a", "nope"])))
    do("delete", lambda: (store.delete_key("k1"), store.delete_key("k1"), store.check(["k1"])))
    do("set_timeout", lambda: store.set_timeout(SHORT))
    do("timeout", lambda: store.timeout)
    do("get missing", lambda: store.get("missing"))
    do("wait missing", lambda: store.wait(["missing"]))
    do("wait missing, own timeout", lambda: store.wait(["missing"], datetime.timedelta(seconds=0.1)))
    do("wait present", lambda: store.wait(["a", "c"]))
    do("has_extended_api", lambda: store.has_extended_api())
    # queues, list_keys, barrier, clone (torch's newer store API)
    do("queue_push", lambda: (store.queue_push("q", "a"), store.queue_push("q", b"b")))
    do("queue_len", lambda: (store.queue_len("q"), store.queue_len("no queue")))
    do("check a queue", lambda: store.check(["q"]))
    do("queue_pop", lambda: (store.queue_pop("q"), store.queue_pop("q", False)))
    do("queue_pop empty, not blocking", lambda: store.queue_pop("q", False))
    do("check an empty queue", lambda: store.check(["q"]))
    do("queue_pop empty, blocking", lambda: store.queue_pop("q"))
    do("a key and a queue of one name", lambda: (store.set("v", "1"), store.queue_push("v", "2"), store.get("v"),
                                                  store.queue_len("v"), store.queue_pop("v")))
    do("list_keys", lambda: sorted(store.list_keys()))
    do("barrier of one", lambda: (store.barrier("bar", 1), store.barrier("bar", 1, SHORT)))
    do("list_keys after a barrier", lambda: sorted(store.list_keys()))
    do("num_keys after a barrier", lambda: store.num_keys())
    do("barrier timeout", lambda: store.barrier("bar2", 2, datetime.timedelta(seconds=0.1)))

    def clone():
        other = store.clone()
        other.set("from clone", "1")
        return type(other).__name__, other.timeout, store.get("from clone"), other.get("a")
    do("clone", clone)

    def pop_while_another_pushes():
        store.set_timeout(datetime.timedelta(seconds=5))
        other = store.clone()
        pusher = threading.Timer(0.1, lambda: other.queue_push("later", "x"))
        pusher.start()
        try:
            return store.queue_pop("later"), store.queue_len("later")
        finally:
            pusher.join()
    do("queue_pop waits for a push", pop_while_another_pushes)
    return out


def test_hash_store_matches_torch():
    assert script(edist.HashStore()) == script(tdist.HashStore())
    ours, theirs = edist.HashStore(), tdist.HashStore()
    for s in (ours, theirs):
        s.set("x", "1")
        s.add("y", 1)
    assert ours.num_keys() == theirs.num_keys() == 2


def test_prefix_store_matches_torch():
    results = []
    for lib in (ember, torch):
        base = lib.distributed.HashStore()
        store = lib.distributed.PrefixStore("pre", base)
        results.append((script(store), base.get("pre/a"), base.check(["a"]), store.num_keys(),
                        store.underlying_store is base))
    assert results[0] == results[1]


def test_file_store_matches_torch(tmp_path):
    ours = edist.FileStore(str(tmp_path / "ember"), 1)
    theirs = tdist.FileStore(str(tmp_path / "torch"), 1)
    skip = ("list_keys", "list_keys after a barrier", "num_keys after a barrier",  # torch's lists its own keys
            "queue_pop waits for a push")  # (it has no queues: the steps above compare the error)
    assert script(ours, skip) == script(theirs, skip)
    del ours, theirs  # the last user of a world of one removes the file, as torch's does
    assert not (tmp_path / "ember").exists() and not (tmp_path / "torch").exists()


def test_file_store_is_shared_between_processes(tmp_path):
    path = str(tmp_path / "shared")
    store = edist.FileStore(path, 2)
    code = (f"import ember.distributed as d; s = d.FileStore({path!r}, 2); s.set('from child', 'hi'); "
            f"print(s.get('from parent').decode())")
    store.set("from parent", "hello")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env(), cwd=ROOT)
    assert out.stdout.strip() == "hello", out.stderr
    assert store.get("from child") == b"hi"
    del store
    assert not os.path.exists(path)  # both of the world's 2 stores are done


@pytest.mark.parametrize("side", ["master", "client"])
def test_tcp_store_matches_torch(side):
    results = []
    for lib in (ember, torch):
        master = lib.distributed.TCPStore("127.0.0.1", 0, 2, True, datetime.timedelta(seconds=5),
                                          wait_for_workers=False)
        client = lib.distributed.TCPStore("127.0.0.1", master.port, is_master=False,
                                          timeout=datetime.timedelta(seconds=5))
        store = master if side == "master" else client
        # "add to text" breaks torch's connection to its server; its barrier and counts add keys of its own
        results.append(script(store, skip=("add to text", "list_keys after a barrier", "num_keys after a barrier",
                                           "queue_pop waits for a push" if side == "master" else "")))
        other = client if side == "master" else master
        store.set("seen", "by both")
        results[-1].append(("other side", other.get("seen"), master.host, isinstance(master.port, int)))
    assert results[0] == results[1]


def test_tcp_store_errors_match_torch():
    port = free_port()  # nobody listens there
    for lib in (ember, torch):
        with pytest.raises(lib.distributed.DistNetworkError):
            lib.distributed.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=0.5))
        with pytest.raises(lib.distributed.DistStoreError, match=r"Timed out after [\d.]+ seconds waiting for clients. "
                                                                 r"1/3 clients joined."):  # (torch's says 2 s)
            lib.distributed.TCPStore("127.0.0.1", 0, 3, True, timeout=datetime.timedelta(seconds=0.5))
    assert [c.__name__ for c in edist.DistStoreError.__mro__[:-2]] == \
        [c.__name__ for c in tdist.DistStoreError.__mro__[:-2]]


def test_init_with_a_store_matches_torch(monkeypatch):
    """A world of one through store= (either library), the errors for a store without rank or world size or
    with an init_method too."""
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    errors = []
    for lib in (ember, torch):
        d = lib.distributed
        for kwargs in ({"rank": 0}, {"world_size": 1}, {"rank": 0, "world_size": 1, "init_method": "env://"}):
            with pytest.raises(Exception) as info:
                d.init_process_group("gloo", store=d.HashStore(), **kwargs)
            assert not d.is_initialized()
            errors.append((type(info.value).__name__, str(info.value)))
        d.init_process_group("gloo", store=d.HashStore(), rank=0, world_size=1)
        t = lib.ones(2)
        d.all_reduce(t)
        assert t.tolist() == [1.0, 1.0] and d.get_world_size() == 1
        d.destroy_process_group()
    assert errors[:3] == errors[3:]


THREE = """
import datetime, sys, ember, ember.distributed as d
how, rank = sys.argv[1], int(sys.argv[2])
kwargs = {"init_method": sys.argv[3]} if how == "file" else {
    "store": d.TCPStore("127.0.0.1", int(sys.argv[3]), 3, rank == 0, datetime.timedelta(seconds=60))}
d.init_process_group("gloo", rank=rank, world_size=3, timeout=datetime.timedelta(seconds=60), **kwargs)
t = ember.tensor([float(rank + 1)])
d.all_reduce(t)
print("sum", t.item())
from ember.distributed import _tcp
print("peers at", sorted({s.getpeername()[0] for s in _tcp._net.socks.values()}))
d.destroy_process_group()
"""


@pytest.mark.parametrize("how", ["file", "store"])
def test_three_processes_meet_through_a_file_or_a_store(tmp_path, how):
    where = f"file://{tmp_path / 'rendezvous'}" if how == "file" else str(free_port())
    environ = env()
    other = _other_interface()
    if how == "file" and other is not None:  # the ranks advertise (and reach each other at) that interface
        environ["GLOO_SOCKET_IFNAME"] = other[0]
    procs = [subprocess.Popen([sys.executable, "-c", THREE, how, str(r), where], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=environ, cwd=ROOT) for r in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 and o.split("\n")[0] == "sum 6.0" for p, (o, _) in zip(procs, outs)), outs
    address = other[1] if "GLOO_SOCKET_IFNAME" in environ else "127.0.0.1"
    assert all(o.split("\n")[1] == f"peers at ['{address}']" for o, _ in outs), outs
    assert not (tmp_path / "rendezvous").exists()  # the file store is gone once the group is destroyed


def test_a_rank_claimed_twice_is_refused(tmp_path):
    code = ("import datetime, ember.distributed as d\n"
            f"try:\n    d.init_process_group('gloo', init_method='file://{tmp_path / 'r'}', rank=0, world_size=2, "
            "timeout=datetime.timedelta(seconds=1))\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env(), cwd=ROOT) for _ in range(2)]
    outs = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert "ValueError a second process joined as rank 0 (world_size 2)" in outs, outs


def _other_interface():
    """(name, address) of an interface other than the loopback with an IPv4 address, or None."""
    from ember.distributed import _sockets
    for _, name in socket.if_nameindex():
        try:
            address = _sockets.interface_address(name)
        except RuntimeError:
            continue
        if not address.startswith("127."):
            return name, address
    return None


def test_the_address_a_rank_advertises(monkeypatch):
    """GLOO_SOCKET_IFNAME first; then the interface routing to the master; without a master (file://, store=)
    the hostname's address when this machine can bind it, else the loopback (torch's gloo rule)."""
    from ember.distributed import _sockets
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    assert _sockets.local_host("127.0.0.1") == "127.0.0.1"
    monkeypatch.setattr(socket, "gethostname", lambda: "localhost")
    assert _sockets.local_host() == "127.0.0.1"
    monkeypatch.setattr(socket, "gethostname", lambda: "192.0.2.253")  # not this machine's: cannot bind
    if _sockets.local_host() != "127.0.0.1":
        assert _other_interface() and _other_interface()[1] == "192.0.2.253"
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    assert _sockets.local_host("10.1.2.3") == _sockets.local_host() == "127.0.0.1"
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "no-such-if0")
    with pytest.raises(RuntimeError, match="Unable to find address for: no-such-if0"):
        _sockets.local_host()
    other = _other_interface()
    if other is None:
        pytest.skip("this machine has no network interface but the loopback")
    monkeypatch.delenv("GLOO_SOCKET_IFNAME")
    monkeypatch.setattr(socket, "gethostname", lambda: other[1])
    assert _sockets.local_host() == other[1]
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", f"{other[0]},lo")
    assert _sockets.local_host("127.0.0.1") == other[1]
