"""THE backend seam: the array module of a device, and NumPy's sharp edges.

Only this package imports numpy for computation. Kernels receive `xp` (the array
module of the tensor's device) and use names NumPy and CuPy share. Anything
NumPy-specific lives in numpy_cpu.py as a named helper.
"""
import ctypes
import os

import numpy as np

from . import allocator, parallel

xp = np  # the cpu array module; a CUDA device would map to cupy here

ndarray = np.ndarray


def array_module(device=None):
    """The array module that holds tensors of `device` (numpy for cpu)."""
    return np


def as_array(x):
    """NumPy ufuncs return scalars for 0-d results; tensors always hold ndarrays."""
    if type(x) is np.ndarray:
        return x
    return np.asarray(x)


def opmath(x):
    """Half-precision arrays (float16, bfloat16: the only 2-byte floats) are computed in float32,
    as torch's opmath does; float32/float64 as they are."""
    return x.astype(np.float32) if x.dtype.itemsize == 2 else x


def scalar_array(value, np_dtype):
    """A Python scalar as a 0-d array of `np_dtype`, wrapping out-of-range ints like torch
    (NumPy 2 raises OverflowError for `np.int8(1000)`)."""
    try:
        return np.array(value, dtype=np_dtype)
    except OverflowError:
        return np.array(value).astype(np_dtype)


# Note [Slow NumPy loops]: two NumPy loops are far slower than an arithmetic pass, and kernels
# call these replacements instead (same values, same tie and NaN rules, same output layout):
# - np.where on a mixed mask takes a branch per element (~35 passes' worth on 256k floats);
#   same-dtype operands are selected with bit operations, b ^ ((a ^ b) * cond), in 3 passes.
# - np.maximum/np.minimum against a 0-d operand is not vectorized (~4 passes' worth); the
#   scalar is written into the output first (2 passes), except in place (that would take a
#   full-size temporary).
# Small arrays keep the plain NumPy call (fewer calls).
_LARGE = 4096
_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def where(cond, a, b):
    """np.where(cond, a, b) (see Note [Slow NumPy loops])."""
    if cond.size >= _LARGE and type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype \
            and cond.dtype == np.bool_ and a.dtype.itemsize in _BITS:
        bits = _BITS[a.dtype.itemsize]
        diff = ufunc(np.bitwise_xor, a.view(bits), b.view(bits))
        if np.broadcast_shapes(diff.shape, cond.shape) == diff.shape:
            diff *= cond
            diff ^= b.view(bits)
            return diff.view(a.dtype)
    return np.where(cond, a, b)


def _against_scalar(ufunc, a, b, out):
    """ufunc(a, b, out=out) with a 0-d operand spread into a full array first, in its own position
    (so ties resolve as NumPy's would)."""
    big, small = (b, a) if a.ndim == 0 else (a, b)
    if big.size < _LARGE or small.ndim or big.ndim == 0 or small.dtype != big.dtype:
        return ufunc(a, b, out=out)
    if out is None:
        full = empty_like(big)
    elif out.shape == big.shape and not np.may_share_memory(out, big):
        full = out
    else:  # in place: no full-size temporary, the slow loop it is
        return ufunc(a, b, out=out)
    full.fill(small)
    target = full if out is None else out
    if small is a:
        return ufunc(full, b, out=target)
    return ufunc(a, full, out=target)


def negative(x, out=None):
    """np.negative, with a strided out= written through a fresh result: NumPy 2.4's negative loop
    writes wrong values into some strided outputs (every 4th float32 or every 8th float64, as in a
    column of an (n, 4) float32 array), found by tests/test_numpy_workarounds.py."""
    if out is None or out.flags.c_contiguous or out.flags.f_contiguous:
        return np.negative(x, out=out)
    np.copyto(out, np.negative(x), casting="unsafe")
    return out


def maximum(a, b, out=None):
    """np.maximum (see Note [Slow NumPy loops])."""
    return _against_scalar(np.maximum, a, b, out)


def minimum(a, b, out=None):
    """np.minimum (see Note [Slow NumPy loops])."""
    return _against_scalar(np.minimum, a, b, out)


# np.clip against 0-d bounds is one vectorized pass: 4x faster than maximum then minimum above
# on float32 (32x96x16x16: 0.14 vs 0.58 ms), 2x on float64, with the same bits (ties give x, so
# -0.0 stays -0.0; NaN stays NaN). Other dtypes (half, bfloat16, ints) keep the two-step form.
# The clip ufunc is called directly: np.clip's Python wrapper costs ~10 us a call (10 elements:
# 13 vs 0.8 us), more than the pass itself below ~50k elements; it calls this same ufunc.
_CLIP_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_INF = {d: np.array(np.inf, d) for d in _CLIP_DTYPES}
try:
    from numpy._core.umath import clip as _clip
