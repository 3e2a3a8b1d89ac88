"""The BLAS thread pool NumPy links against, found at run time (no extra dependency).

torch.set_num_threads sizes torch's intra-op pool; ember's heavy lifting is BLAS, so
ember.set_num_threads sizes OpenBLAS's pool when NumPy uses OpenBLAS. With another BLAS
the setting is only recorded. park() and unpark() send OpenBLAS's spinning workers to sleep while
ember's own pool threads run pieces (Note [Parked BLAS workers]).
"""
import ctypes
import os
import re
import struct
import threading

_SET_NAMES = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads_64_",
              "openblas_set_num_threads64_", "openblas_set_num_threads")
_GET_NAMES = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads_64_",
              "openblas_get_num_threads64_", "openblas_get_num_threads")

_lib = None
_searched = False


def _find():
    """ctypes handle of the loaded OpenBLAS, or None (looked up once, lazily)."""
    global _lib, _searched
    if _searched:
        return _lib
    _searched = True
    try:
        with open("/proc/self/maps") as f:
            paths = set(re.findall(r"(/\S*openblas\S*\.so\S*)", f.read()))
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if any(hasattr(lib, n) for n in _SET_NAMES):
            _lib = lib
            return lib
    return None


def set_threads(n):
    lib = _find()
    if lib is None:
        return False
    for name in _SET_NAMES:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.argtypes = [ctypes.c_int]
            fn(int(n))
            return True
    return False


def get_threads():
    lib = _find()
    if lib is not None:
        for name in _GET_NAMES:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return int(fn())
    return os.cpu_count() or 1


# Note [Parked BLAS workers]: after every threaded call NumPy's OpenBLAS (its pthreads build) keeps each worker
# spinning for 2^28 TSC ticks (~0.1 s; OPENBLAS_THREAD_TIMEOUT sets 2^n) before it sleeps, in a loop of nops that
# re-reads the budget, the library's static `thread_timeout`, on every turn. On a machine with as many cores as
# threads, a piece ember hands to its own pool thread then shares a core with that spinner and waits for the
# scheduler's time slices (ms), so splits right after a GEMM lost (Note [Row pieces], Note [BLAS pieces]).
# park() sets the budget to 0 while ember's pool threads run pieces: the spinner sleeps at its next turn, and the
# next threaded BLAS call wakes it (~20-35 us once, measured on 64x64 @ 64x256 and 32x32 @ 32x8192 here). There is
# no API for it, so _timeout_cell finds the variable through the library file's symbol table (.symtab, which the
# scipy-openblas wheels keep): the load bias comes from an exported function's address, cross-checked on a second
# one, and the cell is used only if it holds what OpenBLAS put there (2^n, n in 4..30, as the environment says).
# Any mismatch, a stripped or OpenMP build, or another BLAS leaves park() a no-op. PARK = False turns it off.
PARK = True
_cell = None  # ctypes c_uint over thread_timeout, False when not found (looked up once)
_park_lock = threading.Lock()
_parked = 0  # park() calls not yet unparked
_budget = 0  # the value unpark() puts back


def _elf_symbols(path, names):
    """{name: (value, size, info)} of the .symtab entries of the ELF64 little-endian file at path with those
    names, for names with exactly one entry; {} if the file has no .symtab."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:6] != b"\x7fELF\x02\x01":
            return {}
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
        for _, kind, _, _, offset, size, link, _, _, entsize in sections:
            if kind != 2 or entsize != 24:  # SHT_SYMTAB
                continue
            f.seek(sections[link][4])
            strings = f.read(sections[link][5])
            f.seek(offset)
            raw = f.read(size)
            break
        else:
            return {}
    import numpy as np
    syms = np.frombuffer(raw, dtype=np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                                              ("value", "<u8"), ("size", "<u8")]))
    found = {}
    for name in names:
        key = name.encode() + b"\0"  # a linker may store it as the tail of a longer name: every occurrence counts
        at, starts = strings.find(key), []
        while at >= 0:
            starts.append(at)
            at = strings.find(key, at + 1)
        hits = syms[np.isin(syms["name"], starts)]
        if len(hits) == 1:
            found[name] = (int(hits["value"][0]), int(hits["size"][0]), int(hits["info"][0]))
    return found


def _expected_budget():
    """thread_timeout as OpenBLAS sets it: 2^OPENBLAS_THREAD_TIMEOUT clamped to 4..30, else its 2^28."""
    try:
        n = int(os.environ.get("OPENBLAS_THREAD_TIMEOUT", "0"))
    except ValueError:
        n = 0
    return 1 << (min(max(n, 4), 30) if n > 0 else 28)


def _timeout_cell():
    """The c_uint over OpenBLAS's thread_timeout (Note [Parked BLAS workers]), or None."""
    global _cell
    if _cell is None:
        _cell = False
        lib = _find()
        exported = [n for n in ("openblas_thread_timeout",) + _SET_NAMES if lib is not None and hasattr(lib, n)]
        if len(exported) >= 2:
            try:
                syms = _elf_symbols(lib._name, ["thread_timeout"] + exported[:2])
            except (OSError, ValueError, struct.error):
                syms = {}
            if len(syms) == 3:
                value, size, info = syms["thread_timeout"]
                biases = {ctypes.cast(getattr(lib, n), ctypes.c_void_p).value - syms[n][0] for n in exported[:2]}
                if len(biases) == 1 and size == 4 and info & 0xF == 1:  # one bias; a 4-byte STT_OBJECT
                    cell = ctypes.c_uint.from_address(biases.pop() + value)
                    if cell.value == _expected_budget():
                        _cell = cell
    return _cell or None


def park():
    """Have OpenBLAS's spinning workers sleep until its next threaded call, while ember's pool runs pieces
    (Note [Parked BLAS workers]); pair with unpark()."""
    global _parked, _budget
    if not PARK:
        return
    cell = _timeout_cell()
    if cell is None:
        return
    with _park_lock:
        if _parked == 0:
            _budget = cell.value
            cell.value = 0
        _parked += 1


def unpark():
    """Undo one park(): the last one puts the spin budget back."""
    global _parked
    with _park_lock:
        if _parked == 0:
            return
        _parked -= 1
        if _parked == 0:
            _cell.value = _budget


def _forget_parks():
    """In a forked child: no pool thread of the parent runs here, so a park in flight at the fork is undone."""
    global _parked, _park_lock
    _park_lock = threading.Lock()
    if _parked:
        _parked = 0
        _cell.value = _budget


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parks)
