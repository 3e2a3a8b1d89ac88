"""torch's CPU random streams in NumPy: the mt19937 engine (NumPy's MT19937 bit generator, which
is the same engine) and the transforms torch's CPU kernels apply to its 32-bit outputs.

See Note [Random streams] in ember/random.py. The generator draws a whole block with one NumPy call
(`random_raw`, or the legacy RandomState's masked integers where only the low 24 bits are used) and
the functions here transform it with array arithmetic, in the order torch draws.
"""
import sys

import numpy as np

from .libm import libm

N = 624
_MASK32 = 0xFFFFFFFF
_f32 = np.float32


def init_genrand(seed):
    """The 624-word key of mt19937 seeded by init_genrand with the low 32 bits of seed (as torch)."""
    key = np.empty(N, dtype=np.uint32)
    x = seed & _MASK32
    key[0] = x
    for j in range(1, N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & _MASK32
        key[j] = x
    return key


def seeded_engine(seed, engine=None):
    """A NumPy MT19937 seeded as torch seeds its generator (init_genrand on the low 32 bits of seed, the key
    regenerated before the first output): `engine` reseeded in place, or a new one. NumPy's legacy seeding
    (RandomState.seed of an int) is that same init_genrand, in C: ~4 us where the Python loop above takes ~0.3 ms
    and setting a key through the state dict ~60 us (tests/test_random_streams.py holds the two to each other)."""
    if engine is None:
        engine = np.random.MT19937(0)
    np.random.RandomState(engine).seed(seed & _MASK32)
    return engine


def new_engine(key, pos, engine=None):
    """A NumPy MT19937 whose next output is key[pos] (pos == 624: the key is regenerated first): `engine` set so,
    or a new one (constructing one costs ~140 us, most of it NumPy seeding it from a SeedSequence)."""
    if engine is None:
        engine = np.random.MT19937(0)
    engine.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
    return engine


def engine_state(bg):
    st = bg.state["state"]
    return st["key"].astype(np.uint32), int(st["pos"])


_LOW_WORD = 0 if sys.byteorder == "little" else 1


def uniform24(k):
    """float32 uniforms k * 2**-24 from the low 24 bits k of 32-bit outputs (uint32, or uint64 outputs
    whole): torch's uniform_real for float (exact)."""
    if k.dtype == np.uint64:
        k = np.bitwise_and(k.view(np.uint32)[_LOW_WORD::2], np.uint32(0xFFFFFF))
    x = k.view(np.int32).astype(np.float32)  # below 2**24: the int32 view converts exactly
    x *= _f32(2.0 ** -24)
    return x


def uniform24_list(words):
    """uniform24 of a few outputs given as Python ints (exact in floats; beats NumPy's per-call cost)."""
    return np.array([(w & 0xFFFFFF) * 5.9604644775390625e-08 for w in words], dtype=np.float32)


def u64(r):
    """64-bit draws from pairs of 32-bit outputs r (uint64), the first as the high word (torch's
    random64()); reuses r's memory."""
    hi = r[0::2]
    hi <<= np.uint64(32)
    hi |= r[1::2]
    return hi


# ---- uniform reals ------------------------------------------------------------------------------

def uniform_from_bits(bits, digits, np_dtype):
    """(bits & (2**digits - 1)) * 2**-digits in np_dtype (exact): torch's uniform_real on [0, 1)."""
    mask = (1 << digits) - 1
    x = (bits & bits.dtype.type(mask)).astype(np_dtype)
    x *= np_dtype(2.0 ** -digits)
    return x


# ---- normals: the scalar Box-Muller path (double, one value cached) -----------------------------

def box_muller(u):
    """Box-Muller on 53-bit uniforms taken in pairs (u1 angle, u2 radius), interleaved as torch
    returns them: r*cos(theta), then the value it caches, r*sin(theta)."""
    theta = u[0::2] * (2.0 * np.pi)
    r = np.sqrt(-2.0 * libm("log1p")(-u[1::2]))
    out = np.empty(u.shape[0])
    out[0::2] = r * libm("cos")(theta)
    out[1::2] = r * libm("sin")(theta)
    return out


# ---- normals: the vectorized fill (size >= 16, contiguous) --------------------------------------

_HALF_BLOCK64 = np.dtype((np.void, 64))  # 8 float64 values, moved as one item


def normal_fill_f64(u, mean, std, out):
    """torch's normal_fill_16 over whole blocks of 16 uniforms u (float64, shape (blocks, 16)) into out (the
    same shape): radii from the first 8 of a block, angles from the last 8. The halves are gathered into
    contiguous runs first (half blocks moved as single items), so the libm passes are not strided."""
    b = u.shape[0]
    halves = np.empty((2, b), dtype=_HALF_BLOCK64)
    np.copyto(halves, u.view(_HALF_BLOCK64).T)
    r, theta = halves.view(np.float64).reshape(2, 8 * b)
    np.subtract(1.0, r, out=r)
    r = libm("log")(r)
    r *= -2.0
    np.sqrt(r, out=r)
    theta *= 2.0 * np.pi
    w = np.empty((2, 8 * b))
    np.multiply(r, libm("cos")(theta), out=w[0])
    np.multiply(r, libm("sin")(theta), out=w[1])
    if not (std == 1 and mean == 0):
        w = fma64(w, std, mean)  # GCC contracts `* std + mean`
    np.copyto(out.view(_HALF_BLOCK64), w.reshape(-1).view(_HALF_BLOCK64).reshape(2, b).T)


def fma64(a, b, c):
    """float64 fused multiply-add a * b + c with one rounding: Dekker's exact product, TwoSum, and
    the small remainder rounded to odd before the final addition."""
    a = np.asarray(a, dtype=np.float64)
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(np.float64(b))
    perr = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + _add_round_odd(t, perr)


def _split(x):
    """Veltkamp split of x into two halves of 26 bits each (x == hi + lo exactly)."""
    t = x * 134217729.0
    hi = t - (t - x)
    return hi, x - hi


def _add_round_odd(a, b):
    """a + b in float64 rounded to odd (the last bit set when the sum is inexact)."""
    s = np.asarray(a + b, dtype=np.float64)
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    inexact_even = (err != 0) & ((s.view(np.int64) & 1) == 0)
    if inexact_even.any():
        s[inexact_even] = np.nextafter(s[inexact_even], np.where(err > 0, np.inf, -np.inf)[inexact_even])
    return s


_LOW29 = np.int64((1 << 29) - 1)  # the float64 bits below float32's precision
_HALF29 = np.int64(1 << 28)


def fma32(a, b, c):
    """float32 fused multiply-add a * b + c with one rounding. The product of two floats is exact
    in float64 and the sum rounds once there; rounding that to float32 is then exact unless the
    double landed on a float32 halfway point without being exact (rare): those are redone with the
    sum rounded to odd."""
    s = a.astype(np.float64) if isinstance(a, np.ndarray) else np.asarray(b, dtype=np.float64) * a
    if isinstance(a, np.ndarray):
        s *= b
    s += c
    low = s.view(np.int64) & _LOW29
    tie = low == _HALF29
    if tie.any():
        a2 = np.broadcast_to(a, s.shape)[tie]
        b2 = np.broadcast_to(b, s.shape)[tie]
        c2 = np.broadcast_to(c, s.shape)[tie]
        s[tie] = _add_round_odd(np.multiply(a2, b2, dtype=np.float64), np.asarray(c2, dtype=np.float64))
    return s.astype(np.float32)
