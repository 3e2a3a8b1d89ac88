"""The compiled embedding backward scatter (ember/_backend/embedding_jit.py, Note [JIT kernels]) against torch:
uniform, Zipf-repeated and tiny-vocabulary indices, padding_idx, scale_grad_by_freq, a -0.0 gradient, float32
and float64 (rows summed in another order than torch's: to rounding); and the switch."""
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


def _grads(lib, idx, num, dim, g, dtype, **kw):
    emb = lib.nn.Embedding(num, dim, **kw).to(getattr(lib, dtype))
    out = emb(lib.from_numpy(idx))
    out.backward(lib.from_numpy(g))
    return emb.weight.grad.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["uniform", "zipf", "tiny"])
@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"scale_grad_by_freq": True}], ids=str)
def test_embedding_backward_matches_torch_bit_for_bit(kind, dtype, kw, monkeypatch):
    monkeypatch.setattr(jit, "ENABLED", True)
    rng = np.random.default_rng(len(kind))
    num, dim = (3, 5) if kind == "tiny" else (500, 16)
    idx = {"uniform": rng.integers(0, num, (40, 25)), "zipf": np.minimum(rng.zipf(1.3, (40, 25)) - 1, num - 1),
           "tiny": rng.integers(0, num, (40, 25))}[kind].astype(np.int64)
    g = rng.standard_normal((40, 25, dim)).astype(dtype)
    g[0, 0] = -0.0  # a row whose only gradient is -0.0 (when its index occurs once)
    e = _grads(ember, idx, num, dim, g, dtype, **kw)
    t = _grads(torch, idx, num, dim, g, dtype, **kw)
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(e, t, rtol=tol, atol=tol * 10 * float(np.abs(t).max()))


def test_the_switch_gives_the_numpy_scatter(monkeypatch):
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 50, 300).astype(np.int64)
    g = rng.standard_normal((300, 8)).astype(np.float32)
    calls = count_calls(monkeypatch, jit.load("embedding_jit"), "index_add_rows")
    res = {}
    for on in (True, False):
        monkeypatch.setattr(jit, "ENABLED", on)
        res[on] = _grads(ember, idx, 50, 8, g, "float32")
    assert len(calls) == 1
    np.testing.assert_allclose(res[True], res[False], rtol=1e-6, atol=1e-6)
