"""torch.random: the Generator, the default generator, seeding and RNG state, fork_rng.

Note [Random streams]: a Generator is torch's CPU generator, bit for bit. It holds a 32-bit
Mersenne Twister (NumPy's MT19937 bit generator is the same engine; torch seeds it with
init_genrand on the low 32 bits of the seed) and the cached second values of Box-Muller pairs,
as torch's CPUGeneratorImpl; get_state/set_state exchange torch's CPUGeneratorImplState bytes,
so a state saved by torch restores the same stream in ember and back. The samplers
(ember/_ops/random_draws.py, transforms in ember/_backend/mt19937.py, the AVX2 normal kernel
in ember/_backend/normal_avx2.py) consume the stream as torch's CPU kernels do: 24 bits of a
32-bit draw for float32/half uniforms, 53 bits of a 64-bit draw (two outputs, the first the high
word) for doubles; normals by the scalar Box-Muller path
(doubles, one value cached across calls) below 16 elements or for non-contiguous outputs, else
by the vectorized fill in blocks of 16 (the last partial block redrawn), which for float32 and
the half types is torch's AVX2 kernel, its polynomial log/sincos and FMAs emulated exactly;
integer ranges of 2**28 or more take 64-bit draws; elements are visited in memory order.
Whole blocks are drawn with one NumPy call; runs of small draws are served from a block of
outputs drawn ahead, the engine's state kept where the block starts, so reading the state
rewinds the engine to the stream's position first (Generator._settle); a loop of one kind of small
draw takes its values from that block transformed once (Generator._memo_take). What depends on the
machine, as in torch: the AVX2 normal kernel and the fused multiply-add of bounded uniform_ are
what torch runs on AVX2 and AVX-512 CPUs (with ATEN_CPU_CAPABILITY=default torch gives other
float32 normals and bounded uniforms); torch's bernoulli_(float p) (so dropout) uses MKL's own stream on Intel CPUs, ember
the generic kernel torch runs elsewhere; float64 transcendental functions give the C library's bits
(ember/_backend/libm.py: NumPy's SIMD log1p/log/exp/tan differ from glibc's on AVX-512 CPUs, so there
they are computed per element). Threads never change torch's CPU streams.
"""
import contextlib
import os
import struct
import threading

import numpy as np

from . import _dtype as D
from ._backend import mt19937 as MT
from ._device import as_device
from ._tensor import Tensor

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "fork_rng", "thread_safe_generator"]

_make = Tensor._make

_DEFAULT_SEED = 67280421310721  # torch's default CPU seed: unseeded programs are reproducible too
_U64 = 1 << 64

# CPUGeneratorImplState: the legacy POD (seed, left, seeded, next, 624 64-bit words, normal_x/y/rho,
# normal_is_valid) then the float cache and its flag, with C struct padding.
_HEAD = struct.Struct("<QiiQ")
_TAIL = struct.Struct("<dddi4xf?3x")
_STATE_BYTES = _HEAD.size + MT.N * 8 + _TAIL.size


_AHEAD = 8192  # outputs drawn ahead at a time for small draws
_SMALLS_BEFORE_AHEAD = 16  # ... once this many small draws came since the state was last read or set
_NONE_AHEAD = np.empty(0, dtype=np.uint64)
_RUN_BEFORE_MEMO = 32  # small draws of one kind in a row before their values are memoized (Generator._memo_take)
_MEMO_MIN = 256  # outputs a memo covers at least


# ---- Generator ------------------------------------------------------------------------