except ImportError:  # NumPy 1.x
    from numpy.core.umath import clip as _clip


def clamp_between(x, lo, hi, out=None):
    """minimum(hi, maximum(lo, x)) for 0-d lo <= hi of x's dtype, in one pass where NumPy's clip
    loop is vectorized."""
    if x.dtype in _CLIP_DTYPES:
        return _clip(x, lo, hi, out=out)
    r = maximum(lo, x, out=out)
    return minimum(hi, r, out=r)


def clamp_min(x, lo, out=None):
    """maximum(lo, x) for a 0-d lo of x's dtype (relu): one clip pass against +inf where NumPy's clip
    loop is vectorized (the same bits, as above), into a pooled buffer when large, split across the intra-op
    threads when larger (Note [Elementwise pieces])."""
    if x.dtype not in _CLIP_DTYPES:
        return maximum(lo, x, out=out)
    if out is None and x.size >= _LARGE:
        out = empty_like(x)
    if out is not None and out.flags.c_contiguous and out.shape == x.shape:
        return in_pieces(_clip, (x, lo, _INF[x.dtype]), out)
    return _clip(x, lo, _INF[x.dtype], out=out)


# Note [Elementwise pieces]: NumPy runs a ufunc on one thread; torch splits large elementwise ops across its
# intra-op threads. in_pieces splits a ufunc's output along axis 0, one range of rows a thread, each operand cut
# the same way where it spans that axis (a broadcast operand goes whole to every piece): the same elementwise
# arithmetic, the same bits. (np.exp and np.tanh on float32 run unary_jit's kernels instead, with ember[jit]:
# _compiled_ufunc.)
# Memory-bound ufuncs gain only on large arrays, so the work given to parallel.run is
# the output's bytes divided by _CHEAP_SHARE (2-core VM, float32, medians, whole -> pieces: add 2 MB 132 -> 200 us,
# 4 MB 368 -> 367, 8 MB 1357 -> 824; mul 4 MB 354 -> 280; relu's clip 8 MB 1070 -> 578); transcendental ones
# (_COSTLY) gain from 512 KB (exp 1 MB 835 -> 489, tanh 1 MB 1025 -> 621, 0.5 MB 507 -> 396).
_CHEAP_SHARE = 2  # output bytes per byte of parallel.run's work: the default threshold of 2 MB -> 4 MB outputs
_COSTLY = frozenset(getattr(np, n) for n in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "power", "float_power", "cbrt", "hypot",
    "logaddexp", "logaddexp2"))
_COSTLY_WEIGHT = 4  # a costly ufunc's output bytes count 4x: split from 512 KB


def _work(f, nbytes):
    """The work parallel.run weighs for a ufunc's output of nbytes (Note [Elementwise pieces])."""
    return nbytes * _COSTLY_WEIGHT if f in _COSTLY else nbytes // _CHEAP_SHARE


_COMPILED = {np.exp: "exp", np.tanh: "tanh"}  # unary_jit's float32 kernels (NumPy's: 2-20x slower here)
# From 64 KB (16K float32, as sigmoid) exp and tanh enter ufunc() for those kernels even where no split pays: one
# thread, 4K elements: tanh 22.5 -> 5.7 us, exp 10.8 -> 3.8; 64K: tanh 344 -> 70, exp 166 -> 44 (numba's call ~1 us).
_COMPILED_FROM = 1 << 16


def _compiled_ufunc(f, args, out):
    """unary_jit's float32 kernel (with ember[jit]) for np.exp or np.tanh on a C-contiguous float32 array of out's
    shape, else None."""
    name = _COMPILED.get(f)
    if name is None or out.dtype != np.float32:
        return None
    x = args[0]
    if type(x) is not np.ndarray or x.dtype != np.float32 or x.shape != out.shape or not x.flags.c_contiguous \
            or not out.flags.c_contiguous:
        return None
    from . import jit
    kernels = jit.load("unary_jit")
    return None if kernels is None else getattr(kernels, name)


