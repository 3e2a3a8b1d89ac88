"""A compiled wait for the intra-op pool's hand-offs (Note [Spinning hand-off] in parallel.py): it reads one cell of
an int64 array until the cell holds a given value, with the GIL released and the CPU offered to any other runnable
thread between reads (sched_yield), for at most a given number of reads. Loaded through jit.load("spin_jit")
(Note [JIT kernels]); tests/test_parallel_pool.py runs the pool with it and without.
"""
import ctypes
import ctypes.util
import time

import numba
import numpy as np


def _yield_address():
    """The address of the C library's sched_yield, or None where there is none (Windows)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        return ctypes.cast(libc.sched_yield, ctypes.c_void_p).value
    except (OSError, AttributeError, TypeError):
        return None


def _call_by_address():
    """A numba intrinsic call0(addr): calls the C function `int f(void)` at addr. The call is opaque to LLVM, so a
    loop around it reads memory again on every turn (a cell another thread writes is not hoisted out of the loop)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def call0(typingctx, addr):
        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.IntType(32), [])
            builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [])
            return context.get_dummy_value()
        return types.void(types.uintp), codegen
    return call0


YIELD = _yield_address()
_call0 = _call_by_address()


@numba.njit(nogil=True, cache=True)
def _spin(cells, i, want, reads, yield_addr):
    for _ in range(reads):
        if cells[i] == want:
            return True
        _call0(yield_addr)
    return cells[i] == want


def spin_until(cells, i, want, reads):
    """Whether cells[i] == want within `reads` reads (GIL released meanwhile); cells is a C-contiguous int64 array."""
    return _spin(cells, i, want, reads, YIELD)


def reads_per_us():
    """How many reads spin_until makes in a microsecond here (~1.6 on a 2-core VM), timed once over 2,000 reads of a
    cell that never matches."""
    cells = np.zeros(1, np.int64)
    spin_until(cells, 0, 1, 10)
    start = time.perf_counter()
    spin_until(cells, 0, 1, 2000)
    return 2000 / max((time.perf_counter() - start) * 1e6, 1e-3)
