"""Shared-memory storage: tensor memory mapped into several processes.

Note [Shared segments]: a shared tensor's storage root is a flat ndarray over a `Segment`, a
MAP_SHARED mapping of a file in shared memory (writes are seen by every process mapping it, and by
forked children, which inherit the mapping). Files come in two kinds:
- anonymous (memfd, or a /dev/shm file unlinked at once): made by Tensor.share_memory_() and by
  tensors received from ember.multiprocessing queues. Having no name, they cannot be left behind;
  another process receives the file descriptor (multiprocessing's DupFd), torch's
  "file_descriptor" strategy. The segment keeps its descriptor open so it can be passed on again.
- named (/dev/shm/ember_<pid>_<token>_w<worker>_<n>): made by DataLoader workers for the batches
  they send, and lent to the main process, which maps the name for as long as tensors view it and
  then hands it back (see Note [Segment pool]). Every name is unlinked when its iterator shuts
  down (or by a worker whose main process died), whatever state it was in.
The kernel frees a segment's memory when its last mapping and descriptor are gone.

Note [Segment pool]: fresh shared memory is expensive to write the first time (the kernel
allocates and zeroes every page: ~12 ms for a 3 MB batch on a small VM, 20x the cost of the copy),
so a worker keeps the segments it lent: when every tensor over a segment in the main process has
died, its Segment's `on_free` queues the name, the main process sends the names back to their
worker with its next task, and the worker fills the same pages with a later batch of that size.
A worker reuses a segment only while none of its own arrays view it.
"""
import ctypes
import errno
import itertools
import mmap
import os
import tempfile
import weakref

import numpy as np

from ._backend.numpy_cpu import data_ptr, storage_root

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()

# Set in a DataLoader worker to the prefix of its segment names: shared allocations made there
# (collate stacking a batch) are named, so the main process can open them by name.
_worker_prefix = None
_name_counter = itertools.count()
_lent = {}  # in a worker: name -> Segment the main process may be using
_free = []  # in a worker: Segments handed back, ready for reuse, oldest first (Note [Segment pool])
_MAX_FREE = 4  # spares kept per worker: a few batches' worth of idle shared memory at most
_by_inode = weakref.WeakValueDictionary()  # (st_dev, st_ino) -> Segment: one mapping per file

# mmap(2) through libc rather than the mmap module, whose objects keep a duplicate descriptor open
# for as long as they live: a received DataLoader batch then holds no descriptor at all, and a
# segment that can be passed on holds exactly one (as torch's file_descriptor strategy).
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_MAP_FAILED = ctypes.c_void_p(-1).value


class Segment:
    """A MAP_SHARED mapping of a shared-memory file, unmapped when the last array viewing it dies.

    `fd` stays open to pass the file to other processes (None when not kept), `name` is the file's
    name in the worker that owns it, `sent` marks a segment lent to the main process, and `on_free`
    (main process) is called once the mapping is gone. Arrays view it through `buffer()`, a ctypes
    array over the mapping that keeps the Segment alive."""
    __slots__ = ("address", "nbytes", "fd", "name", "sent", "roots", "handle", "on_free", "pid", "__weakref__")

    def __init__(self, fd, nbytes, name=None, keep_fd=True):
        address = _libc.mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        if address is None or address == _MAP_FAILED:
            err = ctypes.get_errno()
            raise OSError(err, f"mmap of a {nbytes}-byte shared memory segment failed: {os.strerror(err)}")
        self.address = address
        self.nbytes = nbytes
        self.fd = fd if keep_fd else None
        self.name = name
        self.sent = False
        self.roots = {}
        self.handle = None
        self.on_free = None
        self.pid = os.getpid()  # a forked child inherits the object, not the name or the lending

    def buffer(self):
        buf = (ctypes.c_char * self.nbytes).from_address(self.address)
        buf.segment = self  # the mapping outlives every array over it
        return buf

    def in_use(self):
        """Does an array in this process still view the segment?"""
        return any(ref() is not None for ref in self.roots.values())

    def __del__(self):
        if getattr(self, "address", None) is None:
            return  # mmap failed in __init__: nothing is mapped or owned
        _libc.munmap(self.address, self.nbytes)
        if self.fd is not None:
            os.close(self.fd)
        if self.pid != os.getpid():
            return
        if self.name is not None and not self.sent:
            _unlink(self.name)  # a worker's segment that was never lent (or failed to send)
        if self.on_free is not None:
            self.on_free()


