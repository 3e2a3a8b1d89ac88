"""TCP pieces shared by the RPC agent and the TCP transport of process groups: the rendezvous address,
connecting (retried while rank 0 is not listening yet), the address peers reach this host at, and
length-prefixed pickled frames for control messages."""
import os
import pickle
import socket
import struct
import time
from urllib.parse import urlparse

HEADER = struct.Struct(">Q")


def rendezvous_address(init_method, api="torch.distributed"):
    """(host, port) of rank 0 from init_method: env:// (MASTER_ADDR, MASTER_PORT) or tcp://host:port."""
    if init_method in (None, "env://"):
        try:
            return os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
        except KeyError as e:
            raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable "
                             f"{e.args[0]} expected, but not set") from e
    url = urlparse(init_method)
    if url.scheme != "tcp" or url.port is None:
        raise ValueError(f"ember's {api} supports env:// and tcp://host:port init methods, got {init_method!r}")
    return url.hostname, url.port


def connect(address, timeout):
    sock = socket.create_connection(address, timeout=timeout or None)
    sock.settimeout(None)  # the timeout bounds connecting; later reads may wait as long as the peer works
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def connect_when_up(address, timeout, what="RPC rendezvous: worker 0", error=RuntimeError):
    """Connect to rank 0, which may not listen yet: retried until `timeout` seconds (none: forever)."""
    deadline = None if not timeout else time.monotonic() + timeout
    while True:
        try:
            return connect(address, timeout)
        except (ConnectionRefusedError, socket.timeout, OSError):
            if deadline is not None and time.monotonic() > deadline:
                raise error(f"{what} at {address[0]}:{address[1]} did not answer within {timeout} seconds") from None
            time.sleep(0.05)


def local_host(master_host=None, ifname_variable="GLOO_SOCKET_IFNAME"):
    """The address other processes reach this one at: the first interface the variable names (torch's gloo
    reads GLOO_SOCKET_IFNAME, its RPC agent TP_SOCKET_IFNAME); else the interface that routes to the master,
    when the rendezvous has one; else, as gloo, the address this machine's hostname resolves to if a socket
    can bind to it here, and the loopback if not."""
    names = os.environ.get(ifname_variable, "")
    if names:
        return interface_address(names.split(",")[0].strip(), ifname_variable)
    if master_host is not None:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((master_host, 9))
                return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"
    try:
        found = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        found = []
    for *_, (address, _) in found:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((address, 0))
            return address
        except OSError:
            continue
    return "127.0.0.1"


def interface_address(name, variable="GLOO_SOCKET_IFNAME"):
    """The IPv4 address of network interface `name` (Linux's SIOCGIFADDR); RuntimeError if it has none."""
    import fcntl
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            answer = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
    except OSError:
        raise RuntimeError(f"Unable to find address for: {name} ({variable})") from None
    return socket.inet_ntoa(answer[20:24])


def read_into(sock, view):
    """Fill a writable memoryview from the socket (ConnectionError if the peer closes first)."""
    while view:
        n = sock.recv_into(view)
        if n == 0:
            raise ConnectionError("connection closed")
        view = view[n:]


def recv_exact(sock, n):
    data = bytearray(n)
    read_into(sock, memoryview(data))
    return bytes(data)


def send_object(sock, obj):
    """One control frame: 8-byte length, then the pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(HEADER.pack(len(data)) + data)


def recv_object(sock):
    (n,) = HEADER.unpack(recv_exact(sock, HEADER.size))
    return pickle.loads(recv_exact(sock, n))
