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
