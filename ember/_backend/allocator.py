"""The caching allocator of CPU storage: large buffers are reused instead of fetched fresh.

Note [Caching allocator]: the paper's custom tensor allocator, in Python. A buffer of at least
`threshold` bytes is a view of a raw uint8 *block* held by the pool. The array is made from a
small `_Owner` object exposing `__array_interface__`; NumPy makes that owner the `.base` of the
array, and every view, reshape or transpose derived from it keeps the array (hence the owner)
alive. So the owner dies, and its `__del__` hands the block back, exactly when the last array
over the block dies: the reference counting that frees a tensor the moment it is dead returns its
memory to the pool at the same moment. A later request of the same bucket gets the block back
without asking glibc, whose blocks above its mmap threshold are mapped anew and page-faulted
(zeroed by the kernel) on every use.

Which buffers: the threshold is 32 MiB when glibc is tuned by Note [Freed memory] (the default
on Linux), 256 KiB otherwise (EMBER_ALLOCATOR_THRESHOLD overrides). Measured on (x*y+z).relu(),
pool on/off CPU time, 1 thread: 0.25 MB 1.44, 1 MB 1.14, 4 MB 0.95, 16 MB 1.05 (glibc's heap
already reuses these without a fault; a pooled buffer costs ~5 us of Python), 32 MB 0.72,
38 MB 0.87, 128 MB 0.57 (glibc maps these fresh: 500-1700 page faults a call). A 256 KiB
threshold also raised the peak RSS of a ResNet-8 training step from 45 to 77 MB (a block serves
one size bucket, where glibc coalesces free memory for any size) and slowed the MLP step ~8%.

Sizes are rounded up to buckets of 4 per power of two (2^k, 1.25*2^k, 1.5*2^k, 1.75*2^k; at least
a 4 KiB page): shapes of similar size share blocks, and a request wastes less than 25% of its
block (about 9% on average for uniformly spread sizes; 5% for 10M float32); the tail of a fresh
block that is never written is not resident. Blocks are 64-byte aligned (torch's CPU alignment).
Freed blocks are kept, most recently freed reused first, up to `max_cached` bytes (default 1/8 of
physical memory, EMBER_ALLOCATOR_MAX_CACHED); beyond that the least recently freed blocks go back
to glibc. empty_cache() releases every cached block. EMBER_CACHING_ALLOCATOR=0 (or
set_enabled(False)) turns the pool off: every buffer is NumPy's own.

Threads and fork: the free lists are guarded by one lock. An owner may die in any thread, and
also while its own thread holds the lock (a garbage collection run inside an allocation), so
`__del__` never waits for the lock: it files the block if the lock is free, else appends it to
`_returned` (an atomic deque append), which the next allocation or statistics call drains.
A forked child (a DataLoader worker) gets a new lock and an empty cache; the blocks of arrays it
inherited are its own private copies and return to its own lists when they die.
"""
import collections
import os
import threading
import weakref

import numpy as np

_ALIGN = 64
_MIN_STEP = 4096


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def parse_bytes(text):
    """'512M', '2G', '1048576', '10%' (of physical memory) as a number of bytes."""
    text = str(text).strip()
    if text.endswith("%"):
        return int(_physical_memory() * float(text[:-1]) / 100)
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:].upper())
    if scale is not None:
        return int(float(text[:-1]) * scale)
    return int(text)


enabled = os.environ.get("EMBER_CACHING_ALLOCATOR", "1") != "0"
threshold = parse_bytes(os.environ.get("EMBER_ALLOCATOR_THRESHOLD", "256K"))
max_cached = parse_bytes(os.environ.get("EMBER_ALLOCATOR_MAX_CACHED", "12.5%"))

_lock = threading.Lock()
_returned = collections.deque()  # blocks whose owner died while the lock was taken
_cached = {}  # bucket size -> free blocks of that size, most recently freed last
_lru = collections.OrderedDict()  # every free block, least recently freed first (eviction order)


class _Stats:
    __slots__ = ("allocated", "requested", "cached", "peak_allocated", "peak_reserved", "peak_requested",
                 "hits", "misses", "evictions", "dropped", "live", "alloc_bytes", "freed_bytes")

    def __init__(self):
        for name in self.__slots__:
            setattr(self, name, 0)


_stats = _Stats()


class _Block:
    """A raw buffer of the pool: `size` bytes (a bucket) from 64-byte aligned address `addr`, which is
    `offset` bytes into `buf`."""
    __slots__ = ("buf", "addr", "offset", "size", "__weakref__")

    def __init__(self, size, zero=False):
        buf = (np.zeros if zero else np.empty)(size + _ALIGN, dtype=np.uint8)  # calloc: pages zeroed lazily
        start = buf.__array_interface__["data"][0]
        self.buf = buf
        self.addr = (start + _ALIGN - 1) & -_ALIGN
        self.offset = self.addr - start
        self.size = size


