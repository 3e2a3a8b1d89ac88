"""ReLU's forward, ReLU's and hardtanh's masks and masked gradients as compiled loops (numba): one pass each where
the NumPy forms make three or four (a comparison, a logical not or and, the product with the mask, a NaN check), and
where NumPy's clip against 0-d bounds runs at half the speed of a copy.
The values are those of ember/_ops/activation.py's NumPy forms, and where those leave a -0.0 (a negative
gradient times a False mask) these give torch's +0.0. Loaded through jit.load("activation_jit") (Note
[JIT kernels]); tests/test_activation_jit.py holds them to torch.
"""
import numba
import numpy as np

from . import allocator, jit, parallel


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _clamp_keep(x, lo, hi, keep):
    """x clamped to [lo, hi] in place (NaN stays NaN, ties keep x: -0.0 stays -0.0), and where the result
    is strictly inside (the gradient passes; not at a bound, not NaN)."""
    for i in range(x.shape[0]):
        v = x[i]
        if v < lo:
            v = lo
        if v > hi:  # min(max(x, lo), hi): with crossed bounds (lo > hi) every value becomes hi
            v = hi
        x[i] = v
        keep[i] = v > lo and v < hi


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _masked(g, keep, r):
    """g where keep, else +0.0 (Note [Masked moves])."""
    zero = g.dtype.type(0)
    for i in range(g.shape[0]):
        gi = g[i]  # read whatever keep says: read under the condition, it vectorizes to masked loads
        r[i] = gi if keep[i] else zero


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _relu(x, r):
    zero = x.dtype.type(0)
    for i in range(x.shape[0]):
        v = x[i]
        r[i] = zero if v < zero else v  # NaN stays NaN; -0.0 stays -0.0 (as clamp_min: ties give x)


# Note [Masked moves]: LLVM vectorizes a loop whose loads or stores happen under a condition with AVX2's masked
# moves (vmaskmovps), which this AMD CPU runs far slower than plain ones; a loop that reads and writes every
# element gets plain moves and blends. Measured on one thread, float32, 64K / 1M elements (us): relu's gradient
# 29.7 / 485 -> 23.0 / 325 with g[i] read unconditionally, the masked gradient 18.7 / 212 -> 14.7 / 175, relu_
# 29 / 430 as _relu(x, x) (its scalar loop), 43 / 744 over one array with masked stores, 10 / 118 as below.
# tests/test_activation_jit.py holds the values to torch's bits.
@numba.njit(nogil=True, cache=True, error_model="numpy")
def _relu_in_place(x, one):
    """_relu(x, x) over one array. Written as _relu, LLVM finds the store of an unchanged x[i] redundant and
    makes it a masked store (Note [Masked moves]); v * one, one a run-time 1.0, is v itself (a signalling NaN
    comes back quiet) and keeps every store."""
    zero = x.dtype.type(0)
    for i in range(x.shape[0]):
        v = x[i]
        x[i] = zero if v < zero else v * one


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _relu_grad(g, out, r):
    zero = g.dtype.type(0)
    for i in range(g.shape[0]):
        gi = g[i]  # unconditional, as in _masked
        r[i] = zero if out[i] <= zero else gi


def applies(*arrays):
    """Whether the kernels take these arrays: float32/float64 first, all C-contiguous, of one shape."""
    a = arrays[0]
    return a.dtype in jit.DTYPES and all(b.shape == a.shape and b.flags.c_contiguous for b in arrays)


def clamp_keep(x, lo, hi):
    """hardtanh_ on x's own memory: clamps x, returns the bool mask of where its gradient passes."""
    keep = np.empty(x.shape, dtype=bool)
    lo, hi = x.dtype.type(lo), x.dtype.type(hi)
    parallel.run_flat(lambda a, k: _clamp_keep(a, lo, hi, k), (x, keep), x.nbytes)
    return keep


def masked(g, keep):
    """g where keep, else +0.0, in a fresh array."""
    r = np.empty_like(g)
    parallel.run_flat(_masked, (g, keep, r), g.nbytes * 2)
    return r


def relu(x, out=None):
    """max(x, 0) with x's ties and NaNs (torch's clamp_min(x, 0)), into out (x itself for relu_) or a fresh array.
    128x512 float32 on one thread: 10 us against NumPy's clip's 25; 1024x1024 143 against 290."""
    if out is x:  # relu_
        one = x.dtype.type(1)  # split as a cheap ufunc (Note [Elementwise pieces])
        parallel.run_flat(lambda a: _relu_in_place(a, one), (x,), x.nbytes // 2)
        return x
    r = allocator.empty(x.shape, x.dtype) if out is None else out  # pooled when large, as clamp_min's output
    parallel.run_flat(_relu, (x, r), x.nbytes // 2)
    return r


def relu_grad(g, out):
    """relu's first-order gradient from its result: g where out > 0 or NaN, else +0.0."""
    r = np.empty_like(g)
    parallel.run_flat(_relu_grad, (g, out, r), g.nbytes * 2)
    return r
