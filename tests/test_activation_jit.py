"""The compiled relu forward and the masks of relu and hardtanh (ember/_backend/activation_jit.py, Note [JIT
kernels]) against torch: relu, relu_, relu6 and hardtanh in place and not, values and gradients with NaN, inf, -0.0 and
values at the bounds, NaN/inf incoming gradients at dropped and kept entries; sizes on both sides of
activation._JIT_MIN and split across threads; the switch gives the NumPy forms."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit
from ember._ops import activation as A

pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says (tests that want them off say so)."""
    monkeypatch.setattr(jit, "ENABLED", True)

CASES = {
    "relu": lambda lib, x: lib.nn.functional.relu(x),
    "relu_": lambda lib, x: lib.nn.functional.relu(x * 1, inplace=True),
    "relu6_": lambda lib, x: lib.nn.functional.relu6(x * 1, inplace=True),
    "hardtanh_": lambda lib, x: lib.nn.functional.hardtanh(x * 1, -0.5, 2.0, inplace=True),
    "relu6": lambda lib, x: lib.nn.functional.relu6(x),
}


def _inputs(n, dtype, rng):
    x = (rng.standard_normal(n) * 4).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 6.0, -0.5, 2.0, 1e-40], dtype=dtype)
    x[rng.choice(n, size=min(n, 4 * len(special)), replace=False)] = np.resize(special, min(n, 4 * len(special)))
    g = rng.standard_normal(n).astype(dtype)
    g[rng.choice(n, size=min(n, 8), replace=False)] = np.resize(np.array([np.nan, np.inf, -np.inf, -1.0]), min(n, 8))
    return x, g


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [100, A._JIT_MIN, 50_001])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(CASES))
def test_masks_match_torch(name, dtype, n, threads, monkeypatch):
    from ember._backend import parallel
    monkeypatch.setattr(jit, "ENABLED", True)
    if threads == 2:
        monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
        monkeypatch.setattr(parallel, "threads", lambda: 2)
    x, g = _inputs(n, dtype, np.random.default_rng(n))
    out = {}
    for lib in (ember, torch):
        xs = lib.from_numpy(x.copy()).requires_grad_()
        y = CASES[name](lib, xs)
        y.backward(lib.from_numpy(g.copy()))
        out[lib] = (y.detach().numpy(), xs.grad.numpy())
    for a, b in zip(out[ember], out[torch]):
        assert a.tobytes() == b.tobytes()  # bit for bit: NaN, inf, +-0.0 included


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_forward_takes_the_compiled_kernel_with_torchs_bits(dtype, monkeypatch):
    """relu, relu_ on a tensor that needs grad and relu_ under no_grad each run activation_jit.relu from
    _JIT_MIN elements (NaN, inf, -0.0 and subnormals among the inputs), with torch's bits (relu_ through the
    one-array loop); below it NumPy's clip."""
    kernels = jit.load("activation_jit")
    calls = []
    real = kernels.relu
    monkeypatch.setattr(kernels, "relu", lambda x, out=None: calls.append(x.size) or real(x, out))
    in_place = []  # relu_ runs the one-array loop (vectorized without masked stores), in pieces on the threads
    loop = kernels._relu_in_place
    monkeypatch.setattr(kernels, "_relu_in_place", lambda x, one: in_place.append(x.size) or loop(x, one))
    x, _ = _inputs(A._JIT_MIN, dtype, np.random.default_rng(1))
    runs = {
        "relu": lambda lib, t: lib.relu(t.requires_grad_()),
        "relu_ with grad": lambda lib, t: lib.relu_(t.requires_grad_() * 1),
        "relu_ under no_grad": lambda lib, t: lib.relu_(t),
    }
    for name, run in runs.items():
        for n in (A._JIT_MIN, A._JIT_MIN - 1):
            calls.clear()
            in_place.clear()
            got = {}
            for lib in (ember, torch):
                with (lib.no_grad() if "no_grad" in name else lib.enable_grad()):
                    got[lib] = run(lib, lib.from_numpy(x[:n].copy())).detach().numpy()
            assert got[ember].tobytes() == got[torch].tobytes(), name
            assert calls == ([n] if n >= A._JIT_MIN else []), name
            assert sum(in_place) == (n if n >= A._JIT_MIN and "relu_" in name else 0), name


def test_the_switch_gives_the_numpy_forms(monkeypatch):
    """Off, the NumPy forms run; they differ from torch only in the sign of a dropped negative gradient's
    zero (-0.0 for +0.0)."""
    x, g = _inputs(10_000, np.float32, np.random.default_rng(0))
    res = {}
    for on in (True, False):
        monkeypatch.setattr(jit, "ENABLED", on)
        xs = ember.from_numpy(x.copy()).requires_grad_()
        y = ember.nn.functional.relu6(xs * 1, inplace=True)
        y.backward(ember.from_numpy(g.copy()))
        res[on] = (y.detach().numpy(), xs.grad.numpy())
    assert res[True][0].tobytes() == res[False][0].tobytes()
    np.testing.assert_array_equal(res[True][1], res[False][1])  # equal as values (-0.0 == 0.0)


def test_relu_output_comes_from_the_pool_when_large(monkeypatch):
    """The compiled relu takes its output from ember's allocator, as the clip path did (a fresh mapping for each
    large output page-faults on every call: (x*y+z).relu() on 10M float32 19.3 ms pooled against 21.7)."""
    from ember._backend import allocator
    monkeypatch.setattr(allocator, "enabled", True)
    monkeypatch.setattr(allocator, "threshold", 1 << 20)
    for n, pooled in ((1 << 18, True), ((1 << 18) - 1024, False)):  # 1 MB of float32 and just under
        x = ember.from_numpy(np.random.default_rng(0).standard_normal(n).astype(np.float32))
        assert allocator.is_pooled(ember.relu(x).numpy()) == pooled