def _release(block, nbytes):
    """Give a block back (from an owner's __del__): filed now if the lock is free, else queued."""
    if _lock.acquire(False):
        try:
            _file(block, nbytes)
            if _returned:
                _drain()
        finally:
            _lock.release()
    else:
        _returned.append((block, nbytes))


class _Owner:
    """The `.base` of a pooled array (see Note [Caching allocator]); returns its block when it dies."""
    __slots__ = ("__array_interface__", "block", "nbytes", "root")

    def __del__(self, _release=_release):
        block = self.block
        if block is not None:
            self.block = None
            try:
                _release(block, self.nbytes)
            except (TypeError, AttributeError):  # interpreter shutdown: the module is being torn down
                pass


def bucket(nbytes):
    """The block size a request of nbytes gets: rounded up to a quarter of its power of two."""
    step = max(1 << max(nbytes.bit_length() - 3, 0), _MIN_STEP)
    return (nbytes + step - 1) & -step


# ---- filing (under _lock) ------------------------------------------------------------------------

def _file(block, nbytes):
    """A block whose arrays are all dead: keep it for reuse, or let glibc have it back."""
    s = _stats
    size = block.size
    s.allocated -= size
    s.requested -= nbytes
    s.live -= 1
    s.freed_bytes += size
    if not enabled or size > max_cached:
        s.dropped += 1
        return
    while s.cached + size > max_cached:
        _evict_oldest()
    lst = _cached.get(size)
    if lst is None:
        lst = _cached[size] = []
    lst.append(block)
    _lru[block] = None
    s.cached += size


def _evict_oldest():
    block, _ = _lru.popitem(last=False)
    lst = _cached[block.size]
    lst.remove(block)  # the oldest block of its size: at the front of its list
    if not lst:
        del _cached[block.size]
    _stats.cached -= block.size
    _stats.evictions += 1


def _drain():
    while _returned:
        _file(*_returned.popleft())


def _take(size, nbytes):
    """A free block of `size` for a request of nbytes (counted), or None (a miss)."""
    if _returned:
        _drain()
    lst = _cached.get(size)
    if not lst:
        _stats.misses += 1
        return None
    block = lst.pop()
    del _lru[block]
    if not lst:
        del _cached[size]
    _stats.cached -= size
    _stats.hits += 1
    _count(size, nbytes)
    return block


def _count(size, nbytes):
    """An allocation of nbytes in a block of size, in the statistics."""
    s = _stats
    s.allocated += size
    s.requested += nbytes
    s.alloc_bytes += size
    s.live += 1
    if s.allocated > s.peak_allocated:
        s.peak_allocated = s.allocated
    if s.requested > s.peak_requested:
        s.peak_requested = s.requested
    if s.allocated + s.cached > s.peak_reserved:
        s.peak_reserved = s.allocated + s.cached


# ---- allocation ----------------------------------------------------------------------------------

_TYPESTR = {}  # np.dtype -> typestr for __array_interface__, or None (dtypes it cannot name: bfloat16)


def _typestr(dtype):
    t = _TYPESTR.get(dtype, 0)
    if t == 0:
        t = dtype.str if np.dtype(dtype.str) == dtype else None
        _TYPESTR[dtype] = t
    return t


def _new_block(size, nbytes, zero):
    """A fresh block from glibc (after releasing the cache if glibc has no memory left), counted."""
    try:
        block = _Block(size, zero)
    except MemoryError:
        empty_cache()
        block = _Block(size, zero)
    with _lock:
        _count(size, nbytes)
    return block


def pooled(shape, dtype, nbytes, zero=False):
    """An uninitialized (zero: all-zero bytes) C-contiguous array of shape/dtype, nbytes in all,
    over a pool block."""
    nbytes = int(nbytes)
    if shape and min(shape) < 0:
        return np.empty(shape, dtype)  # NumPy's error for a negative dimension
    size = bucket(nbytes)
    with _lock:
        block = _take(size, nbytes)
    if block is None:
        block = _new_block(size, nbytes, zero)
    elif zero:
        block.buf[block.offset:block.offset + nbytes].fill(0)
    owner = _Owner()
    owner.block = block
    owner.nbytes = nbytes
    owner.root = None
    t = _typestr(dtype)
    if t is not None:
        owner.__array_interface__ = {"shape": shape, "typestr": t, "data": (block.addr, False), "version": 3}
        return np.asarray(owner)
    owner.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (block.addr, False), "version": 3}
    arr = np.ndarray(shape, dtype, np.asarray(owner))
    owner.root = weakref.ref(arr)
    return arr


