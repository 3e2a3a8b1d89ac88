"""The BLAS thread pool NumPy links against, found at run time (no extra dependency).

torch.set_num_threads sizes torch's intra-op pool; ember's heavy lifting is BLAS, so
ember.set_num_threads sizes OpenBLAS's pool when NumPy uses OpenBLAS. With another BLAS
the setting is only recorded.
"""
import ctypes
import os
import re

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
