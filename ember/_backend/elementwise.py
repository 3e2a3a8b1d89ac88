"""Long elementwise kernels (a dozen or more NumPy passes, or a transcendental one) run block by block.

Note [Blocked elementwise kernels]: a kernel made of many NumPy passes over a large array streams
every temporary through memory once per pass. Run on cache-sized blocks of the flat array, the
temporaries stay in L2, and the blocks are independent, so they are split across the intra-op
threads (NumPy releases the GIL inside its loops) when the work is worth the hand-off: `cost` says
how many cheap passes the kernel is worth per element (an exp is ~25 of them), so an exp-heavy
kernel goes parallel at a far smaller size than a copy would (parallel._MIN_BYTES). Only C-ordered
operands of one shape are split; any other layout runs as one call, keeping NumPy's (and torch's)
output layout.
"""
import math

import numpy as np

from . import opmath, parallel, special

BLOCK = 1 << 15  # elements per block: 128 KB of float32, so a kernel's few temporaries stay in L2
FORCE = None  # tests: True splits every input into blocks of FORCE_BLOCK, False never splits
FORCE_BLOCK = 7


def run(kernel, out, *ins, cost=1):
    """kernel(out_part, *in_parts) over same-shaped arrays, in blocks across the intra-op threads
    (see Note [Blocked elementwise kernels]); returns out."""
    size = out.size
    block = BLOCK
    if FORCE is not None:
        if not FORCE:
            kernel(out, *ins)
            return out
        block = FORCE_BLOCK
    if size <= block or not out.flags.c_contiguous or not all(a.flags.c_contiguous and a.shape == out.shape
                                                              for a in ins):
        kernel(out, *ins)
        return out
    flat_out = out.reshape(-1)
    flat_ins = [a.reshape(-1) for a in ins]
    count = -(-size // block)

    def body(first, last):
        with np.errstate(all="ignore"):  # NumPy's error state is per thread: pool threads start with warnings on
            for k in range(first, last):
                lo = k * block
                hi = min(size, lo + block)
                kernel(flat_out[lo:hi], *(a[lo:hi] for a in flat_ins))

    parallel.run(body, count, out.nbytes * cost)
    return out


# ---- GELU (torch.nn.functional.gelu) ------------------------------------------------------------
# The tanh form as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh(u)) = sigmoid(2u)
# exactly, and NumPy's exp is 2-3x cheaper than its tanh; the quotient has no cancellation for x < 0.

_C = math.sqrt(2 / math.pi)
_A = 0.044715


def _gelu_tanh_part(out, w):
    np.multiply(w, w, out=out)
    out *= -2 * _C * _A
    out -= 2 * _C
    out *= w  # -2u
    np.exp(out, out=out)
    out += 1
    np.divide(w, out, out=out)


def _gelu_tanh_grad_part(out, g, w):
    """g (s + x 2u'(x) s (1 - s)) with s = sigmoid(2u); 1 - s = sigmoid(-2u) from the same exp (1 - s would
    cancel for large x, and E s would be inf * 0 for very negative x)."""
    t = np.multiply(w, w)
    e = np.multiply(t, -2 * _C * _A)
    e -= 2 * _C
    e *= w
    np.exp(e, out=e)  # E = exp(-2u)
    np.add(e, 1, out=out)
    np.reciprocal(out, out=out)  # s = 1 / (1 + E)
    np.reciprocal(e, out=e)
    e += 1
    np.reciprocal(e, out=e)  # 1 - s = 1 / (1 + 1/E)
    e *= out
    t *= 6 * _C * _A
    t += 2 * _C
    t *= w  # x 2u'(x)
    e *= t
    e += out
    np.multiply(e, g, out=out)


def _gelu_erf_part(out, w):
    np.multiply(special.ndtr(w), w, out=out)


def _gelu_erf_grad_part(out, g, w):
    """g (Phi(x) + x phi(x)), Phi and phi from one exp."""
    cdf, pdf = special.ndtr_pdf(w)
    pdf *= w
    pdf += cdf
    np.multiply(pdf, g, out=out)


# cheap passes per element each kernel is worth (for the thread split): an exp ~25, the float32 ndtr ~60
_GELU_COST = {(False, False): 60, (False, True): 90, (True, False): 30, (True, True): 45}


def gelu(x, tanh):
    """gelu(x) for a float array (half precision computed in float32, returned in x's dtype)."""
    w = opmath(x)
    out = np.empty_like(w)
    run(_gelu_tanh_part if tanh else _gelu_erf_part, out, w, cost=_GELU_COST[tanh, False])
    return out.astype(x.dtype, copy=False)


def gelu_backward(grad, x, tanh):
    """grad * gelu'(x) (half precision computed in float32, returned in grad's dtype)."""
    w = opmath(x)
    g = opmath(grad)
    if g.dtype != w.dtype or g.shape != w.shape:
        g = np.broadcast_to(g.astype(w.dtype, copy=False), w.shape)
    out = np.empty_like(w)
    run(_gelu_tanh_grad_part if tanh else _gelu_erf_grad_part, out, g, w, cost=_GELU_COST[tanh, True])
    return out.astype(grad.dtype, copy=False)
