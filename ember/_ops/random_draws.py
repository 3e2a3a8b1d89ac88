"""Drawing kernels: torch's CPU samplers on an ember Generator, array in, array out.

Each function consumes the generator's mt19937 stream exactly as torch's CPU kernel for the same
call does (Note [Random streams] in ember/random.py): the same 32- or 64-bit draws, in the
same element order, through the same transforms, with the same per-size code paths.
Values come back flat, in torch's iteration order; `place` puts them into a tensor's layout.
"""
import math

import numpy as np

from .. import _dtype as D
from .._backend import mt19937 as MT
from .._backend import jit, normal_avx2
from .._backend.libm import libm
from .._backend import parallel

_f32 = np.float32
_U64 = 1 << 64
DIGITS = {D.float16: 11, D.bfloat16: 8, D.float32: 24, D.float64: 53}


# ---- layout: torch's TensorIterator visits a nullary op's output in memory order ----------------

def _iteration_perm(x):
    """x's dims ordered from the largest stride to the smallest (size-1 dims first)."""
    return sorted(range(x.ndim), key=lambda i: -abs(x.strides[i]) if x.shape[i] > 1 else 1 << 62)


def place(x, flat):
    """An array shaped like x holding `flat`, values in torch's iteration order over x."""
    if x.flags.c_contiguous or x.ndim < 2:
        return flat.reshape(x.shape)
    perm = _iteration_perm(x)
    out = np.empty_like(x, dtype=flat.dtype)  # (x's layout when x is dense, as torch's *_like)
    view = out.transpose(perm)
    view[...] = flat.reshape(view.shape)
    return out


def in_order(x, a):
    """The elements of a (shaped like x) flattened in torch's iteration order over x."""
    if x.flags.c_contiguous or x.ndim < 2:
        return a.ravel()
    return a.transpose(_iteration_perm(x)).ravel()


# ---- uniform reals ------------------------------------------------------------------------------

def uniform(g, n, d, low=0.0, high=1.0):
    """uniform_(low, high) over n elements of real dtype d: float64 from 53 bits of a 64-bit draw,
    the others from 24 bits of a 32-bit draw in float32, then x * (high - low) + low as one FMA."""
    if d is D.float64:
        x = MT.uniform_from_bits(g._u64(n), 53, np.float64)
        if low == 0 and high == 1:
            return x
        return MT.fma64(x, float(high) - float(low), float(low))
    x = g._uniform24(n)
    if not (low == 0 and high == 1):
        lo = _f32(low)
        x = MT.fma32(x, _f32(high) - lo, lo)
    if d is D.float32:
        return x
    out = x.astype(d.np)
    hi = np.asarray(high).astype(d.np)
    out[out >= hi] = np.asarray(low).astype(d.np)  # rounding up to `high` yields `low`: [low, high)
    return out


def uniform_complex(g, n, d, low=0.0, high=1.0):
    """Complex dtypes fill their real view: 2n reals, real and imaginary parts interleaved."""
    r = uniform(g, 2 * n, d.to_real(), low, high)
    return r.view(d.np)


# ---- normals ------------------------------------------------------------------------------------

def scalar_normals(g, n, dtype=np.float64):
    """n standard normals from the scalar path: Box-Muller pairs of doubles, the second value of a
    pair cached in the generator for the next draw (torch's next_double_normal_sample); returned
    as dtype (rounded from the doubles)."""
    v = []
    if n and g._normal_double is not None:
        v.append(g._normal_double)
        g._normal_double = None
    m = n - len(v)
    if not m:
        return np.array(v, dtype=dtype)
    pairs = (m + 1) // 2
    if pairs <= 8:  # a few values: Python floats beat NumPy's per-call overhead (the same libm)
        z = g._memo_take("box_muller", 4 * pairs, 4, 2, _box_muller_block)
        if z is None:
            _box_muller_scalar(g._raw_list(4 * pairs), v)
        elif not v and not m % 2:  # the values are the memo's, all of them (astype copies the slice)
            return z.astype(dtype)
        else:
            v += z.tolist()
        if m % 2:
            g._normal_double = v.pop()
        return np.array(v, dtype=dtype)
    z = MT.box_muller(MT.uniform_from_bits(g._u64(2 * pairs), 53, np.float64))
    if m % 2:
        g._normal_double = float(z[-1])
    z = np.concatenate((v, z[:m])) if v else z[:m]
    return z.astype(dtype, copy=False)


