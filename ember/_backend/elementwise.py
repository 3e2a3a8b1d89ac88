"""Long elementwise kernels (a dozen or more NumPy passes, or a transcendental one), split across threads.

Note [Blocked elementwise kernels]: a kernel made of many NumPy passes is elementwise as a whole, so
the flat array splits into independent pieces, one per intra-op thread (NumPy releases the GIL inside
its loops), when the work is worth the hand-off: `cost` says how many cheap passes the kernel is worth
per element (an exp is ~25 of them here: NumPy has no AVX2 exp/tanh loops), so an exp-heavy kernel
goes parallel at a far smaller size than a copy would (parallel._MIN_BYTES). Each piece runs in blocks
of at most BLOCK elements, which bounds the temporaries. Only C-ordered operands of one shape are
split; any other layout runs as one call, keeping NumPy's (and torch's) output layout.
"""
import math

import numpy as np

from . import opmath, parallel, special

BLOCK = 1 << 18  # elements per block (1 MB of float32): larger arrays run block by block
FORCE = None  # tests: True splits every input into blocks of FORCE_BLOCK, False never splits
FORCE_BLOCK = 7


def run(kernel, *ins, cost=1):
    """kernel(*ins) -> a new array, for an elementwise kernel on same-shaped arrays, in blocks across the
    intra-op threads (see Note [Blocked elementwise kernels])."""
    first = ins[0]
    size = first.size
    block = BLOCK
    if FORCE is not None:
        if not FORCE:
            return kernel(*ins)
        block = FORCE_BLOCK
    if not all(a.flags.c_contiguous and a.shape == first.shape for a in ins):
        return kernel(*ins)
    if size <= block and parallel.chunks(size, first.nbytes * cost) == [(0, size)]:
        return kernel(*ins)
    out = np.empty(first.shape, first.dtype)
    flat_out = out.reshape(-1)
    flat_ins = [a.reshape(-1) for a in ins]

    def part(start, stop):
        with np.errstate(all="ignore"):  # NumPy's error state is per thread: pool threads start with warnings on
            for lo in range(start, stop, block):
                hi = min(stop, lo + block)
                flat_out[lo:hi] = kernel(*(a[lo:hi] for a in flat_ins))

    parallel.run(part, size, first.nbytes * cost)
    return out


# ---- GELU (torch.nn.functional.gelu) ------------------------------------------------------------
# The tanh form as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh(u)) = sigmoid(2u)
# exactly, and NumPy's exp is 2-3x cheaper than its tanh; the quotient has no cancellation for x < 0.

_C = math.sqrt(2 / math.pi)
_A = 0.044715


def _gelu_tanh(w):
    out = np.multiply(w, w)
    out *= -2 * _C * _A
    out -= 2 * _C
    out *= w  # -2u
    np.exp(out, out=out)
    out += 1
    return np.divide(w, out, out=out)


def _gelu_tanh_grad(g, w):
    """g (s + x 2u'(x) s (1 - s)) with s = sigmoid(2u); 1 - s = sigmoid(-2u) from the same exp (1 - s would
    cancel for large x, and E s would be inf * 0 for very negative x)."""
    t = np.multiply(w, w)
    e = np.multiply(t, -2 * _C * _A)
    e -= 2 * _C
    e *= w
    np.exp(e, out=e)  # E = exp(-2u)
    s = np.add(e, 1)
    np.reciprocal(s, out=s)  # s = 1 / (1 + E)
    np.reciprocal(e, out=e)
    e += 1
    np.reciprocal(e, out=e)  # 1 - s = 1 / (1 + 1/E)
    e *= s
    t *= 6 * _C * _A
    t += 2 * _C
    t *= w  # x 2u'(x)
    e *= t
    e += s
    e *= g
    return e


def _gelu_erf(w):
    out = special.ndtr(w)
    out *= w
    return out


def _gelu_erf_grad(g, w):
    """g (Phi(x) + x phi(x)), Phi and phi from one exp."""
    cdf, out = special.ndtr_pdf(w)
    out *= w
    out += cdf
    out *= g
    return out


# cheap passes per element each kernel is worth (for the thread split): an exp ~25, the float32 ndtr ~60
_GELU_COST = {(False, False): 60, (False, True): 90, (True, False): 30, (True, True): 45}


def gelu(x, tanh):
    """gelu(x) for a float array (half precision computed in float32, returned in x's dtype)."""
    w = opmath(x)
    out = run(_gelu_tanh if tanh else _gelu_erf, w, cost=_GELU_COST[tanh, False])
    return out.astype(x.dtype, copy=False)


def gelu_backward(grad, x, tanh):
    """grad * gelu'(x) (half precision computed in float32, returned in grad's dtype)."""
    w = opmath(x)
    g = opmath(grad)
    if g.dtype != w.dtype or g.shape != w.shape:
        g = np.ascontiguousarray(np.broadcast_to(g.astype(w.dtype, copy=False), w.shape))
    out = run(_gelu_tanh_grad if tanh else _gelu_erf_grad, g, w, cost=_GELU_COST[tanh, True])
    return out.astype(grad.dtype, copy=False)


# ---- exp(x - max) by rows (cross_entropy, softmax) -----------------------------------------------

def exp_shifted_rows(x):
    """(m, e, s) for a C-contiguous 2-D float array: m = max over each row, e = exp(x - m) and s = the row
    sums of e (m and s keep dims), with the rows split across the intra-op threads (the exp dominates)."""
    rows = x.shape[0]
    m = np.empty((rows, 1), x.dtype)
    s = np.empty((rows, 1), x.dtype)
    e = np.empty(x.shape, x.dtype)
    per_row = max(1, x.shape[1])
    step = max(1, BLOCK // per_row) if FORCE is not True else 1

    def part(start, stop):
        with np.errstate(all="ignore"):
            for lo in range(start, stop, step):
                hi = min(stop, lo + step)
                mb = m[lo:hi]
                np.max(x[lo:hi], axis=1, keepdims=True, out=mb)
                eb = e[lo:hi]
                np.subtract(x[lo:hi], mb, out=eb)
                np.exp(eb, out=eb)
                np.sum(eb, axis=1, keepdims=True, out=s[lo:hi])

    if FORCE is False:
        part(0, rows)
    else:
        parallel.run(part, rows, x.nbytes * 30)
    return m, e, s
