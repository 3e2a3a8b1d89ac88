"""cblas ?gemm of the OpenBLAS NumPy links against, through ctypes (no extra dependency).

np.matmul cannot accumulate into its output (BLAS's beta = 1) nor read a matrix whose rows
overlap another's memory at an arbitrary offset; the implicit-GEMM convolution needs both
(Note [Implicit GEMM], ember/_backend/conv_implicit.py). Found lazily, like blas.py's thread
setting; `available()` is False with another BLAS (MKL, Accelerate), and callers keep their
NumPy path.
"""
import ctypes

import numpy as np

from . import blas

# (symbol prefix, symbol suffix, integer type): NumPy >= 2 wheels (scipy-openblas, ILP64), older
# NumPy wheels (openblas64_), and a plain LP64 OpenBLAS
_NAMES = (("scipy_cblas_", "64_", ctypes.c_int64), ("cblas_", "64_", ctypes.c_int64), ("cblas_", "", ctypes.c_int))
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

_fns = None
_addresses = {}  # (routine, dtype) -> the address of cblas ?gemm / ?gemv with 64-bit integers (address())


def _bind():
    global _fns
    if _fns is not None:
        return _fns
    _fns = {}
    lib = blas._find()
    if lib is None:
        return _fns
    for prefix, suffix, int_t in _NAMES:
        found = {}
        for code, dtype, real in (("s", np.float32, ctypes.c_float), ("d", np.float64, ctypes.c_double)):
            fn = getattr(lib, f"{prefix}{code}gemm{suffix}", None)
            if fn is None:
                break
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_t, int_t, int_t, real, ctypes.c_void_p,
                           int_t, ctypes.c_void_p, int_t, real, ctypes.c_void_p, int_t]
            fn.restype = None
            found[np.dtype(dtype)] = fn
        if len(found) == 2:
            _fns = found
            if int_t is ctypes.c_int64:
                for routine in ("gemm", "gemv"):
                    for code, dtype in (("s", np.float32), ("d", np.float64)):
                        fn = getattr(lib, f"{prefix}{code}{routine}{suffix}", None)
                        if fn is not None:
                            _addresses[routine, np.dtype(dtype)] = ctypes.cast(fn, ctypes.c_void_p).value
            break
    return _fns


def available(dtype):
    """Whether gemm() runs for arrays of dtype (float32/float64 with NumPy's OpenBLAS found)."""
    return np.dtype(dtype) in _bind()


def address(routine, dtype):
    """The address of cblas ?gemm or ?gemv (routine) for dtype, for compiled loops that call it themselves
    (jit.blas_intrinsics, which pass 64-bit integers); None when gemm() does not run for dtype or the BLAS takes
    32-bit integers."""
    _bind()
    return _addresses.get((routine, np.dtype(dtype)))


def gemm(dtype, m, n, k, a, lda, b, ldb, c, ldc, beta, trans_b=False):
    """C (m x n) = A (m x k) @ op(B) + beta * C, row-major, with A, B, C given as addresses and
    leading dimensions in elements; op(B) is B (k x n), or B^T for B (n x k) when trans_b.
    The caller keeps the arrays behind the addresses alive and in bounds."""
    _bind()[np.dtype(dtype)](_ROW_MAJOR, _NO_TRANS, _TRANS if trans_b else _NO_TRANS, m, n, k, 1.0, a, lda,
                             b, ldb, beta, c, ldc)