def _box_muller_block(words):
    """Box-Muller pairs of a run of outputs (four per pair) as float64, as _box_muller_scalar makes them
    (NumPy's log1p/sqrt/cos/sin are the C library's, as math's)."""
    return MT.box_muller(MT.uniform_from_bits(MT.u64(words.copy()), 53, np.float64))


def _box_muller_scalar(words, out):
    """MT.box_muller on a short list of 32-bit outputs (four per pair) in Python floats, appended
    to out. A 53-bit uniform is ((hi & (2**21 - 1)) * 2**32 + lo) * 2**-53, exact in floats; its
    power-of-two scale folds exactly into the constant it is multiplied by (2*pi, then -1, then -2)."""
    it = iter(words)
    for a, b, c, d in zip(it, it, it, it):
        theta = ((a & 0x1FFFFF) * 4294967296.0 + b) * _TWO_PI_2M53
        r = _sqrt(_log1p(((c & 0x1FFFFF) * 4294967296.0 + d) * _M2M53) * -2.0)
        out += (r * _cos(theta), r * _sin(theta))


_sqrt, _log1p, _cos, _sin = math.sqrt, math.log1p, math.cos, math.sin
_TWO_PI_2M53 = 2.0 * math.pi * 2.0 ** -53  # 2 * pi * (x * 2**-53) == x * (2 * pi * 2**-53): scaling by 2**-53 is exact
_M2M53 = -(2.0 ** -53)


def normal(g, n, d, contiguous, mean=0.0, std=1.0):
    """normal_(mean, std) over n elements of real dtype d. Contiguous outputs of 16 or more elements
    take torch's vectorized fill (uniforms in blocks of 16, Box-Muller within a block, the last
    partial block redrawn as a whole block at the end); the rest the scalar cached path."""
    if n >= 16 and contiguous:
        if d is D.float64:
            return _blocks(g, n, n, lambda k: MT.uniform_from_bits(g._u64(k), 53, np.float64), np.float64,
                           lambda u, o: MT.normal_fill_f64(u, mean, std, o), np.float64)
        # float32, and the half types through the same float kernel, whose first pass draws only
        # the whole blocks (float32 draws all n, then the last block again); the kernel takes the
        # low 24 bits of the draws
        first = n if d is D.float32 else n // 16 * 16
        kernels = jit.load("normal_jit") if n >= _JIT_MIN else None
        fill = (kernels or normal_avx2).normal_fill
        out = _blocks(g, n, first, g._low24, np.uint32, lambda k, o: fill(k, mean, std, o), np.float32,
                      _JIT_FILL_PASSES if kernels else _FILL_PASSES)
        return out if d is D.float32 else out.astype(d.np)
    if mean == 0 and std == 1:
        return scalar_normals(g, n, d.np)
    z = MT.fma64(scalar_normals(g, n), float(std), float(mean))
    return z if d is D.float64 else z.astype(d.np)


_CHUNK = 1 << 17  # draws per piece of the fill's producer (Note [Streamed work] in ember/_backend/parallel.py)
# The fill makes ~100 NumPy passes over each element where the thread split's threshold (parallel._MIN_BYTES)
# is sized for one pass: its work is given as that of this many passes, so any fill of two or more pieces is
# split (randn(1_000_000) float32, 4 MB, stayed on one thread below the 4 MB threshold).
_FILL_PASSES = 100
# The compiled fill (Note [JIT kernels], ember/_backend/normal_jit.py) costs ~2.6 ms per 1M float32 where the NumPy
# one costs ~13: its work counts as this many passes. From _JIT_MIN elements on, a float32 fill asks for it (so
# that small draws never import numba).
_JIT_FILL_PASSES = 20
_JIT_MIN = 1 << 12


