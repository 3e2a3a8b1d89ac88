"""The compiled optimizer steps (ember/_backend/optim_jit.py, Note [JIT kernels]) give the NumPy blocks'
values bit for bit (the same float operations in the same order): SGD with and without momentum,
dampening, weight decay, nesterov; Adam on both of lerp's branches; float32 and float64; several steps,
through the optimizers with the switch on and off, and against torch."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit
from tests._jit import count_calls

pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says (tests that want them off say so)."""
    monkeypatch.setattr(jit, "ENABLED", True)

SGD_CASES = [dict(momentum=0.0), dict(momentum=0.9), dict(momentum=0.9, weight_decay=5e-4),
             dict(momentum=0.5, dampening=0.3, weight_decay=1e-2), dict(momentum=0.9, nesterov=True, weight_decay=1e-3),
             dict(weight_decay=0.1)]
ADAM_CASES = [dict(), dict(betas=(0.3, 0.99)), dict(betas=(0.5, 0.9), eps=1e-3), dict(lr=0.1, betas=(0.95, 0.5))]


def _steps(lib, make, dtype, compiled, monkeypatch, steps=4):
    monkeypatch.setattr(jit, "ENABLED", compiled)
    rng = np.random.default_rng(0)
    shapes = [(300, 7), (5,), (1000,), (3, 4, 5)]
    params = [lib.from_numpy(rng.standard_normal(s).astype(dtype)).requires_grad_() for s in shapes]
    opt = make(lib, params)
    for _ in range(steps):
        for p in params:
            p.grad = lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(dtype))
        opt.step()
    return [p.detach().numpy().copy() for p in params] + [
        v.numpy().copy() for p in params for v in opt.state[p].values() if isinstance(v, lib.Tensor) and v.dim() > 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", SGD_CASES + ADAM_CASES, ids=lambda kw: str(kw))
def test_compiled_steps_match_numpy_blocks_and_torch(kw, dtype, monkeypatch):
    name = "SGD" if kw in SGD_CASES else "Adam"
    kw = dict(kw)
    kw.setdefault("lr", 0.01 if name == "SGD" else 1e-3)

    def make(lib, params):
        return getattr(lib.optim, name)(params, **kw)
    calls = count_calls(monkeypatch, jit.load("optim_jit"), name.lower())
    on = _steps(ember, make, dtype, True, monkeypatch)
    assert calls  # the compiled step ran
    off = _steps(ember, make, dtype, False, monkeypatch)
    ref = _steps(torch, make, dtype, True, monkeypatch)
    assert len(on) == len(off) == len(ref)
    for a, b, t in zip(on, off, ref):
        assert a.tobytes() == b.tobytes()
        np.testing.assert_allclose(a, t, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-7)


def test_division_by_zero_gives_nan_as_torch(monkeypatch):
    """Adam with eps=0 and a zero gradient divides 0 by 0: NaN in torch, and in the compiled step (NumPy's
    error model, not numba's ZeroDivisionError)."""
    monkeypatch.setattr(jit, "ENABLED", True)
    g = np.array([0.0, 1.0, -2.0, 0.0], np.float32)
    out = {}
    for lib in (ember, torch):
        p = lib.from_numpy(np.ones(4, np.float32)).requires_grad_()
        p.grad = lib.from_numpy(g.copy())
        opt = lib.optim.Adam([p], lr=0.1, eps=0.0)
        opt.step()
        out[lib] = p.detach().numpy()
    assert np.isnan(out[ember][[0, 3]]).all()
    np.testing.assert_array_equal(out[ember], out[torch])
