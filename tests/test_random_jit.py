"""The compiled float32 normal fill (ember/_backend/normal_jit.py, Note [JIT kernels]) against the NumPy
fill it stands in for (ember/_backend/normal_avx2.py) on every radius input and every angle input, and
randn/normal_ with the compiled kernels on and off against torch; the switch and the lazy import."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from ember._backend import jit, normal_avx2
from ember._ops import random_draws

from .test_random_streams import SEEDS, same_stream

numba = pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says (tests that want them off say so)."""
    monkeypatch.setattr(jit, "ENABLED", True)


@pytest.fixture
def kernels():
    k = jit.load("normal_jit")
    assert k is not None
    return k


def _every_input(part, count):
    """Blocks of 16 numerators whose radius halves run over inputs part*count .. (part+1)*count - 1 in order
    and whose angle halves run over the same inputs in another order (an odd multiplier mod 2**24)."""
    i = np.arange(part * count, (part + 1) * count, dtype=np.uint32)
    k = np.empty((count // 8, 16), np.uint32)
    k[:, :8] = i.reshape(-1, 8)
    k[:, 8:] = ((i * np.uint32(2654435761)) & np.uint32(0xFFFFFF)).reshape(-1, 8)
    return k


def test_compiled_fill_matches_numpy_fill_on_every_input(kernels):
    count = 1 << 21
    for part in range((1 << 24) // count):
        k = _every_input(part, count)
        expected = np.empty(k.shape, np.float32)
        got = np.empty(k.shape, np.float32)
        normal_avx2.normal_fill(k, 0.0, 1.0, expected)
        kernels.normal_fill(k, 0.0, 1.0, got)
        assert np.array_equal(got.view(np.int32), expected.view(np.int32)), f"inputs from {part * count}"


@pytest.mark.parametrize("mean,std", [(0.5, 3.0), (-1.5, 0.25), (1e-3, 1e4), (0.0, -2.0)])
def test_compiled_fill_with_mean_and_std(kernels, mean, std):
    """n * std + mean is one FMA: the compiled kernel's hardware FMA against the NumPy fill's emulation
    (which redoes float64 ties)."""
    k = np.random.default_rng(7).integers(0, 1 << 24, (1 << 16, 16)).astype(np.uint32)
    k[:4] = 0  # u = 0: radius 0 (from u1 = 1), angle 0
    expected = np.empty(k.shape, np.float32)
    got = np.empty(k.shape, np.float32)
    normal_avx2.normal_fill(k, mean, std, expected)
    kernels.normal_fill(k, mean, std, got)
    assert np.array_equal(got.view(np.int32), expected.view(np.int32))


@pytest.mark.parametrize("compiled", [True, False])
def test_normals_match_torch_with_and_without_the_compiled_fill(compiled, monkeypatch):
    """Sizes across jit's threshold (random_draws._JIT_MIN), partial last blocks, several pieces, half types,
    normal_ with mean and std, and small draws interleaved: the same bits and generator state as torch."""
    monkeypatch.setattr(jit, "ENABLED", compiled)
    lo = random_draws._JIT_MIN
    calls = []
    fill = normal_avx2.normal_fill
    monkeypatch.setattr(normal_avx2, "normal_fill", lambda *a: calls.append(a[0].size) or fill(*a))

    def program(t):
        out = []
        for n in (lo - 16, lo, lo + 9, 3 * random_draws._CHUNK + 5, 100_003):
            out += [t.randn(n), t.randn(3), t.empty(n).normal_(0.5, 3.0), t.randn(n, dtype=t.float16),
                    t.randn(n, dtype=t.bfloat16), t.randn(2, n // 2)]
        return out
    same_stream(program, seeds=SEEDS[1:3])
    big = [size for size in calls if size >= lo]
    assert bool(big) is not compiled  # the NumPy fill ran on the big draws exactly when the switch was off


def _gamma_shapes(rng, n, kind, single):
    """alpha values for standard_gamma: below and above 1 (boosted or not), zeros, huge ones, near 1."""
    alpha = {0: lambda: rng.uniform(0, 3, n), 1: lambda: rng.gamma(0.5, 2, n), 2: lambda: rng.uniform(0.9, 1.1, n),
             3: lambda: rng.choice([0.0, 1e-3, 0.3, 1.0, 4.0, 50.0, 900.0, 1e6], n)}[kind]()
    return alpha.astype(np.float32).astype(np.float64) if single else alpha


@pytest.mark.parametrize("ahead", [3, 0])
@pytest.mark.parametrize("single", [False, True])
def test_compiled_gamma_matches_the_python_loop(ahead, single, monkeypatch):
    """random_draws.standard_gamma compiled (gamma_jit) and as the Python loop: the same draws, generator state
    and cached normal, with and without a cached normal before it; ahead 0 makes the uniforms drawn ahead run out
    every few elements (the element is drawn again from the next block)."""
    monkeypatch.setattr(random_draws, "_GAMMA_AHEAD", ahead)
    rng = np.random.default_rng(7)

    def draw(alpha, seed, cached, compiled):
        monkeypatch.setattr(jit, "ENABLED", compiled)
        g = ember.Generator().manual_seed(seed)
        if cached:
            ember.randn(3, dtype=ember.float64, generator=g)  # the scalar path leaves its second normal cached
            assert g._normal_double is not None
        out = random_draws.standard_gamma(g, alpha, single)
        return out, g.get_state().numpy().tobytes(), g._normal_double

    for trial in range(8):
        alpha = _gamma_shapes(rng, int(rng.integers(64, 700)), trial % 4, single)
        for cached in (False, True):
            got, state, normal = draw(alpha, trial, cached, True)
            want, want_state, want_normal = draw(alpha, trial, cached, False)
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), (trial, cached)
            assert state == want_state and normal == want_normal, (trial, cached)


@pytest.mark.parametrize("compiled", [True, False])
def test_gamma_draws_match_torch_with_and_without_the_compiled_loop(compiled, monkeypatch):
    """Gamma, Beta and Dirichlet draws (float32 and float64 shapes, sizes across _GAMMA_JIT_MIN) and a normal after
    them (the cached one): torch's bits and generator state."""
    monkeypatch.setattr(jit, "ENABLED", compiled)
    rng = np.random.default_rng(3)
    lo = random_draws._GAMMA_JIT_MIN
    shapes = [np.where(a > 0, a, 0.25) for a in  # torch's distributions refuse a zero concentration
              (_gamma_shapes(rng, n, kind, False) for n, kind in ((lo - 1, 0), (lo, 1), (500, 2), (300, 3)))]

    def program(t):
        out = []
        for alpha in shapes:
            a64 = t.tensor(alpha)
            a32 = t.tensor(alpha.astype(np.float32))
            out += [t.distributions.Gamma(a64, 1.0).sample(), t.distributions.Gamma(a32, 2.0).sample(), t.randn(1),
                    t.distributions.Beta(a32 + 0.5, a32 + 0.1).sample(),
                    t.distributions.Dirichlet(a64[:len(alpha) // 3 * 3].reshape(-1, 3) + 0.2).sample(), t.randn(1)]
        return out
    same_stream(program, seeds=SEEDS[:2])


def test_randn_of_a_million_matches_torch():
    same_stream(lambda t: t.randn(1_000_000), seeds=SEEDS[:1])


def test_switch_and_missing_numba(monkeypatch):
    monkeypatch.setattr(jit, "ENABLED", False)
    assert jit.load("normal_jit") is None
    monkeypatch.setattr(jit, "ENABLED", True)
    monkeypatch.setattr(jit, "_loaded", {})
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    assert jit.load("normal_jit") is None
    torch.manual_seed(5)
    ember.manual_seed(5)
    assert np.array_equal(ember.randn(5000).numpy().view(np.int32), torch.randn(5000).numpy().view(np.int32))


def test_numba_is_imported_only_by_a_big_fill():
    code = ("import sys, ember; ember.randn(100); a = 'numba' in sys.modules; ember.randn(10000); "
            "print(a, 'numba' in sys.modules)")
    env = dict(os.environ)
    env.pop("EMBER_JIT", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "True"]
    env["EMBER_JIT"] = "0"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "False"]