def in_pieces(f, args, out):
    """f(*args, out=out) for a ufunc f and out of the broadcast shape, split along axis 0 across the intra-op
    threads when large enough (Note [Elementwise pieces]); returns out."""
    work = _work(f, out.nbytes)
    kernel = _compiled_ufunc(f, args, out)
    if kernel is not None:
        parallel.run_flat(kernel, (args[0], out), work)
        return out
    rows = out.shape[0] if out.ndim else 0
    if rows < 2 or work < parallel._MIN_BYTES:
        return f(*args, out=out)
    nd = out.ndim
    cut = [type(a) is np.ndarray and a.ndim == nd and a.shape[0] == rows for a in args]

    def piece(i, j):
        f(*[a[i:j] if c else a for a, c in zip(args, cut)], out=out[i:j])
    parallel.run(piece, rows, work)
    return out


def _dense(arr):
    """Non-overlapping and dense: some permutation of arr's dims is C-contiguous."""
    expected = arr.itemsize
    for st, n in sorted((st, n) for st, n in zip(arr.strides, arr.shape) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def shares_elements(a):
    """Whether elements of array a share memory: a stride 0 over a dim longer than 1 (an expanded tensor)."""
    if a.flags.c_contiguous:
        return False
    for n, st in zip(a.shape, a.strides):
        if st == 0 and n > 1:
            return True
    return False


def check_internal_overlap(out):
    """torch refuses to write into an array whose elements share memory (an expanded tensor):
    NumPy would write each of them several times."""
    if shares_elements(out):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")


def check_partial_overlap(out, src):
    """torch refuses an input that overlaps the written-to array without being exactly it (when both are
    dense, so that it can tell); NumPy would compute the right answer through a hidden copy."""
    if out is src or not np.may_share_memory(out, src):
        return
    if out.size == 0 or src.size == 0 or not _dense(out) or not _dense(src):
        return
    a = out.__array_interface__["data"][0]
    b = src.__array_interface__["data"][0]
    if a == b and out.nbytes == src.nbytes and out.strides == src.strides:
        return
    if a < b + src.nbytes and b < a + out.nbytes:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           "operation.")


# ---- where large arrays are born (Note [Caching allocator] in allocator.py) ----------------------
# Kernels allocate through these helpers, never through the pool itself. Results are bit-identical
# to NumPy's own calls: the same loops write into a pooled buffer instead of a fresh one.

empty = allocator.empty
zeros = allocator.zeros


def empty_like(a):
    """np.empty_like(a) (a's layout), pooled when a is C-contiguous and large."""
    if a.flags.c_contiguous:
        return allocator.empty(a.shape, a.dtype)
    return np.empty_like(a)


def owns_memory(arr):
    """Is arr the one array over its memory (no view of another): NumPy's own buffer or a pool block's
    array. Views of arr may exist; the caller knows whether anyone else holds them."""
    return arr.flags.owndata or allocator.is_root(arr)


def shaped(arr, shape):
    """arr in shape: arr itself when it has it (reshape would make a view, which .grad must copy: owns_memory),
    else arr.reshape(shape)."""
    return arr if arr.shape == tuple(shape) else arr.reshape(shape)


def full(shape, value, dtype):
    """np.full(shape, value, dtype), pooled when large."""
    out = allocator.empty(shape, dtype)
    np.copyto(out, value, casting="unsafe")  # as np.full and np.ones fill
    return out


_UFUNC_OUT = {}  # (ufunc, input dtypes...) -> output dtype, or None when NumPy resolves none


def _ufunc_out_dtype(f, dtypes):
    key = (f,) + dtypes
    d = _UFUNC_OUT.get(key, False)
    if d is False:
        try:
            d = f.resolve_dtypes(dtypes + (None,))[-1]
        except (TypeError, ValueError, AttributeError):
            d = None
        if d is not None and d.hasobject:
            d = None
        _UFUNC_OUT[key] = d
    return d


def _c_ordered(a):
    """Would NumPy lay out a ufunc's output in C order for this operand? Yes when its axes that move
    (non-zero stride, more than one element) have positive, non-increasing strides: C-contiguous
    arrays, their slices and broadcast (expanded) views. NumPy orders the output's axes by the
    operands' strides ignoring zero strides, C order winning ties and conflicts."""
    if a.flags.c_contiguous:
        return True
    last = None
    for n, st in zip(a.shape, a.strides):
        if st == 0 or n == 1:
            continue
        if st < 0 or (last is not None and st > last):
            return False
        last = st
    return True


def large(f, nbytes):
    """Whether ufunc f's result of about nbytes is worth ufunc() below: pooled, or split in pieces."""
    return _work(f, nbytes) >= parallel._MIN_BYTES or nbytes >= allocator.threshold or \
        (nbytes >= _COMPILED_FROM and f in _COMPILED)  # float32 only: other dtypes pass through in_pieces