def _blocks(g, n, first, draw, drawn_dtype, fill, dtype, passes=None):
    """The vectorized fill: `first` draws (draw(k): k values of drawn_dtype), Box-Muller on each whole
    block of 16 (fill(draws, out), both shaped (blocks, 16)), then 16 fresh draws for the last 16
    positions when n is not a multiple of 16. The draws come in pieces on this thread while the
    intra-op threads fill what was drawn (blocks are independent)."""
    full = n // 16 * 16
    out = np.empty(n, dtype=dtype)
    drawn = np.empty(full, dtype=drawn_dtype)  # the draws for out[:full]

    def produce(a, b):
        drawn[a:b] = draw(b - a)

    def consume(a, b):
        fill(drawn[a:b].reshape(-1, 16), out[a:b].reshape(-1, 16))

    parallel.stream(full, _CHUNK, produce, consume, full * out.itemsize * (passes or _FILL_PASSES), align=16)
    if first > full:
        draw(first - full)
    if n % 16:
        fill(draw(16).reshape(1, 16), out[n - 16:].reshape(1, 16))
    return out


# ---- integers -----------------------------------------------------------------------------------

def from_to(g, n, span, base, d):
    """random_(from, to): (draw % span) + base, wrapping like int64, then cast to d. Spans of 2**28
    or more take 64-bit draws (torch 2.13 keeps the modulo bias small), smaller ones 32-bit draws."""
    if span >= 1 << 28:
        v = g._u64(n)
    else:
        v = g._raw(n)
    v %= np.uint64(span)
    v += np.uint64(base % _U64)
    return _cast_int64(v.view(np.int64), d)


def full_range(g, n, d):
    """random_(from=-2**63, to=None): every 64-bit value."""
    return _cast_int64(g._u64(n).view(np.int64), d)


def default_range(g, n, d):
    """random_() with no bounds: 64-bit draws for int64/double, else 32-bit, reduced modulo
    2**digits + 1 (floating types), max + 1 (integer types) or 2 (bool)."""
    if d is D.float64 or d is D.int64:
        v = g._u64(n)
    else:
        v = g._raw(n)
    if d is D.bool:
        span = 2
    elif d.category == D.FLOAT:
        span = (1 << DIGITS[d]) + 1
    else:
        span = int(np.iinfo(d.np).max) + 1
    v %= np.uint64(span)
    return _cast_int64(v.view(np.int64), d)


def _cast_int64(v, d):
    if d is D.int64:
        return v
    if d is D.bool:
        return v != 0
    return v.astype(d.np)


def randperm(g, n):
    """Fisher-Yates as torch's randperm_cpu: swap i with i + draw % (n - i), one 32-bit draw each."""
    if n < 2:
        return np.arange(n, dtype=np.int64)
    z = g._raw(n - 1).view(np.int64)
    z %= np.arange(n, 1, -1, dtype=np.int64)
    z += np.arange(n - 1, dtype=np.int64)
    return _swaps_applied(z, n)


def _swaps_applied(z, n):
    """arange(n) after swapping positions i and z[i] (z[i] >= i) for i = 0, 1, ..., n - 2, without a
    loop: step i takes the value position z[i] holds then, which is the value step p moved there for
    the last earlier step p with z[p] == z[i] (else z[i] itself), and step p moves the value position
    p holds then, found the same way; those chains are followed by pointer doubling."""
    m = n - 1
    steps = np.arange(m, dtype=np.int64)
    if n <= 1 << 16:  # the steps grouped by target, each group in step order: a 16-bit radix sort
        order = np.argsort(z.astype(np.uint16), kind="stable")
    else:  # (target, step) pairs sorted (n < 2**31: no overflow)
        keys = z * m
        keys += steps
        keys.sort()
        order = keys % m
    target = z[order]
    same = target[1:] == target[:-1]
    prev = np.empty(m, dtype=np.int64)  # the previous step with the same target
    prev[order[0]] = -1
    prev[order[1:]] = np.where(same, order[:-1], -1)
    ends = np.flatnonzero(~same)
    last = np.full(n, -1, dtype=np.int64)  # the last step targeting each position
    last[target[ends]] = order[ends]
    last[target[-1]] = order[-1]
    # the last step before p that targeted position p (targets are >= their step: the last one, or
    # the one before it when that is p itself)
    before = np.where(last[:m] == steps, prev, last[:m])
    origin = np.where(before < 0, steps, before)  # what step p moves: origin's own position
    while True:
        nxt = origin[origin]
        if np.array_equal(nxt, origin):
            break
        origin = nxt
    out = np.empty(n, dtype=np.int64)
    out[:m] = np.where(prev >= 0, origin[prev], z)
    out[m] = origin[last[m]] if last[m] >= 0 else m
    return out


