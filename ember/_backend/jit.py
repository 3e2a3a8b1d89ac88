"""Optional compiled kernels (the `ember[jit]` extra: numba), loaded on first use.

Note [JIT kernels]: a few of ember's kernels take ~100 NumPy passes over their data where a compiled
loop makes one (torch's float32 normal fill, bit for bit: Note [Normal fill passes] in
ember/_backend/normal_avx2.py). For those, a module ember/_backend/<name>_jit.py holds the same
arithmetic as a numba-compiled loop nest, and the caller asks load(name) for it, keeping its NumPy
kernel when the answer is None: numba is not installed, or the switch is off (ENABLED = False, or
EMBER_JIT=0 in the environment). The NumPy kernels stay the reference: the tests hold each compiled
kernel to its NumPy counterpart bit for bit, and run the NumPy paths with the switch off. numba is
imported only when a caller first asks (`import ember` does not pay for it); compiled code is cached
on disk (numba's cache=True), so a process loads it in milliseconds after the first compile (~1.5 s).
To step through a kernel with pdb, run with NUMBA_DISABLE_JIT=1: the same functions then run as plain
Python (slowly). The kernels release the GIL (nogil=True), so the intra-op threads run them side by side, and use NumPy's
error model (error_model="numpy"): a float division by zero gives inf/NaN as in torch instead of raising
ZeroDivisionError, and without that check per division the loops vectorize (Adam's step 3.6 -> ~0.3 ms
per 1M parameters).
"""
import importlib
import os

import numpy as np

ENABLED = os.environ.get("EMBER_JIT", "1") != "0"
DTYPES = (np.dtype(np.float32), np.dtype(np.float64))  # what the kernels are compiled for
_loaded = {}


def load(name):
    """The compiled-kernel module ember._backend.<name>, or None (numba missing or ENABLED off)."""
    if not ENABLED:
        return None
    mod = _loaded.get(name, False)
    if mod is False:
        try:
            importlib.import_module("numba")
        except ImportError:
            mod = None
        else:
            mod = importlib.import_module(f"{__package__}.{name}")
        _loaded[name] = mod
    return mod


def optional(v, dtype, ndim=1):
    """An operand a kernel may lack, as numba takes it: v as a C-contiguous array of dtype, or for None an
    empty array of ndim dims (the kernels test .shape[0])."""
    return np.empty((0,) * ndim, dtype) if v is None else np.ascontiguousarray(v, dtype=dtype)


def fma_intrinsic():
    """A numba intrinsic fma(a, b, c): a * b + c rounded once, as llvm.fma (the CPU's FMA instruction,
    or the C library's exact fmaf/fma where it has none), for float32 or float64 operands of one type."""
    import numba
    if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1: the kernels run as Python, so fma must be callable
        from .mt19937 import fma32
        return lambda a, b, c: fma32(np.array([a]), b, c)[0]
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def fma(typingctx, a, b, c):
        if not (a == b == c and isinstance(a, types.Float)):
            return None

        def codegen(context, builder, signature, args):
            t = args[0].type
            fn = builder.module.declare_intrinsic("llvm.fma", [t], ir.FunctionType(t, [t, t, t]))
            return builder.call(fn, args)
        return a(a, a, a), codegen
    return fma


def blas_intrinsics():
    """numba intrinsics (gemm, gemv) that call the cblas routines NumPy links against from compiled code, so that a
    loop of BLAS calls and compiled steps runs without coming back to Python (Note [Compiled LSTM sequence] in
    ember/_backend/lstm_jit.py). Row-major; matrices and vectors are given as addresses (an array's .ctypes.data),
    leading dimensions in elements, the routine's address from cblas.address (64-bit integers); single or double
    precision as beta is float32 or float64:
    - gemm(addr, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc): C (m x n) = A (m x k) @ op(B) + beta C, op(B) = B
      (k x n), or B^T for B (n x k) when trans_b is 1;
    - gemv(addr, trans, m, n, a, lda, x, beta, y): y = op(A) x + beta y for A (m x n), op(A) = A, or A^T when trans
      is 1 (unit strides), as NumPy computes a one-row product (a different rounding from gemm's).
    The caller keeps the arrays alive and in bounds."""
    import numba
    if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1: the kernels run as Python, so these must be callable
        return _gemm_by_ctypes, _gemv_by_ctypes
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    i32, i64, ptr = ir.IntType(32), ir.IntType(64), ir.IntType(8).as_pointer()

    def trans_flag(builder, v):
        return builder.select(builder.icmp_unsigned("!=", v, ir.Constant(i64, 0)), ir.Constant(i32, 112),
                              ir.Constant(i32, 111))

    @intrinsic
    def gemm(typingctx, addr, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc):
        if not isinstance(beta, types.Float):
            return None
        u, n64 = types.uintp, types.int64
        sig = types.void(u, n64, n64, n64, n64, u, n64, u, n64, beta, u, n64)

        def codegen(context, builder, signature, args):
            addr_, trans_, m_, n_, k_, a_, lda_, b_, ldb_, beta_, c_, ldc_ = args
            real = beta_.type
            fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, real, ptr, i64, ptr, i64, real, ptr,
                                                   i64])
            builder.call(builder.inttoptr(addr_, fnty.as_pointer()),
                         [ir.Constant(i32, 101), ir.Constant(i32, 111), trans_flag(builder, trans_), m_, n_, k_,
                          ir.Constant(real, 1.0), builder.inttoptr(a_, ptr), lda_, builder.inttoptr(b_, ptr), ldb_,
                          beta_, builder.inttoptr(c_, ptr), ldc_])
            return context.get_dummy_value()
        return sig, codegen

    @intrinsic
    def gemv(typingctx, addr, trans, m, n, a, lda, x, beta, y):
        if not isinstance(beta, types.Float):
            return None
        u, n64 = types.uintp, types.int64
        sig = types.void(u, n64, n64, n64, u, n64, u, beta, u)

        def codegen(context, builder, signature, args):
            addr_, trans_, m_, n_, a_, lda_, x_, beta_, y_ = args
            real = beta_.type
            fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i64, i64, real, ptr, i64, ptr, i64, real, ptr, i64])
            one64 = ir.Constant(i64, 1)
            builder.call(builder.inttoptr(addr_, fnty.as_pointer()),
                         [ir.Constant(i32, 101), trans_flag(builder, trans_), m_, n_, ir.Constant(real, 1.0),
                          builder.inttoptr(a_, ptr), lda_, builder.inttoptr(x_, ptr), one64, beta_,
                          builder.inttoptr(y_, ptr), one64])
            return context.get_dummy_value()
        return sig, codegen
    return gemm, gemv


def _gemm_by_ctypes(addr, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc):
    """blas_intrinsics' gemm as Python (for NUMBA_DISABLE_JIT=1): cblas.gemm, the routine of beta's dtype."""
    from . import cblas
    cblas.gemm(type(beta), m, n, k, a, lda, b, ldb, c, ldc, beta, trans_b=bool(trans_b))


def _gemv_by_ctypes(addr, trans, m, n, a, lda, x, beta, y):
    """blas_intrinsics' gemv through ctypes (for NUMBA_DISABLE_JIT=1)."""
    import ctypes
    real = ctypes.c_float if isinstance(beta, np.float32) else ctypes.c_double
    i64, p = ctypes.c_int64, ctypes.c_void_p
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, i64, i64, real, p, i64, p, i64, real, p, i64)(addr)
    fn(101, 112 if trans else 111, m, n, 1.0, a, lda, x, 1, beta, y, 1)