class Generator:
    """torch.Generator: torch's CPU mt19937 generator (see Note [Random streams])."""
    __slots__ = ("_engine", "_seed", "_next624", "_normal_double", "_normal_float", "_device", "_ahead", "_ahead_list",
                 "_at", "_mark", "_smalls", "_memo", "_memo_next", "_masked", "__weakref__")

    def __init__(self, device=None):
        if device is None:
            device = "cpu"
        try:
            self._device = as_device(device)
        except AssertionError:
            raise RuntimeError("Cannot get CUDA generator without ATen_cuda library. ember has only the CPU "
                               "generator.") from None
        self._reseed(_DEFAULT_SEED)

    def _reseed(self, seed):
        self._seed = seed
        # the engine object is the generator's own (only its _masked RandomState, dropped by _set_engine, shares it)
        self._set_engine(MT.seeded_engine(seed, getattr(self, "_engine", None)))
        self._next624 = 0  # torch's `next` field while the key awaits regeneration (0 right after seeding)
        self._normal_double = None
        self._normal_float = None

    def _set_engine(self, engine):
        self._engine = engine
        self._masked = None  # a legacy RandomState on the engine (its masked draws: the low bits of outputs)
        self._ahead = _NONE_AHEAD  # outputs drawn ahead for small draws, used from _at on
        self._ahead_list = []  # the same as Python ints, or None until needed (small draws slice it: cheaper than
        # NumPy per call)
        self._memo = {}  # kind of draw -> (start, values): a transform of the block drawn ahead (see _memo_take)
        self._memo_next = {}  # kind of draw -> (where the last such draw ended, how many came in a row)
        self._at = 0
        self._mark = None  # the engine's state where _ahead starts
        self._smalls = 0  # small draws since the engine was last set

    # the raw draws every sampler goes through. Small draws are served from a block of outputs
    # drawn ahead (one NumPy call per _AHEAD outputs instead of one per draw); the engine then runs
    # ahead of the stream, and _settle() puts it back where the stream is (for the state).
    def _take(self, n):
        """The next n outputs as uint64 (each below 2**32). None drawn leaves the state as it is (torch's
        `next` field stays 0 after seeding until a number is drawn)."""
        if not n:
            return np.empty(0, dtype=np.uint64)
        self._next624 = MT.N
        at = self._at
        end = self._ahead.shape[0]
        if at == end:
            return self._engine.random_raw(n)
        if at + n <= end:
            self._at = at + n
            return self._ahead[at:at + n].copy()
        self._at = end
        return np.concatenate((self._ahead[at:], self._engine.random_raw(n - (end - at))))

    def _raw_list(self, n):
        """The next n outputs as Python ints (small draws)."""
        if not n:
            return []
        at = self._at
        if at + n > self._ahead.shape[0]:
            return self._raw_list_refill(n)
        self._at = at + n
        self._next624 = MT.N
        if self._ahead_list is None:  # made on the first small raw draw from the block
            self._ahead_list = self._ahead.tolist()
        return self._ahead_list[at:at + n]

    def _raw_list_refill(self, n):
        """_raw_list past the block drawn ahead: the rest of it, then a new block (from the 16th
        small draw on since the state was last read or set)."""
        self._smalls += 1
        if n > _AHEAD or self._smalls < _SMALLS_BEFORE_AHEAD:  # drawing ahead pays off for runs of them
            return self._take(n).tolist()
        head = self._ahead[self._at:].tolist()
        old = self._ahead.shape[0]
        self._mark = MT.engine_state(self._engine)  # where the new block starts (costs ~40 us)
        self._ahead = self._engine.random_raw(_AHEAD)
        self._ahead_list = None  # until a small raw draw needs it: a loop of memoized draws never does
        n -= len(head)
        self._at = n
        self._memo = {}
        self._memo_next = {kind: (n, run) for kind, (end, run) in self._memo_next.items() if end == old}
        self._next624 = MT.N
        return head + self._ahead[:n].tolist() if head else self._ahead[:n].tolist()

    def _memo_take(self, kind, n, group, per, build):
        """The values of the next n outputs (whole groups of `group`) through a transform memoized over part
        of the block drawn ahead, or None (the caller draws them itself): build(outputs) gives `per` values
        for each group, in order. A loop of small draws pays NumPy's per-call cost once per memo instead of
        once per draw: a memo is made from the _RUN_BEFORE_MEMO-th draw of this kind in a row (each starting
        where the last ended), over outputs for twice the run so far (so its cost stays in proportion to the
        draws that came, when the run breaks), and serves while the draws keep to its grouping."""
        at = self._at
        end = at + n
        block = self._ahead.shape[0]
        last_end, run = self._memo_next.get(kind, (-1, 0))
        run = run + 1 if last_end == at else 1
        if end > block:  # the draw refills the block: the run goes on in the new one (_raw_list_refill)
            self._memo_next[kind] = (block, run)
            return None
        self._memo_next[kind] = (end, run)
        memo = self._memo.get(kind)
        if memo is None or not (memo[0] <= at and end <= memo[2] and (at - memo[0]) % group == 0):
            if run < _RUN_BEFORE_MEMO:
                return None
            stop = at + min(block - at, max(run * n, _MEMO_MIN)) // group * group
            memo = self._memo[kind] = (at, build(self._ahead[at:stop]), stop)
        self._at = end
        self._next624 = MT.N
        i = (at - memo[0]) // group * per
        return memo[1][i:i + n // group * per]

    def _settle(self):
        """Rewind the engine to the stream's position: outputs drawn ahead and not used are dropped."""
        if self._at < self._ahead.shape[0]:
            key, pos = self._mark
            engine = MT.new_engine(key, pos, self._engine)
            engine.random_raw(self._at, output=False)
            self._set_engine(engine)
        elif self._ahead.shape[0]:
            self._set_engine(self._engine)

    def _low24(self, n):
        """The low 24 bits of the next n outputs as uint32 (torch's float32 uniform numerators): drawn so
        by the legacy RandomState's masked integers (mask 2**24 - 1 never rejects), half the memory of
        _take's uint64."""
        if self._at < self._ahead.shape[0]:
            return (self._take(n) & np.uint64(0xFFFFFF)).astype(np.uint32)
        if self._masked is None:
            self._masked = np.random.RandomState(self._engine)
        self._next624 = MT.N
        return self._masked.randint(0, 1 << 24, n, dtype=np.uint32)

    def _u32(self, n):
        return self._take(n).astype(np.uint32)

    def _raw(self, n):
        """n outputs as uint64 (each below 2**32)."""
        return self._take(n)

    def _uniform24(self, n):
        """n float32 uniforms, one output each (24 bits)."""
        if n <= 32:
            u = self._memo_take("uniform24", n, 1, 1, MT.uniform24)
            return MT.uniform24_list(self._raw_list(n)) if u is None else u.copy()
        return MT.uniform24(self._low24(n))

    def _u64(self, n):
        return MT.u64(self._take(2 * n))

    def _snapshot(self):
        self._settle()
        return MT.engine_state(self._engine), self._next624

    def _restore(self, snap):
        (key, pos), self._next624 = snap
        self._set_engine(MT.new_engine(key, pos, self._engine))

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        self._reseed(_parse_seed(seed))
        return self

    def seed(self):
        """Seed from the OS's entropy and return the seed (as torch.Generator.seed)."""
        s = int.from_bytes(os.urandom(8), "little")
        self._reseed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """torch's CPUGeneratorImplState as a uint8 tensor."""
        self._settle()
        key, pos = MT.engine_state(self._engine)
        left = MT.N + 1 - pos
        nxt = self._next624 if pos == MT.N else pos
        head = _HEAD.pack(self._seed, left, 1, nxt)
        dbl = self._normal_double
        flt = self._normal_float
        tail = _TAIL.pack(0.0, 0.0 if dbl is None else dbl, 0.0, dbl is not None,
                          0.0 if flt is None else flt, flt is not None)
        raw = head + key.astype("<u8").tobytes() + tail
        return _make(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state, /):
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = new_state._data.tobytes()
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {len(raw)}")
        seed, left, seeded, nxt = _HEAD.unpack_from(raw, 0)
        words = np.frombuffer(raw, dtype="<u8", count=MT.N, offset=_HEAD.size)
        _, normal_y, _, normal_valid, flt, flt_valid = _TAIL.unpack_from(raw, _HEAD.size + MT.N * 8)
        nxt &= 0xFFFFFFFF
        if not seeded or not 0 < left <= MT.N or nxt > MT.N:
            raise RuntimeError("Invalid mt19937 state")
        # torch reads key[next] until `left` runs out; saved states always have next == 625 - left
        pos = MT.N if left == 1 else nxt
        self._set_engine(MT.new_engine(words.astype(np.uint32), pos, self._engine))
        self._seed = seed
        self._next624 = nxt
        self._normal_double = normal_y if normal_valid else None
        self._normal_float = float(np.float32(flt)) if flt_valid else None
        return self

    def clone_state(self):
        g = Generator(self._device)
        return g.set_state(self.get_state())

    def __reduce__(self):
        return (_rebuild_generator, (str(self._device), self.get_state()._data.tobytes()))

    def __repr__(self):
        return f"<torch._C.Generator object at {hex(id(self))}>"


def _rebuild_generator(device, raw):
    g = Generator(device)
    return g.set_state(_make(np.frombuffer(raw, dtype=np.uint8).copy()))


def _parse_seed(seed):
    """torch accepts any integer in [-2**63, 2**64) and keeps it modulo 2**64."""
    if isinstance(seed, (float, complex, str)) or not hasattr(seed, "__index__"):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    s = int(seed.__index__())
    if not -(1 << 63) <= s < _U64:
        raise ValueError("Overflow when unpacking long long")
    return s % _U64


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator; returns it. Like torch, int(seed) first (so 2.7 -> 2)."""
    return default_generator.manual_seed(int(seed))


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    if not isinstance(new_state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Restore the default generator's state on exit (ember has only the CPU generator)."""
    if device_type == "meta" or not enabled:
        yield
        return
    if devices:
        raise AssertionError("Torch not compiled with CUDA enabled")
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


_thread_local = threading.local()


def thread_safe_generator():
    """The generator a DataLoader thread worker registered for its thread, else None
    (None makes ops use the default generator)."""
    return getattr(_thread_local, "generator", None)
