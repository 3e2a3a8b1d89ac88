"""The compiled GELU kernels (ember/_backend/gelu_jit.py, Note [Compiled GELU]) against the NumPy path (table reads,
and the tanh forward's exp) to rounding, with the same NaNs and infinities (not the signs of zero results: torch's
own differ between its vector and scalar loops, +0 and -0 for gelu(-15)), over normal values, the
tables' ends and beyond, other binades, signed zeros, subnormals, inf and NaN, in both forms and both directions;
float32 and half GELU modules against torch with the kernels on; and the paths the kernels do not take
(non-contiguous arrays, the switch off). tests/test_gelu_tables.py holds both paths to float64 references."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import gelu_numpy as G
from ember._backend import jit
from tests._jit import count_calls

pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")

EDGES = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e10, -1e10, 3e38, -3e38, 14, -14, 13.999,
         -13.999, 14.0005, -14.0005, 9, -9, 9.0005, -9.0005, 20, -20, 4096, -4096, 8192, -8192, 1e5, 2.0 ** -11]


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says (tests that want them off say so)."""
    monkeypatch.setattr(jit, "ENABLED", True)


def _values():
    rng = np.random.default_rng(0)
    return np.concatenate([(rng.standard_normal(20000) * 5).astype(np.float32), np.array(EDGES, np.float32),
                           (rng.standard_normal(2000) * 30).astype(np.float32)])


KERNELS = ("erf_forward", "erf_backward", "tanh_forward", "tanh_backward")


@pytest.mark.parametrize("tanh", [False, True])
def test_compiled_kernels_match_the_numpy_path(tanh, monkeypatch):
    x = _values()
    g = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    calls = count_calls(monkeypatch, jit.load("gelu_jit"), *KERNELS)
    got = G.gelu(x, tanh), G.gelu_backward(g, x, tanh)
    assert calls == (["tanh_forward", "tanh_backward"] if tanh else ["erf_forward", "erf_backward"])
    monkeypatch.setattr(jit, "ENABLED", False)
    want = G.gelu(x, tanh), G.gelu_backward(g, x, tanh)
    for e, t in zip(got, want):
        assert e.dtype == t.dtype == np.float32
        assert np.array_equal(np.isnan(e), np.isnan(t))
        assert np.array_equal(e[np.isinf(t)], t[np.isinf(t)]) and np.array_equal(np.isinf(e), np.isinf(t))
        # each within ~5e-7 relative (forward) or 2.6e-7 absolute per unit of g (backward) of float64
        np.testing.assert_allclose(e, t, rtol=1.2e-6, atol=1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gelu_matches_torch(approximate, dtype):
    x = np.random.default_rng(2).standard_normal((64, 33)).astype(np.float32) * 4
    g = np.random.default_rng(3).standard_normal((64, 33)).astype(np.float32)
    out = []
    for lib in (ember, torch):
        xs = lib.from_numpy(x.copy()).to(getattr(lib, dtype)).requires_grad_()
        y = lib.nn.GELU(approximate=approximate)(xs)
        y.backward(lib.from_numpy(g.copy()).to(getattr(lib, dtype)))
        out.append([y.detach().float().numpy(), xs.grad.float().numpy()])
    # float32: torch's tanh form cancels to 0 where gelu is ~-1e-6 (1 + tanh(u) near x = -4.5); ember keeps it
    tol = dict(rtol=1e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-2, atol=1e-2)
    for e, t in zip(*out):
        np.testing.assert_allclose(e, t, **tol)


def test_non_contiguous_and_switch_keep_numpy(monkeypatch):
    x = _values()[:2000].reshape(40, 50)
    calls = count_calls(monkeypatch, jit.load("gelu_jit"), *KERNELS)
    got = G.gelu(x.T, False), G.gelu_backward(x.T, x.T, False)  # Fortran-ordered: NumPy keeps that layout
    assert calls == []
    assert got[0].flags.f_contiguous
    monkeypatch.setattr(jit, "ENABLED", False)
    G.gelu(x, False)
    assert calls == []
    want = G.gelu(x.T, False), G.gelu_backward(x.T, x.T, False)
    for e, t in zip(got, want):
        np.testing.assert_array_equal(e, t)
