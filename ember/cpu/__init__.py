"""torch.cpu, and the controls of ember's caching allocator of CPU storage.

torch's CPU allocator does not cache; ember's does (Note [Caching allocator] in
ember/_backend/allocator.py): buffers of large tensors go back to size-bucketed free lists
when their last tensor dies and are reused. The memory functions mirror torch.cuda's
(memory_allocated, memory_stats, empty_cache ...) and count the pooled buffers only: arrays
of at least the threshold made by ember's kernels, not NumPy's internal temporaries nor the
smaller buffers glibc keeps for reuse itself.

    EMBER_CACHING_ALLOCATOR=0          the pool off (every buffer is NumPy's own)
    EMBER_ALLOCATOR_THRESHOLD=32M      smallest pooled buffer (default 32M where ember tunes glibc,
                                       that is on Linux unless EMBER_KEEP_FREED_MEMORY=0; else 256K)
    EMBER_ALLOCATOR_MAX_CACHED=12.5%   cap on cached (free) bytes: bytes, K/M/G, or % of RAM
"""
from .._backend import allocator as _allocator


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def is_initialized():
    return True


def synchronize(device=None):
    """CPU work is done when a call returns: nothing to wait for."""


def set_device(device):
    """There is one cpu device: nothing to select."""


# ---- the caching allocator ------------------------------------------------------------------------

def empty_cache():
    """Release every cached (unused) block; memory of live tensors is not affected."""
    _allocator.empty_cache()


def memory_stats(device=None):
    """The allocator's counters: allocated/reserved/requested bytes (current, peak), cached bytes,
    live blocks, and how many allocations were served from the cache (num_alloc_from_cache) or
    needed a fresh block (num_alloc_misses)."""
    return _allocator.stats()


def memory_allocated(device=None):
    """Bytes in pooled blocks held by live tensors (block sizes, after bucket rounding)."""
    return _allocator.stats()["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return _allocator.stats()["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    """Bytes held by the pool: allocated plus cached."""
    return _allocator.stats()["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    return _allocator.stats()["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None):
    _allocator.reset_peak_stats()


def reset_accumulated_memory_stats(device=None):
    """Zero the cumulative counters (allocations, hits, misses, evictions)."""
    _allocator.reset_accumulated_stats()


def set_allocator_enabled(enabled):
    """Turn the caching allocator on or off (off releases the cache)."""
    _allocator.set_enabled(enabled)


def is_allocator_enabled():
    return _allocator.enabled


def set_allocator_settings(threshold=None, max_cached=None):
    """Smallest pooled buffer and cap on cached bytes; each is a number of bytes or a string such
    as '1M', '2G' or '10%' (of physical memory). Lowering the cap evicts at once."""
    _allocator.configure(None if threshold is None else _allocator.parse_bytes(threshold),
                         None if max_cached is None else _allocator.parse_bytes(max_cached))

from . import amp  # noqa: E402,F401  (torch.cpu.amp: deprecated spellings of torch.amp)
