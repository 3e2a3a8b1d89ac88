"""torch.random: the Generator, the default generator, seeding and RNG state, fork_rng.

Note [Random streams]: a Generator wraps NumPy's PCG64 bit generator, and ops draw with
NumPy's algorithms (ziggurat normals, ...). The same seed gives the same numbers in ember
on every run and every machine, but never the numbers torch draws: torch uses mt19937 with
its own transforms, which we do not reproduce. Distributions, shapes, dtypes and errors
follow torch. The samplers themselves are ops in ember/_ops/random.py.
"""
import contextlib
import os
import threading

import numpy as np

from . import _dtype as D
from ._device import as_device
from ._tensor import Tensor

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "fork_rng", "thread_safe_generator"]

_make = Tensor._make

_DEFAULT_SEED = 67280421310721  # torch's default CPU seed: unseeded programs are reproducible too
_STATE_MAGIC = b"emberPCG"
_U64 = 1 << 64


# ---- Generator ------------------------------------------------------------------------

class Generator:
    """torch.Generator on NumPy's PCG64 (see Note [Random streams])."""
    __slots__ = ("_np", "_seed", "_device", "__weakref__")

    def __init__(self, device="cpu"):
        try:
            self._device = as_device(device)
        except AssertionError:
            raise RuntimeError("Cannot get CUDA generator without ATen_cuda library. ember has only the CPU "
                               "generator.") from None
        self._reseed(_DEFAULT_SEED)

    def _reseed(self, seed):
        self._seed = seed
        self._np = np.random.Generator(np.random.PCG64(seed))

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
        """The state as a uint8 tensor: magic, seed, PCG64 state/inc, buffered uint32."""
        st = self._np.bit_generator.state
        parts = [_STATE_MAGIC, self._seed.to_bytes(8, "little"), st["state"]["state"].to_bytes(16, "little"),
                 st["state"]["inc"].to_bytes(16, "little"), int(st["has_uint32"]).to_bytes(8, "little"),
                 int(st["uinteger"]).to_bytes(8, "little")]
        return _make(np.frombuffer(b"".join(parts), dtype=np.uint8).copy())

    def set_state(self, new_state):
        if not isinstance(new_state, Tensor) or new_state._dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = new_state._data.tobytes()
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {len(raw)}")
        if raw[:8] != _STATE_MAGIC:
            raise RuntimeError("Invalid RNG state: not a state saved by ember's Generator.get_state()")
        seed = int.from_bytes(raw[8:16], "little")
        bitgen = np.random.PCG64()
        bitgen.state = {"bit_generator": "PCG64",
                        "state": {"state": int.from_bytes(raw[16:32], "little"),
                                  "inc": int.from_bytes(raw[32:48], "little")},
                        "has_uint32": int.from_bytes(raw[48:56], "little"),
                        "uinteger": int.from_bytes(raw[56:64], "little")}
        self._seed = seed
        self._np = np.random.Generator(bitgen)
        return self

    def clone_state(self):
        g = Generator(self._device)
        return g.set_state(self.get_state())

    def __reduce__(self):
        return (_rebuild_generator, (str(self._device), self.get_state()._data.tobytes()))

    def __repr__(self):
        return f"<torch._C.Generator object at {hex(id(self))}>"


_STATE_BYTES = 64


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