def nbytes(shape, itemsize):
    """Bytes of an array of `shape` with items of `itemsize` bytes."""
    for n in shape:
        itemsize *= n
    return itemsize


def _request(shape, dtype):
    """An allocation request normalised: (shape as a tuple, np.dtype, bytes, served by the pool?)."""
    if type(shape) is not tuple:
        shape = tuple(shape) if hasattr(shape, "__len__") else (shape,)
    dtype = np.dtype(dtype)
    size = nbytes(shape, dtype.itemsize)
    return shape, dtype, size, enabled and size >= threshold and size > 0


def empty(shape, dtype):
    """np.empty(shape, dtype) (C order), from the pool when it has at least `threshold` bytes."""
    shape, dtype, size, pool = _request(shape, dtype)
    return pooled(shape, dtype, size) if pool else np.empty(shape, dtype)


def zeros(shape, dtype):
    """np.zeros(shape, dtype), from the pool when large (a cached block is cleared with one memset)."""
    shape, dtype, size, pool = _request(shape, dtype)
    return pooled(shape, dtype, size, zero=True) if pool else np.zeros(shape, dtype)


def is_root(arr):
    """Is arr the array pooled() made over its block (not a view of it)?"""
    b = arr.base
    if type(b) is _Owner:
        return True
    if type(b) is np.ndarray and type(b.base) is _Owner:  # a dtype without a typestr: a view of raw bytes
        root = b.base.root
        return root is not None and root() is arr
    return False


def is_pooled(arr):
    """Does arr view a pool block (through any chain of views)?"""
    while isinstance(arr, np.ndarray):
        arr = arr.base
    return type(arr) is _Owner


# ---- control and statistics ----------------------------------------------------------------------

def _release_cached():
    """Drop every cached block (under _lock)."""
    if _returned:
        _drain()
    _cached.clear()
    _lru.clear()
    _stats.cached = 0


def empty_cache():
    """Release every cached (free) block to glibc; blocks in use are not touched."""
    with _lock:
        _release_cached()


def set_enabled(on):
    """Turn the pool on or off; off releases the cache, and blocks still in use are dropped when freed."""
    global enabled
    with _lock:
        enabled = bool(on)
        if not enabled:
            _release_cached()


def configure(threshold_bytes=None, max_cached_bytes=None):
    """Change the size threshold and/or the cap on cached bytes (evicting down to a lower cap)."""
    global threshold, max_cached
    with _lock:
        if threshold_bytes is not None:
            threshold = max(1, int(threshold_bytes))
        if max_cached_bytes is not None:
            max_cached = max(0, int(max_cached_bytes))
            if _returned:
                _drain()
            while _stats.cached > max_cached:
                _evict_oldest()


def stats():
    """A snapshot of the counters (torch.cuda.memory_stats' key names where they exist)."""
    with _lock:
        if _returned:
            _drain()
        s = _stats
        return {
            "allocated_bytes.all.current": s.allocated,
            "allocated_bytes.all.peak": s.peak_allocated,
            "allocated_bytes.all.allocated": s.alloc_bytes,
            "allocated_bytes.all.freed": s.freed_bytes,
            "requested_bytes.all.current": s.requested,
            "requested_bytes.all.peak": s.peak_requested,
            "reserved_bytes.all.current": s.allocated + s.cached,
            "reserved_bytes.all.peak": s.peak_reserved,
            "cached_bytes": s.cached,
            "active.all.current": s.live,
            "segment.all.current": s.live + len(_lru),
            "allocation.all.allocated": s.hits + s.misses,
            "num_alloc_from_cache": s.hits,
            "num_alloc_misses": s.misses,
            "num_evictions": s.evictions,
            "num_dropped": s.dropped,
            "enabled": enabled,
            "threshold_bytes": threshold,
            "max_cached_bytes": max_cached,
        }


def reset_peak_stats():
    with _lock:
        if _returned:
            _drain()
        s = _stats
        s.peak_allocated = s.allocated
        s.peak_requested = s.requested
        s.peak_reserved = s.allocated + s.cached


def reset_accumulated_stats():
    with _lock:
        s = _stats
        s.hits = s.misses = s.evictions = s.dropped = s.alloc_bytes = s.freed_bytes = 0


def _after_fork_in_child():
    """A forked child starts with a fresh lock (the parent's may have been held by another thread)
    and no cache; its inherited live blocks come back to its own lists."""
    global _lock
    _lock = threading.Lock()
    _release_cached()
    reset_accumulated_stats()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