# ---- per-element transforms of 53-bit uniforms (double distributions) ---------------------------

def uniform_f64(g, n):
    return MT.uniform_from_bits(g._u64(n), 53, np.float64)


def bernoulli(g, p, n):
    """n Bernoulli draws u < p; p a float (double compare) or an array of probabilities (float64 p
    compares in double, other dtypes in float with a 24-bit uniform), broadcast to n elements."""
    if isinstance(p, np.ndarray) and p.dtype != np.float64:
        return g._uniform24(n) < p.astype(np.float32, copy=False)
    return uniform_f64(g, n) < p


def exponential(g, n, lambd):
    return (-1.0 / lambd) * libm("log1p")(-uniform_f64(g, n))


def geometric(g, n, p):
    return np.ceil(libm("log")(uniform_f64(g, n)) / math.log(1.0 - p))


def cauchy(g, n, median, sigma):
    return median + sigma * libm("tan")(np.pi * (uniform_f64(g, n) - 0.5))


def log_normal(g, n, mean, std):
    return libm("exp")(MT.fma64(scalar_normals(g, n), float(std), float(mean)))


def multinomial_with_replacement(g, p, n):
    """torch's kernel, row by row: the running sum in p's dtype (float for half types) divided by
    the total, the last entry set to 1, then one 53-bit uniform per sample located by binary search
    (the first entry not below it)."""
    acc = np.float32 if p.dtype.itemsize == 2 else p.dtype
    cum = np.cumsum(p.astype(acc), axis=1, dtype=acc)
    cum /= cum[:, -1:]
    cum[:, -1] = 1
    u = uniform_f64(g, p.shape[0] * n).reshape(p.shape[0], n)
    out = np.empty((p.shape[0], n), dtype=np.int64)
    for r in range(p.shape[0]):
        out[r] = np.searchsorted(cum[r].astype(np.float64), u[r], side="left")
    return out


def poisson(g, lam):
    """torch's sample_poisson per element (lam: float64 values in iteration order): Hormann's
    transformed rejection for lam >= 10, the product of uniforms below."""
    src = Stream(g)
    out = np.empty(lam.shape[0], dtype=np.int64)
    for i, lm in enumerate(lam.tolist()):
        out[i] = _poisson_one(lm, src.uniform)
    src.close()
    return out


def standard_gamma(g, alpha, single):
    """torch's sample_gamma per element (Marsaglia-Tsang, boosted below alpha = 1) with double
    uniforms and the generator's cached double normals; `single`: alpha is float32, whose
    shape arithmetic torch does in float. With ember[jit] the loop is compiled (_standard_gamma_compiled)."""
    kernels = jit.load("gamma_jit") if alpha.shape[0] >= _GAMMA_JIT_MIN else None
    if kernels is not None:
        return _standard_gamma_compiled(kernels, g, alpha, single)
    src = Stream(g)
    out = np.empty(alpha.shape[0], dtype=np.float64)
    for i, a in enumerate(alpha.tolist()):
        out[i] = _gamma_one(a, src, single)
    src.close()
    return out


# A Python draw costs ~17 us an element: from this many elements on, standard_gamma asks for the compiled loop (so
# that a few draws never import numba); uniforms drawn ahead per element left (a draw takes ~2.2 on average)
_GAMMA_JIT_MIN = 64
_GAMMA_AHEAD = 3


def _standard_gamma_compiled(kernels, g, alpha, single):
    """standard_gamma by gamma_jit.gamma_fill: uniforms drawn ahead in blocks (about 3 an element; more when a block
    runs out), then the engine put back where the stream is, just after the last uniform used, as Stream.close."""
    n = alpha.shape[0]
    out = np.empty(n, dtype=np.float64)
    mark = g._snapshot()
    cached = g._normal_double
    state = np.array([0.0, 0.0, cached or 0.0, 0.0 if cached is None else 1.0])
    used = 0
    while True:
        u = uniform_f64(g, _GAMMA_AHEAD * (n - int(state[0])) + 64)
        kernels.gamma_fill(alpha, single, out, state, u)
        used += int(state[1])
        if state[0] == n:
            break
        state[1] = 0.0
        g._restore(mark)  # the rest of the block is drawn again, from the element that ran out
        g._u64(used)
    g._restore(mark)
    g._u64(used)
    g._normal_double = state[2] if state[3] else None
    return out