def ufunc(f, *args):
    """f(*args) for a NumPy ufunc of one output on arrays, written into a pooled buffer when the
    result is large and split across the intra-op threads when larger (Note [Elementwise pieces]). Only
    where NumPy's own result is C-contiguous (every operand _c_ordered): otherwise NumPy keeps the operands'
    layout, as torch does."""
    if f.nout != 1:
        return f(*args)
    shape = None
    for a in args:
        if a.ndim:
            if not _c_ordered(a):
                return f(*args)
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                try:
                    shape = np.broadcast_shapes(shape, a.shape)
                except ValueError:
                    return f(*args)  # NumPy's own error
    if shape is None:
        return f(*args)
    d = _ufunc_out_dtype(f, tuple(a.dtype for a in args))
    if d is None:
        return f(*args)
    nbytes = allocator.nbytes(shape, d.itemsize)
    if allocator.enabled and nbytes >= allocator.threshold:
        return in_pieces(f, args, allocator.pooled(shape, d, nbytes))
    if not large(f, nbytes):
        return f(*args)  # too small to split or to run compiled (a pooled result returned above)
    return in_pieces(f, args, np.empty(shape, d))


def matmul(a, b):
    """np.matmul(a, b), written into a pooled buffer when the product is large (operands of one dtype,
    both at least 2-D: NumPy's result is then C-contiguous of that dtype)."""
    if a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype or not allocator.enabled or a.dtype.hasobject:
        return np.matmul(a, b)
    n = a.shape[-2]
    m = b.shape[-1]
    if a.ndim == 2 and b.ndim == 2:
        shape = (n, m)
    else:
        try:
            shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (n, m)
        except ValueError:
            return np.matmul(a, b)  # NumPy's own error
    nbytes = allocator.nbytes(shape, a.dtype.itemsize)
    if nbytes < allocator.threshold or a.shape[-1] != b.shape[-2]:
        return np.matmul(a, b)
    return np.matmul(a, b, out=allocator.pooled(shape, a.dtype, nbytes))


def contiguous(a):
    """np.ascontiguousarray(a): a itself when C-contiguous, else a C-ordered copy (pooled when large,
    split across the intra-op threads when big)."""
    if a.flags.c_contiguous:
        return a
    out = allocator.empty(a.shape, a.dtype)
    parallel.copyto(out, a)
    return out


# NumPy warns on 0/0, overflow in exp, log(0) ...; torch silently returns nan/inf.
# Tensors follow torch, so the warnings are switched off once here.
np.seterr(all="ignore")


# Note [Freed memory]: kernels make full-size temporaries and free them at once. glibc gives the
# top of its heap back to the OS as soon as more than M_TRIM_THRESHOLD is free, and maps blocks
# above M_MMAP_THRESHOLD on their own; both start small (256 kB, 128 kB) and only grow after a
# large mapped block is freed. Until then an op with a few 1 MB temporaries page-faults all of
# them back in on every call, which can cost more than its arithmetic (seven 1 MB buffers: 9 ms
# instead of 0.2 ms on a 2-core VM). ember starts glibc where its own adaptive rule ends up
# (blocks up to 32 MB from the heap, up to 64 MB of free heap kept for reuse): the glibc form of
# torch's caching allocator. Peak memory is unchanged (the ResNet bench step: 44.8 MB either
# way); memory freed after a peak stays with the process, up to 64 MB. The setting is
# process-wide (torch in the same process gets it too). EMBER_KEEP_FREED_MEMORY=0 keeps glibc's
# defaults.
#
# The caching allocator (Note [Caching allocator]) takes over where this tuning cannot reach:
# 32 MB is the largest mmap threshold glibc accepts, so every larger buffer is mapped fresh and
# page-faulted on each use. With the tuning in place the pool serves exactly those (its threshold
# defaults to 32 MB); below that glibc's heap reuses memory at no Python cost and with less peak
# memory, since it coalesces free blocks of any size. Without the tuning (EMBER_KEEP_FREED_MEMORY=0,
# or not glibc) the pool starts at 256 KB.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
GLIBC_MMAP_THRESHOLD = 32 << 20


def _keep_freed_memory():
    """Tune glibc as above; True when done."""
    if os.environ.get("EMBER_KEEP_FREED_MEMORY", "1") == "0":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows): nothing to tune
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    ok = mallopt(_M_MMAP_THRESHOLD, GLIBC_MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, 64 << 20)
    return bool(ok)


if _keep_freed_memory() and "EMBER_ALLOCATOR_THRESHOLD" not in os.environ:
    allocator.configure(threshold_bytes=GLIBC_MMAP_THRESHOLD)