def _anonymous_fd():
    if hasattr(os, "memfd_create"):
        return os.memfd_create("ember-shm", os.MFD_CLOEXEC)
    fd, path = tempfile.mkstemp(prefix="ember-anon-", dir=SHM_DIR)
    os.unlink(path)
    return fd


def _reserve(fd, nbytes):
    """Size the file and allocate its pages now: a full /dev/shm then raises ENOSPC here instead of
    killing the process with SIGBUS at the first write to a page that cannot be backed."""
    os.ftruncate(fd, nbytes)
    try:
        os.posix_fallocate(fd, 0, nbytes)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise OSError(e.errno, f"no space left in {SHM_DIR} for a {nbytes}-byte shared memory segment "
                                   "(raise the shared memory limit, e.g. docker's --shm-size)") from None
        if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    except AttributeError:
        pass  # no posix_fallocate on this platform


def anonymous_segment(nbytes):
    """A new nameless segment of nbytes (at least one byte: mmap cannot map an empty file)."""
    nbytes = max(int(nbytes), 1)
    fd = _anonymous_fd()
    try:
        _reserve(fd, nbytes)
        seg = Segment(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    _remember(seg)
    return seg


def named_segment(name, nbytes):
    """A new segment with a file name in SHM_DIR (a DataLoader worker's batch memory)."""
    nbytes = max(int(nbytes), 1)
    path = os.path.join(SHM_DIR, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        _reserve(fd, nbytes)
        return Segment(fd, nbytes, name, keep_fd=False)
    except BaseException:
        os.unlink(path)
        raise
    finally:
        os.close(fd)


def open_lent(name, nbytes, on_free):
    """Map a worker's named segment in the main process; on_free() runs once it is unmapped."""
    fd = os.open(os.path.join(SHM_DIR, name), os.O_RDWR)
    try:
        seg = Segment(fd, nbytes, keep_fd=False)
    finally:
        os.close(fd)
    seg.on_free = on_free
    return seg


def lend(seg):
    """In a worker: seg's name goes to the main process; keep the segment for when it comes back."""
    seg.sent = True
    _lent[seg.name] = seg


def take_back(names):
    """In a worker: the main process is done with these segments; keep the latest few for reuse."""
    for name in names:
        seg = _lent.pop(name, None)
        if seg is None:
            continue
        if seg.in_use():
            _unlink(name)  # our own arrays still view it: it goes with its last user
            continue
        seg.sent = False
        _free.append(seg)
        if len(_free) > _MAX_FREE:
            _unlink(_free.pop(0).name)


def _unlink(name):
    try:
        os.unlink(os.path.join(SHM_DIR, name))
    except OSError:
        pass


def from_fd(fd, nbytes):
    """The segment of a received descriptor; a file this process already maps is reused, so a
    tensor that comes back aliases the original memory."""
    key = _file_key(fd)
    seg = _by_inode.get(key)
    if seg is not None and seg.fd is not None:
        os.close(fd)
        return seg
    seg = Segment(fd, nbytes)
    _by_inode[key] = seg
    return seg


def _file_key(fd):
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _remember(seg):
    _by_inode[_file_key(seg.fd)] = seg


def sweep(prefix):
    """Unlink every name in SHM_DIR starting with prefix (an iterator's segments, at its shutdown)."""
    try:
        entries = os.listdir(SHM_DIR)
    except OSError:
        return
    for entry in entries:
        if entry.startswith(prefix):
            _unlink(entry)


def count(prefix):
    """How many names in SHM_DIR start with prefix."""
    return sum(1 for entry in os.listdir(SHM_DIR) if entry.startswith(prefix))


# ---- arrays over segments ---------------------------------------------------------------------

def segment_of(arr):
    """The Segment arr's memory lives in, or None for private memory."""
    base = storage_root(arr).base
    seg = getattr(base, "segment", None)
    return seg if isinstance(seg, Segment) else None


def root_of(seg, dtype):
    """The flat array of dtype over the whole segment: the storage root of every tensor viewing it
    (kept weakly, so no cycle delays freeing the segment)."""
    ref = seg.roots.get(dtype)
    root = ref() if ref is not None else None
    if root is None:
        root = np.ndarray((seg.nbytes // dtype.itemsize,), dtype, buffer=seg.buffer())
        seg.roots[dtype] = weakref.ref(root)
    return root


def view_of(seg, dtype, shape, strides, offset):
    """An array of dtype in seg: byte strides, first element `offset` bytes into the segment."""
    return np.ndarray(shape, dtype, buffer=root_of(seg, dtype), offset=offset, strides=strides)


def offset_in(seg, arr):
    return data_ptr(arr) - seg.address if arr.size else 0


def new_segment(nbytes):
    """Shared memory for a new array: inside a DataLoader worker a named one (a handed-back segment
    of the same size if there is one), elsewhere an anonymous one."""
    if _worker_prefix is None:
        return anonymous_segment(nbytes)
    nbytes = max(int(nbytes), 1)
    for i in range(len(_free) - 1, -1, -1):
        if _free[i].nbytes == nbytes:
            return _free.pop(i)
    return named_segment(f"{_worker_prefix}{next(_name_counter)}", nbytes)


def empty(shape, dtype, order="C"):
    """An uninitialized array in new shared memory."""
    dtype = np.dtype(dtype)
    n = 1
    for s in shape:
        n *= s
    seg = new_segment(n * dtype.itemsize)
    root = root_of(seg, dtype)
    return np.ndarray(shape, dtype, buffer=root, order=order)


def copy(arr):
    """arr copied into new shared memory; a Fortran-ordered array stays Fortran-ordered."""
    order = "F" if arr.flags.f_contiguous and not arr.flags.c_contiguous else "C"
    out = empty(arr.shape, arr.dtype, order)
    np.copyto(out, arr)
    return out


def stack(arrays, dtype):
    """np.stack of equally shaped arrays straight into new shared memory (one copy)."""
    out = empty((len(arrays),) + arrays[0].shape, dtype)
    np.stack(arrays, out=out, casting="unsafe")
    return out


def share_(t):
    """Move tensor t's storage into an anonymous segment, in place (Tensor.share_memory_).

    The whole storage moves, and t and its ._base chain are re-pointed at the copy with their
    geometry unchanged. Other views of the old storage keep the old memory: ember's views are
    separate ndarrays that nothing here can find."""
    arr = t._data
    if segment_of(arr) is not None:
        return t
    root = storage_root(arr)
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        t._data = copy(arr)  # an owner NumPy cannot flatten: only t's own elements move
        return t
    seg = anonymous_segment(root.nbytes)
    flat = root_of(seg, root.dtype)[:root.size]
    np.copyto(flat, root.ravel(order="K"))  # memory order: the bytes land where they were
    holder = t
    while holder is not None:
        old = holder._data
        if storage_root(old) is root:
            holder._data = np.ndarray(old.shape, old.dtype, buffer=flat, offset=data_ptr(old) - data_ptr(root),
                                      strides=old.strides)
        holder = holder._base
    return t


def stack_shared(tensors):
    """ember.stack(tensors) into new shared memory, or None when that needs more than one copy of
    equally shaped and typed tensors (then ember.stack itself runs, with its checks and errors)."""
    from ._tensor import Tensor
    first = tensors[0]
    for t in tensors:
        if type(t) is not Tensor or t._dtype is not first._dtype or t._data.shape != first._data.shape \
                or t._requires_grad:
            return None
    return Tensor._make(stack([t._data for t in tensors], first._data.dtype), first._dtype)