class Stream:
    """Per-element draws for rejection samplers: 64-bit outputs fetched ahead in blocks, 53-bit
    uniforms and Box-Muller normals (sharing the generator's cached normal) taken one at a time;
    close() rewinds the engine to just after the last output used."""

    def __init__(self, g):
        self.g = g
        self.buf = []
        self.i = 0
        self.mark = None

    def uniform(self):
        if self.i == len(self.buf):
            self.mark = self.g._snapshot()
            self.buf = uniform_f64(self.g, 256).tolist()
            self.i = 0
        self.i += 1
        return self.buf[self.i - 1]

    def normal(self):
        g = self.g
        if g._normal_double is not None:
            z = g._normal_double
            g._normal_double = None
            return z
        u1 = self.uniform()
        u2 = self.uniform()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        g._normal_double = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self):
        if self.mark is not None:
            self.g._restore(self.mark)
            self.g._u64(self.i)


def _gamma_one(alpha, src, single):
    f = np.float32 if single else float
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= (1.0 - src.uniform()) ** float(f(1.0) / f(alpha))
        alpha = f(alpha) + f(1.0)
    d = float(f(alpha) - f(np.float32(1.0) / np.float32(3.0)))
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = src.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - src.uniform()
        xx = x * x
        if u < 1.0 - _C0331 * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


_C0331 = float(np.float32(0.0331))


def _poisson_one(lam, uniform):
    if lam >= 10:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = uniform() - 0.5
            v = uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= \
                    -lam + k * loglam - math.lgamma(k + 1.0):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    x = 0
    prod = 1.0
    while True:
        prod *= uniform()
        if prod > enlam:
            x += 1
        else:
            return x


def binomial(g, count, prob, single):
    """torch's sample_binomial per element (count, prob: float64 values in C order; `single`: the
    tensors are float32, whose arithmetic torch does in float): BTRS when the smaller of
    count * p and count * (1 - p) is at least 10, inversion by geometric jumps below."""
    f = np.float32 if single else np.float64
    src = Stream(g)
    out = np.empty(count.shape[0], dtype=np.float64)
    for i, (n, p) in enumerate(zip(count.tolist(), prob.tolist())):
        out[i] = _binomial_one(f(n), f(p), src, f)
    src.close()
    return out


def _binomial_one(n, p, src, f):
    if n <= 0 or p <= 0:
        return 0.0
    if p >= 1:
        return float(n)
    if p <= 0.5:
        return float(_btrs(n, p, src, f) if n * p >= 10 else _inversion(n, p, src, f))
    q = f(f(1) - p)
    k = _btrs(n, q, src, f) if n * q >= 10 else _inversion(n, q, src, f)
    return float(f(n - k))


def _inversion(n, p, src, f):
    logprob = float(np.log1p(-p))  # in the tensor's precision (log1pf for float)
    geom_sum = 0.0
    count = f(0)
    while True:
        geom_sum += math.ceil(math.log(src.uniform()) / logprob)
        if geom_sum > n:
            return count
        count = f(count + f(1))


_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
         0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k):
    if k <= 9:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(n, p, src, f):
    """Hormann's BTRS with torch's constants; mixed float/double arithmetic as torch's C++."""
    stddev = float(np.sqrt(n * p * (f(1) - p)))  # sqrtf for float tensors
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(p)
    c = float(n * p) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(p / (f(1) - p))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(float((n + f(1)) * p))
    nf = float(n)
    while True:
        u = src.uniform() - 0.5
        v = src.uniform()
        us = 0.5 - abs(u)
        k = f(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        kf = float(k)
        upper = ((m + 0.5) * math.log((m + 1) / (r * (nf - m + 1)))
                 + float(n + f(1)) * math.log((nf - m + 1) / float(n - k + f(1)))
                 + (kf + 0.5) * math.log(r * float(n - k + f(1)) / float(k + f(1)))
                 + _stirling_tail(float(m)) + _stirling_tail(nf - m) - _stirling_tail(kf) - _stirling_tail(float(n - k)))
        if v <= upper:
            return k
