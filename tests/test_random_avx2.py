"""The float32 normal fill (ember/_backend/normal_avx2.py) against torch on chosen uniforms, and
against the step-by-step emulation (tests/_avx2_reference.py) on a quarter of the 2**24 uniforms
(every input agrees; the suite checks every fourth, a different residue in each range).

torch draws the chosen uniforms because its generator is given a state whose next outputs are
picked: with left = 624 and next = 1, torch reads key words 1..623 in turn, each output the
tempered word, so untempered target outputs go into the key (ember's generator reads the same).
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import normal_avx2

from . import _avx2_reference as REF

_M32 = np.uint64(0xFFFFFFFF)
_BLOCKS = 38  # 608 draws per state: 38 blocks of 16, all before the key is regenerated


def _untemper(y):
    """The mt19937 key words whose tempered outputs are y (uint64 holding 32-bit values)."""
    y = y.copy()
    y ^= y >> np.uint64(18)
    y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
    t = y.copy()
    for _ in range(5):
        t = y ^ ((t << np.uint64(7)) & np.uint64(0x9D2C5680))
    y = t & _M32
    t = y.copy()
    for _ in range(3):
        t = y ^ (t >> np.uint64(11))
    return t & _M32


def _state_with_outputs(outputs):
    """torch's CPUGeneratorImplState bytes whose next len(outputs) <= 623 outputs are `outputs`."""
    torch.manual_seed(0)
    raw = bytearray(torch.get_rng_state().numpy().tobytes())
    raw[8:12] = (624).to_bytes(4, "little")  # left
    raw[16:24] = (1).to_bytes(8, "little")  # next
    key = np.frombuffer(bytes(raw[24:24 + 624 * 8]), dtype="<u8").copy()
    key[1:1 + len(outputs)] = _untemper(np.asarray(outputs, dtype=np.uint64))
    raw[24:24 + 624 * 8] = key.tobytes()
    return np.frombuffer(bytes(raw), dtype=np.uint8).copy()


def _chosen_uniforms():
    """24-bit uniform numerators k (u = k * 2**-24): radius inputs (u1 = 1 - u near 1, near 0, at
    the sqrt(1/2) mantissa split of every binade) and angle inputs (near every octant boundary)."""
    rng = np.random.default_rng(0)
    one = 1 << 24
    rad = [0, 1, 2, 3, one - 1, one - 2, one - 3, one // 2, one // 2 - 1, one // 2 + 1]
    for b in range(24):  # u1 = m * 2**-b with m around sqrt(1/2)
        m = round(0.7071067811865476 * 2 ** (24 - b))
        rad += [one - (m + d) for d in (-1, 0, 1) if 0 < m + d <= one]
    ang = []
    for j in range(9):  # theta = 2*pi*u around j * pi/4
        k = round(j * one / 8)
        ang += [k + d for d in range(-3, 4) if 0 <= k + d < one]
    rad = np.array(rad + rng.integers(0, one, 6000).tolist())
    ang = np.array(ang + rng.integers(0, one, 6000).tolist())
    return rad, ang


def test_fill_matches_torch_on_chosen_uniforms():
    rad, ang = _chosen_uniforms()
    per_call = _BLOCKS * 8
    n = max(len(rad), len(ang))
    n = -(-n // per_call) * per_call
    rad = np.resize(rad, n).reshape(-1, _BLOCKS, 8)
    ang = np.resize(ang, n).reshape(-1, _BLOCKS, 8)
    high = np.random.default_rng(1).integers(0, 256, (rad.shape[0], _BLOCKS, 16)).astype(np.uint64) << np.uint64(24)
    for r, a, h in zip(rad, ang, high):
        words = np.concatenate((r, a), axis=1).astype(np.uint64) | h  # torch keeps the low 24 bits
        state = _state_with_outputs(words.ravel())
        gt = torch.Generator().set_state(torch.from_numpy(state))
        ge = ember.Generator().set_state(ember.from_numpy(state))
        expected = torch.randn(_BLOCKS * 16, generator=gt).numpy()
        got = ember.randn(_BLOCKS * 16, generator=ge).numpy()
        assert got.view(np.int32).tolist() == expected.view(np.int32).tolist()
        u = (words & np.uint64(0xFFFFFF)).astype(np.float32) * np.float32(2.0 ** -24)
        ref = REF.normal_fill_avx2(u, 0.0, 1.0).ravel()
        assert ref.view(np.int32).tolist() == expected.view(np.int32).tolist()


@pytest.mark.parametrize("part", ["radius", "sincos"])
def test_fill_matches_emulation_on_the_uniforms(part, stride=4):
    """Float32 uniforms k * 2**-24 through the fast kernel and the step-by-step emulation (stride=1:
    all of them)."""
    step = 1 << 21
    for i, s in enumerate(range(0, 1 << 24, step)):
        u = np.arange(s + i % stride, s + step, stride, dtype=np.int32).astype(np.float32) * np.float32(2.0 ** -24)
        if part == "radius":
            u1 = np.float32(1) - u
            expected = np.sqrt(np.float32(-2) * REF.log256(u1))
            got = normal_avx2.radius(u1.copy())
            assert np.array_equal(got.view(np.int32), expected.view(np.int32)), f"uniforms from {s}"
        else:
            theta = REF._TWO_PI_F * u
            for g, e in zip(normal_avx2.sincos(theta), REF.sincos256(theta)):
                assert np.array_equal(g.view(np.int32), e.view(np.int32)), f"uniforms from {s}"
